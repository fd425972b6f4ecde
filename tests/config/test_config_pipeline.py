"""A pipeline file's stages (loader.load_stages, config/pipeline.py): each stage config is read
relative to the pipeline file and validated whole, and the stages must not deploy over each other.

Every problem of a stage is reported at ``pipeline.stages[i]...``, all of them in one run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from config_testkit import PIPELINE_BASE, REPO
from pipeline_config_testkit import (
    DEV_ACCOUNT,
    PROD_ACCOUNT,
    default_stages,
    project,
    stage_env,
    write_pipeline,
)

from hyperpod_cdk.config import ConfigError, EnvironmentConfig, Issue, PipelineFileConfig
from hyperpod_cdk.config.loader import load_stages, validate_file

SHIPPED_PIPELINE = REPO / "config" / "examples" / "pipeline.yaml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return project(tmp_path / "project")


def problems(path: Path, root: Path) -> list[str]:
    """Every error of the pipeline file at ``path``, as the lines the CLI prints ([] if valid)."""
    try:
        validate_file(path, root)
    except ConfigError as exc:
        return [str(i) for i in exc.issues]
    return []


def stage_issue(index: int, text: str) -> str:
    return f"config error: pipeline.stages[{index}].config: {text}"


# -- the shipped example ---------------------------------------------------------------------


def test_shipped_pipeline_deploys_dev_then_prod_into_their_own_accounts() -> None:
    cfg, warnings = validate_file(SHIPPED_PIPELINE, REPO)
    assert isinstance(cfg, PipelineFileConfig)
    assert warnings == []
    stages, _ = load_stages(cfg, SHIPPED_PIPELINE, REPO)
    assert [(s.name, s.stage.approval) for s in stages] == [("dev", False), ("prod", True)]
    accounts = [s.config.account for s in stages]
    assert None not in accounts
    assert len({cfg.account, *accounts}) == 3  # tooling, dev and prod accounts differ
    for stage in stages:
        assert stage.path.is_relative_to(SHIPPED_PIPELINE.parent)


# -- where the stage files are -----------------------------------------------------------------


def test_stage_paths_are_relative_to_the_pipeline_file(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_pipeline(root)
    monkeypatch.chdir(root / "lifecycle_assets")  # neither the project root nor the file's folder
    cfg, warnings = validate_file(path, root)
    assert isinstance(cfg, PipelineFileConfig) and warnings == []
    stages, _ = load_stages(cfg, path, root)
    assert [s.path for s in stages] == [
        root / "delivery" / "envs" / "dev.yaml",
        root / "delivery" / "envs" / "prod.yaml",
    ]
    assert all(isinstance(s.config, EnvironmentConfig) for s in stages)
    assert [s.config.account for s in stages] == [DEV_ACCOUNT, PROD_ACCOUNT]


def test_a_missing_stage_file_is_reported_at_its_stage(root: Path) -> None:
    path = write_pipeline(root, entries=[{"name": "dev", "config": "envs/nope.yaml"}])
    [line] = problems(path, root)
    assert line.startswith(stage_issue(0, "'envs/nope.yaml' is not a file ("))
    assert line.endswith("stage config paths are relative to the pipeline file")


def test_a_stage_file_outside_the_project_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "dev.yaml"
    outside.parent.mkdir()
    outside.write_text(yaml.safe_dump(stage_env()))
    path = write_pipeline(root, entries=[{"name": "dev", "config": "../../elsewhere/dev.yaml"}])
    [line] = problems(path, root)
    assert line.startswith(stage_issue(0, "'../../elsewhere/dev.yaml' is outside the project"))
    assert "checkout of the repository" in line


def test_a_pipeline_file_outside_the_project_is_refused(root: Path, tmp_path: Path) -> None:
    path = write_pipeline(tmp_path / "outside")
    lines = problems(path, root)
    assert f"config error: {path}: is outside the project ({root.resolve()}); " in lines[0]
    assert "synth step reads the pipeline file from its checkout" in lines[0]


def test_a_stage_config_must_describe_an_environment(root: Path) -> None:
    path = write_pipeline(root, {"dev": yaml.safe_dump(PIPELINE_BASE)})
    assert problems(path, root) == [
        stage_issue(0, "'envs/dev.yaml' is a pipeline file; a stage needs an environment config")
    ]


# -- problems inside a stage file --------------------------------------------------------------


def test_a_problem_in_a_stage_file_names_the_stage_the_file_and_the_key(root: Path) -> None:
    stages = default_stages()
    stages["prod"] = stage_env(account=PROD_ACCOUNT, **{"storage.fsx.storage_capacity_gib": 1300})
    path = write_pipeline(root, stages)
    assert problems(path, root) == [
        stage_issue(
            1,
            "envs/prod.yaml: storage.fsx.storage_capacity_gib: 1300 is not valid for "
            "PERSISTENT_2; use 1200 or a multiple of 2400",
        )
    ]


def test_a_stage_file_that_is_not_yaml_is_reported_without_a_key(root: Path) -> None:
    path = write_pipeline(root, {"dev": "name: a\nname: b\n"})
    [line] = problems(path, root)
    assert line.startswith(stage_issue(0, "envs/dev.yaml: not valid YAML (line 2"))


def test_every_problem_of_every_stage_is_reported_in_one_run(root: Path) -> None:
    stages = {
        "dev": stage_env(account=None),
        "prod": stage_env(account=PROD_ACCOUNT, nmae="x", **{"network.nat_gateways": 3}),
    }
    lines = problems(write_pipeline(root, stages), root)
    assert [line.split(": ")[1:4] for line in lines] == [
        ["pipeline.stages[0].config", "envs/dev.yaml", "account"],
        ["pipeline.stages[1].config", "envs/prod.yaml", "nmae"],
    ], lines


def test_a_stage_needs_an_account(root: Path) -> None:
    path = write_pipeline(root, {"dev": stage_env(account=None)})
    [line] = problems(path, root)
    assert line.startswith(
        stage_issue(0, "envs/dev.yaml: account: required key is missing; a pipeline stage deploys")
    )


def test_the_warnings_of_a_stage_file_are_kept_with_the_stage(root: Path) -> None:
    efa_fsx_and_trainium: dict[str, Any] = {
        "storage.fsx.efa_enabled": True,
        "storage.fsx.throughput_per_tib": 1000,
        "storage.fsx.storage_capacity_gib": 4800,
        "cluster.instance_groups[3]": {
            "name": "trn",
            "instance_type": "ml.trn2.48xlarge",
            "count": 1,
        },
    }
    stages = {"dev": stage_env(**efa_fsx_and_trainium)}
    _, warnings = validate_file(write_pipeline(root, stages), root)
    assert [str(w) for w in warnings] == [
        "config warning: pipeline.stages[0].config: envs/dev.yaml: cluster.instance_groups[3]: "
        "ml.trn2.48xlarge is not an EFA client of FSx for Lustre; this group reaches the "
        "EFA-enabled file system over TCP"
    ]


# -- stages that would deploy over each other ------------------------------------------------


def test_two_stages_may_not_deploy_one_environment_to_the_same_account_and_region(
    root: Path,
) -> None:
    stages = {"dev": stage_env(account=DEV_ACCOUNT), "prod": stage_env(account=DEV_ACCOUNT)}
    assert problems(write_pipeline(root, stages), root) == [
        stage_issue(
            1,
            f"envs/prod.yaml: name: 'research' in account {DEV_ACCOUNT}, us-west-2 is also the "
            "environment of stage 'dev'; the two would deploy the same resources: give one stage "
            "another name, account or region",
        )
    ]


def test_two_stages_may_not_create_one_cluster_in_the_same_account_and_region(root: Path) -> None:
    stages = {
        "dev": stage_env("research-dev", **{"cluster.name": "research"}),
        "prod": stage_env("research", account=DEV_ACCOUNT),
    }
    [line] = problems(write_pipeline(root, stages), root)
    assert line.startswith(
        stage_issue(
            1, "envs/prod.yaml: cluster.name: 'research' in account 444455556666, us-west-2"
        )
    )
    assert "cluster names are unique per account and region" in line


@pytest.mark.parametrize(
    "prod",
    [
        pytest.param({"account": PROD_ACCOUNT}, id="another-account"),
        pytest.param(
            {
                "account": DEV_ACCOUNT,
                "region": "us-east-1",
                "network.availability_zone_id": "use1-az2",
            },
            id="another-region",
        ),
        pytest.param({"account": DEV_ACCOUNT, "name": "research-prod"}, id="another-name"),
    ],
)
def test_the_same_environment_elsewhere_is_fine(root: Path, prod: dict[str, Any]) -> None:
    account = prod.pop("account")
    stages = {"dev": stage_env(), "prod": stage_env(account=account, **prod)}
    assert problems(write_pipeline(root, stages), root) == []


# -- stage names -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Source", "Build", "UpdatePipeline", "Assets"])
def test_a_stage_may_not_take_the_name_of_a_stage_cdk_pipelines_adds(root: Path, name: str) -> None:
    path = write_pipeline(root, {name: stage_env()})
    assert problems(path, root) == [
        f"config error: pipeline.stages[0].name: {name!r} is a stage CDK Pipelines adds itself "
        "(Source, Build, UpdatePipeline, Assets); choose another name"
    ]


def test_a_stage_may_not_take_the_id_of_the_pipeline_stack(root: Path) -> None:
    name = f"{PIPELINE_BASE['name']}-pipeline"
    path = write_pipeline(root, {name: stage_env()})
    assert problems(path, root) == [
        f"config error: pipeline.stages[0].name: {name!r} is the id of the pipeline's own "
        "stack; choose another name"
    ]


# -- the commands --------------------------------------------------------------------------------


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO / "constructs"), env.get("PYTHONPATH")])
    )
    env.pop("CDK_CONTEXT_JSON", None)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def test_validate_checks_the_stages_of_a_pipeline_file() -> None:
    result = run("-m", "hyperpod_cdk.config", "config/examples/pipeline.yaml")
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout
        == "config/examples/pipeline.yaml: valid: pipeline 'ml-research' (account 111122223333, "
        "us-west-2) with 2 stages: dev (account 444455556666, us-west-2), prod (account "
        "777788889999, us-west-2, after a manual approval)\n"
    )


@pytest.fixture
def app_main(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``app_main(root, path)``: app.py's main with ``root`` as the project, run in-process
    (an invalid config returns before the CDK starts)."""
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.delenv("CDK_CONTEXT_JSON", raising=False)
    import app

    def main(root: Path, path: Path) -> int:
        monkeypatch.setattr(app, "PROJECT_ROOT", root)
        return int(app.main(["app.py", str(path)]))

    return main


