"""Bad input named precisely: one line per problem, the key, what is wrong and what to write.

Strict numbers, known regions, AZ IDs of the config's own region, HyperPod instance types, keys of
the other orchestrator, ARNs of another account and DRA paths inside the mount path. Each test
asserts the exact lines and what ``python -m hyperpod_cdk.config`` (``make validate``) does with
them: exit 2 with the errors (and warnings) on stderr, or exit 0 with the warnings on stderr and
the summary on stdout.
"""

from __future__ import annotations

import gzip
import json
import types
import typing
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Union

import pytest
import yaml
from config_testkit import REPO, build
from pipeline_config_testkit import project, stage_env, write_pipeline
from pydantic import BaseModel

from hyperpod_cdk import facts
from hyperpod_cdk.config import ConfigError, EnvironmentConfig, PipelineFileConfig, validate
from hyperpod_cdk.config.__main__ import main
from hyperpod_cdk.config.base import WHOLE_NUMBER
from hyperpod_cdk.config.loader import load_file
from hyperpod_cdk.config.node_setup import UsersFile

G = "cluster.instance_groups"
DRA = "storage.fsx.data_repository_associations"
BOTOCORE_DATA = Path(__import__("botocore").__file__).parent / "data"
MAP_COMMAND = (
    'aws ec2 describe-availability-zones --region {} --query "AvailabilityZones[].[ZoneName,ZoneId]"'
    " --output text"
)


def report(changes: dict[str, Any], base: str = "slurm", root: Path = REPO) -> list[str]:
    """Every line the validator prints for the changed base config: errors, then warnings."""
    try:
        _, found = validate(build(changes, base), root)
    except ConfigError as exc:
        return [str(i) for i in [*exc.issues, *exc.warnings]]
    return [str(i) for i in found]


def run_validate(
    tmp_path: Path, data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str], str]:
    """``python -m hyperpod_cdk.config FILE`` in-process: exit code, stderr lines, stdout."""
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code = main([str(path)])
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


@pytest.fixture(autouse=True)
def _in_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    # the CLI resolves cluster.lifecycle_scripts against the working directory
    monkeypatch.chdir(REPO)


# -- 1. strict numbers -------------------------------------------------------------------------


def test_a_boolean_where_a_number_is_expected_is_an_error_not_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build({"storage.fsx.storage_capacity_gib": True, f"{G}[2].count": False})
    code, lines, out = run_validate(tmp_path, data, capsys)
    assert code == 2 and out == ""
    assert lines == [
        "config error: storage.fsx.storage_capacity_gib: expected a number, got a boolean (true)",
        f"config error: {G}[2].count: expected a number, got a boolean (false)",
    ]


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        # a quoted number is text: the config says what it meant to write
        (
            "network.nat_gateways",
            "2",
            "network.nat_gateways: expected a number, got text ('2'); write 2 without quotes",
        ),
        (f"{G}[2].count", "two", f"{G}[2].count: expected a number, got text ('two')"),
        (
            f"{G}[2].ebs_volume_gb",
            500.0,
            f"{G}[2].ebs_volume_gb: expected a whole number, got 500.0; write 500",
        ),
        (f"{G}[2].min_count", 1.5, f"{G}[2].min_count: expected a whole number, got 1.5"),
        # the numbers a Literal allows are numbers too (pydantic would take true as 1)
        (
            f"{G}[2].threads_per_core",
            True,
            f"{G}[2].threads_per_core: expected a number, got a boolean (true)",
        ),
        (
            "storage.fsx.throughput_per_tib",
            "250",
            "storage.fsx.throughput_per_tib: expected a number, got text ('250'); write 250 "
            "without quotes",
        ),
        (
            "cluster.node_setup.exporters.node_port",
            True,
            "cluster.node_setup.exporters.node_port: expected a number, got a boolean (true)",
        ),
    ],
    ids=["quoted", "word", "float", "fraction", "literal-bool", "literal-quoted", "exporter-port"],
)
def test_numbers_are_yaml_numbers_only(key: str, value: Any, line: str) -> None:
    assert report({key: value}) == [f"config error: {line}"]


def test_a_boolean_or_a_number_where_a_cidr_is_expected_is_one_clean_line() -> None:
    # ipaddress takes true as the address 0.0.0.1 (with a DeprecationWarning) and 5 as 0.0.0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lines = report({"network.compute_cidr": True, "network.cidr": 5})
    assert lines == [
        "config error: network.cidr: expected an IPv4 CIDR block like 10.1.0.0/16, got a number (5)",
        "config error: network.compute_cidr: expected an IPv4 CIDR block like 10.1.0.0/16, got a "
        "boolean (true)",
    ]


