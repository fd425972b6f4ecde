"""FSx data repository associations: one per entry, in a stack that nothing waits for."""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_testkit import join_parts, ref, shipped_params

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
