"""The config's instance facts (facts/__init__.py) and the dependency chart's instance-type lists
(eks/charts/hyperpod-cdk-dependencies/values.yaml), tied both ways: every accelerated type
HyperPod offers (botocore ClusterInstanceType) is on the lists its accelerator and EFA need, or
named in facts/__init__.py EFA_UNCONFIRMED_TYPES (then the config warns, see
tests/config/test_config_chart_instance_types.py); every type on a list is a fact of the config.

Sources: AWS's chart aws/sagemaker-hyperpod-cli@011ca927 helm_chart/HyperPodHelmChart/values.yaml
(and PR #434/#435 G4dn, #443/#447 G7); the EFA plugin's chart aws/eks-charts@050f81ee
stable/aws-efa-k8s-device-plugin/values.yaml (G4dn EFA sizes).
"""

from __future__ import annotations

from typing import Any

import pytest
from chart_testkit import affinity_types, by_kind_name, helm, render

from hyperpod_cdk import facts
from hyperpod_cdk.facts import chart

ACCELERATED = sorted(t for t in facts.HYPERPOD_INSTANCE_TYPES if facts.is_accelerated(t))
# Types AWS's chart lists that HyperPod does not offer (Inferentia 2, trn1.2xlarge): kept as AWS
# has them (the parity test), no node ever carries them.
CHART_ONLY = {t for t in chart.instance_types("neuron") if t not in facts.HYPERPOD_INSTANCE_TYPES}


def test_every_accelerated_type_has_a_known_accelerator() -> None:
    assert [t for t in ACCELERATED if facts.accelerator(t) is None] == []


@pytest.mark.parametrize("instance_type", ACCELERATED)
def test_each_accelerated_type_is_on_the_lists_it_needs(instance_type: str) -> None:
    kind = facts.accelerator(instance_type)
    if kind == "nvidia":
        # the NVIDIA device plugin and the health agent's NVIDIA DaemonSet share this list
        assert instance_type in chart.instance_types("nvidiaGpu")
    else:
        assert instance_type in chart.instance_types("neuron")
        assert instance_type in chart.instance_types("healthAgentNeuron")
    on_efa = instance_type in chart.instance_types("efa")
    assert on_efa == (instance_type in facts.EFA_INSTANCE_TYPES)
    if not on_efa:
        # not EFA-capable, or unconfirmed (warned)
        assert instance_type not in facts.EFA_INSTANCE_TYPES


@pytest.mark.parametrize("kind", ["nvidiaGpu", "neuron", "healthAgentNeuron", "efa"])
def test_every_chart_entry_is_a_fact_of_the_config(kind: str) -> None:
    for instance_type in chart.instance_types(kind):
        if instance_type in CHART_ONLY:
            continue
        assert instance_type in facts.HYPERPOD_INSTANCE_TYPES, instance_type
        if kind == "nvidiaGpu":
            assert facts.accelerator(instance_type) == "nvidia", instance_type
        elif kind == "efa":
            assert instance_type in facts.EFA_INSTANCE_TYPES, instance_type
            assert instance_type not in facts.EFA_UNCONFIRMED_TYPES, instance_type
        else:
            assert facts.accelerator(instance_type) == "neuron", instance_type
    assert all(t == "ml.trn1.2xlarge" or t.startswith("ml.inf2.") for t in CHART_ONLY), CHART_ONLY


def test_the_unconfirmed_efa_types_are_hyperpod_types_off_the_efa_list() -> None:
    assert facts.EFA_UNCONFIRMED_TYPES <= facts.HYPERPOD_INSTANCE_TYPES
    assert not facts.EFA_UNCONFIRMED_TYPES & set(chart.instance_types("efa"))


@pytest.fixture(scope="module")
def device_plugins() -> dict[tuple[str, str], dict[str, Any]]:
    rendered: list[dict[str, Any]] = []
    for release in chart.RELEASES:
        values = chart.release_values(release, region="us-west-2", enabled=chart.DEPENDENCY_KEYS)
        rendered += render(helm("1.35"), values, release=release.name, namespace=release.namespace)
    return by_kind_name(rendered)


@pytest.mark.parametrize("instance_type", ["ml.g4dn.12xlarge", "ml.g7.48xlarge", "ml.g7e.48xlarge"])
def test_g4dn_and_g7_nodes_get_gpus_and_the_health_agent(
    device_plugins, instance_type: str
) -> None:
    """As rendered by helm: the NVIDIA plugin (nvidia.com/gpu) and the agent select the type."""
    for name in ("nvidia-device-plugin-daemonset", "health-monitoring-agent"):
        pod = device_plugins[("DaemonSet", name)]["spec"]["template"]["spec"]
        assert instance_type in affinity_types(pod), name
    efa = device_plugins[("DaemonSet", "aws-efa-k8s-device-plugin-daemonset")]
    efa_types = affinity_types(efa["spec"]["template"]["spec"])
    assert ("ml.g4dn.12xlarge" in efa_types) and ("ml.g7.48xlarge" not in efa_types)
