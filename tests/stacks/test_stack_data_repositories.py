"""FSx data repository associations: one per entry, in a stack that nothing waits for."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from stack_testkit import join_parts, joined_text, ref, shipped_params

DRA = "AWS::FSx::DataRepositoryAssociation"
WITH_DRAS = shipped_params(
    lambda c: c.storage.fsx.enabled and bool(c.storage.fsx.data_repository_associations)
)


def associations(synth) -> dict[str, dict]:
    """The associations by file system path."""
    found = {}
    for kind in synth.templates:
        for resource in synth.templates[kind]["Resources"].values():
            if resource["Type"] == DRA:
                found[resource["Properties"]["FileSystemPath"]] = resource["Properties"]
    return found


@pytest.mark.parametrize("path", WITH_DRAS)
def test_one_association_per_configured_entry(path: Path, synthesized) -> None:
    synth = synthesized(path)
    configured = [d.file_system_path for d in synth.config.storage.fsx.data_repository_associations]
    assert sorted(associations(synth)) == sorted(configured)
    assert len(synth.resources("data-repositories", DRA)) == len(configured)


@pytest.mark.parametrize("path", WITH_DRAS)
def test_associations_live_only_in_the_data_repositories_stack(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for kind in ("network", "storage", "nodes", "cluster"):
        assert synth.resources(kind, DRA) == {}, kind


@pytest.mark.parametrize("path", WITH_DRAS)
def test_repository_path_is_the_data_bucket_prefix_or_the_given_uri(
    path: Path, synthesized
) -> None:
    synth = synthesized(path)
    found = associations(synth)
    for dra in synth.config.storage.fsx.data_repository_associations:
        actual = synth.resolve(found[dra.file_system_path]["DataRepositoryPath"])
        if dra.s3_uri is not None:
            assert actual == dra.s3_uri
        else:
            assert join_parts(actual) == ["s3://", ref("DataBucket"), f"/{dra.s3_prefix}"]


@pytest.mark.parametrize("path", WITH_DRAS)
def test_auto_import_and_export_events_come_from_the_config(path: Path, synthesized) -> None:
    synth = synthesized(path)
    found = associations(synth)
    for dra in synth.config.storage.fsx.data_repository_associations:
        s3 = found[dra.file_system_path].get("S3", {})
        assert s3.get("AutoImportPolicy", {}).get("Events", []) == list(dra.auto_import), (
            dra.file_system_path
        )
        assert s3.get("AutoExportPolicy", {}).get("Events", []) == list(dra.auto_export), (
            dra.file_system_path
        )


@pytest.mark.parametrize("path", WITH_DRAS)
def test_metadata_import_on_create_comes_from_the_config(path: Path, synthesized) -> None:
    synth = synthesized(path)
    found = associations(synth)
    for dra in synth.config.storage.fsx.data_repository_associations:
        assert (
            found[dra.file_system_path]["BatchImportMetaDataOnCreate"]
            is dra.import_metadata_on_create
        )


@pytest.mark.parametrize("path", WITH_DRAS)
def test_associations_link_the_environments_file_system(path: Path, synthesized) -> None:
    synth = synthesized(path)
    fsx = synth.config.storage.fsx
    expected = fsx.file_system_id if fsx.file_system_id else ref("FileSystem")
    for fs_path, props in associations(synth).items():
        assert synth.resolve(props["FileSystemId"]) == expected, fs_path


@pytest.mark.parametrize("path", WITH_DRAS)
def test_cluster_does_not_wait_for_the_associations(path: Path, synthesized) -> None:
    synth = synthesized(path)
    assert "data-repositories" not in synth.dependencies("cluster")
    waiting = [
        k
        for k in ("network", "storage", "nodes", "cluster")
        if "data-repositories" in synth.dependencies(k)
    ]
    assert waiting == []


@pytest.mark.parametrize(
    "path", shipped_params(lambda c: c.storage.fsx.file_system_id is None and c.storage.fsx.enabled)
)
def test_associations_wait_for_the_file_system_stack(path: Path, synthesized) -> None:
    synth = synthesized(path)
    if synth.has("data-repositories"):
        assert "storage" in synth.dependencies("data-repositories")


@pytest.mark.parametrize(
    "path", shipped_params(lambda c: not c.storage.fsx.data_repository_associations)
)
def test_no_data_repositories_stack_without_associations(path: Path, synthesized) -> None:
    assert not synthesized(path).has("data-repositories")


# -- the data key and the FSx service-linked role (issue 15) ----------------------------------

KEY_POLICY = "Custom::FsxDataKeyPolicy"
WITH_PREFIX_DRAS = shipped_params(
    lambda c: (
        c.storage.fsx.enabled
        and any(d.s3_prefix is not None for d in c.storage.fsx.data_repository_associations)
    )
)


def key_policy_resource(synth) -> dict:
    (resource,) = synth.resources("data-repositories", KEY_POLICY).values()
    return resource


@pytest.mark.parametrize("path", WITH_PREFIX_DRAS)
def test_data_key_policy_names_the_file_systems_fsx_role(path: Path, synthesized) -> None:
    """The FSx guide's statement: the file system's own S3 service-linked role as principal."""
    synth = synthesized(path)
    props = key_policy_resource(synth)["Properties"]
    statement = json.loads(joined_text(synth.resolve(props["Statement"])))
    principal = statement["Principal"]["AWS"]
    assert principal.startswith("arn:aws:iam::")
    assert principal.endswith(
        ":role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
        "AWSServiceRoleForFSxS3Access_${FileSystem}"
    )
    assert statement["Sid"] == "FsxDataRepositoryThroughS3"
    assert sorted(statement["Action"]) == [
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:Encrypt",
        "kms:GenerateDataKey*",
        "kms:ReEncrypt*",
    ]
    conditions = statement["Condition"]["StringEquals"]
    assert conditions["kms:ViaService"] == f"s3.{synth.config.region}.amazonaws.com"
    assert synth.resolve(props["KeyArn"]) == {"Fn::GetAtt": ["DataKey5F086070", "Arn"]}


@pytest.mark.parametrize("path", WITH_PREFIX_DRAS)
def test_data_key_policy_waits_for_every_association(path: Path, synthesized) -> None:
    """FSx creates the role with the first association; KMS refuses an unknown principal."""
    synth = synthesized(path)
    depends = set(key_policy_resource(synth).get("DependsOn", []))
    assert set(synth.resources("data-repositories", DRA)) <= depends


@pytest.mark.parametrize("path", WITH_PREFIX_DRAS)
def test_data_key_policy_is_rewritten_with_the_keys_own_policy(path: Path, synthesized) -> None:
    """A deploy that rewrites the key's policy changes the data-repositories template too."""
    synth = synthesized(path)
    key = synth.resources("storage")["DataKey5F086070"]["Properties"]["KeyPolicy"]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    assert key_policy_resource(synth)["Properties"]["KeyPolicyDigest"] == digest
    # and the key's own policy no longer grants FSx through the account root
    sids = [s.get("Sid") for s in key["Statement"]]
    assert "FsxDataRepositoryThroughS3" not in sids


@pytest.mark.parametrize("path", WITH_PREFIX_DRAS)
def test_key_policy_handler_may_touch_only_the_data_key(path: Path, synthesized) -> None:
    synth = synthesized(path)
    actions = {}
    for resource in synth.resources("data-repositories", "AWS::IAM::ManagedPolicy").values():
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            for action in (
                [statement["Action"]]
                if isinstance(statement["Action"], str)
                else statement["Action"]
            ):
                actions.setdefault(action, []).append(synth.resolve(statement["Resource"]))
    assert actions["kms:PutKeyPolicy"] == [{"Fn::GetAtt": ["DataKey5F086070", "Arn"]}]
    assert actions["kms:GetKeyPolicy"] == [{"Fn::GetAtt": ["DataKey5F086070", "Arn"]}]


def test_no_key_policy_without_a_prefix_of_the_data_bucket(build_variant) -> None:
    synth = build_variant(
        {
            "storage.fsx.data_repository_associations": [
                {"file_system_path": "/ext", "s3_uri": "s3://existing-bucket/ext/"}
            ]
        },
        base="full",
    )
    assert synth.resources("data-repositories", KEY_POLICY) == {}
