"""The app's stacks: one environment, built the same way from a workstation or a pipeline Stage.

The names below load aws-cdk-lib, so they are imported on first use: ``stacks.layout`` (which
stacks a config has) stays importable without the CDK, e.g. by the tests' own helpers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stacks.environment import (
        DESTROY_CONTEXT_FLAG,
        ClusterStack,
        DataRepositoryStack,
        EgressStack,
        EnvironmentStacks,
        LifecycleStack,
        MetricsStack,
        NetworkStack,
        StorageStack,
        build_environment,
        node_settings,
    )

__all__ = [
    "DESTROY_CONTEXT_FLAG",
    "ClusterStack",
    "DataRepositoryStack",
    "EgressStack",
    "EnvironmentStacks",
    "LifecycleStack",
    "MetricsStack",
    "NetworkStack",
    "StorageStack",
    "build_environment",
    "node_settings",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from stacks import environment

        return getattr(environment, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
