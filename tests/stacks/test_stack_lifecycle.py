"""Lifecycle scripts: uploaded unpacked under a content-hashed prefix, with settings.json, before the cluster."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from stack_testkit import LIFECYCLE_PREFIX, PROJECT_ROOT, join_parts, ref

from hyperpod_cdk.cluster import SETTINGS_FILE, content_hash
from hyperpod_cdk.config import LIFECYCLE_ENTRY_SCRIPT
from stacks import node_settings


def deployment(synth) -> dict[str, Any]:
    _, resource = synth.one("nodes", "Custom::CDKBucketDeployment")
    return resource["Properties"]


def groups(synth) -> list[dict[str, Any]]:
    return synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"]["InstanceGroups"]


def asset_dirs(synth) -> list[Path]:
    """The local directories of the deployment's sources (asset.<hash>, unzipped)."""
    keys = deployment(synth)["SourceObjectKeys"]
    return [synth.outdir / f"asset.{key.removesuffix('.zip')}" for key in keys]


def without_nulls(value: Any) -> Any:
    """What jsii passes on: keys whose value is None are left out."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


def test_scripts_are_uploaded_unpacked_under_a_hashed_prefix(shipped) -> None:
    props = deployment(shipped)
    assert LIFECYCLE_PREFIX.match(props["DestinationBucketKeyPrefix"])
    assert props["DestinationBucketName"] == ref(
        shipped.outputs("nodes")["LifecycleBucketName"]["Value"]["Ref"]
    )
    assert props["Extract"] is True


def test_older_prefixes_are_kept_for_nodes_replaced_later(shipped) -> None:
    props = deployment(shipped)
    assert props["Prune"] is False
    assert props["RetainOnDelete"] is True


def test_every_group_boots_from_the_uploaded_prefix(shipped) -> None:
    bucket = shipped.outputs("nodes")["LifecycleBucketName"]["Value"]
    prefix = deployment(shipped)["DestinationBucketKeyPrefix"]
    for group in groups(shipped):
        uri = shipped.resolve(group["LifeCycleConfig"]["SourceS3Uri"])
        assert join_parts(uri) == ["s3://", bucket, f"/{prefix}"], group["InstanceGroupName"]


def test_lifecycle_scripts_uri_output_matches_the_prefix(shipped) -> None:
    uri = shipped.outputs("nodes")["LifecycleScriptsUri"]["Value"]
    assert join_parts(uri)[-1] == f"/{deployment(shipped)['DestinationBucketKeyPrefix']}"


def test_entry_script_runs_on_init_complete_by_default(shipped) -> None:
    assert shipped.config.cluster.lifecycle_hook == "OnInitComplete"
    for group in groups(shipped):
        config = group["LifeCycleConfig"]
        assert config["OnInitComplete"] == LIFECYCLE_ENTRY_SCRIPT == "entrypoint.sh"
        assert "OnCreate" not in config


def test_entry_script_runs_on_create_when_configured(build_variant) -> None:
    synth = build_variant({"cluster.lifecycle_hook": "OnCreate"}, base="minimal")
    for group in groups(synth):
        assert group["LifeCycleConfig"]["OnCreate"] == "entrypoint.sh"
        assert "OnInitComplete" not in group["LifeCycleConfig"]


def test_cluster_waits_for_the_upload(shipped) -> None:
    # The entry script must exist under SourceS3Uri when HyperPod creates the nodes.
    cluster = shipped.stacks.cluster.cluster.resource
    waits_for = {d.node.path for d in cluster.node.dependencies}
    assert shipped.stacks.lifecycle.scripts.deployment.node.path in waits_for
    assert "nodes" in shipped.dependencies("cluster")


def test_uploaded_scripts_hold_the_entry_script_and_no_legacy_slurm_file(shipped) -> None:
    # provisioning_parameters.json under SourceS3Uri makes API-driven Slurm updates fail
    scripts = asset_dirs(shipped)[0]
    assert (scripts / LIFECYCLE_ENTRY_SCRIPT).is_file()
    assert not list(scripts.rglob("provisioning_parameters.json"))


def test_uploaded_settings_json_is_the_node_settings_of_the_config(shipped) -> None:
    settings = asset_dirs(shipped)[1] / SETTINGS_FILE
    # exactly what is hashed into the prefix: no key is dropped on the way to S3
    assert json.loads(settings.read_text()) == node_settings(shipped.config)
    assert node_settings(shipped.config) == without_nulls(node_settings(shipped.config))


def test_node_settings_of_the_default_config(synthesized) -> None:
    assert node_settings(synthesized("default").config) == {
        "environment": "ml-research",
        "orchestrator": "slurm",
        "cluster_name": "ml-research",
        "lifecycle_hook": "OnInitComplete",
        "fsx": {"enabled": True, "mount_path": "/fsx", "efa": False},
        "slurm_accounting_database": False,
        "instance_groups": {
            "controller": {"node_type": "Controller"},
            "login": {"node_type": "Login"},
            "gpu": {"node_type": "Compute", "partition": "gpu"},
        },
    }


def test_node_settings_follow_the_config(synthesized) -> None:
    config = synthesized("full").config
    settings = node_settings(config)
    assert settings["slurm_accounting_database"] is True
    assert settings["fsx"] == {"enabled": True, "mount_path": "/fsx", "efa": True}
    assert settings["instance_groups"]["gpu-az3"] == {
        "node_type": "Compute",
        "partition": "gpu-az3",
    }
    assert settings["instance_groups"]["flex"] == {"node_type": "Compute", "partition": "inference"}


# -- the content hash ------------------------------------------------------------------------


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    """A copy of the shipped lifecycle scripts to change."""
    return Path(shutil.copytree(PROJECT_ROOT / "lifecycle_assets", tmp_path / "lifecycle_assets"))


SETTINGS = {"environment": "test"}


def test_hash_is_stable_for_the_same_scripts_and_settings(scripts: Path) -> None:
    assert content_hash(scripts, SETTINGS) == content_hash(scripts, dict(SETTINGS))


def test_changing_a_script_changes_the_hash(scripts: Path) -> None:
    before = content_hash(scripts, SETTINGS)
    entry = scripts / LIFECYCLE_ENTRY_SCRIPT
    entry.write_text(entry.read_text() + "\n# changed\n")
    assert content_hash(scripts, SETTINGS) != before


def test_adding_a_script_changes_the_hash(scripts: Path) -> None:
    before = content_hash(scripts, SETTINGS)
    (scripts / "extra.sh").write_text("#!/bin/bash\n")
    assert content_hash(scripts, SETTINGS) != before


def test_changing_the_executable_bit_changes_the_hash(scripts: Path) -> None:
    entry = scripts / LIFECYCLE_ENTRY_SCRIPT
    before = content_hash(scripts, SETTINGS)
    entry.chmod(entry.stat().st_mode ^ 0o111)
    assert content_hash(scripts, SETTINGS) != before


def test_changing_the_settings_changes_the_hash(scripts: Path) -> None:
    assert content_hash(scripts, SETTINGS) != content_hash(scripts, {"environment": "other"})


def test_python_caches_do_not_change_the_hash(scripts: Path) -> None:
    before = content_hash(scripts, SETTINGS)
    (scripts / "__pycache__").mkdir()
    (scripts / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert content_hash(scripts, SETTINGS) == before


def test_changed_script_gives_the_cluster_a_new_prefix(
    tmp_path: Path, build_variant, synthesized
) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "lifecycle_assets", root / "lifecycle_assets")
    entry = root / "lifecycle_assets" / LIFECYCLE_ENTRY_SCRIPT
    entry.write_text(entry.read_text() + "\n# changed\n")
    changed = build_variant(None, base="minimal", project_root=root)
    original = synthesized("minimal")
    new_prefix = deployment(changed)["DestinationBucketKeyPrefix"]
    assert new_prefix != deployment(original)["DestinationBucketKeyPrefix"]
    assert (
        join_parts(changed.resolve(groups(changed)[0]["LifeCycleConfig"]["SourceS3Uri"]))[-1]
        == f"/{new_prefix}"
    )
