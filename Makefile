# HyperPod environment as code. `make help` lists the targets.
# Every target that needs tools bootstraps them first (scripts/bootstrap.sh: fast when done).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

CONFIG ?= config/default.yaml
# `make synth QUIET=` prints the templates too
QUIET ?= 1
# the AWS profile of every target that reaches AWS (deploy, diff, destroy, preflight, status,
# verify, sync-users, migrate-eks-dependencies): `make deploy PROFILE=prod`, exported as AWS_PROFILE
PROFILE ?=
ifneq ($(PROFILE),)
export AWS_PROFILE := $(PROFILE)
endif
# extra arguments for cdk (e.g. CDK_ARGS='--require-approval never')
CDK_ARGS ?=
PYTEST_ARGS ?=
# extra arguments for preflight/status/verify/sync-users (e.g. OPS_ARGS='--json')
OPS_ARGS ?=
# make deploy: the replacements and deletions of data or a cluster to let through (stack/LogicalId,...)
ALLOW_REPLACE ?=
# make update-notes: the earlier config, a file or git:REV (the same path at a git revision)
BASE ?= git:HEAD
# make verify: a comma list of checks (empty: all)
CHECKS ?=
# extra arguments for bench (e.g. BENCH_ARGS='--skip-tests --runs 5')
BENCH_ARGS ?=

VENV_PY := .venv/bin/python
# PATH: node_modules/.bin (pinned cdk CLI + pinned Node LTS), then .venv/bin
WITH_ENV := source scripts/env.sh &&
CDK := $(WITH_ENV) cdk
# before a cdk command that needs AWS: one clear line (and exit 2) when the credentials cannot be used
CREDENTIALS := $(WITH_ENV) $(VENV_PY) -m hyperpod_ops.credentials

.PHONY: help bootstrap bootstrap-python bootstrap-node bootstrap-checkov synth test test-real validate deploy \
        diff destroy update-snapshots lint format checkov constraints constraints-checkov clean \
        distclean lifecycle-dry-run preflight status sync-users verify bench migrate-eks-dependencies init \
        update-notes

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

bootstrap: ## create .venv and node_modules from the pinned deps (idempotent)
	@scripts/bootstrap.sh all

bootstrap-python:
	@scripts/bootstrap.sh python

bootstrap-node:
	@scripts/bootstrap.sh node

bootstrap-checkov: ## create .venv-checkov (the pinned checkov, apart from .venv)
	@scripts/bootstrap.sh checkov

synth: bootstrap ## cdk synth of CONFIG (default config/default.yaml) into cdk.out/
	@$(CDK) synth -c config="$(CONFIG)" $(if $(QUIET),--quiet) $(CDK_ARGS)

test: bootstrap bootstrap-checkov lint ## lint, then the whole test suite but the Slurm cluster tier (what .ci/run runs first)
	@$(WITH_ENV) $(VENV_PY) -m pytest -n auto --dist loadgroup -q -rs -m "not real_slurm" $(PYTEST_ARGS) tests

test-real: bootstrap-python ## the real Slurm tier: a one-node cluster from Debian's packages, verify/accounting/PAM against it (docs/testing.md)
	@$(WITH_ENV) $(VENV_PY) -m pytest -n 0 -q -rs -m real_slurm $(PYTEST_ARGS) tests/real

# make init NAME=acme REGION=us-east-1 [ORCHESTRATOR=slurm|eks] [OUT=envs/acme.yaml]
init: bootstrap-python ## write a commented starting config (never overwrites; offline)
	@$(WITH_ENV) $(VENV_PY) scripts/init_config.py $(if $(NAME),"NAME=$(NAME)") $(if $(REGION),"REGION=$(REGION)") \
		$(if $(ORCHESTRATOR),"ORCHESTRATOR=$(ORCHESTRATOR)") $(if $(OUT),"OUT=$(OUT)")

validate: bootstrap-python ## validate CONFIG only (no synth, no AWS)
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_cdk.config "$(CONFIG)"

# make deploy: stop (exit 3) before replacing or deleting what holds data or a cluster, unless allowed
deploy: bootstrap ## deploy every stack of CONFIG after the data-loss gate (needs AWS credentials; ALLOW_REPLACE=<stack>/<id>,...)
	@$(CREDENTIALS) deploy "$(CONFIG)" $(CDK_ARGS)
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.deploy_gate "$(CONFIG)" --allow-replace "$(ALLOW_REPLACE)" -- $(CDK_ARGS)

diff: bootstrap ## diff every stack of CONFIG against the deployed ones (needs AWS credentials)
	@$(CREDENTIALS) diff "$(CONFIG)" $(CDK_ARGS)
	@$(CDK) diff -c config="$(CONFIG)" $(CDK_ARGS)

update-notes: bootstrap ## offline: what deploying CONFIG over BASE (a file or git:REV, default git:HEAD) adds, updates, replaces, deletes per stack
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.update_notes "$(CONFIG)" --base "$(BASE)" $(OPS_ARGS)

