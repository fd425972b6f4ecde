# shellcheck shell=bash
# The helpers every verify script starts with (slurm.py puts this file, then the script's
# HPV_* settings, then the script itself into one bash script run as root over SSM).
# The session's exit status is all SSM gives back, so each script prints its own envelope:
#   HPV-BEGIN <name> ... HPV-END <name> <exit code>   the output of one command, verbatim
#   HPV-NODE <host> key=value ...                      one line per node a job ran on
#   HPV-DONE                                           the last line: the script ran to its end
# A script whose output lacks HPV-DONE did not finish (slurm.py fails the check with its tail).

# hpv_section NAME COMMAND...: COMMAND's stdout and stderr between the section markers.
hpv_section() {
  local name="$1" rc
  shift
  echo "HPV-BEGIN $name"
  "$@" 2>&1
  rc=$?
  echo
  echo "HPV-END $name $rc"
  return 0
}

# hpv_done: the envelope's last line.
hpv_done() {
  echo "HPV-DONE"
}
