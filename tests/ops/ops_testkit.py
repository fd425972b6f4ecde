"""Stubbed AWS for the preflight and status tests: boto3 clients behind botocore's Stubber, and
helpers that queue the answers of a healthy account, one AWS call each.

The Stubber checks every request against ``expected_params`` and every queued answer against
the API's output shape, so a wrong parameter or field name fails the test.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

import boto3
import botocore.session
from botocore.stub import ANY, Stubber
from stack_testkit import config_data, with_changes

from hyperpod_cdk import facts
from hyperpod_cdk.config import EnvironmentConfig, parse
from hyperpod_ops.check import Check

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANY_MEDIA_TYPES = ANY
ACCOUNT = "111122223333"
REGION = "us-west-2"
CALLER_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/alice"
NOW = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)

# One botocore session for every test of a worker: it caches the service models (SageMaker's
# is large), so each test only builds its clients.
_BOTOCORE = botocore.session.get_session()


def environment(base: str = "default", changes: dict[str, Any] | None = None) -> EnvironmentConfig:
    """A shipped config (``default``, ``minimal``, ``existing-vpc-fsx``...), changed in memory."""
    config = parse(with_changes(config_data(base), changes), PROJECT_ROOT)
    assert isinstance(config, EnvironmentConfig)
    return config


def by_name(checks: list[Check]) -> dict[str, Check]:
    """The checks keyed by name (names are unique within one run)."""
    result = {c.name: c for c in checks}
    assert len(result) == len(checks), [c.name for c in checks]
    return result


# signing names whose IAM action prefix differs
IAM_PREFIXES = {"monitoring": "cloudwatch"}


class StubbedAws:
    """One stubbed client per service; calling it is a :data:`ClientFactory`."""

    def __init__(self, region: str = REGION) -> None:
        self.region = region
        self._session = boto3.session.Session(
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name=region,
            botocore_session=_BOTOCORE,
        )
        self.clients: dict[str, Any] = {}
        self.stubbers: dict[str, Stubber] = {}
        self.called: set[str] = set()  # "<signing name>:<Operation>" of every call made

    def __call__(self, service: str) -> Any:
        if service not in self.clients:
            client = self._session.client(service)
            stubber = Stubber(client)
            stubber.activate()
            signing = client.meta.service_model.signing_name
            # the IAM prefix of the action: CloudWatch signs as "monitoring"
            signing = IAM_PREFIXES.get(signing, signing)
            client.meta.events.register_first(
                "before-parameter-build.*.*",
                lambda model, **_: self.called.add(f"{signing}:{model.name}"),
            )
            self.clients[service] = client
            self.stubbers[service] = stubber
        return self.clients[service]

    def stub(self, service: str) -> Stubber:
        """The Stubber of ``service``, to queue answers on."""
        self(service)
        return self.stubbers[service]

    def make_clients(self, region: str, profile: str | None) -> StubbedAws:
        """Stands in for ``session_clients`` in ``main(argv, make_clients)``."""
        assert region == self.region
        return self

    def error(self, service: str, method: str, code: str, params: dict[str, Any] | None = None,
              message: str = "stubbed error", status: int = 400) -> None:  # fmt: skip
        """Queue an AWS error answer."""
        self.stub(service).add_client_error(
            method,
            service_error_code=code,
            service_message=message,
            http_status_code=status,
            expected_params=params,
        )

    def verify(self) -> None:
        """Every queued answer was used."""
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


# -- healthy answers, one call each ---------------------------------------------------------


def identity(aws: StubbedAws, account: str = ACCOUNT) -> None:
    aws.stub("sts").add_response(
        "get_caller_identity",
        {
            "Account": account,
            "Arn": f"arn:aws:sts::{account}:assumed-role/Admin/alice",
            "UserId": "AROA:alice",
        },
        {},
    )


def availability_zones(aws: StubbedAws, found: dict[str, str], wanted: list[str] | None = None,
                       states: dict[str, str] | None = None) -> None:  # fmt: skip
    """Answer the zone-id filter of ``wanted`` (default: the found IDs) with ``found`` (ID -> name)."""
    aws.stub("ec2").add_response(
        "describe_availability_zones",
        {
            "AvailabilityZones": [
                {
                    "ZoneId": zone_id,
                    "ZoneName": name,
                    "RegionName": aws.region,
                    "State": (states or {}).get(zone_id, "available"),
                    "ZoneType": "availability-zone",
                }
                for zone_id, name in found.items()
            ]
        },
        {"Filters": [{"Name": "zone-id", "Values": sorted(wanted or found)}]},
    )


def quota(instance_type: str, value: float, code: str = "L-0000TEST") -> dict[str, Any]:
    return {
        "ServiceCode": "sagemaker",
        "ServiceName": "Amazon SageMaker",
        "QuotaCode": code,
        "QuotaName": f"{instance_type} for cluster usage",
        "Value": value,
        "Adjustable": True,
    }


def quotas(aws: StubbedAws, values: dict[str, float], pages: int = 1) -> None:
    """The SageMaker quota list, with unrelated quotas mixed in, split over ``pages`` pages."""
    items = [quota(t, v, code=f"L-{i:08d}") for i, (t, v) in enumerate(sorted(values.items()))]
    items.insert(0, {"QuotaName": "ml.p5.48xlarge for training job usage", "Value": 99.0, "QuotaCode": "L-TRAIN001"})  # fmt: skip
    chunks = [items[i::pages] for i in range(pages)]
    for index, chunk in enumerate(chunks):
        response: dict[str, Any] = {"Quotas": chunk}
        params: dict[str, Any] = {"ServiceCode": "sagemaker"}
        if index + 1 < pages:
            response["NextToken"] = f"page-{index + 1}"
        if index:
            params["NextToken"] = f"page-{index}"
        aws.stub("service-quotas").add_response("list_service_quotas", response, params)


def training_plan(aws: StubbedAws, name: str, *, instance_type: str = "ml.p5.48xlarge",
                  az_id: str = "usw2-az2", count: int = 4, status: str = "Active",
                  targets: tuple[str, ...] = ("hyperpod-cluster",)) -> None:  # fmt: skip
    aws.stub("sagemaker").add_response(
        "describe_training_plan",
        {
            "TrainingPlanArn": f"arn:aws:sagemaker:{aws.region}:{ACCOUNT}:training-plan/{name}",
            "TrainingPlanName": name,
            "Status": status,
            "StartTime": NOW,
            "TargetResources": list(targets),
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": f"arn:aws:sagemaker:{aws.region}:{ACCOUNT}:reserved-capacity/{name}-1",
                    "InstanceType": instance_type,
                    "TotalInstanceCount": count,
                    "Status": "Active",
                    "AvailabilityZone": "us-west-2b",
                    "AvailabilityZoneId": az_id,
                }
            ],
        },
        {"TrainingPlanName": name},
    )


def vpc(aws: StubbedAws, vpc_id: str, state: str = "available") -> None:
    aws.stub("ec2").add_response(
        "describe_vpcs",
        {"Vpcs": [{"VpcId": vpc_id, "State": state, "CidrBlock": "10.0.0.0/16"}]},
        {"VpcIds": [vpc_id]},
    )


def subnet(aws: StubbedAws, subnet_id: str, vpc_id: str, az_id: str = "usw2-az2",
           public: bool = False) -> None:  # fmt: skip
    aws.stub("ec2").add_response(
        "describe_subnets",
        {
            "Subnets": [
                {
                    "SubnetId": subnet_id,
                    "VpcId": vpc_id,
                    "AvailabilityZoneId": az_id,
                    "AvailabilityZone": "us-west-2b",
                    "MapPublicIpOnLaunch": public,
                    "AvailableIpAddressCount": 65000,
                    "State": "available",
                }
            ]
        },
        {"SubnetIds": [subnet_id]},
    )


def self_rule(group_id: str) -> dict[str, Any]:
    return {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id}]}


def security_group(aws: StubbedAws, group_id: str, vpc_id: str, *, ingress: bool = True,
                   egress: bool = True) -> None:  # fmt: skip
    anywhere = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
    aws.stub("ec2").add_response(
        "describe_security_groups",
        {
            "SecurityGroups": [
                {
                    "GroupId": group_id,
                    "GroupName": "efa",
                    "VpcId": vpc_id,
                    "IpPermissions": [self_rule(group_id)] if ingress else [],
                    # 0.0.0.0/0 egress is always there; it does not satisfy EFA
                    "IpPermissionsEgress": [anywhere, *([self_rule(group_id)] if egress else [])],
                }
            ]
        },
        {"GroupIds": [group_id]},
    )


def file_system(aws: StubbedAws, fs_id: str, *, vpc_id: str, subnet_id: str, dns_name: str,
                mount_name: str, lifecycle: str = "AVAILABLE", fs_type: str = "LUSTRE") -> None:  # fmt: skip
    aws.stub("fsx").add_response(
        "describe_file_systems",
        {
            "FileSystems": [
                {
                    "FileSystemId": fs_id,
                    "FileSystemType": fs_type,
                    "Lifecycle": lifecycle,
                    "VpcId": vpc_id,
                    "SubnetIds": [subnet_id],
                    "DNSName": dns_name,
                    "LustreConfiguration": {
                        "MountName": mount_name,
                        "DeploymentType": "PERSISTENT_2",
                    },
                }
            ]
        },
        {"FileSystemIds": [fs_id]},
    )


def eks_cluster(aws: StubbedAws, name: str, *, vpc_id: str, version: str = "1.33",
                mode: str | None = "API_AND_CONFIG_MAP", status: str = "ACTIVE",
                account: str = ACCOUNT) -> None:  # fmt: skip
    cluster: dict[str, Any] = {
        "name": name,
        "arn": f"arn:aws:eks:{aws.region}:{account}:cluster/{name}",
        "version": version,
        "status": status,
        "resourcesVpcConfig": {"vpcId": vpc_id},
    }
    if mode is not None:
        cluster["accessConfig"] = {"authenticationMode": mode}
    aws.stub("eks").add_response("describe_cluster", {"cluster": cluster}, {"name": name})


def addon_versions(aws: StubbedAws, addon: str, kubernetes: str, offered: list[str],
                   pages: int = 1) -> None:  # fmt: skip
    chunks = [offered[i::pages] for i in range(pages)]
    for index, chunk in enumerate(chunks):
        response: dict[str, Any] = {
            "addons": [
                {
                    "addonName": addon,
                    "addonVersions": [
                        {"addonVersion": v, "compatibilities": [{"clusterVersion": kubernetes}]}
                        for v in chunk
                    ],
                }
            ]
        }
        params: dict[str, Any] = {"addonName": addon, "kubernetesVersion": kubernetes}
        if index + 1 < pages:
            response["nextToken"] = f"page-{index + 1}"
        if index:
            params["nextToken"] = f"page-{index}"
        aws.stub("eks").add_response("describe_addon_versions", response, params)


def eks_cluster_name(config: EnvironmentConfig) -> str:
    """The EKS cluster the app uses: the adopted one's name, else the one it creates."""
    arn = config.eks_settings.cluster_arn
    return arn.rsplit("/", 1)[-1] if arn else config.eks_cluster_name


