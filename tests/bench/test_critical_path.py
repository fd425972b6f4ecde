"""The first-deploy estimator (scripts/critical_path.py) on small hand-made assemblies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_testkit import cp, res, template

DRA = cp.DRA_TYPE
FSX = "AWS::FSx::FileSystem"
HYPERPOD = cp.HYPERPOD_TYPE


def ref(logical_id: str) -> dict[str, str]:
    return {"Ref": logical_id}


def stack_output(stack: str, output: str) -> dict[str, dict[str, str]]:
    return {"Fn::GetStackOutput": {"StackName": stack, "OutputName": output, "Region": "us-west-2"}}


def labels(steps: list[cp.Step]) -> list[str]:
    return [f"{s.stack}/{s.logical_id}" if s.logical_id else f"{s.stack} starts" for s in steps]


# -- dependencies read from the templates ------------------------------------------------------


def test_depends_on_ref_getatt_and_sub_are_edges() -> None:
    assembly = cp.from_templates(
        {
            "s": template(
                {
                    "A": res(),
                    "B": res(),
                    "C": res(),
                    "D": res(),
                    "E": res(),
                    "Single": res(depends_on="A"),
                    "Many": res(depends_on=["A", "B"]),
                    "Refs": res(Bucket=ref("A"), Region=ref("AWS::Region"), Param=ref("Input")),
                    "Atts": res(Arn={"Fn::GetAtt": ["B", "Arn"]}, Name={"Fn::GetAtt": "C.Name"}),
                    "Subs": res(
                        Text={"Fn::Sub": "${A}-${B.Arn}-${AWS::AccountId}-${!E}"},
                        Listed={"Fn::Sub": ["${C}-${D}", {"D": ref("E")}]},
                    ),
                }
            )
        }
    )
    depends = {r.logical_id: {d[1] for d in r.depends_on} for r in assembly.resources()}
    assert depends["Single"] == {"A"}
    assert depends["Many"] == {"A", "B"}
    assert depends["Refs"] == {"A"}  # pseudo parameters and template parameters are no resources
    assert depends["Atts"] == {"B", "C"}
    # ${!E} is a literal; D is the Sub's own variable, bound to Ref E
    assert depends["Subs"] == {"A", "B", "C", "E"}


def test_import_value_follows_the_export_to_the_producing_resource() -> None:
    producer = template(
        {"Vpc": res("AWS::EC2::VPC"), "Key": res("AWS::KMS::Key")},
        outputs={
            "VpcOut": {"Value": ref("Vpc"), "Export": {"Name": "prod:vpc"}},
            "KeyOut": {
                "Value": {"Fn::GetAtt": ["Key", "Arn"]},
                "Export": {"Name": {"Fn::Sub": "${AWS::StackName}-key"}},
            },
            "Joined": {
                "Value": {"Fn::Join": ["", [ref("Vpc"), ref("Key")]]},
                "Export": {"Name": {"Fn::Join": [":", [ref("AWS::StackName"), "both"]]}},
            },
        },
    )
    consumer = template(
        {
            "UsesVpc": res(VpcId={"Fn::ImportValue": "prod:vpc"}),
            "UsesKey": res(KeyArn={"Fn::ImportValue": {"Fn::Sub": "producer-key"}}),
            "UsesBoth": res(Text={"Fn::ImportValue": "producer:both"}),
            "Unknown": res(VpcId={"Fn::ImportValue": "nobody:exports-this"}),
        }
    )
    assembly = cp.from_templates(
        {"producer": producer, "consumer": consumer}, {"consumer": ["producer"]}
    )
    depends = {r.logical_id: r.depends_on for r in assembly.resources()}
    assert depends["UsesVpc"] == {("producer", "Vpc")}
    assert depends["UsesKey"] == {("producer", "Key")}
    assert depends["UsesBoth"] == {("producer", "Vpc"), ("producer", "Key")}
    assert depends["Unknown"] == set()
    assert assembly.unresolved == ['consumer: Fn::ImportValue "nobody:exports-this"']


def test_get_stack_output_follows_the_output_to_the_producing_resource() -> None:
    assembly = cp.from_templates(
        {
            "storage": template(
                {"FileSystem": res(FSX)},
                outputs={"Dns": {"Value": {"Fn::GetAtt": ["FileSystem", "DNSName"]}}},
            ),
            "cluster": template({"Cluster": res(HYPERPOD, DnsName=stack_output("storage", "Dns"))}),
        },
        {"cluster": ["storage"]},
    )
    (cluster,) = assembly.stacks["cluster"].resources
    assert cluster.depends_on == {("storage", "FileSystem")}
    assert assembly.unresolved == []


def test_a_reference_to_a_missing_output_is_reported() -> None:
    assembly = cp.from_templates(
        {"a": template({"X": res()}), "b": template({"Y": res(V=stack_output("a", "Nope"))})},
        {"b": ["a"]},
    )
    assert assembly.unresolved == ["output a/Nope not found"]


def test_creation_minutes_by_type_and_properties() -> None:
    assert cp.creation_minutes(FSX) == 15
    assert cp.creation_minutes("AWS::EKS::Cluster") == 10
    assert cp.creation_minutes(HYPERPOD) == 20
    assert cp.creation_minutes("AWS::EC2::NatGateway") == 2
    assert cp.creation_minutes("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Interface"}) == 2
    assert cp.creation_minutes("AWS::EC2::VPCEndpoint", {}) < 1  # a gateway endpoint
    assert cp.creation_minutes("AWS::Lambda::Function", {"VpcConfig": {"SubnetIds": []}}) == 2
    assert cp.creation_minutes("AWS::Lambda::Function", {}) < 1
    assert cp.creation_minutes("Custom::AWSCDK-EKS-KubernetesResource") == 1
    assert cp.creation_minutes("AWS::RDS::DBInstance", {"MultiAZ": True}) > cp.creation_minutes(
        "AWS::RDS::DBInstance"
    )
    assert cp.creation_minutes("AWS::EC2::Subnet") == cp.DEFAULT_MINUTES
    assert cp.creation_minutes("AWS::CDK::Metadata") == 0


# -- the schedules ---------------------------------------------------------------------------


def barrier_assembly() -> cp.Assembly:
    """network: a fast subnet and a slow NAT; storage needs only the subnet."""
    return cp.from_templates(
        {
            "network": template(
                {"Subnet": res(minutes=1), "Nat": res(minutes=3, depends_on="Subnet")},
                outputs={"SubnetId": {"Value": ref("Subnet")}},
            ),
            "storage": template(
                {"Fs": res(FSX, minutes=10, SubnetIds=[stack_output("network", "SubnetId")])}
            ),
        },
        {"storage": ["network"]},
    )


def test_a_stack_waits_for_every_resource_of_the_stacks_it_depends_on() -> None:
    estimate = cp.schedule(barrier_assembly())
    assert estimate.start[("storage", "Fs")] == 4  # the NAT, not only the subnet
    assert estimate.minutes == 14
    assert estimate.stack_end == {"network": 4, "storage": 14}
    assert labels(estimate.path) == [
        "network starts",
        "network/Subnet",
        "network/Nat",
        "storage starts",
        "storage/Fs",
    ]
    assert estimate.path[3].waited_for == "stack network to complete"


def test_the_path_on_one_line_names_each_stack_and_what_it_waited_on() -> None:
    estimate = cp.schedule(barrier_assembly())
    assert cp.summarize_path(estimate.path) == (
        "network: S3::Bucket 1, S3::Bucket 3 > storage: FSx::FileSystem 10"
    )


def test_the_ideal_keeps_resource_edges_and_drops_the_barriers() -> None:
    ideal = cp.schedule(barrier_assembly(), barriers=False)
    assert ideal.start[("storage", "Fs")] == 1
    assert ideal.minutes == 11
    assert labels(ideal.path) == ["network/Subnet", "storage/Fs"]
    assert ideal.path[1].waited_for == "dependency network/Subnet"


def test_analyse_compares_estimate_and_ideal() -> None:
    report = cp.analyse(barrier_assembly())
    assert (report.estimate.minutes, report.ideal.minutes) == (14, 11)
    assert report.over_ideal == pytest.approx(14 / 11 - 1)


def contained_assembly(*, contained: bool) -> cp.Assembly:
    """cluster: the HyperPod cluster; metrics: a workspace that reads nothing of the cluster,
    in a stack that depends on the cluster stack (marked contained, or not)."""
    metrics = template({"Workspace": res("AWS::APS::Workspace", minutes=1)})
    if contained:
        metrics["Metadata"] = {cp.CONTAINED_METADATA: "after the cluster on purpose"}
    return cp.from_templates(
        {"cluster": template({"Cluster": res(HYPERPOD, minutes=20)}), "metrics": metrics},
        {"metrics": ["cluster"]},
    )


def test_the_ideal_keeps_the_barrier_of_a_contained_stack() -> None:
    """Containment (SPEC section 5) is a wait chosen on purpose: a stack that says so in its
    template's Metadata starts after the stacks it depends on in the ideal too."""
    plain = cp.analyse(contained_assembly(contained=False))
    assert (plain.estimate.minutes, plain.ideal.minutes) == (21, 20)
    assert plain.ideal.start[("metrics", "Workspace")] == 0
    report = cp.analyse(contained_assembly(contained=True))
    assert report.ideal.start[("metrics", "Workspace")] == 20
    assert (report.estimate.minutes, report.ideal.minutes) == (21, 21)
    assert labels(report.ideal.path) == ["cluster/Cluster", "metrics starts", "metrics/Workspace"]
    assert report.ideal.path[1].waited_for == "stack cluster to complete"


