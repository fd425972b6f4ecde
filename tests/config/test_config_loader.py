"""The loader: YAML problems, the error contract, every problem in one run, the public model surface."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_testkit import DELETE, build
from pydantic import ValidationError

from hyperpod_cdk.config import (
    ConfigError,
    EnvironmentConfig,
    PipelineFileConfig,
    load_config,
    load_environment,
    parse,
    validate,
)

G = "cluster.instance_groups"


def errors_of(data: dict, root: Path | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse(data, root)
    return info.value


def test_error_line_follows_the_contract() -> None:
    exc = errors_of(build({"storage.fsx.storage_capacity_gib": 1300}))
    assert [str(i) for i in exc.issues] == [
        "config error: storage.fsx.storage_capacity_gib: 1300 is not valid for PERSISTENT_2; "
        "use 1200 or a multiple of 2400"
    ]
    assert str(exc) == str(exc.issues[0])


def test_every_field_problem_in_one_run() -> None:
    exc = errors_of(
        build(
            {
                "name": "Bad Name",
                "nmae": "typo",
                "storage.fsx.storage_capacity_gib": 1300,
                f"{G}[2].threads_per_core": 3,
                f"{G}[1].count": DELETE,
                "network.cidr": "10.0.0.1/16",
            }
        )
    )
    assert {i.path for i in exc.issues} == {
        "name",
        "nmae",
        "storage.fsx.storage_capacity_gib",
        f"{G}[2].threads_per_core",
        f"{G}[1].count",
        "network.cidr",
    }
    assert all(line.startswith("config error: ") for line in str(exc).splitlines())


def test_every_cross_key_problem_in_one_run(project_root: Path) -> None:
    exc = errors_of(
        build(
            {
                "network.nat_gateways": 0,
                "storage.fsx.backup_retention_days": 7,
                "cluster.slurm.config_strategy": "Merge",
                f"{G}[2].name": "login",
                f"{G}[2].availability_zone_id": "usw2-az3",
                f"{G}[0].partition": "ctl",
            }
        ),
        project_root,
    )
    assert {i.path for i in exc.issues} == {
        "network.nat_gateways",
        "storage.fsx.backup_retention_days",
        "cluster.slurm.config_strategy",
        f"{G}[2].name",
        f"{G}[2].availability_zone_id",
        f"{G}[0].partition",
    }


def test_warnings_travel_with_errors() -> None:
    exc = errors_of(
        build(
            {
                "storage.fsx.efa_enabled": True,
                "storage.fsx.throughput_per_tib": 1000,
                "storage.fsx.storage_capacity_gib": 4800,
                "network.additional_compute_cidrs": {"usw2-az3": "10.2.0.0/16"},
                f"{G}[2].availability_zone_id": "usw2-az3",
                "network.nat_gateways": 0,
            }
        )
    )
    assert [i.path for i in exc.issues] == ["network.nat_gateways"]
    assert [i.path for i in exc.warnings] == [f"{G}[2].availability_zone_id"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: [unclosed\nregion: us-west-2\n", "not valid YAML (line"),
        ("name: a\n  region: b\n", "not valid YAML (line 2"),
        (
            "name: a\nregion: us-west-2\nname: b\n",
            "not valid YAML (line 3, column 1): key 'name' is given twice",
        ),
        (
            "cluster:\n  instance_groups:\n    - name: a\n      count: 1\n      count: 2\n",
            "key 'count' is given twice in one mapping",
        ),
        ("!!python/object/apply:os.system ['true']\n", "not valid YAML"),
        ("", "the file must hold a mapping of keys"),
        ("- name: a\n", "the file must hold a mapping of keys"),
    ],
    ids=[
        "syntax",
        "indentation",
        "duplicate-key",
        "duplicate-nested-key",
        "python-tag",
        "empty",
        "list",
    ],
)
def test_yaml_problems(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "env.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, tmp_path)
    [issue] = info.value.issues
    assert issue.path == str(path)
    assert fragment in issue.message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "nope.yaml")


def test_load_environment_refuses_a_pipeline_file(tmp_path: Path) -> None:
    from pipeline_config_testkit import project, write_pipeline

    root = project(tmp_path)
    path = write_pipeline(root)  # with its stage configs, which a pipeline file's load reads
    assert isinstance(load_config(path, root), PipelineFileConfig)
    with pytest.raises(ConfigError) as info:
        load_environment(path, root)
    assert [i.path for i in info.value.issues] == ["pipeline"]


def test_public_model_surface(project_root: Path) -> None:
    cfg, warnings = validate(
        build({f"{G}[3]": {"name": "cpu", "instance_type": "ml.c5.large", "count": 1}}),
        project_root,
    )
    assert isinstance(cfg, EnvironmentConfig) and warnings == []
    assert cfg.cluster_name == "test-env" and cfg.is_slurm and cfg.cluster.continuous
    assert cfg.cluster.slurm_settings.accounting_database is False
    groups = cfg.cluster.instance_groups
    assert [g.effective_node_type for g in groups] == ["Controller", "Login", "Compute", "Compute"]
    assert [g.effective_partition for g in groups] == [None, None, "gpu", "cpu"]
    assert groups[2].all_instance_types == ["ml.p5.48xlarge"]
    assert groups[2].is_set("partition") and not groups[3].is_set("partition")
    assert str(cfg.network.compute_cidr) == "10.1.0.0/16"
    with pytest.raises(ValidationError):
        cfg.name = "other"  # type: ignore[misc]