def addon_absent(aws: StubbedAws, config: EnvironmentConfig, addon: str) -> None:
    """DescribeAddon: the add-on (or the cluster) is not there yet."""
    aws.error(
        "eks",
        "describe_addon",
        "ResourceNotFoundException",
        {"clusterName": eks_cluster_name(config), "addonName": addon},
    )


def addon_installed(aws: StubbedAws, config: EnvironmentConfig, addon: str, version: str) -> None:
    """DescribeAddon: ``addon`` runs ``version`` on the config's EKS cluster."""
    name = eks_cluster_name(config)
    aws.stub("eks").add_response(
        "describe_addon",
        {"addon": {"addonName": addon, "clusterName": name, "addonVersion": version,
                   "status": "ACTIVE"}},
        {"clusterName": name, "addonName": addon},
    )  # fmt: skip


# A schema every configuration passes (the healthy account's answer to DescribeAddonConfiguration).
PERMISSIVE_SCHEMA: dict[str, Any] = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}  # fmt: skip


def addon_configuration(aws: StubbedAws, addon: str, version: str,
                        schema: dict[str, Any] | str | None = None) -> None:  # fmt: skip
    """DescribeAddonConfiguration of ``addon`` ``version``: ``schema`` (a dict is sent as JSON
    text, a string as is; default: :data:`PERMISSIVE_SCHEMA`)."""
    text = schema if isinstance(schema, str) else json.dumps(schema or PERMISSIVE_SCHEMA)
    aws.stub("eks").add_response(
        "describe_addon_configuration",
        {"addonName": addon, "addonVersion": version, "configurationSchema": text},
        {"addonName": addon, "addonVersion": version},
    )  # fmt: skip


