# shellcheck shell=bash
# Directory users (SSSD against LDAP or Active Directory over TLS) and pam_slurm_adopt on compute
# nodes. settings.json names the directory's two secrets (their ARNs), never their values: the
# node reads the bind password and the CA certificate from Secrets Manager at boot with its
# execution role, so nothing secret is in S3 or in the log. Sourced after steps/users.sh
# (shared_homes, home_of).

SSSD_CONF=/etc/sssd/sssd.conf
SSSD_CA=/etc/sssd/certs/ca.pem
SSSD_DOMAIN=hyperpod
# Ubuntu packages: the LDAP back end, the NSS and PAM modules, and sssctl (config-check)
SSSD_PACKAGES=(sssd-ldap libnss-sss libpam-sss sssd-tools)
DIRECTORY_SUDOERS=/etc/sudoers.d/hyperpod-directory
DIRECTORY_SSHD=/etc/ssh/sshd_config.d/hyperpod-directory.conf
SECRET_TRIES=5

has_directory() { [[ -n "$(setting node_setup.directory.uri)" ]]; }

# missing_packages PACKAGE...: the packages dpkg does not have installed, one a line.
missing_packages() {
  local installed package
  # shellcheck disable=SC2016 # the format is dpkg-query's, not the shell's
  installed="$(probe dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null \
    | awk '$1 ~ /^[hi]i/ {print $2}' || true)"
  for package in "$@"; do
    grep -qxF "$package" <<<"$installed" || printf '%s\n' "$package"
  done
}

# read_secret ARN WHAT: the SecretString of a Secrets Manager secret into SECRET_VALUE, with
# retries (the node's network and credentials may take a moment at boot). Never printed.
read_secret() {
  local arn="$1" what="$2" region errors i
  # arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME (the CLI takes no region from it)
  region="$(cut -d: -f4 <<<"$arn")"
  errors="$(mktemp)"
  log "reading the $what from Secrets Manager ($arn)"
  for ((i = 1; i <= SECRET_TRIES; i++)); do
    if SECRET_VALUE="$(probe aws secretsmanager get-secret-value --region "$region" \
      --secret-id "$arn" --query SecretString --output text 2>"$errors")"; then
      rm -f "$errors"
      [[ -n "$SECRET_VALUE" && "$SECRET_VALUE" != None ]] \
        || fail "the secret $arn ($what) has no SecretString"
      return 0
    fi
    log "cannot read the $what yet ($i/$SECRET_TRIES)"
    ((i == SECRET_TRIES)) || sleep "$POLL_SECONDS"
  done
  local last
  last="$(grep -v '^[[:space:]]*$' "$errors" | tail -n 1 || true)"
  rm -f "$errors"
  fail "cannot read the $what from Secrets Manager ($arn) after $SECRET_TRIES tries: ${last:-no error output}; the execution role needs secretsmanager:GetSecretValue on it (the role the app creates has it), and a closed network the secretsmanager endpoint"
}

# nss_add_sss DATABASE: `sss` after the sources of DATABASE in /etc/nsswitch.conf (local files
# come first, so the AMI's and the users file's accounts win); true when it changed.
nss_add_sss() {
  local file="$R/etc/nsswitch.conf" db="$1" line
  line="$(grep -E "^$db:" "$file" 2>/dev/null | head -n 1 || true)"
  if [[ -z "$line" ]]; then
    printf '%s:         files sss\n' "$db" >>"$file" || fail "cannot write /etc/nsswitch.conf"
    return 0
  fi
  [[ " ${line#*:} " == *" sss "* ]] && return 1
  sed -i -E "s/^($db:.*[^[:space:]])[[:space:]]*\$/\\1 sss/" "$file" \
    || fail "cannot write /etc/nsswitch.conf"
}

# sudoers_name GROUP: the group as a sudoers user list item (%name, spaces escaped).
sudoers_name() { printf '%%%s' "${1// /\\ }"; }

