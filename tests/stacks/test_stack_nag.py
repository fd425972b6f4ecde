"""cdk-nag 3 (SPEC section 6): no unacknowledged finding on any shipped config, and every
acknowledgment names the exact finding with a reason a reviewer can judge."""

from __future__ import annotations

import json
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_logs as logs
from stack_testkit import STACK_KINDS, config_data, resource_paths

from hyperpod_cdk.compliance.nag import MIN_REASON_LENGTH, register_compliance_packs

# cdk-nag rule ids: <pack>-<rule>, optionally with the granular part of the finding
NAG_RULE = re.compile(
    r"^(AwsSolutions|NIST\.800\.53\.R5|HIPAA\.Security|PCI\.DSS\.321|HyperPod)-[A-Za-z0-9]+(\[.+\])?$"
)
# CDK's own annotations (warnings of constructs), acknowledged by their id
CDK_ANNOTATION = re.compile(r"^@aws-cdk/[a-z0-9-]+:[A-Za-z0-9]+$")
# rules of the CloudFormation schema validation built into aws-cdk-lib (ec2.FlowLog acknowledges
# two of them itself)
CFN_VALIDATE = re.compile(r"^CloudFormation-Validate::[A-Z][0-9]+$")
# IAM4 (managed policy) and IAM5 (wildcard) must name the exact policy / action / resource
GRANULAR_IAM = re.compile(r"^AwsSolutions-IAM[45]\[(Policy|Action|Resource)::.+\]$")


def finding_id(key: str) -> str:
    """The finding id of an acknowledgment (CDK stores it as ``Annotation::<id>``)."""
    return key.removeprefix("Annotation::")


def test_synth_leaves_no_compliance_finding(shipped) -> None:
    # synthesis itself fails on an error finding of a stack under the App; a finding inside a
    # Stage only shows in the report, so read it too
    report = shipped.outdir / "validation-report.json"
    reports = json.loads(report.read_text())["pluginReports"] if report.exists() else []
    assert [r for r in reports if r["conclusion"] == "failure"] == []
    violations = [
        (r["pluginName"], v["ruleName"]) for r in reports for v in r.get("violations", [])
    ]
    assert violations == []


def test_compliance_packs_are_registered(shipped) -> None:
    # without them the report above proves nothing
    assert shipped.config.compliance_packs


def test_every_acknowledgment_gives_a_real_reason(shipped) -> None:
    assert shipped.acknowledgments
    for path, finding, reason in shipped.acknowledgments:
        assert len(reason.strip()) >= MIN_REASON_LENGTH, (path, finding, reason)


def test_every_acknowledgment_names_a_specific_rule(shipped) -> None:
    for path, finding, _ in shipped.acknowledgments:
        rule = finding_id(finding)
        assert NAG_RULE.match(rule) or CDK_ANNOTATION.match(rule) or CFN_VALIDATE.match(rule), (
            path,
            rule,
        )


def test_iam_acknowledgments_name_the_exact_policy_action_or_resource(shipped) -> None:
    for path, finding, _ in shipped.acknowledgments:
        rule = finding_id(finding)
        if rule.startswith(("AwsSolutions-IAM4", "AwsSolutions-IAM5")):
            assert GRANULAR_IAM.match(rule), (path, rule)


def test_acknowledgments_sit_below_the_stack(shipped) -> None:
    # on the narrowest construct, never on a whole stack or the App
    for path, finding, _ in shipped.acknowledgments:
        assert path.strip("/").count("/") >= 1, (path, finding)


def test_flow_logs_off_passes_aws_solutions(build_variant) -> None:
    # network.flow_logs: false is a documented setting; cdk-nag's AwsSolutions-VPC7 must be
    # acknowledged (with the config key as the reason) or synth fails for every such user
    synth = build_variant({"network.flow_logs": False}, base="minimal")
    assert synth.resources("network", "AWS::EC2::FlowLog") == {}