def cluster_absent(aws: StubbedAws, name: str) -> None:
    aws.error("sagemaker", "describe_cluster", "ResourceNotFound", {"ClusterName": name},
              message=f"Cluster {name} not found")  # fmt: skip


def cluster_arn(name: str, cluster_id: str = "abc123def456") -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{cluster_id}"


def described_cluster(name: str, *, status: str = "InService", groups: list[dict[str, Any]] | None = None,
                      cluster_id: str = "abc123def456", **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "ClusterArn": cluster_arn(name, cluster_id),
        "ClusterName": name,
        "ClusterStatus": status,
        "InstanceGroups": groups or [],
        **extra,
    }


def cluster_present(aws: StubbedAws, name: str, **kwargs: Any) -> None:
    aws.stub("sagemaker").add_response(
        "describe_cluster", described_cluster(name, **kwargs), {"ClusterName": name}
    )


def stack_resource(aws: StubbedAws, stack: str, physical_id: str) -> None:
    aws.stub("cloudformation").add_response(
        "describe_stack_resource",
        {
            "StackResourceDetail": {
                "StackName": stack,
                "LogicalResourceId": "HyperPodCluster",
                "PhysicalResourceId": physical_id,
                "ResourceType": "AWS::SageMaker::Cluster",
                "LastUpdatedTimestamp": NOW,
                "ResourceStatus": "CREATE_COMPLETE",
            }
        },
        {"StackName": stack, "LogicalResourceId": "HyperPodCluster"},
    )


