"""Lifecycle scripts: uploaded unpacked under a content-hashed prefix, with settings.json, before the cluster."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from stack_testkit import (
    LIFECYCLE_PREFIX,
    PROJECT_ROOT,
    config_data,
    config_path,
    joined_text,
    lifecycle_asset_dirs,
    ref,
    with_changes,
)

from hyperpod_cdk.cluster import SETTINGS_FILE, content_hash, lifecycle_bucket_name
from hyperpod_cdk.config import LIFECYCLE_ENTRY_SCRIPT, EnvironmentConfig, load_environment, parse
from stacks import node_settings

USERS_YAML = "users:\n  - name: alice\n    uid: 2001\n"

# the least the packaged scripts boot with (lifecycle_assets/settings.schema.json)
EKS_SETTINGS = {"orchestrator": "eks"}


def users_config(root: Path) -> EnvironmentConfig:
    """The minimal example with a users file, in a project root of its own."""
    shutil.copytree(PROJECT_ROOT / "lifecycle_assets", root / "lifecycle_assets")
    (root / "users.yaml").write_text(USERS_YAML)
    data = with_changes(config_data("minimal"), {"cluster.node_setup.users_file": "users.yaml"})
    config = parse(data, root)
    assert isinstance(config, EnvironmentConfig)
    return config


def deployment(synth) -> dict[str, Any]:
    _, resource = synth.one("nodes", "Custom::CDKBucketDeployment")
    return resource["Properties"]


def groups(synth) -> list[dict[str, Any]]:
    return synth.template("cluster")["Resources"]["HyperPodCluster"]["Properties"]["InstanceGroups"]


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


def expected_bucket(config: EnvironmentConfig) -> str:
    """sagemaker-<name>-lifecycle-<account>-<region> (the shipped names are short enough)."""
    account = config.account or "${AWS::AccountId}"
    return f"sagemaker-{config.name}-lifecycle-{account}-{config.region}"


def test_lifecycle_bucket_is_named_for_hyperpod(shipped) -> None:
    """The API reference: SourceS3Uri must start with s3://sagemaker- (issue 15)."""
    (bucket_id,) = [
        logical_id
        for logical_id, resource in shipped.resources("nodes", "AWS::S3::Bucket").items()
        if "Scripts" in logical_id and "AccessLogs" not in logical_id
    ]
    bucket = shipped.resources("nodes")[bucket_id]["Properties"]
    assert joined_text(bucket["BucketName"]) == expected_bucket(shipped.config)
    assert shipped.outputs("nodes")["LifecycleBucketName"]["Value"] == ref(bucket_id)


def test_every_group_boots_from_the_uploaded_prefix(shipped) -> None:
    prefix = deployment(shipped)["DestinationBucketKeyPrefix"]
    for group in groups(shipped):
        uri = joined_text(group["LifeCycleConfig"]["SourceS3Uri"])
        assert uri == f"s3://{expected_bucket(shipped.config)}/{prefix}", group["InstanceGroupName"]
        assert uri.startswith("s3://sagemaker-")


def test_lifecycle_scripts_uri_output_matches_the_prefix(shipped) -> None:
    uri = shipped.outputs("nodes")["LifecycleScriptsUri"]["Value"]
    prefix = deployment(shipped)["DestinationBucketKeyPrefix"]
    assert joined_text(uri) == f"s3://{expected_bucket(shipped.config)}/{prefix}"


def test_entry_script_runs_on_the_configured_hook(shipped) -> None:
    hook = shipped.config.cluster.effective_lifecycle_hook(shipped.config.is_slurm)
    other = "OnCreate" if hook == "OnInitComplete" else "OnInitComplete"
    for group in groups(shipped):
        config = group["LifeCycleConfig"]
        assert config[hook] == LIFECYCLE_ENTRY_SCRIPT == "entrypoint.sh"
        assert other not in config


@pytest.mark.parametrize(
    ("base", "hook", "other"),
    [("minimal", "OnInitComplete", "OnCreate"), ("eks-minimal", "OnCreate", "OnInitComplete")],
)
def test_entry_script_runs_on_the_orchestrators_hook_by_default(
    build_variant, base: str, hook: str, other: str
) -> None:
    """Slurm: after HyperPod has set up Slurm, Docker and FSx; EKS: before the node joins."""
    synth = build_variant(base=base)
    assert synth.config.cluster.lifecycle_hook is None
    for group in groups(synth):
        config = group["LifeCycleConfig"]
        assert config[hook] == LIFECYCLE_ENTRY_SCRIPT == "entrypoint.sh"
        assert other not in config
    assert node_settings(synth.config)["lifecycle_hook"] == hook


