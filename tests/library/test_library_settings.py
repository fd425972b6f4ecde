"""Settings that cannot be wrong (issue 35): ``build_node_settings`` makes the lifecycle scripts'
settings from a composed app's own objects, validated as a config is; ``LifecycleScripts``
refuses at synth hand-written settings that would fail a node (docs/library.md shows the line);
a compliance-pack failure ends with the findings and one line, not a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from library_testkit import ROOT

from hyperpod_cdk.config import ConfigError
from hyperpod_cdk.lifecycle.settings import (
    PACKAGED_SCRIPTS,
    SettingsError,
    build_node_settings,
    check_settings,
    settings_problems,
)

DOCS = ROOT / "docs" / "library.md"
GROUPS = [
    {"name": "controller", "instance_type": "ml.m5.2xlarge", "count": 1, "node_type": "Controller"},
    {"name": "gpu", "instance_type": "ml.p5.48xlarge", "count": 2, "threads_per_core": 1},
]
# the settings the docs' library example wrote by hand before issue 35 (newcomer review, item 1)
HAND_WRITTEN: dict[str, Any] = {
    "environment": "research",
    "orchestrator": "slurm",
    "fsx": {"enabled": True, "mount_path": "/fsx"},
    "instance_groups": {"controller": {"node_type": "Controller"}, "gpu": {"node_type": "Compute"}},
}


def _subnet(cidr: str | None = None, subnet_id: str | None = None) -> Any:
    """What build_node_settings reads of an ec2.ISubnet."""
    return SimpleNamespace(ipv4_cidr_block=cidr, subnet_id=subnet_id)


def _settings(**kwargs: Any) -> Any:
    args: dict[str, Any] = {
        "environment": "research",
        "region": "us-west-2",
        "cluster": {"instance_groups": GROUPS},
        "availability_zone_id": "usw2-az2",
        "subnets": [_subnet("10.1.0.0/16", "${Token[TOKEN.12]}")],
    }
    return build_node_settings(**{**args, **kwargs})


def test_the_docs_hand_written_settings_fail_the_synth_with_the_missing_key() -> None:
    """Acceptance 2: the line docs/library.md shows is the one LifecycleScripts raises."""
    import aws_cdk as cdk

    from hyperpod_cdk import LifecycleScripts, recommended_context

    app = cdk.App(context=recommended_context())
    stack = cdk.Stack(app, "research-hyperpod", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(SettingsError) as raised:
        LifecycleScripts(stack, "Scripts", settings=HAND_WRITTEN)
    assert isinstance(raised.value, ValueError)
    lines = str(raised.value).splitlines()
    assert lines == [
        "config error: settings.cluster_network: missing: the lifecycle scripts need the "
        "cluster's subnets (the SSH host-key policy between its nodes) to set a node up"
    ]
    shown = re.search(r"```text\n(config error: settings\.[^\n]*)\n```", DOCS.read_text())
    assert shown is not None and shown.group(1) == lines[0]


def test_settings_built_from_the_objects_pass_the_scripts_schema() -> None:
    settings = _settings().settings
    check_settings(settings, PACKAGED_SCRIPTS)  # raises if not
    assert settings["cluster_network"] == {
        "region": "us-west-2",
        "cidrs": ["10.1.0.0/16"],
        "subnet_ids": [],
    }
    assert settings["instance_groups"]["gpu"]["node_type"] == "Compute"
    assert settings["fsx"] == {"enabled": False, "mount_path": "/fsx", "efa": False}


def test_the_settings_are_the_apps_settings_of_the_config() -> None:
    """What the app's synth of the same environment file uploads, byte for byte."""
    from hyperpod_cdk.lifecycle.settings import node_settings

    built = _settings(
        subnets={"usw2-az2": _subnet("10.1.0.0/16"), "usw2-az1": _subnet("10.2.0.0/16")}
    )
    assert built.settings == node_settings(built.config)
    assert built.settings["cluster_network"]["cidrs"] == ["10.1.0.0/16", "10.2.0.0/16"]


def test_several_subnets_go_by_az_id() -> None:
    with pytest.raises(
        ConfigError, match=r"config error: subnets: several subnets: give them by AZ ID"
    ):
        _settings(subnets=[_subnet("10.1.0.0/16"), _subnet("10.2.0.0/16")])


def test_a_subnet_known_by_id_only_is_resolved_on_the_node() -> None:
    built = _settings(
        subnets=[_subnet(None, "subnet-0a1b2c3d4e5f67890")],
        vpc=SimpleNamespace(vpc_id="vpc-0a1b2c3d4e5f67890"),
    )
    assert built.settings["cluster_network"]["subnet_ids"] == ["subnet-0a1b2c3d4e5f67890"]
    assert built.settings["cluster_network"]["cidrs"] == []
    assert built.config.network.vpc_id == "vpc-0a1b2c3d4e5f67890"