def bootstrap(aws: StubbedAws, version: str | None = "30", *, stack: str = "CDKToolkit",
              qualifier: str = "hnb659fds", status: str = "UPDATE_COMPLETE") -> None:  # fmt: skip
    """A bootstrap stack and its version parameter (``version=None``: the parameter is missing)."""
    aws.stub("cloudformation").add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": stack, "CreationTime": NOW, "StackStatus": status}]},
        {"StackName": stack},
    )
    name = f"/cdk-bootstrap/{qualifier}/version"
    if version is None:
        aws.error("ssm", "get_parameter", "ParameterNotFound", {"Name": name})
        return
    aws.stub("ssm").add_response(
        "get_parameter",
        {"Parameter": {"Name": name, "Type": "String", "Value": version}},
        {"Name": name},
    )


def no_bootstrap_stack(aws: StubbedAws, stack: str = "CDKToolkit") -> None:
    aws.error("cloudformation", "describe_stacks", "ValidationError", {"StackName": stack},
              message=f"Stack with id {stack} does not exist")  # fmt: skip


# -- a whole healthy account for one config ------------------------------------------------

AZ_NAMES = {"usw2-az1": "us-west-2a", "usw2-az2": "us-west-2b", "usw2-az3": "us-west-2c", "usw2-az4": "us-west-2d"}  # fmt: skip


UNREACHABLE_ENDPOINT = "https://127.0.0.1:9"
# a CA certificate's PEM, base64-encoded as DescribeCluster gives it (a throwaway self-signed one)
FAKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJnVENDQVNlZ0F3SUJBZ0lVSFp4MUdYaXBYK29mSkxvTDZH"


def endpoint_only(aws: StubbedAws, name: str, endpoint: str = UNREACHABLE_ENDPOINT) -> None:
    """DescribeCluster of ``name`` with its API endpoint and CA (for the shared-cluster check)."""
    cluster = {"name": name, "endpoint": endpoint, "certificateAuthority": {"data": FAKE_CA}}
    aws.stub("eks").add_response("describe_cluster", {"cluster": cluster}, {"name": name})


