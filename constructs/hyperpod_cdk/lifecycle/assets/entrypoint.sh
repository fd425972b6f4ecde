#!/usr/bin/env bash
# Entry script of every HyperPod node (the cluster's LifeCycleConfig names it; OnInitComplete by
# default, OnCreate when configured). It runs at creation and on every replacement node, so every
# step is idempotent: a second run changes nothing.
#
# HyperPod has set the node up before an OnInitComplete script runs: Slurm from the API-driven
# configuration (and slurmdbd with an accounting database), the FSx mount on Slurm nodes. This
# script waits for and verifies that, then adds the steps switched on in the environment YAML
# (cluster.node_setup). The settings generated from the YAML sit beside it in settings.json (and
# users.json): the scripts hold no account, region or bucket name.
#
# Layout: lib/common.sh (helpers, the `run` wrapper), lib/node.py (settings and node identity),
# steps/*.sh (one function per step). scripts/lifecycle_dry_run.py runs this file against a fake
# node: HYPERPOD_ROOT, DRY_RUN and the other variables in lib/common.sh point it there.
# shellcheck source-path=SCRIPTDIR
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LIB_DIR="$HERE/lib"
SETTINGS="${HYPERPOD_SETTINGS:-$HERE/settings.json}"

# shellcheck source=lib/common.sh
source "$LIB_DIR/common.sh"
# shellcheck source=steps/storage.sh
source "$HERE/steps/storage.sh"
# shellcheck source=steps/users.sh
source "$HERE/steps/users.sh"
# shellcheck source=steps/containers.sh
source "$HERE/steps/containers.sh"
# shellcheck source=steps/slurm.sh
source "$HERE/steps/slurm.sh"
# shellcheck source=steps/observability.sh
source "$HERE/steps/observability.sh"
# shellcheck source=steps/directory.sh
source "$HERE/steps/directory.sh"
# shellcheck source=steps/imds.sh
source "$HERE/steps/imds.sh"

LIFECYCLE_LOG=/var/log/provision/hyperpod-lifecycle.log
# where AWS's runbooks and support look on a node (HyperPod's own provisioning log)
PROVISIONING_LOG=/var/log/provision/provisioning.log
mkdir -p "$(dirname "$R$LIFECYCLE_LOG")"
# One log per node: the files on the node, and stdout, which HyperPod sends to the cluster's
# CloudWatch log stream (/aws/sagemaker/Clusters/<name>/<id>).
exec > >(tee -a "$R$LIFECYCLE_LOG" "$R$PROVISIONING_LOG") 2>&1
TEE_PID=$!

finish() {
  local rc=$?
  if ((rc != 0)); then
    # a failed node is reported (and may be replaced) as soon as this exits: give the log
    # shipping a moment to send the failure line to CloudWatch first
    sleep "$FLUSH_SECONDS"
  fi
  # let tee write the last lines before the script's exit status reaches HyperPod
  exec 1>&- 2>&-
  wait "$TEE_PID" 2>/dev/null || true
  exit "$rc"
}
trap finish EXIT

on_error() {
  local rc=$? cmd=$BASH_COMMAND
  # a failure inside $(...) is reported once, by the command that used it
  ((BASH_SUBSHELL == 0)) || exit "$rc"
  [[ -n "$R" ]] && cmd="${cmd//"$R"/}"
  echo "[lifecycle] FAILED in step '$STEP' (exit $rc): $cmd" >&2
  exit "$rc"
}
trap on_error ERR

load_settings() {
  [[ -f "$SETTINGS" ]] || fail "missing $SETTINGS (it is uploaded beside the scripts)"
  local assignments
  assignments="$(node_py settings "$SETTINGS")" || fail "cannot read $SETTINGS"
  eval "$assignments"
  log "environment $(setting environment), orchestrator $(setting orchestrator), hook $(setting lifecycle_hook)"
}

identify_node() {
  local assignments
  assignments="$(node_py identify "$SETTINGS" "$RESOURCE_CONFIG")" || fail "cannot place this node in the cluster"
  eval "$assignments"
  # set by the eval above
  : "${NODE_ROLE:?}" "${NODE_GROUP:?}" "${NODE_INSTANCE_TYPE?}" "${NODE_GPU:?}" "${NODE_GPU_SOURCE:?}"
  log "role $NODE_ROLE, group $NODE_GROUP, instance type ${NODE_INSTANCE_TYPE:-unknown}, GPU $NODE_GPU ($NODE_GPU_SOURCE)"
}

# The steps of each role, in order (each a step_<name> function of steps/*.sh).
EKS_STEPS=(fsx eks_efa_lustre eks_containerd log_rotation)
SLURM_STEPS=(fsx openzfs lustre_hold fsx_efa users directory imds pam_slurm_adopt ssh_keys ssh_host_policy container_runtime
  nvidia_toolkit enroot_pyxis slurm_accounting slurm_users log_rotation node_exporter dcgm_exporter
  efa_exporter)

# HYPERPOD_ONLY_STEPS=users,ssh_keys,slurm_users (make sync-users): only these steps of the
# node's role run, on a node that is up already; empty: every step. (ssh_keys needs users in the
# same run: it works on the users that step read.)
ONLY_STEPS="${HYPERPOD_ONLY_STEPS:-}"

run_steps() {
  local name
  for name in ${ONLY_STEPS//,/ }; do
    [[ " ${EKS_STEPS[*]} ${SLURM_STEPS[*]} " == *" $name "* ]] \
      || fail "HYPERPOD_ONLY_STEPS: unknown step $name (steps: ${SLURM_STEPS[*]} ${EKS_STEPS[*]})"
  done
  for name in "$@"; do
    if [[ -z "$ONLY_STEPS" || ",$ONLY_STEPS," == *",$name,"* ]]; then
      "step_$name"
    fi
  done
}

main() {
  log "lifecycle scripts start ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  step "read settings"
  load_settings
  step "identify node"
  identify_node
  [[ -z "$ONLY_STEPS" ]] || log "only these steps run (HYPERPOD_ONLY_STEPS): $ONLY_STEPS"
  if [[ "$NODE_ROLE" == "eks" ]]; then
    # HyperPod does not mount FSx on EKS nodes (pods use the FSx CSI driver) and there is no Slurm
    run_steps "${EKS_STEPS[@]}"
  else
    run_steps "${SLURM_STEPS[@]}"
  fi
  step "done"
  log "node setup complete: ${STEPS_RUN[*]}"
}

main "$@"
