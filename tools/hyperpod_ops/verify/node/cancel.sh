# shellcheck shell=bash
# Removing a run's jobs, on the controller: scancel every job named HPV_JOB_NAME (done or gone
# already is fine: scancel of no job is no error).
hpv_section scancel scancel --name="$HPV_JOB_NAME"
hpv_done