def test_validate_and_the_app_refuse_a_broken_stage_in_one_line_each(
    root: Path, app_main: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    stages = default_stages()
    stages["prod"] = stage_env(account=PROD_ACCOUNT, **{"storage.fsx.storage_capacity_gib": 1300})
    path = write_pipeline(root, stages)
    expected = stage_issue(
        1,
        "envs/prod.yaml: storage.fsx.storage_capacity_gib: 1300 is not valid for PERSISTENT_2; "
        "use 1200 or a multiple of 2400",
    )
    assert app_main(root, path) == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [expected])
    result = run("-m", "hyperpod_cdk.config", str(path), cwd=root)  # make validate: cwd is the root
    assert result.returncode == 2
    assert result.stderr.splitlines() == [expected]
    assert "Traceback" not in result.stderr


def test_the_app_refuses_a_pipeline_file_outside_the_project(tmp_path: Path) -> None:
    path = write_pipeline(project(tmp_path))
    result = run("app.py", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"config error: {path}: is outside the project")
    assert "Traceback" not in result.stderr


def test_issue_paths_of_a_stage_are_the_stage_key() -> None:
    # the dotted path of every stage problem is the stage's own key, so editors can point at it
    assert str(Issue("pipeline.stages[0].config", "envs/dev.yaml: x: y")).startswith(
        "config error: pipeline.stages[0].config: "
    )


