# shellcheck shell=bash
# Users and groups from the users file (users.json beside the scripts), their home directories
# (on shared storage by default) and SSH keys between the nodes.

users_file() {
  local name
  name="$(setting node_setup.users_file)"
  if [[ -n "$name" ]]; then
    printf '%s\n' "$HERE/$name"
  fi
}

# shared_homes: home directories live on a shared file system every Slurm node mounts (FSx for
# OpenZFS at its mount, else <FSx for Lustre mount>/home: settings.json `homes`).
shared_homes() { is_on homes.shared; }

# homes_dir: the directory of the home directories.
homes_dir() { setting homes.path /home; }

home_of() { printf '%s/%s\n' "$(homes_dir)" "$1"; }

# probe_shared_homes: the homes' directory on the shared file system takes a write, before any
# home is made there: a file system mounted read-only (or not mounted: then the directory is on
# the root volume) fails here with its reason, not halfway through the users.
probe_shared_homes() {
  local dir probe mount
  dir="$(homes_dir)"
  mount="$(setting homes.mount_path)"
  is_mounted "$mount" || fail "$mount is not mounted: the home directories would land on the root volume"
  probe="$dir/.hyperpod-write-probe-$$"
  if ! { mkdir -p "$R$dir" && : >"$R$probe" && rm -f "$R$probe"; } 2>/dev/null; then
    rm -f "$R$probe" 2>/dev/null || true
    fail "cannot write to $dir on the shared file system (read-only, or full?): the home directories cannot be made there"
  fi
  log "$dir takes writes"
}

# makes_homes: this node creates the home directories: the controller when they are shared
# (one writer, no race between nodes), every node when they are local.
makes_homes() { ! shared_homes || [[ "$NODE_ROLE" == "controller" ]]; }

# group_gid NAME: the GID of group NAME (empty when there is none).
group_gid() { grep -E "^$1:" "$R/etc/group" 2>/dev/null | cut -d: -f3 || true; }

# gid_owner GID: the group that has GID (empty when none).
gid_owner() { grep -E "^[^:]*:[^:]*:$1:" "$R/etc/group" 2>/dev/null | cut -d: -f1 || true; }

# ensure_group NAME GID: the group with exactly this GID (the same on every node, so that files on
# the shared file system keep their group); a node where either is taken otherwise fails.
ensure_group() {
  local name="$1" gid="$2" current owner
  current="$(group_gid "$name")"
  if [[ -n "$current" ]]; then
    [[ "$current" == "$gid" ]] \
      || fail "group $name exists with GID $current, the users file says $gid"
    return 0
  fi
  owner="$(gid_owner "$gid")"
  [[ -z "$owner" ]] || fail "GID $gid of group $name is taken by group $owner on this node"
  run groupadd --gid "$gid" "$name"
}

# ensure_ami_group NAME: a group of the AMI's packages (docker...); made as a system group where
# this node lacks the package.
ensure_ami_group() {
  group_exists "$1" || run groupadd --system "$1"
}

