"""Custom resource handler: the Prometheus data source and the dashboards of a Grafana workspace.

Amazon Managed Grafana has CloudFormation types for the workspace only; data sources, folders
and dashboards live inside Grafana and are made through its HTTP API. This handler (``on_event``
under CDK's provider framework, ``aws_cdk.custom_resources.Provider``) does that with a
short-lived service-account token:

1. the workspace service account :data:`SERVICE_ACCOUNT` (Grafana role ADMIN: data sources need
   an organisation admin) is found (``ListWorkspaceServiceAccounts``) or created once
   (``CreateWorkspaceServiceAccount``);
2. each invocation creates one token that lives ``TokenSecondsToLive`` seconds (default 900,
   ``CreateWorkspaceServiceAccountToken``), sends it as ``Authorization: Bearer`` to
   ``https://<workspace endpoint>`` and deletes it in a ``finally``
   (``DeleteWorkspaceServiceAccountToken``), whether the HTTP calls worked or not;
3. Create and Update: the folder (fixed uid), the Prometheus data source (fixed uid, SigV4 with
   the workspace's IAM role, the workspace's region and query endpoint: created, or replaced by
   uid), every dashboard by uid with ``overwrite: true`` in that folder (so a retried or repeated
   request changes nothing twice); an Update also deletes the dashboards the old properties
   listed and the new ones do not;
4. Delete: the dashboards, the folder and the data source (each already gone is fine), then the
   service account; a workspace already gone (``ResourceNotFoundException``) is fine.

Resource properties (strings; CloudFormation passes numbers as strings): ``WorkspaceId``
(``g-`` and 10 hex digits), ``WorkspaceEndpoint`` (host name, no scheme), ``Region``,
``PrometheusEndpoint`` (the Amazon Managed Prometheus workspace's query URL, ending in ``/``),
``DataSourceUid``, ``DataSourceName``, ``FolderUid``, ``FolderTitle``, ``Dashboards`` (a list of
``{"File": "<name>.json", "Uid": ..., "Sha256": ...}``: the files ship beside this module in
``../dashboards/``; the digest is checked, so the function never installs a dashboard other than
the one the template names), ``TokenSecondsToLive``.

Facts (pinned botocore 1.44.5 ``grafana`` service model, read 2026-11-25): the service-account
APIs take ``workspaceId``; ``CreateWorkspaceServiceAccount{name, grafanaRole ADMIN|EDITOR|
VIEWER}`` returns ``id``; ``CreateWorkspaceServiceAccountToken{name (1-128), secondsToLive,
serviceAccountId}`` returns ``serviceAccountToken{id, name, key}``; all raise
``ResourceNotFoundException`` for a workspace that does not exist; service accounts need Grafana
9 or later (API reference, CreateWorkspaceServiceAccountToken). Grafana HTTP API (Grafana 10
docs, "HTTP API"): ``/api/folders[/<uid>]``, ``/api/datasources[/uid/<uid>]``,
``/api/dashboards/db``, ``/api/dashboards/uid/<uid>``.

boto3 only (it is part of the Lambda Python runtime); everything else is the standard library.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

#: the workspace service account this handler makes and uses (one per workspace)
SERVICE_ACCOUNT: Final = "hyperpod-cdk-provisioner"
SERVICE_ACCOUNT_ROLE: Final = "ADMIN"
DEFAULT_TOKEN_SECONDS: Final = 900
#: where the dashboard files are, in the Lambda asset and in the source tree
DASHBOARD_DIR: Final = Path(__file__).resolve().parent.parent / "dashboards"
HTTP_TIMEOUT: Final = 30
GONE_CODES: Final = frozenset({"ResourceNotFoundException"})
# the failure reason travels in CloudFormation's 4 KiB response, with the framework's additions
MAX_BODY: Final = 400

Event = dict[str, Any]


def one_line_errors(function: Callable[..., Event]) -> Callable[..., Event]:
    """Keep a raised error's message on one line: the provider framework makes it the stack's
    failure reason, and an AWS or HTTP error message may span several lines."""

    @functools.wraps(function)
    def wrapped(event: Event, context: Any = None) -> Event:
        try:
            return function(event, context)
        except Exception as error:
            text = str(error)
            if "\n" not in text and "\r" not in text:
                raise
            raise GrafanaError(" ".join(f"{type(error).__name__}: {text}".split())) from error

    return wrapped


class GrafanaError(Exception):
    """A Grafana HTTP API call failed; the message names the call and Grafana's answer."""


