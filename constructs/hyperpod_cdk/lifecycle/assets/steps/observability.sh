# shellcheck shell=bash
# Log rotation and the optional Prometheus exporters (node, DCGM, EFA). The node and DCGM exporters
# run container images (HyperPod's, from the Amazon ECR registry of the region, unless the config
# names others): the step logs in and pulls them, a pull that cannot succeed fails the node with
# its likely cause, and the units only run the image already on the node.

LOGROTATE_DIR=/etc/logrotate.d
# A Slurm log at debug level can fill the root volume within a day: rotate it at this size too.
# Ubuntu runs logrotate daily (logrotate.timer); an hourly run makes the size count (daily rules
# still rotate once a day: logrotate keeps their state), so the logs stay under
# (retention days + 1) x this size.
SLURM_LOG_MAX_SIZE=1G

step_log_rotation() {
  local name="log rotation" days others
  current_step "$name"
  if ! is_on node_setup.log_rotation true; then
    skip "$name" "node_setup.log_rotation is off"
    return
  fi
  step "$name"
  days="$(setting node_setup.log_retention_days 14)"
  write_file "$R$LOGROTATE_DIR/hyperpod-lifecycle" <<EOF || true
# Written by the HyperPod lifecycle scripts.
$LIFECYCLE_LOG {
    daily
    rotate $days
    maxage $days
    missingok
    notifempty
    compress
    delaycompress
    copytruncate
}
EOF
  [[ "$NODE_ROLE" == "eks" ]] && return 0
  # logrotate refuses a log that two files name: leave Slurm's logs alone when the AMI rotates them.
  others="$(grep -lsF "/var/log/slurm" "$R$LOGROTATE_DIR"/* || true)"
  others="$(grep -v "/hyperpod-slurm$" <<<"$others" || true)"
  if [[ -n "$others" ]]; then
    log "the AMI rotates the Slurm logs already ($(show "$others"))"
    return
  fi
  # The Slurm daemons reopen their log files on SIGUSR2 (slurmctld(8), slurmd(8), slurmdbd(8)).
  write_file "$R$LOGROTATE_DIR/hyperpod-slurm" <<EOF || true
# Written by the HyperPod lifecycle scripts.
/var/log/slurm/*.log {
    daily
    maxsize $SLURM_LOG_MAX_SIZE
    rotate $days
    maxage $days
    missingok
    notifempty
    compress
    delaycompress
    sharedscripts
    postrotate
        pkill -x --signal SIGUSR2 slurmctld || true
        pkill -x --signal SIGUSR2 slurmd || true
        pkill -x --signal SIGUSR2 slurmdbd || true
    endscript
}
EOF
  if write_file "$R/etc/systemd/system/logrotate.timer.d/hyperpod-hourly.conf" <<EOF; then
# Written by the HyperPod lifecycle scripts: hourly, so maxsize in $LOGROTATE_DIR/hyperpod-slurm counts.
[Timer]
OnCalendar=
OnCalendar=hourly
EOF
    run systemctl daemon-reload
    run systemctl restart logrotate.timer
  fi
}

# enable_unit UNIT CHANGED: enable and start a unit; restart it when its files changed.
enable_unit() {
  if [[ "$2" == 1 ]]; then
    run systemctl daemon-reload
    run systemctl enable "$1"
    run systemctl restart "$1"
  elif ! service_active "$1"; then
    run systemctl enable --now "$1"
  fi
}

# Attempts of an image pull; the wait after attempt N is N x POLL_SECONDS (10 s, 20 s, ...).
PULL_TRIES=5
# HyperPod's Slurm prolog writes the job ids per GPU here (one file per GPU index); the DCGM
# exporter adds them to its metrics as the hpc_job label (--hpc-job-mapping-dir, NVIDIA
# dcgm-exporter README, "HPC job mapping").
DCGM_JOB_MAPPING_DIR=/run/slurm/dcgm-job-mapping

# require_docker WHAT EXPORTER: Docker is on the node (the exporter runs in it) and its daemon runs.
require_docker() {
  [[ -x "$R/usr/bin/docker" ]] \
    || fail "the $1 runs in Docker, which is not on this node (/usr/bin/docker): HyperPod's AMIs have it, and the container runtime step installs it on login and compute nodes; give the group an image with Docker (cluster.instance_groups[].image_id; a closed network cannot install it), or switch cluster.node_setup.exporters.$2 off"
  service_active docker || run systemctl enable --now docker
}

# ecr_login REGISTRY REGION: log Docker in to a private Amazon ECR registry with the node's
# execution role, as `aws ecr get-login-password --region REGION | docker login --username AWS
# --password-stdin REGISTRY` (the token never reaches the log or a command line).
ecr_login() {
  local registry="$1" region="$2" password
  log "logging in to $registry: aws ecr get-login-password --region $region | docker login --username AWS --password-stdin $registry"
  password="$(probe aws ecr get-login-password --region "$region")" || return 1
  if [[ -z "$password" ]]; then
    echo "aws ecr get-login-password returned no password" >&2
    return 1
  fi
  printf '%s' "$password" | try_run docker login --username AWS --password-stdin "$registry"
}

# pull_cause ERRORS REGISTRY KEY: the likely cause of a failed pull, from its error output (any
# case; KEY: the exporters key that names the image).
pull_cause() {
  local errors="${1,,}" registry="$2" key="$3"
  case "$errors" in
    *"cannot connect to the docker daemon"*)
      echo "the Docker daemon is not running (systemctl status docker)"
      ;;
    *"could not connect to the endpoint url"* | *timeout* | *"dial tcp"* | *"no such host"* | \
      *"connection refused"* | *"network is unreachable"*)
      if [[ "$registry" =~ ^[0-9]{12}\.dkr\.ecr ]]; then
        echo "the node cannot reach Amazon ECR (endpoint): a closed network needs the ecr.api and ecr.dkr interface endpoints and the S3 gateway endpoint (the image layers), an open one a route to the internet"
      else
        echo "the node cannot reach $registry (endpoint): a closed network reaches only Amazon ECR of its region (copy the image there and set cluster.node_setup.exporters.$key to the copy), an open one needs a route to the internet"
      fi
      ;;
    *accessdenied* | *"not authorized"* | *"no basic auth credentials"* | \
      *"unable to locate credentials"* | *denied* | *"403 forbidden"*)
      echo "a missing permission: the execution role needs ecr:GetAuthorizationToken, and ecr:BatchGetImage and ecr:GetDownloadUrlForLayer on the repository (the role this app creates has them; a role named in the config needs them too), and the repository's policy must let this account pull"
      ;;
    *"manifest unknown"* | *"not found"* | *"does not exist"* | *repositorynotfound*)
      echo "the image is not in that registry: set cluster.node_setup.exporters.$key to a copy in an Amazon ECR repository of your account (make preflight checks that it exists)"
      ;;
    *)
      echo "the registry's endpoint (the ecr.api and ecr.dkr interface endpoints in a closed network, else a route to the internet) or the execution role's ECR permissions"
      ;;
  esac
}

# pull_exporter_image EXPORTER WHAT: the image settings.json names for EXPORTER (node, dcgm), on
# the node, into IMAGE: logged in to its registry (settings.json gives the region of a private
# Amazon ECR registry; any other needs no login) and pulled, in PULL_TRIES attempts, or the node
# fails naming the image, the registry and the likely cause.
pull_exporter_image() {
  local exporter="$1" what="$2" registry region errors i last="" text=""
  IMAGE="$(setting "node_setup.exporters.${exporter}_image")"
  registry="$(setting "node_setup.exporters.${exporter}_registry")"
  region="$(setting "node_setup.exporters.${exporter}_ecr_region")"
  [[ -n "$IMAGE" && -n "$registry" ]] \
    || fail "settings.json names no node_setup.exporters.${exporter}_image (it is built from the config's cluster.node_setup.exporters)"
  require_docker "$what" "$exporter"
  if probe docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "$IMAGE is on the node already"
    return 0
  fi
  errors="$(mktemp)"
  for ((i = 1; i <= PULL_TRIES; i++)); do
    if { [[ -z "$region" ]] || ecr_login "$registry" "$region"; } 2>"$errors" \
      && try_run docker pull --quiet "$IMAGE" 2>>"$errors"; then
      rm -f "$errors"
      log "pulled $IMAGE"
      return 0
    fi
    text="$(cat "$errors")"
    last="$(grep -v '^[[:space:]]*$' "$errors" | tail -n 1 || true)"
    log "cannot pull $IMAGE yet ($i/$PULL_TRIES): ${last:-no error output}"
    ((i == PULL_TRIES)) || sleep $((POLL_SECONDS * i))
  done
  rm -f "$errors"
  fail "cannot pull the $what image $IMAGE from $registry after $PULL_TRIES attempts (${last:-no error output}); likely cause: $(pull_cause "$text" "$registry" "${exporter}_image")"
}

# exporter_unit NAME DESCRIPTION DOCKER_RUN_ARGS...: the unit that runs an exporter's image as
# container NAME: never pulled at start (the step pulled it), restarted after a failure at most
# 5 times in 10 minutes, then reported failed (systemctl --failed) instead of looping. True when
# the unit's file changed.
exporter_unit() {
  local name="$1" description="$2"
  shift 2
  write_file "$R/etc/systemd/system/$name.service" <<EOF
# Written by the HyperPod lifecycle scripts.
[Unit]
Description=$description
After=docker.service
Requires=docker.service
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
ExecStartPre=-/usr/bin/docker rm -f $name
ExecStart=/usr/bin/docker run --rm --pull never --name $name $*
ExecStop=/usr/bin/docker stop $name
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
EOF
}

step_node_exporter() {
  local name="node exporter" changed=0 port
  current_step "$name"
  if ! is_on node_setup.exporters.node; then
    skip "$name" "node_setup.exporters.node is off"
    return
  fi
  step "$name"
  pull_exporter_image node "$name"
  port="$(setting node_setup.exporters.node_port 9100)"
  # the Ubuntu package an earlier version of these scripts installed would hold the port
  if probe systemctl is-enabled --quiet prometheus-node-exporter; then
    run systemctl disable --now prometheus-node-exporter
  fi
  # In the host's network and PID namespaces, with the host's file systems read-only under /host
  # (prometheus/node_exporter README, "Docker").
  if exporter_unit hyperpod-node-exporter "Prometheus node exporter (port $port)" \
    --net host --pid host -v /:/host:ro,rslave "$IMAGE" --path.rootfs=/host \
    "--web.listen-address=:$port"; then
    changed=1
  fi
  enable_unit hyperpod-node-exporter "$changed"
}

step_dcgm_exporter() {
  local name="DCGM exporter" changed=0 port mapping=()
  current_step "$name"
  if ! is_on node_setup.exporters.dcgm; then
    skip "$name" "node_setup.exporters.dcgm is off"
    return
  fi
  if [[ "$NODE_GPU" != "true" ]]; then
    skip "$name" "no NVIDIA GPU on this node"
    return
  fi
  step "$name"
  pull_exporter_image dcgm "$name"
  port="$(setting node_setup.exporters.dcgm_port 9400)"
  if [[ -d "$R$DCGM_JOB_MAPPING_DIR" ]]; then
    log "the GPU metrics carry the Slurm job ids of $DCGM_JOB_MAPPING_DIR (label hpc_job)"
    mapping=(-v "$DCGM_JOB_MAPPING_DIR:$DCGM_JOB_MAPPING_DIR:ro" "$IMAGE"
      --hpc-job-mapping-dir "$DCGM_JOB_MAPPING_DIR")
  else
    log "no $DCGM_JOB_MAPPING_DIR (HyperPod's Slurm prolog writes it): no job ids on the GPU metrics"
    mapping=("$IMAGE")
  fi
  # dcgm-exporter listens on :9400 in the container and needs SYS_ADMIN for profiling metrics
  # (NVIDIA dcgm-exporter README).
  if exporter_unit hyperpod-dcgm-exporter "NVIDIA DCGM exporter (port $port)" \
    --gpus all --cap-add SYS_ADMIN -p "$port:9400" "${mapping[@]}"; then
    changed=1
  fi
  enable_unit hyperpod-dcgm-exporter "$changed"
}

step_efa_exporter() {
  local name="EFA exporter" changed=0 port
  current_step "$name"
  if ! is_on node_setup.exporters.efa; then
    skip "$name" "node_setup.exporters.efa is off"
    return
  fi
  if [[ -z "$(efa_devices)" ]]; then
    skip "$name" "this node has no EFA device"
    return
  fi
  step "$name"
  port="$(setting node_setup.exporters.efa_port 9109)"
  mkdir -p "$R$INSTALL_DIR"
  if ! cmp -s "$LIB_DIR/efa_exporter.py" "$R$INSTALL_DIR/efa_exporter.py"; then
    cp "$LIB_DIR/efa_exporter.py" "$R$INSTALL_DIR/efa_exporter.py"
    changed=1
  fi
  if write_file "$R/etc/systemd/system/hyperpod-efa-exporter.service" <<EOF; then
# Written by the HyperPod lifecycle scripts.
[Unit]
Description=EFA hardware counters exporter (Prometheus, port $port)
After=network-online.target

[Service]
ExecStart=/usr/bin/python3 $INSTALL_DIR/efa_exporter.py --port $port
Restart=always
RestartSec=10
DynamicUser=yes

[Install]
WantedBy=multi-user.target
EOF
    changed=1
  fi
  enable_unit hyperpod-efa-exporter "$changed"
}
