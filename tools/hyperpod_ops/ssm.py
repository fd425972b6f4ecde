"""Run a shell script on a HyperPod node through an SSM session, and read its exit status.

HyperPod nodes are reached with SSM ``StartSession`` only (target
``sagemaker-cluster:<cluster-id>_<group>-<instance-id>``); ``SendCommand`` does not apply to
them. This module does what ``aws ssm start-session --target T --document-name
AWS-StartNonInteractiveCommand --parameters command=[...]`` does: ``ssm.start_session`` with
boto3, then AWS's ``session-manager-plugin`` binary with the same arguments as the AWS CLI
(``awscli/customizations/sessionmanager.py``)::

    session-manager-plugin <response json | AWS_SSM_START_SESSION_RESPONSE> <region> StartSession
                           <profile or ''> <request json> <ssm endpoint url>

The plugin always exits 0 and mixes its banners into stdout (``Starting session with SessionId:
...``, ``Exiting session with sessionId: ...``), with CRLF line ends at times: its exit status
never carries the remote one. So the remote side prints its own result envelope, a line
``HYPERPOD-RESULT <nonce> <exit code>`` with a random nonce per call (the script's own output
cannot forge it), and a session that ends without it has no result.

The SSM agent runs a non-interactive command without a shell: it splits the command line
(shell-like quoting) and executes it (amazon-ssm-agent ``agent/session/shell/shell_unix.go``).
The command is therefore ``bash -c '<wrapper>'``, the wrapper holding the script base64-encoded,
so that no quoting of the script reaches the agent.

Used by ``make sync-users`` and ``make verify``. boto3 is not imported here: the caller passes
an SSM client. :class:`LocalTransport` runs the same wrapper on this machine (the tests against
real Slurm use it in place of a session).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from hyperpod_ops.aws import describe_error, is_client_error, one_line, unavailable_reason

PLUGIN = "session-manager-plugin"
DOCUMENT = "AWS-StartNonInteractiveCommand"
RESULT_MARKER = "HYPERPOD-RESULT"
# The AWS CLI hands plugins newer than this version the StartSession response (which holds the
# session token) in this environment variable instead of on the command line, where any local
# user could read it (awscli/customizations/sessionmanager.py, LAST_PLUGIN_VERSION_WITHOUT_ENV_VAR).
LAST_PLUGIN_VERSION_WITHOUT_ENV_VAR = (1, 2, 497, 0)
RESPONSE_ENV = "AWS_SSM_START_SESSION_RESPONSE"
INSTALL_HINT = (
    "install it as the AWS Systems Manager user guide says ('Install the Session Manager plugin "
    "for the AWS CLI', https://docs.aws.amazon.com/systems-manager/latest/userguide/"
    "session-manager-working-with-install-plugin.html), then retry"
)
# The plugin's own lines on stdout (session-manager-plugin src/sessionmanagerplugin/session).
_BANNER = re.compile(r"^(Starting session with SessionId: |Exiting session with sessionId: )")
_VERSION = re.compile(r"^\d+(\.\d+){0,3}$")
# How long the plugin may take to say its version.
VERSION_TIMEOUT_SECONDS = 10


class PluginMissing(Exception):
    """``session-manager-plugin`` is not on PATH; the message says how to install it."""

    def __init__(self) -> None:
        super().__init__(
            f"the AWS Session Manager plugin ({PLUGIN}) is not on PATH; {INSTALL_HINT}"
        )


@dataclass(frozen=True)
class RemoteResult:
    """What one command on one node gave.

    ``exit_code`` is the remote script's exit status, None when the session gave none
    (``problem`` says why: it could not start, it ended without the result envelope, it timed
    out). ``output`` is the remote output (stdout and stderr), without the plugin's banners,
    with ``\\n`` line ends. ``started`` is False when StartSession itself failed.
    """

    target: str
    exit_code: int | None
    output: str
    problem: str | None = None
    started: bool = True

    @property
    def ok(self) -> bool:
        """The script ran and exited 0."""
        return self.exit_code == 0

    def tail(self, lines: int = 3) -> str:
        """The last ``lines`` non-empty lines of the output, joined with `` | ``."""
        found = [line.strip() for line in self.output.splitlines() if line.strip()]
        return " | ".join(found[-lines:])


def find_plugin() -> str:
    """The plugin's path.

    :raises PluginMissing: it is not on PATH.
    """
    path = shutil.which(PLUGIN)
    if path is None:
        raise PluginMissing()
    return path


def _takes_response_env(plugin: str) -> bool:
    """True when the plugin reads the StartSession response from :data:`RESPONSE_ENV` (as the
    AWS CLI decides it: a version strictly newer than 1.2.497.0)."""
    try:
        answer = subprocess.run(
            [plugin, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    version = re.sub(r"\s+", "", answer.stdout)
    if not _VERSION.match(version):
        return False
    parts = [int(p) for p in version.split(".")]
    parts += [0] * (len(LAST_PLUGIN_VERSION_WITHOUT_ENV_VAR) - len(parts))
    return tuple(parts) > LAST_PLUGIN_VERSION_WITHOUT_ENV_VAR


def remote_command(script: str, nonce: str) -> str:
    """The command line the SSM agent runs: ``bash -c '<wrapper>'``.

    The wrapper writes ``script`` (base64 on the command line) to a temporary file, runs it with
    bash (stdin from /dev/null), removes the file and prints the envelope on a line of its own.
    It holds no single quote, so the whole command is one plainly quoted word for the agent.
    """
    encoded = base64.b64encode(script.encode()).decode()
    wrapper = (
        f'f="$(mktemp)" && printf %s {encoded} | base64 -d > "$f" && bash "$f" < /dev/null; '
        f'rc=$?; [ -z "$f" ] || rm -f "$f"; echo; echo "{RESULT_MARKER} {nonce} $rc"'
    )
    return shlex.join(["bash", "-c", wrapper])


def parse_output(target: str, stdout: str, nonce: str) -> RemoteResult:
    """The result in the plugin's ``stdout``: banners dropped, CRLF made LF, the envelope read."""
    text = stdout.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line for line in text.split("\n") if not _BANNER.match(line)]
    envelope = re.compile(rf"^{RESULT_MARKER} {re.escape(nonce)} (\d+)\s*$")
    for index in range(len(lines) - 1, -1, -1):
        match = envelope.match(lines[index])
        if match:
            before = lines[:index]
            if before and before[-1] == "":
                before = before[:-1]  # the blank line the wrapper prints before the envelope
            output = "\n".join(before).strip("\n")
            return RemoteResult(target, int(match.group(1)), output)
    output = "\n".join(lines).strip("\n")
    return RemoteResult(target, None, output, "the session ended without a result")


