# shellcheck shell=bash
# accounting check, on the controller: slurmdbd answers, the accounting settings slurmctld uses,
# and the StorageHost of slurmdbd.conf (next to slurm.conf) when this node has it.
hpv_section cluster sacctmgr -n show cluster
hpv_section config scontrol show config
conf="$(scontrol show config 2>/dev/null | awk -F' = ' '$1 ~ /^SLURM_CONF/ {print $2}')"
dbd="${conf%/*}/slurmdbd.conf"
if [[ -n "$conf" && -r "$dbd" ]]; then
  # shellcheck disable=SC2016 # an awk program
  hpv_section dbd awk -F= '$1 ~ /^[[:space:]]*Storage(Host|Port|Type)[[:space:]]*$/ {gsub(/[[:space:]]/, ""); print}' "$dbd"
fi
hpv_done
