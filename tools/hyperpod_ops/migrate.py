"""``python -m hyperpod_ops.migrate CONFIG`` (``make migrate-eks-dependencies``): move an EKS
environment whose HyperPod dependencies were raw Kubernetes manifests onto the Helm releases of
the project's chart, without deleting a single object.

A plain deploy cannot: Helm refuses objects it did not create, and once the releases were in,
CloudFormation would delete the old manifest resources, and ``kubectl delete`` the same-named
objects the releases now own (a CRD's deletion deletes its jobs). So, before the deploy:

1. the deployed ``<name>-eks-dependencies`` template gets ``DeletionPolicy`` and
   ``UpdateReplacePolicy: Retain`` on each old manifest resource (nothing else changes, so
   CloudFormation calls no handler; the template goes through the CDK bootstrap bucket, as it is
   larger than ``TemplateBody`` allows);
2. every object of those manifests gets Helm's ownership metadata (the label
   ``app.kubernetes.io/managed-by: Helm`` and the ``meta.helm.sh/release-name`` and
   ``-namespace`` annotations of the release that installs it now), a JSON merge patch of its
   metadata only.

The next ``make deploy`` then installs the releases, which adopt the objects, and removes the old
resources without deleting anything. Namespaces are left as they are (the releases create theirs
only when missing). Running it again does nothing that is already done. Exit 0 when done or
nothing is to be done, 1 when a step failed (what was done is said), 2 when it cannot run.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_cdk.config import EnvironmentConfig
from hyperpod_cdk.facts import chart
from hyperpod_ops.adopted import eks_cluster_name
from hyperpod_ops.aws import ClientFactory, error_code, session_clients
from hyperpod_ops.cli import MakeClients, run_command
from hyperpod_ops.deploy_target import bootstrap_target
from hyperpod_ops.k8s import (
    Kubernetes,
    KubernetesDenied,
    KubernetesUnreachable,
    MakeKubernetes,
    connect_https,
    eks_token,
)

LEGACY_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
LEGACY_LABELS = {
    "app.kubernetes.io/part-of": "hyperpod-dependencies",
    "app.kubernetes.io/managed-by": "hyperpod-cdk",
}
# the old manifests' construct ids: Eks/<Component> (adopted) or Eks/Cluster/<Component>
_LEGACY_ID = re.compile(r"^Eks(?:Cluster)?(?P<component>[A-Z][A-Za-z]+)[0-9A-F]{8}$")
_RELEASE_OF = {
    "".join(p.capitalize() for p in key.split("_")): release
    for release in chart.RELEASES
    for key in release.components
}

# API paths of the kinds the old manifests held: (group/version prefix, plural, namespaced)
_KINDS = {
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Service": ("/api/v1", "services", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
}  # fmt: skip
RETAIN = "Retain"


@dataclass(frozen=True)
class Legacy:
    """One old manifest resource of the deployed template and the release that takes it over."""

    logical_id: str
    release: chart.Release | None  # None: the namespaces, left as they are
    objects: tuple[dict[str, Any], ...]


def legacy_manifests(template: dict[str, Any]) -> list[Legacy]:
    """The old dependency manifests of a deployed ``eks-dependencies`` template."""
    found = []
    for logical_id, resource in template.get("Resources", {}).items():
        manifest = resource.get("Properties", {}).get("Manifest")
        if resource.get("Type") != LEGACY_TYPE or not isinstance(manifest, str):
            continue
        objects = tuple(json.loads(manifest))
        if not objects or not all(_is_legacy(o) for o in objects):
            continue
        match = _LEGACY_ID.match(logical_id)
        component = match.group("component") if match else ""
        release = None if component == "Namespaces" else _RELEASE_OF.get(component)
        if release is None and component != "Namespaces":
            continue  # not one of ours: leave it alone
        found.append(Legacy(logical_id, release, objects))
    return found


def _is_legacy(obj: dict[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels", {})
    return all(labels.get(k) == v for k, v in LEGACY_LABELS.items())


def retained(template: dict[str, Any], legacy: Sequence[Legacy]) -> dict[str, Any] | None:
    """``template`` with every legacy resource retained; None when all of them already are."""
    changed: dict[str, Any] = json.loads(json.dumps(template))
    resources = changed["Resources"]
    todo = [
        item.logical_id
        for item in legacy
        if resources[item.logical_id].get("DeletionPolicy") != RETAIN
        or resources[item.logical_id].get("UpdateReplacePolicy") != RETAIN
    ]
    if not todo:
        return None
    for logical_id in todo:
        resources[logical_id]["DeletionPolicy"] = RETAIN
        resources[logical_id]["UpdateReplacePolicy"] = RETAIN
    return changed


def object_path(obj: dict[str, Any]) -> str:
    """The API path of an object of the old manifests."""
    prefix, plural, namespaced = _KINDS[obj["kind"]]
    meta = obj["metadata"]
    where = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"{prefix}{where}/{plural}/{meta['name']}"


def ownership(release: chart.Release) -> dict[str, Any]:
    """The merge patch that makes ``release`` the Helm owner of an object (Helm adopts an object
    whose label and annotations name it)."""
    return {
        "metadata": {
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {
                "meta.helm.sh/release-name": release.name,
                "meta.helm.sh/release-namespace": release.namespace,
            },
        }
    }


def _deployed_template(cloudformation: Any, stack: str) -> dict[str, Any] | None:
    try:
        body = cloudformation.get_template(StackName=stack, TemplateStage="Original")[
            "TemplateBody"
        ]
    except Exception as exc:
        if error_code(exc) == "ValidationError":  # no such stack
            return None
        raise
    return body if isinstance(body, dict) else json.loads(body)


def _retain(
    config: EnvironmentConfig,
    clients: ClientFactory,
    stack: str,
    template: dict[str, Any],
    project_root: Path,
) -> None:
    """Update the deployed stack to ``template`` (uploaded to the CDK bootstrap bucket)."""
    cloudformation, s3 = clients("cloudformation"), clients("s3")
    body = json.dumps(template, sort_keys=True)
    account = clients("sts").get_caller_identity()["Account"]
    target = bootstrap_target(config, project_root)
    bucket = f"cdk-{target.qualifier}-assets-{account}-{config.region}"
    key = f"hyperpod-cdk-migrate/{stack}-{hashlib.sha256(body.encode()).hexdigest()[:16]}.json"
    # the bucket is found by its name only: it must be the caller's own, else someone else's
    # bucket would serve the template CloudFormation runs with CAPABILITY_NAMED_IAM (security
    # review L6); S3 refuses the write (403) when another account owns it
    s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=body.encode(),
        ContentType="application/json",
        ExpectedBucketOwner=account,
    )
    (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    cloudformation.update_stack(
        StackName=stack,
        TemplateURL=f"https://{bucket}.s3.{config.region}.amazonaws.com/{key}",
        Parameters=[
            {"ParameterKey": p["ParameterKey"], "UsePreviousValue": True}
            for p in described.get("Parameters", [])
        ],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    cloudformation.get_waiter("stack_update_complete").wait(
        StackName=stack, WaiterConfig={"Delay": 10, "MaxAttempts": 180}
    )


def migrate(
    config: EnvironmentConfig,
    clients: ClientFactory,
    project_root: Path,
    connect: MakeKubernetes = connect_https,
    say: Callable[[str], None] = print,
) -> int:
    """The migration of ``config``'s environment; the exit code."""
    if config.is_slurm:
        say("migrate: slurm orchestrator: no EKS dependencies to migrate")
        return 0
    stack = f"{config.name}-eks-dependencies"
    template = _deployed_template(clients("cloudformation"), stack)
    legacy = legacy_manifests(template) if template else []
    if not legacy:
        say(f"migrate: {stack} has no raw-manifest dependencies: nothing to migrate")
        return 0
    changed = retained(template or {}, legacy)
    if changed is None:
        say(f"migrate: {stack}: the {len(legacy)} old manifest resources are already retained")
    else:
        say(f"migrate: {stack}: retaining {len(legacy)} old manifest resources (stack update)")
        _retain(config, clients, stack, changed, project_root)
    name = eks_cluster_name(config)
    eks, sts = clients("eks"), clients("sts")
    cluster = eks.describe_cluster(name=name)["cluster"]
    patched = missing = 0
    try:
        api: Kubernetes = connect(
            str(cluster.get("endpoint", "")),
            str(cluster.get("certificateAuthority", {}).get("data", "")),
            eks_token(sts, name),
        )
        for item in legacy:
            if item.release is None:
                continue
            for obj in item.objects:
                if api.patch(object_path(obj), ownership(item.release)) is None:
                    missing += 1
                else:
                    patched += 1
    except (KubernetesUnreachable, KubernetesDenied) as exc:
        say(
            f"migrate: FAIL after {patched} objects: the API of {name} refused or did not answer "
            f"({exc}); the old resources are retained, so nothing is lost: run this again from a "
            "host that reaches the endpoint, with an access entry that may patch them"
        )
        return 1
    say(
        f"migrate: {patched} objects now belong to their Helm releases"
        + (f" ({missing} no longer existed)" if missing else "")
        + "; run make deploy: the releases adopt them and the old resources leave without a delete"
    )
    return 0


def _command(config: EnvironmentConfig, clients: ClientFactory, project_root: Path) -> int:
    return migrate(config, clients, project_root)


def main(argv: Sequence[str], make_clients: MakeClients = session_clients) -> int:
    """The command line; ``make_clients`` builds the boto3 clients of a region (tests stub it)."""
    return run_command(
        "migrate",
        "Move raw-manifest HyperPod dependencies of an EKS environment onto the Helm releases.",
        argv,
        _command,
        make_clients,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
