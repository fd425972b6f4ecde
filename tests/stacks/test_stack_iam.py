"""The node execution role: trust, the managed policy, ENI, FSx and lifecycle-script permissions;
role path and permissions boundary on every role the app creates."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk.assertions import Match
from stack_testkit import LIFECYCLE_PREFIX, as_list, get_att, join_parts, ref, shipped_params

from hyperpod_cdk.iam import CLUSTER_INSTANCE_POLICY
from hyperpod_cdk.lifecycle.scripts import LIFECYCLE_ROOT

ROLE = "ExecutionRoleCDF74862"


def execution_role(synth) -> dict:
    role_id = synth.outputs("nodes")["ExecutionRoleArn"]["Value"]["Fn::GetAtt"][0]
    return synth.template("nodes")["Resources"][role_id]["Properties"]


def statements_of_role(synth, logical_id: str = ROLE) -> dict[str, dict]:
    """Every statement of the policies attached to the execution role, by Sid."""
    found = {}
    for template in synth.templates.values():
        for resource in template["Resources"].values():
            if resource["Type"] != "AWS::IAM::ManagedPolicy":
                continue
            roles = synth.resolve(resource["Properties"]["Roles"])
            if ref(logical_id) in roles:
                for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                    found[statement["Sid"]] = statement
    return found


def test_the_apps_own_policies_are_customer_managed(shipped) -> None:
    # NIST 800-53 / HIPAA / PCI IAMNoInlinePolicy: the only inline policies left are the
    # DefaultPolicy CDK writes for its own framework roles (flow-log delivery, BucketDeployment,
    # kubectl handler), each acknowledged
    for stack_name, template in shipped.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Policy":
                assert "DefaultPolicy" in logical_id, (stack_name, logical_id)


def lifecycle_prefix(synth) -> str:
    _, deployment = synth.one("nodes", "Custom::CDKBucketDeployment")
    return deployment["Properties"]["DestinationBucketKeyPrefix"]


def test_execution_role_is_trusted_by_sagemaker_only(shipped) -> None:
    (statement,) = execution_role(shipped)["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"


def test_execution_role_trust_through_cdk_assertions(synthesized) -> None:
    synthesized("default").assertions("nodes").has_resource_properties(
        "AWS::IAM::Role",
        Match.object_like(
            {
                "AssumeRolePolicyDocument": {
                    "Statement": [
                        {
                            "Action": "sts:AssumeRole",
                            "Effect": "Allow",
                            "Principal": {"Service": "sagemaker.amazonaws.com"},
                        }
                    ],
                    "Version": "2012-10-17",
                },
                "ManagedPolicyArns": [
                    Match.object_like(
                        {
                            "Fn::Join": [
                                "",
                                Match.array_with(
                                    [Match.string_like_regexp(CLUSTER_INSTANCE_POLICY)]
                                ),
                            ]
                        }
                    )
                ],
            }
        ),
    )


def test_execution_role_has_the_hyperpod_managed_policy(shipped) -> None:
    (arn,) = execution_role(shipped)["ManagedPolicyArns"]
    assert join_parts(arn)[-1] == f":iam::aws:policy/{CLUSTER_INSTANCE_POLICY}"


def test_lifecycle_bucket_listing_is_limited_to_the_lifecycle_prefix(shipped) -> None:
    statement = statements_of_role(shipped)["ListLifecyclePrefix"]
    bucket = shipped.outputs("nodes")["LifecycleBucketName"]["Value"]["Ref"]
    prefix = LIFECYCLE_ROOT
    assert lifecycle_prefix(shipped).startswith(prefix)
    assert statement["Action"] == "s3:ListBucket"
    assert statement["Resource"] == get_att(bucket, "Arn")
    assert statement["Condition"] == {"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}}


def test_lifecycle_scripts_are_readable_under_the_lifecycle_prefix_only(shipped) -> None:
    # The wrong ARN (the bare bucket instead of bucket/*) is a classic HyperPod boot failure.
    # Every hashed folder is readable: a node HyperPod replaces between the nodes stack's update
    # and the cluster's still boots from the previous one.
    statement = shipped.resolve(statements_of_role(shipped)["ReadLifecycleScripts"])
    bucket = shipped.outputs("nodes")["LifecycleBucketName"]["Value"]["Ref"]
    assert statement["Action"] == "s3:GetObject"
    resource = join_parts(statement["Resource"])
    assert resource == [get_att(bucket, "Arn"), f"/{LIFECYCLE_ROOT}*"]
    assert LIFECYCLE_PREFIX.match(lifecycle_prefix(shipped))


def test_execution_role_manages_network_interfaces(shipped) -> None:
    statements = statements_of_role(shipped)
    assert "ec2:DescribeNetworkInterfaces" in statements["DescribeNetwork"]["Action"]
    assert statements["CreateNodeInterfaces"]["Action"] == "ec2:CreateNetworkInterface"
    assert set(statements["ManageNodeInterfacesInVpc"]["Action"]) == {
        "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface",
        "ec2:DeleteNetworkInterfacePermission",
        "ec2:CreateTags",
    }
    vpc = statements["ManageNodeInterfacesInVpc"]["Condition"]["ArnEquals"]["ec2:Vpc"]
    # detaching (a replaced or removed node): the interface in this VPC; the instance (which
    # has no ec2:Vpc condition key) in a statement of its own
    detach = statements["DetachNodeInterfacesInVpc"]
    assert detach["Action"] == "ec2:DetachNetworkInterface"
    assert detach["Condition"] == {"ArnEquals": {"ec2:Vpc": vpc}}
    kinds = {
        join_parts(r)[-1].rsplit(":", 1)[-1] for r in as_list(shipped.resolve(detach["Resource"]))
    }
    assert kinds == {"network-interface/*"}
    nodes = statements["DetachFromNodes"]
    assert nodes["Action"] == "ec2:DetachNetworkInterface" and "Condition" not in nodes
    # tag-on-create stays apart: at CreateNetworkInterface the interface is not in the VPC yet
    assert statements["TagNewInterfaces"]["Condition"] == {
        "StringEquals": {"ec2:CreateAction": "CreateNetworkInterface"}
    }


def test_interfaces_are_created_only_in_the_hyperpod_subnets(shipped) -> None:
    resources = shipped.resolve(
        as_list(statements_of_role(shipped)["CreateNodeInterfaces"]["Resource"])
    )
    last_parts = [join_parts(r)[-1] for r in resources if ":subnet/" in str(r)]
    subnets = [p.split(":subnet/")[-1] if isinstance(p, str) else p for p in last_parts]
    net = shipped.config.network
    if net.vpc_id is None:
        outputs = shipped.outputs("network")
        expected = [v["Value"] for k, v in outputs.items() if k.startswith("ComputeSubnetId")]
    else:
        expected = [net.compute_subnet_id, *net.additional_compute_subnet_ids.values()]
    assert sorted(subnets, key=str) == sorted(expected, key=str)


@pytest.mark.parametrize("path", shipped_params(lambda c: c.storage.fsx.enabled and c.is_slurm))
def test_execution_role_may_describe_file_systems_when_fsx_is_mounted(
    path: Path, synthesized
) -> None:
    assert (
        statements_of_role(synthesized(path))["DescribeFileSystems"]["Action"]
        == "fsx:DescribeFileSystems"
    )


@pytest.mark.parametrize("path", shipped_params(lambda c: not c.is_slurm))
def test_eks_nodes_do_not_describe_file_systems(path: Path, synthesized) -> None:
    # HyperPod mounts nothing on EKS nodes; pods use the FSx CSI driver
    assert "DescribeFileSystems" not in statements_of_role(synthesized(path))


def test_execution_role_may_not_describe_file_systems_without_fsx(build_variant) -> None:
    synth = build_variant({"storage.fsx.enabled": False}, base="minimal")
    assert "DescribeFileSystems" not in statements_of_role(synth)


def test_execution_role_reads_the_accounting_secret_only(synthesized) -> None:
    synth = synthesized("full")
    statement = synth.resolve(statements_of_role(synth)["ReadAccountingSecret"])
    secret_output = synth.resolve(synth.outputs("storage")["AccountingSecretArn"]["Value"])
    assert statement["Resource"] == secret_output
    assert set(statement["Action"]) == {
        "secretsmanager:GetSecretValue",
        "secretsmanager:DescribeSecret",
    }


def test_cluster_waits_for_the_role_policies(synthesized) -> None:
    # HyperPod checks the role's permissions when it creates the nodes.
    synth = synthesized("full")
    cluster = synth.stacks.cluster.cluster.resource
    waits_for = {d.node.path for d in cluster.node.dependencies}
    role = synth.stacks.lifecycle.execution_role
    assert {role.policy.node.path, role.lifecycle_policy.node.path} <= waits_for
    assert "nodes" in synth.dependencies("cluster")


def all_roles(synth) -> list[tuple[str, str, dict]]:
    return [
        (name, logical_id, resource["Properties"])
        for name, template in synth.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
    ]


@pytest.mark.parametrize("path", shipped_params(lambda c: c.iam.role_path != "/"))
def test_every_role_has_the_configured_path(path: Path, synthesized) -> None:
    synth = synthesized(path)
    roles = all_roles(synth)
    assert len(roles) >= 2
    for name, logical_id, props in roles:
        if str(props.get("RoleName", "")).startswith("SageMakerHyperPodInference"):
            # AWS's managed policy passes only role/SageMakerHyperPodInference* (no path):
            # the inference operator's role is at / whatever iam.role_path says (test_inference)
            assert props.get("Path") == "/", (name, logical_id)
            continue
        assert props.get("Path") == synth.config.iam.role_path, (name, logical_id)


@pytest.mark.parametrize(
    "path", shipped_params(lambda c: c.iam.permissions_boundary_arn is not None)
)
def test_every_role_has_the_configured_permissions_boundary(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for name, logical_id, props in all_roles(synth):
        assert (
            synth.resolve(props.get("PermissionsBoundary"))
            == synth.config.iam.permissions_boundary_arn
        ), (
            name,
            logical_id,
        )


@pytest.mark.parametrize(
    "path",
    shipped_params(lambda c: c.iam.permissions_boundary_arn is None and c.iam.role_path == "/"),
)
def test_roles_have_no_path_or_boundary_unless_configured(path: Path, synthesized) -> None:
    for name, logical_id, props in all_roles(synthesized(path)):
        assert props.get("Path", "/") == "/", (name, logical_id)
        assert "PermissionsBoundary" not in props, (name, logical_id)


REUSED_ROLE = "arn:aws:iam::111122223333:role/hyperpod-nodes"


def policies_of_role_name(synth, role_name: str) -> dict[str, dict]:
    """Statements (by Sid) of the policies the app attaches to a role it did not create."""
    found = {}
    for template in synth.templates.values():
        for resource in template["Resources"].values():
            if (
                resource["Type"] == "AWS::IAM::ManagedPolicy"
                and role_name in resource["Properties"]["Roles"]
            ):
                for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                    found[statement["Sid"]] = statement
    return found


@pytest.mark.parametrize(
    "changes",
    [
        {"cluster.execution_role_arn": REUSED_ROLE},
        {"cluster.instance_groups[1].execution_role_arn": REUSED_ROLE},
    ],
    ids=["cluster-role", "group-role"],
)
def test_reused_execution_role_can_read_the_lifecycle_scripts(changes, build_variant) -> None:
    # the role may be limited to other prefixes of sagemaker-* buckets: the app grants its own
    synth = build_variant(changes, base="minimal")
    statements = policies_of_role_name(synth, "hyperpod-nodes")
    assert statements["ReadLifecycleScripts"] == statements_of_role(synth)["ReadLifecycleScripts"]
    assert statements["ListLifecyclePrefix"] == statements_of_role(synth)["ListLifecyclePrefix"]


def test_reused_execution_role_can_read_the_accounting_secret(build_variant) -> None:
    # the nodes of the groups read the accounting secret as the role they run as
    synth = build_variant({"cluster.execution_role_arn": REUSED_ROLE}, base="full")
    assert "ReadAccountingSecret" in policies_of_role_name(synth, "hyperpod-nodes")


# -- customer managed EBS keys (issue 15) --------------------------------------------------------

EBS_KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
EBS_ALIAS = "arn:aws:kms:us-west-2:111122223333:alias/hyperpod/volumes"


def test_execution_role_may_create_grants_on_the_ebs_keys_only(build_variant) -> None:
    """HyperPod creates a grant for the volumes with the execution role's permission (SageMaker
    developer guide, customer managed KMS keys for HyperPod)."""
    synth = build_variant(
        {
            "cluster.instance_groups[2].ebs_kms_key_arn": EBS_KEY,
            "cluster.execution_role_arn": REUSED_ROLE,
        },
        base="full",
    )
    statement = statements_of_role(synth)["GrantsForNodeVolumes"]
    assert sorted(as_list(statement["Action"])) == ["kms:CreateGrant", "kms:DescribeKey"]
    assert as_list(statement["Resource"]) == [EBS_KEY]
    assert policies_of_role_name(synth, "hyperpod-nodes")["GrantsForNodeVolumes"] == statement


def test_an_ebs_key_alias_is_matched_by_the_keys_alias(build_variant) -> None:
    synth = build_variant({"cluster.instance_groups[2].ebs_kms_key_arn": EBS_ALIAS}, base="full")
    statement = statements_of_role(synth)["GrantsForNodeVolumesByAlias0"]
    assert as_list(statement["Resource"]) == ["arn:aws:kms:us-west-2:111122223333:key/*"]
    assert statement["Condition"] == {
        "ForAnyValue:StringEquals": {"kms:ResourceAliases": "alias/hyperpod/volumes"}
    }


def test_no_key_grants_without_ebs_keys(build_variant) -> None:
    synth = build_variant({"cluster.instance_groups[2].ebs_kms_key_arn": None}, base="full")
    assert not [s for s in statements_of_role(synth) if s.startswith("GrantsForNodeVolumes")]


def _ec2_condition_keys() -> dict[str, set[str]]:
    """EC2 resource type -> its condition keys, from the Service Authorization Reference as
    cfn-lint 1.58.0 ships it (cfnlint/data/AdditionalSpecs/Policies.json)."""
    import json as _json

    import cfnlint

    data = Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json"
    ec2 = _json.loads(data.read_text(encoding="utf-8"))["ec2"]["Resources"]
    return {name: set(spec.get("ConditionKeys", [])) for name, spec in ec2.items()}


@pytest.mark.parametrize("path", shipped_params())
def test_ec2_condition_keys_exist_on_every_resource_they_scope(path: Path, synthesized) -> None:
    """A statement whose condition names an ``ec2:`` key denies every resource type that lacks
    the key (ArnEquals on an absent key is false): ``ec2:Vpc`` on ``instance/*`` made the VPC CNI's
    AttachNetworkInterface fail. Source: the Service Authorization Reference, as cfn-lint's
    Policies.json holds it."""
    import json as _json
    import re as _re

    keys = _ec2_condition_keys()
    # keys of a resource type (ec2:Vpc, ec2:Subnet, ...); the rest are keys of the request
    # (ec2:CreateAction of CreateTags), which hold whatever the resource
    resource_keys = set().union(*keys.values())
    synth = synthesized(path)
    problems = []
    for kind, template in synth.templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            documents = []
            props = resource.get("Properties", {})
            if resource["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
                documents.append(props.get("PolicyDocument", {}))
            if resource["Type"] == "AWS::IAM::Role":
                documents += [p.get("PolicyDocument", {}) for p in props.get("Policies", [])]
            for document in documents:
                for statement in as_list(document.get("Statement", [])):
                    used = {
                        key
                        for operator in statement.get("Condition", {}).values()
                        for key in operator
                        if key.startswith("ec2:") and key in resource_keys
                    }
                    if not used:
                        continue
                    text = _json.dumps(statement.get("Resource", []))
                    for resource_type in set(_re.findall(r":([a-z-]+)/\*", text)):
                        missing = {k for k in used if k not in keys.get(resource_type, set())}
                        if resource_type in keys and missing:
                            problems.append(
                                f"{kind}/{logical_id} {statement.get('Sid')}: {sorted(missing)} "
                                f"is not a condition key of ec2 {resource_type}"
                            )
    assert not problems, "\n".join(problems)
