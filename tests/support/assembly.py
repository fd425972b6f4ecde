"""Reading what a synthesized cloud assembly records beside the templates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def acknowledgments(outdir: Path, artifact_id: str) -> Iterator[tuple[str, str, str]]:
    """``(construct path, finding id, reason)`` of every acknowledged finding of one stack
    artifact, read from the assembly (jsii cannot pass every metadata entry back)."""
    import aws_cdk as cdk

    key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    manifest = json.loads((outdir / "manifest.json").read_text())
    artifact = manifest["artifacts"][artifact_id]
    metadata = dict(artifact.get("metadata", {}))
    if "additionalMetadataFile" in artifact:
        metadata.update(json.loads((outdir / artifact["additionalMetadataFile"]).read_text()))
    for path, entries in metadata.items():
        for entry in entries:
            if entry["type"] == key:
                for finding, reason in entry["data"].items():
                    yield path, finding.removeprefix("Annotation::"), reason
