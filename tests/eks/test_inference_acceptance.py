"""Issue 23, acceptance 1: a config with a cluster policy, two teams with quotas, inference and an
autoscaling group (a node pool from zero) synthesizes in us-east-1 (the native task governance
types) and in us-west-2 (the custom-resource path); cfn-lint is clean for each region and cdk-nag
is clean (every compliance pack registered)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.cfn_lint_schemas import lint_errors

from hyperpod_cdk.compliance.nag import PACKS
from hyperpod_cdk.eks.inference import INFERENCE
from hyperpod_cdk.facts.task_governance_types import (
    COMPUTE_QUOTA_TYPE,
    CUSTOM_TYPES,
    SCHEDULER_CONFIG_TYPE,
)

US_EAST_1 = {
    "region": "us-east-1",
    "network.availability_zone_id": "use1-az4",
    "network.eks_availability_zone_ids": ["use1-az1", "use1-az4"],
    # every compliance pack, as the shipped configs are checked
    "compliance_packs": list(PACKS),
}
US_WEST_2 = {"compliance_packs": list(PACKS)}
REGIONS = {"us-east-1": US_EAST_1, "us-west-2": US_WEST_2}


@pytest.fixture(scope="module", params=sorted(REGIONS))
def synth(request: pytest.FixtureRequest, build_variant: Any) -> Any:
    # eks-full: a policy with three priority classes, two teams with quotas, inference, and the
    # gpu-burst group that scales from zero through its node pool
    return build_variant(REGIONS[request.param], base="eks-full")


def test_the_config_is_what_the_acceptance_asks_for(synth: Any) -> None:
    cfg = synth.config
    governance = cfg.eks_settings.task_governance
    assert governance is not None and len(governance.teams) == 2
    assert all(team.quota for team in governance.teams)
    assert cfg.eks_settings.addons.inference_settings is not None
    assert cfg.cluster.auto_scaling and cfg.cluster.node_pools
    burst = {g.name: g for g in cfg.cluster.instance_groups}["gpu-burst"]
    assert burst.count == 0


def test_task_governance_takes_the_regions_path(synth: Any) -> None:
    resources = synth.resources("eks-addons")
    types = {r["Type"] for r in resources.values()}
    if synth.config.region == "us-east-1":
        assert SCHEDULER_CONFIG_TYPE in types
        assert CUSTOM_TYPES[SCHEDULER_CONFIG_TYPE] not in types
    else:  # no ClusterSchedulerConfig in us-west-2: the custom resource
        assert SCHEDULER_CONFIG_TYPE not in types
        assert CUSTOM_TYPES[SCHEDULER_CONFIG_TYPE] in types
    assert sum(r["Type"] == COMPUTE_QUOTA_TYPE for r in resources.values()) == 2


def test_inference_is_installed_after_task_governance(synth: Any) -> None:
    addons = {
        r["Properties"]["AddonName"]: (k, r)
        for k, r in synth.resources("eks-addons", "AWS::EKS::Addon").items()
    }
    governance_id, _ = addons["amazon-sagemaker-hyperpod-taskgovernance"]
    _, inference = addons[INFERENCE]
    assert governance_id in inference["DependsOn"]


def test_cdk_nag_is_clean(synth: Any) -> None:
    # the synth itself fails on an unacknowledged finding; the report must hold no violation
    report = synth.outdir / "validation-report.json"
    reports = json.loads(report.read_text())["pluginReports"] if report.exists() else []
    assert [v for r in reports for v in r.get("violations", [])] == []
    assert synth.config.compliance_packs == list(PACKS)


def test_cfn_lint_is_clean(synth: Any) -> None:
    region = synth.config.region
    errors = {}
    for name, template in synth.templates.items():
        found = lint_errors(template, region)
        if found:
            errors[name] = found
    assert errors == {}
