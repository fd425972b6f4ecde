"""The operational commands on a composed app (issue 35): the environment file a library app
writes with ``NodeSettings.write_environment_file`` is what ``status`` (and preflight, verify,
sync-users) read, with the app's own cluster name and no YAML of this repository."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from ops_testkit import StubbedAws, cluster_present, identity

from hyperpod_cdk.config import load_environment
from hyperpod_cdk.lifecycle.settings import build_node_settings
from hyperpod_ops import status

GROUPS = [
    {"name": "controller", "instance_type": "ml.m5.xlarge", "count": 1, "node_type": "Controller"},
    {"name": "cpu", "instance_type": "ml.c5.4xlarge", "count": 2},
]


def _environment_file(tmp_path: Path) -> Path:
    # an existing VPC's subnet and security group, imported by id (their CDK objects' attributes)
    subnet = SimpleNamespace(ipv4_cidr_block=None, subnet_id="subnet-0a1b2c3d4e5f67890")
    settings = build_node_settings(
        environment="shared",
        region="us-west-2",
        account="111122223333",
        cluster={"name": "shared-train", "instance_groups": GROUPS},
        availability_zone_id="usw2-az2",
        subnets=[subnet],
        vpc=SimpleNamespace(vpc_id="vpc-0a1b2c3d4e5f67890"),
        security_groups=[SimpleNamespace(security_group_id="sg-0a1b2c3d4e5f67890")],
        project_root=tmp_path,
    )
    return settings.write_environment_file(tmp_path / "hyperpod-environment.json")


def test_the_environment_file_is_the_validated_config(tmp_path: Path) -> None:
    config = load_environment(_environment_file(tmp_path), tmp_path)
    assert config.cluster_name == "shared-train"
    assert config.network.vpc_id == "vpc-0a1b2c3d4e5f67890"
    assert config.network.compute_subnet_id == "subnet-0a1b2c3d4e5f67890"
    assert config.network.security_group_ids == ["sg-0a1b2c3d4e5f67890"]
    assert [g.name for g in config.cluster.instance_groups] == ["controller", "cpu"]


def test_status_of_a_composed_app_from_its_environment_file(
    tmp_path: Path, aws: StubbedAws, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _environment_file(tmp_path)
    # the file names its account: status first checks the credentials are of it (review L5)
    identity(aws, "111122223333")
    cluster_present(aws, "shared-train", groups=[])
    aws.stub("sagemaker").add_response(
        "list_cluster_nodes", {"ClusterNodeSummaries": []}, {"ClusterName": "shared-train"}
    )
    code = status.main([str(path), "--project-root", str(tmp_path)], aws.make_clients)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("cluster shared-train: InService (")
