"""app.py, run the way the CDK CLI runs it: a complete cloud assembly, every line of output, and
no temporary files left behind by the fast exit after a successful synth (``end_process``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, cast

import jsii._runtime
import pytest

from hyperpod_cdk.config.loader import load_file

ROOT = Path(__file__).resolve().parents[1]
# an example whose config has a warning, so the test sees the app's own output arrive
CONFIG = "config/examples/full.yaml"


def run_app(config: str, outdir: Path, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    """``python app.py`` as ``cdk synth -c config=...`` starts it: context and output directory in
    the environment; temporary files (Python's and the jsii runtime's) under ``tmpdir``."""
    context = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**context, "config": config}),
        "CDK_OUTDIR": str(outdir),
        "TMPDIR": str(tmpdir),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "constructs"), str(ROOT)]),
    }
    return subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


def wait_until_empty(directory: Path, seconds: float) -> list[str]:
    """What is still in ``directory`` after at most ``seconds`` (the jsii runtime removes its own
    files as it exits, after the app's process has ended)."""
    deadline = time.monotonic() + seconds
    while (left := sorted(p.name for p in directory.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_a_synth_writes_every_stack_prints_every_line_and_leaves_no_temporary_files(
    tmp_path: Path,
) -> None:
    outdir, tmpdir = tmp_path / "cdk.out", tmp_path / "tmp"
    tmpdir.mkdir()
    done = run_app(CONFIG, outdir, tmpdir)

    assert done.returncode == 0, done.stderr
    # the config's warnings and nothing else: the jsii runtime has nothing to say on success,
    # so ending the process without waiting for it loses no line of its output
    _, _, warnings = load_file(ROOT / CONFIG, ROOT)
    assert warnings
    summary = (
        f"{CONFIG}: environment 'research-full' (slurm, us-west-2), cluster 'research-full' with "
        "6 instance groups, 14 nodes"
    )
    assert (done.stdout, done.stderr.splitlines()) == ("", [*map(str, warnings), summary])

    manifest = json.loads((outdir / "manifest.json").read_text(encoding="utf-8"))
    stacks = {
        name: artifact["properties"]["templateFile"]
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    assert set(stacks) == {
        f"research-full-{kind}"
        for kind in (
            "egress",
            "network",
            "storage",
            "nodes",
            "cluster",
            "metrics",
            "data-repositories",
        )  # fmt: skip
    }
    for template_file in stacks.values():
        assert json.loads((outdir / template_file).read_text(encoding="utf-8"))["Resources"]

    assert wait_until_empty(tmpdir, seconds=30) == []


@pytest.fixture
def app_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """app.py, imported (its top level loads nothing of the project or the CDK)."""
    monkeypatch.syspath_prepend(str(ROOT))
    import app

    return app


@pytest.fixture
def no_fast_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if ``os._exit`` is called."""
    monkeypatch.setattr(os, "_exit", lambda code: pytest.fail(f"os._exit({code})"))


@pytest.mark.usefixtures("no_fast_exit")
def test_a_failed_run_exits_with_its_code_through_the_normal_teardown(
    app_module: ModuleType,
) -> None:
    with pytest.raises(SystemExit) as exited:
        app_module.end_process(2)
    assert exited.value.code == 2


@pytest.mark.usefixtures("no_fast_exit")
def test_a_jsii_without_the_pinned_internals_exits_through_the_normal_teardown(
    app_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsii._runtime, "kernel", SimpleNamespace(provider=SimpleNamespace()))
    with pytest.raises(SystemExit) as exited:
        app_module.end_process(0)
    assert exited.value.code == 0


class FakeRuntime:
    """The parts of jsii's runtime process that ``end_process`` uses."""

    def __init__(self) -> None:
        self.stdin = io.BytesIO()
        self.stdin.close = lambda: setattr(self, "stdin_closed", True)  # type: ignore[method-assign]
        self.stdin_closed = False
        self._process = SimpleNamespace(stdin=self.stdin)
        self._ctx_stack = contextlib.ExitStack()
        self.scripts_removed = False
        self._ctx_stack.callback(lambda: setattr(self, "scripts_removed", True))

    def stop(self) -> None:
        pytest.fail("the runtime was waited for")


def test_a_successful_run_tells_the_runtime_to_exit_removes_its_scripts_and_ends_at_once(
    app_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = FakeRuntime()
    monkeypatch.setattr(
        jsii._runtime, "kernel", SimpleNamespace(provider=SimpleNamespace(_process=runtime))
    )
    unregistered: list[object] = []
    monkeypatch.setattr(app_module.atexit, "unregister", unregistered.append)

    class Ended(Exception):
        pass

    def os_exit(code: int) -> None:
        raise Ended(code)

    monkeypatch.setattr(os, "_exit", os_exit)
    with pytest.raises(Ended) as ended:
        app_module.end_process(0)
    assert ended.value.args == (0,)
    assert runtime.stdin.getvalue() == b'{"exit":0}\n' and runtime.stdin_closed
    assert runtime.scripts_removed
    assert unregistered == [runtime.stop]


def test_the_pinned_jsii_has_what_end_process_uses() -> None:
    # a jsii upgrade that changes these would silently bring back the slow exit
    runtime = cast(Any, jsii._runtime.kernel.provider)._process
    assert runtime._process.stdin is not None
    assert callable(runtime._ctx_stack.close)
    assert callable(runtime.stop)


def test_a_second_config_file_is_refused_not_ignored(
    app_module: ModuleType, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CDK_CONTEXT_JSON", raising=False)
    assert app_module.main(["app.py", "a.yaml", "b.yaml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "usage: python app.py [CONFIG] (or cdk synth -c config=CONFIG); got 2 arguments: "
        "a.yaml b.yaml"
    ]


def test_a_pipeline_file_says_what_it_synthesizes(
    app_module: ModuleType, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import stacks.app_builder

    synthesized: list[object] = []

    def build_pipeline_app(config: object, stages: object, **_: object) -> tuple[object, None]:
        return SimpleNamespace(synth=lambda: synthesized.append(config)), None

    monkeypatch.setattr(stacks.app_builder, "build_pipeline_app", build_pipeline_app)
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("CDK_CONTEXT_JSON", raising=False)
    assert app_module.main(["app.py", "config/examples/pipeline.yaml"]) == 0
    assert len(synthesized) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "config/examples/pipeline.yaml: pipeline 'ml-research' (account 111122223333, us-west-2) "
        "with 2 stages: dev (account 444455556666, us-west-2), prod (account 777788889999, "
        "us-west-2, after a manual approval)"
    ]
