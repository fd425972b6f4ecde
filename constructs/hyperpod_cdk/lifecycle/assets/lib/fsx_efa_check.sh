#!/usr/bin/env bash
# fsx_efa_check.sh MOUNT_PATH MODE: does this node's FSx for Lustre traffic go over EFA?
#
# Run by the lifecycle step "verify EFA transport to FSx" and, installed with a small unit
# (hyperpod-fsx-efa-check.service), again at every boot: lifecycle scripts never run at reboot.
# MODE warn: print the problem, exit 0; fail: print it, exit 1. MOUNT_PATH "-": the node mounts
# nothing itself (EKS: pods mount through the CSI driver with the node's client), so only the
# LNet checks run, not the I/O probe.
#
# The checks (FSx for Lustre guide, "Using EFA-enabled file systems"; AWS's mount_fsx.sh
# verify_efa_transport): LNet has an `efa` network; it has one NI per EFA device of the node; and
# 64 MiB of direct I/O to the mount raises that network's send and receive counters. A client
# whose LNet lacks EFA falls back to TCP silently.
# HYPERPOD_ROOT: the node's root (the dry run's fake node; empty on a node).
set -euo pipefail

R="${HYPERPOD_ROOT:-}"
mount_path="${1:?usage: fsx_efa_check.sh MOUNT_PATH warn|fail}"
mode="${2:-fail}"
PROBE_MIB=64

problem() {
  if [[ "$mode" == fail ]]; then
    echo "FAILED: $*"
    exit 1
  fi
  echo "WARNING: $*"
  exit 0
}

devices=0
for dev in "$R"/sys/class/infiniband/*; do
  [[ -e "$dev" ]] && devices=$((devices + 1))
done

# efa_stats: "<NIs> <sent> <received>" of LNet's efa network (0 0 0 when there is none).
efa_stats() {
  lnetctl net show -v --net efa 2>/dev/null | awk '
    /- nid:/ { nis++ }
    /send_count:/ { sent += $2 }
    /recv_count:/ { received += $2 }
    END { printf "%d %d %d\n", nis, sent, received }'
}

read -r nis sent received < <(efa_stats)
if ((nis == 0)); then
  problem "Lustre networking has no efa network: FSx traffic goes over TCP (lnetctl net show)"
fi
if ((nis < devices)); then
  problem "only $nis of this node's $devices EFA devices carry Lustre traffic (lnetctl net show --net efa): FSx throughput is capped"
fi
if [[ "$mount_path" == - ]]; then
  echo "the Lustre client runs over EFA: $nis NIs for $devices EFA devices"
  exit 0
fi
probe_file="$mount_path/.hyperpod-efa-probe-$(hostname)-$$"
if ! dd if=/dev/zero of="$R$probe_file" bs=1M count="$PROBE_MIB" oflag=direct conv=fsync status=none; then
  rm -f "$R$probe_file"
  problem "cannot write $PROBE_MIB MiB to $mount_path to measure the EFA counters"
fi
rm -f "$R$probe_file"
read -r _ sent_after received_after < <(efa_stats)
if ((sent_after <= sent || received_after <= received)); then
  problem "$PROBE_MIB MiB of direct I/O to $mount_path did not move LNet's efa counters (sent $sent -> $sent_after, received $received -> $received_after): FSx traffic goes over TCP"
fi
echo "Lustre traffic uses EFA: $nis NIs for $devices EFA devices; $PROBE_MIB MiB moved the efa counters (sent $sent -> $sent_after, received $received -> $received_after)"
