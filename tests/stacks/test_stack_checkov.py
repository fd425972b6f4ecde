"""checkov (issue 5): no failed check on any shipped config; skips only in resource metadata.

checkov runs from its own pinned venv (.venv-checkov, ``make bootstrap-checkov``), once per
shipped config on all of its templates (scripts/run_checkov.py). A skip is legitimate only as
``Metadata.checkov.skip`` of the resource, with a reason (``hyperpod_cdk.compliance.checkov_skips``):
never on the command line, in the environment or in a ``.checkov.yaml``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from stack_testkit import PROJECT_ROOT, SHIPPED_CONFIGS

from hyperpod_cdk.compliance.checkov_skips import (
    CHECK_ID,
    MIN_COMMENT_LENGTH,
    FrameworkCheckovSkips,
    skip_check,
    skipped_checks,
)

if str(PROJECT_ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT / "scripts"))

import run_checkov

# checkov also honours a suppression written anywhere in a resource's text (checkov's
# COMMENT_REGEX): a template must carry none, so that every skip is in the metadata
INLINE_SUPPRESSION = re.compile(r"(checkov|bridgecrew|cortex):skip=")

CheckovRun = Callable[[Path], run_checkov.Report]


@pytest.fixture(scope="module")
def checkov_run(
    synthesized, build_variant, small_app, small_app_copy, tmp_path_factory: pytest.TempPathFactory
) -> run_checkov.Report:
    """One checkov process over every cloud assembly this module checks: each shipped config,
    each variant of :data:`FLIPPED_CHOICES`, the small app and a copy of it (checkov's
    start-up, about 5 CPU-seconds, is paid once instead of 17 times). A variant whose synth
    fails is left out: its own test reports the synth's error."""
    outdirs = [synthesized(path).outdir for path in SHIPPED_CONFIGS]
    for base, changes, context in FLIPPED_CHOICES.values():
        try:
            outdirs.append(build_variant(changes, base=base, context=context).outdir)
        except AssertionError:
            continue
    outdirs += [small_app[0], small_app_copy]
    return run_checkov.run_all(outdirs, workdir=tmp_path_factory.mktemp("checkov-home"))


@pytest.fixture(scope="module")
def checkov(checkov_run: run_checkov.Report) -> CheckovRun:
    """``checkov(outdir)``: what the module's checkov run found in that cloud assembly."""

    def get(outdir: Path) -> run_checkov.Report:
        report = checkov_run.of(outdir)
        assert report.templates, f"{outdir} was not in the module's checkov run"
        return report

    return get


