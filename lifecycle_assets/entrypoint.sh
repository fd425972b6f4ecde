#!/usr/bin/env bash
# Entry script of every HyperPod node (LifeCycleConfig OnInitComplete/OnCreate).
# HyperPod has already configured Slurm (API-driven) and mounted FSx when this
# runs under OnInitComplete; this script verifies that and adds custom steps.
# Settings generated from the environment YAML sit beside it in settings.json:
# the script itself holds no account, region or bucket name.
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SETTINGS="${HYPERPOD_SETTINGS:-$HERE/settings.json}"
LOG="${HYPERPOD_LIFECYCLE_LOG:-/var/log/provision/hyperpod-lifecycle.log}"
STEP="start"

mkdir -p "$(dirname "$LOG")"
# Everything goes to the node's log file and to stdout, which HyperPod sends to
# the cluster's CloudWatch log stream.
exec > >(tee -a "$LOG") 2>&1

on_error() {
  local rc=$? cmd=$BASH_COMMAND
  echo "[lifecycle] FAILED in step '$STEP' (exit $rc): $cmd" >&2
  exit "$rc"
}
trap on_error ERR

step() { STEP="$1"; echo "[lifecycle] step: $STEP"; }

setting() {
  # setting KEY [DEFAULT]: a value from settings.json (python3 ships on HyperPod AMIs)
  python3 - "$SETTINGS" "$1" "${2-}" <<'PY'
import json, sys
path, key, default = sys.argv[1], sys.argv[2], sys.argv[3]
value = json.load(open(path))
for part in key.split("."):
    value = value.get(part, None) if isinstance(value, dict) else None
print(default if value is None else (str(value).lower() if isinstance(value, bool) else value))
PY
}

wait_for_mount() {
  # wait_for_mount PATH TRIES: the file system HyperPod mounts may appear a little after boot
  local path="$1" tries="$2" i
  for ((i = 1; i <= tries; i++)); do
    if mountpoint -q "$path"; then
      echo "[lifecycle] $path is mounted"
      return 0
    fi
    echo "[lifecycle] waiting for $path ($i/$tries)"
    sleep 10
  done
  echo "[lifecycle] $path is not mounted after $tries tries" >&2
  return 1
}

step "read settings"
[[ -f "$SETTINGS" ]] || { echo "[lifecycle] missing $SETTINGS" >&2; exit 1; }
environment="$(setting environment)"
orchestrator="$(setting orchestrator)"
echo "[lifecycle] environment=$environment orchestrator=$orchestrator"

if [[ "$(setting fsx.enabled false)" == "true" && "$orchestrator" == "slurm" ]]; then
  step "verify FSx mount"
  wait_for_mount "$(setting fsx.mount_path /fsx)" 30
fi

step "done"
echo "[lifecycle] node setup complete"
