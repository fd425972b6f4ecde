"""The update notes (hyperpod_ops.update_notes, ``make update-notes``): what deploying a config over an
earlier one adds, updates, replaces and deletes, per stack, offline."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from stack_testkit import PROJECT_ROOT, config_data, with_changes
from test_deploy_gate import app_calls, assembly_app
from test_stack_task_governance import US_EAST_1

from hyperpod_ops import update_notes
from hyperpod_ops.template_changes import ResourceChange, resource_changes

QUOTA = "AWS::SageMaker::ComputeQuota"
FSX = "AWS::FSx::FileSystem"
KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


def _fsx(storage_type: str = "SSD", retain: bool = True) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "Type": FSX,
        "Properties": {"StorageType": storage_type, "StorageCapacity": 1200},
    }
    if retain:
        resource["DeletionPolicy"] = "Retain"
    return resource


def _topic(name: str = "a") -> dict[str, Any]:
    return {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": name}}


def _by_id(changes: list[ResourceChange]) -> dict[str, ResourceChange]:
    return {c.logical_id: c for c in changes}


# -- the comparison on hand-made templates -----------------------------------------------------


def test_each_kind_of_change_is_named() -> None:
    before = {
        "s": _template(
            Fs=_fsx(), Topic=_topic(), Gone=_topic(), Same=_topic(), Quota=_quota("applied")
        )
    }
    after = {
        "s": _template(
            Fs=_fsx("HDD"),  # create-only: replaced
            Topic=_topic("b"),  # updated in place
            Same=_topic(),
            New={"Type": "AWS::SQS::Queue", "Properties": {}},
            QuotaRenamed=_quota("product"),  # one lost, one gained of a type: a new id
        )
    }
    changes = _by_id(resource_changes(before, after))
    assert set(changes) == {"Fs", "Topic", "Gone", "New", "Quota"}
    assert changes["Fs"].action == "replace"
    assert "create-only /properties/StorageType changed: 'SSD' -> 'HDD'" in changes["Fs"].why
    assert changes["Fs"].stateful == "the shared file system: its data"
    assert changes["Topic"].action == "update"
    assert changes["Topic"].stateful is None
    assert changes["Gone"].action == "delete"
    assert changes["New"].action == "add"
    quota = changes["Quota"]
    assert (quota.action, quota.new_logical_id) == ("replace", "QuotaRenamed")
    assert "queued" in (quota.disruption or "")


def test_metadata_alone_is_no_change_and_a_custom_resource_says_its_handler_decides() -> None:
    custom = {"Type": "Custom::Thing", "Properties": {"ServiceToken": "t", "Value": 1}}
    before = {"s": _template(A={**_topic(), "Metadata": {"aws:cdk:path": "x/A"}}, C=custom)}
    after = {
        "s": _template(
            A={**_topic(), "Metadata": {"aws:cdk:path": "y/A"}},
            C={**custom, "Properties": {**custom["Properties"], "Value": 2}},
        )
    }
    changes = resource_changes(before, after)
    assert [(c.logical_id, c.action) for c in changes] == [("C", "update")]
    assert "handler decides" in changes[0].why


def test_two_of_a_type_lost_and_gained_are_deletes_and_adds_not_guessed_pairs() -> None:
    before = {"s": _template(A=_topic(), B=_topic())}
    after = {"s": _template(C=_topic(), D=_topic())}
    actions = {c.logical_id: c.action for c in resource_changes(before, after)}
    assert actions == {"A": "delete", "B": "delete", "C": "add", "D": "add"}


def test_the_text_marks_data_and_what_the_retain_policy_keeps() -> None:
    before = {"one": _template(Fs=_fsx()), "two": _template(T=_topic()), "old": _template()}
    after = {"one": _template(Fs=_fsx("HDD")), "two": _template(T=_topic()), "new": _template()}
    changes = update_notes.notes(before, after, "us-west-2")
    text = update_notes.render(changes, before, after, title="t")
    assert "one: 1 replaced" in text
    assert (
        "DATA: the shared file system: its data; its DeletionPolicy Retain keeps the old one"
        in text
    )
    assert "two: unchanged" in text
    assert "new: new stack (0 resources)" in text
    assert "old: REMOVED from the app" in text
    assert text.endswith("Resources that hold data replaced or deleted: one/Fs")
    unretained = {"one": _template(Fs=_fsx(retain=False))}
    text = update_notes.render(
        update_notes.notes(unretained, {"one": _template()}, "us-west-2"),
        unretained,
        {"one": _template()},
        title="t",
    )
    assert "the old one is DELETED" in text


def _quota(team: str) -> dict[str, Any]:
    return {
        "Type": QUOTA,
        "Properties": {
            "Name": f"env-{team}",
            "ClusterArn": "arn",
            "ComputeQuotaTarget": {"TeamName": team, "FairShareWeight": 1},
            "ComputeQuotaConfig": {},
        },
    }


# -- day 2 on a synthesized environment ----------------------------------------------------------


@pytest.fixture(scope="module")
def east(build_variant: Any) -> Any:
    return build_variant(US_EAST_1, base="eks-full", nag=False)


def _notes(before: Any, after: Any) -> list[ResourceChange]:
    return update_notes.notes(before.templates, after.templates, "us-east-1")


def test_renaming_a_team_shows_its_quota_replaced(build_variant: Any, east: Any) -> None:
    renamed = build_variant(
        {**US_EAST_1, "eks.task_governance.teams[1].name": "product"}, base="eks-full", nag=False
    )
    changes = _notes(east, renamed)
    replaced = [c for c in changes if c.action in ("replace", "delete")]
    assert [(c.resource_type, c.action) for c in replaced] == [(QUOTA, "replace")]
    quota = replaced[0]
    assert quota.stack == east.stack_name("eks-addons")
    assert "Applied" in quota.logical_id and "Product" in str(quota.new_logical_id)
    # and the pod admission policy's binding follows the team's namespace, in place
    assert {c.stack for c in changes} == {
        east.stack_name("eks-addons"),
        east.stack_name("eks-dependencies"),
    }
    assert {c.action for c in changes if c.stack == east.stack_name("eks-dependencies")} == {
        "update"
    }
    text = update_notes.render(changes, east.templates, renamed.templates, title="t")
    assert "REPLACE" in text and "LOSES: the team's quota" in text


def test_changing_a_quota_updates_it_in_place(build_variant: Any, east: Any) -> None:
    changed = build_variant(
        {**US_EAST_1, "eks.task_governance.teams[0].quota[0].count": 1}, base="eks-full", nag=False
    )
    changes = _notes(east, changed)
    assert changes
    assert {c.action for c in changes} == {"update"}
    assert QUOTA in {c.resource_type for c in changes}


# -- the command ---------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, changes: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(with_changes(config_data("minimal"), changes)))
    return path


def test_the_command_exits_3_on_data_loss_when_asked(
    build_variant: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command's whole path (both configs validated, each synthesized by running the app as
    the CDK CLI runs it, the notes, the exit status) with its --app the stand-in of
    test_deploy_gate.assembly_app, which writes the assemblies the shared cache synthesized
    from the same two configs (as app.py builds them), and records that the command ran it on
    each file once. The command's own synth path (``python app.py``, no --app) is
    test_a_git_base_reads_the_config_at_that_revision's."""
    base = _write(tmp_path, "base.yaml", {})
    kms = {"storage.fsx.kms_key_arn": KEY}
    new = _write(tmp_path, "new.yaml", kms)
    app, calls = assembly_app(
        tmp_path,
        {base: build_variant({}, base="minimal"), new: build_variant(kms, base="minimal")},
    )
    code = update_notes.main([str(new), "--base", str(base), "--fail-on-data-loss", "--app", app])
    out = capsys.readouterr().out
    assert code == update_notes.DATA_LOSS_EXIT, out
    assert "DATA: the shared file system" in out
    assert "-storage: " in out and "unchanged" in out
    assert [call["config"] for call in app_calls(calls)] == [
        str(new.resolve()),
        str(base.resolve()),
    ]


