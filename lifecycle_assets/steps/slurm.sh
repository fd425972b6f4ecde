# shellcheck shell=bash
# Slurm: HyperPod configures Slurm from the API-driven configuration (and slurmdbd from the
# cluster's AccountingDatabase); the scripts never write slurm.conf or slurmdbd.conf.

step_slurm_accounting() {
  local name="wait for Slurm accounting" tries i
  current_step "$name"
  if ! is_on slurm_accounting_database; then
    skip "$name" "no accounting database (cluster.slurm.accounting_database)"
    return
  fi
  if [[ "$NODE_ROLE" != "controller" ]]; then
    skip "$name" "slurmdbd runs on the controller"
    return
  fi
  step "$name"
  tries=60 # ten minutes at the default poll interval
  for ((i = 1; i <= tries; i++)); do
    if service_active slurmdbd; then
      log "slurmdbd is active (configured by HyperPod)"
      return
    fi
    log "waiting for slurmdbd ($i/$tries)"
    sleep "$POLL_SECONDS"
  done
  fail "slurmdbd is not active; HyperPod configures it from the cluster's AccountingDatabase (see the cluster's CloudWatch log stream)"
}
