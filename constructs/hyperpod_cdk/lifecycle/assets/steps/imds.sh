# shellcheck shell=bash
# The instance metadata service (IMDS) only for root and the node's system accounts (issue 34,
# M4): every Slurm node's users (the users file's UIDs and directory users) cannot reach
# 169.254.169.254 or fd00:ec2::254, so they cannot take the node's role credentials (which read
# the accounting and directory secrets). AWS ParallelCluster does the same with `Imds: Secured`:
# an iptables owner match on the OUTPUT chain. Root, the Slurm daemons, and the AMI's and
# HyperPod's agents (root or system UIDs below 1000) keep it. A container started through pyxis
# runs as the user (enroot makes no root) and shares the host's network: the same rule holds.
#
# The rules are kept in a script the node runs at every boot (hyperpod-imds.service): iptables
# rules do not survive a reboot.

IMDS_CHAIN=HYPERPOD-IMDS
IMDS_SCRIPT="$INSTALL_DIR/imds-restrict.sh"
IMDS_UNIT=/etc/systemd/system/hyperpod-imds.service
IMDS_V4=169.254.169.254/32
IMDS_V6=fd00:ec2::254/128
# The UIDs refused: from the users file's first UID (config/node_setup.py MIN_UID) up; directory
# users (SSSD id mapping from 200000, rfc2307 uidNumbers) are in the range as long as their UIDs
# are 2000 and up (docs/security.md).
IMDS_FIRST_USER_UID=2000
IMDS_LAST_UID=4294967294

# imds_exempt_uids: accounts of the node (not people) whose UID is in the refused range: the
# Slurm and munge daemons by name, and any account that cannot log in (nologin/false shell).
imds_exempt_uids() {
  local name uid shell
  while IFS=: read -r name _ uid _ _ _ shell; do
    [[ "$uid" =~ ^[0-9]+$ ]] && ((uid >= IMDS_FIRST_USER_UID)) || continue
    if [[ "$name" == slurm || "$name" == munge || "$shell" == */nologin || "$shell" == */false ]]; then
      printf '%s\n' "$uid"
    fi
  done <"$R/etc/passwd"
}

imds_script() {
  local uid
  cat <<EOF_SCRIPT
#!/bin/bash
# Written by the HyperPod lifecycle scripts (step: IMDS only for root and system accounts).
# $IMDS_SCRIPT [remove]: users' UIDs ($IMDS_FIRST_USER_UID-$IMDS_LAST_UID) cannot reach the instance metadata service.
set -uo pipefail
apply() {
  local tool="\$1" address="\$2"
  "\$tool" -w -N $IMDS_CHAIN 2>/dev/null || "\$tool" -w -F $IMDS_CHAIN || return 1
EOF_SCRIPT
  for uid in $(imds_exempt_uids); do
    printf '  "$tool" -w -A %s -m owner --uid-owner %s -j RETURN || return 1\n' "$IMDS_CHAIN" "$uid"
  done
  cat <<EOF_SCRIPT
  "\$tool" -w -A $IMDS_CHAIN -m owner --uid-owner $IMDS_FIRST_USER_UID-$IMDS_LAST_UID -j REJECT || return 1
  "\$tool" -w -C OUTPUT -d "\$address" -j $IMDS_CHAIN 2>/dev/null \\
    || "\$tool" -w -I OUTPUT 1 -d "\$address" -j $IMDS_CHAIN
}
remove() {
  local tool="\$1" address="\$2"
  while "\$tool" -w -D OUTPUT -d "\$address" -j $IMDS_CHAIN 2>/dev/null; do :; done
  "\$tool" -w -F $IMDS_CHAIN 2>/dev/null && "\$tool" -w -X $IMDS_CHAIN
  return 0
}
action=apply
[[ "\${1:-}" == remove ]] && action=remove
\$action iptables $IMDS_V4 || { echo "IMDS rules (IPv4) failed" >&2; exit 1; }
# IPv6: best effort (the IMDS IPv6 endpoint exists only where the instance enables it)
\$action ip6tables $IMDS_V6 || echo "IMDS rules (IPv6) not set: no ip6tables filter table" >&2
exit 0
EOF_SCRIPT
}

step_imds() {
  local name="IMDS only for root and system accounts" changed=0 exempt
  current_step "$name"
  if ! is_on node_setup.restrict_imds true; then
    skip "$name" "node_setup.restrict_imds is off"
    if [[ -f "$R$IMDS_UNIT" ]]; then
      run systemctl disable hyperpod-imds.service
      run "$IMDS_SCRIPT" remove
      rm -f "$R$IMDS_UNIT" "$R$IMDS_SCRIPT"
      log "the IMDS restriction of an earlier run is removed"
    fi
    return
  fi
  step "$name"
  if imds_script | write_file "$R$IMDS_SCRIPT"; then
    chmod 755 "$R$IMDS_SCRIPT"
    changed=1
  fi
  if write_file "$R$IMDS_UNIT" <<EOF; then
# Written by the HyperPod lifecycle scripts: the users' UIDs cannot reach the instance metadata
# service; the rules are set again at every boot, before Slurm starts jobs.
[Unit]
Description=HyperPod: instance metadata only for root and system accounts
After=local-fs.target
Before=slurmd.service slurmctld.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=$IMDS_SCRIPT

[Install]
WantedBy=multi-user.target
EOF
    changed=1
  fi
  if ((changed)); then
    run systemctl daemon-reload
    run systemctl enable hyperpod-imds.service
    run "$IMDS_SCRIPT"
    exempt="$(imds_exempt_uids | xargs)"
    log "IMDS refused to UIDs $IMDS_FIRST_USER_UID-$IMDS_LAST_UID (exempt: ${exempt:-none}); root and system accounts keep it"
  else
    log "the IMDS rules are in place"
  fi
}
