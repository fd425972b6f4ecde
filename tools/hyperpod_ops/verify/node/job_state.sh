# shellcheck shell=bash
# nccl and accounting checks, on the controller: the state of job HPV_JOB_ID. squeue while
# slurmctld holds it (and its batch host), then sacct's record.
hpv_section squeue squeue -h -j "$HPV_JOB_ID" -o '%T|%B'
hpv_section sacct sacct -j "$HPV_JOB_ID" -n -P -o JobID,State,ExitCode
hpv_done