destroy: bootstrap ## destroy every stack of CONFIG (stateful resources are retained)
	@$(CREDENTIALS) destroy "$(CONFIG)" $(CDK_ARGS)
	@$(CDK) destroy --all -c config="$(CONFIG)" $(CDK_ARGS)

preflight: bootstrap-python ## read-only checks of the target account for CONFIG (needs AWS credentials)
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.preflight "$(CONFIG)" $(OPS_ARGS)

migrate-eks-dependencies: bootstrap-python ## before the first deploy of an EKS environment whose dependencies were raw manifests
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.migrate "$(CONFIG)" $(OPS_ARGS)

status: bootstrap-python ## the deployed cluster of CONFIG: state, groups, failed nodes, logs, how to reach it
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.status "$(CONFIG)" $(OPS_ARGS)

sync-users: bootstrap-python ## apply CONFIG's users file to every running node of the deployed Slurm cluster (SSM; OPS_ARGS='--dry-run')
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.sync_users "$(CONFIG)" $(OPS_ARGS)

verify: bootstrap-python ## prove the deployed environment of CONFIG works: nodes, EFA, NCCL, FSx, S3 links, accounting (CHECKS=a,b; OPS_ARGS='--json')
	@$(WITH_ENV) $(VENV_PY) -m hyperpod_ops.verify "$(CONFIG)" $(if $(CHECKS),--checks "$(CHECKS)") $(OPS_ARGS)

bench: bootstrap ## synth, test-suite and first-deploy critical-path figures (BENCH_ARGS='--skip-tests')
	@$(WITH_ENV) $(VENV_PY) scripts/bench.py $(BENCH_ARGS)

lifecycle-dry-run: NODE ?= compute
lifecycle-dry-run: bootstrap-python ## the lifecycle scripts of CONFIG on a fake node: NODE=controller|login|compute|eks [GROUP=name]
	@$(VENV_PY) scripts/lifecycle_dry_run.py "$(NODE)" --config "$(CONFIG)" $(if $(GROUP),--group "$(GROUP)")

checkov: bootstrap bootstrap-checkov ## checkov on a fresh synth of CONFIG (what the checkov test runs)
	@out="$$(mktemp -d)"; trap 'rm -rf "$$out"' EXIT; \
	  $(CDK) synth -c config="$(CONFIG)" -o "$$out" --quiet $(CDK_ARGS) && \
	  $(VENV_PY) scripts/run_checkov.py "$$out"

update-snapshots: bootstrap ## regenerate the syrupy snapshots
	@$(WITH_ENV) $(VENV_PY) -m pytest -q --snapshot-update $(PYTEST_ARGS) tests

lint: bootstrap-python ## ruff check, ruff format --check, mypy
	@$(VENV_PY) -m ruff check .
	@$(VENV_PY) -m ruff format --check .
	@$(VENV_PY) -m mypy constructs/hyperpod_cdk tools/hyperpod_ops

format: bootstrap-python ## ruff format + ruff check --fix
	@$(VENV_PY) -m ruff format .
	@$(VENV_PY) -m ruff check --fix .

constraints: ## re-resolve requirements*.txt from scratch and rewrite constraints.txt
	@rm -rf .constraints-venv
	@python3 -m venv .constraints-venv
	@.constraints-venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	@{ echo "# Generated by 'make constraints': pip freeze --exclude-editable of a venv with requirements-dev.txt."; \
	   echo "# Pins every transitive dependency; bootstrap installs with -c constraints.txt."; \
	   .constraints-venv/bin/python -m pip freeze --exclude-editable; } > constraints.txt
	@rm -rf .constraints-venv
	@echo "constraints.txt rewritten"

constraints-checkov: ## re-resolve requirements-checkov.txt from scratch and rewrite constraints-checkov.txt
	@rm -rf .constraints-venv
	@python3 -m venv .constraints-venv
	@.constraints-venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-checkov.txt 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	@{ echo "# Generated by 'make constraints-checkov': pip freeze of a venv with requirements-checkov.txt."; \
	   echo "# Pins every transitive dependency; bootstrap installs .venv-checkov with -c constraints-checkov.txt."; \
	   .constraints-venv/bin/python -m pip freeze; } > constraints-checkov.txt
	@rm -rf .constraints-venv
	@echo "constraints-checkov.txt rewritten"

clean: ## remove build outputs and caches (keeps .venv, .venv-checkov and node_modules)
	rm -rf cdk.out build dist .pytest_cache .mypy_cache .ruff_cache
	find . -path ./.venv -prune -o -path ./.venv-checkov -prune -o -path ./node_modules -prune -o \
	  \( -name __pycache__ -o -name '*.egg-info' \) -type d -print0 | xargs -0 rm -rf

distclean: clean ## also remove .venv, .venv-checkov and node_modules
	rm -rf .venv .venv-checkov node_modules