def _int_fields(
    annotation: Any, metadata: list[Any], where: str, seen: set[type]
) -> Iterator[tuple[str, list[Any]]]:
    """Every int (or int Literal) inside a field's annotation, with the Annotated metadata that
    wraps it; nested models are walked too."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *meta = typing.get_args(annotation)
        yield from _int_fields(inner, [*metadata, *meta], where, seen)
    elif origin in (Union, types.UnionType, list, dict):
        for arg in typing.get_args(annotation):
            yield from _int_fields(arg, [], where, seen)
    elif origin is Literal:
        if any(type(arg) is int for arg in typing.get_args(annotation)):
            yield where, metadata
    elif annotation is int:
        yield where, metadata
    elif (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and annotation not in seen
    ):
        seen.add(annotation)
        for name, field in annotation.model_fields.items():
            yield from _int_fields(
                field.annotation, list(field.metadata), f"{annotation.__name__}.{name}", seen
            )


def test_every_number_of_every_config_model_is_strict() -> None:
    """A guard for the next field: each int carries WHOLE_NUMBER (after its limits, so the JSON
    Schema keeps minimum and maximum)."""
    seen: set[type] = set()
    found = [
        item
        for model in (EnvironmentConfig, PipelineFileConfig, UsersFile)
        for item in _int_fields(model, [], model.__name__, seen)
    ]
    assert len(found) > 20
    lax = [where for where, metadata in found if WHOLE_NUMBER not in metadata]
    assert lax == []
    schema = json.dumps([EnvironmentConfig.model_json_schema(), UsersFile.model_json_schema()])
    assert '"minimum": 1024' in schema and '"ge":' not in schema and '"le":' not in schema


# -- 2. known regions --------------------------------------------------------------------------


def test_an_unknown_region_is_one_line_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the AZ ID is right for the region meant; it is not blamed for the region's mistake
    data = build({"region": "us-east-9", "network.availability_zone_id": "use1-az4"})
    code, lines, out = run_validate(tmp_path, data, capsys)
    assert code == 2 and out == ""
    assert lines == [
        "config error: region: 'us-east-9' is not a region of the AWS commercial, GovCloud or "
        "China partitions (botocore 1.44.5, 2026-11-25); did you mean 'us-east-2'?"
    ]
    assert report({"region": "US-West-2"}) == [
        "config error: region: 'US-West-2' is not valid; use a region name like us-west-2 (did "
        "you mean 'us-west-2'?)"
    ]


def test_a_pipeline_file_names_a_known_region(tmp_path: Path) -> None:
    pipeline = write_pipeline(project(tmp_path), {"dev": stage_env()}, approval=())
    data = yaml.safe_load(pipeline.read_text())
    data["region"] = "us-wset-2"
    pipeline.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError) as caught:
        load_file(pipeline, tmp_path)
    assert [str(i) for i in caught.value.issues] == [
        "config error: region: 'us-wset-2' is not a region of the AWS commercial, GovCloud or "
        "China partitions (botocore 1.44.5, 2026-11-25); did you mean 'us-west-2'?"
    ]


def test_the_region_tables_are_the_pinned_botocores_partitions() -> None:
    """facts.REGIONS is botocore's commercial, GovCloud and China regions (a botocore bump that
    adds a region fails here: add it, and its AZ ID prefix)."""
    endpoints = json.loads((BOTOCORE_DATA / "endpoints.json").read_text())
    botocore_regions = {
        region
        for partition in endpoints["partitions"]
        if partition["partition"] in ("aws", "aws-us-gov", "aws-cn")
        for region in partition["regions"]
    }
    assert set(facts.REGIONS) == botocore_regions
    assert set(facts.AZ_ID_PREFIXES) == set(facts.REGIONS)
    assert facts.REGIONS_AS_OF.startswith(f"botocore {__import__('botocore').__version__},")


# -- 3. AZ IDs of the config's region --------------------------------------------------------------


def test_an_az_name_gets_an_az_id_of_the_configs_region_and_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build({"region": "us-east-1", "network.availability_zone_id": "us-east-1a"})
    code, lines, _ = run_validate(tmp_path, data, capsys)
    assert code == 2
    assert lines == [
        "config error: network.availability_zone_id: 'us-east-1a' is an AZ name, not an AZ ID; "
        "use an AZ ID of us-east-1 like use1-az1; to find the AZ ID of us-east-1a in your "
        f"account, run: {MAP_COMMAND.format('us-east-1')}"
    ]
    # an AZ ID of another region (a name of another region the same), by the config's region
    assert report({"region": "eu-west-1", "network.availability_zone_id": "usw2-az2"}) == [
        "config error: network.availability_zone_id: 'usw2-az2' is not an AZ ID of eu-west-1; "
        "its AZ IDs look like euw1-az1; to map AZ names to AZ IDs in your account, run: "
        f"{MAP_COMMAND.format('eu-west-1')}"
    ]
    assert report({f"{G}[2].availability_zone_id": "us-east-1b"}) == [
        f"config error: {G}[2].availability_zone_id: 'us-east-1b' is an AZ name of us-east-1, "
        "not an AZ ID; use an AZ ID of us-west-2 like usw2-az1; to map AZ names to AZ IDs in your "
        f"account, run: {MAP_COMMAND.format('us-west-2')}"
    ]


# -- 4. instance types -------------------------------------------------------------------------


def test_an_instance_type_typo_is_an_error_with_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build({f"{G}[2].instance_type": "ml.p5.48xlarg"})
    code, lines, out = run_validate(tmp_path, data, capsys)
    assert code == 2 and out == ""
    assert lines == [
        f"config error: {G}[2].instance_type: 'ml.p5.48xlarg' is not an instance type HyperPod "
        "offers; did you mean 'ml.p5.48xlarge'?"
    ]
    # every place an instance type is named
    assert report(
        {
            "cluster.instance_groups": [
                {"name": "gpu", "instance_types": ["ml.g5.8xlarge", "ml.g5.12xlarg"], "count": 1}
            ],
            "eks.chart_values.extra_instance_types.efa": ["ml.trn.32xlarge"],
        },
        base="eks",
    ) == [
        "config error: cluster.instance_groups[0].instance_types[1]: 'ml.g5.12xlarg' is not an "
        "instance type HyperPod offers; did you mean 'ml.g5.12xlarge'?",
        "config error: eks.chart_values.extra_instance_types.efa[0]: 'ml.trn.32xlarge' is not an "
        "instance type HyperPod offers; did you mean 'ml.trn1.32xlarge'?",
    ]


def test_an_unknown_instance_type_of_a_real_shape_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A type launched after the table (ml.p7.48xlarge: a real family and size) must not be
    blocked; close to a known one, the warning says which."""
    data = build(
        {f"{G}[2].instance_type": "ml.p7.48xlarge", f"{G}[1].instance_type": "ml.zz9.large"}
    )
    code, lines, out = run_validate(tmp_path, data, capsys)
    assert code == 0 and "valid: environment 'test-env'" in out
    assert lines == [
        f"config warning: {G}[1].instance_type: 'ml.zz9.large' is not an instance type HyperPod "
        "offered on 2026-11-25 (botocore 1.44.5); right if AWS has launched it since, else "
        "HyperPod refuses it at deploy time",
        f"config warning: {G}[2].instance_type: 'ml.p7.48xlarge' is not an instance type HyperPod "
        "offered on 2026-11-25 (botocore 1.44.5) (did you mean 'ml.p5.48xlarge'?); right if AWS "
        "has launched it since, else HyperPod refuses it at deploy time",
    ]


