"""cfn-lint (SPEC section 6): no error on any synthesized template of any shipped config.

Warnings are not failures. The registry-schema override of tests/support keeps cfn-lint's
lagging regional data for AWS::SageMaker::Cluster from hiding (or inventing) findings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint
from stack_testkit import PROJECT_ROOT, stack_params

if str(PROJECT_ROOT / "tests") not in sys.path:  # tests/support has no __init__.py
    sys.path.insert(0, str(PROJECT_ROOT / "tests"))

from support.cfn_lint_schemas import write_override_schemas


@pytest.fixture(scope="session")
def override_schemas(tmp_path_factory: pytest.TempPathFactory):
    """``override_schemas(region)``: the directory of registry-schema overrides for that region."""
    made: dict[str, str] = {}

    def get(region: str) -> str:
        if region not in made:
            made[region] = str(
                write_override_schemas(tmp_path_factory.mktemp(f"cfn-lint-{region}"), region)
            )
        return made[region]

    return get


@pytest.mark.parametrize(("path", "kind"), stack_params())
def test_template_has_no_cfn_lint_error(
    path: Path, kind: str, synthesized, override_schemas
) -> None:
    synth = synthesized(path)
    region = synth.config.region
    config = ManualArgs(regions=[region], registry_schemas=[override_schemas(region)])
    found = lint(json.dumps(synth.template(kind)), config=config)
    assert [str(m) for m in found if m.rule.id.startswith("E")] == []
