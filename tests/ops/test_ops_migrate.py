"""`make migrate-eks-dependencies`: raw-manifest dependencies move onto the Helm releases without
one object deleted.

The deployed template is the ``eks-dependencies`` stack of config/examples/eks-minimal.yaml as
the previous version of this project synthesized it (its snapshot, kept as a fixture).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ops_testkit import ACCOUNT, PROJECT_ROOT, StubbedAws, endpoint_only, environment

from hyperpod_cdk.facts import chart
from hyperpod_ops import migrate
from hyperpod_ops.k8s import Kubernetes, KubernetesUnreachable, Response

DEPLOYED = json.loads(
    (Path(__file__).parent / "fixtures" / "eks-minimal-eks-dependencies-manifests.json").read_text()
)
STACK = "eks-minimal-eks-dependencies"
EKS = "eks-minimal-eks"


class FakeApi:
    """The cluster's API: every object of the old manifests exists; PATCHes are recorded."""

    def __init__(self, *, down: bool = False, gone: frozenset[str] = frozenset()) -> None:
        self.down, self.gone = down, gone
        self.patches: dict[str, dict[str, Any]] = {}

    def __call__(self, method: str, path: str, body: dict[str, Any] | None) -> Response:
        if self.down:
            raise KubernetesUnreachable("timed out")
        assert method == "PATCH" and body is not None
        if path in self.gone:
            return Response(404, {"kind": "Status", "reason": "NotFound"})
        self.patches[path] = body
        return Response(200, {"metadata": body["metadata"]})


def legacy() -> list[migrate.Legacy]:
    return migrate.legacy_manifests(DEPLOYED)


def test_the_old_manifests_and_their_releases_are_found() -> None:
    found = {item.logical_id: item.release for item in legacy()}
    assert len(found) == 10
    assert found["EksClusterNamespacesD359B49C"] is None  # namespaces are left as they are
    by_release = {r.name if r else None for r in found.values()}
    # the scientist roles came with the chart (1.1.0): no old manifest held them
    assert by_release == {None, *(r.name for r in chart.RELEASES)} - {"hyperpod-cdk-scientist-rbac"}
    (patching,) = [r for k, r in found.items() if k.startswith("EksClusterPatching")]
    assert patching is not None and patching.name == "hyperpod-cdk-core"


def test_every_old_object_is_adopted_by_the_release_that_renders_it() -> None:
    """Helm adopts an object only into the release that renders one of that kind and name."""
    import sys

    sys.path.insert(0, str(PROJECT_ROOT / "tests" / "eks"))
    from chart_testkit import helm, render

    rendered: dict[tuple[str, str, str | None], str] = {}
    for release in chart.RELEASES:
        values = chart.release_values(release, region="us-west-2", enabled=chart.DEPENDENCY_KEYS)
        for obj in render(helm("1.35"), values, release=release.name, namespace=release.namespace):
            meta = obj["metadata"]
            rendered[(obj["kind"], meta["name"], meta.get("namespace"))] = release.name
    for item in legacy():
        if item.release is None:
            continue
        for obj in item.objects:
            meta = obj["metadata"]
            key = (obj["kind"], meta["name"], meta.get("namespace"))
            assert rendered.get(key) == item.release.name, key


def test_retaining_changes_only_the_policies_of_the_old_resources() -> None:
    changed = migrate.retained(DEPLOYED, legacy())
    assert changed is not None
    ids = {item.logical_id for item in legacy()}
    for logical_id, resource in changed["Resources"].items():
        before = DEPLOYED["Resources"][logical_id]
        if logical_id in ids:
            assert resource["DeletionPolicy"] == resource["UpdateReplacePolicy"] == "Retain"
            resource = {k: v for k, v in resource.items() if not k.endswith("Policy")}
            before = {k: v for k, v in before.items() if not k.endswith("Policy")}
        assert resource == before, logical_id  # the handler is never called
    assert migrate.retained(changed, legacy()) is None  # a second run has nothing to do


@pytest.mark.parametrize(
    "obj",
    [o for item in legacy() for o in item.objects if o["kind"] != "Namespace"],
    ids=lambda o: f"{o['kind']}-{o['metadata']['name']}",
)
def test_every_old_object_has_an_api_path(obj: dict[str, Any]) -> None:
    path = migrate.object_path(obj)
    assert path.endswith(f"/{obj['metadata']['name']}")
    assert ("namespaces/" in path) == ("namespace" in obj["metadata"])


