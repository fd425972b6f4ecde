# shellcheck shell=bash disable=SC2034
# (SC2034: the settings below are used by the step files entrypoint.sh sources with this one.)
# Helpers of the lifecycle scripts: logging, steps, the one `run` wrapper for every command that
# changes the system, and idempotent file edits. Sourced by entrypoint.sh.
#
# Every system path is "$R<real path>": R is empty on a node and a temporary root in the dry run
# (scripts/lifecycle_dry_run.py), so the dry run reads and writes files only inside that root.

R="${HYPERPOD_ROOT:-}"
# HyperPod exports the path of its resource config to the lifecycle scripts
# (SAGEMAKER_RESOURCE_CONFIG_PATH; default /opt/ml/config/resource_config.json).
RESOURCE_CONFIG="${SAGEMAKER_RESOURCE_CONFIG_PATH:-$R/opt/ml/config/resource_config.json}"
PROC_MOUNTS="$R/proc/self/mounts"
# DRY_RUN=1: `run` prints each command instead of executing it; a simulator of the same name in
# DRY_RUN_SIMULATORS (the fake node's bin/) may act it out inside the temporary root.
DRY_RUN="${DRY_RUN:-0}"
DRY_RUN_SIMULATORS="${DRY_RUN_SIMULATORS:-}"
# Seconds between polls of a mount or a service; the dry run sets 0.
POLL_SECONDS="${HYPERPOD_POLL_SECONDS:-10}"
# Seconds a failed run waits before it exits, so the last log lines reach CloudWatch; the dry
# run sets 0.
FLUSH_SECONDS="${HYPERPOD_FLUSH_SECONDS:-10}"
# The HyperPod DLAMI mounts the local NVMe instance store at /opt/dlami/nvme (dlami-nvme.service)
# and a group's extra EBS volume (InstanceStorageConfigs EbsVolumeConfig) at /opt/sagemaker.
NVME_MOUNT=/opt/dlami/nvme
EBS_MOUNT=/opt/sagemaker
# Where Slurm lives on the HyperPod Slurm AMI (slurm.conf, plugstack.conf, SPANK plugins).
SLURM_DIR=/opt/slurm
# Files the scripts install for later use (the EFA exporter); the script directory HyperPod
# downloads to is not meant to last.
INSTALL_DIR=/opt/hyperpod-lifecycle

STEP="start"
STEPS_RUN=()

log() { echo "[lifecycle] $*"; }
warn() { echo "[lifecycle] WARNING: $*"; }

# fail MESSAGE: stop the node's setup, naming the step (HyperPod then reports the node failed).
fail() {
  echo "[lifecycle] FAILED in step '$STEP': $*" >&2
  exit 1
}

# step NAME: announce a step; the dry run lists these lines as the node's steps.
step() {
  STEP="$1"
  STEPS_RUN+=("$1")
  echo "[lifecycle] step: $STEP"
}

# current_step NAME: the step a failure is reported in, before the step decides to run.
current_step() { STEP="$1"; }

# skip NAME REASON: a step that does not apply to this node.
skip() { echo "[lifecycle] skip: $1 ($2)"; }

