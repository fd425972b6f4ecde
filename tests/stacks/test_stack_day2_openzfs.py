"""Day 2: adding storage.openzfs to a running environment (the homes move to FSx for OpenZFS)
changes exactly the stacks that must apply it, and replaces or deletes nothing stateful.

HyperPod applies the new InstanceStorageConfigs at node provisioning only (docs/updating.md):
the cluster stack's update gives running nodes nothing until they are replaced.
"""

from __future__ import annotations

from typing import Any

import pytest
from cfn_schema import replacement_findings
from stack_testkit import PROJECT_ROOT, STACK_KINDS, config_data, with_changes

from hyperpod_cdk.config import EnvironmentConfig, parse
from hyperpod_cdk.lifecycle.settings import node_settings

ADD_CREATED = {"storage.openzfs": {}}
ADD_ADOPTED = {
    "storage.openzfs": {
        "file_system_id": "fs-0123456789abcdef0",
        "dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    }
}


def changed_kinds(before: Any, after: Any) -> set[str]:
    """The stack kinds whose templates differ (a stack added or removed counts as changed)."""
    kinds = set()
    for kind in STACK_KINDS:
        old = before.template(kind) if before.has(kind) else None
        new = after.template(kind) if after.has(kind) else None
        if old != new:
            kinds.add(kind)
    return kinds


def settings_change(changes: dict[str, Any]) -> set[str]:
    """``{"nodes"}`` when the change reaches the nodes' settings.json (a new lifecycle prefix,
    which the cluster stack names too), else nothing."""
    before = parse(config_data("default"), PROJECT_ROOT)
    after = parse(with_changes(config_data("default"), changes), PROJECT_ROOT)
    assert isinstance(before, EnvironmentConfig) and isinstance(after, EnvironmentConfig)
    return {"nodes"} if node_settings(before) != node_settings(after) else set()


@pytest.mark.parametrize(
    ("changes", "kinds"),
    [
        # the file system (storage) and its mount on every group (cluster); its group is the
        # nodes' EFA group, which allows NFS already: the network stack stays as it is
        pytest.param(ADD_CREATED, {"storage", "cluster"}, id="created"),
        # an adopted file system is in a group of its own: the nodes get NFS egress (network)
        pytest.param(ADD_ADOPTED, {"network", "storage", "cluster"}, id="adopted"),
    ],
)
def test_adding_openzfs_changes_exactly_its_stacks(
    changes: dict[str, Any], kinds: set[str], build_variant
) -> None:
    before = build_variant({}, nag=False)
    after = build_variant(changes, nag=False)
    assert changed_kinds(before, after) == kinds | settings_change(changes)


@pytest.mark.parametrize("changes", [ADD_CREATED, ADD_ADOPTED], ids=["created", "adopted"])
def test_adding_openzfs_replaces_or_deletes_nothing_stateful(
    changes: dict[str, Any], build_variant, synthesized
) -> None:
    before = synthesized("default")
    after = build_variant(changes, nag=False)
    findings = replacement_findings(before.templates, after.templates)
    assert not findings, "\n".join(map(str, findings))


def test_adding_openzfs_keeps_the_lustre_file_system_and_its_mount(build_variant) -> None:
    before = build_variant({}, nag=False)
    after = build_variant(ADD_CREATED, nag=False)
    storage_before = before.template("storage")["Resources"]
    storage_after = after.template("storage")["Resources"]
    for logical_id, resource in storage_before.items():
        assert storage_after[logical_id] == resource, logical_id

    def lustre_configs(synth: Any) -> list[Any]:
        groups = synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"][
            "InstanceGroups"
        ]
        return [
            [c for c in g.get("InstanceStorageConfigs", []) if "FsxOpenZfsConfig" not in c]
            for g in groups
        ]

    assert lustre_configs(after) == lustre_configs(before)
