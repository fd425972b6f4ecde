#!/usr/bin/env bash
# The platform team's own lifecycle script (OnInitComplete): HyperPod has already configured
# Slurm and mounted FSx for Lustre when it runs. It checks the mount and records which cluster
# the node belongs to; it reads only settings.json, which the app uploads beside it.
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SETTINGS="$HERE/settings.json"

setting() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$SETTINGS" "$1"
}

cluster="$(setting cluster_name)"
mount_path="$(setting fsx_mount_path)"

echo "[platform] node of HyperPod cluster $cluster"
for _ in $(seq 1 60); do
  if mountpoint -q "$mount_path"; then
    echo "[platform] $mount_path is mounted"
    break
  fi
  sleep 5
done
mountpoint -q "$mount_path" || { echo "[platform] $mount_path is not mounted" >&2; exit 1; }

mkdir -p /etc/platform
printf '%s\n' "$cluster" >/etc/platform/hyperpod-cluster
