"""The environment config: typed models, cross-key rules and the YAML loader."""

from hyperpod_cdk.config.base import Issue
from hyperpod_cdk.config.cluster import (
    LIFECYCLE_ENTRY_SCRIPT,
    PACKAGED_SCRIPTS,
    AutoPatch,
    ClusterConfig,
    InstanceGroup,
    ScheduledUpdate,
    SlurmSettings,
    Taint,
    TieredStorageConfig,
)
from hyperpod_cdk.config.eks import EksConfig
from hyperpod_cdk.config.iam import IamConfig
from hyperpod_cdk.config.loader import (
    ConfigError,
    load_config,
    load_environment,
    parse,
    read_yaml,
    validate,
    validate_file,
)
from hyperpod_cdk.config.models import EnvironmentConfig
from hyperpod_cdk.config.network import NetworkConfig
from hyperpod_cdk.config.pipeline import PipelineConfig, PipelineFileConfig, PipelineStage
from hyperpod_cdk.config.rules import check_environment
from hyperpod_cdk.config.storage import (
    DataRepositoryAssociation,
    FsxConfig,
    OpenZfsConfig,
    StorageConfig,
)

__all__ = [
    "LIFECYCLE_ENTRY_SCRIPT",
    "PACKAGED_SCRIPTS",
    "AutoPatch",
    "ClusterConfig",
    "ConfigError",
    "DataRepositoryAssociation",
    "EksConfig",
    "EnvironmentConfig",
    "FsxConfig",
    "IamConfig",
    "InstanceGroup",
    "Issue",
    "NetworkConfig",
    "OpenZfsConfig",
    "PipelineConfig",
    "PipelineFileConfig",
    "PipelineStage",
    "ScheduledUpdate",
    "SlurmSettings",
    "StorageConfig",
    "Taint",
    "TieredStorageConfig",
    "check_environment",
    "load_config",
    "load_environment",
    "parse",
    "read_yaml",
    "validate",
    "validate_file",
]