def agent_image(aws: StubbedAws, config: EnvironmentConfig, *, found: bool = True,
                tag: str | None = None) -> None:  # fmt: skip
    """BatchGetImage of the health agent image the chart renders for ``config``."""
    from hyperpod_cdk.facts import chart

    (image,) = chart.component_images(
        "health_monitoring_agent", config.region, config.eks_settings.image_registry
    )
    host, _, rest = image.partition("/")
    repository, _, pinned = rest.rpartition(":")
    params = {
        "registryId": host.split(".")[0],
        "repositoryName": repository,
        "imageIds": [{"imageTag": tag or pinned}],
        "acceptedMediaTypes": ANY_MEDIA_TYPES,
    }
    answer: dict[str, Any] = (
        {"images": [{"imageId": {"imageTag": tag or pinned}, "imageManifest": "{}"}], "failures": []}
        if found
        else {"images": [], "failures": [{"imageId": {"imageTag": tag or pinned},
                                          "failureCode": "ImageNotFound",
                                          "failureReason": "Requested image not found"}]}
    )  # fmt: skip
    aws.stub("ecr").add_response("batch_get_image", answer, params)


def engine_versions(aws: StubbedAws, offered: list[str]) -> None:
    """DescribeDBEngineVersions of MySQL 8.4 in the region."""
    aws.stub("rds").add_response(
        "describe_db_engine_versions",
        {"DBEngineVersions": [{"Engine": "mysql", "EngineVersion": v} for v in offered]},
        {"Engine": "mysql", "EngineVersion": facts.ACCOUNTING_MYSQL_MAJOR_VERSION},
    )


def ami_dates(aws: StubbedAws, created: dict[str, str]) -> None:
    """DescribeImages of the groups' AMIs: image id -> CreationDate."""
    aws.stub("ec2").add_response(
        "describe_images",
        {"Images": [{"ImageId": i, "CreationDate": d} for i, d in created.items()]},
        {"ImageIds": sorted(created)},
    )


def key_policy(account: str = ACCOUNT, **statement: Any) -> dict[str, Any]:
    """A key policy: the account root may do everything (the default), or ``statement``."""
    default = {
        "Sid": "Enable IAM User Permissions",
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
        "Action": "kms:*",
        "Resource": "*",
    }
    return {"Version": "2012-10-17", "Statement": [statement or default]}


def ebs_key(aws: StubbedAws, key: str, *, account: str = ACCOUNT, state: str = "Enabled",
            spec: str = "SYMMETRIC_DEFAULT", policy: dict[str, Any] | None = None,
            readable: bool = True) -> None:  # fmt: skip
    """DescribeKey and GetKeyPolicy of a customer managed EBS key (``readable=False``: the
    policy read is denied, as for another account's key)."""
    aws.stub("kms").add_response(
        "describe_key",
        {
            "KeyMetadata": {
                "KeyId": key.rsplit("/", 1)[-1],
                "Arn": key,
                "AWSAccountId": account,
                "KeyState": state,
                "KeySpec": spec,
                "KeyUsage": "ENCRYPT_DECRYPT",
            }
        },
        {"KeyId": key},
    )
    if state != "Enabled" or spec != "SYMMETRIC_DEFAULT":
        return
    if not readable:
        aws.error(
            "kms",
            "get_key_policy",
            "AccessDeniedException",
            {"KeyId": key, "PolicyName": "default"},
        )
        return
    aws.stub("kms").add_response(
        "get_key_policy",
        {"Policy": json.dumps(policy or key_policy(account)), "PolicyName": "default"},
        {"KeyId": key, "PolicyName": "default"},
    )


def task_governance_types(aws: StubbedAws, region: str) -> None:
    """DescribeType answers that agree with the app's table in ``region``."""
    from hyperpod_cdk.facts.task_governance_types import NATIVE_REGIONS

    for type_name, regions in NATIVE_REGIONS.items():
        if region in regions:
            aws.stub("cloudformation").add_response(
                "describe_type",
                {"TypeName": type_name, "Type": "RESOURCE"},
                {"Type": "RESOURCE", "TypeName": type_name},
            )
        else:
            aws.error(
                "cloudformation",
                "describe_type",
                "TypeNotFoundException",
                {"Type": "RESOURCE", "TypeName": type_name},
            )


