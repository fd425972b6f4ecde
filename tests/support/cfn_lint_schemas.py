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
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


# -- one linter per region and process ----------------------------------------------------------

_LINTERS: dict[tuple[str, bool], Any] = {}


def _linter(region: str, overrides: bool) -> Any:
    """cfn-lint's Runner for ``region`` (with the override schemas, unless ``overrides`` is
    False), made once per process: building one loads every rule, about half the time of a
    ``cfnlint.api.lint`` call, which builds a new one per template. The CLI itself lints many
    templates with one Runner, so its rules hold no state from one template to the next."""
    key = (region, overrides)
    if key not in _LINTERS:
        from cfnlint.config import ConfigMixIn
        from cfnlint.runner import Runner

        options: dict[str, Any] = {"regions": [region]}
        if overrides:
            directory = Path(tempfile.mkdtemp(prefix=f"cfn-lint-{region}-"))
            options["registry_schemas"] = [str(write_override_schemas(directory, region))]
        _LINTERS[key] = Runner(ConfigMixIn(**options))
    return _LINTERS[key]


def lint_errors(template: Mapping[str, Any], region: str, *, overrides: bool = True) -> list[str]:
    """cfn-lint's errors (rules E*) on ``template`` in ``region``, as ``cfnlint.api.lint`` finds
    them: the template is decoded from its JSON text, then linted with the registry-schema
    overrides of :data:`LAGGING_TYPES` unless ``overrides`` is False."""
    from cfnlint.decode.decode import decode_str

    decoded, errors = decode_str(json.dumps(template))
    if errors:
        return [str(m) for m in errors]
    found = _linter(region, overrides).validate_template(decoded)
    return [str(m) for m in found if m.rule.id.startswith("E")]
