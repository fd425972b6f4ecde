"""How the tools run the CDK app (hyperpod_ops.cdk_app): in a subprocess, with the environment
the CDK CLI gives an app (aws-cdk 2.1148.1: CDK_OUTDIR, CDK_CONTEXT_JSON with cdk.json's context
and the -c pairs, CDK_DEFAULT_ACCOUNT), reading the assembly's manifest.json; and the chart's
mirror list, a command of the tools (issue 36). The real app is run by the update notes and deploy
gate tests (tests/stacks)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from hyperpod_cdk.facts.chart import mirror_list
from hyperpod_ops import cdk_app, chart

ROOT = Path(__file__).resolve().parents[2]

# A stand-in app: records what it was given, writes a one-stack assembly (or fails).
STAND_IN = """\
import json, os, pathlib, sys
out = pathlib.Path(os.environ["CDK_OUTDIR"])
pathlib.Path(sys.argv[1]).write_text(json.dumps({
    "context": json.loads(os.environ["CDK_CONTEXT_JSON"]),
    "account": os.environ.get("CDK_DEFAULT_ACCOUNT"),
    "cwd": os.getcwd(),
}))
if len(sys.argv) > 2:
    print("the report", file=sys.stderr)
    print("compliance packs: the findings above failed the synth", file=sys.stderr)
    sys.exit(1)
out.mkdir(parents=True, exist_ok=True)
(out / "env-net.template.json").write_text(json.dumps({"Resources": {"T": {"Type": "X"}}}))
(out / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": {
    "envnet": {"type": "aws:cloudformation:stack", "environment": "aws://111122223333/us-west-2",
               "properties": {"templateFile": "env-net.template.json", "stackName": "env-net"}},
    "Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}}}}))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: a cdk.json with one feature flag, and the stand-in app."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "cdk.json").write_text(json.dumps({"app": "x", "context": {"@aws-cdk/flag": True}}))
    (root / "stand_in.py").write_text(STAND_IN)
    return root


def test_the_app_gets_what_the_cdk_cli_gives_it_and_its_assembly_is_read(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "999999999999")  # the caller's is not passed on
    seen = tmp_path / "seen.json"
    out = tmp_path / "out"
    config = tmp_path / "env.yaml"
    cdk_app.synthesize(
        config,
        out,
        project_root=project,
        app=f"{sys.executable} stand_in.py {seen}",
        context={"destroy_data": "true"},
        account="111122223333",
        files_root=tmp_path / "base",
    )
    given = json.loads(seen.read_text())
    assert given["context"] == {
        "@aws-cdk/flag": True,
        "destroy_data": "true",
        "config": str(config),
        "project_root": str(tmp_path / "base"),
    }
    assert given["account"] == "111122223333"
    assert given["cwd"] == str(project)
    assert cdk_app.assembly_templates(out) == {"env-net": {"Resources": {"T": {"Type": "X"}}}}
    (stack,) = cdk_app.assembly_stacks(out)
    assert (stack.account, stack.region) == ("111122223333", "us-west-2")

    cdk_app.synthesize(
        config, tmp_path / "out2", project_root=project, app=f"{sys.executable} stand_in.py {seen}"
    )
    given = json.loads(seen.read_text())
    assert "project_root" not in given["context"] and given["account"] is None


def test_a_failed_synth_shows_the_apps_output_and_names_its_last_line(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(cdk_app.SynthError) as failed:
        cdk_app.synthesize(
            tmp_path / "env.yaml",
            tmp_path / "out",
            project_root=project,
            app=f"{sys.executable} stand_in.py {tmp_path / 'seen.json'} fail",
        )
    assert str(failed.value) == "compliance packs: the findings above failed the synth"
    assert "the report" in capsys.readouterr().err


def test_the_default_app_is_the_projects_app_py_run_by_this_python(project: Path) -> None:
    assert cdk_app.app_command(project) == [sys.executable, str(project / "app.py")]


def test_app_py_reads_the_config_files_from_the_project_root_of_the_context(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The update notes' git base: its lifecycle scripts and users file are the revision's."""
    spec = importlib.util.spec_from_file_location("hyperpod_app_under_test", ROOT / "app.py")
    assert spec is not None and spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    monkeypatch.delenv("CDK_CONTEXT_JSON", raising=False)
    assert app.files_root() == ROOT
    monkeypatch.setenv("CDK_CONTEXT_JSON", json.dumps({"project_root": str(tmp_path)}))
    assert app.files_root() == tmp_path


def test_the_mirror_list_is_a_command_of_the_tools(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m hyperpod_ops.chart --mirror-list REGION`` (docs/eks.md): one line per image."""
    assert chart.main(["--mirror-list", "us-west-2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = mirror_list("us-west-2")
    assert expected and lines == [f"{s} -> <eks.image_registry>/{t}" for s, t in expected]
