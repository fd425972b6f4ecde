"""An instance type's facts: the gates table's row, else EC2 DescribeInstanceTypes once per type
and run (botocore Stubber: a second call for a type would find no queued answer and fail)."""

from __future__ import annotations

from typing import Any

import pytest
from ec2_answers import G6E_48XLARGE, M5_2XLARGE, card, described, unknown
from ops_testkit import StubbedAws, environment

from hyperpod_ops.verify import gates, instance_types
from hyperpod_ops.verify.model import VerifyRun

G6E = "ml.g6e.48xlarge"


def make_run(aws: StubbedAws) -> VerifyRun:
    return VerifyRun(config=environment("default"), clients=aws)


def test_a_table_type_makes_no_ec2_call(aws: StubbedAws) -> None:
    found = instance_types.lookup(make_run(aws), "ml.p5.48xlarge")
    assert found.facts == gates.INSTANCE_FACTS["ml.p5.48xlarge"]
    assert found.facts.source == gates.FROM_TABLE == "the gates table"
    assert aws.called == set() and "ec2" not in aws.clients


def test_a_type_without_a_row_is_read_from_describe_instance_types(aws: StubbedAws) -> None:
    described(aws, G6E, G6E_48XLARGE)
    found = instance_types.lookup(make_run(aws), G6E)
    assert found.facts == gates.InstanceFacts(G6E, "nvidia", 8, 4, 400, "DescribeInstanceTypes")
    assert found.reason == ""
    assert aws.called == {"ec2:DescribeInstanceTypes"}
    assert instance_types.source_note(found.facts) == "EFA interfaces from DescribeInstanceTypes"


def test_a_type_without_gpus_or_efa_has_facts_saying_so(aws: StubbedAws) -> None:
    described(aws, "ml.m5.2xlarge", M5_2XLARGE)
    facts = instance_types.lookup(make_run(aws), "ml.m5.2xlarge").facts
    assert facts == gates.InstanceFacts("ml.m5.2xlarge", "none", 0, 0, 0, "DescribeInstanceTypes")


def test_the_run_asks_once_per_type_whatever_ec2_answered(aws: StubbedAws) -> None:
    described(aws, G6E, G6E_48XLARGE)
    unknown(aws, "ml.p6e-gb200.36xlarge")
    run = make_run(aws)
    for _ in range(3):
        assert instance_types.lookup(run, G6E).facts is not None
        assert instance_types.lookup(run, "ml.p6e-gb200.36xlarge").facts is None
    # a new run asks again
    described(aws, G6E, G6E_48XLARGE)
    assert instance_types.lookup(make_run(aws), G6E).facts is not None


def test_a_type_ec2_does_not_know_skips_with_the_reason(aws: StubbedAws) -> None:
    unknown(aws, "ml.p6e-gb200.36xlarge")
    found = instance_types.lookup(make_run(aws), "ml.p6e-gb200.36xlarge")
    assert found.facts is None
    assert found.reason == (
        "ml.p6e-gb200.36xlarge is not in the gates table and EC2 does not know "
        "p6e-gb200.36xlarge (DescribeInstanceTypes: InvalidInstanceType: The following supplied "
        "instance types do not exist: [p6e-gb200.36xlarge])"
    )


def test_a_refused_call_skips_naming_the_permission(aws: StubbedAws) -> None:
    aws.error(
        "ec2",
        "describe_instance_types",
        "UnauthorizedOperation",
        {"InstanceTypes": ["g6e.48xlarge"], "IncludeUnsupportedInRegion": True},
        message="You are not authorized to perform this operation.",
    )
    found = instance_types.lookup(make_run(aws), G6E)
    assert found.facts is None
    assert found.reason.startswith(
        "ml.g6e.48xlarge is not in the gates table and its figures could not be read: "
        "ec2:DescribeInstanceTypes returned UnauthorizedOperation"
    )
    assert "docs/operations.md" in found.reason


def _network(cards: list[dict[str, Any]], interfaces: int) -> dict[str, Any]:
    return {"NetworkCards": cards, "EfaSupported": True, "EfaInfo": {"MaximumEfaInterfaces": interfaces}}  # fmt: skip


def test_efa_bandwidth_counts_the_cards_that_carry_efa() -> None:
    # a p6-b200-like answer: 8 EFA cards of 400 Gbit/s and an ENA-only front-end card
    cards = [card(0, 100.0, "interface"), *(card(i, 400.0, "efa-only") for i in range(1, 9))]
    assert instance_types.efa_gbps(_network(cards, 8), 8) == 3200
    # without InterfaceTypes: the `interfaces` fastest cards, never more than EFA can carry
    bare = [{k: v for k, v in c.items() if k != "InterfaceTypes"} for c in cards]
    assert instance_types.efa_gbps(_network(bare, 8), 8) == 3200
    assert instance_types.efa_gbps(_network(bare, 2), 2) == 800
    assert instance_types.efa_gbps(_network(cards, 0), 0) == 0


def test_neuron_devices_and_another_makers_gpus() -> None:
    trainium = {
        "InstanceType": "trn2.3xlarge",
        "NeuronInfo": {"NeuronDevices": [{"Count": 1, "Name": "Trainium2"}]},
        "NetworkInfo": _network([card(0, 200.0, "interface", "efa")], 1),
    }
    facts = instance_types.facts_from_ec2("ml.trn2.3xlarge", trainium)
    assert (facts.accelerator, facts.accelerators, facts.efa_interfaces, facts.efa_gbps) == (
        "neuron", 1, 1, 200,
    )  # fmt: skip
    amd = {"InstanceType": "g4ad.16xlarge", "GpuInfo": {"Gpus": [{"Manufacturer": "AMD", "Count": 4}]}}  # fmt: skip
    assert instance_types.facts_from_ec2("ml.g4ad.16xlarge", amd).accelerator == "none"
    # EfaSupported false: no EFA, whatever EfaInfo says
    no_efa = {"InstanceType": "x", "NetworkInfo": {**_network([], 4), "EfaSupported": False}}
    assert instance_types.facts_from_ec2("ml.x", no_efa).efa_interfaces == 0


def test_the_nccl_gate_of_a_type_read_from_ec2_is_provisional_and_names_its_source(
    aws: StubbedAws,
) -> None:
    described(aws, G6E, G6E_48XLARGE)
    facts = instance_types.lookup(make_run(aws), G6E).facts
    assert gates.nccl_gate(G6E) is None  # the table alone has no row
    gate = gates.nccl_gate(G6E, facts)
    assert gate is not None and gate.provisional
    assert (gate.reference_gbps, gate.gate_gbps) == (50.0, 40.0)
    assert "EFA rate 400 Gbit/s / 8 (EC2 DescribeInstanceTypes read this run" in gate.source


@pytest.mark.parametrize("name", ["ml.p5.48xlarge", "ml.trn1.32xlarge"])
def test_table_rows_still_come_from_the_table(name: str) -> None:
    assert gates.instance_facts(name) is gates.INSTANCE_FACTS[name]
    assert gates.instance_facts("ml.g6e.48xlarge") is None  # the pure table lookup
