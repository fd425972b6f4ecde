"""The sagemaker-observability extension custom resource through CDK's provider framework (the
fake in tests/support/cfn_events.py: events as CloudFormation sends them, every scalar a string)
against a stubbed SageMaker API: create, update, delete, Degraded, an in-progress then Active
sequence, the deadline that fails before the Provider's total timeout, and the settings sent as AWS documents
them (facts_slurm_obs 1.3-1.7, 1.11): the whole configuration on Create, every setting on Update,
then a check that the stored configuration holds what was sent. The settings:
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-cluster-observability-slurm-extension-config.html
(read 2026-11-27).

The handler is loaded from its asset directory by path, as Lambda runs it; botocore's Stubber
checks every request and answer against the pinned service model (botocore 1.44.5).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import botocore
import botocore.session
import pytest
from botocore.stub import Stubber
from support.cfn_events import (
    CREATE_FAILED_MARKER,
    ProviderFramework,
    cfn_event,
    one_line,
    resolve,
)
from support.modules import load_module

from hyperpod_cdk.observability import EXTENSION_HANDLER_DIR

handler = load_module(
    "hyperpod_observability_extension_handler", EXTENSION_HANDLER_DIR / "handler.py"
)

REGION = "us-west-2"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:111122223333:cluster/abcdef123456"
OTHER_CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:111122223333:cluster/zyxwvu987654"
EXTENSION_ARN = (
    f"arn:aws:sagemaker:{REGION}:111122223333:extension/sagemaker-observability/abcdef123456/x1y2z3"
)
WORKSPACE = f"arn:aws:aps:{REGION}:111122223333:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"
REMOTE_WRITE = (
    f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/"
    "ws-0123abcd-4567-89ef-0123-456789abcdef/api/v1/remote_write"
)
#: what the construct writes (metrics.py): the workspace's remote write URL and the levels
CONFIG: dict[str, Any] = {
    "prometheus": {"remoteWriteUrl": REMOTE_WRITE},
    "metricsProvider": {
        "nodeMetrics": {"level": "ADVANCED"},
        "acceleratedComputeMetrics": {"level": "BASIC"},
    },
}
#: the page's example of every setting with its default, without prometheus (metrics then go
#: to CloudWatch): what the stored configuration holds for a setting not sent
DEFAULTS: dict[str, Any] = {
    "metricsProvider": {
        key: {"level": level, "collectionIntervalSeconds": 30}
        for key, level in (
            ("nodeMetrics", "BASIC"),
            ("acceleratedComputeMetrics", "BASIC"),
            ("networkMetrics", "ENABLED"),
            ("jobMetrics", "ENABLED"),
            ("clusterMetrics", "ENABLED"),
            ("ncclMetrics", "DISABLED"),
        )
    },
    "profilesProvider": {"hostProfiling": {"enabled": False}},
}
#: what an earlier release of the construct wrote (keys AWS does not document for Slurm)
EARLIER: dict[str, Any] = {
    "ampWorkspace": {"arn": WORKSPACE, "prometheusEndpoint": REMOTE_WRITE[: -len("/api/v1/remote_write")]},
    "metricsProvider": {"nodeMetrics": {"level": "ADVANCED"}, "acceleratedComputeMetrics": {"level": "BASIC"}},
    "logging": {"enabled": True},
}  # fmt: skip


def stored(config: dict[str, Any]) -> dict[str, Any]:
    """The stored configuration after ``config`` was sent: HyperPod "writes the default values
    into the stored configuration, so DescribeClusterExtension shows every setting"."""

    def merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in top.items():
            out[key] = merge(out.get(key, {}), value) if isinstance(value, dict) else value
        return out

    return merge(DEFAULTS, config)


REQUEST_ID = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"

_BOTOCORE = botocore.session.get_session()


