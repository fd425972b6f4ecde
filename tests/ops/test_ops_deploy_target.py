"""Preflight checks of the deploy target: account, cluster name, CDK bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ops_testkit import (
    ACCOUNT,
    CALLER_ARN,
    PROJECT_ROOT,
    StubbedAws,
    bootstrap,
    cluster_absent,
    cluster_arn,
    cluster_present,
    environment,
    no_bootstrap_stack,
    stack_resource,
)

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.check import Check
from hyperpod_ops.deploy_target import (
    MIN_BOOTSTRAP_VERSION,
    BootstrapTarget,
    bootstrap_target,
    check_account,
    check_bootstrap,
    check_cluster,
)

TARGET = BootstrapTarget("CDKToolkit", "hnb659fds", 6, "the templates of aws-cdk-lib 2")

# -- account ---------------------------------------------------------------------------------


def test_the_config_account_passes() -> None:
    check = check_account(environment("full"), ACCOUNT, CALLER_ARN)
    assert check.outcome == "pass"


def test_another_account_fails() -> None:
    check = check_account(environment("full"), "444455556666", CALLER_ARN)
    assert check.outcome == "fail"
    assert "444455556666" in check.detail and ACCOUNT in check.detail


def test_no_account_in_the_config_is_skipped_with_the_callers() -> None:
    check = check_account(environment("default"), ACCOUNT, CALLER_ARN)
    assert check.outcome == "skip" and ACCOUNT in check.detail


# -- cluster name ----------------------------------------------------------------------------


def check_cluster_name(config: EnvironmentConfig, aws: StubbedAws) -> Check:
    """The first check of ``check_cluster``: the name's."""
    return check_cluster(config, aws("sagemaker"), aws("cloudformation"))[0]


def test_a_free_name_passes(aws: StubbedAws) -> None:
    cluster_absent(aws, "ml-research")
    check = check_cluster_name(environment("default"), aws)
    assert check.outcome == "pass"


def test_the_apps_own_cluster_passes_as_an_update(aws: StubbedAws) -> None:
    cluster_present(aws, "ml-research")
    stack_resource(aws, "ml-research-cluster", cluster_arn("ml-research"))
    check = check_cluster_name(environment("default"), aws)
    assert check.outcome == "pass" and "updates" in check.detail


def test_a_name_taken_by_another_cluster_fails(aws: StubbedAws) -> None:
    cluster_present(aws, "ml-research")
    aws.error("cloudformation", "describe_stack_resource", "ValidationError",
              {"StackName": "ml-research-cluster", "LogicalResourceId": "HyperPodCluster"},
              message="Stack 'ml-research-cluster' does not exist")  # fmt: skip
    check = check_cluster_name(environment("default"), aws)
    assert check.outcome == "fail" and check.fix and "cluster.name" in check.fix


def test_a_stack_that_owns_another_cluster_fails(aws: StubbedAws) -> None:
    cluster_present(aws, "ml-research")
    stack_resource(aws, "ml-research-cluster", cluster_arn("ml-research", "0ther1d"))
    check = check_cluster_name(environment("default"), aws)
    assert check.outcome == "fail"


def test_the_cluster_name_key_is_the_name_checked(aws: StubbedAws) -> None:
    cluster_absent(aws, "research-full")
    config = environment("full", {"cluster.name": "research-full"})
    assert check_cluster_name(config, aws).outcome == "pass"


# -- what an update of the app's own cluster may not change -----------------------------------

ACCOUNTING = {"Slurm": {"AccountingDatabase": {"Endpoint": "acct.db.example", "Port": 3306,
                                               "SecretArn": f"arn:aws:secretsmanager:us-west-2:{ACCOUNT}:secret:slurm-AbCdEf"}}}  # fmt: skip


def own_cluster(aws: StubbedAws, name: str, **described: object) -> None:
    cluster_present(aws, name, **described)
    stack_resource(aws, f"{name}-cluster", cluster_arn(name))


def test_an_update_that_drops_the_accounting_database_fails(aws: StubbedAws) -> None:
    own_cluster(aws, "ml-research", Orchestrator=ACCOUNTING)
    name, accounting = check_cluster(
        environment("default"), aws("sagemaker"), aws("cloudformation")
    )
    assert name.outcome == "pass"
    assert (accounting.name, accounting.outcome) == ("accounting database", "fail")
    assert "acct.db.example" in accounting.detail and "internal MariaDB" in accounting.detail
    assert accounting.fix and "cluster.slurm.accounting_database: true" in accounting.fix


def test_an_update_that_keeps_the_accounting_database_passes(aws: StubbedAws) -> None:
    own_cluster(aws, "research-full", Orchestrator=ACCOUNTING)
    checks = check_cluster(environment("full"), aws("sagemaker"), aws("cloudformation"))
    assert [(c.name, c.outcome) for c in checks] == [
        ("cluster name research-full", "pass"),
        ("accounting database", "pass"),
    ]
    assert "keeps" in checks[1].detail


def test_attaching_an_accounting_database_passes_and_says_it_stays(aws: StubbedAws) -> None:
    own_cluster(aws, "research-full", Orchestrator={"Slurm": {}})
    _, accounting = check_cluster(environment("full"), aws("sagemaker"), aws("cloudformation"))
    assert accounting.outcome == "pass" and "cannot detach it later" in accounting.detail


