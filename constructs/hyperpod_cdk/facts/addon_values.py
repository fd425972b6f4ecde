"""The ``ConfigurationValues`` of the EKS add-ons the app configures, as plain dicts.

Pure Python (no CDK import): the constructs (:mod:`hyperpod_cdk.eks.addons`,
:mod:`hyperpod_cdk.eks.inference`) call these builders with their tokens, and the preflight
(:mod:`hyperpod_ops.addon_configuration`) calls them with placeholder values and validates the
result against each pinned add-on version's JSON schema (``eks:DescribeAddonConfiguration``), so
what is deployed and what is checked cannot drift apart.

Every argument is a string (a literal or a CDK token) or a flag; the key order of each dict is
the order written into the template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CERT_MANAGER = "cert-manager"
METRICS_SERVER = "metrics-server"
OBSERVABILITY = "amazon-sagemaker-hyperpod-observability"
INFERENCE = "amazon-sagemaker-hyperpod-inference"

# The EKS cluster has no nodes but HyperPod's, and instance groups may carry taints of any
# effect (instance_groups[].taints: NoSchedule, PreferNoSchedule, NoExecute; HyperPod's
# node-health taints). Without a toleration cert-manager stays Pending (or is evicted), the
# add-on never becomes ACTIVE and the stack times out. Like AWS's HyperPod setup
# (aws/sagemaker-hyperpod-cluster-setup, cert-manager-addon-template.yaml), every taint of every
# effect is tolerated: an `Exists` toleration without key or effect.
TOLERATE_EVERY_TAINT: list[dict[str, str]] = [{"operator": "Exists"}]

# The scrape interval (seconds) of every metricsProvider entry of the observability add-on.
SCRAPE_INTERVAL_SECONDS = 30


def cert_manager_values() -> dict[str, Any]:
    """cert-manager: its controller, webhook and CA injector tolerate every taint."""
    return {
        "tolerations": TOLERATE_EVERY_TAINT,
        "webhook": {"tolerations": TOLERATE_EVERY_TAINT},
        "cainjector": {"tolerations": TOLERATE_EVERY_TAINT},
    }


def metrics_server_values() -> dict[str, Any]:
    """metrics-server (an inference operator dependency): tolerates every taint."""
    return {"tolerations": [{"operator": "Exists"}]}


def observability_values(
    *, prometheus_endpoint: str, workspace_arn: str, levels: Mapping[str, str], logging: bool
) -> dict[str, Any]:
    """The HyperPod observability add-on.

    Schema as AWS's HyperPod setup writes it (aws/sagemaker-hyperpod-cluster-setup,
    observability-template.yaml): the remote-write endpoint without a trailing slash and the
    workspace ARN; every metric level the settings carry (the nine ``metricsProvider`` keys:
    training, inference, taskGovernance, scaling, cluster, node, acceleratedCompute, network and
    ray ``Metrics``, each DISABLED, BASIC or ADVANCED; and ``logging{enabled}``; read 2026-11-24).

    :param prometheus_endpoint: ``https://aps-workspaces.<region>.<suffix>/workspaces/<id>``.
    :param workspace_arn: the Amazon Managed Prometheus workspace.
    :param levels: ``metricsProvider`` key (``nodeMetrics``, ... ``rayMetrics``) -> DISABLED |
        BASIC | ADVANCED.
    :param logging: ``logging.enabled``.
    """
    return {
        "ampWorkspace": {"prometheusEndpoint": prometheus_endpoint, "arn": workspace_arn},
        "metricsProvider": {
            key: {"level": level, "scrapeInterval": SCRAPE_INTERVAL_SECONDS}
            for key, level in levels.items()
        },
        "logging": {"enabled": logging},
    }


def inference_values(
    *,
    execution_role_arn: str,
    tls_bucket: str,
    hyperpod_cluster_arn: str,
    alb_role_arn: str | None,
    keda_role_arn: str | None,
    gateway_role_arn: str | None = None,
    gated_model_role_arn: str | None = None,
) -> dict[str, Any]:
    """The HyperPod inference operator add-on.

    Configuration schema: the add-on's install commands in the SageMaker developer guide
    (sagemaker-hyperpod-model-deployment-setup and -inference-gateway, read 2026-11-25).

    :param execution_role_arn: the operator's role.
    :param tls_bucket: the bucket of its TLS certificates (a name, not an ARN).
    :param hyperpod_cluster_arn: the HyperPod cluster the operator serves.
    :param alb_role_arn: the AWS Load Balancer Controller's role; None: the cluster runs its own
        controller (``alb: {enabled: false}``, SageMaker developer guide,
        sagemaker-hyperpod-model-deployment-ts, "missing ALB Controller", Option 2).
    :param keda_role_arn: the KEDA operator's role; None: the cluster runs its own KEDA
        (``keda: {enabled: false}``, same page, "missing KEDA operator", Option 2).
    :param gateway_role_arn: the Inference Gateway's certificate issuer role; None: no gateway.
    :param gated_model_role_arn: the JumpStart gated model download role; None: left out.
    """
    values: dict[str, Any] = {
        "executionRoleArn": execution_role_arn,
        "tlsCertificateS3Bucket": tls_bucket,
        "hyperpodClusterArn": hyperpod_cluster_arn,
        "inferenceOperator": {"enabled": True},
        "inferenceGateway": (
            {"enabled": True, "serviceAccount": {"roleArn": gateway_role_arn}}
            if gateway_role_arn is not None
            else {"enabled": False}
        ),
        "alb": (
            {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb_role_arn}}
            if alb_role_arn is not None
            else {"enabled": False}
        ),
        "keda": (
            {
                "enabled": True,
                "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda_role_arn}}},
            }
            if keda_role_arn is not None
            else {"enabled": False}
        ),
    }
    if gated_model_role_arn is not None:
        values["jumpstartGatedModelDownloadRoleArn"] = gated_model_role_arn
    return values
