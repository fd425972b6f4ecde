"""The Kubernetes client's HTTPS transport: what it sends, and how urllib's answers and errors
become a response, ``KubernetesDenied`` or ``KubernetesUnreachable``.

``urlopen`` is replaced by a fake that answers or raises the way urllib does (``HTTPError`` for
an HTTP error status, ``URLError`` around a socket error, ``TimeoutError`` on a read); one test
connects for real to a closed port on the loopback address, and two to a local TLS server with a
throwaway CA, as through a port-forward to a private endpoint.
"""

from __future__ import annotations

import base64
import http.server
import io
import json
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hyperpod_ops import k8s
from hyperpod_ops.k8s import Kubernetes, KubernetesDenied, KubernetesUnreachable

ENDPOINT = "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"
# any PEM text: the SSL context is replaced, except in the real connection test
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n").decode()
TOKEN = "k8s-aws-v1.aHR0cHM6Ly9zdHM"


class Answer(io.BytesIO):
    """What ``urlopen`` returns: a readable body with a status."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(body)
        self.status = status


class FakeUrlopen:
    """Records each request; answers ``result`` (an ``Answer``) or raises it (an exception)."""

    def __init__(self, result: Answer | BaseException) -> None:
        self.result = result
        self.calls: list[tuple[urllib.request.Request, float, Any]] = []

    def __call__(self, request: urllib.request.Request, *, timeout: float, context: Any) -> Answer:
        self.calls.append((request, timeout, context))
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


CONTEXT = object()


def api(monkeypatch: pytest.MonkeyPatch, result: Answer | BaseException) -> tuple[Kubernetes, FakeUrlopen]:  # fmt: skip
    fake = FakeUrlopen(result)
    monkeypatch.setattr(k8s.ssl, "create_default_context", lambda cadata: CONTEXT)
    monkeypatch.setattr(k8s.urllib.request, "urlopen", fake)
    return Kubernetes(k8s.https_transport(ENDPOINT, CA, TOKEN)), fake


def http_error(code: int, body: dict[str, Any]) -> urllib.error.HTTPError:
    return urllib.error.HTTPError(
        ENDPOINT, code, "error", Message(), io.BytesIO(json.dumps(body).encode())
    )


def test_a_get_sends_the_token_and_reads_json(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = {"kind": "DaemonSetList", "items": [{"metadata": {"name": "a"}}]}
    client, fake = api(monkeypatch, Answer(200, json.dumps(listed).encode()))
    assert client.items("/apis/apps/v1/daemonsets") == [{"metadata": {"name": "a"}}]
    ((request, timeout, context),) = fake.calls
    assert request.full_url == ENDPOINT + "/apis/apps/v1/daemonsets"
    assert request.get_method() == "GET" and request.data is None
    assert request.get_header("Authorization") == f"Bearer {TOKEN}"
    assert request.get_header("Accept") == "application/json"
    assert timeout == k8s.TIMEOUT_SECONDS == 5
    assert context is CONTEXT  # trusts the cluster's CA


def test_404_is_none_and_403_is_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = api(monkeypatch, http_error(404, {"kind": "Status", "reason": "NotFound"}))
    assert client.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y.z") is None
    assert client.items("/apis/example.com/v1/things") == []
    client, _ = api(monkeypatch, http_error(403, {"kind": "Status", "message": "forbidden"}))
    with pytest.raises(KubernetesDenied, match="forbidden"):
        client.items("/api/v1/secrets")
    client, _ = api(monkeypatch, http_error(401, {"kind": "Status", "message": "Unauthorized"}))
    with pytest.raises(KubernetesDenied, match="Unauthorized"):
        client.items("/api/v1/secrets")


@pytest.mark.parametrize(
    "error",
    [
        urllib.error.URLError(socket.gaierror(-2, "Name or service not known")),  # private DNS
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
        urllib.error.URLError(TimeoutError("timed out")),  # connect timeout
        TimeoutError("The read operation timed out"),  # read timeout: not wrapped
        urllib.error.URLError(ssl.SSLCertVerificationError("certificate verify failed")),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
    ids=["dns", "refused", "connect-timeout", "read-timeout", "tls", "reset"],
)
def test_an_endpoint_that_does_not_answer_is_unreachable(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    client, _ = api(monkeypatch, error)
    with pytest.raises(KubernetesUnreachable):
        client.items("/apis/apps/v1/daemonsets")


def test_an_answer_that_is_not_the_api_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = api(monkeypatch, Answer(200, b"<html>proxy login</html>"))
    with pytest.raises(KubernetesUnreachable, match="did not answer JSON"):
        client.items("/apis/apps/v1/daemonsets")
    client, _ = api(monkeypatch, http_error(500, {"message": "etcdserver: request timed out"}))
    with pytest.raises(KubernetesUnreachable, match="HTTP 500: etcdserver"):
        client.items("/apis/apps/v1/daemonsets")


@pytest.mark.parametrize(
    ("endpoint", "ca", "message"),
    [
        ("", CA, "no https API endpoint"),
        (ENDPOINT, "", "certificate authority is unusable"),
        (ENDPOINT, "not base64!", "certificate authority is unusable"),
        (ENDPOINT, base64.b64encode(b"no certificate").decode(), "certificate authority"),
    ],
)
def test_a_cluster_without_endpoint_or_ca_is_unreachable(
    endpoint: str, ca: str, message: str
) -> None:
    with pytest.raises(KubernetesUnreachable, match=message):
        k8s.https_transport(endpoint, ca, TOKEN)


def test_a_closed_port_is_unreachable_for_real(monkeypatch: pytest.MonkeyPatch) -> None:
    # the system's trust store stands in for the cluster's CA: the connection is refused first
    system_context = ssl.create_default_context()
    monkeypatch.setattr(k8s.ssl, "create_default_context", lambda cadata: system_context)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = Kubernetes(k8s.https_transport(f"https://127.0.0.1:{port}", CA, TOKEN))
    with pytest.raises(KubernetesUnreachable):
        client.items("/api/v1/secrets")


# -- a port-forward to a private endpoint: connect to 127.0.0.1, check the real host's name ------

API_HOST = "abcdef0123456789.gr7.us-west-2.eks.amazonaws.com"


def throwaway_pki(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for ``API_HOST`` made with ``openssl`` (``cryptography`` is
    not a dependency of this project): (CA certificate, server certificate, server key)."""
    if shutil.which("openssl") is None:
        pytest.skip("neither the cryptography package nor openssl is available to make a CA")
    ca_key, ca_cert = folder / "ca.key", folder / "ca.pem"
    key, request, cert = folder / "server.key", folder / "server.csr", folder / "server.pem"
    extensions = folder / "server.ext"
    extensions.write_text(f"subjectAltName=DNS:{API_HOST}\nbasicConstraints=CA:FALSE\n")

    def openssl(*args: str | Path) -> None:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_cert,
            "-days", "1", "-subj", "/CN=kubernetes", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request,
            "-subj", f"/CN={API_HOST}")  # fmt: skip
    openssl("x509", "-req", "-in", request, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
            "-out", cert, "-days", "1", "-extfile", extensions)  # fmt: skip
    return ca_cert, cert, key


