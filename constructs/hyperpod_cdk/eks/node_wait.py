"""A bounded wait for the first Running nodes of a HyperPod cluster (a custom resource)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_cdk.compliance.checkov_skips import skip_check
from hyperpod_cdk.compliance.nag import acknowledge
from hyperpod_cdk.compliance.packs import acknowledge_controls
from hyperpod_cdk.compliance.provider_framework import (
    acknowledge_deploy_time_handler,
    acknowledge_provider_framework,
    cfn_function,
    handler_function,
)
from hyperpod_cdk.iam.aspects import RolePath

HANDLER_DIR = Path(__file__).parent / "node_wait_handler"
RESOURCE_TYPE = "Custom::HyperPodNodeWait"
RUNTIME = lambda_.Runtime.PYTHON_3_14
QUERY_INTERVAL = cdk.Duration.seconds(30)
# The framework gives up this long after the handler's own deadline, so the handler's message
# is the one CloudFormation shows (the framework's says only "Operation timed out").
FRAMEWORK_MARGIN = cdk.Duration.minutes(5)
# CloudFormation fails a custom resource that has not answered within an hour (the default and
# the maximum of its ServiceTimeout); the wait and the margin stay below that.
MAX_TIMEOUT = cdk.Duration.minutes(50)
MIN_TIMEOUT = cdk.Duration.minutes(1)
DEFAULT_TIMEOUT = cdk.Duration.minutes(45)

# the handler reads the region from the ARN, and ListClusterNodes takes the ARN as ClusterName
CLUSTER_ARN = re.compile(r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:cluster/[a-z0-9]{12}")

_AWS_MANAGED = "arn:<AWS::Partition>:iam::aws:policy/service-role/"
_VPC_ACCESS = "AWSLambdaVPCAccessExecutionRole"


class HyperPodNodeWait(Construct):
    """Waits, at most ``timeout``, until ``min_nodes`` nodes of ``instance_groups`` are Running.

    Under Continuous node provisioning a HyperPod cluster is InService before it has any node,
    and a group may stay at zero. EKS add-ons whose pods need a node (CoreDNS, cert-manager,
    the training operator, the FSx CSI driver) fail their stack when created before one is
    Running: make them depend on :attr:`resource`
    (``addon.node.add_dependency(wait.resource)``).

    A custom resource of type ``Custom::HyperPodNodeWait`` backed by CDK's provider framework:
    ``on_event`` fixes the deadline, ``is_complete`` lists the cluster's nodes every 30 seconds
    (``sagemaker:ListClusterNodes`` on this cluster only) and, past the deadline, fails the
    stack with the per-group node counts and what to do. A change of its properties waits
    again (so does the rollback of a failed update, for the groups before it); deleting waits
    for nothing.

    The two handlers run in ``vpc`` (``subnets``, ``security_groups``) when given: they need
    HTTPS to the SageMaker API (a NAT route or a ``sagemaker.api`` endpoint). The framework's
    own functions run outside the VPC: they call only the Lambda and Step Functions APIs and
    answer CloudFormation, so a closed network needs no Step Functions endpoint for them.

    :param cluster_arn: the HyperPod cluster's ARN (a token is fine).
    :param instance_groups: the groups whose nodes count (those the add-ons can run on); at
        least one.
    :param min_nodes: how many Running nodes, summed over the groups, end the wait.
    :param timeout: how long to wait, 1 to 50 minutes.
    :param vpc: the VPC of the handlers; None: they run outside any VPC.
    :param subnets: their subnets (private, with a route to the SageMaker API); default: the
        VPC's private subnets.
    :param security_groups: their security groups (HTTPS egress); default: a new group that
        allows only HTTPS out.
    :param role_path: IAM path of every role here, the framework's included.
    :param permissions_boundary: permissions boundary of every role here.
    :param provider_scope: build the handlers and the provider framework there (e.g. a stack
        deployed before the HyperPod cluster), so that only the custom resource and the
        ``ListClusterNodes`` policy (which names the cluster) wait for the cluster; default:
        here.

    :ivar resource: the custom resource to depend on.
    :ivar provider: the provider framework. :ivar on_event_function, is_complete_function: the
        handlers. :ivar policy: the managed policy with ``sagemaker:ListClusterNodes``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_arn: str,
        instance_groups: Sequence[str],
        min_nodes: int = 1,
        timeout: cdk.Duration = DEFAULT_TIMEOUT,
        vpc: ec2.IVpc | None = None,
        subnets: Sequence[ec2.ISubnet] = (),
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        role_path: str = "/",
        permissions_boundary: iam.IManagedPolicy | None = None,
        provider_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if not cdk.Token.is_unresolved(cluster_arn) and not CLUSTER_ARN.fullmatch(cluster_arn):
            raise ValueError(
                f"cluster_arn: {cluster_arn!r} is not a HyperPod cluster ARN "
                "(arn:<partition>:sagemaker:<region>:<account>:cluster/<id>)"
            )
        groups = list(dict.fromkeys(instance_groups))
        if not groups:
            raise ValueError(
                "HyperPodNodeWait needs at least one instance group whose nodes end the wait"
            )
        if min_nodes < 1:
            raise ValueError(f"min_nodes: {min_nodes} must be at least 1")
        timeout_seconds = timeout.to_seconds()
        if not MIN_TIMEOUT.to_seconds() <= timeout_seconds <= MAX_TIMEOUT.to_seconds():
            raise ValueError(
                f"timeout: {timeout.to_human_string()} must be 1 to 50 minutes: the wait and the "
                "provider framework's 5 minutes after it must end within the hour CloudFormation "
                "gives a custom resource"
            )
        if vpc is None and (subnets or security_groups):
            raise ValueError("subnets and security_groups need the vpc they belong to")

        # the handlers and the framework: here, or under provider_scope (another stack)
        infra: Construct = Construct(provider_scope, construct_id) if provider_scope else self
        self.provider_scope = infra
        # every role here, the ones the provider framework makes too
        for root in dict.fromkeys((self, infra)):
            if permissions_boundary is not None:
                iam.PermissionsBoundary.of(root).apply(permissions_boundary)
            if role_path != "/":
                cdk.Aspects.of(root).add(RolePath(role_path))

        if vpc is not None and not security_groups:
            https_only = ec2.SecurityGroup(
                infra,
                "HandlerSecurityGroup",
                vpc=vpc,
                description="HyperPod node wait handlers: HTTPS to the SageMaker API",
                allow_all_outbound=False,
            )
            https_only.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "SageMaker API")
            security_groups = [https_only]
        code = lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"])

        def handler(
            construct_id: str, entry: str, description: str, timeout: cdk.Duration
        ) -> lambda_.Function:
            return handler_function(
                infra,
                construct_id,
                purpose="HyperPod node wait",
                description=description,
                handler=f"index.{entry}",
                code=code,
                runtime=RUNTIME,
                timeout=timeout,
                role_path=role_path,
                vpc=vpc,
                subnets=subnets,
                security_groups=security_groups,
            )

        # on_event only computes the deadline; is_complete pages through the node list with
        # botocore's retries (3 attempts of at most 40 s each per page)
        self.on_event_function = handler(
            "OnEvent", "on_event", "starts the wait", cdk.Duration.seconds(30)
        )
        self.is_complete_function = handler(
            "IsComplete",
            "is_complete",
            "counts the Running nodes of the HyperPod cluster",
            cdk.Duration.minutes(3),
        )
        self.policy = iam.ManagedPolicy(
            self,
            "ListNodesPolicy",
            description="HyperPod node wait: list the nodes of the HyperPod cluster",
            statements=[
                iam.PolicyStatement(
                    sid="ListHyperPodNodes",
                    actions=["sagemaker:ListClusterNodes"],
                    resources=[cluster_arn],
                )
            ],
        )
        assert self.is_complete_function.role is not None
        self.policy.attach_to_role(self.is_complete_function.role)

        self.provider = cr.Provider(
            infra,
            "Provider",
            on_event_handler=self.on_event_function,
            is_complete_handler=self.is_complete_function,
            query_interval=QUERY_INTERVAL,
            total_timeout=_framework_timeout(timeout_seconds),
        )
        self.resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "ClusterArn": cluster_arn,
                "InstanceGroups": groups,
                "MinNodes": min_nodes,
                "TimeoutSeconds": int(timeout_seconds),
            },
        )
        # the permission names the cluster, so it lives with the resource (which may be in a
        # later stack than the handlers); the wait starts once the handler holds it
        self.resource.node.add_dependency(self.policy)
        self._acknowledge_handlers(in_vpc=vpc is not None)
        self._acknowledge_framework()

    def _acknowledge_handlers(self, *, in_vpc: bool) -> None:
        """cdk-nag findings and checkov skips of the two handlers."""
        what = "The HyperPod node wait handler"
        for function in (self.on_event_function, self.is_complete_function):
            acknowledge_deploy_time_handler(function, what)
            assert function.role is not None
            cfn = cfn_function(function)
            if in_vpc:
                acknowledge(
                    function.role,
                    f"AwsSolutions-IAM4[Policy::{_AWS_MANAGED}{_VPC_ACCESS}]",
                    "The AWS managed Lambda VPC policy grants the handler only the network "
                    "interfaces Lambda needs in the VPC; AWS keeps it current.",
                )
                continue
            outside = (
                "No VPC was given: the node wait handler only reads the HyperPod cluster's node "
                "list from the SageMaker API, during deploys, and reaches nothing in a VPC."
            )
            acknowledge_controls(function, "LambdaInsideVPC", outside)
            skip_check(cfn, "CKV_AWS_117", outside)

    def _acknowledge_framework(self) -> None:
        """cdk-nag findings and checkov skips of CDK's provider framework (three functions and
        the waiter state machine), which no setting of ``Provider`` changes."""
        acknowledge_provider_framework(
            self.provider,
            (self.on_event_function, self.is_complete_function),
            name="node wait",
            outside=(
                "CDK's provider framework function of the HyperPod node wait only invokes the "
                "node wait handlers (Lambda API), starts or is run by its waiter state machine "
                "and answers CloudFormation's pre-signed S3 URL; it holds no data, reaches "
                "nothing in the VPC, and a closed network of this app has no Step Functions "
                "endpoint."
            ),
            interval_seconds=int(QUERY_INTERVAL.to_seconds()),
        )


def _framework_timeout(timeout_seconds: float) -> cdk.Duration:
    """The wait plus :data:`FRAMEWORK_MARGIN`, in whole query intervals (the framework counts
    its attempts as total timeout / interval and wants a whole number)."""
    interval = QUERY_INTERVAL.to_seconds()
    attempts = math.ceil((timeout_seconds + FRAMEWORK_MARGIN.to_seconds()) / interval)
    return cdk.Duration.seconds(attempts * interval)
