"""HyperPod-DraNoOverlap: data repository associations of one file system do not overlap.

FSx for Lustre rejects an association whose ``FileSystemPath`` is a parent or child directory
of another association's on the same file system (``/`` is allowed only as the sole
association), and an S3 prefix is linked by one association only (FSx for Lustre user guide,
"Linking your file system to an Amazon S3 bucket"). CloudFormation learns
it minutes into the deploy, one association at a time; the rule finds it at synth.

The rule looks at each ``AWS::FSx::DataRepositoryAssociation`` of the app against the other
associations of the same file system, in any stack. Paths overlap when one is the other or
lies below it at a ``/`` boundary (``/data`` and ``/data2`` do not overlap); S3 URIs likewise,
bucket included. A part the app cannot render (a parameter, a function) is not compared.
"""

from __future__ import annotations

from cdk_nag import NagRuleCompliance

from hyperpod_cdk.compliance.model import Ref, Resource
from hyperpod_cdk.compliance.rule import COMPLIANT, NON_COMPLIANT, NOT_APPLICABLE, HyperPodRule

ASSOCIATION = "AWS::FSx::DataRepositoryAssociation"


def segments(path: str | None, *, scheme: str = "") -> tuple[str, ...] | None:
    """The ``/``-separated parts of a path (``s3://b/p/`` -> ``("b", "p")`` with scheme s3://)."""
    if path is None or not path.startswith(scheme):
        return None
    return tuple(part for part in path.removeprefix(scheme).split("/") if part)


def overlap(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> bool:
    """True when one path is the other or lies below it (None: unknown, never overlaps)."""
    if a is None or b is None:
        return False
    shorter, longer = sorted((a, b), key=len)
    return longer[: len(shorter)] == shorter


def _file_system(association: Resource) -> Ref | str | None:
    value = association.prop("FileSystemId")
    target = value.target()
    return target if target is not None else value.text()


def _paths(association: Resource) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    return (
        segments(association.prop("FileSystemPath").text(), scheme="/"),
        segments(association.prop("DataRepositoryPath").text(), scheme="s3://"),
    )


def check(association: Resource) -> NagRuleCompliance:
    file_system = _file_system(association)
    if file_system is None:
        return NOT_APPLICABLE
    path, repository = _paths(association)
    for other in association.assembly.resources(ASSOCIATION):
        if other is association or _file_system(other) != file_system:
            continue
        other_path, other_repository = _paths(other)
        if overlap(path, other_path) or overlap(repository, other_repository):
            return NON_COMPLIANT
    return COMPLIANT


RULE = HyperPodRule(
    name="DraNoOverlap",
    info="Two data repository associations of the same file system overlap: one FileSystemPath "
    "or S3 DataRepositoryPath is the other or lies below it.",
    explanation="FSx for Lustre rejects overlapping association paths and S3 prefixes at deploy "
    "time, minutes into the deployment; give each association its own directory and prefix.",
    resource_types=frozenset({ASSOCIATION}),
    check=check,
)
