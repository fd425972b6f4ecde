# shellcheck shell=bash
# Leftovers, on the controller: every job still queued or running (slurm.py keeps those whose
# name starts with the run id), and whether the run's scratch folder (HPV_SCRATCH, may be empty)
# exists.
hpv_section squeue squeue -h -o '%i|%j|%T'
if [[ -n "${HPV_SCRATCH:-}" && -e "$HPV_SCRATCH" ]]; then echo "HPV-SCRATCH yes"; fi
hpv_done
