"""What an instance type has, for ``make verify``: the gates table's row when it has one, else
the account's answer to EC2 ``DescribeInstanceTypes``, asked once per type and run.

The EFA and NCCL checks (and the device counts of the EKS ``nodes`` check, the accelerator test
of ``--deep-health-check``) need the accelerators, the EFA interfaces and the EFA bandwidth of
a group's instance type. :data:`~hyperpod_ops.verify.gates.INSTANCE_FACTS` holds the types
whose figures were confirmed from AWS's publications; every other type is read from EC2, whose
answer is the same in every account (the instance type's specification). The facts carry their
source (:attr:`~hyperpod_ops.verify.gates.InstanceFacts.source`) so the result lines say
where an expected count came from. A type EC2 does not know is skipped with the reason.

boto3 clients come from ``run.clients``; answers are kept in ``run.shared``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_ops.aws import (
    describe_error,
    error_code,
    error_message,
    is_client_error,
    unavailable_reason,
)
from hyperpod_ops.verify import gates
from hyperpod_ops.verify.model import VerifyRun

# How a result line names the account's answer as the source of a type's figures.
FROM_EC2 = "DescribeInstanceTypes"
# The error EC2 answers DescribeInstanceTypes with for a name it does not know ("An error
# occurred (InvalidInstanceType) when calling the DescribeInstanceTypes operation: The following
# supplied instance types do not exist: [i8ge.xlarge]", scylladb/scylla-cluster-tests issue
# 12419, 2025-11-03).
UNKNOWN_TYPE_CODES = frozenset({"InvalidInstanceType"})
# NetworkCardInfo.InterfaceTypes values of a card that carries EFA (botocore 1.44.5 ec2 model,
# NetworkCardInterfaceType: interface | efa | efa-only | secondary; read 2026-11-25).
EFA_CARD_TYPES = frozenset({"efa", "efa-only"})
# The run.shared key of this module's answers: instance type -> Lookup.
_SHARED = "instance_types.lookups"


@dataclass(frozen=True)
class Lookup:
    """An instance type's facts, or why there are none.

    :param instance_type: as HyperPod names it (``ml.g6e.48xlarge``).
    :param facts: the table's row or EC2's answer; None when neither has the type.
    :param reason: when ``facts`` is None, the one line a skipped result gives.
    """

    instance_type: str
    facts: gates.InstanceFacts | None
    reason: str = ""


def lookup(run: VerifyRun, instance_type: str) -> Lookup:
    """The facts of ``instance_type``: the gates table's row, else EC2's answer (asked at most
    once per type in a run, whatever it answered)."""
    row = gates.instance_facts(instance_type)
    if row is not None:
        return Lookup(instance_type, row)
    answers: dict[str, Lookup] = run.shared.setdefault(_SHARED, {})
    if instance_type not in answers:
        answers[instance_type] = _describe(run, instance_type)
    return answers[instance_type]


def ec2_name(instance_type: str) -> str:
    """The EC2 name of a HyperPod instance type: ``ml.g6e.48xlarge`` -> ``g6e.48xlarge``."""
    return instance_type.removeprefix("ml.")


def _describe(run: VerifyRun, instance_type: str) -> Lookup:
    name = ec2_name(instance_type)
    missing = f"{instance_type} is not in the gates table and"
    ec2 = run.clients("ec2")
    try:
        # IncludeUnsupportedInRegion: HyperPod may offer a type the region's EC2 does not, and
        # the figures do not depend on the region.
        answer = ec2.describe_instance_types(InstanceTypes=[name], IncludeUnsupportedInRegion=True)
    except Exception as exc:
        if unavailable_reason(exc) is not None or not is_client_error(exc):
            raise
        if error_code(exc) in UNKNOWN_TYPE_CODES:
            reason = (
                f"{missing} EC2 does not know {name} (DescribeInstanceTypes: {error_code(exc)}: "
                f"{error_message(exc)})"
            )
        else:
            reason = (
                f"{missing} its figures could not be read: {describe_error(exc, [ec2])} "
                "(make verify needs ec2:DescribeInstanceTypes, docs/operations.md)"
            )
        return Lookup(instance_type, None, reason)
    for described in answer.get("InstanceTypes", []):
        if described.get("InstanceType") == name:
            return Lookup(instance_type, facts_from_ec2(instance_type, described))
    return Lookup(instance_type, None, f"{missing} EC2 DescribeInstanceTypes does not list {name}")


def facts_from_ec2(instance_type: str, described: Mapping[str, Any]) -> gates.InstanceFacts:
    """The facts in one ``InstanceTypes`` item of DescribeInstanceTypes.

    - accelerators: the NVIDIA GPUs (``GpuInfo.Gpus[].Count`` whose ``Manufacturer`` is NVIDIA),
      else the Neuron devices (``NeuronInfo.NeuronDevices[].Count``), else none (another
      maker's GPUs are "none": verify's GPU tests are CUDA);
    - EFA interfaces: ``NetworkInfo.EfaInfo.MaximumEfaInterfaces`` (0 unless ``EfaSupported``);
    - EFA Gbit/s: :func:`efa_gbps`.
    """
    gpus = described.get("GpuInfo", {}).get("Gpus", [])
    nvidia = sum(int(g.get("Count", 0)) for g in gpus if _is_nvidia(g))
    neuron = sum(
        int(d.get("Count", 0)) for d in described.get("NeuronInfo", {}).get("NeuronDevices", [])
    )
    network = described.get("NetworkInfo", {})
    interfaces = 0
    if network.get("EfaSupported"):
        interfaces = int(network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0))
    if nvidia:
        return gates.InstanceFacts(
            instance_type, "nvidia", nvidia, interfaces, efa_gbps(network, interfaces), FROM_EC2
        )
    if neuron:
        return gates.InstanceFacts(
            instance_type, "neuron", neuron, interfaces, efa_gbps(network, interfaces), FROM_EC2
        )
    return gates.InstanceFacts(
        instance_type, "none", 0, interfaces, efa_gbps(network, interfaces), FROM_EC2
    )


def _is_nvidia(gpu: Mapping[str, Any]) -> bool:
    return str(gpu.get("Manufacturer", "")).upper() == "NVIDIA"


def efa_gbps(network: Mapping[str, Any], interfaces: int) -> int:
    """The aggregate EFA bandwidth in Gbit/s: the sum of ``PeakBandwidthInGbps`` over the
    network cards that carry EFA.

    The rule, from the ec2 model (botocore 1.44.5): a card carries EFA when its
    ``InterfaceTypes`` lists ``efa`` or ``efa-only``; a card that lists only ``interface`` (an
    ENA-only card, e.g. a separate front-end NIC) does not count. An answer whose cards give no
    ``InterfaceTypes`` counts the ``interfaces`` fastest cards (one EFA per network card), so the
    figure is never above what the EFA devices can carry. Peak, not baseline: it is the line
    rate the gates table gives (p5.48xlarge: 32 cards x 100 = 3,200 Gbit/s). 0 when the type
    has no EFA.
    """
    if interfaces <= 0:
        return 0
    cards = list(network.get("NetworkCards", []))
    if any("InterfaceTypes" in card for card in cards):
        carrying = [c for c in cards if EFA_CARD_TYPES & set(c.get("InterfaceTypes", []))]
    else:
        carrying = sorted(cards, key=_peak, reverse=True)[:interfaces]
    return round(sum(_peak(card) for card in carrying))


def _peak(card: Mapping[str, Any]) -> float:
    return float(card.get("PeakBandwidthInGbps", 0.0))


def source_note(facts: gates.InstanceFacts, what: str = "EFA interfaces") -> str:
    """``EFA interfaces from DescribeInstanceTypes`` or ``... from the gates table``."""
    return f"{what} from {facts.source}"
