"""The Kubernetes client's HTTPS transport: what it sends, and how urllib's answers and errors
become a response, ``KubernetesDenied`` or ``KubernetesUnreachable``.

``urlopen`` is replaced by a fake that answers or raises the way urllib does (``HTTPError`` for
an HTTP error status, ``URLError`` around a socket error, ``TimeoutError`` on a read); one test
connects for real to a closed port on the loopback address.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import ssl
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

import pytest

from hyperpod_cdk.ops import k8s
from hyperpod_cdk.ops.k8s import Kubernetes, KubernetesDenied, KubernetesUnreachable

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
