"""The Grafana content custom resource against a stubbed Amazon Managed Grafana API (botocore
Stubber: the service-account and token calls, checked against the pinned service model) and a
fake Grafana HTTP API (``urllib.request.urlopen`` patched): create installs the folder, the data
source and the dashboards with the token in the Authorization header; the token is deleted even
when an HTTP call fails; update overwrites and removes dashboards no longer listed; delete
removes everything and the service account; a workspace already gone is fine.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from support.cfn_events import CREATE_FAILED_MARKER, ProviderFramework, cfn_event, one_line
from support.modules import load_module

from hyperpod_cdk.observability.grafana import (
    DATA_SOURCE_NAME,
    DATA_SOURCE_UID,
    FOLDER_TITLE,
    FOLDER_UID,
    HANDLER_DIR,
    TOKEN_SECONDS,
    dashboard_entries,
)

handler = load_module("hyperpod_grafana_handler", HANDLER_DIR / "handler.py")

REGION = "us-west-2"
WORKSPACE_ID = "g-0123456789"
ENDPOINT = f"{WORKSPACE_ID}.grafana-workspace.{REGION}.amazonaws.com"
AMP_URL = f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/ws-1111/"
ACCOUNT_ID = "7"
TOKEN_ID = "42"
TOKEN_KEY = "glsa_secret_key"
_BOTOCORE = botocore.session.get_session()


def props(orchestrator: str = "slurm", **changes: Any) -> dict[str, Any]:
    """The custom resource's properties as the construct writes them in the template."""
    base = {
        "WorkspaceId": WORKSPACE_ID,
        "WorkspaceEndpoint": ENDPOINT,
        "Region": REGION,
        "PrometheusEndpoint": AMP_URL,
        "DataSourceUid": DATA_SOURCE_UID,
        "DataSourceName": DATA_SOURCE_NAME,
        "FolderUid": FOLDER_UID,
        "FolderTitle": FOLDER_TITLE,
        "Dashboards": dashboard_entries(orchestrator),
        "TokenSecondsToLive": TOKEN_SECONDS,  # a number: it arrives as a string
    }
    base.update(changes)
    return base


PHYSICAL_ID = f"{WORKSPACE_ID}/hyperpod-grafana-content"


