# shellcheck shell=bash
# Container runtimes: Docker data on local storage and the NVIDIA runtime (Slurm login and
# compute nodes), enroot and pyxis (Slurm), containerd data on the EBS volume (EKS).

DOCKER_DAEMON_JSON=/etc/docker/daemon.json
CONTAINERD_CONFIG=/etc/containerd/config.toml
# The DLAMI's unit that assembles and mounts the local NVMe instance store at $NVME_MOUNT.
NVME_UNIT=dlami-nvme.service

# local_data_mount: the local NVMe mount when there is one (waiting for the DLAMI's unit that
# mounts it, which can finish after the lifecycle script starts), else the group's EBS volume;
# empty when the node has neither.
local_data_mount() {
  if ! is_mounted "$NVME_MOUNT" && probe systemctl is-enabled --quiet "$NVME_UNIT"; then
    wait_for_mount "$NVME_MOUNT" 12 >/dev/null || true
  fi
  if is_mounted "$NVME_MOUNT"; then
    echo "$NVME_MOUNT"
  elif is_mounted "$EBS_MOUNT"; then
    echo "$EBS_MOUNT"
  fi
  return 0
}

restart_docker() {
  run systemctl daemon-reload
  run systemctl restart docker
}

step_container_runtime() {
  local name="container runtime on NVMe" mount data result changed=0 containerd_changed=0 unit after service
  current_step "$name"
  if ! is_on node_setup.container_runtime_on_nvme true; then
    skip "$name" "node_setup.container_runtime_on_nvme is off"
    return
  fi
  if [[ "$NODE_ROLE" == "controller" ]]; then
    skip "$name" "the controller runs no containers"
    return
  fi
  step "$name"
  if [[ ! -x "$R/usr/bin/docker" ]]; then
    # Docker from the Ubuntu archive (a distribution package, version-pinned by the release)
    apt_install docker.io
  fi
  mount="$(local_data_mount)"
  if [[ -z "$mount" ]]; then
    log "no local NVMe ($NVME_MOUNT) or EBS volume ($EBS_MOUNT): Docker data stays on the root volume"
    return
  fi
  data="$mount/docker"
  mkdir -p "$R$data/data-root" "$R$data/tmp" "$R$data/containerd"
  # Docker's data on Lustre does not work (overlay2 needs a local file system): local disks only.
  result="$(node_py json-set "$R$DOCKER_DAEMON_JSON" data-root "\"$data/data-root\"")" \
    || fail "cannot set data-root in $DOCKER_DAEMON_JSON"
  [[ "$result" == changed ]] && changed=1
  # Docker 29 keeps images in containerd's image store, which data-root does not move:
  # containerd's own root goes to the local disk too.
  result="$(node_py toml-set-top "$R$CONTAINERD_CONFIG" root "$data/containerd")" \
    || fail "cannot set root in $CONTAINERD_CONFIG"
  if [[ "$result" == changed ]]; then
    containerd_changed=1
  fi
  # At boot, neither may start before the disk is mounted, or it writes to the root volume.
  after=""
  if [[ "$mount" == "$NVME_MOUNT" ]]; then
    after="After=$NVME_UNIT"
  fi
  for unit in docker containerd; do
    service=""
    if [[ "$unit" == docker ]]; then
      service="[Service]
Environment=\"DOCKER_TMPDIR=$data/tmp\""
    fi
    if write_file "$R/etc/systemd/system/$unit.service.d/hyperpod-data.conf" <<EOF; then
[Unit]
RequiresMountsFor=$mount
$after
$service
EOF
      changed=1
      if [[ "$unit" == containerd ]]; then
        containerd_changed=1
      fi
    fi
  done
  if ((containerd_changed)); then
    # Docker runs on containerd: stop it first, start it after
    try_run systemctl stop docker || true
    run systemctl daemon-reload
    run systemctl restart containerd
    changed=1
  fi
  if ((changed)); then
    restart_docker
  fi
  log "Docker and containerd data on $data"
}

