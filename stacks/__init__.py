"""The app's stacks: one environment, built the same way from a workstation or a pipeline Stage."""

from stacks.environment import (
    DESTROY_CONTEXT_FLAG,
    ClusterStack,
    DataRepositoryStack,
    EgressStack,
    EnvironmentStacks,
    LifecycleStack,
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
    "NetworkStack",
    "StorageStack",
    "build_environment",
    "node_settings",
]