@functools.cache
def _grafana() -> Any:
    return boto3.client("grafana", config=Config(retries={"max_attempts": 5, "mode": "standard"}))


# -- the service account and its token ---------------------------------------------------------


def find_service_account(client: Any, workspace_id: str) -> str | None:
    """The id of :data:`SERVICE_ACCOUNT` in the workspace, or None."""
    params: dict[str, Any] = {"workspaceId": workspace_id}
    while True:
        page = client.list_workspace_service_accounts(**params)
        for account in page.get("serviceAccounts", []):
            if account.get("name") == SERVICE_ACCOUNT:
                return str(account["id"])
        if not page.get("nextToken"):
            return None
        params["nextToken"] = page["nextToken"]


def ensure_service_account(client: Any, workspace_id: str) -> str:
    """The id of :data:`SERVICE_ACCOUNT`, created when the workspace has none."""
    found = find_service_account(client, workspace_id)
    if found is not None:
        return found
    created = client.create_workspace_service_account(
        workspaceId=workspace_id, name=SERVICE_ACCOUNT, grafanaRole=SERVICE_ACCOUNT_ROLE
    )
    LOG.info("created service account %s in %s", created["id"], workspace_id)
    return str(created["id"])


class Token:
    """A service-account token for one invocation: ``with Token(...) as key:``; deleted on exit,
    also when the body raised."""

    def __init__(self, client: Any, workspace_id: str, account_id: str, seconds: int) -> None:
        self._client = client
        self._workspace_id = workspace_id
        self._account_id = account_id
        self._seconds = seconds
        self._token_id: str | None = None

    def __enter__(self) -> str:
        answer = self._client.create_workspace_service_account_token(
            workspaceId=self._workspace_id,
            serviceAccountId=self._account_id,
            name=f"cfn-{uuid.uuid4().hex}",
            secondsToLive=self._seconds,
        )
        token = answer["serviceAccountToken"]
        self._token_id = str(token["id"])
        return str(token["key"])

    def __exit__(self, *exc: object) -> None:
        assert self._token_id is not None
        try:
            self._client.delete_workspace_service_account_token(
                workspaceId=self._workspace_id,
                serviceAccountId=self._account_id,
                tokenId=self._token_id,
            )
        except ClientError as error:
            if exc[0] is None:
                raise
            # the body's error is the one to report; the token expires on its own
            LOG.warning("could not delete token %s: %s", self._token_id, error)


# -- the Grafana HTTP API ----------------------------------------------------------------------


