"""The HyperPod cluster: every instance group of every shipped config as configured, the Slurm
orchestrator, recovery and provisioning modes, and the VPC config."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from stack_testkit import LIFECYCLE_PREFIX, get_att, joined_text, shipped_params, strings

from stacks.environment import LIFECYCLE_BUCKET_TAG


def cluster(synth) -> dict[str, Any]:
    return synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"]


def group_pairs(synth) -> list[tuple[Any, dict[str, Any]]]:
    """(configured group, template group), matched by name."""
    by_name = {g["InstanceGroupName"]: g for g in cluster(synth)["InstanceGroups"]}
    return [(g, by_name[g.name]) for g in synth.config.cluster.instance_groups]


def storage_configs(group: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [c[key] for c in group.get("InstanceStorageConfigs", []) if key in c]


def node_group_id(synth) -> dict[str, Any]:
    return synth.outputs("network")["NodeSecurityGroupId"]["Value"]


def test_groups_are_the_configured_groups_in_order(shipped) -> None:
    names = [g["InstanceGroupName"] for g in cluster(shipped)["InstanceGroups"]]
    assert names == [g.name for g in shipped.config.cluster.instance_groups]


def test_cluster_name_comes_from_the_config(shipped) -> None:
    assert cluster(shipped)["ClusterName"] == shipped.config.cluster_name


def test_instance_type_or_flexible_instance_requirements(shipped) -> None:
    for config, group in group_pairs(shipped):
        if config.instance_types:
            assert "InstanceType" not in group, config.name
            assert group["InstanceRequirements"] == {
                "InstanceTypes": list(config.instance_types)
            }, config.name
        else:
            assert group["InstanceType"] == config.instance_type, config.name
            assert "InstanceRequirements" not in group, config.name


def test_instance_count_and_min_count(shipped) -> None:
    for config, group in group_pairs(shipped):
        assert group["InstanceCount"] == config.count, config.name
        assert group.get("MinInstanceCount") == config.min_count, config.name


def test_slurm_node_type_of_every_group(shipped_slurm) -> None:
    for config, group in group_pairs(shipped_slurm):
        assert group["SlurmConfig"]["NodeType"] == (config.node_type or "Compute"), config.name


def test_partition_only_on_compute_groups_defaulting_to_the_group_name(shipped_slurm) -> None:
    for config, group in group_pairs(shipped_slurm):
        slurm = group["SlurmConfig"]
        if slurm["NodeType"] == "Compute":
            assert slurm["PartitionNames"] == [config.partition or config.name], config.name
        else:
            assert "PartitionNames" not in slurm, config.name


def test_fsx_is_mounted_by_hyperpod_on_every_group(shipped_slurm) -> None:
    fsx = shipped_slurm.config.storage.fsx
    if not fsx.enabled:
        return
    if fsx.file_system_id:
        expected = {
            "DnsName": fsx.dns_name,
            "MountName": fsx.mount_name,
            "MountPath": fsx.mount_path,
        }
    else:
        expected = {
            "DnsName": get_att("FileSystem", "DNSName"),
            "MountName": get_att("FileSystem", "LustreMountName"),
            "MountPath": fsx.mount_path,
        }
    for config, group in group_pairs(shipped_slurm):
        assert shipped_slurm.resolve(storage_configs(group, "FsxLustreConfig")) == [expected], (
            config.name
        )


def test_ebs_volume_size_and_key(shipped) -> None:
    for config, group in group_pairs(shipped):
        volumes = storage_configs(group, "EbsVolumeConfig")
        if config.ebs_volume_gb is None:
            assert volumes == [], config.name
        else:
            expected = {"VolumeSizeInGB": config.ebs_volume_gb}
            if config.ebs_kms_key_arn:
                expected["VolumeKmsKeyId"] = config.ebs_kms_key_arn
            assert volumes == [expected], config.name


def test_deep_health_checks(shipped) -> None:
    for config, group in group_pairs(shipped):
        assert group.get("OnStartDeepHealthChecks", []) == list(config.deep_health_checks), (
            config.name
        )


def test_training_plan(shipped) -> None:
    for config, group in group_pairs(shipped):
        assert group.get("TrainingPlanArn") == config.training_plan_arn, config.name


def test_threads_per_core(shipped) -> None:
    for config, group in group_pairs(shipped):
        assert group.get("ThreadsPerCore") == config.threads_per_core, config.name


def test_groups_in_another_az_get_that_azs_subnet(shipped) -> None:
    net = shipped.config.network
    for config, group in group_pairs(shipped):
        az_id = config.availability_zone_id
        if az_id is None or az_id == net.availability_zone_id:
            assert "OverrideVpcConfig" not in group, config.name
            continue
        override = shipped.resolve(group["OverrideVpcConfig"])
        if net.vpc_id is None:
            expected_subnet = shipped.outputs("network")[
                f"ComputeSubnetId{az_id.replace('-', '')}"
            ]["Value"]
        else:
            expected_subnet = net.additional_compute_subnet_ids[az_id]
        assert override["Subnets"] == [expected_subnet], config.name
        assert override["SecurityGroupIds"] == shipped.resolve(
            cluster(shipped)["VpcConfig"]["SecurityGroupIds"]
        )


def test_spot_capacity(shipped) -> None:
    for config, group in group_pairs(shipped):
        expected = {"Spot": {}} if config.capacity_type == "spot" else None
        assert group.get("CapacityRequirements") == expected, config.name


def test_network_interface(shipped) -> None:
    for config, group in group_pairs(shipped):
        expected = {"InterfaceType": config.network_interface} if config.network_interface else None
        assert group.get("NetworkInterface") == expected, config.name


def test_image_id(shipped) -> None:
    for config, group in group_pairs(shipped):
        assert group.get("ImageId") == config.image_id, config.name


def expected_deployment(update, cluster_name: str, group_name: str) -> dict[str, Any]:
    expected: dict[str, Any] = {}
    if update.batch_count is not None:
        expected["RollingUpdatePolicy"] = {
            "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": update.batch_count}
        }
    elif update.batch_percent is not None:
        expected["RollingUpdatePolicy"] = {
            "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": update.batch_percent}
        }
    if update.wait_seconds is not None:
        expected["WaitIntervalInSeconds"] = update.wait_seconds
    if update.rollback_alarms == "auto":
        # the group's own alarm (tests/stacks/test_stack_alerts.py checks that it exists)
        expected["AutoRollbackConfiguration"] = [
            {"AlarmName": f"{cluster_name}-{group_name}-rollback"}
        ]
    elif update.rollback_alarms:
        expected["AutoRollbackConfiguration"] = [{"AlarmName": a} for a in update.rollback_alarms]
    return expected


def test_scheduled_update(shipped) -> None:
    for config, group in group_pairs(shipped):
        update = config.scheduled_update
        if update is None:
            assert "ScheduledUpdateConfig" not in group, config.name
            continue
        actual = group["ScheduledUpdateConfig"]
        assert actual["ScheduleExpression"] == update.schedule, config.name
        expected = expected_deployment(update, shipped.config.cluster_name, config.name)
        assert actual.get("DeploymentConfig", {}) == expected, config.name


def test_auto_patch(shipped) -> None:
    for config, group in group_pairs(shipped):
        patch = config.auto_patch
        if patch is None:
            assert "AutoPatchConfig" not in group, config.name
            continue
        actual = group["AutoPatchConfig"]
        assert actual["PatchingStrategy"] == patch.strategy, config.name
        expected = expected_deployment(patch, shipped.config.cluster_name, config.name)
        assert actual.get("DeploymentConfig", {}) == expected, config.name


def test_every_group_runs_as_the_execution_role(shipped) -> None:
    """The created role's ARN is built from the role path (a literal of the cluster's template:
    a new path replaces the role and must change this template too) and the role's name."""
    role_id = shipped.outputs("nodes")["ExecutionRoleArn"]["Value"]["Fn::GetAtt"][0]
    path = shipped.config.iam.role_path.lstrip("/")
    account = shipped.config.account or "AWS::AccountId"
    for config, group in group_pairs(shipped):
        configured = config.execution_role_arn or shipped.config.cluster.execution_role_arn
        if configured:
            assert group["ExecutionRole"] == configured, config.name
            continue
        _, parts = group["ExecutionRole"]["Fn::Join"]
        *head, name = parts
        assert shipped.resolve(name) == {"Ref": role_id}, config.name
        assert isinstance(head[-1], str) and head[-1].endswith(f":role/{path}"), head
        assert str(account) in json.dumps(head)


