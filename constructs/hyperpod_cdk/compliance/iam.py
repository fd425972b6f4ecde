"""Just enough of IAM policy evaluation to tell whether a role may do one action on one resource.

Identity policies only: statements of the role's inline policies, of the customer managed
policies and ``AWS::IAM::Policy`` / ``AWS::IAM::RolePolicy`` resources of the app that name
the role, and of the AWS managed policies listed in :data:`KNOWN_MANAGED_POLICIES`. An
explicit deny without a condition wins; permissions boundaries, bucket policies and SCPs are
not evaluated (they come from outside the app).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from hyperpod_cdk.compliance.model import PARTITION, Ref, Resource, Value

# AWS managed policies whose S3 statements matter to the rules, by the end of their ARN.
# AmazonSageMakerClusterInstanceRolePolicy reads only buckets named sagemaker-* (SageMaker
# developer guide, "AWS managed policies for SageMaker HyperPod").
KNOWN_MANAGED_POLICIES: dict[str, list[dict[str, object]]] = {
    ":iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy": [
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::sagemaker-*"},
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::sagemaker-*/*"},
    ],
}

ConditionCheck = Callable[[Value], bool]


@lru_cache(maxsize=512)
def _wildcard(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    # IAM wildcards: * any run of characters, ? one character
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body + r"\Z", re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard_match(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    """IAM string matching: ``*`` and ``?`` wildcards (actions are matched ignoring case)."""
    return _wildcard(pattern, ignore_case).match(value) is not None


def _texts(value: Value) -> list[str]:
    return [t for t in (item.text() for item in value.items_or_one()) if t is not None]


def _covers(statement: Value, key: str, candidate: str, *, ignore_case: bool) -> bool:
    """Whether the statement's ``key`` (or ``Not<key>``) element covers ``candidate``."""
    positive, negative = statement.get(key), statement.get(f"Not{key}")
    if not positive.missing:
        return any(wildcard_match(p, candidate, ignore_case=ignore_case) for p in _texts(positive))
    if not negative.missing:
        excluded = negative.items_or_one()
        # an unrenderable NotAction/NotResource entry might exclude the candidate: assume it does
        if any(item.text() is None for item in excluded):
            return False
        return not any(
            wildcard_match(p, candidate, ignore_case=ignore_case) for p in _texts(negative)
        )
    return False


def statement_covers(statement: Value, action: str, resource: str) -> bool:
    """True when the statement (whatever its effect) is about ``action`` on ``resource``."""
    return _covers(statement, "Action", action, ignore_case=True) and _covers(
        statement, "Resource", resource, ignore_case=False
    )


def allows(
    statements: list[Value],
    action: str,
    resource: str,
    *,
    condition_holds: ConditionCheck | None = None,
) -> bool:
    """Whether the statements allow ``action`` on ``resource`` (an ARN text, see model.Value.text).

    An Allow with a condition counts unless ``condition_holds`` says the condition excludes the
    request; a Deny with a condition is assumed not to apply, one without denies.
    """
    allowed = denied = False
    for statement in statements:
        if not statement_covers(statement, action, resource):
            continue
        effect = statement.get("Effect").literal
        conditioned = not statement.get("Condition").missing
        if effect == "Allow":
            allowed = (
                allowed or not conditioned or condition_holds is None or condition_holds(statement)
            )
        elif effect == "Deny" and not conditioned:
            denied = True
    return allowed and not denied


def document_statements(document: Value) -> list[Value]:
    """The statements of a policy document (a single statement object counts as a list of one)."""
    return [s for s in document.get("Statement").items_or_one() if isinstance(s.raw, dict)]


def _role_policies(role: Resource) -> Iterator[Value]:
    """Every policy document that applies to ``role`` and is visible in the app."""
    for inline in role.prop("Policies").items() or []:
        yield inline.get("PolicyDocument")
    for arn in role.prop("ManagedPolicyArns").items() or []:
        target = arn.target()
        if isinstance(target, Ref) and target.resource.type == "AWS::IAM::ManagedPolicy":
            yield target.resource.prop("PolicyDocument")
            continue
        text = arn.text() or ""
        for suffix, statements in KNOWN_MANAGED_POLICIES.items():
            if text.startswith(f"arn:{PARTITION}:") and text.endswith(suffix):
                yield Value(role.stack, {"Statement": statements})
    managed = role.prop("ManagedPolicyArns").items() or []
    for attached in role.assembly.resources("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        if any(arn.refers_to(attached) for arn in managed):
            continue  # already read through the role's ManagedPolicyArns
        if any(name.refers_to(role, None) for name in attached.prop("Roles").items() or []):
            yield attached.prop("PolicyDocument")
    for role_policy in role.assembly.resources("AWS::IAM::RolePolicy"):
        if role_policy.prop("RoleName").refers_to(role, None):
            yield role_policy.prop("PolicyDocument")


def role_statements(role: Resource) -> list[Value]:
    """Every identity-policy statement of ``role`` that the app defines or that is known."""
    return [s for document in _role_policies(role) for s in document_statements(document)]
