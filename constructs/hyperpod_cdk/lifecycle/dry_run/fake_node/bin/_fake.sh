# shellcheck shell=bash
# Shared by the simulators of the fake node: the dry run runs them instead of the real commands,
# and they act out the command's effect inside the temporary root ($HYPERPOD_ROOT).
set -euo pipefail
# shellcheck disable=SC2034 # R is used by the simulators that source this file
R="${HYPERPOD_ROOT:?the simulators run only inside the dry run}"
me="${0##*/}"
# HYPERPOD_FAKE_FAIL=name[,name...]: these simulators fail, to test the failure report.
if [[ ",${HYPERPOD_FAKE_FAIL:-}," == *",$me,"* ]]; then
  echo "$me: simulated failure" >&2
  exit 1
fi
