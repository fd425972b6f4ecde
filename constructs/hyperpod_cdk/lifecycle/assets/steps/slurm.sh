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

# How long step_slurm_users waits for slurmdbd in all, and for one sacctmgr call (the tests
# shorten them).
SLURMDBD_WAIT_SECONDS="${HYPERPOD_SLURMDBD_WAIT_SECONDS:-300}"
SACCTMGR_TIMEOUT_SECONDS="${HYPERPOD_SACCTMGR_TIMEOUT_SECONDS:-20}"

# sacct_lists ARGS...: `sacctmgr -nP show ARGS` lists something (a read-only query).
sacct_lists() { [[ -n "$(probe sacctmgr -nP show "$@" 2>/dev/null || true)" ]]; }

# The users of the users file in Slurm accounting: their accounts (node_setup users' `account`,
# default the user's name) and one association each, so that `sacct` and fair share see them.
# Idempotent: only what sacctmgr does not list yet is added.
step_slurm_users() {
  local name="Slurm accounts and users" file lines kind user _uid account _groups i deadline
  current_step "$name"
  file="$(users_file)"
  if [[ -z "$file" ]]; then
    skip "$name" "no users file (node_setup.users_file)"
    return
  fi
  if ! is_on slurm_accounting_database; then
    skip "$name" "no accounting database (cluster.slurm.accounting_database)"
    return
  fi
  if [[ "$NODE_ROLE" != "controller" ]]; then
    skip "$name" "the controller registers them"
    return
  fi
  step "$name"
  # slurmdbd may be active before it answers (its database connection comes up after it). A hung
  # slurmdbd keeps sacctmgr ~45 s per call (measured), so each try is bounded to 20 s and the
  # wait to 30 tries and SLURMDBD_WAIT_SECONDS in all: make sync-users' session (900 s) must
  # outlast it.
  deadline=$((SECONDS + SLURMDBD_WAIT_SECONDS))
  for ((i = 1; i <= 30; i++)); do
    probe timeout "$SACCTMGR_TIMEOUT_SECONDS" sacctmgr -nP show cluster format=cluster >/dev/null 2>&1 && break
    ((i < 30 && SECONDS < deadline)) || fail "slurmdbd does not answer sacctmgr (sacctmgr show cluster)"
    log "waiting for slurmdbd to answer ($i/30)"
    sleep "$POLL_SECONDS"
  done
  lines="$(node_py users "$file")" || fail "cannot read the users file $(basename "$file")"
  while IFS=$'\t' read -r kind user _uid account _groups; do
    [[ "$kind" == user ]] || continue
    if ! sacct_lists account "$account" format=account; then
      run sacctmgr -i add account "$account" Description="$account" \
        Organization="$(setting cluster_name)"
    fi
    if sacct_lists association where user="$user" account="$account" format=user; then
      log "Slurm user $user is in account $account"
    else
      run sacctmgr -i add user "$user" Account="$account" DefaultAccount="$account"
    fi
  done <<<"$lines"
}