def test_entry_script_runs_on_init_complete_when_configured_on_eks(build_variant) -> None:
    synth = build_variant({"cluster.lifecycle_hook": "OnInitComplete"}, base="eks-minimal")
    for group in groups(synth):
        assert group["LifeCycleConfig"]["OnInitComplete"] == "entrypoint.sh"
        assert "OnCreate" not in group["LifeCycleConfig"]


def test_cluster_waits_for_the_upload(shipped) -> None:
    # The entry script must exist under SourceS3Uri when HyperPod creates the nodes.
    cluster = shipped.stacks.cluster.cluster.resource
    waits_for = {d.node.path for d in cluster.node.dependencies}
    assert shipped.stacks.lifecycle.scripts.deployment.node.path in waits_for
    assert "nodes" in shipped.dependencies("cluster")


def test_uploaded_scripts_hold_the_entry_script_and_no_legacy_slurm_file(shipped) -> None:
    # provisioning_parameters.json under SourceS3Uri makes API-driven Slurm updates fail
    scripts = lifecycle_asset_dirs(shipped)[0]
    assert (scripts / LIFECYCLE_ENTRY_SCRIPT).is_file()
    assert not list(scripts.rglob("provisioning_parameters.json"))


def test_uploaded_settings_json_is_the_node_settings_of_the_config(shipped) -> None:
    settings = lifecycle_asset_dirs(shipped)[1] / SETTINGS_FILE
    # exactly what is hashed into the prefix: no key is dropped on the way to S3
    assert json.loads(settings.read_text()) == node_settings(shipped.config)
    assert node_settings(shipped.config) == without_nulls(node_settings(shipped.config))


DEFAULT_NODE_SETUP = {
    "home_on_shared_storage": True,
    "ssh_keys_between_nodes": True,
    "container_runtime_on_nvme": True,
    "nvidia_container_toolkit": True,
    "enroot_pyxis": True,
    "eks_containerd_on_ebs": True,
    "log_rotation": True,
    "log_retention_days": 14,
    "fsx_mount_timeout_seconds": 600,
    "fsx_efa_check": "fail",
    "exporters": {
        "node": False,
        "dcgm": False,
        "efa": False,
        "node_port": 9100,
        "dcgm_port": 9400,
        "efa_port": 9109,
    },
    "restrict_imds": True,
    "pam_slurm_adopt": False,
}


def test_node_settings_of_the_default_config(synthesized) -> None:
    assert node_settings(synthesized("default").config) == {
        "environment": "ml-research",
        "orchestrator": "slurm",
        "cluster_name": "ml-research",
        "lifecycle_hook": "OnInitComplete",
        "fsx": {
            "enabled": True,
            "mount_path": "/fsx",
            "efa": False,
            "type": "lustre",
            "mounted_by": "hyperpod",
        },
        "slurm_accounting_database": False,
        "node_setup": DEFAULT_NODE_SETUP,
        "instance_groups": {
            "controller": {"node_type": "Controller", "instance_type": "ml.m5.2xlarge"},
            "login": {"node_type": "Login", "instance_type": "ml.m5.4xlarge"},
            "gpu": {"node_type": "Compute", "partition": "gpu", "instance_type": "ml.p5.48xlarge"},
        },
        "cluster_network": {"region": "us-west-2", "cidrs": ["10.1.0.0/16"], "subnet_ids": []},
        "homes": {"shared": True, "path": "/fsx/home", "mount_path": "/fsx"},
    }


def test_the_nodes_know_the_cluster_subnets(synthesized, build_variant) -> None:
    """For their SSH host-key policy: CIDRs of subnets this app makes, ids of adopted ones."""
    full = node_settings(synthesized("full").config)["cluster_network"]
    assert full["cidrs"] == ["10.1.0.0/16", "10.2.0.0/16"] and full["subnet_ids"] == []
    adopted = synthesized("existing-vpc-fsx").config
    network = node_settings(adopted)["cluster_network"]
    assert network["cidrs"] == []
    assert network["subnet_ids"] == [adopted.network.compute_subnet_id]
    assert "cluster_network" not in node_settings(synthesized("eks-minimal").config)