# ensure_user NAME UID GROUPS(comma-separated)
ensure_user() {
  local name="$1" uid="$2" groups="$3" home existing group
  home="$(home_of "$name")"
  existing="$(user_line "$name")"
  if [[ -n "$existing" ]]; then
    [[ "$(cut -d: -f3 <<<"$existing")" == "$uid" ]] \
      || fail "user $name exists with UID $(cut -d: -f3 <<<"$existing"), the users file says $uid"
    log "user $name ($uid) exists"
  else
    if grep -qE "^[^:]*:[^:]*:$uid:" "$R/etc/passwd" 2>/dev/null; then
      fail "UID $uid of $name is taken by $(grep -E "^[^:]*:[^:]*:$uid:" "$R/etc/passwd" | cut -d: -f1)"
    fi
    ensure_group "$name" "$uid"
    # the home may already exist on shared storage: never let useradd create or copy into it
    run useradd --uid "$uid" --gid "$uid" --home-dir "$home" --no-create-home \
      --shell /bin/bash "$name"
  fi
  if [[ -n "$groups" ]]; then
    for group in ${groups//,/ }; do
      # declared groups exist already (they come first); the others are the AMI's
      ensure_ami_group "$group"
      in_group "$name" "$group" || run usermod --append --groups "$group" "$name"
    done
  fi
  if makes_homes && [[ ! -d "$R$home" ]]; then
    mkdir -p "$R$home"
    if [[ -d "$R/etc/skel" ]]; then
      cp -r "$R/etc/skel/." "$R$home/"
    fi
    chmod 700 "$R$home"
    # a new home, made by root just now; -h: a link in it (from /etc/skel) is never followed
    run chown -hR "$uid:$uid" "$R$home"
  fi
}

# as_user UID CMD ARGS...: CMD with the user's UID and primary GID (the users file gives both
# the same number) and no other group. Whatever the scripts write into a home directory is
# written this way: a link a user planted there (~/.ssh -> /root/.ssh, ~/.ssh -> /fsx/home) then
# reaches only what the user could change anyway. In the dry run the fake node's setpriv acts it
# out.
as_user() {
  local uid="$1"
  shift
  if [[ "$DRY_RUN" == 1 ]]; then
    "$DRY_RUN_SIMULATORS/setpriv" --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
    return
  fi
  setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
}

# user_node_py UID ARGS...: lib/node.py as the user; root opens the file and hands it over on
# stdin (the script directory need not be readable by the user).
user_node_py() {
  local uid="$1"
  shift
  as_user "$uid" python3 -S - "$@" <"$LIB_DIR/node.py"
}

# ssh_keys_here: the ssh_keys step makes and authorizes each user's own key on this node.
ssh_keys_here() {
  is_on node_setup.ssh_keys_between_nodes true && shared_homes && [[ "$NODE_ROLE" == "controller" ]]
}

# authorize NAME UID: the managed block of the user's authorized_keys holds the users file's
# keys (USER_KEYS) and, where the ssh_keys step runs, the user's cluster key. A home, ~/.ssh or
# authorized_keys that is a link or not the user's is refused with one line, for this user only:
# the other users are still set up.
authorize() {
  local name="$1" uid="$2" own=() keys=() result
  ssh_keys_here && own=(--own-key)
  if [[ -n "${USER_KEYS[$name]:-}" ]]; then
    mapfile -t keys <<<"${USER_KEYS[$name]}"
  fi
  if ! result="$(user_node_py "$uid" ssh-authorize "$name" "$R$(home_of "$name")" "${own[@]}" "${keys[@]}")"; then
    return 1
  fi
  [[ "$result" != changed ]] || log "user $name: authorized_keys updated"
}

step_users() {
  local name="users and groups" file lines kind user uid _account groups
  current_step "$name"
  file="$(users_file)"
  if [[ -z "$file" ]]; then
    skip "$name" "no users file (node_setup.users_file)"
    return
  fi
  step "$name"
  [[ -f "$file" ]] || fail "the users file $(basename "$file") is not beside the scripts"
  if shared_homes && makes_homes; then
    probe_shared_homes
  fi
  lines="$(node_py users "$file")" || fail "cannot read the users file $(basename "$file")"
  declare -gA USER_UIDS=() USER_KEYS=() KEYS_REFUSED=()
  USER_NAMES=()
  # (an empty field would let read shift the next one: GROUPS, which may be empty, comes last)
  while IFS=$'\t' read -r kind user uid _account groups; do
    case "$kind" in
      group)
        # group<TAB>name<TAB>gid
        ensure_group "$user" "$uid"
        ;;
      user)
        ensure_user "$user" "$uid" "$groups"
        USER_UIDS[$user]="$uid"
        USER_NAMES+=("$user")
        ;;
      key)
        # a key line: key<TAB>name<TAB>public key (read splits on tabs only: the key is in uid)
        USER_KEYS[$user]+="$uid"$'\n'
        ;;
    esac
  done <<<"$lines"
  if makes_homes; then
    for user in "${USER_NAMES[@]}"; do
      authorize "$user" "${USER_UIDS[$user]}" || KEYS_REFUSED[$user]=1
    done
  fi
  log "users ready: ${USER_NAMES[*]}"
}