def test_the_instance_type_table_is_the_pinned_botocores_enum() -> None:
    """facts.HYPERPOD_INSTANCE_TYPES is the API's ClusterInstanceType enum of the pinned botocore
    (a botocore bump that adds types fails here: copy them in)."""
    service = BOTOCORE_DATA / "sagemaker" / "2017-07-24" / "service-2.json.gz"
    shapes = json.loads(gzip.decompress(service.read_bytes()))["shapes"]
    enum = frozenset(shapes["ClusterInstanceType"]["enum"])
    assert enum == facts.HYPERPOD_INSTANCE_TYPES
    assert all(facts.has_instance_type_shape(t) for t in facts.HYPERPOD_INSTANCE_TYPES)


def test_the_shipped_configs_name_known_instance_types_only() -> None:
    shipped = [*REPO.glob("config/*.yaml"), *REPO.glob("config/examples/**/*.yaml")]
    found = []
    for path in shipped:
        _, _, warned = load_file(path, REPO)
        found += [f"{path.name}: {w}" for w in warned if "instance type" in w.message]
    assert found == []


# -- 5. keys of the other orchestrator -----------------------------------------------------------


def test_a_section_of_the_other_orchestrator_says_both_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = run_validate(tmp_path, build({"eks": {"endpoint_access": "public"}}), capsys)
    assert code == 2
    assert lines == [
        "config error: eks: section applies only with orchestrator: eks; set orchestrator: eks to "
        "use it, or remove it"
    ]
    assert report({"cluster.slurm": {}, f"{G}[0].node_type": "Compute"}, base="eks") == [
        "config error: cluster.slurm: section applies only with orchestrator: slurm; set "
        "orchestrator: slurm to use it, or remove it",
        f"config error: {G}[0].node_type: applies only with orchestrator: slurm; set orchestrator: "
        "slurm to use it, or remove it",
    ]