class Grafana:
    """The HTTP API of one workspace with one token."""

    def __init__(self, endpoint: str, key: str) -> None:
        self.base = f"https://{endpoint}"
        self._key = key

    def call(self, method: str, path: str, body: Any = None, *, missing_ok: bool = False) -> Any:
        """The JSON answer of ``method path``; None for a 404 when ``missing_ok``."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 (https only: base is https://<endpoint>)
            self.base + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self._key}",
                "Accept": "application/json",
                **({"Content-Type": "application/json"} if data is not None else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as answer:  # noqa: S310
                raw = answer.read()
        except urllib.error.HTTPError as error:
            if error.code == 404 and missing_ok:
                return None
            # one line: Grafana, or a proxy before it, may answer an HTML page
            text = " ".join(error.read().decode("utf-8", "replace").split())[:MAX_BODY]
            raise GrafanaError(f"{method} {path}: HTTP {error.code}: {text}") from None
        except urllib.error.URLError as error:
            reason = " ".join(str(error.reason).split())
            raise GrafanaError(f"{method} {path}: {reason}") from None
        return json.loads(raw) if raw else None


def data_source(props: Event) -> dict[str, Any]:
    """The Prometheus data source: SigV4 with the workspace's IAM role (``ec2_iam_role`` is the
    default credential chain, which Amazon Managed Grafana gives the workspace role)."""
    return {
        "uid": props["DataSourceUid"],
        "name": props["DataSourceName"],
        "type": "prometheus",
        "access": "proxy",
        "url": props["PrometheusEndpoint"],
        "isDefault": True,
        "jsonData": {
            "httpMethod": "POST",
            "sigV4Auth": True,
            "sigV4AuthType": "ec2_iam_role",
            "sigV4Region": props["Region"],
        },
    }


def load_dashboard(entry: dict[str, Any]) -> dict[str, Any]:
    """The dashboard of ``entry`` (``File``, ``Uid``, ``Sha256``) from :data:`DASHBOARD_DIR`."""
    raw = (DASHBOARD_DIR / Path(entry["File"]).name).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != entry["Sha256"]:
        raise GrafanaError(
            f"dashboard {entry['File']}: the function's copy has SHA-256 {digest}, the template "
            f"names {entry['Sha256']}; deploy again so that both come from the same build"
        )
    dashboard = json.loads(raw)
    if dashboard.get("uid") != entry["Uid"]:
        raise GrafanaError(
            f"dashboard {entry['File']}: uid {dashboard.get('uid')!r}, not {entry['Uid']!r}"
        )
    return dict(dashboard)


def install(api: Grafana, props: Event, old: Event | None) -> list[str]:
    """Folder, data source and dashboards of ``props``; removes the dashboards only ``old``
    listed. The installed dashboard uids."""
    folder = props["FolderUid"]
    if api.call("GET", f"/api/folders/{folder}", missing_ok=True) is None:
        api.call("POST", "/api/folders", {"uid": folder, "title": props["FolderTitle"]})
    else:
        api.call(
            "PUT", f"/api/folders/{folder}", {"title": props["FolderTitle"], "overwrite": True}
        )
    source = data_source(props)
    if api.call("GET", f"/api/datasources/uid/{source['uid']}", missing_ok=True) is None:
        api.call("POST", "/api/datasources", source)
    else:
        api.call("PUT", f"/api/datasources/uid/{source['uid']}", source)
    uids = []
    for entry in props.get("Dashboards", []):
        dashboard = load_dashboard(entry)
        dashboard.pop("id", None)  # a new one, or the one with this uid (overwrite)
        api.call(
            "POST",
            "/api/dashboards/db",
            {
                "dashboard": dashboard,
                "folderUid": folder,
                "overwrite": True,
                "message": "HyperPod CDK deploy",
            },
        )
        uids.append(entry["Uid"])
    for entry in (old or {}).get("Dashboards", []):
        if entry["Uid"] not in uids:
            api.call("DELETE", f"/api/dashboards/uid/{entry['Uid']}", missing_ok=True)
    return uids


def uninstall(api: Grafana, props: Event) -> None:
    """The dashboards, the folder and the data source of ``props`` (each may be gone)."""
    for entry in props.get("Dashboards", []):
        api.call("DELETE", f"/api/dashboards/uid/{entry['Uid']}", missing_ok=True)
    api.call("DELETE", f"/api/folders/{props['FolderUid']}", missing_ok=True)
    api.call("DELETE", f"/api/datasources/uid/{props['DataSourceUid']}", missing_ok=True)


# -- the custom resource -----------------------------------------------------------------------


def _gone(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in GONE_CODES


def physical_id(props: Event) -> str:
    """One resource per workspace: a new workspace is a new resource (CloudFormation then
    deletes the old one's content, a no-op when that workspace is gone)."""
    return f"{props['WorkspaceId']}/hyperpod-grafana-content"


@one_line_errors
def on_event(event: Event, _context: Any = None) -> dict[str, Any]:
    """Create, Update or Delete the data source and the dashboards (see the module doc)."""
    request = event["RequestType"]
    props = event["ResourceProperties"]
    workspace_id = props["WorkspaceId"]
    seconds = int(props.get("TokenSecondsToLive", DEFAULT_TOKEN_SECONDS))
    client = _grafana()
    LOG.info("%s: workspace %s", request, workspace_id)

    if request == "Delete":
        if event.get("PhysicalResourceId") != physical_id(props):
            # a create that failed before this resource existed: nothing was made
            return {"PhysicalResourceId": event.get("PhysicalResourceId", physical_id(props))}
        try:
            account = find_service_account(client, workspace_id)
            if account is not None:
                with Token(client, workspace_id, account, seconds) as key:
                    uninstall(Grafana(props["WorkspaceEndpoint"], key), props)
                client.delete_workspace_service_account(
                    workspaceId=workspace_id, serviceAccountId=account
                )
        except ClientError as error:
            if not _gone(error):
                raise
            LOG.info("workspace %s is gone: nothing to delete", workspace_id)
        return {"PhysicalResourceId": physical_id(props)}

    old = event.get("OldResourceProperties") if request == "Update" else None
    if old is not None and old.get("WorkspaceId") != workspace_id:
        old = None  # another workspace: CloudFormation deletes the old resource
    account = ensure_service_account(client, workspace_id)
    with Token(client, workspace_id, account, seconds) as key:
        uids = install(Grafana(props["WorkspaceEndpoint"], key), props, old)
    return {
        "PhysicalResourceId": physical_id(props),
        "Data": {"DashboardUids": ",".join(uids), "ServiceAccountId": account},
    }
