"""FSx data repository associations: file system paths linked to S3."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_cdk.config.storage import DataRepositoryAssociation
from hyperpod_cdk.storage.fsx_key_policy import FsxDataKeyPolicy


def _logical_name(path: str) -> str:
    words = [w for w in path.replace("_", "-").replace(".", "-").replace("/", "-").split("-") if w]
    return "".join(w[:1].upper() + w[1:] for w in words) or "Root"


class DataRepositoryAssociations(Construct):
    """One ``AWS::FSx::DataRepositoryAssociation`` per configured association.

    FSx processes associations one at a time (minutes each), so keep this
    construct where nothing waits for it: the HyperPod cluster does not need
    the associations to boot. Each association is named after its file system
    path, so adding or removing one leaves the others untouched.

    :param file_system_id: the Lustre file system: a created one's
        ``handle.file_system_id`` or an existing one's id.
    :param associations: the ``storage.fsx.data_repository_associations``.
    :param data_bucket: the bucket that ``s3_prefix`` entries point into (a
        :class:`DataBucket`'s or any existing ``s3.IBucket``); needed only when
        an association uses ``s3_prefix`` (``s3_uri`` entries name their bucket).
        When it is encrypted with a KMS key of this app (a :class:`DataBucket`'s), an
        :class:`FsxDataKeyPolicy` adds the file system's FSx S3 service-linked role to the key's
        policy once the associations exist (:attr:`key_policy`).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        file_system_id: str,
        associations: Sequence[DataRepositoryAssociation],
        data_bucket: s3.IBucket | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.resources: list[fsx.CfnDataRepositoryAssociation] = []
        self.key_policy: FsxDataKeyPolicy | None = None
        for dra in associations:
            if dra.s3_prefix is not None:
                if data_bucket is None:
                    raise ValueError(f"{dra.file_system_path}: s3_prefix needs the data bucket")
                repository = f"s3://{data_bucket.bucket_name}/{dra.s3_prefix}"
            else:
                assert dra.s3_uri is not None
                repository = dra.s3_uri
            s3_config = fsx.CfnDataRepositoryAssociation.S3Property(
                auto_import_policy=(
                    fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                        events=list(dra.auto_import)
                    )
                    if dra.auto_import
                    else None
                ),
                auto_export_policy=(
                    fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                        events=list(dra.auto_export)
                    )
                    if dra.auto_export
                    else None
                ),
            )
            self.resources.append(
                fsx.CfnDataRepositoryAssociation(
                    self,
                    _logical_name(dra.file_system_path),
                    file_system_id=file_system_id,
                    file_system_path=dra.file_system_path,
                    data_repository_path=repository,
                    batch_import_meta_data_on_create=dra.import_metadata_on_create,
                    s3=s3_config,
                )
            )
        key = data_bucket.encryption_key if data_bucket is not None else None
        if isinstance(key, kms.Key) and any(d.s3_prefix is not None for d in associations):
            self.key_policy = FsxDataKeyPolicy(
                self,
                "DataKeyPolicy",
                key=key,
                file_system_id=file_system_id,
                depends_on=self.resources,
            )
