"""What CloudFormation does that its resource schemas (as cfn-lint ships them) do not say: the
update notes and the deploy gate (``hyperpod_ops.template_changes``) and the data-safety tests
add these to a schema's ``createOnlyProperties``.

Pure Python: no ``aws_cdk``.
"""

from __future__ import annotations

# Create-only properties CloudFormation enforces that the FSx schema does not list: the schema
# marks only top-level properties, but UpdateFileSystem (FSx API reference) cannot change the
# deployment type, EFA or the storage type of a Lustre file system, so a change replaces it.
SUPPLEMENTARY_CREATE_ONLY: dict[str, tuple[str, ...]] = {
    "AWS::FSx::FileSystem": (
        "/properties/StorageType",
        "/properties/LustreConfiguration/DeploymentType",
        "/properties/LustreConfiguration/EfaEnabled",
    ),
}