def test_inside_a_stack_a_resource_starts_when_its_dependencies_are_done() -> None:
    assembly = cp.from_templates(
        {
            "s": template(
                {
                    "A": res(minutes=2),
                    "B": res(minutes=5),
                    "C": res(minutes=1, X=ref("A")),
                    "D": res(minutes=1, depends_on=["B", "C"]),
                }
            )
        }
    )
    estimate = cp.schedule(assembly)
    assert estimate.start == {("s", "A"): 0, ("s", "B"): 0, ("s", "C"): 2, ("s", "D"): 5}
    assert estimate.minutes == 6
    assert labels(estimate.path) == ["s starts", "s/B", "s/D"]


def dra_assembly(*, chained: bool = False, second_file_system: bool = False) -> cp.Assembly:
    resources = {"Fs": res(FSX, minutes=10), "Other": res(FSX, minutes=10)}
    for index in range(3):
        target = "Other" if second_file_system and index == 2 else "Fs"
        depends = f"Dra{index - 1}" if chained and index else None
        resources[f"Dra{index}"] = res(DRA, minutes=5, depends_on=depends, FileSystemId=ref(target))
    return cp.from_templates({"s": template(resources)})


@pytest.mark.parametrize("barriers", [True, False], ids=["estimate", "ideal"])
def test_dras_of_one_file_system_are_created_one_at_a_time(barriers: bool) -> None:
    result = cp.schedule(dra_assembly(), barriers=barriers)
    assert sorted(result.start[("s", f"Dra{i}")] for i in range(3)) == [10, 15, 20]
    assert result.minutes == 25
    assert labels(result.path)[-3:] == ["s/Dra0", "s/Dra1", "s/Dra2"]
    assert result.path[-1].waited_for == "the previous DRA of the file system s/Dra1"


