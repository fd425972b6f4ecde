"""The default security group handler (Node.js, network/restrict_default_sg/index.js) run as
Lambda runs it: the synthesized asset of CDK's ``CustomResourceProvider`` (its
``__entrypoint__.js`` wrapper, which answers CloudFormation, and our ``index.js``) under the
pinned Node.js of node_modules, with the request CloudFormation sends for the template's
properties (tests/support/cfn_events.py) and a fake ``@aws-sdk/client-ec2`` beside the asset
(the runtime's SDK; the host's own modules are not on the path). The response is captured
through the entrypoint's own seam (``external.sendHttpRequest``) and held to what CloudFormation
accepts.

The two default rules are the ones EC2 creates for a VPC's default group (Amazon VPC user guide,
"Default security groups for your VPCs"); the tolerated error codes are EC2's
(``InvalidPermission.NotFound``, ``InvalidPermission.Duplicate``, ``InvalidGroup.NotFound``,
EC2 API reference "Error codes").
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.cfn_events import (
    CREATE_FAILED_MARKER,
    Response,
    cfn_event,
    check_response,
    resolve,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NODE = PROJECT_ROOT / "node_modules" / ".bin" / "node"
ACCOUNT, REGION = "111122223333", "us-west-2"
GROUP = "sg-0123456789abcdef0"
OTHER_GROUP = "sg-0fedcba9876543210"

pytestmark = pytest.mark.skipif(
    not NODE.exists(), reason="the pinned Node.js (node_modules/.bin/node) is not installed"
)

_FAKE_EC2 = r"""
'use strict';
// A stand-in for the Lambda runtime's @aws-sdk/client-ec2: records each command and throws the
// EC2 error named for it in FAKE_EC2_ERRORS ({"RevokeSecurityGroupIngressCommand": "Code"}).
const fs = require('fs');
const errors = JSON.parse(process.env.FAKE_EC2_ERRORS || '{}');
function command(name) {
  return class { constructor(input) { this.name = name; this.input = input; } };
}
class EC2Client {
  constructor(config) { this.config = config; }
  async send(cmd) {
    fs.appendFileSync(process.env.FAKE_EC2_LOG, JSON.stringify({ command: cmd.name, input: cmd.input }) + '\n');
    if (errors[cmd.name]) {
      const error = new Error(`${errors[cmd.name]} from the fake EC2`);
      error.name = errors[cmd.name];
      throw error;
    }
    return {};
  }
}
module.exports = { EC2Client };
for (const name of ['AuthorizeSecurityGroupEgressCommand', 'AuthorizeSecurityGroupIngressCommand',
                    'RevokeSecurityGroupEgressCommand', 'RevokeSecurityGroupIngressCommand']) {
  module.exports[name] = command(name);
}
"""

_DRIVER = r"""
'use strict';
// Runs CDK's entrypoint on one event; prints the responses it would PUT.
const fs = require('fs');
const entry = require('./__entrypoint__.js');
const answers = [];
entry.external.sendHttpRequest = async (options, body) => { answers.push({ options, body: JSON.parse(body) }); };
entry.external.log = () => {};
entry.handler(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')), {})
  .then(() => process.stdout.write(JSON.stringify(answers)));
"""


@dataclass
class Template:
    """The synthesized provider asset and the custom resource's properties."""

    asset: Path
    properties: dict[str, Any]
    resource_type: str


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from hyperpod_cdk.network.default_security_group import restrict_default_security_group

    outdir = tmp_path_factory.mktemp("sg-cdk-out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Sg", env=cdk.Environment(account=ACCOUNT, region=REGION))
    vpc = ec2.CfnVPC(stack, "Vpc", cidr_block="10.0.0.0/16")
    restrict_default_security_group(stack, vpc)
    app.synth()
    resources = json.loads((outdir / "Sg.template.json").read_text())["Resources"]
    (resource,) = [r for r in resources.values() if r["Type"].startswith("Custom::")]
    properties = {k: v for k, v in resource["Properties"].items() if k != "ServiceToken"}
    files = json.loads((outdir / "Sg.assets.json").read_text())["files"]
    (asset,) = [
        outdir / f["source"]["path"]
        for f in files.values()
        if (outdir / f["source"]["path"] / "__entrypoint__.js").exists()
    ]
    run = tmp_path_factory.mktemp("sg-asset") / "asset"
    shutil.copytree(asset, run)
    sdk = run / "node_modules" / "@aws-sdk" / "client-ec2"
    sdk.mkdir(parents=True)
    (sdk / "index.js").write_text(_FAKE_EC2)
    (run / "driver.js").write_text(_DRIVER)
    resolved = resolve(properties, {"Vpc.DefaultSecurityGroup": GROUP, "AWS::AccountId": ACCOUNT})
    return Template(run, resolved, resource["Type"])


@dataclass
class Run:
    response: Response
    calls: list[dict[str, Any]]
    put: dict[str, Any]


def run(
    template: Template,
    tmp_path: Path,
    request: dict[str, Any],
    errors: dict[str, str] | None = None,
) -> Run:
    """One delivery of ``request`` to the asset under the pinned Node.js."""
    (tmp_path / "event.json").write_text(json.dumps(request))
    log = tmp_path / "ec2.log"
    log.write_text("")
    env = {
        "PATH": str(NODE.parent),  # nothing of the host's
        "HOME": str(tmp_path),
        "FAKE_EC2_LOG": str(log),
        "FAKE_EC2_ERRORS": json.dumps(errors or {}),
        "AWS_REGION": REGION,
    }
    done = subprocess.run(
        [str(NODE), "driver.js", str(tmp_path / "event.json")],
        cwd=template.asset,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (answer,) = json.loads(done.stdout)
    assert answer["options"]["method"] == "PUT"
    assert answer["options"]["headers"]["content-type"] == ""
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return Run(check_response(answer["body"], request), calls, answer["body"])


def request(template: Template, kind: str, physical: str | None = None, **props: Any) -> Any:
    properties = {**template.properties, **props}
    return cfn_event(
        kind,
        properties,
        old_properties=template.properties if kind == "Update" else None,
        physical_resource_id=physical,
        resource_type=template.resource_type,
        logical_resource_id="RestrictDefaultSecurityGroupCustomResource",
    )


INGRESS = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": GROUP, "UserId": ACCOUNT}]}]
EGRESS = [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]


def test_the_event_carries_the_group_and_the_account_as_strings(template: Template) -> None:
    assert template.resource_type == "Custom::VpcRestrictDefaultSG"
    sent = request(template, "Create")["ResourceProperties"]
    assert sent["DefaultSecurityGroupId"] == GROUP
    assert sent["Account"] == ACCOUNT


def test_create_revokes_both_default_rules(template: Template, tmp_path: Path) -> None:
    done = run(template, tmp_path, request(template, "Create"))
    assert done.response.ok and done.response.PhysicalResourceId == GROUP
    assert done.calls == [
        {
            "command": "RevokeSecurityGroupIngressCommand",
            "input": {"GroupId": GROUP, "IpPermissions": INGRESS},
        },
        {
            "command": "RevokeSecurityGroupEgressCommand",
            "input": {"GroupId": GROUP, "IpPermissions": EGRESS},
        },
    ]


def test_the_same_create_delivered_twice_succeeds(template: Template, tmp_path: Path) -> None:
    """The second delivery finds the rules gone (InvalidPermission.NotFound): nothing to do."""
    sent = request(template, "Create")
    gone = {
        "RevokeSecurityGroupIngressCommand": "InvalidPermission.NotFound",
        "RevokeSecurityGroupEgressCommand": "InvalidPermission.NotFound",
    }
    first = run(template, tmp_path, sent)
    second = run(template, tmp_path, sent, gone)
    assert first.response.ok and second.response.ok
    assert first.response.PhysicalResourceId == second.response.PhysicalResourceId == GROUP


def test_an_ec2_error_fails_with_its_message_first(template: Template, tmp_path: Path) -> None:
    """CDK's entrypoint puts the error's stack in the reason; its first line is the handler's
    one-line message. The physical id is the framework's marker, so the rollback Delete is
    answered without calling the handler."""
    denied = {"RevokeSecurityGroupIngressCommand": "UnauthorizedOperation"}
    failed = run(template, tmp_path, request(template, "Create"), denied)
    assert not failed.response.ok
    assert failed.response.PhysicalResourceId == CREATE_FAILED_MARKER
    assert failed.response.Reason.splitlines()[0] == (
        "UnauthorizedOperation: UnauthorizedOperation from the fake EC2"
    )
    rollback = run(template, tmp_path, request(template, "Delete", CREATE_FAILED_MARKER))
    assert rollback.response.ok and rollback.calls == []


def test_delete_puts_both_rules_back(template: Template, tmp_path: Path) -> None:
    done = run(template, tmp_path, request(template, "Delete", GROUP))
    assert done.response.ok and done.response.PhysicalResourceId == GROUP
    assert [c["command"] for c in done.calls] == [
        "AuthorizeSecurityGroupIngressCommand",
        "AuthorizeSecurityGroupEgressCommand",
    ]
    assert done.calls[0]["input"]["IpPermissions"] == INGRESS
    assert done.calls[1]["input"]["IpPermissions"] == EGRESS


def test_delete_of_a_group_that_is_gone_or_reopened_succeeds(
    template: Template, tmp_path: Path
) -> None:
    for error in ("InvalidGroup.NotFound", "InvalidPermission.Duplicate"):
        errors = {
            "AuthorizeSecurityGroupIngressCommand": error,
            "AuthorizeSecurityGroupEgressCommand": error,
        }
        done = run(template, tmp_path, request(template, "Delete", GROUP), errors)
        assert done.response.ok, (error, done.response.Reason)


def test_an_update_to_a_new_group_closes_it_and_takes_its_id(
    template: Template, tmp_path: Path
) -> None:
    sent = request(template, "Update", GROUP, DefaultSecurityGroupId=OTHER_GROUP)
    done = run(template, tmp_path, sent)
    assert done.response.ok and done.response.PhysicalResourceId == OTHER_GROUP
    assert {c["input"]["GroupId"] for c in done.calls} == {OTHER_GROUP}
