"""The partition and region in the library's cdk-nag acknowledgments match what cdk-nag prints,
whatever feature flags and environment the consumer's app has.

CDK makes ``Stack.partition`` a literal only when ``@aws-cdk/core:enablePartitionLiterals`` is on
for the stack and its region is known (aws-cdk-lib ``core/lib/stack.ts``, ``get partition``);
otherwise ARNs hold ``{"Ref": "AWS::Partition"}``, which cdk-nag prints as ``<AWS::Partition>``.
An acknowledgment that names the wrong one acknowledges nothing, and the synth fails.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from library_testkit import PARTITION_LITERALS, ROOT, findings, project_context

from hyperpod_cdk import ClusterAutoScalingRole, ExecutionRole, LifecycleScripts
from hyperpod_cdk.compliance.nag import (
    nag_account,
    nag_partition,
    nag_region,
    register_compliance_packs,
)

ACCOUNT = "111122223333"


def _app(partition_literals: bool | None, outdir: str | None = None) -> cdk.App:
    context: dict[str, Any] = project_context()
    if partition_literals is None:
        context.pop(PARTITION_LITERALS)  # an app whose cdk.json does not mention the flag
    else:
        context[PARTITION_LITERALS] = partition_literals
    return cdk.App(context=context, outdir=outdir or tempfile.mkdtemp(prefix="hyperpod-nag-"))


def _stack(app: cdk.App, region: str | None = "us-west-2") -> cdk.Stack:
    env = cdk.Environment(account=ACCOUNT, region=region) if region else None
    return cdk.Stack(app, "Stack", env=env)


@pytest.mark.parametrize(
    ("flag", "region", "expected"),
    [
        (True, "us-west-2", "aws"),
        (True, "cn-north-1", "aws-cn"),
        (True, "us-gov-west-1", "aws-us-gov"),
        (False, "us-west-2", "<AWS::Partition>"),
        (None, "us-west-2", "<AWS::Partition>"),  # the flag's default is off
        (False, "cn-north-1", "<AWS::Partition>"),
        (True, None, "<AWS::Partition>"),  # an environment-agnostic stack
    ],
)
def test_nag_partition_follows_the_feature_flag_and_the_region(
    flag: bool | None, region: str | None, expected: str
) -> None:
    stack = _stack(_app(flag), region)
    assert nag_partition(stack) == expected
    # the same decision as CDK's own
    partition = stack.partition
    assert expected == ("<AWS::Partition>" if cdk.Token.is_unresolved(partition) else partition)


def test_nag_partition_reads_the_flag_of_the_stack_not_only_the_app() -> None:
    app = _app(None)
    stack = cdk.Stack(app, "Stack", env=cdk.Environment(account=ACCOUNT, region="us-west-2"))
    stack.node.set_context(PARTITION_LITERALS, True)
    assert nag_partition(stack) == "aws"


def test_nag_region_and_account_of_an_environment_agnostic_stack() -> None:
    stack = _stack(_app(True), region=None)
    assert nag_region(stack) == "<AWS::Region>"
    assert nag_account(stack) == "<AWS::AccountId>"
    known = _stack(_app(True))
    assert (nag_region(known), nag_account(known)) == ("us-west-2", ACCOUNT)


def _synth_roles_and_scripts(partition_literals: bool | None, region: str | None) -> list[Any]:
    """The constructs whose acknowledgments carry ARNs of the stack, with AwsSolutions on."""
    outdir = Path(tempfile.mkdtemp(prefix="hyperpod-nag-"))
    app = _app(partition_literals, str(outdir))
    stack = _stack(app, region)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0a1b2c3d4e5f67890", availability_zones=["us-west-2b"]
    )
    subnet = ec2.Subnet.from_subnet_attributes(
        stack, "Subnet", subnet_id="subnet-0a1b2c3d4e5f67890", route_table_id="rtb-0a1b2c3d"
    )
    group = ec2.SecurityGroup.from_security_group_id(stack, "Group", "sg-0a1b2c3d4e5f67890")
    role = ExecutionRole(stack, "Role", vpc=vpc, subnets=[subnet], security_groups=[group])
    role.grant_eks_node(f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/ml")
    scripts = LifecycleScripts(
        stack,
        "Scripts",
        directory=ROOT / "lifecycle_assets",
        settings={"environment": "t", "orchestrator": "eks"},
    )
    role.grant_lifecycle_read(scripts.bucket, scripts.prefix)
    ClusterAutoScalingRole(stack, "AutoScaling")
    register_compliance_packs(app, ["AwsSolutions"])
    try:
        app.synth()
    except Exception as exc:  # jsii: validation failed
        raise AssertionError(f"{exc}\n{findings(outdir)}") from None
    return findings(outdir)


@pytest.mark.parametrize("partition_literals", [True, False, None], ids=["on", "off", "unset"])
def test_acknowledgments_match_with_and_without_partition_literals(
    partition_literals: bool | None,
) -> None:
    assert _synth_roles_and_scripts(partition_literals, "us-west-2") == []


def test_acknowledgments_match_in_an_environment_agnostic_stack() -> None:
    assert _synth_roles_and_scripts(True, None) == []
