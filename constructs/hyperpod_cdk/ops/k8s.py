"""A small Kubernetes API client for an EKS cluster, authenticated as the AWS caller.

The bearer token is the one ``aws eks get-token`` makes: a pre-signed STS
``GetCallerIdentity`` URL that names the cluster in the signed header ``x-k8s-aws-id``,
base64url-encoded without padding, prefixed ``k8s-aws-v1.`` (EKS user guide, "Grant IAM users
access to Kubernetes with EKS access entries"; aws-iam-authenticator). The caller needs an
access entry (read access for preflight; the migration also patches metadata). GET and merge
PATCH only; the transport is injectable so tests answer like the API server does.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
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


@dataclass(frozen=True)
class Response:
    """A GET's status and JSON body."""

    status: int
    body: dict[str, Any]


# (method, path, JSON body or None) -> Response; raises KubernetesUnreachable when the endpoint
# cannot be reached
Transport = Callable[[str, str, dict[str, Any] | None], Response]
MERGE_PATCH = "application/merge-patch+json"


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


def https_transport(endpoint: str, ca_data: str, token: str) -> Transport:
    """GETs on ``endpoint`` (``https://...``) trusting the cluster's CA (base64 PEM, as
    ``DescribeCluster`` gives it).

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

    def call(method: str, path: str, body: dict[str, Any] | None) -> Response:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = MERGE_PATCH
        request = urllib.request.Request(
            endpoint.rstrip("/") + path, data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(
                request, timeout=TIMEOUT_SECONDS, context=context
            ) as answer:
                return Response(answer.status, json.loads(answer.read() or b"{}"))
        except urllib.error.HTTPError as exc:
            try:
                body = json.loads(exc.read() or b"{}")
            except (ValueError, OSError, http.client.HTTPException):
                body = {}
            return Response(exc.code, body)
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
            # DNS, refused, timeout, TLS (URLError and socket errors are OSErrors), a cut answer
            raise KubernetesUnreachable(str(getattr(exc, "reason", exc)) or repr(exc)) from None
        except ValueError as exc:  # not JSON: a proxy's or load balancer's page, not the API
            raise KubernetesUnreachable(f"the endpoint did not answer JSON ({exc})") from None

    return call


class Kubernetes:
    """Calls on one cluster: reads, and merge patches of metadata."""

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

    @staticmethod
    def _answer(response: Response) -> dict[str, Any] | None:
        if response.status == 404:
            return None
        if response.status in (401, 403):
            raise KubernetesDenied(str(response.body.get("message", response.status)))
        if response.status >= 400:
            raise KubernetesUnreachable(f"HTTP {response.status}: {response.body.get('message')}")
        return response.body

    def items(self, path: str) -> list[dict[str, Any]]:
        """The items of a list at ``path`` (every namespace for a cluster-wide path)."""
        body = self.get(path)
        return list(body.get("items", [])) if body else []


# (endpoint, CA data, token) -> a client; tests pass one that talks to a fake API server
MakeKubernetes = Callable[[str, str, str], Kubernetes]


def connect_https(endpoint: str, ca_data: str, token: str) -> Kubernetes:
    """A client of the cluster at ``endpoint`` over HTTPS (see :func:`https_transport`)."""
    return Kubernetes(https_transport(endpoint, ca_data, token))
