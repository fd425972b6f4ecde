"""cdk-nag 3 wiring: compliance packs on the App, and narrow acknowledgments."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from types import TracebackType

import aws_cdk as cdk
import cdk_nag
from constructs import IConstruct

# A reviewer must be able to judge the reason, so a few words are not enough.
MIN_REASON_LENGTH = 20

PACKS: dict[str, type[cdk_nag.NagPack]] = {
    "AwsSolutions": cdk_nag.AwsSolutionsChecks,
    "NIST80053R5": cdk_nag.NIST80053R5Checks,
    "HIPAA": cdk_nag.HIPAASecurityChecks,
    "PCIDSS321": cdk_nag.PCIDSS321Checks,
}


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding (its full id, granular part included) on ``scope`` and below.

    Put it on the narrowest construct that produces the finding.
    """
    acknowledge_all(scope, [finding], reason)


def acknowledge_all(scope: IConstruct, findings: Sequence[str], reason: str) -> None:
    """Acknowledge each of ``findings`` on ``scope`` and below, for one reason, in one call
    (the acknowledgments are the same as one :func:`acknowledge` per finding, in order)."""
    if len(reason.strip()) < MIN_REASON_LENGTH:
        raise ValueError(
            f"acknowledgment of {', '.join(findings)} needs a reason of at least "
            f"{MIN_REASON_LENGTH} characters"
        )
    cdk.Validations.of(scope).acknowledge(
        *(cdk.Acknowledgment(id=finding, reason=reason) for finding in findings)
    )


def nag_account(scope: IConstruct) -> str:
    """The account as cdk-nag writes it in finding ids: the number, or ``<AWS::AccountId>``."""
    account = cdk.Stack.of(scope).account
    return "<AWS::AccountId>" if cdk.Token.is_unresolved(account) else account


def nag_region(scope: IConstruct) -> str:
    """The region as cdk-nag writes it in finding ids: the name, or ``<AWS::Region>``."""
    region = cdk.Stack.of(scope).region
    return "<AWS::Region>" if cdk.Token.is_unresolved(region) else region


def nag_partition(scope: IConstruct) -> str:
    """The partition as cdk-nag writes it in finding ids of ARNs the stack formats.

    That is ``Stack.partition``, which CDK makes a literal (``aws``, ``aws-cn``, ...) only when
    the feature flag ``@aws-cdk/core:enablePartitionLiterals`` is on for the stack *and* its
    region is known to CDK's region table; otherwise it is the ``AWS::Partition`` pseudo
    parameter, which cdk-nag prints as ``<AWS::Partition>``.
    """
    partition = cdk.Stack.of(scope).partition
    return "<AWS::Partition>" if cdk.Token.is_unresolved(partition) else partition


def nag_ref(resource: cdk.CfnResource, attribute: str) -> str:
    """``<LogicalId.Attribute>``: how cdk-nag writes a GetAtt in a finding id."""
    return f"<{cdk.Stack.of(resource).get_logical_id(resource)}.{attribute}>"


def compliance_packs(names: Sequence[str]) -> list[cdk_nag.NagPack]:
    """The cdk-nag packs named in ``compliance_packs``."""
    return [PACKS[name]() for name in names]


def write_acknowledgments_to_templates(scope: IConstruct) -> None:
    """Write every acknowledgment below ``scope`` into its resources' template metadata
    (``Metadata.cdk_nag.rules_to_suppress``), so the audit trail ships with the template.

    Add it to the App and to each pipeline Stage: aspects stop at Stage boundaries.
    """
    cdk.Aspects.of(scope).add(cdk_nag.WriteNagSuppressionsToCloudFormationAspect())


def register_compliance_packs(app: cdk.App, names: Sequence[str]) -> None:
    """Register the packs once, on the App: that also covers stacks inside Stages.

    The project's own ``HyperPod`` pack (:mod:`hyperpod_cdk.compliance`) is always registered,
    whatever ``names`` says: its rules are HyperPod's deploy-time failures, not a policy choice.
    """
    from hyperpod_cdk.compliance import HyperPodChecks

    cdk.Validations.of(app).add_plugins(*compliance_packs(names), HyperPodChecks())
    write_acknowledgments_to_templates(app)
    report_validation_failures_in_one_line()


# What aws-cdk-lib raises (through jsii, as a RuntimeError) when a validation plugin reports a
# finding, after it has printed every finding: "ValidationFailed: Validation failed. A copy of
# this report can be found in: <outdir>/validation-report.json".
_VALIDATION_FAILED = re.compile(r"^ValidationFailed: .*?found in: (?P<report>\S+)", re.S)


def validation_failure_line(error: BaseException) -> str | None:
    """The one line that replaces the traceback of a failed validation (the CDK has printed the
    findings above it), or None for any other error."""
    match = _VALIDATION_FAILED.match(str(error)) if isinstance(error, RuntimeError) else None
    if match is None:
        return None
    # the CDK names the report relative to the working directory when that is shorter; the
    # line names it whole, so it reads the same from wherever the app ran
    report = os.path.abspath(match.group("report"))
    return (
        f"compliance packs: the findings above failed the synth (report: {report}); fix each "
        "or acknowledge it with a reason (hyperpod_cdk.acknowledge)"
    )


def _drain_jsii_output() -> None:
    """Let the JavaScript runtime end and its output (the findings) reach stderr before the one
    line: jsii relays it from a thread that a fast exit can cut short. jsii stops it at exit
    anyway; this is that, earlier (nothing happens if jsii's internals differ)."""
    try:
        from jsii._runtime import kernel

        kernel.provider._process.stop()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001, S110  (only the order of two outputs is at stake)
        pass
    sys.stdout.flush()
    sys.stderr.flush()


def report_validation_failures_in_one_line() -> None:
    """A failed validation ends the program with the findings and one line (exit status 1)
    instead of a jsii traceback; other uncaught errors reach the previous ``sys.excepthook``."""
    previous = sys.excepthook
    if getattr(previous, "hyperpod_cdk", False):
        return

    def hook(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        line = validation_failure_line(error)
        if line is None:
            previous(kind, error, trace)
            return
        _drain_jsii_output()
        print(line, file=sys.stderr)

    hook.hyperpod_cdk = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def cdk_assets_objects(scope: IConstruct) -> str:
    """The objects of the stack's CDK asset bucket (default bootstrap), as cdk-nag writes them
    in an ``AwsSolutions-IAM5[Resource::...]`` finding id."""
    stack = cdk.Stack.of(scope)
    return (
        f"arn:{nag_partition(stack)}:s3:::cdk-hnb659fds-assets-"
        f"{nag_account(stack)}-{nag_region(stack)}/*"
    )
