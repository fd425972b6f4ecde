"""Day 2: a change reaches the stacks that must apply it, and no other (issue 19).

`cdk deploy` skips a stack whose template did not change, and a consumer never re-reads a weak
cross-stack reference on its own: a value that changes between deploys must change its
consumer's own template. Each test synthesizes a shipped config and the same config with one
day-2 change, and compares the templates stack by stack.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from stack_testkit import SHIPPED_CONFIGS, STACK_KINDS, config_data, config_id

from hyperpod_cdk.config import load_environment

ENVIRONMENTS = [pytest.param(p, id=config_id(p)) for p in SHIPPED_CONFIGS]
ROOT = Path(__file__).resolve().parents[2]


def changed_kinds(before, after) -> set[str]:
    """The stack kinds whose templates differ (a stack added or removed counts as changed)."""
    kinds = set()
    for kind in STACK_KINDS:
        old = before.template(kind) if before.has(kind) else None
        new = after.template(kind) if after.has(kind) else None
        if old != new:
            kinds.add(kind)
    return kinds


def _variant(build_variant, path: Path, changes: dict[str, Any]):
    return build_variant(changes, base=config_id(path), nag=False)


def _base(build_variant, path: Path):
    return build_variant({}, base=config_id(path), nag=False)


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_a_node_setup_change_changes_exactly_the_nodes_and_cluster_stacks(
    path: Path, build_variant
) -> None:
    config = load_environment(path, ROOT)
    setup = config.cluster.node_setup
    if config.is_slurm:
        changes = {"cluster.node_setup.log_retention_days": setup.log_retention_days + 1}
    else:
        changes = {"cluster.node_setup.eks_containerd_on_ebs": not setup.eks_containerd_on_ebs}
    before, after = _base(build_variant, path), _variant(build_variant, path, changes)
    assert changed_kinds(before, after) == {"nodes", "cluster"}


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_scaling_a_group_changes_exactly_the_cluster_stack(path: Path, build_variant) -> None:
    data = config_data(path)
    groups = copy.deepcopy(data["cluster"]["instance_groups"])
    index = next(i for i, g in enumerate(groups) if g.get("node_type", "Compute") == "Compute")
    changes = {f"cluster.instance_groups[{index}].count": groups[index]["count"] + 1}
    before, after = _base(build_variant, path), _variant(build_variant, path, changes)
    assert changed_kinds(before, after) == {"cluster"}


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_adding_a_data_repository_changes_exactly_that_stack(path: Path, build_variant) -> None:
    config = load_environment(path, ROOT)
    fsx = config.storage.fsx
    if not fsx.enabled or not fsx.data_repository_associations:
        pytest.skip(f"{config_id(path)} has no data repository association to add to")
    data = config_data(path)
    dras = copy.deepcopy(data["storage"]["fsx"]["data_repository_associations"])
    # of the kind already there: a first s3_prefix association would create the data bucket
    first = dras[0]
    if "s3_uri" in first:
        dras.append({"file_system_path": "/day2-added", "s3_uri": "s3://day2-added-bucket/in/"})
    else:
        dras.append({"file_system_path": "/day2-added", "s3_prefix": "day2-added/"})
    changes = {"storage.fsx.data_repository_associations": dras}
    before, after = _base(build_variant, path), _variant(build_variant, path, changes)
    assert changed_kinds(before, after) == {"data-repositories"}


def test_a_users_file_change_changes_exactly_the_nodes_and_cluster_stacks(
    build_variant, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import shutil

    root = tmp_path_factory.mktemp("day2-users")
    shutil.copytree(ROOT / "lifecycle_assets", root / "lifecycle_assets")
    changes = {"cluster.node_setup.users_file": "users.yaml"}
    (root / "users.yaml").write_text("users:\n  - name: alice\n    uid: 2001\n")
    before = build_variant(changes, base="minimal", project_root=root, nag=False)
    (root / "users.yaml").write_text(
        "users:\n  - name: alice\n    uid: 2001\n  - name: bob\n    uid: 2002\n"
    )
    # (build_variant caches by its arguments: a second root holds the changed file)
    root2 = tmp_path_factory.mktemp("day2-users")
    shutil.copytree(root, root2, dirs_exist_ok=True)
    after = build_variant(changes, base="minimal", project_root=root2, nag=False)
    assert changed_kinds(before, after) == {"nodes", "cluster"}
