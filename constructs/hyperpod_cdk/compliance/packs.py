"""Acknowledgments of the NIST 800-53 R5, HIPAA Security and PCI DSS 3.2.1 packs.

The three packs share most rule names (``NIST.800.53.R5-IAMNoInlinePolicy``,
``HIPAA.Security-IAMNoInlinePolicy``, ``PCI.DSS.321-IAMNoInlinePolicy``), but not
all of them: :func:`acknowledge_controls` acknowledges a finding under exactly the
packs that have the rule, so a template never carries an acknowledgment of a rule
that does not exist. The acknowledgments are made whatever packs the config
registers: the decision travels with the construct, and the template metadata
records it for an auditor.
"""

from __future__ import annotations

from constructs import IConstruct

from hyperpod_cdk.compliance.nag import acknowledge_all

NIST = "NIST.800.53.R5"
HIPAA = "HIPAA.Security"
PCI = "PCI.DSS.321"

# Which of the three packs has each rule this project acknowledges (cdk-nag 3.0.2,
# lib/packs/nist-800-53-r5.ts, hipaa-security.ts, pci-dss-321.ts).
_ALL = (NIST, HIPAA, PCI)
RULE_PACKS: dict[str, tuple[str, ...]] = {
    "CloudWatchLogGroupEncrypted": _ALL,
    "EC2RestrictedCommonPorts": _ALL,
    "IAMNoInlinePolicy": _ALL,
    "LambdaConcurrency": (NIST, HIPAA),
    "LambdaDLQ": (NIST, HIPAA),
    "LambdaInsideVPC": _ALL,
    "RDSInBackupPlan": (NIST, HIPAA),
    "RDSMultiAZSupport": (NIST, HIPAA),
    "S3BucketReplicationEnabled": _ALL,
    "S3DefaultEncryptionKMS": _ALL,
    "SecretsManagerRotationEnabled": (NIST, HIPAA),
    "SecretsManagerUsingKMSKey": _ALL,
    "VPCDefaultSecurityGroupClosed": _ALL,
    "VPCFlowLogsEnabled": _ALL,
    "VPCNoUnrestrictedRouteToIGW": _ALL,
}


def acknowledge_controls(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge ``rule`` (e.g. ``"IAMNoInlinePolicy"``) of every pack that has it, on ``scope``.

    :raises KeyError: for a rule not in :data:`RULE_PACKS` (add it there, with the packs
        that define it).
    """
    acknowledge_all(scope, [f"{pack}-{rule}" for pack in RULE_PACKS[rule]], reason)


def acknowledge_framework_function(function: IConstruct, *, in_vpc: bool) -> None:
    """Acknowledge the findings of a Lambda function that aws-cdk-lib generates for a deploy-time
    custom resource (BucketDeployment, the kubectl handler, a provider framework).

    Such a function runs only while CloudFormation deploys the stack:

    - no reserved concurrency: reserving it would take from the account's unreserved pool, and a
      new account (10 concurrent executions) rejects any reservation, failing the deploy;
    - no dead-letter queue: CloudFormation waits for the result, so a failure fails (and rolls
      back) the stack operation; there is no event left to retry;
    - its role's inline policy is the one CDK's grants write, scoped to the function's resources;
    - ``in_vpc=False``: it talks only to S3 and CloudFormation, so it runs outside the VPC.
    """
    acknowledge_controls(
        function,
        "LambdaConcurrency",
        "A CDK deploy-time custom-resource function; reserved concurrency would take from the "
        "account's unreserved pool and fails the deploy in accounts at the minimum of 10.",
    )
    acknowledge_controls(
        function,
        "LambdaDLQ",
        "A CDK deploy-time custom-resource function: CloudFormation waits for its result and fails "
        "the stack operation on error, so a dead-letter queue would hold nothing to retry.",
    )
    role = function.node.try_find_child("ServiceRole")
    policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
    if policy is not None:
        acknowledge_controls(
            policy,
            "IAMNoInlinePolicy",
            "CDK writes this inline policy for its deploy-time function from the grants of its "
            "construct; it is scoped to the resources that construct manages and nothing else uses it.",
        )
    if not in_vpc:
        acknowledge_controls(
            function,
            "LambdaInsideVPC",
            "A CDK deploy-time function that only copies objects between S3 buckets and answers "
            "CloudFormation; it holds no data and reaches nothing inside the VPC.",
        )
