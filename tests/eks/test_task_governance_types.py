"""The native-region table of the task governance types equals the intersection of what AWS
publishes, read at test time:

- cfn-lint's regional registry data: ``cfnlint/data/schemas/providers/<region>.json`` of the
  installed cfn-lint (1.58.0, registry data of 2026-10-20) names the type in the region;
- the type's own registry schema, where it lists its regions: ``AWS::SageMaker::ComputeQuota``'s
  description says "Available in 15 regions (us-east-1, ...)" (cfn-lint
  ``data/schemas/resources/37c2673eb8818672.json``; the same text on
  https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_sagemaker.CfnComputeQuota.html,
  v2.277.0). ``AWS::SageMaker::ClusterSchedulerConfig``'s schema lists none: cfn-lint decides.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import cfnlint
import pytest

from hyperpod_cdk import facts
from hyperpod_cdk.facts.task_governance_types import (
    COMPUTE_QUOTA_TYPE,
    NATIVE_REGIONS,
    SCHEDULER_CONFIG_TYPE,
)

SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"
_LISTED = re.compile(r"Available in (\d+) regions \(([^)]*)\)")


def provider_regions(type_name: str) -> set[str]:
    """The regions of facts.REGIONS whose cfn-lint provider list names ``type_name``."""
    offered = set()
    for region in facts.REGIONS:
        path = SCHEMAS / "providers" / f"{region}.json"
        if path.exists() and type_name in json.loads(path.read_text()):
            offered.add(region)
    return offered


def schema_regions(type_name: str) -> set[str] | None:
    """The regions the type's registry schema lists in its description; None: it lists none."""
    for path in (SCHEMAS / "resources").glob("*.json"):
        text = path.read_text()
        if f'"{type_name}"' not in text:
            continue
        schema = json.loads(text)
        if schema.get("typeName") != type_name:
            continue
        match = _LISTED.search(schema.get("description", ""))
        if match is None:
            return None
        regions = {r.strip() for r in match[2].split(",")}
        assert len(regions) == int(match[1]), match[0]  # the count and the list agree
        return regions
    raise AssertionError(f"cfn-lint has no schema of {type_name}")


@pytest.mark.parametrize("type_name", sorted(NATIVE_REGIONS))
def test_the_table_is_the_intersection_of_the_sources(type_name: str) -> None:
    expected = provider_regions(type_name)
    listed = schema_regions(type_name)
    if listed is not None:
        expected &= listed
    assert NATIVE_REGIONS[type_name] == expected


def test_the_sources_as_read_on_2026_11_27() -> None:
    """What the table rests on today: ComputeQuota's schema lists 15 regions without
    ca-central-1, which cfn-lint's provider data names (so ca-central-1 takes the custom
    resource); ClusterSchedulerConfig's schema lists none."""
    listed = schema_regions(COMPUTE_QUOTA_TYPE)
    assert listed is not None and len(listed) == 15
    assert "ca-central-1" not in listed
    assert "ca-central-1" in provider_regions(COMPUTE_QUOTA_TYPE)
    assert "ca-central-1" not in NATIVE_REGIONS[COMPUTE_QUOTA_TYPE]
    assert schema_regions(SCHEDULER_CONFIG_TYPE) is None