def test_node_settings_follow_the_config(synthesized) -> None:
    config = synthesized("full").config
    settings = node_settings(config)
    assert settings["slurm_accounting_database"] is True
    assert settings["fsx"] == {
        "enabled": True,
        "mount_path": "/fsx",
        "efa": True,
        "type": "lustre",
        "mounted_by": "hyperpod",
    }
    assert settings["instance_groups"]["gpu-az3"]["partition"] == "gpu-az3"
    assert settings["instance_groups"]["flex"]["partition"] == "inference"
    # a flexible group has no single instance type: the node reads it from the resource config
    assert "instance_type" not in settings["instance_groups"]["flex"]


def test_node_settings_of_an_adopted_file_system_name_it_for_a_fallback_mount() -> None:
    config = load_environment(config_path("existing-vpc-fsx"), PROJECT_ROOT)
    fsx = node_settings(config)["fsx"]
    assert fsx["mounted_by"] == "hyperpod"
    assert fsx["dns_name"] == config.storage.fsx.dns_name
    assert fsx["mount_name"] == config.storage.fsx.mount_name


def test_eks_nodes_do_not_mount_fsx() -> None:
    config = load_environment(config_path("eks-full"), PROJECT_ROOT)
    settings = node_settings(config)
    assert settings["fsx"]["mounted_by"] == "none"
    assert {g["node_type"] for g in settings["instance_groups"].values()} == {"eks"}
    assert "users_file" not in settings["node_setup"]


def test_node_settings_name_the_users_file_beside_the_scripts(tmp_path: Path) -> None:
    config = users_config(tmp_path)
    assert node_settings(config)["node_setup"]["users_file"] == "users.json"


def test_node_setup_switches_reach_the_settings(build_variant) -> None:
    synth = build_variant(
        {"cluster.node_setup": {"exporters": {"dcgm": True}, "log_rotation": False}},
        base="minimal",
        nag=False,
    )
    node_setup = node_settings(synth.config)["node_setup"]
    assert node_setup["exporters"]["dcgm"] is True
    assert node_setup["log_rotation"] is False
    settings = lifecycle_asset_dirs(synth)[1] / SETTINGS_FILE
    assert json.loads(settings.read_text())["node_setup"] == node_setup


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
    uri = joined_text(groups(changed)[0]["LifeCycleConfig"]["SourceS3Uri"])
    assert uri.endswith(f"/{new_prefix}")


# -- generated files beside the scripts (the users file) -----------------------------------------


def bare_upload(tmp_path: Path, extra_files: dict[str, str] | None) -> tuple[dict[str, Any], Path]:
    """A LifecycleScripts in a stack of its own: the deployment's properties and the outdir."""
    import aws_cdk as cdk

    from hyperpod_cdk.cluster import LifecycleScripts
    from stacks.app_builder import new_app

    app = new_app(outdir=str(tmp_path / "cdk.out"))  # the app's feature flags
    stack = cdk.Stack(
        app, "Scripts", env=cdk.Environment(account="111122223333", region="us-west-2")
    )
    LifecycleScripts(
        stack,
        "Scripts",
        directory=PROJECT_ROOT / "lifecycle_assets",
        settings={"environment": "test", "orchestrator": "eks"},
        extra_files=extra_files,
    )
    assembly = app.synth()
    template = assembly.get_stack_by_name("Scripts").template
    (props,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "Custom::CDKBucketDeployment"
    ]
    return props, Path(assembly.directory)


def test_extra_files_are_uploaded_beside_the_settings(tmp_path: Path) -> None:
    users = '{"users": [{"name": "alice", "uid": 2001}]}\n'
    props, outdir = bare_upload(tmp_path, {"users.json": users})
    keys = props["SourceObjectKeys"]
    assert len(keys) == 3  # the scripts, settings.json, users.json
    uploaded = outdir / f"asset.{keys[2].removesuffix('.zip')}" / "users.json"
    assert uploaded.read_text() == users
    assert props["Extract"] is True


def test_extra_files_are_part_of_the_hash() -> None:
    scripts = PROJECT_ROOT / "lifecycle_assets"
    plain = content_hash(scripts, SETTINGS)
    with_users = content_hash(scripts, SETTINGS, {"users.json": "{}"})
    assert plain != with_users
    assert with_users != content_hash(scripts, SETTINGS, {"users.json": '{"users": []}'})
    assert content_hash(scripts, SETTINGS, {}) == plain


@pytest.mark.parametrize("name", ["settings.json", "entrypoint.sh", "lib/x.json", ".hidden", ""])
def test_extra_files_cannot_replace_the_scripts_or_the_settings(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="extra file"):
        bare_upload(tmp_path, {name: "x"})


