"""Preflight checks of the instance groups that only the account can answer: the customer
managed EBS keys, the AMI under an external Slurm accounting database, and the Slurm partition
names of a deployed cluster."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any

from hyperpod_cdk import facts
from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_ops.aws import call_or_none, error_code
from hyperpod_ops.check import Check, failed, passed, skipped

EBS_KEYS = "ebs keys"
ACCOUNTING_AMI = "accounting database AMI"
PARTITIONS = "slurm partitions"

_ACCESS_DENIED = {"AccessDenied", "AccessDeniedException"}


# -- customer managed EBS keys -----------------------------------------------------------------


def check_ebs_keys(config: EnvironmentConfig, kms: Any) -> list[Check]:
    """Each ``ebs_kms_key_arn`` is an enabled symmetric encryption key whose policy lets this
    account (through IAM, where the app grants the execution role ``kms:CreateGrant``) or the
    configured execution role create grants, without an encryption-context condition: HyperPod
    passes none (SageMaker developer guide, customer managed KMS keys for HyperPod)."""
    keys: dict[str, list[int]] = {}
    for index, group in enumerate(config.cluster.instance_groups):
        if group.ebs_kms_key_arn:
            keys.setdefault(group.ebs_kms_key_arn, []).append(index)
    if not keys:
        return [skipped(EBS_KEYS, "no instance group has ebs_kms_key_arn")]
    return [_check_key(config, kms, key, indices) for key, indices in keys.items()]


def _check_key(config: EnvironmentConfig, kms: Any, key: str, indices: list[int]) -> Check:
    groups = config.cluster.instance_groups
    name = f"{EBS_KEYS}: {', '.join(groups[i].name for i in indices)}"
    where = " and ".join(f"cluster.instance_groups[{i}].ebs_kms_key_arn" for i in indices)
    described = call_or_none(kms.describe_key, ["NotFoundException"], KeyId=key)
    if described is None:
        return failed(name, f"{key} does not exist", f"name an existing key in {where}")
    meta = described.get("KeyMetadata", {})
    problems = []
    if meta.get("KeyState") != "Enabled":
        problems.append(f"its state is {meta.get('KeyState')}, not Enabled")
    if meta.get("KeySpec", "SYMMETRIC_DEFAULT") != "SYMMETRIC_DEFAULT":
        problems.append(f"it is {meta.get('KeySpec')}; EBS takes symmetric keys only")
    if meta.get("KeyUsage", "ENCRYPT_DECRYPT") != "ENCRYPT_DECRYPT":
        problems.append(f"its usage is {meta.get('KeyUsage')}, not ENCRYPT_DECRYPT")
    if problems:
        return failed(
            name, f"{key}: {'; '.join(problems)}", f"use an enabled symmetric key in {where}"
        )
    try:
        text = kms.get_key_policy(KeyId=meta.get("Arn", key), PolicyName="default")["Policy"]
    except Exception as exc:
        if error_code(exc) in _ACCESS_DENIED:
            return skipped(
                name,
                f"cannot read the policy of {key} (kms:GetKeyPolicy denied; another account's "
                "key?): make sure it lets the execution role create grants",
            )
        raise
    account = config.account or str(meta.get("AWSAccountId", ""))
    principals = {f"arn:aws:iam::{account}:root", account, "*"}
    principals |= {r for r in _configured_roles(config) if r}
    verdict = _grant_verdict(json.loads(text), principals)
    if verdict == "allowed":
        return passed(
            name, f"{key} is enabled and its policy lets the execution role create grants"
        )
    if verdict == "context":
        return failed(
            name,
            f"the policy of {key} lets this account create grants only with an encryption-context "
            "condition, and HyperPod passes no encryption context",
            "drop the kms:EncryptionContext conditions from the statement that allows "
            "kms:CreateGrant",
        )
    return failed(
        name,
        f"the policy of {key} lets neither account {account} (root) nor the execution role "
        "create grants: HyperPod creates one for the node volumes",
        f"allow kms:CreateGrant and kms:DescribeKey to arn:aws:iam::{account}:root (or the "
        "execution role) in the key policy",
    )


def _configured_roles(config: EnvironmentConfig) -> list[str | None]:
    return [
        config.cluster.execution_role_arn,
        *(g.execution_role_arn for g in config.cluster.instance_groups),
    ]


def _grant_verdict(policy: Mapping[str, Any], principals: set[str]) -> str:
    """ "allowed", "context" (allowed only under an encryption-context condition) or "denied"."""
    verdict = "denied"
    statements = policy.get("Statement", [])
    for statement in [statements] if isinstance(statements, dict) else statements:
        if statement.get("Effect") != "Allow" or not _matches_action(statement, "kms:CreateGrant"):
            continue
        if not _names_principal(statement.get("Principal"), principals):
            continue
        conditions = json.dumps(statement.get("Condition", {})).lower()
        if "kms:encryptioncontext" in conditions:
            verdict = "context"
            continue
        return "allowed"
    return verdict


def _matches_action(statement: Mapping[str, Any], action: str) -> bool:
    actions = statement.get("Action", [])
    for pattern in [actions] if isinstance(actions, str) else actions:
        if fnmatch.fnmatchcase(action.lower(), str(pattern).lower()):
            return True
    return False


def _names_principal(principal: Any, wanted: set[str]) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        return False
    aws = principal.get("AWS", [])
    return any(p in wanted for p in ([aws] if isinstance(aws, str) else aws))


# -- the AMI under an external accounting database ----------------------------------------------


def check_accounting_ami(config: EnvironmentConfig, ec2: Any, sagemaker: Any) -> list[Check]:
    """With ``cluster.slurm.accounting_database``, every group's AMI is one HyperPod released
    after :data:`facts.ACCOUNTING_MIN_AMI_DATE`: a group's ``image_id``, or the AMI the deployed
    cluster's group runs; a new group without ``image_id`` gets HyperPod's current AMI."""
    if not config.is_slurm or not config.cluster.slurm_settings.accounting_database:
        return [skipped(ACCOUNTING_AMI, "cluster.slurm.accounting_database is off")]
    deployed = _deployed_groups(config, sagemaker)
    images: dict[str, list[str]] = {}
    defaults = []
    for group in config.cluster.instance_groups:
        image = group.image_id or deployed.get(group.name, {}).get("CurrentImageId")
        if image:
            images.setdefault(image, []).append(group.name)
        else:
            defaults.append(group.name)
    checks = []
    if defaults:
        checks.append(
            passed(
                ACCOUNTING_AMI,
                f"{', '.join(defaults)}: new, without image_id: HyperPod's current AMI",
            )
        )
    found = {}
    if images:
        answer = ec2.describe_images(ImageIds=sorted(images))
        found = {i.get("ImageId"): i for i in answer.get("Images", [])}
    minimum = facts.ACCOUNTING_MIN_AMI_DATE
    for image, groups in images.items():
        name = f"{ACCOUNTING_AMI}: {', '.join(groups)}"
        created = str(found.get(image, {}).get("CreationDate", ""))[:10]
        if not created:
            checks.append(skipped(name, f"cannot read the creation date of {image}"))
        elif created > minimum:
            checks.append(passed(name, f"{image} was released on {created}"))
        else:
            checks.append(
                failed(
                    name,
                    f"{image} was released on {created}; an external accounting database needs a "
                    f"HyperPod AMI released after {minimum}",
                    "set image_id to a newer HyperPod AMI (or leave it out), or update the "
                    "running groups first: aws sagemaker update-cluster-software",
                )
            )
    return checks


def _deployed_groups(config: EnvironmentConfig, sagemaker: Any) -> dict[str, Mapping[str, Any]]:
    cluster = call_or_none(
        sagemaker.describe_cluster, ["ResourceNotFound"], ClusterName=config.cluster_name
    )
    return {g.get("InstanceGroupName"): g for g in (cluster or {}).get("InstanceGroups", [])}


# -- Slurm partitions of a deployed cluster ------------------------------------------------------


def check_partitions(config: EnvironmentConfig, sagemaker: Any) -> list[Check]:
    """On an update of a Slurm cluster: no deployed group changes its ``NodeType`` (HyperPod
    refuses it; AWS doc "sagemaker-hyperpod-ref", Slurm configuration), and which partitions the
    update adds or renames, since Slurm jobs name them (the built-in ``dev`` partition is a
    config error already)."""
    if not config.is_slurm:
        return [skipped(PARTITIONS, "the cluster is orchestrated by EKS")]
    deployed = _deployed_groups(config, sagemaker)
    if not deployed:
        return [passed(PARTITIONS, f"{config.cluster_name} is new: every partition name is free")]
    problems, renamed = [], []
    for group in config.cluster.instance_groups:
        slurm = deployed.get(group.name, {}).get("SlurmConfig", {})
        was = slurm.get("NodeType")
        if was and was != group.effective_node_type:
            problems.append(f"{group.name} is a {was} group, not {group.effective_node_type}")
        before = list(slurm.get("PartitionNames", []))
        wanted = [group.effective_partition] if group.effective_partition else []
        if before and before != wanted:
            renamed.append(f"{group.name}: {', '.join(before)} -> {', '.join(wanted) or 'none'}")
    if problems:
        return [
            failed(
                PARTITIONS,
                "; ".join(problems),
                "keep each group's node type; give a new node type a new group",
            )
        ]
    detail = f"the groups of {config.cluster_name} keep their node types"
    if renamed:
        detail += (
            f"; partitions renamed (jobs that name the old ones will pend): {'; '.join(renamed)}"
        )
    return [passed(PARTITIONS, detail)]