def _metadata_skips(template: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(logical id, check id) -> comment of every checkov skip in a template's metadata."""
    found = {}
    for logical_id, resource in template.get("Resources", {}).items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            found[(logical_id, skip.get("id"))] = skip.get("comment", "")
    return found


# -- every shipped config --------------------------------------------------------------------


@pytest.fixture(scope="module")
def scanned_resources(checkov_run: run_checkov.Report) -> int:
    """How many resources the templates checkov read in the module's run hold (one of each set
    of byte-identical templates)."""
    return sum(len(json.loads(path.read_text())["Resources"]) for path in checkov_run.scanned)


@pytest.fixture(scope="module")
def scanned_contents(checkov_run: run_checkov.Report) -> set[str]:
    """The digests of the templates checkov read in the module's run."""
    return {hashlib.sha256(path.read_bytes()).hexdigest() for path in checkov_run.scanned}


def test_checkov_finds_no_failed_check(
    shipped, checkov: CheckovRun, scanned_resources: int, scanned_contents: set[str]
) -> None:
    report = checkov(shipped.outdir)
    # checkov read every stack of the config (or a byte-identical copy of it), and every
    # resource of every template it was given (it counts them for the whole run)
    assert len(report.templates) == len(shipped.templates)
    assert {
        hashlib.sha256(p.read_bytes()).hexdigest() for p in report.templates
    } <= scanned_contents
    assert report.parsing_errors == []
    assert report.stderr == ""  # no warning, e.g. of a download tried
    assert report.resource_count == scanned_resources
    assert [str(f) for f in sorted(report.failed, key=str)] == []
    # the skips in each template's metadata, by template
    written = {path: _metadata_skips(json.loads(path.read_text())) for path in report.templates}
    # each skip checkov applied is one of the templates' metadata, with its reason
    for finding in report.skipped:
        logical_id = finding.resource.split(".", 1)[1]
        skips = written.get(Path(finding.path), {})
        assert skips.get((logical_id, finding.check_id)) == finding.comment, finding
        assert len(finding.comment) >= MIN_COMMENT_LENGTH, finding
    # and each skip in the metadata is one checkov applied: none is stale or on a resource
    # its check does not read (the snapshots show no Metadata: this is where it is held)
    applied = {
        (Path(finding.path), finding.resource.split(".", 1)[1], finding.check_id)
        for finding in report.skipped
    }
    assert {
        (path, logical_id, check_id)
        for path, skips in written.items()
        for logical_id, check_id in skips
    } == applied


# -- every choice the acknowledgments follow (issue 16) ----------------------------------------

# Each variant flips the config choices that cdk-nag acknowledgments depend on, away from the
# shipped configs' values: checkov's matching findings must follow the config the same way.
FLIPPED_CHOICES = {
    "slurm-choices": (
        "full",
        {
            "cluster.slurm.accounting_multi_az": False,  # RDS Multi-AZ
            "storage.fsx.removal_policy": "destroy",  # with -c destroy_data=true: no protection
            "network.flow_logs": False,  # VPC flow logs
        },
        {"destroy_data": "true"},
    ),
    "eks-choices": (
        "eks-full",
        {
            "eks.endpoint_access": "public_and_private",  # a public API endpoint
            "eks.public_access_cidrs": ["203.0.113.0/24"],
            "eks.logging": ["api", "audit"],  # not every control-plane log type
        },
        None,
    ),
    # the FSx CSI driver's controller role and StorageClass (dynamic provisioning)
    "eks-fsx-dynamic": (
        "eks-full",
        {"eks.addons.fsx_csi_driver": {"dynamic_provisioning": True}},
        None,
    ),
    # all egress from the nodes (AWS's console default): the one config-dependent egress finding
    "slurm-all-egress": ("default", {"network.node_egress": "all"}, None),
    # no shipped config has FSx for OpenZFS (storage.openzfs): created, with both keys to
    # delete it, and adopted (the nodes' NFS egress to its group)
    "slurm-openzfs": (
        "default",
        {"storage.openzfs": {"removal_policy": "destroy"}},
        {"destroy_data": "true"},
    ),
    "slurm-openzfs-adopted": (
        "full",
        {
            "storage.openzfs": {
                "file_system_id": "fs-0123456789abcdef0",
                "dns_name": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
            }
        },
        None,
    ),
    # no shipped config has a closed network (no NAT, interface endpoints only)
    "slurm-closed-network": ("default", {"network.closed_network": True}, None),
    "eks-closed-network": (
        "eks-minimal",
        {
            "network.closed_network": True,
            "eks.image_registry": "111122223333.dkr.ecr.us-west-2.amazonaws.com/mirror",
            "storage.fsx.removal_policy": "destroy",
        },
        {"destroy_data": "true"},
    ),
}


@pytest.mark.parametrize("variant", sorted(FLIPPED_CHOICES))
def test_checkov_follows_the_config_choices(variant: str, build_variant, checkov) -> None:
    base, changes, context = FLIPPED_CHOICES[variant]
    synth = build_variant(changes, base=base, context=context)  # cdk-nag clean, or it raises
    report = checkov(synth.outdir)
    assert report.parsing_errors == []
    assert [str(f) for f in sorted(report.failed, key=str)] == []


def test_every_checkov_skip_in_the_templates_has_a_reason(shipped) -> None:
    for stack, template in shipped.templates.items():
        assert not INLINE_SUPPRESSION.search(json.dumps(template)), stack
        for logical_id, resource in template.get("Resources", {}).items():
            metadata = resource.get("Metadata", {})
            assert "bridgecrew" not in metadata, (stack, logical_id)
            for skip in metadata.get("checkov", {}).get("skip", []):
                assert set(skip) == {"id", "comment"}, (stack, logical_id, skip)
                assert CHECK_ID.fullmatch(skip["id"]), (stack, logical_id, skip)
                assert len(skip["comment"].strip()) >= MIN_COMMENT_LENGTH, (stack, logical_id, skip)


def test_cdk_framework_functions_carry_exactly_their_skips(synthesized) -> None:
    def skips(synth, kind: str, prefix: str) -> set[str]:
        (logical_id,) = [
            k for k in synth.resources(kind, "AWS::Lambda::Function") if k.startswith(prefix)
        ]
        return {c for (lid, c) in _metadata_skips(synth.template(kind)) if lid == logical_id}

    slurm = synthesized("default")
    assert skips(slurm, "nodes", "CustomCDKBucketDeployment8693BB64968944B69AAFB0CC9EB8756C") == {
        "CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"
    }  # fmt: skip
    assert skips(slurm, "nodes", "CustomS3AutoDeleteObjectsCustomResourceProviderHandler") == {
        "CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117"
    }  # fmt: skip
    eks = synthesized("eks-full")
    # the kubectl functions run in the VPC: CKV_AWS_117 passes and is not skipped
    for prefix in ("EksClusterKubectlProviderHandler", "EksClusterKubectlProviderframeworkonEvent"):
        assert skips(eks, "eks-dependencies", prefix) == {
            "CKV_AWS_115",
            "CKV_AWS_116",
            "CKV_AWS_173",
        }


# -- the runner ------------------------------------------------------------------------------


def test_checkov_runs_offline_and_skips_nothing_itself(monkeypatch, tmp_path: Path) -> None:
    files = [tmp_path / "a-network.template.json", tmp_path / "a-storage.template.json"]
    cmd = run_checkov.command(files)
    assert not {a.split("=", 1)[0] for a in cmd} & run_checkov.FORBIDDEN_OPTIONS
    assert cmd[cmd.index("--framework") + 1] == "cloudformation"
    assert "--skip-download" in cmd
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--file"] == [str(f) for f in files]

    monkeypatch.setenv("CKV_SKIP_CHECK", "CKV_AWS_18")
    monkeypatch.setenv("BC_API_KEY", "not-a-key")
    env = run_checkov.environment(tmp_path)
    assert "CKV_SKIP_CHECK" not in env and "BC_API_KEY" not in env
    assert env["BC_SKIP_MAPPING"] == "TRUE" and env["CKV_SKIP_PACKAGE_UPDATE_CHECK"] == "true"
    assert env["HOME"] == str(tmp_path)


def test_only_stack_templates_are_scanned(tmp_path: Path) -> None:
    for name in ("a-net.template.json", "stage/b-net.template.json", "asset.123/x.template.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / "manifest.json").write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in run_checkov.templates(tmp_path)] == [
        "a-net.template.json",
        "stage/b-net.template.json",
    ]


# -- skip_check and the aspect, on a small app -----------------------------------------------

REASON = "The bucket only receives test objects in this unit test, nothing else."


def _stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Test", env=cdk.Environment(account="123456789012", region="us-west-2"))  # fmt: skip


def test_skip_check_adds_to_the_metadata_already_there() -> None:
    bucket = s3.CfnBucket(_stack(), "Bucket")
    bucket.add_metadata("cdk_nag", {"rules_to_suppress": []})
    skip_check(bucket, "CKV_AWS_18", REASON)
    skip_check(bucket, "CKV2_AWS_6", "Public access is blocked by the account-level setting.")
    skip_check(bucket, "CKV_AWS_18", REASON)  # the same skip again changes nothing
    assert bucket.get_metadata("cdk_nag") == {"rules_to_suppress": []}
    assert skipped_checks(bucket) == {
        "CKV_AWS_18": REASON,
        "CKV2_AWS_6": "Public access is blocked by the account-level setting.",
    }


@pytest.mark.parametrize(
    ("check_id", "comment", "message"),
    [
        ("CKV_AWS_18", "too short", "at least 20 characters"),
        ("CKV_AWS_18", "   padded but short     ", "at least 20 characters"),
        ("BC_AWS_S3_13", REASON, "not a checkov check id"),
        ("CKV_AWS_18,CKV_AWS_21", REASON, "not a checkov check id"),
    ],
)
def test_skip_check_rejects_a_skip_without_a_reason_or_id(check_id, comment, message) -> None:
    with pytest.raises(ValueError, match=message):
        skip_check(s3.CfnBucket(_stack(), "Bucket"), check_id, comment)


def test_skip_check_rejects_a_second_reason_for_one_check() -> None:
    bucket = s3.CfnBucket(_stack(), "Bucket")
    skip_check(bucket, "CKV_AWS_18", REASON)
    with pytest.raises(ValueError, match="already skipped"):
        skip_check(bucket, "CKV_AWS_18", "Another reason, which would hide the first one.")


@pytest.fixture(scope="module")
def small_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A stack with a skipped bucket check, CDK's auto-delete handler and look-alikes of ours."""
    outdir = tmp_path_factory.mktemp("checkov-small")
    code = tmp_path_factory.mktemp("handler")
    (code / "index.js").write_text("exports.handler = async () => ({});\n")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Small", env=cdk.Environment(account="123456789012", region="us-west-2"))
    bucket = s3.Bucket(
        stack, "Bucket", auto_delete_objects=True, removal_policy=cdk.RemovalPolicy.DESTROY
    )
    cfn_bucket = bucket.node.default_child
    assert isinstance(cfn_bucket, cdk.CfnResource)
    skip_check(cfn_bucket, "CKV_AWS_18", REASON)
    # our own functions, named like CDK's: the aspect must leave them alone
    lambda_.Function(
        stack,
        "Handler",
        runtime=lambda_.Runtime.NODEJS_22_X,
        handler="index.handler",
        code=lambda_.Code.from_asset(str(code)),
    )
    cdk.CustomResourceProvider.get_or_create_provider(
        stack,
        "Custom::OurProvider",
        code_directory=str(code),
        runtime=cdk.CustomResourceProviderRuntime.NODEJS_22_X,
    )
    cdk.Aspects.of(stack).add(FrameworkCheckovSkips(), priority=cdk.AspectPriority.READONLY)
    app.synth()
    return outdir, json.loads((outdir / "Small.template.json").read_text())


@pytest.fixture(scope="module")
def small_app_copy(small_app, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-for-byte copy of the small app's assembly (checkov reads its template once)."""
    copy = tmp_path_factory.mktemp("checkov-small-copy") / "cdk.out"
    shutil.copytree(small_app[0], copy)
    return copy


def _logical_id(template: dict[str, Any], resource_type: str, prefix: str) -> str:
    (found,) = [
        k
        for k, r in template["Resources"].items()
        if r["Type"] == resource_type and k.startswith(prefix)
    ]
    return found


def test_the_aspect_skips_only_cdk_framework_functions(small_app) -> None:
    _, template = small_app
    functions = {
        k for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"
    }
    auto_delete = _logical_id(template, "AWS::Lambda::Function", "CustomS3AutoDeleteObjects")
    assert len(functions) == 3  # ours, our provider's, CDK's auto-delete handler
    assert {lid for (lid, _) in _metadata_skips(template)} & functions == {auto_delete}


def test_checkov_honours_a_metadata_skip_and_its_reason(small_app, checkov: CheckovRun) -> None:
    outdir, template = small_app
    bucket = f"AWS::S3::Bucket.{_logical_id(template, 'AWS::S3::Bucket', 'Bucket')}"
    ours = f"AWS::Lambda::Function.{_logical_id(template, 'AWS::Lambda::Function', 'Handler')}"
    report = checkov(outdir)
    skipped = {(f.resource, f.check_id): f.comment for f in report.skipped}
    failed = {(f.resource, f.check_id) for f in report.failed}
    assert skipped[(bucket, "CKV_AWS_18")] == REASON
    assert (bucket, "CKV_AWS_18") not in failed
    # what is not skipped still fails: our own function is not in a VPC
    assert (ours, "CKV_AWS_117") in failed


def test_a_copy_of_a_template_gets_the_findings_of_the_one_read(
    small_app, small_app_copy, checkov_run: run_checkov.Report
) -> None:
    original, copy = checkov_run.of(small_app[0]), checkov_run.of(small_app_copy)
    assert [p.name for p in copy.templates] == [p.name for p in original.templates]
    assert original.scanned == original.templates
    assert copy.scanned == []  # the original was read in its place

    def found(report: run_checkov.Report) -> dict[str, list[tuple[str, str, str, str]]]:
        return {
            kind: sorted((f.check_id, f.template, f.resource, f.comment) for f in findings)
            for kind, findings in (("failed", report.failed), ("skipped", report.skipped))
        }

    assert found(copy) == found(original)
    assert found(copy)["failed"] and found(copy)["skipped"]
    for finding in [*copy.failed, *copy.skipped]:
        assert Path(finding.path).is_relative_to(small_app_copy.resolve()), finding