def test_the_command_reports_a_bad_base_and_a_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = _write(tmp_path, "new.yaml", {})
    assert update_notes.main([str(new), "--base", str(tmp_path / "nope.yaml")]) == 2
    assert "is not a file (or git:REV)" in capsys.readouterr().err
    assert update_notes.main([str(new), "--base", "git:no-such-revision-xyz"]) == 2
    assert "base git:no-such-revision-xyz" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    assert update_notes.main([str(bad), "--base", str(new)]) == 2
    assert "config error" in capsys.readouterr().err


def test_a_git_base_reads_the_config_at_that_revision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A throwaway repository: the config at HEAD against an edited working copy. The test of
    the command's own synth path: no --app, so each config is synthesized by ``python app.py``
    of that repository in a subprocess (the base's with its files read from the exported
    revision)."""
    repo = tmp_path / "repo"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{PROJECT_ROOT}", str(repo)], check=True
    )
    config = repo / "config" / "examples" / "minimal.yaml"
    data = yaml.safe_load(config.read_text())
    data.setdefault("tags", {})["team"] = "ml"
    config.write_text(yaml.safe_dump(data))
    code = update_notes.main([str(config), "--base", "git:HEAD", "--json"], project_root=repo)
    out = capsys.readouterr().out
    assert code == 0
    changes = yaml.safe_load(out)  # JSON is YAML
    assert changes and {c["action"] for c in changes} == {"update"}


# -- replacements that travel through references (security review M6) ---------------------------


def test_an_unchanged_resource_that_refers_to_a_replaced_one_in_another_stack_is_replaced() -> None:
    """The consumer's text is the same; its create-only SubnetIds names an output whose value is
    the subnet that is replaced: CloudFormation replaces the file system when it re-reads it."""
    subnet = {"Type": "AWS::EC2::Subnet", "Properties": {"CidrBlock": "10.1.0.0/16"}}
    network = {
        "Resources": {"Sub": subnet},
        "Outputs": {"SubnetOut": {"Value": {"Ref": "Sub"}}},
    }
    fs = {
        "Type": FSX,
        "DeletionPolicy": "Retain",
        "Properties": {
            "StorageType": "SSD",
            "SubnetIds": [{"Fn::GetStackOutput": {"StackName": "net", "OutputName": "SubnetOut"}}],
        },
    }
    before = {"net": network, "storage": _template(Fs=fs)}
    moved = {**subnet, "Properties": {"CidrBlock": "10.2.0.0/16"}}
    after = {"net": {**network, "Resources": {"Sub": moved}}, "storage": _template(Fs=fs)}
    changes = _by_id(resource_changes(before, after))
    assert changes["Fs"].action == "replace", changes
    assert "output net.SubnetOut" in changes["Fs"].why
    assert changes["Fs"].stateful
    text = update_notes.render(
        update_notes.notes(before, after, "us-west-2"), before, after, title="t"
    )
    assert "storage: 1 replaced" in text
    assert text.endswith("Resources that hold data replaced or deleted: storage/Fs")


@pytest.fixture(scope="module")
def full(build_variant: Any) -> Any:
    return build_variant({}, base="full", nag=False)


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"network.availability_zone_id": "usw2-az1"}, id="availability_zone_id"),
        pytest.param({"network.compute_cidr": "10.3.0.0/16"}, id="compute_cidr"),
    ],
)
def test_a_new_compute_subnet_reports_the_file_system_and_the_cluster_replaced(
    build_variant: Any, full: Any, changes: dict[str, Any]
) -> None:
    """full.yaml: both change the HyperPod subnet (create-only AvailabilityZoneId/CidrBlock);
    the Lustre file system (SubnetIds) and the cluster (VpcConfig) reach it by weak cross-stack
    references (Fn::GetStackOutput) and are replaced with it, in their own stacks."""
    after = build_variant(changes, base="full", nag=False)
    changes_ = update_notes.notes(full.templates, after.templates, "us-west-2")
    replaced = {(c.stack, c.logical_id) for c in changes_ if c.action == "replace"}
    assert (full.stack_name("storage"), "FileSystem") in replaced, replaced
    assert (full.stack_name("cluster"), "HyperPodCluster") in replaced, replaced
    text = update_notes.render(changes_, full.templates, after.templates, title="t")
    lost = text.splitlines()[-1]
    assert f"{full.stack_name('storage')}/FileSystem" in lost
    assert f"{full.stack_name('cluster')}/HyperPodCluster" in lost


def test_turning_grafana_off_is_a_data_loss(build_variant: Any, full: Any) -> None:
    """Security review L9: dashboards, alerts and users made in the Grafana workspace live only
    there, so its deletion is named as data and trips --fail-on-data-loss and the deploy gate."""
    after = build_variant({"observability.grafana": False}, base="full", nag=False)
    changes_ = update_notes.notes(full.templates, after.templates, "us-west-2")
    deleted = [c for c in changes_ if c.action == "delete" and c.resource_type == GRAFANA]
    assert [c.stack for c in deleted] == [full.stack_name("metrics")], changes_
    text = update_notes.render(changes_, full.templates, after.templates, title="t")
    assert "DATA: the Grafana workspace" in text
    assert f"{full.stack_name('metrics')}/{deleted[0].logical_id}" in text.splitlines()[-1]


GRAFANA = "AWS::Grafana::Workspace"


# -- per-item ids from what the item is (security review M7) -------------------------------------

ACCESS_ENTRY = "AWS::EKS::AccessEntry"


def test_removing_the_first_principal_of_a_team_deletes_its_entry_alone(
    build_variant: Any, east: Any
) -> None:
    """eks-full's team research: ResearchScientists, then PlatformAdmin (an admin: its entry is
    the admin one); team applied: AppliedScientists. With ids by list position the applied
    entry moved to a new id, which CloudFormation creates before it deletes the old one, and
    EKS refuses a second entry for the same principal: the deploy rolled back."""
    removed = build_variant(
        {
            **US_EAST_1,
            "eks.task_governance.teams[0].principals": [
                "arn:aws:iam::111122223333:role/PlatformAdmin"
            ],
        },
        base="eks-full",
        nag=False,
    )
    changes = [c for c in _notes(east, removed) if c.resource_type == ACCESS_ENTRY]
    assert [(c.action, c.new_logical_id) for c in changes] == [("delete", None)], changes
    (gone,) = changes
    old = east.templates[gone.stack]["Resources"][gone.logical_id]["Properties"]
    assert old["PrincipalArn"] == "arn:aws:iam::111122223333:role/ResearchScientists"


def test_removing_the_first_admin_leaves_the_next_admins_entry_alone(
    build_variant: Any, east: Any
) -> None:
    """eks-full's admins: PlatformAdmin (also in team research), then CiDeploy. PlatformAdmin's
    admin entry goes and its team entry comes (in eks-addons, deployed after the eks stack has
    deleted the admin one); CiDeploy's entry keeps its id."""
    removed = build_variant(
        {**US_EAST_1, "eks.admin_principal_arns": ["arn:aws:iam::111122223333:role/CiDeploy"]},
        base="eks-full",
        nag=False,
    )
    changes = [c for c in _notes(east, removed) if c.resource_type == ACCESS_ENTRY]
    assert [(c.stack, c.action) for c in changes] == [
        (east.stack_name("eks"), "delete"),
        (east.stack_name("eks-addons"), "add"),
    ], changes
    gone, added = changes
    old = east.templates[gone.stack]["Resources"][gone.logical_id]["Properties"]
    new = removed.templates[added.stack]["Resources"][added.logical_id]["Properties"]
    assert (
        old["PrincipalArn"] == new["PrincipalArn"] == "arn:aws:iam::111122223333:role/PlatformAdmin"
    )
    assert "CiDeploy" not in gone.logical_id


def test_the_create_only_properties_the_schemas_leave_out_are_a_facts_table() -> None:
    """Issue 36: what CloudFormation replaces beyond its schemas is an AWS fact, with its source,
    in hyperpod_cdk.facts; the comparison (hyperpod_ops) reads it from there."""
    from hyperpod_cdk.facts import cloudformation
    from hyperpod_ops import template_changes

    assert template_changes.SUPPLEMENTARY_CREATE_ONLY is cloudformation.SUPPLEMENTARY_CREATE_ONLY
    assert "/properties/LustreConfiguration/EfaEnabled" in (
        template_changes.create_only_pointers("AWS::FSx::FileSystem")
    )
