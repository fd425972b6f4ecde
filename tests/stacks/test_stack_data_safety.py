"""Data safety (issue 5): stateful resources keep their logical ids, stacks and retention, and the
day-2 changes of every shipped config replace or delete none of them.

"Replace or delete" is read from the CloudFormation resource schemas cfn-lint ships (see
cfn_schema): a resource is lost when its logical id leaves its stack, or when a create-only
property changes, directly or through what it references.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cfn_schema import (
    STATEFUL_TYPES,
    SUPPLEMENTARY_CREATE_ONLY,
    create_only_pointers,
    replacement_findings,
    resource_schema,
    volatile_create_only_values,
)
from stack_testkit import PROJECT_ROOT, SHIPPED_CONFIGS, config_data, config_id, with_changes

from hyperpod_cdk import facts
from hyperpod_cdk.config import EnvironmentConfig, load_environment

FSX = "AWS::FSx::FileSystem"
DRA = "AWS::FSx::DataRepositoryAssociation"
BUCKET = "AWS::S3::Bucket"
DB_INSTANCE = "AWS::RDS::DBInstance"
DB_CLUSTER = "AWS::RDS::DBCluster"
DB_SUBNETS = "AWS::RDS::DBSubnetGroup"
SECRET = "AWS::SecretsManager::Secret"
KEY = "AWS::KMS::Key"
EKS = "AWS::EKS::Cluster"
HYPERPOD = "AWS::SageMaker::Cluster"
LOGS = "AWS::Logs::LogGroup"
PROMETHEUS = "AWS::APS::Workspace"

# -- pinned logical ids ----------------------------------------------------------------------

# Every stateful resource of each shipped config: stack kind -> logical id -> type. A construct
# renamed or moved by a refactor changes an id here, and CloudFormation would delete the old
# resource and create an empty one: change this table only together with a migration.
# The DB subnet group is listed as well: the database's create-only DBSubnetGroupName refers to it.
# Log groups are pinned where they hold the environment's own logs (flow logs, Prometheus); the
# Lambda log groups of CDK's handlers take their ids from CDK internals and are not pinned here
# (the day-2 comparison still covers them).
PINNED_IDS: dict[str, dict[str, dict[str, str]]] = {
    "default": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "egress": {"NetworkFlowLogs2BEC3212": LOGS},
        "storage": {
            "FileSystem": FSX,
            "LustreKeyB04314ED": KEY,
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
        },
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        "cluster": {"HyperPodCluster": HYPERPOD},
        "data-repositories": {"AssociationsDatasets922C32EA": DRA},
    },
    "eks-existing-cluster": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "storage": {
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
        },
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        "cluster": {"HyperPodCluster": HYPERPOD},
    },
    "eks-full": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "egress": {"NetworkFlowLogs2BEC3212": LOGS},
        "storage": {
            "FileSystem": FSX,
            "LustreKeyB04314ED": KEY,
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
        },
        "eks": {"EksCluster": EKS, "EksSecretsKey89C78FFD": KEY},
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        "cluster": {"HyperPodCluster": HYPERPOD, "AlertsKey9E1197AF": KEY},
        "eks-addons": {
            "AddonsPrometheusWorkspaceDEF592DB": PROMETHEUS,
            "AddonsPrometheusLogsD506ADD8": LOGS,
            # eks.addons.inference: the TLS certificate bucket and its access logs
            "InferenceTlsBucketE4784458": BUCKET,
            "InferenceTlsBucketAccessLogsE38B981C": BUCKET,
        },
        "data-repositories": {"AssociationsDatasets922C32EA": DRA},
    },
    "eks-minimal": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "egress": {"NetworkFlowLogs2BEC3212": LOGS},
        "storage": {
            "FileSystem": FSX,
            "LustreKeyB04314ED": KEY,
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
        },
        "eks": {"EksCluster": EKS, "EksSecretsKey89C78FFD": KEY},
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        "cluster": {"HyperPodCluster": HYPERPOD},
    },
    "existing-vpc-fsx": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "storage": {
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
        },
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        "cluster": {"HyperPodCluster": HYPERPOD},
        "data-repositories": {"AssociationsShared35DEF6E9": DRA},
    },
    "full": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "egress": {"NetworkFlowLogs2BEC3212": LOGS},
        "storage": {
            "FileSystem": FSX,
            "LustreKeyB04314ED": KEY,
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
            "SlurmAccountingDatabase": DB_INSTANCE,
            "SlurmAccountingInstanceSubnetGroup96ECB4C5": DB_SUBNETS,
            # CDK's DatabaseSecret: the suffix hashes the password rules, not content.
            "researchfullstorageSlurmAccountingInstanceSecretB0F507A93fdaad7efa858a3daf9490cf0a702aeb": SECRET,
        },
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        # the alerts key encrypts the topic and the log bridge's dead letters
        "cluster": {"HyperPodCluster": HYPERPOD, "AlertsKey9E1197AF": KEY},
        # issue 31: moved from the cluster stack with the same logical ids (RETAIN keeps the
        # deployed workspace; docs/updating.md says how to adopt it by ARN)
        "metrics": {
            "MetricsPrometheusWorkspace175FEA03": PROMETHEUS,
            "MetricsPrometheusLogs1752E3A2": LOGS,
        },
        "data-repositories": {
            "AssociationsDatasets922C32EA": DRA,
            "AssociationsCheckpoints73D3A0AA": DRA,
            "AssociationsReferenceA4E3732E": DRA,
        },
    },
    "minimal": {
        "network": {"NetworkLogsKey459D2BBF": KEY},
        "egress": {"NetworkFlowLogs2BEC3212": LOGS},
        "storage": {
            "FileSystem": FSX,
            "LustreKeyB04314ED": KEY,
            "DataBucket": BUCKET,
            "DataKey5F086070": KEY,
            "DataAccessLogsC0C25EE4": BUCKET,
        },
        "nodes": {"ScriptsBucketC04F7688": BUCKET, "ScriptsAccessLogsAAB6C044": BUCKET},
        "cluster": {"HyperPodCluster": HYPERPOD},
    },
}

# Every resource of these types must be in the table (a new one is pinned when it is added).
PINNED_TYPES = {
    FSX, DRA, BUCKET, DB_INSTANCE, DB_CLUSTER, DB_SUBNETS, SECRET, KEY, EKS, HYPERPOD, PROMETHEUS,
}  # fmt: skip


def test_the_pinned_table_covers_exactly_the_shipped_configs() -> None:
    assert sorted(PINNED_IDS) == sorted(config_id(p) for p in SHIPPED_CONFIGS)


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_stateful_resources_have_their_pinned_logical_ids(path: Path, synthesized) -> None:
    synth = synthesized(path)
    want = {
        (synth.stack_name(kind), logical_id): resource_type
        for kind, ids in PINNED_IDS[config_id(path)].items()
        for logical_id, resource_type in ids.items()
    }
    found = {
        (stack, logical_id): resource["Type"]
        for stack, template in synth.templates.items()
        for logical_id, resource in template.get("Resources", {}).items()
    }
    missing = {key: t for key, t in want.items() if found.get(key) != t}
    unpinned = {key: t for key, t in found.items() if t in PINNED_TYPES and key not in want}
    assert not missing, f"pinned stateful resources renamed, moved or removed: {missing}"
    assert not unpinned, (
        f"stateful resources with no pinned id (add them to PINNED_IDS): {unpinned}"
    )


# FSx, the database, every KMS key (each encrypts data) and every Prometheus workspace (the
# metrics' history, on both orchestrators) anywhere; buckets of the storage stack (the data
# bucket and its access logs). The lifecycle bucket of the nodes stack holds only what the app
# uploads again, so it may go with its stack.
RETAINED_TYPES = {FSX, DB_INSTANCE, DB_CLUSTER, KEY, PROMETHEUS}


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_data_resources_are_retained_by_default(path: Path, synthesized) -> None:
    synth = synthesized(path)
    # the default: no shipped config says destroy
    assert synth.config.storage.fsx.removal_policy == "retain"
    policies = {
        f"{stack}/{logical_id}": (
            resource.get("DeletionPolicy"),
            resource.get("UpdateReplacePolicy"),
        )
        for stack, template in synth.templates.items()
        for logical_id, resource in template.get("Resources", {}).items()
        if resource["Type"] in RETAINED_TYPES
        or (resource["Type"] == BUCKET and stack == synth.stack_name("storage"))
    }
    assert f"{synth.stack_name('storage')}/DataBucket" in policies
    not_retained = {k: v for k, v in policies.items() if v != ("Retain", "Retain")}
    assert not not_retained, f"(DeletionPolicy, UpdateReplacePolicy) not Retain: {not_retained}"


# -- day-2 changes ---------------------------------------------------------------------------

# A change to a config's YAML mapping (``with_changes`` dotted keys), or why it does not apply.
ChangeBuilder = Callable[[EnvironmentConfig, Mapping[str, Any]], dict[str, Any] | str]


@dataclass(frozen=True)
class Day2Change:
    """A change an operator makes to a running environment."""

    name: str
    build: ChangeBuilder

    def __str__(self) -> str:
        return self.name


def _groups(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(data["cluster"]["instance_groups"])


def _dras(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    fsx = (data.get("storage") or {}).get("fsx") or {}
    return list(fsx.get("data_repository_associations") or [])


def scale_group(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """The last compute (Slurm) or worker (EKS) group gets one more instance."""
    groups = config.cluster.instance_groups
    index = max(i for i, g in enumerate(groups) if g.effective_node_type == "Compute")
    return {f"cluster.instance_groups[{index}].count": groups[index].count + 1}


def add_group(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """A new compute (Slurm: a new partition of the same name) or worker group."""
    group = {"name": "day2", "instance_type": "ml.m5.2xlarge", "count": 1}
    return {"cluster.instance_groups": [*_groups(data), group]}


def add_dra(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """Another file system path linked to a new prefix of the data bucket."""
    fsx = config.storage.fsx
    if not fsx.enabled:
        return "storage.fsx.enabled is false: no file system to link to S3"
    if len(fsx.data_repository_associations) >= facts.MAX_DATA_REPOSITORY_ASSOCIATIONS:
        return "the file system has the most associations FSx allows"
    taken = [d.file_system_path for d in fsx.data_repository_associations]
    assert all(not p.startswith("/day2") for p in taken), taken  # the new path overlaps none
    new = {"file_system_path": "/day2", "s3_prefix": "day2/"}
    return {"storage.fsx.data_repository_associations": [*_dras(data), new]}


def grow_fsx(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """The file system grows to the next capacity PERSISTENT_2 (and EFA) allows."""
    fsx = config.storage.fsx
    if not fsx.enabled:
        return "storage.fsx.enabled is false: no file system to grow"
    if fsx.file_system_id is not None:
        return "storage.fsx.file_system_id adopts a file system: the app does not size it"
    if fsx.efa_enabled:
        step = facts.FSX_EFA_CAPACITY_MULTIPLE[fsx.throughput_per_tib]
    else:
        step = facts.FSX_PERSISTENT_2_CAPACITY_STEP
    capacity = (fsx.storage_capacity_gib // step + 1) * step
    if capacity > facts.FSX_MAX_CAPACITY_GIB:
        return "the file system has the largest capacity FSx allows"
    return {"storage.fsx.storage_capacity_gib": capacity}


def add_label(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """EKS: a Kubernetes label on the first group. Slurm has no node labels (a group's only
    scheduler label is its single partition, which cannot be added to): a tag is added instead."""
    if config.is_slurm:
        return {"tags": {**(data.get("tags") or {}), "day2": "added"}}
    labels = dict(_groups(data)[0].get("labels") or {})
    return {"cluster.instance_groups[0].labels": {**labels, "example.com/day2": "added"}}


def add_endpoint(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """Another interface VPC endpoint (a created or an adopted VPC)."""
    present = list(config.network.interface_endpoints)
    if config.network.closed_network:
        return "closed_network creates every endpoint the environment needs already"
    service = next((s for s in ("ssm", "logs", "sts", "kms", "fsx") if s not in present), None)
    if service is None:
        return "every endpoint this change would add is there already"
    return {"network.interface_endpoints": [*present, service]}


def all_changes(config: EnvironmentConfig, data: Mapping[str, Any]) -> dict[str, Any] | str:
    """Every change above that applies, at once: the group is added first, so the changes that
    address a group by index apply to the new list."""
    merged: dict[str, Any] = {}
    for change in SINGLE_CHANGES:
        changes = change.build(config, data)
        if isinstance(changes, dict):
            merged.update(changes)
    return merged


SINGLE_CHANGES = (
    Day2Change("add-group", add_group),
    Day2Change("scale-group", scale_group),
    Day2Change("add-dra", add_dra),
    Day2Change("grow-fsx", grow_fsx),
    Day2Change("add-label", add_label),
    Day2Change("add-endpoint", add_endpoint),
)
ALL_CHANGES = Day2Change("all", all_changes)

# Each change alone on the richest Slurm and EKS configs, so a failure names the change; every
# shipped config also gets all of its changes at once (one synth each keeps the suite fast).
PER_CHANGE_BASES = ("full", "eks-full")
DAY2_CASES = [
    pytest.param(path, change, id=f"{config_id(path)}-{change}")
    for path in SHIPPED_CONFIGS
    for change in (
        (*SINGLE_CHANGES, ALL_CHANGES) if config_id(path) in PER_CHANGE_BASES else (ALL_CHANGES,)
    )
]


def _changes(path: Path, change: Day2Change) -> dict[str, Any] | str:
    return change.build(load_environment(path, PROJECT_ROOT), config_data(path))


@pytest.mark.parametrize("change", SINGLE_CHANGES, ids=str)
def test_each_day2_change_applies_to_a_shipped_config(change: Day2Change) -> None:
    applies = [p for p in SHIPPED_CONFIGS if isinstance(_changes(p, change), dict)]
    assert applies, f"{change} applies to no shipped config"
    assert any(config_id(p) in PER_CHANGE_BASES for p in applies), (
        f"{change} is never synthesized alone"
    )


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
@pytest.mark.parametrize("change", SINGLE_CHANGES, ids=str)
def test_day2_change_is_a_valid_config(path: Path, change: Day2Change) -> None:
    from hyperpod_cdk.config.loader import validate

    changes = _changes(path, change)
    if isinstance(changes, str):
        pytest.skip(f"{change} does not apply to {config_id(path)}: {changes}")
    validate(with_changes(config_data(path), changes), PROJECT_ROOT)  # raises ConfigError


@pytest.mark.parametrize(("path", "change"), DAY2_CASES)
def test_day2_change_replaces_or_deletes_no_stateful_resource(
    path: Path, change: Day2Change, synthesized, build_variant
) -> None:
    changes = _changes(path, change)
    if isinstance(changes, str):
        pytest.skip(f"{change} does not apply to {config_id(path)}: {changes}")
    base = synthesized(path)
    # The compliance packs leave the templates as they are (acknowledgments are assembly
    # metadata); without them a variant synthesizes faster.
    variant = build_variant(changes, base=config_id(path), nag=False)
    assert variant.templates != base.templates, f"{changes} changed no template"
    findings = replacement_findings(base.templates, variant.templates)
    assert not findings, f"{change} on {config_id(path)} replaces or deletes:\n" + "\n".join(
        map(str, findings)
    )


def test_the_comparison_catches_a_replacing_change_in_real_templates(
    synthesized, build_variant
) -> None:
    """A new HyperPod subnet CIDR replaces the subnet, and through it FSx and the cluster (both
    reach it by a weak cross-stack reference): the day-2 test would see such a change."""
    base = synthesized("minimal")
    variant = build_variant({"network.compute_cidr": "10.3.0.0/16"}, base="minimal", nag=False)
    found = {
        f.logical_id: f.problem for f in replacement_findings(base.templates, variant.templates)
    }
    assert sorted(found) == ["FileSystem", "HyperPodCluster"], found
    assert all("which is replaced (create-only /properties/CidrBlock" in p for p in found.values())


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_no_asset_hash_reaches_a_create_only_property(path: Path, synthesized) -> None:
    assert volatile_create_only_values(synthesized(path).templates) == []


# -- the schemas and the comparison itself ---------------------------------------------------


@pytest.mark.parametrize("resource_type", sorted(STATEFUL_TYPES))
def test_every_stateful_type_has_a_cloudformation_schema(resource_type: str) -> None:
    schema = resource_schema(resource_type)
    assert schema is not None and schema["typeName"] == resource_type
    for pointer in SUPPLEMENTARY_CREATE_ONLY.get(resource_type, ()):
        assert pointer.split("/")[2] in schema["properties"], pointer


def test_create_only_properties_come_from_the_schemas() -> None:
    assert {"/properties/SubnetIds", "/properties/KmsKeyId"} <= set(create_only_pointers(FSX))
    assert {
        "/properties/ClusterName",
        "/properties/VpcConfig",
        "/properties/Orchestrator/Eks",
    } <= set(create_only_pointers(HYPERPOD))
    assert "/properties/FileSystemPath" in create_only_pointers(DRA)
    assert "/properties/LustreConfiguration/EfaEnabled" in create_only_pointers(FSX)
    assert "/properties/StorageCapacity" not in create_only_pointers(FSX)  # FSx grows in place
    assert create_only_pointers(KEY) == ()  # a key is lost only by removal


def _environment() -> dict[str, dict[str, Any]]:
    """Three hand-made stacks: a subnet exported two ways, FSx and a HyperPod cluster using it."""
    retain = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    return {
        "env-network": {
            "Resources": {
                "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
                "Subnet": {
                    "Type": "AWS::EC2::Subnet",
                    "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.1.0.0/16"},
                },
            },
            "Outputs": {
                "SubnetOut": {"Value": {"Ref": "Subnet"}, "Export": {"Name": "env-subnet"}}
            },
        },
        "env-storage": {
            "Resources": {
                "Key": {"Type": KEY, **retain, "Properties": {"EnableKeyRotation": True}},
                "FileSystem": {
                    "Type": FSX,
                    **retain,
                    "Properties": {
                        "FileSystemType": "LUSTRE",
                        "StorageCapacity": 1200,
                        "KmsKeyId": {"Ref": "Key"},
                        "SubnetIds": [
                            {
                                "Fn::GetStackOutput": {
                                    "StackName": "env-network",
                                    "OutputName": "SubnetOut",
                                }
                            }
                        ],
                        "LustreConfiguration": {"DeploymentType": "PERSISTENT_2"},
                        "Tags": [{"Key": "team", "Value": "research"}],
                    },
                },
            }
        },
        "env-cluster": {
            "Resources": {
                "Cluster": {
                    "Type": HYPERPOD,
                    "Properties": {
                        "ClusterName": "env",
                        "VpcConfig": {
                            "SecurityGroupIds": ["sg-0123456789abcdef0"],
                            "Subnets": [{"Fn::ImportValue": "env-subnet"}],
                        },
                    },
                }
            }
        },
    }


def _rename(mapping: dict[str, Any], old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


def _edit(change: Callable[[dict[str, Any]], None]) -> dict[str, dict[str, Any]]:
    env = _environment()
    change(env)
    return env


def _storage(env: dict[str, Any]) -> dict[str, Any]:
    return env["env-storage"]["Resources"]


def _fsx(env: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = _storage(env)["FileSystem"]["Properties"]
    return props


def _rename_key(env: dict[str, Any]) -> None:
    _rename(_storage(env), "Key", "Key2")
    _fsx(env)["KmsKeyId"] = {"Ref": "Key2"}


def _rename_output(env: dict[str, Any]) -> None:
    _rename(env["env-network"]["Outputs"], "SubnetOut", "SubnetOut2")
    _fsx(env)["SubnetIds"][0]["Fn::GetStackOutput"]["OutputName"] = "SubnetOut2"


def _point_output_elsewhere(env: dict[str, Any]) -> None:
    resources = env["env-network"]["Resources"]
    resources["Subnet2"] = resources["Subnet"]
    env["env-network"]["Outputs"]["SubnetOut"]["Value"] = {"Ref": "Subnet2"}


def _replace_subnet(env: dict[str, Any]) -> None:
    env["env-network"]["Resources"]["Subnet"]["Properties"]["CidrBlock"] = "10.2.0.0/16"


def _rename_export(env: dict[str, Any]) -> None:
    env["env-network"]["Outputs"]["SubnetOut"]["Export"]["Name"] = "env-subnet-2"
    vpc_config = env["env-cluster"]["Resources"]["Cluster"]["Properties"]["VpcConfig"]
    vpc_config["Subnets"] = [{"Fn::ImportValue": "env-subnet-2"}]


def _set(target: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any):
    return lambda env: target(env).__setitem__(key, value)


def _move_file_system(env: dict[str, Any]) -> None:
    env["env-cluster"]["Resources"]["FileSystem"] = _storage(env).pop("FileSystem")


LOSSES = {
    "removed": (lambda env: _storage(env).pop("FileSystem"), {"FileSystem": "removed from stack"}),
    "renamed": (
        lambda env: _rename(_storage(env), "FileSystem", "SharedFileSystem"),
        {"FileSystem": "removed from stack env-storage"},
    ),
    "moved to another stack": (
        _move_file_system,
        {"FileSystem": "removed from stack env-storage (the id is now in env-cluster)"},
    ),
    "create-only property changed": (
        _set(_fsx, "SubnetIds", ["subnet-0123456789abcdef0"]),
        {"FileSystem": "create-only /properties/SubnetIds changed"},
    ),
    "nested create-only property changed": (
        _set(
            lambda env: env["env-cluster"]["Resources"]["Cluster"]["Properties"]["VpcConfig"],
            "SecurityGroupIds",
            ["sg-0fedcba9876543210"],
        ),
        {"Cluster": "create-only /properties/VpcConfig changed"},
    ),
    "supplementary create-only property changed": (
        _set(lambda env: _fsx(env)["LustreConfiguration"], "EfaEnabled", True),
        {"FileSystem": "create-only /properties/LustreConfiguration/EfaEnabled changed"},
    ),
    "Ref target renamed": (
        _rename_key,
        {"Key": "removed", "FileSystem": "create-only /properties/KmsKeyId changed"},
    ),
    "output renamed": (_rename_output, {"FileSystem": "/properties/SubnetIds changed"}),
    "output points elsewhere": (
        _point_output_elsewhere,
        {
            "FileSystem": "refers to output env-network.SubnetOut, which changed",
            "Cluster": "refers to export env-subnet, which changed",
        },
    ),
    "referenced resource replaced": (
        _replace_subnet,
        {
            "FileSystem": "resolves through Subnet of env-network, which is replaced "
            "(create-only /properties/CidrBlock changed",
            "Cluster": "refers to export env-subnet, which resolves through Subnet",
        },
    ),
    "export renamed": (_rename_export, {"Cluster": "create-only /properties/VpcConfig changed"}),
    "export removed": (
        lambda env: env["env-network"]["Outputs"]["SubnetOut"].pop("Export"),
        {"Cluster": "refers to export env-subnet, which is no longer exported"},
    ),
    "type changed": (
        lambda env: _storage(env)["FileSystem"].__setitem__("Type", "AWS::FSx::Volume"),
        {"FileSystem": "type changed"},
    ),
    "retention dropped": (
        lambda env: _storage(env)["FileSystem"].__setitem__("DeletionPolicy", "Delete"),
        {"FileSystem": "DeletionPolicy changed: Retain -> Delete"},
    ),
}


@pytest.mark.parametrize("case", sorted(LOSSES))
def test_the_comparison_detects_a_lost_resource(case: str) -> None:
    change, expected = LOSSES[case]
    findings = replacement_findings(_environment(), _edit(change))
    found = {f.logical_id: f.problem for f in findings}
    assert sorted(found) == sorted(expected), findings
    for logical_id, problem in expected.items():
        assert problem in found[logical_id], found[logical_id]


def test_the_comparison_accepts_in_place_updates() -> None:
    def grow_and_tag(env: dict[str, Any]) -> None:
        _fsx(env)["StorageCapacity"] = 2400
        _fsx(env)["Tags"].append({"Key": "day2", "Value": "added"})
        env["env-network"]["Resources"]["Endpoint"] = {"Type": "AWS::EC2::VPCEndpoint"}
        env["env-cluster"]["Resources"]["Cluster"]["Properties"]["InstanceGroups"] = []

    assert replacement_findings(_environment(), _edit(grow_and_tag)) == []


def test_a_policy_that_keeps_more_is_no_loss() -> None:
    """Delete -> Retain (the accounting secret's fix, security review M3) keeps more than before:
    not a finding; the reverse is (``retention dropped`` above)."""
    before = _environment()
    for resource in before["env-storage"]["Resources"].values():
        resource["DeletionPolicy"] = resource["UpdateReplacePolicy"] = "Delete"
    after = copy.deepcopy(before)
    for resource in after["env-storage"]["Resources"].values():
        resource["DeletionPolicy"] = resource["UpdateReplacePolicy"] = "Retain"
    assert replacement_findings(before, after) == []
    assert {f.problem for f in replacement_findings(after, before)} == {
        "DeletionPolicy changed: Retain -> Delete; UpdateReplacePolicy changed: Retain -> Delete"
    }


def test_volatile_values_in_create_only_properties_are_reported() -> None:
    env = _environment()
    asset = "a" * 64
    env["env-network"]["Resources"]["Subnet"]["Properties"]["AvailabilityZone"] = asset
    found = volatile_create_only_values(env)
    assert any(f"Subnet/properties/AvailabilityZone: {asset}" in item for item in found), found
    assert volatile_create_only_values(_environment()) == []


# -- the accounting database's engine change (issue 15) ---------------------------------------

MYSQL80_STORAGE = Path(__file__).parent / "fixtures" / "full-storage-mysql80.json"


def test_the_mysql_84_upgrade_keeps_the_accounting_database(synthesized) -> None:
    """An environment deployed with MySQL 8.0 (the storage stack of config/examples/full.yaml as
    it was before the change, scrubbed) moves to 8.4 in place: the instance keeps its logical id
    and every create-only property, so CloudFormation upgrades it (AllowMajorVersionUpgrade)
    instead of replacing it; only the option group, which is stateless, is new."""
    import json

    from stack_testkit import scrub_template

    synth = synthesized("full")
    stack = synth.stack_name("storage")
    before = {stack: json.loads(MYSQL80_STORAGE.read_text())}
    after = {stack: scrub_template(synth.template("storage"))}
    old = before[stack]["Resources"]["SlurmAccountingDatabase"]["Properties"]
    new = after[stack]["Resources"]["SlurmAccountingDatabase"]["Properties"]
    assert old["EngineVersion"].startswith("8.0.") and new["EngineVersion"].startswith("8.4.")
    assert new["AllowMajorVersionUpgrade"] is True
    assert new["EngineLifecycleSupport"] == "open-source-rds-extended-support-disabled"
    findings = replacement_findings(before, after)
    assert findings == [], "\n".join(map(str, findings))