def observability_answers(aws: StubbedAws, config: EnvironmentConfig) -> None:
    """Queue what the observability checks of a healthy account read: the pinned extension
    version offered (Slurm), an adopted workspace ACTIVE with an alert manager definition."""
    from hyperpod_cdk.config.observability import extension_version, observability_settings

    settings = observability_settings(config)
    if settings is None:
        return
    if config.is_slurm:
        aws.stub("sagemaker").add_response(
            "list_cluster_extension_versions",
            {"ExtensionVersions": [{"ExtensionVersion": extension_version(settings)}]},
            {"ExtensionName": "sagemaker-observability", "MaxResults": 100},
        )
    if settings.prometheus_workspace_arn:
        workspace_id = settings.prometheus_workspace_arn.rsplit("/", 1)[-1]
        aws.stub("amp").add_response(
            "describe_workspace",
            {"workspace": {"workspaceId": workspace_id, "arn": settings.prometheus_workspace_arn,
                           "status": {"statusCode": "ACTIVE"}, "createdAt": "2026-11-01"}},
            {"workspaceId": workspace_id},
        )  # fmt: skip
        aws.stub("amp").add_response(
            "describe_alert_manager_definition",
            {"alertManagerDefinition": {"status": {"statusCode": "ACTIVE"}, "data": b"x",
                                        "createdAt": "2026-11-01", "modifiedAt": "2026-11-01"}},
            {"workspaceId": workspace_id},
        )  # fmt: skip


