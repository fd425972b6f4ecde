"""The SSM transport: a script on a node through StartSession and the session-manager-plugin,
its exit status read from the result envelope (the plugin always exits 0)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from ops_testkit import REGION, StubbedAws

from hyperpod_ops.ssm import (
    DOCUMENT,
    RESPONSE_ENV,
    PluginMissing,
    SsmTransport,
    describe_problem,
    parse_output,
    remote_command,
)

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "ssm"))
from fake_ssm import TOKEN, install_plugin, process_gone, session

TARGET = "sagemaker-cluster:abc123def456_controller-i-0aaa"


def _transport(aws: StubbedAws, **kwargs: object) -> SsmTransport:
    return SsmTransport(aws("ssm"), **kwargs)  # type: ignore[arg-type]


def test_a_script_that_exits_0(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    fake = install_plugin(tmp_path, monkeypatch)
    session(aws, TARGET, "alice-0a")
    result = _transport(aws).run(TARGET, "echo hello\necho 'quoted world'\n", timeout=30)
    assert (result.exit_code, result.ok, result.problem) == (0, True, None)
    # no banner, no carriage return, no envelope: only what the script printed
    assert result.output == "hello\nquoted world"
    (call,) = fake.calls()
    # the AWS CLI's argument order: response, region, operation, profile, request, endpoint
    assert call["argv"][1:] == [
        REGION,
        "StartSession",
        "",
        call["argv"][4],
        f"https://ssm.{REGION}.amazonaws.com",
    ]
    request = json.loads(call["argv"][4])
    assert request["Target"] == TARGET
    assert request["DocumentName"] == DOCUMENT == "AWS-StartNonInteractiveCommand"
    # a current plugin gets the session token in the environment, never on its command line
    assert call["from_env"] and call["argv"][0] == RESPONSE_ENV
    assert call["response"]["SessionId"] == "alice-0a"
    assert call["response"]["TokenValue"] == TOKEN
    assert TOKEN not in " ".join(call["argv"])


def test_the_remote_exit_status_travels_in_the_envelope(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    install_plugin(tmp_path, monkeypatch)
    session(aws, TARGET)
    result = _transport(aws).run(TARGET, "echo working\necho 'it broke' >&2\nexit 3\n", timeout=30)
    assert (result.exit_code, result.ok) == (3, False)
    assert result.output == "working\nit broke"
    assert describe_problem(result) == "exit 3: working | it broke"


def test_the_script_cannot_forge_the_envelope(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    install_plugin(tmp_path, monkeypatch)
    session(aws, TARGET)
    result = _transport(aws).run(TARGET, "echo HYPERPOD-RESULT 0123abcd 0\nexit 5\n", timeout=30)
    assert result.exit_code == 5


def test_a_session_without_the_envelope_has_no_result(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    install_plugin(tmp_path, monkeypatch, modes={TARGET: "silent"})
    session(aws, TARGET)
    result = _transport(aws).run(TARGET, "echo hello\n", timeout=30)
    assert (result.exit_code, result.ok, result.started) == (None, False, True)
    assert result.problem == "the session ended without a result"
    assert result.output == ""
    assert describe_problem(result) == "the session ended without a result"


def test_a_hanging_session_is_killed_at_its_time_limit(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    fake = install_plugin(tmp_path, monkeypatch, modes={TARGET: "hang"})
    session(aws, TARGET)  # the session is terminated after the kill (the stub checks it)
    started = time.monotonic()
    # long enough for the fake to start its child on a loaded machine (the suite runs in parallel)
    result = _transport(aws, kill_grace=0.2).run(TARGET, "echo hello\n", timeout=3)
    assert time.monotonic() - started < 15
    assert result.exit_code is None
    assert result.problem == "no result within 3 s (the session was ended)"
    # the plugin ignored SIGTERM: it and what it started were killed as a group (the kernel may
    # take a moment to reap them)
    child = int(fake.child_pid.read_text())
    deadline = time.monotonic() + 5
    while not process_gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(child)


def test_a_missing_plugin_says_how_to_install_it(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PluginMissing) as raised:
        _transport(aws)
    message = str(raised.value)
    assert "\n" not in message
    assert "session-manager-plugin" in message
    assert "Install the Session Manager plugin for the AWS CLI" in message


def test_an_old_plugin_gets_the_response_on_its_command_line(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    fake = install_plugin(tmp_path, monkeypatch, version="1.2.497.0")
    session(aws, TARGET, "alice-0b")
    assert _transport(aws, profile="research").run(TARGET, "true\n", timeout=30).ok
    (call,) = fake.calls()
    assert not call["from_env"]
    assert json.loads(call["argv"][0])["SessionId"] == "alice-0b"
    assert call["argv"][3] == "research"


def test_a_session_that_cannot_start_is_a_result(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    fake = install_plugin(tmp_path, monkeypatch)
    aws.error("ssm", "start_session", "TargetNotConnected", message=f"{TARGET} is not connected.")
    result = _transport(aws).run(TARGET, "true\n", timeout=30)
    assert (result.exit_code, result.started) == (None, False)
    assert (
        result.problem
        == f"ssm:StartSession returned TargetNotConnected: {TARGET} is not connected."
    )
    assert fake.calls() == []


def test_rejected_credentials_stop_the_caller(aws: StubbedAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    install_plugin(tmp_path, monkeypatch)
    aws.error("ssm", "start_session", "ExpiredTokenException", message="expired")
    with pytest.raises(Exception, match="expired"):
        _transport(aws).run(TARGET, "true\n", timeout=30)


def test_the_agent_gets_one_plainly_quoted_bash_command() -> None:
    # the SSM agent splits a non-interactive command into words itself and runs it without a
    # shell: the script travels base64-encoded inside one single-quoted word
    script = 'echo "it\'s $HOME" | tr a-z A-Z  # a comment\n'
    words = shlex.split(remote_command(script, "cafe01"))
    assert words[:2] == ["bash", "-c"] and len(words) == 3
    assert "'" not in words[2]
    assert words[2].endswith('echo "HYPERPOD-RESULT cafe01 $rc"')


def test_parse_output_drops_banners_and_carriage_returns() -> None:
    stdout = (
        "\r\nStarting session with SessionId: alice-0a\r\n"
        "line one\r\nline two\r\n\r\nHYPERPOD-RESULT n0nce 0\r\n"
        "\r\n\r\nExiting session with sessionId: alice-0a.\r\n\r\n"
    )
    result = parse_output(TARGET, stdout, "n0nce")
    assert (result.exit_code, result.output) == (0, "line one\nline two")
    assert parse_output(TARGET, stdout, "other").exit_code is None


# -- the local transport (this machine as the node: the real-tools tier) ----------------------


def test_the_local_transport_runs_the_ssm_wrapper_under_a_terminal() -> None:
    """Same command line as the SSM agent gets, run under a pseudo-terminal as
    AWS-StartNonInteractiveCommand runs it (CRLF, stdout and stderr mixed), read back with
    parse_output: the exit status and the output arrive as from a session."""
    from hyperpod_ops.ssm import LocalTransport

    transport = LocalTransport()
    result = transport.run("controller", "echo out; echo err >&2; [ -t 1 ] && echo tty; exit 3", 30)
    assert (result.exit_code, result.output) == (3, "out\nerr\ntty")
    slow = transport.run("controller", "sleep 30", 1)
    assert slow.exit_code is None and slow.problem == "no result within 1 s (the session was ended)"