def test_removal_policy_destroy_with_the_flag_passes_aws_solutions(build_variant) -> None:
    # both keys turn the database's deletion protection off on purpose; AwsSolutions-RDS10 must
    # be acknowledged in that case (and only then), or the destroy setup cannot synthesize
    synth = build_variant(
        {"storage.fsx.removal_policy": "destroy"}, base="full", context={"destroy_data": "true"}
    )
    assert synth.template("storage")["Resources"]["FileSystem"]["DeletionPolicy"] == "Delete"


@pytest.mark.parametrize(
    ("pack", "rule"),
    [
        ("NIST80053R5", "NIST.800.53.R5-CloudWatchLogGroupEncrypted"),
        ("HIPAA", "HIPAA.Security-CloudWatchLogGroupEncrypted"),
        ("PCIDSS321", "PCI.DSS.321-CloudWatchLogGroupEncrypted"),
    ],
)
def test_compliance_packs_key_registers_the_named_pack(pack: str, rule: str, tmp_path) -> None:
    # the `synthesized` fixture registers all four packs on every shipped config, so the tests
    # above prove each shipped config passes them all; this proves a named pack really runs:
    # an unencrypted log group passes AwsSolutions alone and fails the named pack
    def synth(names: list[str]) -> None:
        app = cdk.App(outdir=str(tmp_path / "-".join(names)))
        logs.CfnLogGroup(cdk.Stack(app, "Probe"), "Logs", retention_in_days=365)
        register_compliance_packs(app, names)
        app.synth()

    synth(["AwsSolutions"])
    with pytest.raises(Exception, match="Validation"):
        synth(["AwsSolutions", pack])
    report = json.loads((tmp_path / f"AwsSolutions-{pack}" / "validation-report.json").read_text())
    assert rule in {v["ruleName"] for r in report["pluginReports"] for v in r["violations"]}


def test_minimal_config_registers_aws_solutions_by_default() -> None:
    assert "compliance_packs" not in config_data("minimal")


def test_acknowledgments_ship_in_the_template_metadata(shipped) -> None:
    # the audit trail travels with the template: every acknowledged rule of a resource is in
    # its Metadata.cdk_nag.rules_to_suppress, with the reason
    written = {
        (rule["id"], rule["reason"])
        for template in shipped.templates.values()
        for resource in template["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    }
    ids = {rule_id for rule_id, _ in written}
    # e.g. the EFA self rule (NIST/HIPAA/PCI EC2RestrictedCommonPorts) in the network stack
    assert "NIST.800.53.R5-EC2RestrictedCommonPorts" in ids
    for _, finding, reason in shipped.acknowledgments:
        rule = finding_id(finding)
        if NAG_RULE.match(rule):
            assert (rule, reason) in written, rule


def test_template_metadata_holds_exactly_the_acknowledgments_of_each_resource(shipped) -> None:
    """Each rule in a resource's ``Metadata.cdk_nag`` is an acknowledgment made on that resource
    or a construct above it, with the same reason; and each acknowledgment reaches the metadata
    of a resource below it. (The snapshots show no Metadata: this is where it is held.)"""
    reasons = {
        (path.strip("/"), finding_id(f)): reason for path, f, reason in shipped.acknowledgments
    }
    reached = set()
    for kind in [k for k in STACK_KINDS if shipped.has(k)]:
        stack = shipped.stack(kind)
        paths = resource_paths(stack)
        for logical_id, resource in shipped.resources(kind).items():
            rules = resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
            if not rules:
                continue
            parts = f"{stack.node.path}/{paths[logical_id]}".split("/")
            scopes = ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
            for rule in rules:
                found = [s for s in scopes if reasons.get((s, rule["id"])) == rule["reason"]]
                assert found, (kind, logical_id, rule["id"])
                reached.add((found[0], rule["id"]))
    nag = {key for key in reasons if NAG_RULE.match(key[1])}
    assert nag - reached == set()