def healthy_account(
    aws: StubbedAws,
    config: EnvironmentConfig,
    *,
    account: str = ACCOUNT,
    leave_out: Collection[str] = (),
) -> None:
    """Queue the answers of an account where every preflight check of ``config`` passes, in the
    order the checks ask (each client keeps its own queue). ``leave_out`` names answers a test
    queues itself: ``availability_zones``, ``quotas``, ``bootstrap``, ``shared_cluster`` (the
    adopted EKS cluster's ListAddons and DescribeCluster), ``task_governance`` (DescribeType,
    ListAccessEntries), ``addon_upgrades`` (DescribeAddon of an add-on with an upgrade
    boundary), ``addon_configuration`` (DescribeAddonConfiguration of each configured add-on)."""
    from hyperpod_cdk.facts import versions
    from hyperpod_ops.addons import app_addons
    from hyperpod_ops.capacity import referenced_az_ids

    identity(aws, account)
    if "availability_zones" not in leave_out:
        availability_zones(
            aws, {az: AZ_NAMES.get(az, f"{config.region}-{az}") for az in referenced_az_ids(config)}
        )
    demand: dict[str, float] = {}
    for group in config.cluster.instance_groups:
        for instance_type in group.all_instance_types:
            demand[instance_type] = demand.get(instance_type, 0) + group.count
    if "quotas" not in leave_out:
        quotas(aws, demand)
    planned: dict[str, int] = {}
    for group in config.cluster.instance_groups:
        if group.training_plan_arn:
            planned[group.training_plan_arn] = planned.get(group.training_plan_arn, 0) + group.count
    described = set()
    for group in config.cluster.instance_groups:
        arn = group.training_plan_arn
        if arn and arn not in described:
            described.add(arn)
            training_plan(
                aws,
                arn.rsplit("/", 1)[-1],
                instance_type=group.all_instance_types[0],
                az_id=group.availability_zone_id or config.network.availability_zone_id,
                count=planned[arn],
            )
    net = config.network
    if net.vpc_id:
        vpc(aws, net.vpc_id)
        if net.compute_subnet_id:
            subnet(aws, net.compute_subnet_id, net.vpc_id, net.availability_zone_id)
        for az, subnet_id in net.additional_compute_subnet_ids.items():
            subnet(aws, subnet_id, net.vpc_id, az)
        if not config.is_slurm and config.eks_settings.cluster_arn is None:
            for index, subnet_id in enumerate(net.eks_subnet_ids):
                subnet(aws, subnet_id, net.vpc_id, f"usw2-az{index % 2 + 1}")
        settings = config.cluster.slurm_settings
        if config.is_slurm and settings.accounting_database:
            for index, subnet_id in enumerate(settings.accounting_subnet_ids):
                subnet(aws, subnet_id, net.vpc_id, f"usw2-az{index % 2 + 1}")
    for group_id in net.security_group_ids:
        security_group(aws, group_id, net.vpc_id or "vpc-0ffffffffffffffff")
    fsx = config.storage.fsx
    if fsx.enabled and fsx.file_system_id:
        fs_subnet = "subnet-0f5f5f5f5f5f5f5f5"
        file_system(
            aws,
            fsx.file_system_id,
            vpc_id=net.vpc_id or "vpc-0ffffffffffffffff",
            subnet_id=fs_subnet,
            dns_name=str(fsx.dns_name),
            mount_name=str(fsx.mount_name),
        )
        subnet(aws, fs_subnet, net.vpc_id or "vpc-0ffffffffffffffff", net.availability_zone_id)
    settings_eks = config.eks_settings
    if not config.is_slurm and settings_eks.cluster_arn:
        eks_cluster(
            aws,
            settings_eks.cluster_arn.rsplit("/", 1)[-1],
            vpc_id=net.vpc_id or "vpc-0ffffffffffffffff",
            version=settings_eks.kubernetes_version,
            account=account,
        )
    for addon in app_addons(config):
        kubernetes = settings_eks.kubernetes_version
        addon_versions(aws, addon, kubernetes, [versions.addon_version(addon, kubernetes)])
    if "addon_upgrades" not in leave_out:
        for addon in app_addons(config):
            if versions.upgrade_boundaries(addon):
                addon_absent(aws, config, addon)
    if "addon_configuration" not in leave_out:
        from hyperpod_ops.addon_configuration import configured_addons

        for item in configured_addons(config, account):
            addon_configuration(aws, item.addon, item.version)
    if not config.is_slurm and settings_eks.cluster_arn and "shared_cluster" not in leave_out:
        name = settings_eks.cluster_arn.rsplit("/", 1)[-1]
        aws.stub("eks").add_response("list_addons", {"addons": []}, {"clusterName": name})
        if settings_eks.dependencies.enabled():
            # an endpoint nothing answers on: the object listing is skipped (tests of it
            # connect to a fake API server instead)
            endpoint_only(aws, name)
    governance = None if config.is_slurm else settings_eks.task_governance
    if governance is not None and "task_governance" not in leave_out:
        task_governance_types(aws, config.region)
        if settings_eks.cluster_arn and governance.principal_namespaces():
            name = settings_eks.cluster_arn.rsplit("/", 1)[-1]
            aws.stub("eks").add_response(
                "list_access_entries", {"accessEntries": []}, {"clusterName": name}
            )
    if not config.is_slurm and settings_eks.dependencies.health_monitoring_agent:
        agent_image(aws, config)
    if config.is_slurm and config.cluster.slurm_settings.accounting_database:
        engine_versions(aws, [facts.ACCOUNTING_MYSQL_VERSION])
        cluster_absent(aws, config.cluster_name)
        images = sorted({g.image_id for g in config.cluster.instance_groups if g.image_id})
        if images:
            ami_dates(aws, dict.fromkeys(images, "2026-10-01T00:00:00.000Z"))
    for key in dict.fromkeys(g.ebs_kms_key_arn for g in config.cluster.instance_groups):
        if key:
            ebs_key(aws, key, account=account)
    from hyperpod_ops.alerts import named_rollback_alarms

    alarms = list(named_rollback_alarms(config))
    if alarms:
        aws.stub("cloudwatch").add_response(
            "describe_alarms",
            {"MetricAlarms": [{"AlarmName": name} for name in alarms], "CompositeAlarms": []},
            {
                "AlarmNames": alarms,
                "AlarmTypes": ["MetricAlarm", "CompositeAlarm"],
                "MaxRecords": 100,
            },
        )
    observability_answers(aws, config)
    from hyperpod_ops.grafana import grafana_wanted

    if grafana_wanted(config):
        aws.stub("sso-admin").add_response(
            "list_instances",
            {"Instances": [{"InstanceArn": "arn:aws:sso:::instance/ssoins-1234567890abcdef",
                            "IdentityStoreId": "d-1234567890", "Status": "ACTIVE"}]},
            {},
        )  # fmt: skip
        aws.stub("grafana").add_response("list_versions", {"grafanaVersions": ["9.4", "10.4"]}, {})
    if config.is_slurm:
        cluster_absent(aws, config.cluster_name)
    cluster_absent(aws, config.cluster_name)
    if "bootstrap" not in leave_out:
        bootstrap(aws, "30")
