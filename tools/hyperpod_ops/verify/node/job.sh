# shellcheck shell=bash
# efa, containers, fsx checks, on the controller: one short exclusive job on idle compute nodes,
# each node running one task of tasks.sh (HPV_TASK) and printing its HPV-NODE line.
# Settings: HPV_JOB_NAME, HPV_PARTITION, HPV_NODELIST (comma list), HPV_NODES, HPV_TIME_MIN,
# HPV_IMMEDIATE (seconds to wait for the nodes), HPV_TASK, HPV_TASK_SCRIPT (tasks.sh's text),
# HPV_SRUN_EXTRA (more srun options, space separated, none holding a space).
# No --no-requeue: it is an sbatch option, srun exits 255 on it (Slurm 22.05 measured; 24.11
# src/common/slurm_opt.c: slurm_opt_no_requeue has a set_func_sbatch only).
read -r -a extra <<<"${HPV_SRUN_EXTRA:-}"
hpv_section job srun --job-name="$HPV_JOB_NAME" --partition="$HPV_PARTITION" \
  --nodelist="$HPV_NODELIST" --nodes="$HPV_NODES" --ntasks-per-node=1 --exclusive \
  --time="$HPV_TIME_MIN" --nice=10000 --immediate="$HPV_IMMEDIATE" \
  "${extra[@]}" bash -c "$HPV_TASK_SCRIPT" hpv-task "$HPV_TASK"
hpv_done
