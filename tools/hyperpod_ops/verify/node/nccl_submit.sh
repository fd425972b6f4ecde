# shellcheck shell=bash
# nccl check, on the controller: submit all_reduce_perf on HPV_NODES idle nodes as a batch job.
# Settings: HPV_JOB_NAME, HPV_PARTITION, HPV_NODELIST, HPV_NODES, HPV_GPUS (tasks per node),
# HPV_GRES_GPUS (1: also --gpus-per-node), HPV_TIME_MIN, HPV_IMAGE (enroot form), HPV_RDMA (1:
# FI_EFA_USE_DEVICE_RDMA=1), HPV_NCCL_BIN, HPV_OUTPUT (the output file on the batch host).
# Prints HPV-JOB <id> on success.
batch="$(mktemp)"
trap 'rm -f "$batch"' EXIT
{
  echo '#!/bin/bash'
  echo 'export NCCL_DEBUG=INFO FI_PROVIDER=efa'
  [[ "${HPV_RDMA:-0}" == 1 ]] && echo 'export FI_EFA_USE_DEVICE_RDMA=1'
  printf 'srun --mpi=pmix --container-image=%q %q -b 8 -e 16G -f 2 -g 1\n' "$HPV_IMAGE" "$HPV_NCCL_BIN"
} >"$batch"
gpus=()
[[ "${HPV_GRES_GPUS:-0}" == 1 ]] && gpus=(--gpus-per-node="$HPV_GPUS")
hpv_section submit sbatch --parsable --job-name="$HPV_JOB_NAME" --partition="$HPV_PARTITION" \
  --nodelist="$HPV_NODELIST" --nodes="$HPV_NODES" --ntasks-per-node="$HPV_GPUS" "${gpus[@]}" \
  --exclusive --time="$HPV_TIME_MIN" --nice=10000 --no-requeue --output="$HPV_OUTPUT" "$batch"
hpv_done