def event(
    request: str, properties: dict[str, Any], old: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The request as CloudFormation sends it (tests/support/cfn_events.py)."""
    return cfn_event(
        request,
        properties,
        old_properties=old,
        physical_resource_id=None if request == "Create" else PHYSICAL_ID,
        request_id="6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f",
        resource_type="Custom::HyperPodGrafanaContent",
    )


@pytest.fixture
def framework() -> ProviderFramework:
    return ProviderFramework(handler.on_event)


# -- the fakes -------------------------------------------------------------------------------


@dataclass
class FakeGrafana:
    """An in-memory Grafana HTTP API: folders, data sources and dashboards by uid."""

    folders: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    fail_on: tuple[str, str] | None = None

    def __call__(self, request: urllib.request.Request, timeout: float) -> Any:
        assert timeout == handler.HTTP_TIMEOUT
        assert request.full_url.startswith(f"https://{ENDPOINT}/api/")
        assert request.get_header("Authorization") == f"Bearer {TOKEN_KEY}"
        method = request.get_method()
        path = request.full_url.removeprefix(f"https://{ENDPOINT}")
        self.calls.append((method, path))
        body = json.loads(request.data) if request.data else None  # type: ignore[arg-type]
        if self.fail_on == (method, path):
            return self._error(request, 500, {"message": "database is locked"})
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "folders"]:
            return self._store(request, self.folders, method, parts[2:], body)
        if parts[:2] == ["api", "datasources"]:
            return self._store(request, self.sources, method, parts[3:], body)
        if path == "/api/dashboards/db" and method == "POST":
            dashboard = body["dashboard"]
            existing = self.dashboards.get(dashboard["uid"])
            if existing is not None and not body["overwrite"]:
                return self._error(request, 412, {"message": "version-mismatch"})
            self.dashboards[dashboard["uid"]] = body
            return self._ok({"status": "success", "uid": dashboard["uid"]})
        if parts[:3] == ["api", "dashboards", "uid"] and method == "DELETE":
            if self.dashboards.pop(parts[3], None) is None:
                return self._error(request, 404, {"message": "Dashboard not found"})
            return self._ok({"title": "deleted"})
        raise AssertionError(f"unexpected call {method} {path}")

    def _store(
        self, request: Any, store: dict[str, Any], method: str, uid: list[str], body: Any
    ) -> Any:
        if method == "POST":
            assert body["uid"] not in store
            store[body["uid"]] = body
            return self._ok(body)
        key = uid[0]
        if key not in store:
            return self._error(request, 404, {"message": "not found"})
        if method == "GET":
            return self._ok(store[key])
        if method == "PUT":
            store[key] = {**store[key], **body}
            return self._ok(store[key])
        if method == "DELETE":
            del store[key]
            return self._ok({"message": "deleted"})
        raise AssertionError(method)

    @staticmethod
    def _ok(answer: Any) -> Any:
        return io.BytesIO(json.dumps(answer).encode())

    @staticmethod
    def _error(request: Any, code: int, answer: Any) -> Any:
        raise urllib.error.HTTPError(
            request.full_url,
            code,
            "error",
            {},
            io.BytesIO(json.dumps(answer).encode()),  # type: ignore[arg-type]
        )


@pytest.fixture
def http(monkeypatch: pytest.MonkeyPatch) -> FakeGrafana:
    fake = FakeGrafana()
    monkeypatch.setattr(handler.urllib.request, "urlopen", fake)
    return fake


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
        botocore_session=_BOTOCORE,
    )
    client = session.client("grafana")
    monkeypatch.setattr(handler, "_grafana", lambda: client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def expect_accounts(api: Stubber, accounts: list[dict[str, Any]]) -> None:
    api.add_response(
        "list_workspace_service_accounts",
        {"serviceAccounts": accounts, "workspaceId": WORKSPACE_ID},
        {"workspaceId": WORKSPACE_ID},
    )


def ours() -> dict[str, Any]:
    return {
        "id": ACCOUNT_ID,
        "name": handler.SERVICE_ACCOUNT,
        "grafanaRole": "ADMIN",
        "isDisabled": "false",
    }


def expect_token(api: Stubber) -> None:
    api.add_response(
        "create_workspace_service_account_token",
        {
            "serviceAccountToken": {"id": TOKEN_ID, "name": "cfn", "key": TOKEN_KEY},
            "serviceAccountId": ACCOUNT_ID,
            "workspaceId": WORKSPACE_ID,
        },
        {
            "workspaceId": WORKSPACE_ID,
            "serviceAccountId": ACCOUNT_ID,
            "name": _ANY_NAME,
            "secondsToLive": TOKEN_SECONDS,
        },
    )


def expect_token_deleted(api: Stubber) -> None:
    api.add_response(
        "delete_workspace_service_account_token",
        {"tokenId": TOKEN_ID, "serviceAccountId": ACCOUNT_ID, "workspaceId": WORKSPACE_ID},
        {"workspaceId": WORKSPACE_ID, "serviceAccountId": ACCOUNT_ID, "tokenId": TOKEN_ID},
    )


class _AnyTokenName:
    """Matches the per-invocation token name (``cfn-`` and 32 hex digits)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith("cfn-") and len(other) == 36

    def __repr__(self) -> str:
        return "<cfn-...>"


_ANY_NAME = _AnyTokenName()


# -- create ----------------------------------------------------------------------------------


def test_create_makes_the_service_account_and_installs_everything(
    api: Stubber, http: FakeGrafana
) -> None:
    expect_accounts(
        api, [{"id": "1", "name": "someone-else", "grafanaRole": "VIEWER", "isDisabled": "false"}]
    )
    api.add_response(
        "create_workspace_service_account",
        {
            "id": ACCOUNT_ID,
            "name": handler.SERVICE_ACCOUNT,
            "grafanaRole": "ADMIN",
            "workspaceId": WORKSPACE_ID,
        },
        {"workspaceId": WORKSPACE_ID, "name": handler.SERVICE_ACCOUNT, "grafanaRole": "ADMIN"},
    )
    expect_token(api)
    expect_token_deleted(api)

    answer = handler.on_event(event("Create", props()))

    assert answer["PhysicalResourceId"] == f"{WORKSPACE_ID}/hyperpod-grafana-content"
    uids = [entry["Uid"] for entry in dashboard_entries("slurm")]
    assert answer["Data"]["DashboardUids"] == ",".join(uids)
    assert http.folders == {FOLDER_UID: {"uid": FOLDER_UID, "title": FOLDER_TITLE}}
    source = http.sources[DATA_SOURCE_UID]
    assert source["type"] == "prometheus"
    assert source["url"] == AMP_URL
    assert source["jsonData"] == {
        "httpMethod": "POST",
        "sigV4Auth": True,
        "sigV4AuthType": "ec2_iam_role",
        "sigV4Region": REGION,
    }
    assert sorted(http.dashboards) == sorted(uids)
    for body in http.dashboards.values():
        assert body["folderUid"] == FOLDER_UID
        assert body["overwrite"] is True
        assert "id" not in body["dashboard"]


def test_token_is_deleted_when_an_http_call_fails(api: Stubber, http: FakeGrafana) -> None:
    http.fail_on = ("POST", "/api/datasources")
    expect_accounts(api, [ours()])
    expect_token(api)
    expect_token_deleted(api)  # the Stubber fails the test if this is not called

    with pytest.raises(
        handler.GrafanaError, match="POST /api/datasources: HTTP 500: .*database is locked"
    ):
        handler.on_event(event("Create", props()))


def test_a_token_deletion_failure_does_not_hide_the_http_error(
    api: Stubber, http: FakeGrafana
) -> None:
    http.fail_on = ("POST", "/api/folders")
    expect_accounts(api, [ours()])
    expect_token(api)
    api.add_client_error("delete_workspace_service_account_token", "InternalServerException")
    with pytest.raises(handler.GrafanaError, match="POST /api/folders: HTTP 500"):
        handler.on_event(event("Create", props()))


def test_a_dashboard_whose_digest_differs_is_refused(api: Stubber, http: FakeGrafana) -> None:
    entries = dashboard_entries("slurm")
    entries[0] = {**entries[0], "Sha256": "0" * 64}
    expect_accounts(api, [ours()])
    expect_token(api)
    expect_token_deleted(api)
    with pytest.raises(handler.GrafanaError, match="slurm-cluster.json: the function's copy"):
        handler.on_event(event("Create", props(Dashboards=entries)))


# -- update ----------------------------------------------------------------------------------


def test_update_overwrites_and_removes_dashboards_no_longer_listed(
    api: Stubber, http: FakeGrafana
) -> None:
    http.folders[FOLDER_UID] = {"uid": FOLDER_UID, "title": "old title"}
    http.sources[DATA_SOURCE_UID] = {"uid": DATA_SOURCE_UID, "url": "https://old/"}
    old_entries = dashboard_entries("slurm") + [
        {"File": "gone.json", "Uid": "hyperpod-retired", "Sha256": "0" * 64}
    ]
    for entry in old_entries:
        http.dashboards[entry["Uid"]] = {"dashboard": {"uid": entry["Uid"], "title": "old"}}
    expect_accounts(api, [ours()])
    expect_token(api)
    expect_token_deleted(api)

    handler.on_event(event("Update", props(), old=props(Dashboards=old_entries)))

    assert http.folders[FOLDER_UID]["title"] == FOLDER_TITLE
    assert http.sources[DATA_SOURCE_UID]["url"] == AMP_URL
    assert ("PUT", f"/api/datasources/uid/{DATA_SOURCE_UID}") in http.calls
    assert "hyperpod-retired" not in http.dashboards
    for entry in dashboard_entries("slurm"):
        assert http.dashboards[entry["Uid"]]["dashboard"]["title"] != "old"


# -- delete ----------------------------------------------------------------------------------


def test_delete_removes_content_and_the_service_account(api: Stubber, http: FakeGrafana) -> None:
    http.folders[FOLDER_UID] = {"uid": FOLDER_UID}
    http.sources[DATA_SOURCE_UID] = {"uid": DATA_SOURCE_UID}
    entries = dashboard_entries("eks")
    for entry in entries[1:]:  # one already deleted by hand: fine
        http.dashboards[entry["Uid"]] = {"dashboard": {"uid": entry["Uid"]}}
    expect_accounts(api, [ours()])
    expect_token(api)
    expect_token_deleted(api)
    api.add_response(
        "delete_workspace_service_account",
        {"serviceAccountId": ACCOUNT_ID, "workspaceId": WORKSPACE_ID},
        {"workspaceId": WORKSPACE_ID, "serviceAccountId": ACCOUNT_ID},
    )

    answer = handler.on_event(event("Delete", props("eks")))

    assert answer == {"PhysicalResourceId": f"{WORKSPACE_ID}/hyperpod-grafana-content"}
    assert http.dashboards == {} and http.folders == {} and http.sources == {}


def test_delete_of_a_workspace_already_gone(api: Stubber, http: FakeGrafana) -> None:
    api.add_client_error(
        "list_workspace_service_accounts", "ResourceNotFoundException", http_status_code=404
    )
    answer = handler.on_event(event("Delete", props()))
    assert answer == {"PhysicalResourceId": f"{WORKSPACE_ID}/hyperpod-grafana-content"}
    assert http.calls == []


def test_delete_without_the_service_account_touches_nothing(
    api: Stubber, http: FakeGrafana
) -> None:
    expect_accounts(api, [])
    handler.on_event(event("Delete", props()))
    assert http.calls == []


def test_delete_after_a_failed_create_does_nothing(
    api: Stubber, http: FakeGrafana, framework: ProviderFramework
) -> None:
    failed = event("Delete", props())
    failed["PhysicalResourceId"] = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    assert handler.on_event(failed) == {"PhysicalResourceId": failed["PhysicalResourceId"]}
    assert framework.send(failed).ok
    failed["PhysicalResourceId"] = CREATE_FAILED_MARKER
    assert framework.send(failed).ok
    assert http.calls == []


# -- through the provider framework ----------------------------------------------------------


def test_create_through_the_framework_answers_the_uids(
    api: Stubber, http: FakeGrafana, framework: ProviderFramework
) -> None:
    expect_accounts(api, [ours()])
    expect_token(api)
    expect_token_deleted(api)
    answer = framework.send(event("Create", props()))
    assert answer.ok and answer.PhysicalResourceId == PHYSICAL_ID
    uids = [entry["Uid"] for entry in dashboard_entries("slurm")]
    assert answer.Data == {"DashboardUids": ",".join(uids), "ServiceAccountId": ACCOUNT_ID}


def test_the_same_create_delivered_twice_installs_the_same(
    api: Stubber, http: FakeGrafana, framework: ProviderFramework
) -> None:
    """Everything is kept by uid (overwrite), so a second delivery changes nothing twice."""
    for _ in range(2):
        expect_accounts(api, [ours()])
        expect_token(api)
        expect_token_deleted(api)
    sent = event("Create", props())
    first, second = framework.send(sent), framework.send(sent)
    assert first.ok and second.ok and first.Data == second.Data
    assert len(http.sources) == 1 and len(http.folders) == 1


def test_a_grafana_error_page_fails_in_one_line(
    api: Stubber, http: FakeGrafana, framework: ProviderFramework, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Grafana (or a proxy before it) may answer an HTML page: the reason stays one line."""

    def broken(request: urllib.request.Request, timeout: float) -> Any:
        raise urllib.error.HTTPError(
            request.full_url,
            502,
            "bad gateway",
            {},  # type: ignore[arg-type]
            io.BytesIO(b"<html>\n<body>\n502 Bad Gateway\n</body>\n</html>"),
        )

    monkeypatch.setattr(handler.urllib.request, "urlopen", broken)
    expect_accounts(api, [ours()])
    expect_token(api)
    expect_token_deleted(api)
    answer = framework.send(event("Create", props()))
    assert not answer.ok and answer.PhysicalResourceId == CREATE_FAILED_MARKER
    message = answer.error or ""
    assert one_line(message) and "HTTP 502" in message and "502 Bad Gateway" in message


def test_an_aws_error_with_line_breaks_fails_in_one_line(
    api: Stubber, http: FakeGrafana, framework: ProviderFramework
) -> None:
    api.add_client_error(
        "list_workspace_service_accounts",
        "AccessDeniedException",
        "not authorized\nfor grafana:ListWorkspaceServiceAccounts",
        http_status_code=403,
    )
    answer = framework.send(event("Create", props()))
    assert not answer.ok and one_line(answer.error or "")
    assert "AccessDeniedException" in (answer.error or "")


def test_the_same_delete_delivered_twice_succeeds(
    api: Stubber, http: FakeGrafana, framework: ProviderFramework
) -> None:
    expect_accounts(api, [])
    expect_accounts(api, [])
    sent = event("Delete", props())
    assert framework.send(sent).ok and framework.send(sent).ok


def test_other_errors_on_delete_fail_the_resource(api: Stubber, http: FakeGrafana) -> None:
    api.add_client_error(
        "list_workspace_service_accounts", "AccessDeniedException", http_status_code=403
    )
    with pytest.raises(handler.ClientError):
        handler.on_event(event("Delete", props()))
