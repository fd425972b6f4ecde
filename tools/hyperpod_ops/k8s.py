"""A small Kubernetes API client for an EKS cluster, authenticated as the AWS caller.

The bearer token is the one ``aws eks get-token`` makes: a pre-signed STS
``GetCallerIdentity`` URL that names the cluster in the signed header ``x-k8s-aws-id``,
base64url-encoded without padding, prefixed ``k8s-aws-v1.`` (EKS user guide, "Grant IAM users
access to Kubernetes with EKS access entries"; aws-iam-authenticator). The caller needs an
access entry (read access for preflight; the migration also patches metadata; ``make verify``
creates and deletes its own objects). GET, POST, DELETE and merge PATCH; pod logs come back as
text. The transport is injectable so tests answer like the API server does.

From outside the VPC a private endpoint is reached through a port-forward (an SSM session to a
node forwarding a local port to the endpoint): :func:`https_transport` then connects to the local
address but checks the certificate for, and sends SNI and ``Host`` for, the real endpoint host.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_SECONDS = 60
TIMEOUT_SECONDS = 5


class KubernetesUnreachable(Exception):
    """The API endpoint did not answer (a private endpoint from outside the VPC, DNS, timeout)."""


class KubernetesDenied(Exception):
    """The API answered 401 or 403: the caller has no access entry, or too little access."""


class KubernetesConflict(Exception):
    """The API answered 409: the object exists already (a create) or changed meanwhile."""


@dataclass(frozen=True)
class Response:
    """An answer's status and JSON body; ``text`` holds a plain-text answer (a pod's log), whose
    ``body`` is then empty."""

    status: int
    body: dict[str, Any]
    text: str | None = None


# (method, path, JSON body or None) -> Response; raises KubernetesUnreachable when the endpoint
# cannot be reached
Transport = Callable[[str, str, dict[str, Any] | None], Response]
MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"


def eks_token(sts: Any, cluster_name: str) -> str:
    """The bearer token of ``cluster_name`` for the credentials of the boto3 STS client ``sts``."""
    endpoint = sts.meta.endpoint_url.rstrip("/")
    request = {
        "method": "GET",
        "url": f"{endpoint}/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {CLUSTER_ID_HEADER: cluster_name},
        "context": {},
    }
    # the client's own signer: its credentials, region and signature version
    url = sts._request_signer.generate_presigned_url(
        request, region_name=sts.meta.region_name, expires_in=TOKEN_SECONDS, operation_name=""
    )
    encoded = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return TOKEN_PREFIX + encoded


def https_transport(
    endpoint: str, ca_data: str, token: str, tls_server_name: str | None = None
) -> Transport:
    """Calls on ``endpoint`` (``https://...``) trusting the cluster's CA (base64 PEM, as
    ``DescribeCluster`` gives it).

    :param tls_server_name: the real API host when ``endpoint`` is a local port-forward to it
        (``https://127.0.0.1:8443``): the connection goes to ``endpoint``, the certificate is
        checked for this name, and SNI and ``Host`` carry it (the EKS certificate names the
        endpoint's host, never 127.0.0.1).
    :raises KubernetesUnreachable: no https endpoint, or an unusable CA.
    """
    if not endpoint.startswith("https://"):
        raise KubernetesUnreachable(f"the cluster has no https API endpoint ({endpoint!r})")
    try:
        pem = base64.b64decode(ca_data).decode()
        if not pem.strip():  # an empty cadata would trust the system's CAs instead
            raise ValueError("it is empty")
        context = ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as exc:
        raise KubernetesUnreachable(
            f"the cluster's certificate authority is unusable: {exc}"
        ) from None
    base = f"https://{tls_server_name}" if tls_server_name else endpoint.rstrip("/")
    opener = _pinned_opener(endpoint, context) if tls_server_name else None

    def open_request(request: urllib.request.Request) -> Any:
        if opener is not None:
            return opener.open(request, timeout=TIMEOUT_SECONDS)
        return urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS, context=context)

    def call(method: str, path: str, body: dict[str, Any] | None) -> Response:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = MERGE_PATCH if method == "PATCH" else JSON
        request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
        try:
            with open_request(request) as answer:
                return _response(answer.status, answer.read(), getattr(answer, "headers", None))
        except urllib.error.HTTPError as exc:
            try:
                body = json.loads(exc.read() or b"{}")
            except (ValueError, OSError, http.client.HTTPException):
                body = {}
            return Response(exc.code, body if isinstance(body, dict) else {})
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
            # DNS, refused, timeout, TLS (URLError and socket errors are OSErrors), a cut answer
            raise KubernetesUnreachable(str(getattr(exc, "reason", exc)) or repr(exc)) from None
        except ValueError as exc:  # not JSON: a proxy's or load balancer's page, not the API
            raise KubernetesUnreachable(f"the endpoint did not answer JSON ({exc})") from None

    return call


def _response(status: int, raw: bytes, headers: Any) -> Response:
    """A successful answer: plain text (a pod's log) as text, anything else as JSON (raises
    ValueError when it is not JSON)."""
    content_type = headers.get("Content-Type", "") if headers is not None else ""
    if content_type.startswith("text/plain"):
        return Response(status, {}, raw.decode(errors="replace"))
    return Response(status, json.loads(raw or b"{}"))


def _pinned_opener(endpoint: str, context: ssl.SSLContext) -> urllib.request.OpenerDirector:
    """An opener whose HTTPS connections go to ``endpoint``'s address whatever host the URL
    names (that host is then only the TLS server name and ``Host``); no proxy."""
    parsed = urllib.parse.urlsplit(endpoint)
    address = (parsed.hostname or "", parsed.port or 443)

    class PinnedConnection(http.client.HTTPSConnection):
        def connect(self) -> None:
            raw = socket.create_connection(address, self.timeout)
            self.sock = context.wrap_socket(raw, server_hostname=self.host)

    class PinnedHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(PinnedConnection, req, context=context)

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), PinnedHandler())


class Kubernetes:
    """Calls on one cluster: reads, merge patches, creates and deletes."""

    def __init__(self, transport: Transport) -> None:
        self._call = transport

    def get(self, path: str) -> dict[str, Any] | None:
        """The object at ``path``; None when it does not exist (404).

        :raises KubernetesDenied: 401 or 403.
        :raises KubernetesUnreachable: the endpoint did not answer, or answered an error.
        """
        return self._answer(self._call("GET", path, None))

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON merge patch of the object at ``path``; None when it does not exist (404)."""
        return self._answer(self._call("PATCH", path, body))

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Create ``body`` in the collection at ``path``: the object as stored; None when the
        collection does not exist (404: its namespace, or a custom resource not installed).

        :raises KubernetesConflict: an object of that name exists (409 AlreadyExists).
        """
        return self._answer(self._call("POST", path, body))

    def delete(self, path: str, body: dict[str, Any] | None = None) -> None:
        """Delete the object at ``path`` (``body``: DeleteOptions, e.g. the propagation
        policy); gone already (404) is fine."""
        self._answer(self._call("DELETE", path, body))

    def text(self, path: str) -> str | None:
        """A plain-text answer (a pod's log: ``/api/v1/namespaces/N/pods/P/log?container=C``);
        None when it does not exist (404)."""
        response = self._call("GET", path, None)
        if self._answer(response) is None:
            return None
        if response.text is not None:
            return response.text
        return json.dumps(response.body)  # a server that answered JSON after all

    @staticmethod
    def _answer(response: Response) -> dict[str, Any] | None:
        if response.status == 404:
            return None
        if response.status in (401, 403):
            raise KubernetesDenied(str(response.body.get("message", response.status)))
        if response.status == 409:
            raise KubernetesConflict(str(response.body.get("message", response.status)))
        if response.status >= 400:
            raise KubernetesUnreachable(f"HTTP {response.status}: {response.body.get('message')}")
        return response.body

    def items(self, path: str, selector: str | None = None) -> list[dict[str, Any]]:
        """The items of a list at ``path`` (every namespace for a cluster-wide path), only those
        whose labels match ``selector`` when given (``k=v,k2=v2``; see :func:`label_selector`)."""
        if selector:
            separator = "&" if "?" in path else "?"
            path = f"{path}{separator}labelSelector={urllib.parse.quote(selector, safe='')}"
        body = self.get(path)
        return list(body.get("items", [])) if body else []


def label_selector(labels: Mapping[str, str]) -> str:
    """The equality label selector of ``labels``: ``k=v,k2=v2``."""
    return ",".join(f"{key}={value}" for key, value in labels.items())


# (endpoint, CA data, token) -> a client; tests pass one that talks to a fake API server
MakeKubernetes = Callable[[str, str, str], Kubernetes]


def connect_https(
    endpoint: str, ca_data: str, token: str, tls_server_name: str | None = None
) -> Kubernetes:
    """A client of the cluster at ``endpoint`` over HTTPS (see :func:`https_transport`;
    ``tls_server_name``: the real API host when ``endpoint`` is a local port-forward)."""
    return Kubernetes(https_transport(endpoint, ca_data, token, tls_server_name))