# -- allow_replace: what a stage's deploy gate lets through ------------------------------------


def _entries(**allow: list[str]) -> list[dict[str, Any]]:
    return [
        {"name": "dev", "config": "envs/dev.yaml", "allow_replace": allow.get("dev", [])},
        {"name": "prod", "config": "envs/prod.yaml", "allow_replace": allow.get("prod", [])},
    ]


def test_allow_replace_names_the_stages_own_stacks(root: Path) -> None:
    write_pipeline(root)  # the stage files
    path = write_pipeline(root, entries=_entries(prod=["prod-research-cluster/HyperPodCluster"]))
    cfg, _ = validate_file(path, root)
    assert isinstance(cfg, PipelineFileConfig)
    stages, _ = load_stages(cfg, path, root)
    assert [s.stage.allow_replace for s in stages] == [
        [],
        ["prod-research-cluster/HyperPodCluster"],
    ]


def test_allow_replace_entries_are_checked_each_at_its_key(root: Path) -> None:
    write_pipeline(root)
    path = write_pipeline(
        root,
        entries=_entries(
            dev=["HyperPodCluster", "dev-research-storage/FileSystem"],
            prod=[
                "dev-research-cluster/HyperPodCluster",  # the other stage's stack
                "prod-research-storage/FileSystem",
                "prod-research-storage/FileSystem",
            ],
        ),
    )
    assert problems(path, root) == [
        "config error: pipeline.stages[0].allow_replace[0]: 'HyperPodCluster' is not valid; use "
        "<stack>/<logical id> as the deploy gate names it, e.g. "
        "prod-research-cluster/HyperPodCluster"
    ]
    path = write_pipeline(
        root,
        entries=_entries(
            prod=[
                "dev-research-cluster/HyperPodCluster",
                "prod-research-storage/FileSystem",
                "prod-research-storage/FileSystem",
            ]
        ),
    )
    assert problems(path, root) == [
        "config error: pipeline.stages[1].allow_replace[0]: 'dev-research-cluster/HyperPodCluster' "
        "names stack 'dev-research-cluster', which is not a stack of stage 'prod': its stacks are "
        "named prod-research-<kind> (e.g. prod-research-cluster/HyperPodCluster)",
        "config error: pipeline.stages[1].allow_replace[2]: 'prod-research-storage/FileSystem' is "
        "listed twice; name each resource once",
    ]
