"""An EKS instance group's type against the dependency chart's instance-type lists.

The chart runs the NVIDIA and Neuron device plugins, the health monitoring agent and the EFA
device plugin only on the instance types of its lists (``instanceTypes`` in
``eks/charts/hyperpod-cdk-dependencies/values.yaml``, plus
``eks.chart_values.extra_instance_types``). A GPU node off the NVIDIA list advertises no
``nvidia.com/gpu`` and has no health agent, so automatic recovery and Karpenter's prerequisite
are off without a word; an EFA node off the EFA list has no ``vpc.amazonaws.com/efa``. Each such
group gets a warning naming the reason and the key that adds the type. The instance facts are
``facts/__init__.py`` (NVIDIA_GPU_FAMILIES, NEURON_FAMILIES, EFA_INSTANCE_TYPES,
EFA_UNCONFIRMED_TYPES); tests/eks/test_chart_instance_types.py ties them to the chart both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import IssueSink

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

_EXTRA = "eks.chart_values.extra_instance_types"


def check_chart_instance_types(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Each EKS group type that the chart's device plugin, health agent or EFA plugin would miss
    is a warning at the group's key."""
    if cfg.is_slurm:
        return
    # pure data, no CDK: safe to import during validation
    from hyperpod_cdk.facts import chart

    eks = cfg.eks_settings
    deps = eks.dependencies
    extra = eks.chart_values.extra_instance_types
    nvidia = {*chart.instance_types("nvidiaGpu"), *extra.nvidia_gpu}
    neuron = {*chart.instance_types("healthAgentNeuron"), *extra.neuron}
    efa = {*chart.instance_types("efa"), *extra.efa}
    for i, group in enumerate(cfg.cluster.instance_groups):
        path = f"cluster.instance_groups[{i}]"
        for instance_type in group.all_instance_types:
            kind = facts.accelerator(instance_type)
            watched = deps.health_monitoring_agent or (
                deps.nvidia_device_plugin if kind == "nvidia" else deps.neuron_device_plugin
            )
            if kind == "nvidia" and watched and instance_type not in nvidia:
                out.warn(
                    path,
                    f"{instance_type} is not on the dependency chart's NVIDIA list: its nodes "
                    "advertise no nvidia.com/gpu and the health agent does not watch them (no "
                    f"automatic recovery); add it to {_EXTRA}.nvidia_gpu",
                )
            if kind == "neuron" and watched and instance_type not in neuron:
                out.warn(
                    path,
                    f"{instance_type} is not on the dependency chart's Neuron list: its nodes "
                    "advertise no Neuron devices and the health agent does not watch them; add "
                    f"it to {_EXTRA}.neuron",
                )
            if not deps.efa_device_plugin or instance_type in efa:
                continue
            ec2_type = instance_type.removeprefix("ml.")
            if instance_type in facts.EFA_UNCONFIRMED_TYPES:
                out.warn(
                    path,
                    f"whether {instance_type} has EFA is published in no source this project "
                    "holds, so the EFA device plugin does not run on its nodes (no "
                    "vpc.amazonaws.com/efa; NCCL falls back to TCP). If `aws ec2 "
                    f"describe-instance-types --instance-types {ec2_type} --query "
                    "InstanceTypes[].NetworkInfo.EfaSupported` says true, add it to "
                    f"{_EXTRA}.efa",
                )
            elif instance_type in facts.EFA_INSTANCE_TYPES:
                out.warn(
                    path,
                    f"{instance_type} has EFA but is not on the dependency chart's EFA list: the "
                    f"EFA device plugin does not run on its nodes; add it to {_EXTRA}.efa",
                )