def test_dras_of_different_file_systems_overlap() -> None:
    result = cp.schedule(dra_assembly(second_file_system=True))
    assert result.start[("s", "Dra2")] == 10
    assert result.minutes == 20


def test_dras_chained_by_depends_on_take_as_long() -> None:
    assert cp.schedule(dra_assembly(chained=True)).minutes == 25


def test_a_dra_given_a_literal_file_system_id_is_serialized_with_the_same_id() -> None:
    resources = {f"Dra{i}": res(DRA, minutes=5, FileSystemId="fs-0123") for i in range(2)}
    resources["Elsewhere"] = res(DRA, minutes=5, FileSystemId="fs-4567")
    result = cp.schedule(cp.from_templates({"s": template(resources)}))
    assert result.minutes == 10


def independent_stacks(count: int) -> cp.Assembly:
    return cp.from_templates({f"s{i}": template({"R": res(minutes=10)}) for i in range(count)})


@pytest.mark.parametrize(
    ("concurrency", "minutes"), [(1, 30), (2, 20), (3, 10), (4, 10), (None, 10)]
)
def test_concurrency_limits_the_stacks_deploying_at_once(
    concurrency: int | None, minutes: float
) -> None:
    assert cp.schedule(independent_stacks(3), concurrency=concurrency).minutes == minutes


def test_a_stack_waiting_for_a_free_slot_says_so() -> None:
    result = cp.schedule(independent_stacks(2), concurrency=1)
    assert labels(result.path) == ["s0 starts", "s0/R", "s1 starts", "s1/R"]
    assert result.path[2].waited_for == "stack s0 to complete"


def test_the_ideal_ignores_concurrency() -> None:
    assert cp.schedule(independent_stacks(3), barriers=False, concurrency=1).minutes == 10