def test_no_kubernetes_settings_on_a_slurm_cluster(shipped_slurm) -> None:
    for config, group in group_pairs(shipped_slurm):
        assert "KubernetesConfig" not in group, config.name
        assert "ImageReleaseVersion" not in group, config.name


# -- orchestrator ----------------------------------------------------------------------------


# a 12-digit number on its own: an account ID
ACCOUNT_ID = re.compile(r"(?<![0-9])[0-9]{12}(?![0-9])")


@pytest.mark.parametrize("path", shipped_params(lambda c: c.account is None))
def test_a_config_without_an_account_names_no_account_in_its_templates(
    path: Path, synthesized
) -> None:
    """Without ``account`` the stacks are account-agnostic: every ARN and name reads
    ``AWS::AccountId`` (minimal, default, existing-vpc-fsx, eks-minimal)."""
    synth = synthesized(path)
    found = {
        (stack, where, number)
        for stack, template in synth.templates.items()
        for where, text in strings(template)
        for number in ACCOUNT_ID.findall(text)
    }
    assert found == set()


def test_slurm_orchestrator_has_no_config_strategy_under_continuous(shipped_slurm) -> None:
    assert shipped_slurm.config.cluster.node_provisioning_mode == "Continuous"
    slurm = cluster(shipped_slurm)["Orchestrator"]["Slurm"]
    assert "SlurmConfigStrategy" not in slurm