class ApiHandler(http.server.BaseHTTPRequestHandler):
    """Answers a pod list as JSON and a pod's log as text/plain; records the Host header."""

    seen: ClassVar[list[tuple[str, str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, self.headers.get("Host")))
        if self.path.endswith("/log?container=probe"):
            answer, kind = b"GPUS=8\nline two\n", "text/plain"
        else:
            answer, kind = json.dumps({"kind": "PodList", "items": []}).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def tls_api(tmp_path: Path) -> Iterator[tuple[int, str, list[str | None]]]:
    """A local HTTPS API server: (port, base64 CA as DescribeCluster gives it, SNI names seen)."""
    ca_cert, cert, key = throwaway_pki(tmp_path)
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _socket, name, _context: names.append(name)  # type: ignore[assignment,misc,func-returns-value]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ApiHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    ApiHandler.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], base64.b64encode(ca_cert.read_bytes()).decode(), names
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_forward_checks_the_certificate_of_the_real_host(
    tls_api: tuple[int, str, list[str | None]],
) -> None:
    port, ca, names = tls_api
    client = k8s.connect_https(f"https://127.0.0.1:{port}", ca, TOKEN, tls_server_name=API_HOST)
    assert client.items("/api/v1/pods") == []
    log = client.text("/api/v1/namespaces/hpv-1/pods/p/log?container=probe")
    assert log == "GPUS=8\nline two\n"  # text/plain comes back as text, not JSON
    assert names == [API_HOST, API_HOST]  # SNI: the real host, on each connection
    assert [host for _, _, host in ApiHandler.seen] == [API_HOST, API_HOST]


def test_without_the_server_name_the_forwarded_address_fails_verification(
    tls_api: tuple[int, str, list[str | None]],
) -> None:
    port, ca, _ = tls_api
    client = k8s.connect_https(f"https://127.0.0.1:{port}", ca, TOKEN)
    with pytest.raises(
        KubernetesUnreachable, match="certificate verify failed|IP address mismatch"
    ):
        client.items("/api/v1/pods")
    client = k8s.connect_https(
        f"https://127.0.0.1:{port}", ca, TOKEN, tls_server_name="other.example"
    )
    with pytest.raises(KubernetesUnreachable, match="certificate verify failed|Hostname mismatch"):
        client.items("/api/v1/pods")


# -- writes: create, delete, conflicts, selectors ---------------------------------------------


def test_post_sends_json_and_delete_tolerates_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    created = {"metadata": {"name": "hpv-1"}}
    client, fake = api(monkeypatch, Answer(201, json.dumps(created).encode()))
    assert client.post("/api/v1/namespaces", {"metadata": {"name": "hpv-1"}}) == created
    ((request, _, _),) = fake.calls
    assert request.get_method() == "POST"
    assert request.get_header("Content-type") == "application/json"
    assert json.loads(request.data) == {"metadata": {"name": "hpv-1"}}  # type: ignore[arg-type]
    client, fake = api(monkeypatch, http_error(404, {"kind": "Status", "reason": "NotFound"}))
    client.delete("/api/v1/namespaces/hpv-1", {"propagationPolicy": "Foreground"})
    assert fake.calls[0][0].get_method() == "DELETE"
    client, _ = api(monkeypatch, http_error(409, {"kind": "Status", "reason": "AlreadyExists",
                                                  "message": 'namespaces "hpv-1" already exists'}))  # fmt: skip
    with pytest.raises(k8s.KubernetesConflict, match="already exists"):
        client.post("/api/v1/namespaces", {"metadata": {"name": "hpv-1"}})


def test_a_merge_patch_keeps_its_content_type(monkeypatch: pytest.MonkeyPatch) -> None:
    client, fake = api(monkeypatch, Answer(200, b"{}"))
    client.patch("/api/v1/namespaces/a", {"metadata": {"labels": {"a": "b"}}})
    assert fake.calls[0][0].get_header("Content-type") == k8s.MERGE_PATCH


def test_items_with_a_label_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    client, fake = api(monkeypatch, Answer(200, b'{"items": []}'))
    selector = k8s.label_selector({"hyperpod-cdk.aws/verify-run": "hpv-1", "a": "b"})
    assert selector == "hyperpod-cdk.aws/verify-run=hpv-1,a=b"
    client.items("/api/v1/namespaces", selector)
    assert fake.calls[0][0].full_url == (
        ENDPOINT + "/api/v1/namespaces?labelSelector=hyperpod-cdk.aws%2Fverify-run%3Dhpv-1%2Ca%3Db"
    )