# -- 6. ARNs of another account ----------------------------------------------------------------

EKS_ADOPTED = {
    "account": "444455556666",
    "eks.cluster_arn": "arn:aws:eks:us-west-2:111122223333:cluster/shared",
    "eks.kubernetes_version": "1.33",
    "eks.dependencies": dict.fromkeys(
        (
            "health_monitoring_agent",
            "deep_health_check",
            "job_auto_restart",
            "patching",
            "training_operator",
            "mpi_operator",
            "nvidia_device_plugin",
            "neuron_device_plugin",
            "efa_device_plugin",
            "scientist_rbac",
        ),
        True,
    ),
    "eks.addons.fsx_csi_driver": True,
}


def test_an_adopted_arn_of_another_account_names_both_keys_and_accounts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build(
        {**EKS_ADOPTED, "eks.kubectl_role_arn": "arn:aws:iam::444455556666:role/kubectl"}, "eks"
    )
    code, lines, _ = run_validate(tmp_path, data, capsys)
    assert code == 2
    assert lines == [
        "config error: eks.cluster_arn: belongs to account 111122223333 but the key account says "
        "444455556666; HyperPod is orchestrated by an EKS cluster of its own account: fix one of "
        "the two"
    ]
    assert report(
        {
            "account": "444455556666",
            f"{G}[2].training_plan_arn": "arn:aws:sagemaker:us-west-2:111122223333:training-plan/p5",
        }
    ) == [
        f"config error: {G}[2].training_plan_arn: belongs to account 111122223333 but the key "
        "account says 444455556666; a training plan reserves capacity for its own account: fix "
        "one of the two"
    ]


def test_arns_aws_allows_in_another_account_are_accepted() -> None:
    """Admin principals (STANDARD access entries) and KMS keys (key policies) may be another
    account's; without ``account`` nothing is compared."""
    other = "777788889999"
    key = f"arn:aws:kms:us-west-2:{other}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert (
        report(
            {
                "account": "444455556666",
                "eks.admin_principal_arns": [f"arn:aws:iam::{other}:role/a"],
            },
            "eks",
        )
        == []
    )
    assert (
        report(
            {
                "account": "444455556666",
                "storage.fsx.kms_key_arn": key,
                f"{G}[2].ebs_kms_key_arn": key,
            }
        )
        == []
    )
    without_account = {k: v for k, v in EKS_ADOPTED.items() if k != "account"}
    assert report(without_account, "eks") == []


# -- 7. DRA paths inside the mount path --------------------------------------------------------------


def test_a_dra_path_that_repeats_the_mount_path_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = build({f"{DRA}[0].file_system_path": "/fsx/datasets"})
    code, lines, out = run_validate(tmp_path, data, capsys)
    assert code == 0 and "valid: environment 'test-env'" in out
    assert lines == [
        f"config warning: {DRA}[0].file_system_path: '/fsx/datasets' is a path inside the file "
        "system, which the nodes mount at /fsx, so the data appears at /fsx/fsx/datasets; write "
        "/datasets to see it at /fsx/datasets"
    ]
    assert report(
        {"storage.fsx.mount_path": "/lustre", f"{DRA}[0].file_system_path": "/lustre"}
    ) == [
        f"config warning: {DRA}[0].file_system_path: '/lustre' is a path inside the file system, "
        "which the nodes mount at /lustre, so the data appears at /lustre/lustre; write / to see "
        "it at /lustre"
    ]
    assert report({f"{DRA}[0].file_system_path": "/fsxdata"}) == []