def test_config_strategy_is_passed_without_continuous_provisioning(build_variant) -> None:
    synth = build_variant(
        {"cluster.node_provisioning_mode": None, "cluster.slurm": {"config_strategy": "Managed"}},
        base="minimal",
    )
    assert cluster(synth)["Orchestrator"]["Slurm"] == {"SlurmConfigStrategy": "Managed"}
    assert "NodeProvisioningMode" not in cluster(synth)


def test_accounting_database_is_wired_to_the_database_and_its_secret(synthesized) -> None:
    synth = synthesized("full")
    database = synth.resolve(cluster(synth)["Orchestrator"]["Slurm"]["AccountingDatabase"])
    assert database["Endpoint"] == get_att("SlurmAccountingDatabase", "Endpoint.Address")
    assert database["SecretArn"] == synth.resolve(
        synth.outputs("storage")["AccountingSecretArn"]["Value"]
    )
    secret = synth.template("storage")["Resources"][database["SecretArn"]["Ref"]]
    assert secret["Type"] == "AWS::SecretsManager::SecretTargetAttachment"
    assert database["Port"] == 3306
    # named, since botocore (slurm_acct_db_<cluster id>) and the CloudFormation schema
    # (slurm_acct_db) give different defaults for an omitted Name (issue 32, slurm 8.2)
    assert database["Name"] == "slurm_acct_db"


def test_no_accounting_database_unless_configured(shipped_slurm) -> None:
    if not shipped_slurm.config.cluster.slurm_settings.accounting_database:
        assert "AccountingDatabase" not in cluster(shipped_slurm)["Orchestrator"]["Slurm"]
        assert shipped_slurm.resources("storage", "AWS::RDS::DBInstance") == {}


def test_node_recovery_and_provisioning_mode(shipped) -> None:
    props = cluster(shipped)
    assert props["NodeRecovery"] == shipped.config.cluster.node_recovery
    assert props["NodeProvisioningMode"] == shipped.config.cluster.node_provisioning_mode


def test_autoscaling_cluster_role_and_tiered_storage_only_when_configured(shipped) -> None:
    # eks-full sets all three (test_stack_eks.py asserts their values); the other configs none
    config = shipped.config.cluster
    props = cluster(shipped)
    assert ("AutoScaling" in props) == config.auto_scaling
    assert ("ClusterRole" in props) == (config.auto_scaling or config.cluster_role_arn is not None)
    assert ("TieredStorageConfig" in props) == (config.tiered_storage is not None)


def test_cluster_is_in_the_main_compute_subnet(shipped) -> None:
    vpc = shipped.resolve(cluster(shipped)["VpcConfig"])
    net = shipped.config.network
    expected = (
        net.compute_subnet_id
        if net.vpc_id
        else shipped.outputs("network")["ComputeSubnetId"]["Value"]
    )
    assert vpc["Subnets"] == [expected]