def test_users_file_is_uploaded_with_the_scripts(build_variant, tmp_path: Path) -> None:
    # one of the deployment's sources, so it lands under the same content-hashed prefix
    users_config(tmp_path)  # writes the project root: scripts and users.yaml
    synth = build_variant(
        {"cluster.node_setup.users_file": "users.yaml"},
        base="minimal",
        project_root=tmp_path,
        nag=False,
    )
    uploaded = [
        d / "users.json" for d in lifecycle_asset_dirs(synth) if (d / "users.json").exists()
    ]
    assert len(uploaded) == 1
    assert "alice" in uploaded[0].read_text()


# -- the lifecycle bucket's name (issue 15) --------------------------------------------------------

BUCKET_RULE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@pytest.mark.parametrize("region", ["us-west-2", "ap-southeast-7", "us-gov-west-1", "eu-north-1"])
@pytest.mark.parametrize(
    "name", ["hp", "ml-research", "a" * 32, "team-a-prod-training-cluster-01", "x-y"]
)
def test_bucket_name_fits_s3_and_hyperpod(name: str, region: str) -> None:
    bucket = lifecycle_bucket_name(name, "123456789012", region)
    assert len(bucket) <= 63 and BUCKET_RULE.fullmatch(bucket) and ".." not in bucket, bucket
    assert bucket.startswith("sagemaker-") and bucket.endswith(f"-lifecycle-123456789012-{region}")
    assert lifecycle_bucket_name(name, "123456789012", region) == bucket  # deterministic


def test_bucket_name_keeps_a_short_name_whole() -> None:
    assert (
        lifecycle_bucket_name("ml-research", "123456789012", "us-west-2")
        == "sagemaker-ml-research-lifecycle-123456789012-us-west-2"
    )


def test_shortened_names_never_share_a_bucket() -> None:
    """Two long names with the same beginning get different buckets (the hash of the whole)."""
    first = lifecycle_bucket_name("research-team-cluster-number-001", "123456789012", "us-west-2")
    second = lifecycle_bucket_name("research-team-cluster-number-002", "123456789012", "us-west-2")
    assert first != second
    assert len(first) == len(second) == 63
    assert first.startswith("sagemaker-research-team-")


def test_bucket_name_with_deploy_time_account_and_region_fits() -> None:
    """An environment-agnostic stack: the account has 12 digits, the region at most 16."""
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "Agnostic")
    bucket = lifecycle_bucket_name("a" * 32, cdk.Aws.ACCOUNT_ID, cdk.Aws.REGION)
    text = stack.resolve(bucket)
    literal = "".join(p for p in text["Fn::Join"][1] if isinstance(p, str))
    assert len(literal) + 12 + 16 <= 63


def test_library_default_bucket_name_comes_from_the_stack(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from hyperpod_cdk.cluster import LifecycleScripts
    from stacks.app_builder import new_app

    stack = cdk.Stack(
        new_app(outdir=str(tmp_path / "cdk.out")),
        "Platform-Nodes",
        env=cdk.Environment(account="111122223333", region="us-east-1"),
    )
    scripts = LifecycleScripts(
        stack, "Scripts", directory=PROJECT_ROOT / "lifecycle_assets", settings=EKS_SETTINGS
    )
    assert scripts.bucket_name.startswith("sagemaker-platform-node")
    assert scripts.bucket_name.endswith("-lifecycle-111122223333-us-east-1")
    assert scripts.source_s3_uri.startswith(f"s3://{scripts.bucket_name}/lifecycle/")


@pytest.mark.parametrize(
    ("bucket_name", "message"),
    [
        ("my-scripts", "must start with|only from an S3 URI that starts with s3://sagemaker-"),
        ("sagemaker-Upper", "is not an S3 bucket name"),
        ("sagemaker-" + "a" * 60, "is not an S3 bucket name"),
        ("sagemaker-a..b", "is not an S3 bucket name"),
    ],
)
def test_library_refuses_a_bucket_hyperpod_cannot_read(bucket_name: str, message: str) -> None:
    import aws_cdk as cdk

    from hyperpod_cdk.cluster import LifecycleScripts

    stack = cdk.Stack(cdk.App(), "Nodes")
    with pytest.raises(ValueError, match=message):
        LifecycleScripts(
            stack,
            "Scripts",
            directory=PROJECT_ROOT / "lifecycle_assets",
            settings=EKS_SETTINGS,
            bucket_name=bucket_name,
        )