def test_no_accounting_database_on_either_side_adds_no_check(aws: StubbedAws) -> None:
    own_cluster(aws, "ml-research", Orchestrator={"Slurm": {}})
    checks = check_cluster(environment("default"), aws("sagemaker"), aws("cloudformation"))
    assert [c.name for c in checks] == ["cluster name ml-research"]


def test_another_clusters_accounting_database_is_not_judged(aws: StubbedAws) -> None:
    cluster_present(aws, "ml-research", Orchestrator=ACCOUNTING)
    stack_resource(aws, "ml-research-cluster", cluster_arn("ml-research", "0ther1d"))
    checks = check_cluster(environment("default"), aws("sagemaker"), aws("cloudformation"))
    assert [(c.name, c.outcome) for c in checks] == [("cluster name ml-research", "fail")]


# -- bootstrap -------------------------------------------------------------------------------


def test_a_recent_bootstrap_passes(aws: StubbedAws) -> None:
    bootstrap(aws, "30")
    check = check_bootstrap(
        environment("full"), aws("cloudformation"), aws("ssm"), account=ACCOUNT, target=TARGET
    )
    assert check.outcome == "pass"


def test_no_bootstrap_stack_fails_with_the_command(aws: StubbedAws) -> None:
    no_bootstrap_stack(aws)
    check = check_bootstrap(
        environment("full"), aws("cloudformation"), aws("ssm"), account=ACCOUNT, target=TARGET
    )
    assert check.outcome == "fail"
    assert check.fix and f"cdk bootstrap aws://{ACCOUNT}/us-west-2" in check.fix


def test_an_old_bootstrap_fails(aws: StubbedAws) -> None:
    bootstrap(aws, "5")
    check = check_bootstrap(
        environment("full"), aws("cloudformation"), aws("ssm"), account=ACCOUNT, target=TARGET
    )
    assert check.outcome == "fail" and "version 5" in check.detail and ">= 6" in check.detail


def test_a_broken_bootstrap_stack_fails(aws: StubbedAws) -> None:
    aws.stub("cloudformation").add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "CDKToolkit", "CreationTime": "2026-01-01T00:00:00Z",
                     "StackStatus": "ROLLBACK_COMPLETE"}]},
        {"StackName": "CDKToolkit"},
    )  # fmt: skip
    check = check_bootstrap(
        environment("full"), aws("cloudformation"), aws("ssm"), account=ACCOUNT, target=TARGET
    )
    assert check.outcome == "fail" and "ROLLBACK_COMPLETE" in check.detail


def test_a_bootstrap_with_another_qualifier_fails(aws: StubbedAws) -> None:
    bootstrap(aws, None)
    check = check_bootstrap(
        environment("full"), aws("cloudformation"), aws("ssm"), account=ACCOUNT, target=TARGET
    )
    assert check.outcome == "fail" and "qualifier" in check.detail


def test_a_custom_qualifier_and_toolkit_stack_are_used(aws: StubbedAws) -> None:
    target = BootstrapTarget("HpToolkit", "hyperpod1", 6, "x")
    no_bootstrap_stack(aws, "HpToolkit")
    check = check_bootstrap(
        environment("full"), aws("cloudformation"), aws("ssm"), account=ACCOUNT, target=target
    )
    assert check.fix and "--qualifier hyperpod1" in check.fix
    assert "--toolkit-stack-name HpToolkit" in check.fix


def test_the_shipped_cdk_json_uses_the_default_qualifier(tmp_path: Path) -> None:
    target = bootstrap_target(environment("default"), PROJECT_ROOT)
    assert (target.toolkit_stack, target.qualifier) == ("CDKToolkit", "hnb659fds")
    assert target.version_parameter == "/cdk-bootstrap/hnb659fds/version"


def test_qualifier_toolkit_stack_and_version_come_from_the_project(tmp_path: Path) -> None:
    (tmp_path / "cdk.json").write_text(
        json.dumps(
            {
                "toolkitStackName": "HpToolkit",
                "context": {"@aws-cdk/core:bootstrapQualifier": "hyperpod1"},
            }
        )
    )
    (tmp_path / "cdk.out").mkdir()
    manifest = {
        "artifacts": {
            "ml-research-network": {
                "type": "aws:cloudformation:stack",
                "properties": {"requiresBootstrapStackVersion": 6},
            },
            "ml-research-cluster.assets": {
                "type": "cdk:asset-manifest",
                "properties": {"requiresBootstrapStackVersion": 21},
            },
            "other-env-network": {
                "type": "aws:cloudformation:stack",
                "properties": {"requiresBootstrapStackVersion": 99},
            },
        }
    }
    (tmp_path / "cdk.out" / "manifest.json").write_text(json.dumps(manifest))
    target = bootstrap_target(environment("default"), tmp_path)
    assert target == BootstrapTarget(
        "HpToolkit", "hyperpod1", 21, "the synthesized templates (cdk.out/manifest.json)"
    )


@pytest.mark.parametrize("manifest", [None, "{not json", json.dumps({"artifacts": {}})])
def test_without_a_usable_assembly_the_documented_minimum_applies(
    tmp_path: Path, manifest: str | None
) -> None:
    if manifest is not None:
        (tmp_path / "cdk.out").mkdir()
        (tmp_path / "cdk.out" / "manifest.json").write_text(manifest)
    target = bootstrap_target(environment("default"), tmp_path)
    assert target.required_version == MIN_BOOTSTRAP_VERSION == 6
    assert target.qualifier == "hnb659fds"
