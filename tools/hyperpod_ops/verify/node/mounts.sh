# shellcheck shell=bash
# fsx check, on the controller or a login node: this node's mount table (base64, one line), and
# the addresses the file system's DNS name (HPV_DNS) resolves to here: /proc/mounts names a
# Lustre server by the NID it resolved at mount time, an IP address.
echo "HPV-NODE $(hostname) mounts=$(base64 -w0 "${HPV_PROC_MOUNTS:-/proc/mounts}")"
if [[ -n "${HPV_DNS:-}" ]]; then
  echo "HPV-RESOLVED $(getent ahostsv4 "$HPV_DNS" | awk '{print $1}' | sort -u | tr '\n' ' ')"
fi
hpv_done
