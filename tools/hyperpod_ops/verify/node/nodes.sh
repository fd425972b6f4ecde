# shellcheck shell=bash
# nodes check, on the controller: does slurmctld answer, and every node's partition, state and
# GPUs (one `name|partition|state|gres|reason` line per node and partition; slurm.py parses it).
hpv_section ping scontrol ping
hpv_section sinfo sinfo -N -h -o '%N|%P|%T|%G|%E'
hpv_done
