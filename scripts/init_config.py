#!/usr/bin/env python3
"""``make init NAME=acme REGION=us-east-1 [ORCHESTRATOR=slurm|eks] [OUT=envs/acme.yaml]``.

Writes a commented starting config: the schema header (editors complete and check keys), the
required keys, the defaults most people look at spelled out, and ``# CHANGE`` on the lines a user
usually changes. It refuses to overwrite a file, validates what it would write before writing it
(an invalid NAME or REGION fails with the validator's own ``config error:`` lines and writes
nothing), and prints the next commands. Offline: no AWS call.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

# scripts/ is on sys.path as the folder of the script run (and hyperpod_cdk is installed)
from config_schema import HEADER, SCHEMA_DIR, header_for

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = SCHEMA_DIR / "environment.schema.json"

# AZ IDs are <region code><number>-az<n>: us-east-1 -> use1, ap-northeast-1 -> apne1,
# us-gov-west-1 -> usgw1 (EC2 user guide, "AZ IDs"). Every region has its az1 and az2.
_DIRECTIONS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c"}
_REGION = re.compile(r"^([a-z]{2})(-gov)?-([a-z]+)-(\d+)$")

SLURM = """\
{header}
# {name}: a SageMaker HyperPod environment with Slurm, written by `make init`.
# Every key not written here takes its default (docs/configuration.md).
# Lines marked CHANGE are the ones most people change before a first deploy.
name: {name}
# account: "111122223333"      # CHANGE: the account to deploy to (quoted); else the credentials' account
region: {region}
orchestrator: slurm

network:
  # CHANGE: the AZ ID (not name) of your capacity. To map names to IDs in your account:
  # aws ec2 describe-availability-zones --region {region} --query 'AvailabilityZones[].[ZoneName,ZoneId]' --output text
  availability_zone_id: {az1}
  cidr: 10.0.0.0/16              # small subnets: public (NAT), database, endpoints
  compute_cidr: 10.1.0.0/16      # the private HyperPod subnet (a whole /16)

storage:
  fsx:
    storage_capacity_gib: 1200   # 1200, 2400, then steps of 2400
    throughput_per_tib: 250      # MB/s per TiB: 125, 250, 500 or 1000
    mount_path: /fsx
    removal_policy: retain       # the file system and the data bucket outlive the stacks

cluster:
  node_provisioning_mode: Continuous
  node_recovery: Automatic
  instance_groups:
    - name: controller
      instance_type: ml.m5.2xlarge
      count: 1
      node_type: Controller
    - name: login
      instance_type: ml.m5.4xlarge
      count: 1
      node_type: Login
    - name: gpu
      # CHANGE: the GPU type and count; request its "<type> for cluster usage" quota first
      instance_type: ml.g5.12xlarge
      count: 2
      node_type: Compute
      partition: gpu
"""

EKS = """\
{header}
# {name}: a SageMaker HyperPod environment on a new EKS cluster, written by `make init`.
# Every key not written here takes its default (docs/configuration.md; docs/eks.md).
# Lines marked CHANGE are the ones most people change before a first deploy.
name: {name}
# account: "111122223333"      # CHANGE: the account to deploy to (quoted); else the credentials' account
region: {region}
orchestrator: eks

network:
  # CHANGE: the AZ ID (not name) of your capacity. To map names to IDs in your account:
  # aws ec2 describe-availability-zones --region {region} --query 'AvailabilityZones[].[ZoneName,ZoneId]' --output text
  availability_zone_id: {az1}
  eks_availability_zone_ids: [{az1}, {az2}]   # the EKS control plane needs two AZs
  cidr: 10.0.0.0/16
  compute_cidr: 10.1.0.0/16

storage:
  fsx:
    storage_capacity_gib: 1200
    throughput_per_tib: 250
    removal_policy: retain

