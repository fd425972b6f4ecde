# shellcheck shell=bash
# Shared by the fake Slurm node's tools. State lives in $FAKE_SLURM (a copy per test):
#   nodes                  what `sinfo -N -h -o '%N|%P|%T|%G|%E'` prints
#   jobs/<id>              one job: name|state|exit code|node list (comma)
#   next_job               the next job id
#   node/<name>/...        per node: gpus, efa (device counts), mounts (its /proc/mounts)
#   config                 what `scontrol show config` prints
#   nccl_output            what all_reduce_perf prints
#   ping_down, slurmdbd_down, never_finish, sbatch_fail: make that part fail as Slurm does
#   pending                a batch job stays PENDING
#   completing             N: the next N sinfo reads show the idle nodes `completing`
#   sacct_state            the state sacct reports for every job (a job that did not complete)
#   fio_mbps, dd_mbps      MB/s each client measures (default 200)
#   log                    one line per call: the tool and its arguments
S="${FAKE_SLURM:?FAKE_SLURM is not set}"
mkdir -p "$S/jobs"
printf '%s %s\n' "${0##*/}" "$*" | head -c 2000 >>"$S/log"
echo >>"$S/log"

# new_job NAME STATE NODES: a new job id, recorded.
new_job() {
  local id
  id="$(cat "$S/next_job" 2>/dev/null || echo 100)"
  echo $((id + 1)) >"$S/next_job"
  echo "$1|$2|0:0|$3" >"$S/jobs/$id"
  echo "$id"
}

# job_field ID N: field N (1 name, 2 state, 3 exit code, 4 nodes) of job ID.
job_field() {
  cut -d'|' -f"$2" "$S/jobs/$1"
}

# set_job ID STATE EXIT
set_job() {
  local name nodes
  name="$(job_field "$1" 1)"
  nodes="$(job_field "$1" 4)"
  echo "$name|$2|$3|$nodes" >"$S/jobs/$1"
}

node_file() {
  echo "$S/node/$1/$2"
}