def test_every_problem_at_once_with_its_key_path() -> None:
    with pytest.raises(ConfigError) as raised:
        _settings(
            environment="Research_1",
            availability_zone_id="us-west-2b",
            cluster={"instance_groups": [{**GROUPS[1], "count": -1}]},
            subnets=[_subnet(None, "${Token[TOKEN.1]}")],
        )
    paths = [issue.path for issue in raised.value.issues]
    assert paths == [
        "subnets.us-west-2b",  # the subnet of the (misnamed) AZ
        "name",
        "network.availability_zone_id",
        "cluster.instance_groups[0].count",
    ]
    assert all(str(i).startswith("config error: ") for i in raised.value.issues)


def test_a_slurm_cluster_needs_its_subnets() -> None:
    with pytest.raises(ConfigError, match=r"config error: subnets: a Slurm cluster needs"):
        _settings(subnets=[])


def test_a_users_file_comes_along_as_users_json(tmp_path: Path) -> None:
    (tmp_path / "users.yaml").write_text("users:\n  - name: alice\n    uid: 2001\n")
    built = _settings(
        cluster={"instance_groups": GROUPS, "node_setup": {"users_file": "users.yaml"}},
        project_root=tmp_path,
    )
    assert built.settings["node_setup"]["users_file"] == "users.json"
    assert '"alice"' in built.extra_files["users.json"]


def test_lifecycle_scripts_take_node_settings_with_their_files(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from hyperpod_cdk import LifecycleScripts, recommended_context
    from hyperpod_cdk.lifecycle.prefix import config_lifecycle_prefix
    from hyperpod_cdk.lifecycle.scripts import content_hash

    (tmp_path / "users.yaml").write_text("users:\n  - name: alice\n    uid: 2001\n")
    built = _settings(
        cluster={"instance_groups": GROUPS, "node_setup": {"users_file": "users.yaml"}},
        project_root=tmp_path,
    )
    app = cdk.App(context=recommended_context())
    stack = cdk.Stack(app, "research-nodes", env=cdk.Environment(region="us-west-2"))
    scripts = LifecycleScripts(stack, "Scripts", settings=built)
    assert scripts.hash == content_hash(PACKAGED_SCRIPTS, built.settings, built.extra_files)
    # the prefix the operational commands compute from the environment file (sync-users
    # refuses another one)
    assert scripts.prefix == config_lifecycle_prefix(built.config, tmp_path)


def test_deploy_time_values_are_not_checked() -> None:
    settings = {**_settings().settings, "cluster_name": "${Token[TOKEN.7]}"}
    settings["cluster_network"] = {"cidrs": ["${Token[TOKEN.8]}"]}
    assert settings_problems(settings, _schema()) == []


def _schema() -> dict[str, Any]:
    from hyperpod_cdk.lifecycle.settings import read_settings_schema

    schema = read_settings_schema(PACKAGED_SCRIPTS)
    assert schema is not None
    return schema


# A VPC without flow logs under the AwsSolutions pack (newcomer review, item 7)
NO_FLOW_LOGS = """\
import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from hyperpod_cdk import recommended_context, register_compliance_packs
app = cdk.App(context=recommended_context(), outdir=OUTDIR)
stack = cdk.Stack(app, "net", env=cdk.Environment(account="111122223333", region="us-west-2"))
ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0)
register_compliance_packs(app, ["AwsSolutions"])
app.synth()
"""


def test_the_one_line_names_the_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CDK names the report relative to the working directory when that is shorter
    (``../pytest-of-root/...`` from a clone in /tmp): the line names it whole."""
    from hyperpod_cdk.compliance.nag import validation_failure_line

    monkeypatch.chdir(tmp_path)
    error = RuntimeError(
        "ValidationFailed: Validation failed. A copy of this report can be found in: "
        "../elsewhere/cdk.out/validation-report.json"
    )
    line = validation_failure_line(error)
    assert line is not None
    assert f"(report: {tmp_path.parent}/elsewhere/cdk.out/validation-report.json)" in line
    assert validation_failure_line(RuntimeError("something else")) is None


def test_a_compliance_failure_is_the_findings_and_one_line(tmp_path: Path) -> None:
    program = NO_FLOW_LOGS.replace("OUTDIR", repr(str(tmp_path / "cdk.out")))
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    # the CDK prints the findings (from a terminal; under pytest it prints none), then the line;
    # the report it names holds them
    assert "Traceback" not in done.stderr and "jsii" not in done.stderr
    report = json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())
    rules = [v["ruleName"] for p in report["pluginReports"] for v in p.get("violations", [])]
    assert "AwsSolutions-VPC7" in rules
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"compliance packs: the findings above failed the synth (report: {tmp_path}/cdk.out/"
        "validation-report.json); fix each or acknowledge it with a reason "
        "(hyperpod_cdk.acknowledge)"
    )
