"""IAM parity with AWS's HyperPod role templates as a test.

The tables are tests/stacks/iam_parity_tables.py (test data; the library does not ship them). For the shipped ``full`` (Slurm) and
``eks-full`` (EKS) configs, every action in the policies attached to a role (customer managed
policies naming the role, inline ``AWS::IAM::Policy`` resources naming it, and the role's
``ManagedPolicyArns``) must be a row of that role's table marked granted, and every row marked
granted whose ``when`` holds for the config must be granted. Actions count as written (a
wildcard is its own row). docs/iam-parity.md is the tables rendered by scripts/iam_parity.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from iam_parity_tables import TABLES, table

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "iam-parity.md"
SCRIPT = ROOT / "scripts" / "iam_parity.py"
REGENERATE = "python scripts/iam_parity.py --write"
POLICY_TYPES = ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy")
ROLE_KINDS = ("nodes", "cluster", "metrics")


def _flat(value: Any) -> str:
    """A managed policy ARN as a string: ``Fn::Join``/``Fn::Sub`` with the partition as ``aws``."""
    if isinstance(value, str):
        return value.replace("${AWS::Partition}", "aws")
    if isinstance(value, dict):
        if value == {"Ref": "AWS::Partition"}:
            return "aws"
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return str(separator).join(_flat(p) for p in parts)
        if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
            return _flat(value["Fn::Sub"])
    return repr(value)


def _actions(document: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for statement in document["Statement"]:
        assert statement.get("Effect", "Allow") == "Allow", statement
        actions = statement["Action"]
        found.update([actions] if isinstance(actions, str) else actions)
    return found


def granted(synth: Any, role_id: str) -> set[str]:
    """Every action (and AWS managed policy ARN) the role ``role_id`` of the nodes stack gets."""
    ref = {"Ref": role_id}
    found: set[str] = set()
    for kind in ROLE_KINDS:
        if not synth.has(kind):
            continue
        for resource_type in POLICY_TYPES:
            for policy in synth.resources(kind, resource_type).values():
                properties = policy["Properties"]
                if ref in [synth.resolve(r) for r in properties.get("Roles", [])]:
                    found |= _actions(properties["PolicyDocument"])
    role = synth.resources("nodes", "AWS::IAM::Role")[role_id]["Properties"]
    managed = synth.resources("nodes", "AWS::IAM::ManagedPolicy")
    for arn in role.get("ManagedPolicyArns", []):
        target = arn.get("Ref") if isinstance(arn, dict) else None
        if target in managed:  # a customer managed policy of the stack, by reference
            found |= _actions(managed[target]["Properties"]["PolicyDocument"])
        else:
            found.add(_flat(arn))
    for policy in role.get("Policies", []):
        found |= _actions(policy["PolicyDocument"])
    return found


def _role_id(synth: Any, principal: str) -> str:
    """The logical id of the app's one role of the nodes stack trusted by ``principal``."""
    found = [
        logical_id
        for logical_id, role in synth.resources("nodes", "AWS::IAM::Role").items()
        if any(
            statement.get("Principal", {}).get("Service") == principal
            for statement in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        )
    ]
    assert len(found) == 1, f"expected one role trusted by {principal}, found {found}"
    return found[0]


# (config, table, the service that assumes the role)
CASES = [
    ("full", "slurm-execution-role", "sagemaker.amazonaws.com"),
    ("eks-full", "eks-execution-role", "sagemaker.amazonaws.com"),
    ("eks-full", "autoscaling-cluster-role", "hyperpod.sagemaker.amazonaws.com"),
]


@pytest.mark.parametrize(("config", "role", "principal"), CASES, ids=lambda v: str(v))
def test_granted_actions_match_the_table(
    synthesized: Callable[[str], Any], config: str, role: str, principal: str
) -> None:
    synth = synthesized(config)
    parity = table(role)
    assert parity.rows, role
    assert all(r.applies(synth.config) for r in parity.rows if r.when is None and r.here)
    actual = granted(synth, _role_id(synth, principal))
    marked = {r.action for r in parity.rows if r.here}
    unlisted = sorted(actual - marked)
    assert not unlisted, (
        f"{config}: {role} is granted actions its table in "
        f"tests/stacks/iam_parity_tables.py does not mark granted: {unlisted} (add a row "
        f"each, with its scope or reason, then regenerate: {REGENERATE})"
    )
    expected = {r.action for r in parity.rows if r.applies(synth.config)}
    missing = sorted(expected - actual)
    assert not missing, f"{config}: {role} lacks actions its table marks granted: {missing}"


def test_full_configs_exercise_conditional_rows(synthesized: Callable[[str], Any]) -> None:
    """The shipped configs reach both sides of some ``when``: the tests above are not vacuous."""
    full, eks = synthesized("full").config, synthesized("eks-full").config
    assert full.is_slurm and not eks.is_slurm
    slurm_rows = table("slurm-execution-role").rows
    assert any(r.when is not None and r.applies(full) for r in slurm_rows)
    assert any(r.when is not None and r.here and not r.applies(full) for r in slurm_rows)


@pytest.mark.parametrize("parity", TABLES, ids=lambda t: t.role)
def test_rows_are_complete(parity: Any) -> None:
    actions = [r.action for r in parity.rows]
    assert len(actions) == len(set(actions)), f"{parity.role}: an action has two rows"
    for r in parity.rows:
        if r.here:
            assert r.scope, f"{parity.role} {r.action}: granted without a scope"
        else:
            assert r.reason, f"{parity.role} {r.action}: not granted without a reason"
        if not r.aws and r.here:
            assert r.scope.startswith("Extra") or parity.source is None, (
                f"{parity.role} {r.action}: an action AWS does not grant says why it is extra"
            )
        if r.when is not None:
            assert r.here and r.when_text, f"{parity.role} {r.action}: a when needs its words"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("iam_parity_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_page_is_the_rendered_tables() -> None:
    assert PAGE.read_text(encoding="utf-8") == _script().render() + "\n", (
        f"docs/iam-parity.md is out of date; run: {REGENERATE}"
    )


def test_the_script_checks_the_page_and_the_library_ships_no_table() -> None:
    """``python scripts/iam_parity.py --check`` (as a developer runs it) passes on the committed
    page, and no module of the library holds or imports the tables (they are test data)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    library = ROOT / "constructs" / "hyperpod_cdk"
    assert not (library / "iam" / "parity.py").exists()
    assert not [
        str(path.relative_to(ROOT))
        for path in library.rglob("*.py")
        if "iam_parity" in path.read_text(encoding="utf-8")
    ]
