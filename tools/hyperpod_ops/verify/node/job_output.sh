# shellcheck shell=bash
# nccl check, on the controller: the job's output file (HPV_OUTPUT) from its batch host
# (HPV_HOST), read and removed by a one-node job there.
# (srun: no --no-requeue, an sbatch-only option; see job.sh)
# shellcheck disable=SC2016 # expanded by the node's bash
hpv_section output srun --job-name="$HPV_JOB_NAME" --partition="$HPV_PARTITION" \
  --nodelist="$HPV_HOST" --nodes=1 --ntasks=1 --time=2 --nice=10000 \
  --immediate=60 bash -c 'cat -- "$1"; rm -f -- "$1"' hpv-output "$HPV_OUTPUT"
hpv_done