step_ssh_keys() {
  local name="ssh keys between nodes" user uid key_file
  current_step "$name"
  if [[ -z "$(users_file)" ]]; then
    skip "$name" "no users file (node_setup.users_file)"
    return
  fi
  if ! is_on node_setup.ssh_keys_between_nodes true; then
    skip "$name" "node_setup.ssh_keys_between_nodes is off"
    return
  fi
  if ! shared_homes; then
    skip "$name" "home directories are not on shared storage"
    return
  fi
  if [[ "$NODE_ROLE" != "controller" ]]; then
    skip "$name" "the controller makes the keys in the shared home directories"
    return
  fi
  step "$name"
  for user in "${USER_NAMES[@]}"; do
    uid="${USER_UIDS[$user]}"
    key_file="$R$(home_of "$user")/.ssh/id_ed25519"
    # refused by the users step (reported there, once)
    [[ -z "${KEYS_REFUSED[$user]:-}" ]] || continue
    user_node_py "$uid" ssh-dir "$user" "$R$(home_of "$user")" || continue
    if [[ ! -e "$key_file" && ! -L "$key_file" ]]; then
      # as the user: ssh-keygen writes through whatever the user put at that name
      run setpriv --reuid="$uid" --regid="$uid" --clear-groups -- ssh-keygen -q -t ed25519 -N "" -C "$user@$(setting cluster_name)" -f "$key_file"
    fi
    # the key authorizes logins between the nodes, which all see the same home
    authorize "$user" "$uid" || true
  done
}

SSH_CLUSTER_CONFIG=/etc/ssh/ssh_config.d/hyperpod-cluster.conf

# cluster_cidrs: the HyperPod subnets' CIDRs (settings.json), or, in an adopted VPC, those of its
# subnet ids, asked of EC2 (the execution role may ec2:DescribeSubnets) with retries.
cluster_cidrs() {
  local cidrs ids region attempt
  setting_list cluster_network.cidrs
  cidrs="${LIST[*]}"
  setting_list cluster_network.subnet_ids
  ids="${LIST[*]}"
  if [[ -n "$cidrs" || -z "$ids" ]]; then
    printf '%s\n' "$cidrs"
    return 0
  fi
  region="$(setting cluster_network.region)"
  for attempt in 1 2 3 4 5; do
    # shellcheck disable=SC2086 # one argument per subnet id
    if cidrs="$(probe aws ec2 describe-subnets --region "$region" --subnet-ids $ids \
      --query 'Subnets[].CidrBlock' --output text)"; then
      printf '%s\n' "$cidrs"
      return 0
    fi
    sleep $((POLL_SECONDS * attempt))
  done
  fail "cannot read the CIDRs of the cluster's subnets ($ids) from EC2 (ec2:DescribeSubnets, the ec2 endpoint)"
}

# SSH between the cluster's nodes: their host keys are made at provisioning and a replaced node
# has a new one at the same address, so a known_hosts check only ever prompts or refuses ("host
# identification has changed"). Within the cluster's own subnets (which only its nodes, FSx and
# the endpoints use), host keys are not checked; anywhere else ssh is unchanged.
step_ssh_host_policy() {
  local name="SSH within the cluster" cidrs patterns
  current_step "$name"
  step "$name"
  cidrs="$(cluster_cidrs)"
  [[ -n "${cidrs//[[:space:]]/}" ]] || fail "settings.json names no subnet of the cluster (cluster_network)"
  # shellcheck disable=SC2086 # one argument per CIDR
  patterns="$(node_py ssh-patterns $cidrs)" || fail "cannot turn $cidrs into ssh host patterns"
  if write_file "$R$SSH_CLUSTER_CONFIG" <<EOF; then
# Written by the HyperPod lifecycle scripts: the cluster's nodes ($(tr '\n' ' ' <<<"$cidrs" | xargs)),
# by address and by Slurm node name. A replaced node keeps its address and gets a new host key.
Host $patterns
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
EOF
    log "ssh trusts the host keys of the cluster's subnets: $(tr '\n' ' ' <<<"$cidrs" | xargs)"
  fi
}
