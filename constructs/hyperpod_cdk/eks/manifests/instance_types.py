"""HyperPod instance types, by the devices they carry, for node affinities.

HyperPod labels its EKS nodes with ``node.kubernetes.io/instance-type`` set to
the ``ml.``-prefixed SageMaker name (``ml.p5.48xlarge``), so every affinity
here uses those names. Sources: the node affinities of the AWS "HyperPod
dependencies" Helm chart (aws/sagemaker-hyperpod-cli,
helm_chart/HyperPodHelmChart: values.yaml for the NVIDIA and EFA device plugins,
charts/health-monitoring-agent and charts/neuron-device-plugin templates), plus
the g7e and trn2.3xlarge types added to the health monitoring agent by that
repository's PRs #381 and #443.
"""

from __future__ import annotations


def _sizes(family: str, *sizes: str) -> tuple[str, ...]:
    return tuple(f"ml.{family}.{size}" for size in sizes)


# Instances with NVIDIA GPUs: the NVIDIA device plugin and the health monitoring agent run here.
NVIDIA_GPU_INSTANCE_TYPES: tuple[str, ...] = (
    *_sizes("g5", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g6", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g6e", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("gr6", "4xlarge", "8xlarge"),
    *_sizes("g7e", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"),
    *_sizes("p4d", "24xlarge"),
    *_sizes("p4de", "24xlarge"),
    *_sizes("p5", "4xlarge", "48xlarge"),
    *_sizes("p5e", "48xlarge"),
    *_sizes("p5en", "48xlarge"),
    *_sizes("p6-b200", "48xlarge"),
    *_sizes("p6e-gb200", "36xlarge"),
)  # fmt: skip

# Instances with AWS Neuron devices (Trainium, Inferentia 2): the Neuron device plugin runs here.
NEURON_INSTANCE_TYPES: tuple[str, ...] = (
    *_sizes("inf2", "xlarge", "8xlarge", "24xlarge", "48xlarge"),
    *_sizes("trn1", "2xlarge", "32xlarge"),
    *_sizes("trn1n", "32xlarge"),
    *_sizes("trn2", "3xlarge", "48xlarge"),
)

# The Neuron instances the health monitoring agent covers (the chart leaves out ml.trn1.2xlarge).
HEALTH_AGENT_NEURON_INSTANCE_TYPES: tuple[str, ...] = tuple(
    t for t in NEURON_INSTANCE_TYPES if t != "ml.trn1.2xlarge"
)

# Instances with an Elastic Fabric Adapter: the EFA device plugin runs here. The chart's list
# follows the EC2 EFA instance-type table, restricted to types HyperPod offers.
EFA_INSTANCE_TYPES: tuple[str, ...] = (
    *_sizes("c5n", "9xlarge", "18xlarge"),
    *_sizes("g5", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g6", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("g6e", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("gr6", "8xlarge"),
    *_sizes("i3en", "large", "xlarge", "2xlarge", "3xlarge", "6xlarge", "12xlarge", "24xlarge"),
    *_sizes("m7i", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("p4d", "24xlarge"),
    *_sizes("p4de", "24xlarge"),
    *_sizes("p5", "4xlarge", "48xlarge"),
    *_sizes("p5e", "48xlarge"),
    *_sizes("p5en", "48xlarge"),
    *_sizes("p6-b200", "48xlarge"),
    *_sizes("p6e-gb200", "36xlarge"),
    *_sizes("r7i", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    *_sizes("trn1", "32xlarge"),
    *_sizes("trn1n", "32xlarge"),
    *_sizes("trn2", "48xlarge"),
)  # fmt: skip
