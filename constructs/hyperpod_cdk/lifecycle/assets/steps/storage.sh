# shellcheck shell=bash
# Shared storage: the FSx for Lustre mount (HyperPod's, verified; or the scripts' own), EFA to
# FSx, and the FSx for OpenZFS mount of the homes (HyperPod's, verified).

# FSx for Lustre guide, "Mounting from an Amazon EC2 instance": mount -t lustre -o relatime,flock
# <dns_name>@tcp:/<mount_name> <path>; "Mounting automatically": mount once the network is up at
# boot. Ubuntu has no network.service (the guide's Amazon Linux line): network-online.target, as
# AWS's mount_fsx.sh writes it; with EFA, also after the unit that sets up the EFA Lustre client.
LUSTRE_FSTAB_OPTIONS="defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target"
EFA_LUSTRE_CLIENT_UNIT=configure-efa-fsx-lustre-client.service

# fsx_source: the device of the file system for mount/fstab (empty when the names are unknown).
fsx_source() {
  local dns mount_name
  dns="$(setting fsx.dns_name)"
  mount_name="$(setting fsx.mount_name)"
  [[ -n "$dns" && -n "$mount_name" ]] || return 0
  printf '%s@tcp:/%s\n' "$dns" "$mount_name"
}

# mount_fsx_ourselves PATH: an fstab entry, then mount with retries (the file system may still
# be reachable only a little after boot).
mount_fsx_ourselves() {
  local path="$1" source options attempt
  source="$(fsx_source)"
  [[ -n "$source" ]] || fail "settings.json has no fsx.dns_name/fsx.mount_name to mount $path with"
  options="$LUSTRE_FSTAB_OPTIONS"
  if is_on fsx.efa && [[ -n "$(efa_devices)" ]]; then
    options+=",x-systemd.after=$EFA_LUSTRE_CLIENT_UNIT"
  fi
  mkdir -p "$R$path"
  if append_once "$R/etc/fstab" "$source $path lustre $options 0 0"; then
    log "added $path to /etc/fstab"
  fi
  for attempt in 1 2 3 4 5; do
    is_mounted "$path" && break
    log "mounting $source on $path (attempt $attempt/5)"
    try_run mount "$path" || sleep $((POLL_SECONDS * attempt))
  done
  is_mounted "$path" || fail "could not mount $source on $path after 5 attempts"
}

step_fsx() {
  local path mounted_by timeout tries
  current_step "wait for FSx mount"
  if ! is_on fsx.enabled; then
    skip "wait for FSx mount" "storage.fsx is disabled"
    return
  fi
  path="$(setting fsx.mount_path /fsx)"
  mounted_by="$(setting fsx.mounted_by hyperpod)"
  timeout="$(setting node_setup.fsx_mount_timeout_seconds 600)"
  tries=$(((timeout + 9) / 10))
  case "$mounted_by" in
    none)
      skip "wait for FSx mount" "pods reach FSx through the FSx CSI driver; the node does not mount it"
      return
      ;;
    script)
      step "mount FSx"
      mount_fsx_ourselves "$path"
      ;;
    *)
      step "wait for FSx mount"
      # HyperPod mounts the file system (InstanceStorageConfigs FsxLustreConfig) before an
      # OnInitComplete script runs; it can still appear a little late.
      if ! wait_for_mount "$path" "$tries"; then
        if [[ -n "$(fsx_source)" ]]; then
          warn "HyperPod has not mounted $path after ${timeout}s; mounting the adopted file system"
          mount_fsx_ourselves "$path"
        else
          fail "$path is not mounted after ${timeout}s (HyperPod mounts it from the instance group's InstanceStorageConfigs)"
        fi
      fi
      ;;
  esac
  if ! is_mounted "$path" lustre; then
    fail "$path is mounted, but not as lustre"
  fi
  log "$path is a lustre mount"
}

# HyperPod mounts FSx for OpenZFS (InstanceStorageConfigs FsxOpenZfsConfig) over NFS v4 when it
# provisions the node, before an OnInitComplete script runs; like the Lustre mount it can appear
# a little late. The scripts never mount it themselves: a node without it fails here, before the
# users step makes homes on the root volume under the mount point.
step_openzfs() {
  local name="wait for FSx for OpenZFS mount" path timeout tries
  current_step "$name"
  if ! is_on openzfs.enabled; then
    skip "$name" "storage.openzfs is not set"
    return
  fi
  step "$name"
  path="$(setting openzfs.mount_path /home)"
  timeout="$(setting node_setup.fsx_mount_timeout_seconds 600)"
  tries=$(((timeout + 9) / 10))
  if ! wait_for_mount "$path" "$tries"; then
    fail "$path is not mounted after ${timeout}s (HyperPod mounts FSx for OpenZFS from the instance group's InstanceStorageConfigs, at node provisioning only: a node provisioned before storage.openzfs was deployed gets it when it is replaced)"
  fi
  if ! is_mounted "$path" nfs4; then
    fail "$path is mounted, but not as nfs4 (the FSx for OpenZFS file system): another file system is there"
  fi
  log "$path is an nfs4 mount"
}