render_sssd_conf() {
  local schema="$1" groups="$2" password="$3" services="nss, pam" attribute homes access
  attribute="$(setting node_setup.directory.ssh_public_key_attribute)"
  [[ -n "$attribute" ]] && services="nss, pam, ssh"
  homes="$(home_of %u)"
  if [[ -n "$groups" ]]; then
    access="access_provider = simple
simple_allow_groups = $groups"
  else
    # no group may log in here; an empty simple_allow_groups would let every user in
    access="access_provider = deny"
  fi
  cat <<EOF
# Written by the HyperPod lifecycle scripts (cluster.node_setup.directory). It holds the bind
# password: mode 0600, root only; never copied off the node.
[sssd]
config_file_version = 2
services = $services
domains = $SSSD_DOMAIN

[nss]
filter_users = root
filter_groups = root

[pam]

[domain/$SSSD_DOMAIN]
id_provider = ldap
auth_provider = ldap
$access
ldap_uri = $(setting node_setup.directory.uri)
ldap_search_base = $(setting node_setup.directory.search_base)
ldap_schema = $schema
ldap_default_bind_dn = $(setting node_setup.directory.bind_dn)
ldap_default_authtok_type = password
ldap_default_authtok = $password
# TLS from the first byte (ldaps://), the server's certificate verified against the CA
ldap_id_use_start_tls = false
ldap_tls_reqcert = demand
ldap_tls_cacert = $SSSD_CA
EOF
  if [[ "$schema" == ad ]]; then
    # UIDs and GIDs from the objectSid: the same on every node, no POSIX attributes needed
    printf '%s\n' "ldap_id_mapping = true" "ldap_referrals = false"
  fi
  if [[ -n "$attribute" ]]; then
    printf '%s\n' "ldap_user_ssh_public_key = $attribute"
  fi
  cat <<EOF
cache_credentials = true
enumerate = false
override_homedir = $homes
default_shell = /bin/bash
EOF
}