cluster:
  node_provisioning_mode: Continuous
  node_recovery: Automatic
  instance_groups:
    - name: gpu
      # CHANGE: the GPU type and count; request its "<type> for cluster usage" quota first
      instance_type: ml.g5.12xlarge
      count: 2

eks:
  endpoint_access: private       # the API server is reachable from the VPC only
  # admin_principal_arns: ["arn:aws:iam::111122223333:role/Admin"]   # CHANGE: who administers the cluster
  # To put HyperPod on an EKS cluster you already have, see config/examples/eks-existing-cluster.yaml.
"""


def az_ids(region: str) -> tuple[str, str]:
    """The first two AZ IDs of ``region`` (``use1-az1``, ``use1-az2``); a name that is not a
    region's gives placeholders the validator then rejects with its own message."""
    match = _REGION.match(region)
    if not match:
        return ("az-id-1", "az-id-2")
    area, gov, direction, number = match.groups()
    words = re.findall("north|south|east|west|central", direction)
    code = area + ("g" if gov else "") + "".join(_DIRECTIONS[w] for w in words) + number
    return (f"{code}-az1", f"{code}-az2")


def render(name: str, region: str, orchestrator: str, out: Path) -> str:
    az1, az2 = az_ids(region)
    template = EKS if orchestrator == "eks" else SLURM
    # inside the repository the schema is named relative to the file (the file can move with
    # the repository); outside it, by its absolute path
    inside = out.resolve().is_relative_to(ROOT)
    header = header_for(out, pipeline=False) if inside else f"{HEADER}{SCHEMA}"
    return template.format(header=header, name=name, region=region, az1=az1, az2=az2)


def main(argv: list[str]) -> int:
    args = dict(a.split("=", 1) for a in argv if "=" in a)
    if len(args) != len(argv) or not {"NAME", "REGION"} <= set(args):
        print(
            "usage: make init NAME=acme REGION=us-east-1 [ORCHESTRATOR=slurm|eks] [OUT=envs/acme.yaml]",
            file=sys.stderr,
        )
        return 2
    unknown = set(args) - {"NAME", "REGION", "ORCHESTRATOR", "OUT"}
    if unknown:
        print(
            f"init: unknown setting {sorted(unknown)[0]}; use NAME, REGION, ORCHESTRATOR, OUT",
            file=sys.stderr,
        )
        return 2
    name, region = args["NAME"], args["REGION"]
    orchestrator = args.get("ORCHESTRATOR") or "slurm"
    if orchestrator not in ("slurm", "eks"):
        print(f"init: ORCHESTRATOR={orchestrator} is not slurm or eks", file=sys.stderr)
        return 2
    out = Path(args.get("OUT") or f"envs/{name}.yaml")
    out = out if out.is_absolute() else Path.cwd() / out
    if out.exists():
        print(f"init: {out} exists; it is left as it is (give another OUT=)", file=sys.stderr)
        return 2
    text = render(name, region, orchestrator, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # validated where it will live (relative paths in it resolve as they will), then put in place
    with tempfile.NamedTemporaryFile("w", dir=out.parent, suffix=".yaml", delete=False) as tmp:
        tmp.write(text)
    try:
        from hyperpod_cdk.config import ConfigError, validate_file

        try:
            validate_file(Path(tmp.name), ROOT)
        except ConfigError as exc:
            for issue in [*exc.issues, *exc.warnings]:
                print(issue, file=sys.stderr)
            print(f"init: nothing written to {out}", file=sys.stderr)
            return 2
        try:
            os.link(tmp.name, out)  # fails if the file appeared meanwhile: never overwrite
        except FileExistsError:
            print(f"init: {out} exists; it is left as it is (give another OUT=)", file=sys.stderr)
            return 2
    finally:
        os.unlink(tmp.name)
    shown = out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out
    print(f"init: wrote {shown} ({orchestrator}, {region}); it validates.")
    print(f"next: edit the lines marked CHANGE, then make validate CONFIG={shown}, make synth CONFIG={shown}, "
          f"make preflight CONFIG={shown}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