# show ARGS...: print a command line for the log (no newline), with the dry run's root left
# out and arguments quoted where the shell would need it.
show() {
  local arg sep=""
  for arg in "$@"; do
    [[ -n "$R" ]] && arg="${arg//"$R"/}"
    if [[ ! "$arg" =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then
      printf -v arg '%q' "$arg"
    fi
    printf '%s%s' "$sep" "$arg"
    sep=" "
  done
}

# try_run CMD ARGS...: run a command that changes the system; its exit status is returned.
try_run() {
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '[dry-run] '
    show "$@"
    echo
    if [[ -n "$DRY_RUN_SIMULATORS" && -x "$DRY_RUN_SIMULATORS/$1" ]]; then
      "$DRY_RUN_SIMULATORS/$1" "${@:2}"
      return
    fi
    return 0
  fi
  echo "[lifecycle] run: $*"
  "$@"
}

# run CMD ARGS...: every command that changes the system goes through here (or try_run);
# a failure stops the setup with the step's name and the command.
run() {
  try_run "$@" || fail "command failed (exit $?): $(show "$@")"
}

# apt_install PACKAGE...: install distribution packages, refreshing the package lists once per
# run first (an AMI's lists are as old as the AMI: their versions may be gone from the mirror).
APT_UPDATED=0
apt_install() {
  if ((!APT_UPDATED)); then
    run apt-get -y -o DPkg::Lock::Timeout=120 update
    APT_UPDATED=1
  fi
  run apt-get -y -o DPkg::Lock::Timeout=120 install "$@"
}

# probe CMD ARGS...: a read-only query of the system (systemctl is-active, lnetctl net show).
# In the dry run only a simulator answers; without one the probe fails (exit 127).
probe() {
  if [[ "$DRY_RUN" == 1 ]]; then
    [[ -n "$DRY_RUN_SIMULATORS" && -x "$DRY_RUN_SIMULATORS/$1" ]] || return 127
    "$DRY_RUN_SIMULATORS/$1" "${@:2}"
    return
  fi
  "$@"
}

# setting KEY [DEFAULT]: a value of settings.json, loaded once by load_settings (dots -> _).
setting() {
  local name="S_${1//./_}"
  printf '%s\n' "${!name-${2-}}"
}

# json_lines JSON_LIST: the items of a list setting (settings.json keeps lists as JSON), one a line.
json_lines() {
  python3 -S -c 'import json, sys; sys.stdout.write("".join(f"{i}\n" for i in json.loads(sys.argv[1] or "[]")))' "$1"
}

# setting_list KEY: the items of a list setting into the array LIST (empty when none).
setting_list() {
  local items
  items="$(json_lines "$(setting "$1" "[]")")" || fail "settings.json: $1 is not a list"
  LIST=()
  if [[ -n "$items" ]]; then
    mapfile -t LIST <<<"$items"
  fi
}

# is_on KEY [DEFAULT]: true when the setting is "true".
is_on() {
  local name="S_${1//./_}"
  [[ "${!name-${2-false}}" == "true" ]]
}

# is_mounted PATH [FSTYPE]: PATH (a real path) is a mount point, of FSTYPE when given.
is_mounted() {
  local want="$1" type="${2-}" _dev mnt fstype _rest
  [[ -r "$PROC_MOUNTS" ]] || return 1
  while read -r _dev mnt fstype _rest; do
    if [[ "$mnt" == "$want" && ( -z "$type" || "$fstype" == "$type" ) ]]; then
      return 0
    fi
  done <"$PROC_MOUNTS"
  return 1
}

# mount_of PATH: the mount point PATH is on (the longest mounted prefix; / when none).
mount_of() {
  local path="$1" best=/ _dev mnt _rest
  [[ -r "$PROC_MOUNTS" ]] || { echo /; return 0; }
  while read -r _dev mnt _rest; do
    if [[ ( "$path" == "$mnt" || "$path" == "$mnt"/* ) && ${#mnt} -gt ${#best} ]]; then
      best="$mnt"
    fi
  done <"$PROC_MOUNTS"
  printf '%s\n' "$best"
}

# wait_for_mount PATH TRIES: poll until PATH is mounted; false after TRIES polls.
wait_for_mount() {
  local path="$1" tries="$2" i
  for ((i = 1; i <= tries; i++)); do
    if is_mounted "$path"; then
      log "$path is mounted"
      return 0
    fi
    log "waiting for $path ($i/$tries)"
    sleep "$POLL_SECONDS"
  done
  return 1
}

# service_active UNIT: the systemd unit is active.
service_active() { probe systemctl is-active --quiet "$1"; }

# append_once FILE LINE: add LINE to FILE unless it is there already (exact line match).
append_once() {
  local file="$1" line="$2"
  mkdir -p "$(dirname "$file")" && touch "$file" || fail "cannot write $file"
  if grep -qxF -- "$line" "$file"; then
    return 1
  fi
  # as in write_file: a failed write is a failure, never "already there"
  printf '%s\n' "$line" >>"$file" || fail "cannot write $file"
}

# write_file FILE: write stdin to FILE when the content differs; true when it changed.
write_file() {
  local file="$1" content
  content="$(cat)"
  if [[ -f "$file" && "$(cat "$file")" == "$content" ]]; then
    return 1
  fi
  # inside `if write_file ...` a failed write would read as "unchanged": it fails the step
  mkdir -p "$(dirname "$file")" && printf '%s\n' "$content" >"$file" || fail "cannot write $file"
}

# node_py ARGS...: the standard-library helper beside the scripts.
node_py() { python3 -S "$LIB_DIR/node.py" "$@"; }

# user_line NAME: the /etc/passwd line of NAME (empty when there is none).
user_line() { grep -E "^$1:" "$R/etc/passwd" 2>/dev/null || true; }

# group_exists NAME
group_exists() { grep -qE "^$1:" "$R/etc/group" 2>/dev/null; }

# in_group USER GROUP: USER is a supplementary member of GROUP.
in_group() {
  local members
  members="$(grep -E "^$2:" "$R/etc/group" 2>/dev/null | cut -d: -f4)"
  [[ ",$members," == *",$1,"* ]]
}
