# shellcheck shell=bash
# Log rotation and the optional Prometheus exporters (node, DCGM, EFA).

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

step_node_exporter() {
  local name="node exporter" changed=0
  current_step "$name"
  if ! is_on node_setup.exporters.node; then
    skip "$name" "node_setup.exporters.node is off"
    return
  fi
  step "$name"
  if [[ ! -x "$R/usr/bin/prometheus-node-exporter" ]]; then
    # the Ubuntu package; it reads its flags from /etc/default/prometheus-node-exporter
    apt_install prometheus-node-exporter
  fi
  if write_file "$R/etc/default/prometheus-node-exporter" <<EOF; then
# Written by the HyperPod lifecycle scripts.
ARGS="--web.listen-address=:$(setting node_setup.exporters.node_port 9100)"
EOF
    changed=1
  fi
  enable_unit prometheus-node-exporter "$changed"
}

step_dcgm_exporter() {
  local name="DCGM exporter" changed=0 image port
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
  [[ -x "$R/usr/bin/docker" ]] || fail "the DCGM exporter runs in Docker, which is not installed"
  image="$(setting node_setup.exporters.dcgm_image)"
  [[ -n "$image" ]] || fail "settings.json names no node_setup.exporters.dcgm_image"
  port="$(setting node_setup.exporters.dcgm_port 9400)"
  # dcgm-exporter listens on :9400 in the container and needs SYS_ADMIN for profiling metrics
  # (NVIDIA dcgm-exporter README).
  if write_file "$R/etc/systemd/system/hyperpod-dcgm-exporter.service" <<EOF; then
# Written by the HyperPod lifecycle scripts.
[Unit]
Description=NVIDIA DCGM exporter (Prometheus, port $port)
After=docker.service
Requires=docker.service

[Service]
TimeoutStartSec=0
ExecStartPre=-/usr/bin/docker rm -f hyperpod-dcgm-exporter
ExecStart=/usr/bin/docker run --rm --name hyperpod-dcgm-exporter --gpus all --cap-add SYS_ADMIN -p $port:9400 $image
ExecStop=/usr/bin/docker stop hyperpod-dcgm-exporter
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
EOF
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