def extension_properties(*, workspace_arn: str) -> dict[str, Any]:
    """The extension's properties as HyperPodMetrics writes them (a synthesized template),
    references resolved as CloudFormation resolves them (ServiceToken left to the fake)."""
    import aws_cdk as cdk
    from aws_cdk import assertions

    from hyperpod_cdk.observability.metrics import RESOURCE_TYPE, HyperPodMetrics

    app = cdk.App()
    stack = cdk.Stack(app, "Metrics", env=cdk.Environment(account="111122223333", region=REGION))
    HyperPodMetrics(
        stack,
        "Metrics",
        cluster_name="research",
        orchestrator="slurm",
        cluster_arn=CLUSTER_ARN,
        workspace_arn=workspace_arn,
        levels={"nodeMetrics": "ADVANCED", "acceleratedComputeMetrics": "BASIC"},
    )
    resources = assertions.Template.from_stack(stack).to_json()["Resources"]
    (extension,) = [r for r in resources.values() if r["Type"] == RESOURCE_TYPE]
    properties = {k: v for k, v in extension["Properties"].items() if k != "ServiceToken"}
    resolved: dict[str, Any] = resolve(properties, {"AWS::URLSuffix": "amazonaws.com"})
    return resolved


def compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@pytest.fixture
def sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=REGION,
        botocore_session=_BOTOCORE,
    )
    client = session.client("sagemaker")

    def client_of(region: str) -> Any:
        assert region == REGION  # the cluster's region, read from its ARN
        return client

    monkeypatch.setattr(handler, "sagemaker_client", client_of)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def framework() -> ProviderFramework:
    return ProviderFramework(handler.on_event, handler.is_complete)


def properties(**changes: Any) -> dict[str, Any]:
    """The custom resource's properties as the construct writes them in the template."""
    base: dict[str, Any] = {
        "ClusterArn": CLUSTER_ARN,
        "ExtensionName": "sagemaker-observability",
        "ExtensionVersion": "1.2.0",
        "ConfigurationValues": compact(CONFIG),
        "TimeoutSeconds": 3300,
    }
    base.update(changes)
    return base


def create(props: dict[str, Any] | None = None) -> dict[str, Any]:
    return cfn_event(
        "Create",
        props or properties(),
        request_id=REQUEST_ID,
        resource_type="Custom::HyperPodClusterExtension",
    )


