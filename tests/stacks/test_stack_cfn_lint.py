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

from support.cfn_lint_schemas import lint_errors, write_override_schemas


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
def test_template_has_no_cfn_lint_error(path: Path, kind: str, synthesized) -> None:
    synth = synthesized(path)
    assert lint_errors(synth.template(kind), synth.config.region) == []


# -- the shared linter (tests/support/cfn_lint_schemas.py) -------------------------------------

BROKEN = {
    "Resources": {
        "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketNam": "b"}},
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": ["not", "a string"]}},
        # the type of the registry-schema overrides
        "Cluster": {"Type": "AWS::SageMaker::Cluster", "Properties": {"NodeRecovery": "Often"}},
    }
}
CLEAN = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": "t"}}}}


@pytest.mark.parametrize("region", ["us-west-2", "us-east-1"])
def test_the_shared_linter_finds_what_cfn_lint_finds(region: str, override_schemas) -> None:
    """One cfn-lint Runner per region and process finds, template after template, exactly what
    ``cfnlint.api.lint`` (a new Runner per call) finds, errors and a clean template alike."""
    config = ManualArgs(regions=[region], registry_schemas=[override_schemas(region)])
    for template in (BROKEN, CLEAN, BROKEN):
        expected = [
            str(m) for m in lint(json.dumps(template), config=config) if m.rule.id.startswith("E")
        ]
        assert lint_errors(template, region) == expected
    assert len(lint_errors(BROKEN, region)) >= 3  # the name, the type, the enum
    assert lint_errors(CLEAN, region) == []