# The sudoers file of sudo_groups, validated with visudo before it is put in place; removed when
# the setting has no group. True when it changed.
directory_sudoers() {
  local file="$R$DIRECTORY_SUDOERS" new content group
  setting_list node_setup.directory.sudo_groups
  if ((${#LIST[@]} == 0)); then
    [[ -e "$file" ]] || return 1
    rm -f "$file" || fail "cannot remove $DIRECTORY_SUDOERS"
    log "removed $DIRECTORY_SUDOERS (node_setup.directory.sudo_groups is empty)"
    return 0
  fi
  content="# Written by the HyperPod lifecycle scripts (cluster.node_setup.directory.sudo_groups)."
  for group in "${LIST[@]}"; do
    content+=$'\n'"$(sudoers_name "$group") ALL=(ALL:ALL) ALL"
  done
  [[ -f "$file" && "$(cat "$file")" == "$content" ]] && return 1
  # sudo skips files of sudoers.d whose name holds a dot: the draft is never read half-written
  new="$R/etc/sudoers.d/.hyperpod-directory.new"
  if ! { mkdir -p "$(dirname "$new")" && printf '%s\n' "$content" >"$new" && chmod 0440 "$new"; }; then
    fail "cannot write $DIRECTORY_SUDOERS"
  fi
  if [[ -x "$R/usr/sbin/visudo" ]]; then
    if ! try_run visudo -cf "$new"; then
      rm -f "$new"
      fail "visudo rejects the sudoers rules of node_setup.directory.sudo_groups (its output is above)"
    fi
  else
    warn "visudo is not on this node: $DIRECTORY_SUDOERS is not validated"
  fi
  mv -f "$new" "$file" || fail "cannot write $DIRECTORY_SUDOERS"
}

# The ssh.service drop-ins that put AuthorizedKeysCommand on sshd's command line (one a line,
# paths in the root). ec2-instance-connect's (ssh.service.d/ec2-instance-connect.conf, in AWS's
# images) starts `sshd -D -o "AuthorizedKeysCommand .../eic_run_authorized_keys %%u %%f" ...`:
# an option on the command line wins over every sshd_config file, so with it sshd never asks
# SSSD for a directory user's key.
ssh_command_line_overrides() {
  local dir
  for dir in /etc/systemd/system /run/systemd/system /usr/lib/systemd/system /lib/systemd/system; do
    grep -lsE '^[[:space:]]*ExecStart=.*AuthorizedKeysCommand' "$R$dir"/ssh.service.d/*.conf || true
  done
}

# Keys from the directory: remove ec2-instance-connect (as AWS's HyperPod SSSD setup does,
# awsome-distributed-training LifecycleScripts/base-config/setup_sssd.py: "it overrides
# AuthorizedKeysCommand in sshd_config") and any drop-in that still overrides the command; true
# when sshd's unit changed (it must be restarted: a reload re-executes sshd with the same
# command line).
remove_ssh_key_overrides() {
  local changed=1 file
  if [[ -n "$(probe dpkg-query -W -f='${db:Status-Abbrev}\n' ec2-instance-connect 2>/dev/null | grep '^[hi]i' || true)" ]]; then
    run apt-get -y -o DPkg::Lock::Timeout=120 remove ec2-instance-connect
    changed=0
  fi
  while read -r file; do
    [[ -n "$file" ]] || continue
    rm -f "$file" || fail "cannot remove ${file#"$R"}"
    log "removed ${file#"$R"}: it put AuthorizedKeysCommand on sshd's command line"
    changed=0
  done < <(ssh_command_line_overrides)
  if ((changed == 0)); then
    run systemctl daemon-reload
  fi
  return "$changed"
}

# sshd asks SSSD for the users' public keys when the directory holds them; true when it changed.
directory_sshd() {
  local file="$R$DIRECTORY_SSHD" attribute
  attribute="$(setting node_setup.directory.ssh_public_key_attribute)"
  if [[ -z "$attribute" ]]; then
    [[ -e "$file" ]] || return 1
    rm -f "$file" || fail "cannot remove $DIRECTORY_SSHD"
    return 0
  fi
  write_file "$file" <<EOF
# Written by the HyperPod lifecycle scripts: directory users' SSH keys come from the directory
# (LDAP attribute $attribute, cluster.node_setup.directory.ssh_public_key_attribute).
AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys %u
AuthorizedKeysCommandUser nobody
EOF
}

step_directory() {
  local name="directory users" missing changed=0 schema groups conf
  current_step "$name"
  if ! has_directory; then
    skip "$name" "no directory (node_setup.directory)"
    return
  fi
  step "$name"
  missing="$(missing_packages "${SSSD_PACKAGES[@]}")"
  if [[ -n "$missing" ]]; then
    mapfile -t missing <<<"$missing"
    apt_install "${missing[@]}"
  fi

  read_secret "$(setting node_setup.directory.ca_certificate_secret_arn)" "CA certificate"
  [[ "$SECRET_VALUE" == *"-----BEGIN CERTIFICATE-----"* ]] \
    || fail "the CA certificate secret holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
  if write_file "$R$SSSD_CA" <<<"$SECRET_VALUE"; then
    changed=1
  fi
  chmod 0644 "$R$SSSD_CA"

  read_secret "$(setting node_setup.directory.bind_password_secret_arn)" "bind password"
  [[ "$SECRET_VALUE" != *$'\n'* ]] \
    || fail "the bind password secret holds more than one line; store the password alone"
  # sssd.conf trims a value: a password that begins or ends with a space cannot be written there
  [[ "$SECRET_VALUE" != [[:space:]]* && "$SECRET_VALUE" != *[[:space:]] ]] \
    || fail "the bind password begins or ends with a space, which sssd.conf cannot hold"
  schema="$(setting node_setup.directory.ldap_schema ad)"
  setting_list "node_setup.directory.allowed_groups.$NODE_ROLE"
  groups="$(IFS=,; printf '%s' "${LIST[*]}")"
  groups="${groups//,/, }"
  conf="$(render_sssd_conf "$schema" "$groups" "$SECRET_VALUE")"
  SECRET_VALUE=""
  # the file holds the password: it is 0600 before anything is written to it
  if [[ ! -e "$R$SSSD_CONF" ]] && ! { mkdir -p "$R/etc/sssd" && (umask 077 && : >"$R$SSSD_CONF"); }; then
    fail "cannot write $SSSD_CONF"
  fi
  chmod 0600 "$R$SSSD_CONF" || fail "cannot write $SSSD_CONF"
  if write_file "$R$SSSD_CONF" <<<"$conf"; then
    changed=1
    log "wrote $SSSD_CONF (${groups:-no group} may log in to this $NODE_ROLE node)"
  fi
  conf=""
  if ((changed)); then
    # sssctl comes with sssd-tools (installed above)
    try_run sssctl config-check || fail "sssctl config-check rejects $SSSD_CONF (its output is above)"
  fi

  nss_add_sss passwd || true
  nss_add_sss group || true
  # a user's first login makes the home (also on the shared file system: the login node's, as
  # a rule); optional: a race between two nodes never refuses a login
  if ! grep -qs pam_mkhomedir "$R/etc/pam.d/common-session"; then
    run pam-auth-update --enable mkhomedir
  fi
  if shared_homes; then
    mkdir -p "$R$(homes_dir)"
  fi

  directory_sudoers || true
  local unit_changed=1
  if [[ -n "$(setting node_setup.directory.ssh_public_key_attribute)" ]] && remove_ssh_key_overrides; then
    unit_changed=0
  fi
  if directory_sshd || ((unit_changed == 0)); then
    run sshd -t
    if ((unit_changed == 0)); then
      run systemctl restart ssh
    else
      run systemctl reload ssh
    fi
  fi

  if ! probe systemctl is-enabled --quiet sssd || ! service_active sssd; then
    run systemctl enable --now sssd
  elif ((changed)); then
    run systemctl restart sssd
  fi
  log "directory users from $(setting node_setup.directory.uri)"
}

# pam_slurm_adopt_module: the path of a pam_slurm_adopt.so on this node, or nothing. It must be
# built for the cluster's Slurm: beside Slurm on the image, else in PAM's directories (the
# multiarch one first: the one PAM searches on Ubuntu).
pam_slurm_adopt_module() {
  local dir
  for dir in "$R$SLURM_DIR/lib/security" "$R"/usr/lib/*-linux-gnu/security \
    "$R"/lib/*-linux-gnu/security "$R/lib/security" "$R/lib64/security"; do
    if [[ -f "$dir/pam_slurm_adopt.so" ]]; then
      printf '%s\n' "${dir#"$R"}/pam_slurm_adopt.so"
      return 0
    fi
  done
}

step_pam_slurm_adopt() {
  local name="pam_slurm_adopt" module line conf file="$R/etc/pam.d/sshd"
  current_step "$name"
  if ! is_on node_setup.pam_slurm_adopt; then
    skip "$name" "node_setup.pam_slurm_adopt is off"
    return
  fi
  if [[ "$NODE_ROLE" != "compute" ]]; then
    skip "$name" "compute nodes only: on a $NODE_ROLE node it locks users out, awsome-distributed-ai issue 777"
    return
  fi
  step "$name"
  module="$(pam_slurm_adopt_module)"
  [[ -n "$module" ]] || fail "pam_slurm_adopt.so is not on this node (looked in $SLURM_DIR/lib/security and PAM's directories); it must be built for the cluster's Slurm version: put it in the image (cluster.instance_groups[].image_id), or set cluster.node_setup.pam_slurm_adopt: false"
  # PAM finds a bare module name in its own directory only
  line="account required $module"
  if [[ "$module" == /usr/lib/*-linux-gnu/security/* || "$module" == /lib/*-linux-gnu/security/* ]]; then
    line="account required pam_slurm_adopt.so"
  fi
  [[ -f "$file" ]] || fail "/etc/pam.d/sshd does not exist"
  if place_adopt_rule "$file" "$line"; then
    log "put '$(grep -E "$ADOPT_RULE" "$file" | head -n 1)' before common-account in /etc/pam.d/sshd"
  else
    log "/etc/pam.d/sshd has pam_slurm_adopt already"
  fi
  pam_systemd_off
  # Slurm's pam_slurm_adopt docs: the job's extern step (PrologFlags=Contain) is what SSH
  # sessions are adopted into; without it they are let in but not contained. slurm.conf takes
  # spaces around '=' (`PrologFlags = Contain`, as slurmctld's own parser reads it).
  conf="$R/var/spool/slurmd/conf-cache/slurm.conf"
  [[ -f "$conf" ]] || conf="$R$SLURM_DIR/etc/slurm.conf"
  if [[ -f "$conf" ]] && ! grep -qiE '^[[:space:]]*PrologFlags[[:space:]]*=.*contain' "$conf"; then
    warn "slurm.conf has no PrologFlags=Contain: pam_slurm_adopt cannot put SSH sessions into the users' jobs"
  fi
}

ADOPT_RULE='^[[:space:]]*-?account[[:space:]].*pam_slurm_adopt\.so'

# place_adopt_rule FILE LINE: the pam_slurm_adopt rule (the one FILE has, else LINE) right before
# `@include common-account`, once; true when FILE changed. Not after it: libpam-sss's
# pam-auth-update profile puts `account sufficient pam_localuser.so` into common-account, which
# ends the account stack for every local user before a later rule runs (measured with the real
# module and pamtester: a local user without a job got in). A `required` rule before it still
# denies, and the system's account checks still run after it.
place_adopt_rule() {
  local file="$1" line="$2" rule content
  rule="$(grep -E "$ADOPT_RULE" "$file" | head -n 1 || true)"
  [[ -n "$rule" ]] || rule="$line"
  content="$(awk -v rule="$rule" -v pattern="$ADOPT_RULE" '
    $0 ~ pattern {next}
    !placed && $1 == "@include" && $2 == "common-account" {print rule; placed=1}
    {print}
    END {if (!placed) print rule}' "$file")" || fail "cannot read /etc/pam.d/sshd"
  write_file "$file" <<<"$content"
}

# pam_systemd_off: Slurm's pam_slurm_adopt page: "The pam_systemd module will conflict with
# pam_slurm_adopt, so you need to disable it in all files that are included in sshd [...]. You
# should also stop and mask systemd-logind." (logind would move the adopted SSH session out of
# the job's cgroup, so it is neither limited nor ended with the job.)
# https://slurm.schedmd.com/pam_slurm_adopt.html
pam_systemd_off() {
  local file files=()
  mapfile -t files < <(sshd_pam_systemd_files)
  if ((${#files[@]} > 0)) && [[ -f "$R/usr/share/pam-configs/systemd" ]]; then
    # the profile off for good: a later pam-auth-update (a package, mkhomedir) does not bring it back
    run pam-auth-update --disable systemd
    mapfile -t files < <(sshd_pam_systemd_files)
  fi
  for file in "${files[@]}"; do
    [[ -n "$file" ]] || continue
    sed -i -E 's/^([[:space:]]*-?session[[:space:]].*pam_systemd\.so.*)$/# off for pam_slurm_adopt: \1/' \
      "$R/etc/pam.d/$file" || fail "cannot write /etc/pam.d/$file"
    log "turned pam_systemd off in /etc/pam.d/$file (pam_slurm_adopt)"
  done
  if [[ "$(probe systemctl is-enabled systemd-logind 2>/dev/null || true)" != masked ]]; then
    run systemctl stop systemd-logind
    run systemctl mask systemd-logind
  fi
}

# sshd_pam_systemd_files: /etc/pam.d/sshd and the files it includes that call pam_systemd.
sshd_pam_systemd_files() {
  local name
  { echo sshd; awk '$1 == "@include" {print $2}' "$R/etc/pam.d/sshd"; } | while read -r name; do
    if grep -qsE '^[[:space:]]*-?session[[:space:]].*pam_systemd\.so' "$R/etc/pam.d/$name"; then
      printf '%s\n' "$name"
    fi
  done
}
