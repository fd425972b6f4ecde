# shellcheck shell=bash
# The node side of job.sh: run by srun on each compute node as `bash -c <this> hpv-task TASK`.
# Each task prints one line: HPV-NODE <host> key=value ... (values base64 where they hold spaces).
host="${SLURMD_NODENAME:-$(hostname)}"
# the mount table (HPV_PROC_MOUNTS: another file, for the tests' fake node only)
mounts_file="${HPV_PROC_MOUNTS:-/proc/mounts}"

# efa: EFA devices (distinct fi_info domains of the efa provider), the provider, memlock limit.
task_efa() {
  local info devices provider
  info="$(fi_info -p efa -t FI_EP_RDM 2>&1)"
  devices="$(awk '$1 == "domain:" {print $2}' <<<"$info" | sort -u | grep -c .)"
  provider="$(awk '$1 == "provider:" {print $2; exit}' <<<"$info")"
  echo "HPV-NODE $host job=${SLURM_JOB_ID:-none} efa=$devices provider=${provider:-none} memlock=$(ulimit -l)"
}

# mounts: the node's mount table.
task_mounts() {
  echo "HPV-NODE $host job=${SLURM_JOB_ID:-none} mounts=$(base64 -w0 "$mounts_file")"
}

# containers (inside the container pyxis started): GPUs seen, and the FSx mount (HPV_MOUNT).
task_containers() {
  local gpus fsx="none"
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
  if [[ -n "${HPV_MOUNT:-}" ]]; then
    if awk -v m="$HPV_MOUNT" '$2 == m {found=1} END {exit !found}' "$mounts_file"; then
      fsx="yes"
    else
      fsx="no"
    fi
  fi
  echo "HPV-NODE $host job=${SLURM_JOB_ID:-none} gpus=$gpus fsx=$fsx"
}

# fsxio: write then read HPV_SIZE_MB MiB under HPV_SCRATCH/<host> with direct I/O, sequential
# 1 MiB blocks: fio (JSON) when the node has it, else dd (its summary line).
task_fsxio() {
  local dir="$HPV_SCRATCH/$host" write read
  mkdir -p "$dir" || { echo "HPV-NODE $host error=mkdir"; return; }
  if command -v fio >/dev/null 2>&1; then
    write="$(fio --name=hpv-write --filename="$dir/data" --rw=write --bs=1M --direct=1 \
      --size="${HPV_SIZE_MB}M" --ioengine=psync --output-format=json 2>&1 | base64 -w0)"
    read="$(fio --name=hpv-read --filename="$dir/data" --rw=read --bs=1M --direct=1 \
      --size="${HPV_SIZE_MB}M" --ioengine=psync --output-format=json 2>&1 | base64 -w0)"
    echo "HPV-NODE $host tool=fio write=$write read=$read"
  else
    write="$(dd if=/dev/zero of="$dir/data" bs=1M count="$HPV_SIZE_MB" oflag=direct 2>&1 | base64 -w0)"
    read="$(dd if="$dir/data" of=/dev/null bs=1M iflag=direct 2>&1 | base64 -w0)"
    echo "HPV-NODE $host tool=dd write=$write read=$read"
  fi
  rm -f "$dir/data"
}

# hello: the run's small accounting job when no other test job ran.
task_hello() {
  echo "HPV-NODE $host job=${SLURM_JOB_ID:-none}"
}

case "${1:-}" in
  hello) task_hello ;;
  efa) task_efa ;;
  mounts) task_mounts ;;
  containers) task_containers ;;
  fsxio) task_fsxio ;;
  *) echo "HPV-NODE $host error=unknown-task-${1:-none}" ;;
esac
