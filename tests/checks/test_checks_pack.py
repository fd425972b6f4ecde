"""The HyperPod pack as a whole: always registered by the app, run on every Stage, acknowledged
like cdk-nag's packs, and engaged (not merely silent) on every shipped config."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import aws_cdk as cdk
import pytest
from checks_testkit import COMPLIANT, check, new_app, report_findings, resource, retain, stack

from hyperpod_cdk.compliance import PACK_NAME, RULES, AppModel, HyperPodChecks
from hyperpod_cdk.compliance.rules import (
    DATA_RETAINED,
    DRA_NO_OVERLAP,
    EFA_SELF_RULES,
    EKS_API_AUTH,
    EKS_LOGGING,
    EKS_PRIVATE_ENDPOINT,
    FSX_CLUSTER_AZ,
    LIFECYCLE_READABLE,
)
from hyperpod_cdk.config import load_environment

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = PROJECT_ROOT / "constructs" / "hyperpod_cdk" / "compliance" / "rules"


# -- wiring ----------------------------------------------------------------------------------


def test_the_app_of_a_shipped_config_runs_the_pack_once(tmp_path: Path) -> None:
    # build_app registers the packs; a bucket the app would never make must fail the synth
    from stacks.app_builder import build_app
    from stacks.app_builder import new_app as new_project_app

    config = load_environment(PROJECT_ROOT / "config" / "examples" / "minimal.yaml", PROJECT_ROOT)
    app, stacks = build_app(
        config, app=new_project_app(outdir=str(tmp_path)), project_root=PROJECT_ROOT
    )
    assert "HyperPod" not in config.compliance_packs  # on whatever the config lists
    stray = resource(stacks.storage, "StrayBucket", "AWS::S3::Bucket")
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    plugins = [r["pluginName"] for r in report["pluginReports"]]
    assert plugins.count(PACK_NAME) == 1, plugins  # registered once, on the App
    assert report_findings(tmp_path) == {DATA_RETAINED.id: {stray.node.path}}


def test_a_finding_inside_a_stage_is_reported() -> None:
    # registered once on the App, the pack also checks the stacks of pipeline Stages
    app = new_app()
    bucket = resource(stack(cdk.Stage(app, "Dev"), "storage"), "Data", "AWS::S3::Bucket")
    checked = check(app)
    assert checked.findings == {DATA_RETAINED.id: {bucket.node.path}}
    assert bucket.node.path == "Dev/storage/Data"


def test_an_acknowledgment_names_the_rule_id_and_covers_the_constructs_below() -> None:
    from hyperpod_cdk.compliance.nag import acknowledge

    app = new_app()
    storage = stack(app, "storage")
    kept = cdk.Resource(storage, "Kept")
    acknowledged = cdk.CfnResource(kept, "Bucket", type="AWS::S3::Bucket")
    other = resource(storage, "Other", "AWS::S3::Bucket")
    acknowledge(kept, DATA_RETAINED.id, "This bucket only holds test data that the test recreates.")
    checked = check(app)
    assert checked.findings == {DATA_RETAINED.id: {other.node.path}}
    assert not checked.found(DATA_RETAINED, acknowledged)


def test_validate_scope_synthesizes_an_app_that_was_not_synthesized() -> None:
    app = new_app()
    bucket = resource(stack(app, "storage"), "Data", "AWS::S3::Bucket")
    pack = HyperPodChecks()
    for _ in range(2):  # the second time, the App's assembly is reused
        report = pack.validate_scope(app)
        assert not report.success
        assert [
            (v.rule_name, [r.construct_path for r in v.violating_resources])
            for v in report.violations
        ] == [(DATA_RETAINED.id, [bucket.node.path])]


def test_a_compliant_app_passes() -> None:
    app = new_app()
    bucket = resource(stack(app, "storage"), "Data", "AWS::S3::Bucket")
    retain(bucket)
    checked = check(app)
    assert not checked.failed
    assert checked.findings == {}


# -- the rules as a set ----------------------------------------------------------------------


def test_rule_ids_are_unique_and_in_cdk_nag_form() -> None:
    ids = [rule.id for rule in RULES]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"HyperPod-[A-Z][A-Za-z]+", i) for i in ids), ids
    assert HyperPodChecks().rule_ids == ids


RULE_MODULES = sorted(p.stem for p in RULES_DIR.glob("[a-z]*.py"))


def test_the_rule_modules_are_found() -> None:
    """The parametrization below reads the folder: a moved folder must fail, not skip."""
    assert len(RULE_MODULES) == len(RULES), (RULES_DIR, RULE_MODULES)


@pytest.mark.parametrize("module", RULE_MODULES)
def test_each_rule_has_its_own_module_docstring_and_tests(module: str) -> None:
    source = (RULES_DIR / f"{module}.py").read_text()
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree) or ""
    rule = next(r for r in RULES if r.check.__module__.endswith(f".{module}"))
    assert docstring.startswith(f"{rule.id}: "), docstring[:80]
    tests = (Path(__file__).parent / f"test_checks_{module}.py").read_text()
    # a failing and a passing case, each asserted through the rule's verdict
    assert re.search(r"\bNON_COMPLIANT\b", tests) and re.search(r"(?<![A-Z_])COMPLIANT\b", tests)
    assert "checked.found(" in tests  # and the finding in the validation report


# -- the shipped configs ---------------------------------------------------------------------


def test_the_rules_engage_on_the_shipped_configs(shipped) -> None:
    # the report being empty proves nothing if the rules could not follow the app's references:
    # each rule must find the resources it is about and call them compliant
    model = AppModel.from_template_paths(shipped.outdir.glob("*.template.json"))
    verdicts: dict[str, set[str]] = {rule.id: set() for rule in RULES}
    for assembly in model.assemblies.values():
        for found in assembly.resources():
            for rule in RULES:
                if found.type in rule.resource_types:
                    verdicts[rule.id].add(rule(found).value)
    config = shipped.config
    fsx = config.storage.fsx
    creates_eks = not config.is_slurm and config.eks_settings.cluster_arn is None
    expected = {
        EFA_SELF_RULES.id: True,
        LIFECYCLE_READABLE.id: True,
        DATA_RETAINED.id: True,
        FSX_CLUSTER_AZ.id: fsx.enabled and fsx.file_system_id is None,
        DRA_NO_OVERLAP.id: fsx.enabled and bool(fsx.data_repository_associations),
        EKS_API_AUTH.id: creates_eks,
        EKS_PRIVATE_ENDPOINT.id: creates_eks and config.eks_settings.endpoint_access == "private",
        EKS_LOGGING.id: creates_eks,
    }
    for rule_id, engaged in expected.items():
        if engaged:
            assert COMPLIANT.value in verdicts[rule_id], (rule_id, verdicts[rule_id])
        assert "NON_COMPLIANT" not in verdicts[rule_id] or rule_id == EKS_PRIVATE_ENDPOINT.id