def _aws(template: dict[str, Any], *, update: bool) -> StubbedAws:
    aws = StubbedAws()
    cfn = aws.stub("cloudformation")
    cfn.add_response(
        "get_template",
        {"TemplateBody": json.dumps(template)},
        {"StackName": STACK, "TemplateStage": "Original"},
    )
    if update:
        aws.stub("sts").add_response(
            "get_caller_identity",
            {"Account": ACCOUNT, "Arn": "arn:aws:iam::1:user/a", "UserId": "a"},
        )
        import boto3
        from botocore.stub import ANY, Stubber

        # S3 from a botocore session of its own: boto3 injects its S3 helpers into the client
        # class once per session, and the testkit's shared session may have done it already
        s3 = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-west-2"
        ).client("s3")
        aws.clients["s3"], aws.stubbers["s3"] = s3, Stubber(s3)
        aws.stubbers["s3"].activate()
        aws.stub("s3").add_response(
            "put_object", {}, {"Bucket": f"cdk-hnb659fds-assets-{ACCOUNT}-us-west-2", "Key": ANY,
                               "Body": ANY, "ContentType": "application/json",
                               # security review L6: the bootstrap bucket must be the caller's
                               "ExpectedBucketOwner": ACCOUNT})  # fmt: skip
        stack = {"StackName": STACK, "StackStatus": "UPDATE_COMPLETE",
                 "CreationTime": "2026-11-01T00:00:00Z",
                 "Parameters": [{"ParameterKey": "BootstrapVersion", "ParameterValue": "x"}]}  # fmt: skip
        cfn.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": STACK})
        cfn.add_response(
            "update_stack",
            {"StackId": "arn:aws:cloudformation:us-west-2:1:stack/x/y"},
            {
                "StackName": STACK,
                "TemplateURL": ANY,
                "Parameters": [{"ParameterKey": "BootstrapVersion", "UsePreviousValue": True}],
                "Capabilities": [
                    "CAPABILITY_IAM",
                    "CAPABILITY_NAMED_IAM",
                    "CAPABILITY_AUTO_EXPAND",
                ],
            },
        )
        cfn.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": STACK})
    endpoint_only(aws, EKS, "https://example.eks.amazonaws.com")
    return aws


def _run(aws: StubbedAws, api: FakeApi) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = migrate.migrate(
        environment("eks-minimal"), aws, PROJECT_ROOT,
        connect=lambda *_: Kubernetes(api), say=lines.append,
    )  # fmt: skip
    return code, lines


def test_a_migration_retains_then_hands_every_object_to_its_release() -> None:
    aws, api = _aws(DEPLOYED, update=True), FakeApi()
    code, lines = _run(aws, api)
    assert code == 0, lines
    objects = [o for i in legacy() if i.release for o in i.objects]
    assert len(api.patches) == len(objects)
    for item in legacy():
        for obj in item.objects if item.release else ():
            annotations = api.patches[migrate.object_path(obj)]["metadata"]["annotations"]
            assert annotations["meta.helm.sh/release-name"] == item.release.name
            assert annotations["meta.helm.sh/release-namespace"] == item.release.namespace
    assert not any("/namespaces/" not in p and "/namespaces" in p for p in api.patches)
    assert lines[0].startswith(f"migrate: {STACK}: retaining 10 old manifest resources")
    assert "run make deploy" in lines[-1]
    for stubber in aws.stubbers.values():
        stubber.assert_no_pending_responses()


def test_a_second_run_updates_no_stack() -> None:
    already = migrate.retained(DEPLOYED, legacy())
    assert already is not None
    aws, api = _aws(already, update=False), FakeApi()
    code, lines = _run(aws, api)
    assert code == 0
    assert "already retained" in lines[0]
    assert api.patches


def test_nothing_to_migrate_on_a_chart_environment() -> None:
    aws = StubbedAws()
    aws.stub("cloudformation").add_response(
        "get_template", {"TemplateBody": json.dumps({"Resources": {}})},
        {"StackName": STACK, "TemplateStage": "Original"},
    )  # fmt: skip
    code, lines = _run(aws, FakeApi())
    assert code == 0 and "nothing to migrate" in lines[0]


def test_an_unreachable_api_fails_after_the_retain_and_loses_nothing() -> None:
    already = migrate.retained(DEPLOYED, legacy())
    assert already is not None
    code, lines = _run(_aws(already, update=False), FakeApi(down=True))
    assert code == 1
    assert "the old resources are retained, so nothing is lost" in lines[-1]