class Transport(Protocol):
    """What runs a script on a node: :class:`SsmTransport`, or :class:`LocalTransport` (this
    machine as the node, for the tests against real programs)."""

    def run(
        self, target: str, script: str, timeout: float, reason: str | None = None
    ) -> RemoteResult:
        """Run ``script`` (bash) on ``target``; at most ``timeout`` seconds."""

    def abort(self) -> None:
        """End every call still running."""


class SsmTransport:
    """Runs scripts on nodes over SSM sessions, one session per call; calls may run in threads.

    :param ssm: a boto3 SSM client (its region and endpoint are handed to the plugin).
    :param profile: the AWS profile the plugin uses for its own calls ('' when None: the usual
        chain, as the AWS CLI passes it).
    :param plugin: the plugin's path; default: ``session-manager-plugin`` on PATH.
    :param kill_grace: seconds between SIGTERM and SIGKILL of a plugin that ran out of time.
    :raises PluginMissing: no plugin given and none on PATH.
    """

    def __init__(
        self,
        ssm: Any,
        *,
        profile: str | None = None,
        plugin: str | None = None,
        kill_grace: float = 3.0,
    ) -> None:
        self.ssm = ssm
        self.profile = profile or ""
        self.plugin = plugin or find_plugin()
        self.kill_grace = kill_grace
        self._response_env = _takes_response_env(self.plugin)
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()

    def start_session_params(self, target: str, command: str, reason: str | None) -> dict[str, Any]:
        """The StartSession request (what the plugin also receives as its request JSON)."""
        params: dict[str, Any] = {
            "Target": target,
            "DocumentName": DOCUMENT,
            "Parameters": {"command": [command]},
        }
        if reason:
            params["Reason"] = reason
        return params

    def run(
        self, target: str, script: str, timeout: float, reason: str | None = None
    ) -> RemoteResult:
        """Run ``script`` (bash) on ``target``; at most ``timeout`` seconds for the session.

        An AWS error of StartSession is a result with ``started=False``; unusable credentials
        (expired, rejected) raise, since no other node would fare better.
        """
        nonce = secrets.token_hex(12)
        params = self.start_session_params(target, remote_command(script, nonce), reason)
        try:
            response = self.ssm.start_session(**params)
        except Exception as exc:
            if unavailable_reason(exc) is not None or not is_client_error(exc):
                raise
            return RemoteResult(target, None, "", describe_error(exc, [self.ssm]), started=False)
        session_id = str(response["SessionId"])
        try:
            stdout, problem = self._plugin(response, params, timeout)
        finally:
            self._terminate(session_id)
        result = parse_output(target, stdout, nonce)
        if problem is not None:
            return RemoteResult(target, None, result.output, problem)
        return result

    def _plugin(
        self, response: dict[str, Any], params: dict[str, Any], timeout: float
    ) -> tuple[str, str | None]:
        """Run the plugin for one session: its stdout, and the problem when it ran out of time."""
        session = json.dumps(
            {k: response[k] for k in ("SessionId", "TokenValue", "StreamUrl") if k in response}
        )
        env = dict(os.environ)
        if self._response_env:
            env[RESPONSE_ENV] = session
            session = RESPONSE_ENV
        argv = [
            self.plugin,
            session,
            self.ssm.meta.region_name,
            "StartSession",
            self.profile,
            json.dumps(params),
            self.ssm.meta.endpoint_url,
        ]
        try:
            # a session of its own: on a timeout the plugin is killed with everything it started
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return "", one_line(f"cannot run {self.plugin}: {exc}")
        with self._lock:
            self._running.add(process)
        try:
            try:
                out, err = process.communicate(timeout=timeout)
                problem = None
            except subprocess.TimeoutExpired:
                self._kill(process)
                out, err = self._drain(process)
                problem = f"no result within {timeout:g} s (the session was ended)"
        finally:
            with self._lock:
                self._running.discard(process)
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace").strip()
        if stderr:
            stdout += "\n" + stderr
        return stdout, problem

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGTERM to the plugin's process group; SIGKILL to what is left of the group after
        ``kill_grace`` seconds (or as soon as the plugin is gone)."""
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=self.kill_grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    @staticmethod
    def _drain(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
        try:
            return process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            # something outside the group still holds the pipes: give up on the rest
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait()
            return b"", b""

    def _terminate(self, session_id: str) -> None:
        """End the session on the service side (idempotent); a failure here changes no result."""
        try:
            self.ssm.terminate_session(SessionId=session_id)
        except Exception as exc:
            if not is_client_error(exc) and unavailable_reason(exc) is None:
                raise

    def abort(self) -> None:
        """Kill every plugin still running (Ctrl-C): their sessions end, their calls return."""
        with self._lock:
            running = list(self._running)
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def describe_problem(result: RemoteResult) -> str:
    """One line for a failed result: its exit code or problem, and the last lines of output."""
    if result.exit_code is not None:
        what = f"exit {result.exit_code}"
    else:
        what = result.problem or "no result"
    tail = result.tail()
    return one_line(f"{what}: {tail}" if tail else what)


class LocalTransport:
    """Runs scripts on this machine exactly as :class:`SsmTransport` has a node run them: the
    command line of :func:`remote_command` split as the SSM agent splits it (shell-like) and
    executed under a pseudo-terminal, as AWS-StartNonInteractiveCommand runs it (stdout and
    stderr mixed, CRLF line ends), and its output read with :func:`parse_output`. The target is
    only a label. Used by the tests that drive the node scripts against real programs.

    :param env: the environment of the command (default: this process's).
    """

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = env
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()

    def run(
        self, target: str, script: str, timeout: float, reason: str | None = None
    ) -> RemoteResult:
        """Run ``script`` (bash) here; at most ``timeout`` seconds (then its process group is
        killed and the result has no exit status)."""
        import pty  # POSIX only, as the nodes are

        nonce = secrets.token_hex(12)
        argv = shlex.split(remote_command(script, nonce))
        leader, follower = pty.openpty()
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=follower,
                stderr=follower,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(leader)
            os.close(follower)
            return RemoteResult(target, None, "", one_line(f"cannot run bash: {exc}"), False)
        os.close(follower)
        with self._lock:
            self._running.add(process)
        chunks: list[bytes] = []
        reader = threading.Thread(target=_read_all, args=(leader, chunks), daemon=True)
        reader.start()
        problem = None
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            problem = f"no result within {timeout:g} s (the session was ended)"
        finally:
            with self._lock:
                self._running.discard(process)
        reader.join(timeout=5)
        with contextlib.suppress(OSError):
            os.close(leader)
        result = parse_output(target, b"".join(chunks).decode("utf-8", "replace"), nonce)
        if problem is not None:
            return RemoteResult(target, None, result.output, problem)
        return result

    def abort(self) -> None:
        """Kill every command still running."""
        with self._lock:
            running = list(self._running)
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def _read_all(fd: int, chunks: list[bytes]) -> None:
    """Read a pseudo-terminal until its other side is closed (EIO on Linux)."""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        chunks.append(data)