step_nvidia_toolkit() {
  local name="NVIDIA container toolkit"
  current_step "$name"
  if ! is_on node_setup.nvidia_container_toolkit true; then
    skip "$name" "node_setup.nvidia_container_toolkit is off"
    return
  fi
  if [[ "$NODE_ROLE" == "controller" || "$NODE_GPU" != "true" ]]; then
    skip "$name" "no NVIDIA GPU on this node"
    return
  fi
  step "$name"
  # The AMI ships the toolkit that matches its NVIDIA driver; the scripts only register it.
  [[ -x "$R/usr/bin/nvidia-ctk" ]] \
    || fail "the AMI has no NVIDIA container toolkit (nvidia-ctk); use a HyperPod GPU AMI or set cluster.node_setup.nvidia_container_toolkit: false"
  if node_py json-has "$R$DOCKER_DAEMON_JSON" runtimes nvidia; then
    log "the nvidia runtime is registered with Docker"
    return
  fi
  run nvidia-ctk runtime configure --runtime=docker --config="$R$DOCKER_DAEMON_JSON"
  restart_docker
}

# pyxis_plugin: the pyxis SPANK plugin the AMI installed (empty when there is none).
pyxis_plugin() {
  local candidate
  for candidate in "$SLURM_DIR/lib/slurm/spank_pyxis.so" /usr/local/lib/slurm/spank_pyxis.so; do
    if [[ -f "$R$candidate" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  return 0
}

# Configless Slurm (HyperPod's compute and login nodes): slurmd reads the controller's files from
# this cache, so a node's own $SLURM_DIR/etc does not count there.
SLURMD_CONF_CACHE=/var/spool/slurmd/conf-cache
ENROOT_CONF=/etc/enroot/enroot.conf

# pyxis_registered FILE: FILE (or its .d directory) loads the pyxis plugin.
pyxis_registered() { grep -rqsF "spank_pyxis.so" "$R$1" "$R$1.d"; }

# enroot_path NAME: the directory enroot.conf gives NAME (ENROOT_DATA_PATH ...) with the per-user
# part (${UID}, $(id -u)...) cut off: the directory a user's part is made in. Empty when unset.
enroot_path() {
  local value
  value="$(sed -nE "s/^[[:space:]]*$1[[:space:]]+//p" "$R$ENROOT_CONF" 2>/dev/null | tail -n 1)"
  if [[ "$value" == *'$'* ]]; then
    value="${value%%\$*}"
    value="${value%/*}"
  fi
  [[ -n "$value" ]] && printf '%s\n' "${value%/}"
  return 0
}

# check_enroot_paths: enroot unpacks every image under its data and cache paths: on the root
# volume (or Lustre, which it cannot use) the first big container fills or breaks the node.
check_enroot_paths() {
  local key path on
  for key in ENROOT_RUNTIME_PATH ENROOT_CACHE_PATH ENROOT_DATA_PATH; do
    path="$(enroot_path "$key")"
    if [[ -z "$path" ]]; then
      warn "$ENROOT_CONF sets no $key: enroot uses its default under the home directory"
      continue
    fi
    on="$(mount_of "$path")"
    case "$on" in
      "$NVME_MOUNT" | "$EBS_MOUNT" | /run | /tmp) log "enroot $key $path is on $on" ;;
      /) warn "enroot $key $path is on the root volume: large images can fill it" ;;
      *)
        if [[ "$on" == "$(setting fsx.mount_path /fsx)" || "$on" == "$(setting openzfs.mount_path)" ]]; then
          fail "enroot $key $path is on the shared file system ($on), which enroot cannot use for its data; set it to local storage in $ENROOT_CONF"
        fi
        log "enroot $key $path is on $on"
        ;;
    esac
  done
}

