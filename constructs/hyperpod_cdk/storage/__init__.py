"""Shared storage: the data bucket, FSx for Lustre and its data repository associations, FSx for
OpenZFS for the home directories."""

from hyperpod_cdk.storage.data_bucket import DataBucket, access_log_bucket, secure_bucket_props
from hyperpod_cdk.storage.data_repository import DataRepositoryAssociations
from hyperpod_cdk.storage.file_system import FileSystemHandle, LustreFileSystem
from hyperpod_cdk.storage.openzfs import OpenZfsFileSystem, OpenZfsHandle

__all__ = [
    "DataBucket",
    "DataRepositoryAssociations",
    "access_log_bucket",
    "FileSystemHandle",
    "LustreFileSystem",
    "OpenZfsFileSystem",
    "OpenZfsHandle",
    "secure_bucket_props",
]