def update(props: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return cfn_event(
        "Update",
        props,
        old_properties=old or properties(),
        physical_resource_id=EXTENSION_ARN,
        request_id=REQUEST_ID,
    )


def delete(physical_id: str = EXTENSION_ARN) -> dict[str, Any]:
    return cfn_event(
        "Delete", properties(), physical_resource_id=physical_id, request_id=REQUEST_ID
    )


def described(
    status: str,
    version: str = "1.2.0",
    issues: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "ExtensionDetails": {
            "ClusterArn": CLUSTER_ARN,
            "ExtensionArn": EXTENSION_ARN,
            "ExtensionName": "sagemaker-observability",
            "ExtensionVersion": version,
            "Status": status,
            "ConfigurationValues": compact(stored(CONFIG) if config is None else config),
        },
        "NodeSummary": {"TotalCount": 4, "ActiveCount": 4 if status == "Active" else 1},
    }
    if issues is not None:
        answer["Health"] = {"Issues": issues}
    return answer


def expect_describe(stubber: Stubber, answer: dict[str, Any]) -> None:
    stubber.add_response(
        "describe_cluster_extension",
        answer,
        {"ClusterArn": CLUSTER_ARN, "ExtensionArn": EXTENSION_ARN},
    )


def expect_create(stubber: Stubber, configuration: dict[str, Any] | None, **extra: Any) -> None:
    request: dict[str, Any] = {
        "ClusterArn": CLUSTER_ARN,
        "ExtensionName": "sagemaker-observability",
        "ExtensionVersion": "1.2.0",
        "ClientToken": REQUEST_ID,
        **extra,
    }
    if configuration is not None:
        request["ConfigurationValues"] = compact(configuration)
    stubber.add_response("create_cluster_extension", {"ExtensionArn": EXTENSION_ARN}, request)


def expect_update(stubber: Stubber, request: dict[str, Any]) -> None:
    stubber.add_response(
        "update_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {"ClusterArn": CLUSTER_ARN, "ExtensionArn": EXTENSION_ARN, **request},
    )


# -- create ------------------------------------------------------------------------------------


def test_create_sends_the_version_and_the_whole_documented_configuration(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """Every setting the construct writes is one AWS documents, so Create sends them all at
    once, and is done once the stored configuration holds them (facts_slurm_obs 1.7)."""
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Creating", config=DEFAULTS))
    expect_describe(sagemaker, described("Active"))
    answer = framework.send(create())
    assert answer.ok, answer.Reason
    assert answer.PhysicalResourceId == EXTENSION_ARN
    assert answer.Data["ExtensionArn"] == EXTENSION_ARN
    assert answer.Data["Version"] == "1.2.0"
    assert answer.polls == 2


def test_the_construct_configuration_reaches_the_api_as_documented(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """The template as HyperPodMetrics writes it, resolved and passed the way CloudFormation
    passes it (one JSON string, facts_slurm_obs 1.6): ``prometheus.remoteWriteUrl`` is the
    workspace's remote write URL, no ``ampWorkspace``, no ``logging``."""
    props = extension_properties(workspace_arn=WORKSPACE)
    assert isinstance(props["ConfigurationValues"], str)
    wanted = json.loads(props["ConfigurationValues"])
    assert wanted == CONFIG
    expect_create(sagemaker, wanted, ExtensionVersion=props["ExtensionVersion"])
    expect_describe(
        sagemaker, described("Active", version=props["ExtensionVersion"], config=stored(wanted))
    )
    answer = framework.send(create(props))
    assert answer.ok, answer.Reason


def test_create_without_configuration_uses_the_defaults(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_response(
        "create_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {
            "ClusterArn": CLUSTER_ARN,
            "ExtensionName": "sagemaker-observability",
            "ClientToken": REQUEST_ID,
        },
    )
    expect_describe(sagemaker, described("Active", config=DEFAULTS))
    answer = framework.send(create(properties(ConfigurationValues="", ExtensionVersion="")))
    assert answer.ok and answer.PhysicalResourceId == EXTENSION_ARN


def test_the_same_create_delivered_twice_creates_one_extension(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """The request id is the client token: "If you retry the request with the same client token
    and the same parameters ... the API returns the ARN of the extension that the original
    request created" (botocore CreateClusterExtensionRequest.ClientToken)."""
    for _ in range(2):
        expect_create(sagemaker, CONFIG)
        expect_describe(sagemaker, described("Active"))
    first, second = framework.send(create()), framework.send(create())
    assert first.ok and second.ok
    assert first.PhysicalResourceId == second.PhysicalResourceId == EXTENSION_ARN


def test_a_map_configuration_is_refused_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """A map reaches the handler with {"enabled": "true"} (what the earlier construct sent)."""
    answer = framework.send(create(properties(ConfigurationValues=CONFIG)))
    assert not answer.ok
    assert answer.PhysicalResourceId == CREATE_FAILED_MARKER
    assert one_line(answer.error or "")
    assert "one JSON string" in (answer.error or "")


def test_create_on_a_cluster_that_has_it_already_says_what_to_do(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_client_error(
        "create_cluster_extension",
        "ResourceInUse",
        "Extension sagemaker-observability\nalready exists",
    )
    answer = framework.send(create())
    assert not answer.ok
    assert "delete-cluster-extension" in (answer.error or "")
    assert one_line(answer.error or "")
    # CloudFormation's rollback then deletes what never existed: the framework answers it
    assert framework.send(delete(answer.PhysicalResourceId)).ok


def test_an_aws_error_with_line_breaks_fails_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_client_error(
        "create_cluster_extension", "ValidationException", "bad request:\n  ExtensionVersion"
    )
    answer = framework.send(create())
    assert not answer.ok and one_line(answer.error or "")
    assert (answer.error or "").startswith("ClientError: An error occurred (ValidationException)")


def test_in_progress_then_active(sagemaker: Stubber, framework: ProviderFramework) -> None:
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Creating"))
    expect_describe(sagemaker, described("Creating"))
    expect_describe(sagemaker, described("Active"))
    done = framework.send(create())
    assert done.ok and done.polls == 3
    assert done.Data["ExtensionArn"] == EXTENSION_ARN
    assert done.Data["Version"] == "1.2.0"


def test_throttled_poll_reads_again(sagemaker: Stubber, framework: ProviderFramework) -> None:
    expect_create(sagemaker, CONFIG)
    sagemaker.add_client_error("describe_cluster_extension", "ThrottlingException", "slow down")
    expect_describe(sagemaker, described("Active"))
    assert framework.send(create()).polls == 2


ISSUES = [
    {"Code": "AccessDenied", "Message": "aps:RemoteWrite denied on the workspace", "NodeCount": 3},
    {"Code": "DependencyUnreachable", "Message": "no route to aps-workspaces", "NodeCount": 1},
]


def test_degraded_then_active_succeeds(sagemaker: Stubber, framework: ProviderFramework) -> None:
    """Degraded: "runs ... on some of the cluster's nodes but not all of them. Or, at least one
    node recently reported that the extension is unhealthy" (botocore ExtensionDetails.Status):
    a node that joins late recovers it, so it is waited for (facts_slurm_obs 1.3)."""
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Degraded", issues=ISSUES))
    expect_describe(sagemaker, described("Active"))
    answer = framework.send(create())
    assert answer.ok and answer.polls == 2


def test_degraded_at_the_deadline_fails_with_the_health_issues(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Degraded", issues=ISSUES))
    answer = framework.send(create(properties(TimeoutSeconds=0)))
    assert not answer.ok and answer.PhysicalResourceId == EXTENSION_ARN
    message = answer.error or ""
    assert one_line(message)
    assert f"extension {EXTENSION_ARN} is still Degraded" in message
    assert "active on 1 of 4 node(s); " in message
    assert "AccessDenied on 3 node(s): aps:RemoteWrite denied on the workspace" in message
    assert "DependencyUnreachable on 1 node(s): no route to aps-workspaces" in message


@pytest.mark.parametrize("status", ["CreateFailed", "UpdateFailed"])
def test_failed_status_fails(sagemaker: Stubber, framework: ProviderFramework, status: str) -> None:
    expect_create(sagemaker, CONFIG)
    expect_describe(
        sagemaker,
        described(
            status,
            issues=[{"Code": "InvalidConfiguration", "Message": "bad\nvalue", "NodeCount": 4}],
        ),
    )
    answer = framework.send(create())
    assert not answer.ok
    assert f"is {status}; " in (answer.error or "") and "InvalidConfiguration" in (
        answer.error or ""
    )
    assert one_line(answer.error or "")


def test_deadline_fails_before_the_providers_total_timeout(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """At the deadline (the construct sets it below the Provider's total timeout) the stack
    gets the last status, not the framework's bare 'Operation timed out'."""
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Creating"))
    answer = framework.send(create(properties(TimeoutSeconds=0)))
    message = answer.error or ""
    assert f"extension {EXTENSION_ARN} is still Creating" in message
    assert "after the wait of 0 s" in message
    assert "active on 1 of 4 node(s)" in message


def test_extension_gone_during_create_fails(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_create(sagemaker, CONFIG)
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    answer = framework.send(create())
    assert not answer.ok and "no longer exists" in (answer.error or "")


def test_an_undocumented_setting_fails_at_once_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """ "Unknown settings are rejected at every level": a setting AWS does not document (what an
    earlier release wrote) fails before any call, naming it and the documented ones."""
    answer = framework.send(create(properties(ConfigurationValues=compact(EARLIER))))
    assert not answer.ok and answer.PhysicalResourceId == CREATE_FAILED_MARKER
    message = answer.error or ""
    assert one_line(message)
    assert "does not document: ampWorkspace.arn, ampWorkspace.prometheusEndpoint," in message
    assert "logging.enabled" in message
    assert "prometheus.remoteWriteUrl" in message
    assert handler.SOURCE in message


def test_a_stored_configuration_that_differs_fails_naming_the_difference(
    sagemaker: Stubber, framework: ProviderFramework, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the grace after the request, an Active extension whose stored configuration
    (DescribeClusterExtension) does not hold a setting sent fails in one line naming it; the
    rollback Delete then removes the extension."""
    monkeypatch.setattr(handler, "STORED_GRACE_SECONDS", 0)
    expect_create(sagemaker, CONFIG)
    other = stored({**CONFIG, "metricsProvider": {"nodeMetrics": {"level": "BASIC"}}})
    del other["prometheus"]
    expect_describe(sagemaker, described("Active", config=other))
    answer = framework.send(create())
    assert not answer.ok and answer.PhysicalResourceId == EXTENSION_ARN
    message = answer.error or ""
    assert one_line(message)
    assert "is Active, but its stored configuration (DescribeClusterExtension) differs" in message
    assert 'metricsProvider.nodeMetrics.level: sent "ADVANCED", stored "BASIC"' in message
    assert f'prometheus.remoteWriteUrl: sent "{REMOTE_WRITE}", not stored' in message
    expect_delete(sagemaker)
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    assert framework.send(delete(answer.PhysicalResourceId)).ok


def test_a_stale_read_within_the_grace_polls_again(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """Right after the request the stored configuration may still be the earlier one."""
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Active", config=DEFAULTS))
    expect_describe(sagemaker, described("Active"))
    answer = framework.send(create())
    assert answer.ok and answer.polls == 2


def test_a_difference_that_stays_fails_at_the_deadline_saying_so(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    expect_create(sagemaker, CONFIG)
    expect_describe(sagemaker, described("Active", config=DEFAULTS))
    answer = framework.send(create(properties(TimeoutSeconds=0)))
    assert not answer.ok and one_line(answer.error or "")
    assert "is still Active with a stored configuration that still differs" in (answer.error or "")


def test_an_empty_map_sets_nothing(sagemaker: Stubber, framework: ProviderFramework) -> None:
    """A construct given no levels writes no ``metricsProvider``; an empty map sends nothing."""
    config = {**CONFIG, "metricsProvider": {}}
    expect_create(sagemaker, {"prometheus": CONFIG["prometheus"]})
    expect_describe(sagemaker, described("Active"))
    answer = framework.send(create(properties(ConfigurationValues=compact(config))))
    assert answer.ok and answer.polls == 1


# -- update ------------------------------------------------------------------------------------


def test_an_update_of_settings_only_sends_no_version_and_every_setting(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """UpdateClusterExtensionRequest.ExtensionVersion "must be later than the extension's
    current version. If you omit this parameter, the extension keeps its current version";
    ConfigurationValues: "settings that you omit are unchanged" (botocore 1.44.5), so every
    setting is sent, a category turned off as DISABLED (facts_slurm_obs 1.4, 1.5)."""
    new_config = {
        **CONFIG,
        "metricsProvider": {
            **CONFIG["metricsProvider"],
            "nodeMetrics": {"level": "BASIC"},
            "networkMetrics": {"level": "DISABLED"},
        },
    }
    expect_update(
        sagemaker, {"ConfigurationValues": compact(new_config), "ClientToken": REQUEST_ID}
    )
    expect_describe(sagemaker, described("Active", config=stored(new_config)))
    event = update(
        properties(ConfigurationValues=compact(new_config)),
        properties(ConfigurationValues=compact(CONFIG)),
    )
    answer = framework.send(event)
    assert answer.ok and answer.PhysicalResourceId == EXTENSION_ARN


def test_a_removed_setting_is_sent_as_null(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """ "A setting with the value null is removed and returns to its default value"
    (botocore UpdateClusterExtension); the null is not checked against the stored value."""
    smaller = {**CONFIG, "metricsProvider": {"nodeMetrics": {"level": "ADVANCED"}}}
    expected = {
        **smaller,
        "metricsProvider": {
            "nodeMetrics": {"level": "ADVANCED"},
            "acceleratedComputeMetrics": {"level": None},
        },
    }
    expect_update(sagemaker, {"ConfigurationValues": compact(expected), "ClientToken": REQUEST_ID})
    expect_describe(sagemaker, described("Active", config=stored(smaller)))
    assert framework.send(update(properties(ConfigurationValues=compact(smaller)))).ok


def test_an_update_from_the_earlier_release_resets_no_undocumented_setting(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """A stack deployed by an earlier release has its configuration as a map with
    ``ampWorkspace`` and ``logging``: its old properties arrive stringified ({"enabled":
    "true"}); neither is a setting of the extension, so no null is sent for them (the extension
    would reject them); the new documented configuration is sent whole."""
    expect_update(sagemaker, {"ConfigurationValues": compact(CONFIG), "ClientToken": REQUEST_ID})
    expect_describe(sagemaker, described("Active"))
    event = update(properties(), properties(ConfigurationValues=EARLIER))
    assert event["OldResourceProperties"]["ConfigurationValues"]["logging"] == {"enabled": "true"}
    assert framework.send(event).ok


def test_an_undocumented_setting_on_update_fails_before_any_call(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    config = {**CONFIG, "logging": {"enabled": False}}
    answer = framework.send(update(properties(ConfigurationValues=compact(config))))
    assert not answer.ok and one_line(answer.error or "")
    assert "does not document: logging.enabled" in (answer.error or "")


def test_update_changes_version_and_configuration_in_place(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    new_config = {**CONFIG, "metricsProvider": {"nodeMetrics": {"level": "BASIC"}}}
    sent = {
        **new_config,
        "metricsProvider": {
            "nodeMetrics": {"level": "BASIC"},
            "acceleratedComputeMetrics": {"level": None},
        },
    }
    expect_update(
        sagemaker,
        {
            "ExtensionVersion": "1.3.0",
            "ConfigurationValues": compact(sent),
            "ClientToken": REQUEST_ID,
        },
    )
    expect_describe(sagemaker, described("Active", version="1.3.0", config=stored(new_config)))
    event = update(properties(ExtensionVersion="1.3.0", ConfigurationValues=compact(new_config)))
    answer = framework.send(event)
    assert answer.ok and answer.PhysicalResourceId == EXTENSION_ARN


def test_an_earlier_version_is_refused_in_one_line(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """ "You can update to a later version. You can't update to an earlier version"
    (botocore UpdateClusterExtension): refused before any call."""
    answer = framework.send(update(properties(ExtensionVersion="1.1.9")))
    assert not answer.ok and answer.PhysicalResourceId == EXTENSION_ARN
    message = answer.error or ""
    assert one_line(message)
    assert "cannot go from version 1.2.0 to the earlier 1.1.9" in message


def test_update_waits_until_the_new_version_is_active(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """Right after the update call the extension may still read Active at the old version."""
    expect_update(
        sagemaker,
        {
            "ExtensionVersion": "1.3.0",
            "ConfigurationValues": compact(CONFIG),
            "ClientToken": REQUEST_ID,
        },
    )
    expect_describe(sagemaker, described("Active", version="1.2.0"))
    expect_describe(sagemaker, described("Updating", version="1.3.0"))
    expect_describe(sagemaker, described("Active", version="1.3.0"))
    answer = framework.send(update(properties(ExtensionVersion="1.3.0")))
    assert answer.ok and answer.polls == 3


def test_update_to_another_cluster_creates_a_new_extension(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    new_arn = EXTENSION_ARN.replace("abcdef123456", "zyxwvu987654")
    sagemaker.add_response(
        "create_cluster_extension",
        {"ExtensionArn": new_arn},
        {
            "ClusterArn": OTHER_CLUSTER_ARN,
            "ExtensionName": "sagemaker-observability",
            "ExtensionVersion": "1.2.0",
            "ConfigurationValues": compact(CONFIG),
            "ClientToken": REQUEST_ID,
        },
    )
    event = update(properties(ClusterArn=OTHER_CLUSTER_ARN))
    assert handler.on_event(event, None)["PhysicalResourceId"] == new_arn


# -- delete ------------------------------------------------------------------------------------


def expect_delete(stubber: Stubber) -> None:
    stubber.add_response(
        "delete_cluster_extension",
        {"ExtensionArn": EXTENSION_ARN},
        {"ClusterArn": CLUSTER_ARN, "ExtensionArn": EXTENSION_ARN},
    )


def test_delete_then_wait_until_gone(sagemaker: Stubber, framework: ProviderFramework) -> None:
    expect_delete(sagemaker)
    expect_describe(sagemaker, described("Deleting"))
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    answer = framework.send(delete())
    assert answer.ok and answer.PhysicalResourceId == EXTENSION_ARN and answer.polls == 2


def test_delete_of_a_gone_extension_is_complete(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """Also the same Delete delivered twice: the second finds nothing and succeeds."""
    expect_delete(sagemaker)
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    sagemaker.add_client_error("delete_cluster_extension", "ResourceNotFound", "no such extension")
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    assert framework.send(delete()).ok
    assert framework.send(delete()).ok


def test_delete_of_a_busy_extension_is_retried_by_the_poll(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    sagemaker.add_client_error("delete_cluster_extension", "ConflictException", "Creating")
    expect_describe(sagemaker, described("Active"))
    expect_delete(sagemaker)
    expect_describe(sagemaker, described("Deleting"))
    sagemaker.add_client_error("describe_cluster_extension", "ResourceNotFound", "gone")
    assert framework.send(delete()).polls == 3


def test_delete_failed_fails(sagemaker: Stubber, framework: ProviderFramework) -> None:
    expect_delete(sagemaker)
    expect_describe(
        sagemaker,
        described(
            "DeleteFailed", issues=[{"Code": "InternalFailure", "Message": "x", "NodeCount": 2}]
        ),
    )
    answer = framework.send(delete())
    assert not answer.ok
    assert "DeleteFailed; " in (answer.error or "") and "InternalFailure" in (answer.error or "")


def test_delete_after_a_failed_create_calls_nothing(
    sagemaker: Stubber, framework: ProviderFramework
) -> None:
    """A physical id the handler never made (the framework's marker, or a request id): no call."""
    assert framework.send(delete(CREATE_FAILED_MARKER)).ok
    answer = framework.send(delete(REQUEST_ID))
    assert answer.ok and answer.PhysicalResourceId == REQUEST_ID
    assert [which for which, _ in framework.invocations] == ["onEvent", "isComplete"]


def test_long_failure_messages_are_cut_for_cloudformation() -> None:
    details = described(
        "Degraded",
        issues=[{"Code": "Other", "Message": "m" * 1000, "NodeCount": 1} for _ in range(3)],
    )
    assert len(handler.failure_message(details)) == handler.MAX_MESSAGE


# -- the Lambda runtime's boto3 ------------------------------------------------------------------


def test_a_runtime_without_the_extension_api_fails_at_once_in_one_line(
    monkeypatch: pytest.MonkeyPatch, framework: ProviderFramework
) -> None:
    """The handler uses the runtime's boto3 (no bundled copy): where that botocore predates
    CreateClusterExtension (botocore 1.44.5 has it; the python3.14 runtime's bundled SDK is not
    pinned, https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html "Runtime-included SDK
    versions"; facts_slurm_obs 1.11), the first call fails in one line naming the operation."""
    old_model = SimpleNamespace(operation_names=["ListClusters", "DescribeCluster"])
    monkeypatch.setattr(
        handler.boto3,
        "client",
        lambda *a, **k: SimpleNamespace(meta=SimpleNamespace(service_model=old_model)),
    )
    handler.sagemaker_client.cache_clear()
    try:
        answer = framework.send(create())
    finally:
        handler.sagemaker_client.cache_clear()
    message = answer.error or ""
    assert not answer.ok and one_line(message)
    assert message.startswith(
        f"the Lambda runtime's botocore {botocore.__version__} has no SageMaker operation"
        " CreateClusterExtension, UpdateClusterExtension, DeleteClusterExtension,"
        " DescribeClusterExtension"
    )


def test_the_pinned_botocore_has_every_operation_the_handler_calls() -> None:
    """The version the message names is the one the tests run with (requirements-dev.txt)."""
    assert botocore.__version__ == handler.TESTED_BOTOCORE
    names = set(_BOTOCORE.get_service_model("sagemaker").operation_names)
    assert set(handler.OPERATIONS) <= names
