"""What ``make verify`` may call, and why: one table, printed in docs/operations.md, and held to
the calls the tests see (tests/ops/verify/conftest.py fails a test whose stubbed clients were
called with an operation this table does not list).

Each row: the API operation as botocore names it (``<signing name>:<Operation>``), the IAM
action that allows it, when verify calls it, and what it writes, if anything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Permission:
    """One AWS operation of make verify."""

    operation: str  # "<signing name>:<Operation>", e.g. "s3:HeadObject"
    action: str  # the IAM action, e.g. "s3:GetObject"
    when: str
    writes: str = ""  # what it creates or changes; empty for a read


PERMISSIONS: tuple[Permission, ...] = (
    Permission("sts:GetCallerIdentity", "sts:GetCallerIdentity", "always (who runs it)"),
    Permission("sagemaker:DescribeCluster", "sagemaker:DescribeCluster", "always"),
    Permission("sagemaker:ListClusterNodes", "sagemaker:ListClusterNodes", "always"),
    Permission(
        "sagemaker:DescribeClusterNode", "sagemaker:DescribeClusterNode", "Slurm: node names"
    ),
    Permission(
        "sagemaker:ListClusterEvents",
        "sagemaker:ListClusterEvents",
        "health (Continuous provisioning)",
    ),
    Permission("sagemaker:DescribeClusterEvent", "sagemaker:DescribeClusterEvent", "health"),
    Permission(
        "sagemaker:StartClusterHealthCheck",
        "sagemaker:StartClusterHealthCheck",
        "only with --deep-health-check",
        "starts HyperPod's deep health check: the nodes go into a maintenance reservation",
    ),
    Permission("logs:FilterLogEvents", "logs:FilterLogEvents", "health (Slurm: the health agent)"),
    Permission(
        "ssm:StartSession",
        "ssm:StartSession",
        "Slurm: on the cluster's targets and the AWS-StartNonInteractiveCommand document",
        "SSM sessions to the controller and login nodes (scripts run as root there)",
    ),
    Permission("ssm:TerminateSession", "ssm:TerminateSession", "Slurm: ends its own sessions"),
    Permission("eks:DescribeCluster", "eks:DescribeCluster", "EKS: the endpoint and its CA"),
    Permission(
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeInstanceTypes",
        "nodes (EKS), efa, containers, nccl, --deep-health-check: the GPUs and EFA of an "
        "instance type the gates table does not list (once per type)",
    ),
    Permission(
        "cloudformation:DescribeStacks", "cloudformation:DescribeStacks", "the file system id"
    ),
    Permission("fsx:DescribeFileSystems", "fsx:DescribeFileSystems", "fsx, dra"),
    Permission(
        "fsx:DescribeDataRepositoryAssociations", "fsx:DescribeDataRepositoryAssociations", "dra"
    ),
    Permission(
        "fsx:CreateDataRepositoryTask",
        "fsx:CreateDataRepositoryTask",
        "dra, for a link without automatic import or export",
        "an import or export task limited to the run's test folder",
    ),
    Permission("fsx:DescribeDataRepositoryTasks", "fsx:DescribeDataRepositoryTasks", "dra"),
    Permission(
        "fsx:CancelDataRepositoryTask",
        "fsx:CancelDataRepositoryTask",
        "dra clean-up (a task still running)",
        "cancels the run's own task",
    ),
    Permission(
        "s3:PutObject",
        "s3:PutObject",
        "dra",
        "test objects under <link prefix>/.hyperpod-verify/<run id>/ (removed at the end)",
    ),
    Permission("s3:HeadObject", "s3:GetObject", "dra"),
    Permission("s3:GetObject", "s3:GetObject", "dra"),
    Permission("s3:ListObjectsV2", "s3:ListBucket", "dra clean-up and --cleanup"),
    Permission("s3:DeleteObject", "s3:DeleteObject", "dra clean-up", "removes the test objects"),
)

BY_OPERATION = {p.operation: p for p in PERMISSIONS}


def markdown_table() -> str:
    """The table as docs/operations.md shows it."""
    rows = ["| IAM action | when | writes |", "|---|---|---|"]
    seen: set[str] = set()
    for permission in PERMISSIONS:
        if permission.action in seen:
            continue
        seen.add(permission.action)
        rows.append(f"| `{permission.action}` | {permission.when} | {permission.writes or '-'} |")
    return "\n".join(rows)