def test_cluster_nodes_get_the_efa_group_first_then_the_extra_groups(shipped) -> None:
    vpc = shipped.resolve(cluster(shipped)["VpcConfig"])
    assert vpc["SecurityGroupIds"] == [
        node_group_id(shipped),
        *shipped.config.network.security_group_ids,
    ]


def test_cluster_is_tagged_with_the_config_tags(shipped) -> None:
    tags = {t["Key"]: t["Value"] for t in cluster(shipped).get("Tags", [])}
    assert tags.items() >= shipped.config.tags.items()
    assert tags["hyperpod-environment"] == shipped.config.name


def test_cluster_waits_for_network_storage_and_nodes(shipped_slurm) -> None:
    config = shipped_slurm.config
    expected = {"network", "nodes"}
    fsx = config.storage.fsx
    if (
        fsx.enabled and fsx.file_system_id is None
    ) or config.cluster.slurm_settings.accounting_database:
        expected.add("storage")
    if config.network.vpc_id is None or config.network.interface_endpoints:
        expected.add("egress")  # the nodes reach out through NAT or the endpoints from boot
    assert shipped_slurm.dependencies("cluster") == expected


def test_eks_cluster_waits_for_the_eks_dependencies_and_not_for_fsx(shipped_eks) -> None:
    # pods reach FSx through the CSI driver (eks-addons): FSx is off the cluster's path; the
    # EKS control plane stack is reached through eks-dependencies
    expected = {"network", "nodes", "eks-dependencies"}
    if shipped_eks.has("egress"):
        expected.add("egress")
    assert shipped_eks.dependencies("cluster") == expected


def test_cluster_reads_its_eks_cluster_from_the_ready_parameter(shipped_eks) -> None:
    """The ARN comes through the parameter that waits for the kubectl handler, the early
    add-ons and the dependencies: the wait is in the template, not only a stack barrier."""
    raw = cluster(shipped_eks)["Orchestrator"]["Eks"]["ClusterArn"]
    arn = shipped_eks.resolve(raw, parameters=False)
    (param_id,) = shipped_eks.resources("eks-dependencies", "AWS::SSM::Parameter")
    assert arn == {"Fn::GetAtt": [param_id, "Value"]}
    param = shipped_eks.resources("eks-dependencies")[param_id]
    waits_for = set(param["DependsOn"])
    releases = shipped_eks.resources("eks-dependencies", "Custom::AWSCDK-EKS-HelmChart")
    assert releases and set(releases) <= waits_for
    assert set(shipped_eks.resources("eks-dependencies", "AWS::EKS::Addon")) <= waits_for
    assert set(shipped_eks.resources("eks-dependencies", "AWS::EKS::AccessEntry")) <= waits_for


def test_cluster_boots_from_the_scripts_once_uploaded(shipped) -> None:
    """Bucket name and content-hashed prefix are literals of the cluster's own template (issues
    19 and 15); the wait for the upload is the tag read from the parameter set after it."""
    prefix = shipped.stacks.lifecycle.scripts.prefix
    assert LIFECYCLE_PREFIX.match(prefix)
    config = shipped.config
    bucket = (
        f"sagemaker-{config.name}-lifecycle-{config.account or '${AWS::AccountId}'}-{config.region}"
    )
    resource = cluster(shipped)
    for group in resource["InstanceGroups"]:
        uri = joined_text(group["LifeCycleConfig"]["SourceS3Uri"])
        assert uri == f"s3://{bucket}/{prefix}"
    (tag,) = [t for t in resource["Tags"] if t["Key"] == LIFECYCLE_BUCKET_TAG]
    (param_id,) = shipped.resolve(tag["Value"], parameters=False)["Fn::GetAtt"][:1]
    param = shipped.resources("nodes")[param_id]
    assert param["Type"] == "AWS::SSM::Parameter"
    (upload,) = shipped.resources("nodes", "Custom::CDKBucketDeployment")
    assert upload in param["DependsOn"]
    bucket_ref = shipped.outputs("nodes")["LifecycleBucketName"]["Value"]
    assert param["Properties"]["Value"] == bucket_ref
