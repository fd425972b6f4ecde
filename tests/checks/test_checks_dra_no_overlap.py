"""HyperPod-DraNoOverlap: the data repository associations of one file system have distinct,
non-nested FileSystemPaths and S3 DataRepositoryPaths."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from checks_testkit import (
    COMPLIANT,
    NON_COMPLIANT,
    NOT_APPLICABLE,
    check,
    new_app,
    resource,
    retain,
    stack,
)

from hyperpod_cdk.compliance.rules import DRA_NO_OVERLAP
from hyperpod_cdk.compliance.rules.dra_no_overlap import overlap, segments

ASSOCIATION = "AWS::FSx::DataRepositoryAssociation"


def environment(*pairs: tuple[str, Any]) -> tuple[cdk.App, list[cdk.CfnResource]]:
    """A storage stack (bucket, file system) and a stack of associations ``(path, S3 URI)``;
    ``{bucket}`` in a URI is the data bucket's name (a cross-stack reference)."""
    app = new_app()
    storage = stack(app, "storage")
    bucket = resource(storage, "Data", "AWS::S3::Bucket")
    fs = resource(storage, "FileSystem", "AWS::FSx::FileSystem")
    retain(bucket, fs)
    associations = stack(app, "data-repositories")
    created = []
    for index, (path, uri) in enumerate(pairs):
        if isinstance(uri, str) and uri.startswith("s3://{bucket}/"):
            uri = cdk.Fn.join("", ["s3://", bucket.ref, uri.removeprefix("s3://{bucket}")])
        created.append(
            resource(
                associations,
                f"Association{index}",
                ASSOCIATION,
                {"FileSystemId": fs.ref, "FileSystemPath": path, "DataRepositoryPath": uri},
            )
        )
    return app, created


def test_distinct_paths_and_prefixes_comply() -> None:
    app, associations = environment(
        ("/datasets", "s3://{bucket}/datasets/"),
        ("/data", "s3://{bucket}/data/"),  # /data and /datasets do not nest
        ("/reference", "s3://example-reference-data/genomes/"),
    )
    checked = check(app)
    assert [checked.verdict(DRA_NO_OVERLAP, a) for a in associations] == [COMPLIANT] * 3
    assert not checked.failed


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(
            ("/data", "s3://{bucket}/data/"), ("/data/raw", "s3://{bucket}/raw/"), id="nested-path"
        ),
        pytest.param(
            ("/", "s3://{bucket}/all/"), ("/data", "s3://{bucket}/data/"), id="root-and-another"
        ),
        pytest.param(
            ("/a", "s3://{bucket}/shared/"), ("/b", "s3://{bucket}/shared/"), id="same-prefix"
        ),
        pytest.param(("/a", "s3://{bucket}/x/"), ("/b", "s3://{bucket}/x/y/"), id="nested-prefix"),
        pytest.param(
            ("/a", "s3://other-bucket/"), ("/b", "s3://other-bucket/x/"), id="whole-bucket"
        ),
    ],
)
def test_overlapping_associations_are_both_findings(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    app, associations = environment(first, second)
    checked = check(app)
    for association in associations:
        assert checked.verdict(DRA_NO_OVERLAP, association) == NON_COMPLIANT
        assert checked.found(DRA_NO_OVERLAP, association)


def test_associations_of_different_file_systems_do_not_conflict() -> None:
    app = new_app()
    storage = stack(app, "storage")
    created = []
    for index in range(2):
        fs = resource(storage, f"FileSystem{index}", "AWS::FSx::FileSystem")
        retain(fs)
        created.append(
            resource(
                storage,
                f"Association{index}",
                ASSOCIATION,
                {
                    "FileSystemId": fs.ref,
                    "FileSystemPath": "/data",
                    "DataRepositoryPath": "s3://b/data/",
                },
            )
        )
    checked = check(app)
    assert [checked.verdict(DRA_NO_OVERLAP, a) for a in created] == [COMPLIANT, COMPLIANT]


def test_a_file_system_from_a_parameter_is_not_applicable() -> None:
    app = new_app()
    storage = stack(app, "storage")
    file_system_id = cdk.CfnParameter(storage, "FileSystemId")
    association = resource(
        storage,
        "Association",
        ASSOCIATION,
        {
            "FileSystemId": file_system_id.value_as_string,
            "FileSystemPath": "/data",
            "DataRepositoryPath": "s3://b/",
        },
    )
    assert check(app).verdict(DRA_NO_OVERLAP, association) == NOT_APPLICABLE


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("/data", "/data/", True),
        ("/data", "/datasets", False),
        ("/", "/x", True),
        ("/a/b", "/a/c", False),
    ],
)
def test_overlap_is_at_directory_boundaries(a: str, b: str, expected: bool) -> None:
    assert overlap(segments(a, scheme="/"), segments(b, scheme="/")) is expected
