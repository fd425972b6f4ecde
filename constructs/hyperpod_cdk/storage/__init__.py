"""Shared storage: the data bucket, FSx for Lustre and its data repository associations."""

from hyperpod_cdk.storage.data_bucket import DataBucket, access_log_bucket, secure_bucket_props
from hyperpod_cdk.storage.data_repository import DataRepositoryAssociations
from hyperpod_cdk.storage.file_system import FileSystemHandle, LustreFileSystem

__all__ = [
    "DataBucket",
    "DataRepositoryAssociations",
    "access_log_bucket",
    "FileSystemHandle",
    "LustreFileSystem",
    "secure_bucket_props",
]