def test_stack_overhead_is_paid_per_stack_on_the_path() -> None:
    assembly = barrier_assembly()
    assert cp.schedule(assembly, stack_overhead=0.5).minutes == 15
    assert cp.schedule(assembly, barriers=False, stack_overhead=0.5).minutes == 11


def test_empty_stacks_and_zero_minute_resources_complete() -> None:
    assembly = cp.from_templates(
        {"empty": template({}), "meta": template({"M": res("AWS::CDK::Metadata")})},
        {"meta": ["empty"]},
    )
    assert cp.schedule(assembly).minutes == 0


def test_a_cycle_across_stack_barriers_is_an_error() -> None:
    assembly = cp.from_templates(
        {
            "a": template({"A": res()}, outputs={"Out": {"Value": ref("A")}}),
            "b": template({"B": res(V=stack_output("a", "Out"))}),
        },
        {"a": ["b"]},  # a waits for b, but b's resource needs a's
    )
    with pytest.raises(ValueError, match="cannot finish"):
        cp.schedule(assembly)


# -- what the HyperPod cluster waits for -----------------------------------------------------


def cluster_assembly(*, dras_in_storage: bool) -> cp.Assembly:
    storage = {"Fs": res(FSX, minutes=15)}
    dras = {"Dra": res(DRA, minutes=5, FileSystemId=ref("Fs"))}
    templates = {
        "storage": template(
            {**storage, **(dras if dras_in_storage else {})},
            outputs={
                "FsId": {"Value": ref("Fs")},
                "Dns": {"Value": {"Fn::GetAtt": ["Fs", "DNSName"]}},
            },
        ),
        "cluster": template(
            {"HyperPod": res(HYPERPOD, minutes=20, DnsName=stack_output("storage", "Dns"))}
        ),
    }
    dependencies = {"cluster": ["storage"]}
    if not dras_in_storage:
        templates["dras"] = template(
            {"Dra": res(DRA, minutes=5, FileSystemId=stack_output("storage", "FsId"))}
        )
        dependencies["dras"] = ["storage"]
    return cp.from_templates(templates, dependencies)


def test_a_dra_in_the_stack_the_cluster_references_is_on_its_path() -> None:
    report = cp.analyse(cluster_assembly(dras_in_storage=True))
    assert report.dras_before_cluster == (("storage", "Dra"),)
    assert report.estimate.minutes == 40  # the cluster waits for the DRA through the barrier
    assert report.ideal.minutes == 35


def test_dras_in_a_stack_nothing_waits_for_are_off_the_path() -> None:
    report = cp.analyse(cluster_assembly(dras_in_storage=False))
    assert report.dras_before_cluster == ()
    assert report.estimate.minutes == report.ideal.minutes == 35
    assert labels(report.estimate.path)[-1] == "cluster/HyperPod"


def test_waits_for_with_and_without_barriers() -> None:
    assembly = barrier_assembly()
    fs = ("storage", "Fs")
    assert cp.waits_for(assembly, fs) == {("network", "Subnet"), ("network", "Nat")}
    assert cp.waits_for(assembly, fs, barriers=False) == {("network", "Subnet")}


# -- reading an assembly directory -------------------------------------------------------------


def test_load_assembly_reads_the_manifest_and_templates(tmp_path: Path) -> None:
    network = template({"Subnet": res(minutes=1)}, outputs={"Id": {"Value": ref("Subnet")}})
    storage = template({"Fs": res(FSX, minutes=10, S=stack_output("env-network", "Id"))})
    (tmp_path / "net.template.json").write_text(json.dumps(network))
    (tmp_path / "sto.template.json").write_text(json.dumps(storage))
    manifest = {
        "artifacts": {
            "net.assets": {"type": "cdk:asset-manifest"},
            "net": {
                "type": "aws:cloudformation:stack",
                "properties": {"templateFile": "net.template.json", "stackName": "env-network"},
                "dependencies": ["net.assets"],
            },
            "sto": {
                "type": "aws:cloudformation:stack",
                "properties": {"templateFile": "sto.template.json", "stackName": "env-storage"},
                "dependencies": ["net", "sto.assets"],
            },
            "Tree": {"type": "cdk:tree"},
        }
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assembly = cp.load_assembly(tmp_path)
    assert list(assembly.stacks) == ["env-network", "env-storage"]
    assert assembly.stacks["env-storage"].dependencies == ("env-network",)
    assert assembly.stacks["env-network"].dependencies == ()
    assert cp.schedule(assembly).minutes == 11
