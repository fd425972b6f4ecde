# shellcheck shell=bash
# nodes check, on a login node: it answers, and says which host it is.
echo "HPV-NODE $(hostname) answered=yes"
hpv_done
