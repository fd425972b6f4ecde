"""EC2 DescribeInstanceTypes answers for the make verify tests, queued on the stubbed ec2 client
(the Stubber checks each against the ec2 output shape and the request against ``expected``).

The items carry the fields ops/verify/instance_types.py reads, shaped as EC2 answers them: a
CPU type without EFA (m5.2xlarge) and a g6e.48xlarge-like GPU type (8 NVIDIA L40S, 4 EFA
interfaces, 4 network cards of 100 Gbit/s).
"""

from __future__ import annotations

from typing import Any

from ops_testkit import StubbedAws


def card(index: int, gbps: float, *types: str) -> dict[str, Any]:
    """One ``NetworkCards`` item."""
    return {
        "NetworkCardIndex": index,
        "NetworkPerformance": f"{gbps:g} Gigabit",
        "MaximumNetworkInterfaces": 4,
        "BaselineBandwidthInGbps": gbps,
        "PeakBandwidthInGbps": gbps,
        "InterfaceTypes": list(types),
    }


M5_2XLARGE: dict[str, Any] = {
    "InstanceType": "m5.2xlarge",
    "NetworkInfo": {
        "NetworkPerformance": "Up to 10 Gigabit",
        "MaximumNetworkCards": 1,
        "NetworkCards": [
            {**card(0, 10.0, "interface"), "BaselineBandwidthInGbps": 2.5},
        ],
        "EfaSupported": False,
    },
}

G6E_48XLARGE: dict[str, Any] = {
    "InstanceType": "g6e.48xlarge",
    "GpuInfo": {
        "Gpus": [
            {
                "Name": "L40S",
                "Manufacturer": "NVIDIA",
                "Count": 8,
                "MemoryInfo": {"SizeInMiB": 45776},
            }
        ],
        "TotalGpuMemoryInMiB": 366208,
    },
    "NetworkInfo": {
        "NetworkPerformance": "400 Gigabit",
        "MaximumNetworkCards": 4,
        "NetworkCards": [
            card(0, 100.0, "interface", "efa"),
            *(card(i, 100.0, "efa", "efa-only") for i in range(1, 4)),
        ],
        "EfaSupported": True,
        "EfaInfo": {"MaximumEfaInterfaces": 4},
    },
}


def expected(instance_type: str) -> dict[str, Any]:
    """The request make verify sends for a HyperPod ``instance_type``."""
    return {
        "InstanceTypes": [instance_type.removeprefix("ml.")],
        "IncludeUnsupportedInRegion": True,
    }


def described(aws: StubbedAws, instance_type: str, item: dict[str, Any]) -> None:
    """Queue EC2's answer describing ``instance_type`` with ``item``."""
    aws.stub("ec2").add_response(
        "describe_instance_types", {"InstanceTypes": [item]}, expected(instance_type)
    )


def unknown(aws: StubbedAws, instance_type: str) -> None:
    """Queue EC2's answer for a name it does not know."""
    name = instance_type.removeprefix("ml.")
    aws.error(
        "ec2",
        "describe_instance_types",
        "InvalidInstanceType",
        expected(instance_type),
        message=f"The following supplied instance types do not exist: [{name}]",
    )