# efa_devices: the node's EFA devices (they appear under /sys/class/infiniband).
efa_devices() {
  local dev
  for dev in "$R"/sys/class/infiniband/*; do
    [[ -e "$dev" ]] && basename "$dev"
  done
  return 0
}

# efa_check MOUNT_PATH MODE [SUFFIX]: lib/fsx_efa_check.sh (the check the boot unit repeats), its
# lines in this log; its failure fails the step (SUFFIX added). In the dry run the fake node's
# simulators answer its lnetctl and dd.
efa_check() {
  local out rc=0 line path="$PATH"
  [[ "$DRY_RUN" == 1 ]] && path="$DRY_RUN_SIMULATORS:$PATH"
  out="$(PATH="$path" bash "$LIB_DIR/fsx_efa_check.sh" "$1" "$2")" || rc=$?
  while IFS= read -r line; do
    case "$line" in
      FAILED:*) ;;
      WARNING:*) warn "${line#WARNING: }" ;;
      ?*) log "$line" ;;
    esac
  done <<<"$out"
  if ((rc != 0)); then
    line="$(grep -m1 '^FAILED: ' <<<"$out" || true)"
    fail "${line#FAILED: }${3-}"
  fi
}

# The unit that repeats the EFA check at every boot (lifecycle scripts never run at reboot).
EFA_CHECK_UNIT=hyperpod-fsx-efa-check.service

step_fsx_efa() {
  local name="verify EFA transport to FSx" mode path changed=0
  current_step "$name"
  mode="$(setting node_setup.fsx_efa_check fail)"
  if ! is_on fsx.enabled || ! is_on fsx.efa; then
    skip "$name" "the file system is not EFA-enabled"
    return
  fi
  if [[ "$mode" == "off" ]]; then
    skip "$name" "node_setup.fsx_efa_check is off"
    return
  fi
  if [[ -z "$(efa_devices)" ]]; then
    skip "$name" "this node has no EFA device; it reaches FSx over TCP"
    return
  fi
  step "$name"
  path="$(setting fsx.mount_path /fsx)"
  efa_check "$path" "$mode" " (node_setup.fsx_efa_check: $mode)"
  mkdir -p "$R$INSTALL_DIR"
  if ! cmp -s "$LIB_DIR/fsx_efa_check.sh" "$R$INSTALL_DIR/fsx_efa_check.sh"; then
    cp "$LIB_DIR/fsx_efa_check.sh" "$R$INSTALL_DIR/fsx_efa_check.sh" \
      || fail "cannot install $INSTALL_DIR/fsx_efa_check.sh"
    changed=1
  fi
  if write_file "$R/etc/systemd/system/$EFA_CHECK_UNIT" <<EOF; then
# Written by the HyperPod lifecycle scripts: the EFA check of FSx traffic, at every boot.
[Unit]
Description=Check that FSx for Lustre traffic uses EFA
After=network-online.target remote-fs.target $EFA_LUSTRE_CLIENT_UNIT
Wants=network-online.target
RequiresMountsFor=$path

[Service]
Type=oneshot
ExecStart=/usr/bin/bash $INSTALL_DIR/fsx_efa_check.sh $path $mode

[Install]
WantedBy=multi-user.target
EOF
    changed=1
  fi
  if ((changed)); then
    run systemctl daemon-reload
    # enabled for the next boots; this boot has just been checked
    run systemctl enable "$EFA_CHECK_UNIT"
  fi
}

# The FSx for Lustre client is a kernel module built for one kernel (lustre-client-modules-<kernel>
# on Ubuntu): a kernel that unattended-upgrades installs comes up at the next reboot without it,
# and /fsx no longer mounts. HyperPod moves nodes to new kernels with new AMIs
# (UpdateClusterSoftware), so the kernel and the client packages stay where the AMI put them.
LUSTRE_HOLD_PATTERNS=("lustre-client-modules-*" "lustre-client-utils" "linux-aws" "linux-image-aws" "linux-headers-aws")

step_lustre_hold() {
  local name="hold the Lustre client and kernel" installed held package to_hold=()
  current_step "$name"
  if ! is_on fsx.enabled; then
    skip "$name" "no FSx for Lustre file system"
    return
  fi
  step "$name"
  installed="$(probe dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${LUSTRE_HOLD_PATTERNS[@]}" 2>/dev/null \
    | awk '$1 ~ /^[hi]i/ {print $2}' || true)"
  if [[ -z "$installed" ]]; then
    warn "no Lustre client package is installed (dpkg-query): the AMI must bring the client some other way"
    return
  fi
  held="$(probe apt-mark showhold 2>/dev/null || true)"
  for package in $installed; do
    grep -qxF "$package" <<<"$held" || to_hold+=("$package")
  done
  if ((${#to_hold[@]})); then
    run apt-mark hold "${to_hold[@]}"
  fi
  log "held against upgrades: $(tr '\n' ' ' <<<"$installed")"
}

# EKS nodes do not mount FSx (pods do, through the CSI driver), but the Lustre client the pods'
# mounts use is the node's: with an EFA-enabled file system its LNet must run over EFA, which the
# image's unit sets up (the one the Slurm fstab line orders after).
step_eks_efa_lustre() {
  local name="EFA for the Lustre client"
  current_step "$name"
  if ! is_on fsx.enabled || ! is_on fsx.efa; then
    skip "$name" "the file system is not EFA-enabled"
    return
  fi
  if [[ -z "$(efa_devices)" ]]; then
    skip "$name" "this node has no EFA device; its pods reach FSx over TCP"
    return
  fi
  step "$name"
  if [[ -z "$(probe systemctl list-unit-files --no-legend "$EFA_LUSTRE_CLIENT_UNIT" 2>/dev/null || true)" ]]; then
    fail "the image has no $EFA_LUSTRE_CLIENT_UNIT, which sets up the Lustre client's LNet over EFA: pods would reach the EFA-enabled file system over TCP; use a HyperPod image that has it, or storage.fsx.efa_enabled: false"
  fi
  if ! service_active "$EFA_LUSTRE_CLIENT_UNIT"; then
    run systemctl enable --now "$EFA_LUSTRE_CLIENT_UNIT"
  fi
  # the same LNet checks as on Slurm nodes; no I/O probe (the node mounts nothing)
  efa_check - fail
}
