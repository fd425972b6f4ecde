"""The figures ``make verify`` holds its measurements to, each with its source: what each
instance type has (accelerators, EFA devices, EFA bandwidth), AWS's published two-node
nccl-tests bus bandwidths, the FSx for Lustre baseline throughput, and the pinned nccl-tests
image. The gates built on them, and the judging, are the tools' (``hyperpod_ops.verify.gates``).

Pure Python: no AWS calls, no ``aws_cdk``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

GiB = 1024**3
# How a result line names the table below as the source of an instance type's figures.
FROM_TABLE = "the gates table"


@dataclass(frozen=True)
class InstanceFacts:
    """What an instance type has, as EC2 publishes it.

    :param instance_type: ``ml.p5.48xlarge``.
    :param accelerator: NVIDIA GPUs, AWS Neuron devices (Trainium), or none.
    :param accelerators: GPUs or Neuron devices (0 for none).
    :param efa_interfaces: EFA devices the instance type has (0: no EFA).
    :param efa_gbps: aggregate EFA bandwidth in Gbit/s (0: no EFA).
    :param source: where the figures come from, as a result line names it: :data:`FROM_TABLE`
        for a row of :data:`INSTANCE_FACTS`, ``DescribeInstanceTypes`` for the account's answer
        (the tools' ``verify.instance_types``).
    """

    instance_type: str
    accelerator: Literal["nvidia", "neuron", "none"]
    accelerators: int
    efa_interfaces: int
    efa_gbps: int
    source: str = FROM_TABLE


def _facts(
    name: str, accelerator: Literal["nvidia", "neuron", "none"], count: int, efa: int, gbps: int
) -> tuple[str, InstanceFacts]:
    """One row of :data:`INSTANCE_FACTS`."""
    return name, InstanceFacts(name, accelerator, count, efa, gbps)


# Sources, read 2026-11-25:
#  [a] awslabs/awsome-distributed-ai @ 95b939cd: architectures/aws-pcs/tests/compute-test.md
#      ("32 for p5/p5e, 16 for p5en, 8 for p6-b200, 16 for p6-b300" EFA interfaces);
#      3.test_cases/pytorch/slime/README.md (p5.48xlarge: 32 EFA, 3,200 Gbps);
#      3.test_cases/megatron/nemo-rl/grpo/README.md (p5en 16x 200 Gbps, p5 32x 100 Gbps);
#      3.test_cases/megatron/megatron-bridge/qwen3-30b/README.md (p6-b300 16x 400G EFA).
#  [b] EC2 accelerated computing specifications (docs.aws.amazon.com/ec2/latest/instancetypes/
#      ac.html) and the Neuron training FAQ, as quoted by public research notes (p4d: 4x 100 Gbps;
#      p6-b200: 8x 400 Gbps; trn1.32xlarge 8x 100, trn1n.32xlarge 16x 100, trn2.48xlarge 16x 200).
# Left out, as not confirmed with the search tools: g5, g6, g6e (their EFA counts by size),
# trn2.3xlarge, p5.4xlarge, p6e-gb200. verify reads those (and any other type without a row)
# from the account once per run (EC2 DescribeInstanceTypes, hyperpod_ops/verify/instance_types.py) and
# says so on its result lines; a type EC2 does not know SKIPs with "not in the gates table".
INSTANCE_FACTS: Mapping[str, InstanceFacts] = MappingProxyType(
    dict(
        (
            _facts("ml.p4d.24xlarge", "nvidia", 8, 4, 400),  # [b]
            _facts("ml.p4de.24xlarge", "nvidia", 8, 4, 400),  # [b] p4d with 80 GB A100s
            _facts("ml.p5.48xlarge", "nvidia", 8, 32, 3200),  # [a]
            _facts("ml.p5e.48xlarge", "nvidia", 8, 32, 3200),  # [a] same EFA as p5
            _facts("ml.p5en.48xlarge", "nvidia", 8, 16, 3200),  # [a]
            _facts("ml.p6-b200.48xlarge", "nvidia", 8, 8, 3200),  # [a] count, [b] rate
            _facts("ml.p6-b300.48xlarge", "nvidia", 8, 16, 6400),  # [a]
            _facts("ml.trn1.32xlarge", "neuron", 16, 8, 800),  # [b]
            _facts("ml.trn1n.32xlarge", "neuron", 16, 16, 1600),  # [b]
            _facts("ml.trn2.48xlarge", "neuron", 16, 16, 3200),  # [b]
        )
    )
)
INSTANCE_FACTS_SOURCE = (
    "awslabs/awsome-distributed-ai @ 95b939cd (aws-pcs compute-test.md, test-case READMEs) and "
    "EC2 accelerated computing specifications (docs.aws.amazon.com/ec2/latest/instancetypes/"
    "ac.html), read 2026-11-25"
)


# FI_EFA_USE_DEVICE_RDMA=1 is for instance types whose EFA supports RDMA read (AWS "Get started
# with EFA and NCCL", 2026-11: p4d, p4de, p5, p5e, p5en, p6 families; the libfabric efa provider
# turns it on by itself where supported, the variable makes a missing RDMA an error).
RDMA_FAMILIES = ("ml.p4d.", "ml.p4de.", "ml.p5.", "ml.p5e.", "ml.p5en.", "ml.p6-", "ml.p6e-")


def instance_facts(instance_type: str) -> InstanceFacts | None:
    """The facts of ``instance_type``; None when it is not in the table."""
    return INSTANCE_FACTS.get(instance_type)


_AWSOME = "awslabs/awsome-distributed-ai @ 95b939cd"
_NCCL_README = f"{_AWSOME} micro-benchmarks/nccl-tests/README.md"
# AWS's published 2-node all_reduce_perf bus bandwidth over EFA: type -> (GB/s, message bytes,
# source). p5 also reaches 443.7 GB/s at 2 GiB in the same run; the 16 GiB figure is the gate
# since the pinned sweep goes to 16 GiB. p6-b300 reaches ~751 GB/s at 64 GiB (the 16 EFA NICs
# are not saturated at 16 GiB); verify's sweep stops at 16 GiB. No 2-node figure is published
# for p5e, p5en, p6-b200 (a 4-node, non-tuned p6-b200 run reached 377 GB/s at 16 GiB in [a]).
NCCL_PUBLISHED: Mapping[str, tuple[float, int, str]] = MappingProxyType(
    {
        "ml.p4de.24xlarge": (78.3, 2 * GiB, f"{_NCCL_README} (2x p4de.24xlarge, 78.33 at 2 GiB)"),
        "ml.p5.48xlarge": (487.1, 16 * GiB, f"{_NCCL_README} (2x p5.48xlarge, 487.09 at 16 GiB)"),
        "ml.p6-b300.48xlarge": (
            654.0,
            16 * GiB,
            f"{_AWSOME} architectures/aws-pcs/tests/compute-test.md (2x p6-b300, ~654 at 16 GiB)",
        ),
    }
)


def fsx_baseline_mbps(capacity_gib: int, throughput_per_tib: int) -> float:
    """The baseline throughput of a PERSISTENT_2 file system in MB/s: capacity in TiB x the
    per-unit throughput tier (FSx for Lustre user guide, "Performance": 1200 GiB at 250 MB/s/TiB
    is about 293 MB/s)."""
    return capacity_gib / 1024 * throughput_per_tib


# The pinned nccl-tests image. The digest and the tag it resolved to (on 2026-09-06) are from
# awslabs/awsome-distributed-ai examples/use-cases/gpu-cluster-failure-patterns/pins.env (read
# 2026-11-25): CUDA 13.0.2, EFA installer 1.48.0, aws-ofi-nccl 1.19.0, NCCL 2.30.4, nccl-tests
# 2.18.3 (text output only: -J JSON needs 2.18.5).
NCCL_TESTS_DIGEST = "sha256:a5390d3f0eb50f3e5854085e2ae0fef90b9eb4f3b7486ed4cab0d47864809d4c"
NCCL_TESTS_REPOSITORY = "hpc-cloud/nccl-tests"
NCCL_TESTS_IMAGE = f"public.ecr.aws/{NCCL_TESTS_REPOSITORY}@{NCCL_TESTS_DIGEST}"
NCCL_TESTS_IMAGE_TAG = "cuda13.0.2-efa1.48.0-ofiv1.19.0-ncclv2.30.4-1-testsv2.18.3"
ALL_REDUCE_PERF = "/opt/nccl-tests/build/all_reduce_perf"
