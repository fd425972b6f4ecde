"""Registry-schema overrides for cfn-lint, built from the installed cfn-lint itself.

cfn-lint 1.58 marks several ``AWS::SageMaker::Cluster`` properties as not
available in some regions (e.g. ``AccountingDatabase``, ``AutoPatchConfig``,
``InstanceRequirements``, ``NetworkInterface`` in us-west-2), although the
resource schema it ships has them, and so do aws-cdk-lib 2.275's L1 classes
(which are generated from the CloudFormation registry). Linting against
cfn-lint's own full resource schema for those types keeps every other check
(property names, types, enums) active for them.
"""

from __future__ import annotations

import json
from pathlib import Path

import cfnlint

# Types whose regional availability data in cfn-lint lags the resource schema.
LAGGING_TYPES = ("AWS::SageMaker::Cluster",)


def write_override_schemas(directory: Path, region: str) -> Path:
    """Write the full schema of each lagging type into ``directory`` (for ``--registry-schemas``)."""
    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    providers = json.loads((schemas / "providers" / f"{region}.json").read_text())
    directory.mkdir(parents=True, exist_ok=True)
    for type_name in LAGGING_TYPES:
        schema_file = schemas / "resources" / f"{providers[type_name]}.json"
        name = type_name.lower().replace("::", "-") + ".json"
        (directory / name).write_text(schema_file.read_text())
    return directory