step_enroot_pyxis() {
  local name="enroot and pyxis" plugin unit conf
  current_step "$name"
  if ! is_on node_setup.enroot_pyxis true; then
    skip "$name" "node_setup.enroot_pyxis is off"
    return
  fi
  step "$name"
  # Current HyperPod Slurm AMIs ship pyxis registered in plugstack.conf and enroot as a package,
  # with enroot's paths already on the NVMe; the scripts check and never download either.
  plugin="$(pyxis_plugin)"
  [[ -n "$plugin" ]] \
    || fail "pyxis (spank_pyxis.so) is not installed; use a HyperPod Slurm AMI or set cluster.node_setup.enroot_pyxis: false"
  conf="$SLURM_DIR/etc/plugstack.conf"
  if [[ "$NODE_ROLE" != "controller" && -d "$R$SLURMD_CONF_CACHE" ]]; then
    # configless: the controller's plugstack.conf is what counts, and only the controller edits it
    conf="$SLURMD_CONF_CACHE/plugstack.conf"
    if pyxis_registered "$conf"; then
      log "pyxis is registered with Slurm ($conf)"
    else
      warn "pyxis is not in $conf yet: the controller's lifecycle run registers it and pushes it to the nodes (scontrol reconfigure)"
    fi
  elif pyxis_registered "$conf"; then
    log "pyxis is registered with Slurm ($plugin)"
  else
    append_once "$R$conf" "required $plugin"
    log "registered pyxis in plugstack.conf"
    for unit in slurmctld slurmd; do
      if service_active "$unit"; then
        run systemctl restart "$unit"
      fi
    done
    if [[ "$NODE_ROLE" == "controller" ]]; then
      # configless nodes get the new plugstack.conf from the controller
      run scontrol reconfigure
    fi
  fi
  if [[ "$NODE_ROLE" == "compute" ]]; then
    [[ -x "$R/usr/bin/enroot" ]] \
      || fail "enroot is not installed; use a HyperPod Slurm AMI or set cluster.node_setup.enroot_pyxis: false"
    log "enroot is installed"
    check_enroot_paths
  fi
}

step_eks_containerd() {
  local name="containerd data on EBS" dir dirs=() src dst unit changed=0
  current_step "$name"
  if ! is_on node_setup.eks_containerd_on_ebs true; then
    skip "$name" "node_setup.eks_containerd_on_ebs is off"
    return
  fi
  if [[ -d "$R$EBS_MOUNT" ]] && ! is_mounted "$EBS_MOUNT"; then
    wait_for_mount "$EBS_MOUNT" 6 >/dev/null || true
  fi
  if ! is_mounted "$EBS_MOUNT"; then
    skip "$name" "no EBS volume at $EBS_MOUNT (the group has no ebs_volume_gb)"
    return
  fi
  for dir in containerd kubelet; do
    is_mounted "/var/lib/$dir" || dirs+=("$dir")
  done
  if ((${#dirs[@]} == 0)); then
    step "$name"
    log "containerd and kubelet data are on $EBS_MOUNT already"
    return
  fi
  # At OnCreate (the default on EKS) the node has not joined yet: neither daemon has started.
  # Where one runs, its data is in use (images, pod volumes and device plugin sockets): moving it
  # would pull it from under the running pods, so it stays; new nodes get the move.
  for unit in containerd kubelet; do
    if service_active "$unit"; then
      skip "$name" "$unit is running (the node has joined the cluster): its data stays on the root volume; nodes created with cluster.lifecycle_hook OnCreate (the default on EKS) get it on $EBS_MOUNT"
      return
    fi
  done
  step "$name"
  for dir in "${dirs[@]}"; do
    src="/var/lib/$dir" dst="$EBS_MOUNT/$dir"
    mkdir -p "$R$dst" "$R$src"
    # what the AMI put there (the pause image); -x: never what another file system has mounted
    if [[ -z "$(ls -A "$R$dst")" && -n "$(ls -A "$R$src")" ]]; then
      run cp -a -x "$R$src/." "$R$dst/"
    fi
    # nofail: a missing volume must not keep the node from booting (the daemons then wait, below)
    append_once "$R/etc/fstab" \
      "$dst $src none bind,nofail,x-systemd.requires-mounts-for=$EBS_MOUNT 0 0" || true
    run mount --bind "$dst" "$src"
    if write_file "$R/etc/systemd/system/$dir.service.d/hyperpod-ebs.conf" <<EOF; then
[Unit]
RequiresMountsFor=$src
EOF
      changed=1
    fi
  done
  if ((changed)); then
    # units only: nothing is started or restarted (the node's bootstrap starts both)
    run systemctl daemon-reload
  fi
  log "containerd and kubelet data on $EBS_MOUNT"
}
