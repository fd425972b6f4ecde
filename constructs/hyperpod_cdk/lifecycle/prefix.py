"""The content-hashed S3 prefix the lifecycle scripts are uploaded under, computed without the CDK.

:class:`~hyperpod_cdk.cluster.LifecycleScripts` uploads the scripts, the generated
``settings.json`` and the extra files (``users.json``) under ``lifecycle/<hash>/``: any change to
one of them gives a new prefix, which is how HyperPod picks changed scripts up. ``make
sync-users`` computes the prefix a config's synth would upload under, to compare it with the one
the deployed cluster boots from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# Files never uploaded nor hashed.
IGNORED = frozenset({"__pycache__", ".DS_Store"})
# Nor hidden files and folders (.env, .git, .aws) and key files, at any depth: every node reads
# the lifecycle bucket (docs/security.md, finding L3).
SECRET_SUFFIXES = (".pem", ".key")
# The same as glob patterns for the asset upload (CDK matches a pattern without '/' against
# every path's base name, and skips an excluded folder's contents).
UPLOAD_EXCLUDE = sorted({*IGNORED, ".*", *(f"*{suffix}" for suffix in SECRET_SUFFIXES)})


def is_uploaded(relative: Path) -> bool:
    """A file at ``relative`` (to the scripts directory) is uploaded: no part of its path is
    ignored or hidden, and it is no key file."""
    return not any(
        part in IGNORED or part.startswith(".") for part in relative.parts
    ) and not relative.name.endswith(SECRET_SUFFIXES)


# Every upload goes under this prefix, one content-hashed folder per version of the scripts.
# Nodes may read all of them: between the nodes stack's update and the cluster's, a node that
# HyperPod replaces still boots from the previous folder.
LIFECYCLE_ROOT = "lifecycle/"
# hex digits of the content hash in the folder name
PREFIX_HASH_LENGTH = 20


def lifecycle_files(directory: Path) -> list[Path]:
    """The files of ``directory`` that are uploaded, sorted."""
    return sorted(
        p for p in directory.rglob("*") if p.is_file() and is_uploaded(p.relative_to(directory))
    )


def content_hash(
    directory: Path, settings: Mapping[str, Any], extra_files: Mapping[str, str] | None = None
) -> str:
    """A digest of every file (path, mode, bytes), of the generated settings and of the
    generated extra files."""
    digest = hashlib.sha256()
    for path in lifecycle_files(directory):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(b"x" if path.stat().st_mode & 0o111 else b"-")
        digest.update(path.read_bytes() + b"\0")
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for name, content in sorted((extra_files or {}).items()):
        digest.update(b"\0extra\0" + name.encode() + b"\0" + content.encode())
    return digest.hexdigest()


def lifecycle_prefix(digest: str) -> str:
    """``lifecycle/<first 20 hex digits of the content hash>/``."""
    return f"{LIFECYCLE_ROOT}{digest[:PREFIX_HASH_LENGTH]}/"


def config_lifecycle_prefix(config: EnvironmentConfig, project_root: Path) -> str:
    """The prefix the app's synth of ``config`` uploads the scripts under: the config's
    ``cluster.lifecycle_scripts`` with its ``settings.json`` and extra files, as the app's
    lifecycle stack passes them to :class:`~hyperpod_cdk.cluster.LifecycleScripts`.

    Call after validation (the users file exists and is valid then).
    """
    from hyperpod_cdk.config.node_setup import lifecycle_extra_files
    from hyperpod_cdk.lifecycle.settings import node_settings

    digest = content_hash(
        project_root / config.cluster.lifecycle_scripts,
        node_settings(config),
        lifecycle_extra_files(config, project_root),
    )
    return lifecycle_prefix(digest)
