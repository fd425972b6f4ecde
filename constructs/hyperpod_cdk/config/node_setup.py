"""The ``cluster.node_setup`` section: what the lifecycle scripts do on each node.

HyperPod sets a node up itself (Slurm from the API-driven configuration, the
FSx mount); the lifecycle scripts in ``lifecycle_assets/`` verify that and add
the steps switched on here. The switches reach the node through the generated
``settings.json`` (``node_settings`` in ``stacks/environment.py``), so the
scripts hold no environment-specific value.

The optional users file (YAML, relative to the project root) is validated here
and shipped to the node as ``users.json`` beside the scripts. Directory users
(``directory``: SSSD against LDAP or Active Directory over TLS) reach the node
as settings without secrets: the node reads the bind password and the CA
certificate from Secrets Manager at boot.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ModelWrapValidatorHandler,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from hyperpod_cdk import facts
from hyperpod_cdk.config.base import (
    WHOLE_NUMBER,
    IssueSink,
    StrictModel,
    dotted,
    eks_only,
    matching,
    slurm_only,
)
from hyperpod_cdk.config.storage import shared_homes_directory

if TYPE_CHECKING:
    from hyperpod_cdk.config.models import EnvironmentConfig

# The name of the users file beside the scripts on the node (lifecycle_assets/lib/users.sh reads it).
USERS_FILE_ON_NODE = "users.json"

# Debian/Ubuntu give normal users UIDs 1000-59999 (adduser.conf FIRST_UID/LAST_UID). The AMI and
# its agents take the low ones (1000 `ubuntu`; the SSM agent makes `ssm-user`, often 1001, on the
# first session): AWS recommends 2000 and up for cluster users (HYPERPOD_FACTS, 2026-11-24). The
# users file's groups share the range (a user's own group has GID = UID).
MIN_UID = 2000
MAX_UID = 59999
# Groups the HyperPod AMIs have from their distribution packages, with system GIDs (docker 999 on
# the Ubuntu AMIs): a user may join them without declaring them (a declared GID would clash).
AMI_GROUPS = frozenset({"adm", "docker", "render", "sudo", "systemd-journal", "video"})
# Accounts and groups every Debian/Ubuntu system has from base-passwd (passwd.master and
# group.master of base-passwd 3.6.1 (Debian 12), gnats from 3.5.52 (Ubuntu 22.04)).
BASE_PASSWD_USERS = frozenset({
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy",
    "www-data", "backup", "list", "irc", "gnats", "_apt", "nobody",
})  # fmt: skip
BASE_PASSWD_GROUPS = frozenset({
    "root", "daemon", "bin", "sys", "adm", "tty", "disk", "lp", "mail", "news", "uucp", "man",
    "proxy", "kmem", "dialout", "fax", "voice", "cdrom", "floppy", "tape", "sudo", "audio", "dip",
    "www-data", "backup", "operator", "list", "irc", "src", "gnats", "shadow", "utmp", "video",
    "sasl", "plugdev", "staff", "games", "users", "nogroup",
})  # fmt: skip
# System accounts and groups the packages of the HyperPod Ubuntu AMIs make (systemd, sshd, the
# SSM and EC2 agents, Slurm, munge, Docker): inferred from the Ubuntu 22.04 packages' maintainer
# scripts, not from a published list of the AMI (docs/security.md).
AMI_SYSTEM_NAMES = frozenset({
    "ubuntu", "slurm", "munge", "admin", "ssm-user", "sshd", "_ssh", "ssh", "messagebus",
    "syslog", "systemd-network", "systemd-resolve", "systemd-timesync", "systemd-coredump",
    "systemd-journal", "tss", "uuidd", "tcpdump", "landscape", "pollinate", "fwupd-refresh",
    "usbmux", "lxd", "dnsmasq", "_chrony", "chrony", "ec2-instance-connect", "_rpc", "statd",
    "polkitd", "input", "kvm", "render", "sgx", "netdev", "crontab", "docker", "rdma",
})  # fmt: skip
# Names a users file must not take for a user (whose own group has its name too) or a group.
RESERVED_USER_NAMES = BASE_PASSWD_USERS | BASE_PASSWD_GROUPS | AMI_SYSTEM_NAMES
# useradd's default NAME_REGEX on Debian/Ubuntu (adduser.conf), at most 32 characters.
USER_NAME_PATTERN = r"^[a-z_][a-z0-9_-]{0,31}$"
# An OpenSSH public key line: type, base64 body, optional comment.
SSH_PUBLIC_KEY_PATTERN = (
    r"^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)"
    r"@openssh\.com) [A-Za-z0-9+/=]+( [^\n]*)?$"
)
# A container image pinned by tag or digest: registry/path:tag or registry/path@sha256:...
IMAGE_PATTERN = (
    r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9._-]{1,128}|@sha256:[0-9a-f]{64})$"
)
# A private Amazon ECR registry: <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]
_ECR_HOST = re.compile(
    r"^(?P<account>[0-9]{12})\.dkr\.ecr(-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$"
)
# The exporters that run a container image (the EFA exporter ships with the scripts).
IMAGE_EXPORTERS = ("node", "dcgm")

Port = Annotated[int, Field(ge=1024, le=65535), WHOLE_NUMBER]
UserName = Annotated[str, StringConstraints(pattern=USER_NAME_PATTERN)]


def _yaml_off(value: Any) -> Any:
    """YAML 1.1 reads an unquoted ``off`` as false: take it as the word it shows."""
    return "off" if value is False else value


PinnedImage = Annotated[
    str,
    matching(
        IMAGE_PATTERN,
        "a container image pinned by tag or digest, like registry/path/name:1.2.3",
        max_length=512,
    ),
]


class Exporters(StrictModel):
    """Prometheus exporters on the nodes, each off by default.

    The node and DCGM exporters run HyperPod's own images from the Amazon ECR
    registry of the region (the ones AWS's observability extension runs; in a
    closed network the ECR endpoints reach them), or a pinned image named
    here. The nodes log in, pull them while the lifecycle script runs (a
    failed pull fails the node) and run them as systemd units. The EFA
    exporter ships with the lifecycle scripts (Python standard library only).

    They are local only: each listens on its port on the node and nothing
    collects it (scrape the nodes from your own Prometheus in the VPC). To
    collect metrics into Amazon Managed Prometheus, set `observability.enabled`
    instead (HyperPod's sagemaker-observability extension, Continuous
    provisioning): the two together are a config error (same ports, same metrics).
    """

    node: bool = Field(
        default=False,
        description="Local only: node exporter (HyperPod's node_exporter image) on every Slurm "
        "node.",
    )
    dcgm: bool = Field(
        default=False,
        description="Local only: NVIDIA DCGM exporter (GPU metrics, HyperPod's dcgm_exporter "
        "image) on GPU nodes.",
    )
    efa: bool = Field(
        default=False,
        description="Local only: EFA exporter (the counters under /sys/class/infiniband) on nodes "
        "with EFA devices.",
    )
    node_port: Port = Field(default=9100, description="Port of the node exporter.")
    dcgm_port: Port = Field(default=9400, description="Port of the DCGM exporter.")
    efa_port: Port = Field(default=9109, description="Port of the EFA exporter.")
    node_image: PinnedImage | None = Field(
        default=None,
        description="Node exporter image, pinned by tag or digest (the 'latest' tag is refused); "
        "null: HyperPod's <registry of the region>/hyperpod/node_exporter:v1.9.1. In a closed "
        "network only a private Amazon ECR image of the cluster's region.",
    )
    dcgm_image: PinnedImage | None = Field(
        default=None,
        description="DCGM exporter image, pinned by tag or digest (the 'latest' tag is refused); "
        "null: HyperPod's <registry of the region>/hyperpod/dcgm_exporter:4.1.1-4.0.4-ubi9. In a "
        "closed network only a private Amazon ECR image of the cluster's region.",
    )

    @field_validator("node_image", "dcgm_image")
    @classmethod
    def _pinned(cls, value: str | None) -> str | None:
        if value is not None and value.endswith(":latest"):
            raise ValueError(f"{value!r} is not pinned; name a version tag or a sha256 digest")
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> Exporters:
        seen: dict[int, str] = {}
        for name in ("node_port", "dcgm_port", "efa_port"):
            port = getattr(self, name)
            if port in seen:
                raise ValueError(
                    f"{name} {port} is also {seen[port]}; give each exporter its own port"
                )
            seen[port] = name
        return self

    def image(self, exporter: str, region: str) -> ExporterImage | None:
        """The image ``exporter`` (``node`` or ``dcgm``) runs in ``region``: the one configured,
        else HyperPod's; None when neither is known (a config error while the exporter is on)."""
        configured: str | None = getattr(self, f"{exporter}_image")
        uri = configured or facts.hyperpod_exporter_image(exporter, region)
        return None if uri is None else ExporterImage(exporter, uri, hyperpod=configured is None)


@dataclass(frozen=True)
class ExporterImage:
    """The container image of an exporter, as the nodes pull it.

    :param exporter: ``node`` or ``dcgm``.
    :param uri: ``registry/repository:tag`` or ``registry/repository@sha256:...``.
    :param hyperpod: HyperPod's regional image (``exporters.<exporter>_image`` left null).
    """

    exporter: str
    uri: str
    hyperpod: bool

    @property
    def key(self) -> str:
        """The config key that names the image, under ``cluster.node_setup``."""
        return f"exporters.{self.exporter}_image"

    @property
    def registry(self) -> str:
        """The registry host: ``602401143452.dkr.ecr.us-west-2.amazonaws.com``."""
        return self.uri.split("/", 1)[0]

    @property
    def repository(self) -> str:
        """The repository inside the registry: ``hyperpod/node_exporter``."""
        rest = self.uri.split("/", 1)[1]
        return rest.split("@", 1)[0] if "@" in rest else rest.rsplit(":", 1)[0]

    @property
    def reference(self) -> dict[str, str]:
        """The image inside the repository, as ECR's ImageIdentifier: ``{"imageTag": ...}`` or
        ``{"imageDigest": ...}``."""
        if "@" in self.uri:
            return {"imageDigest": self.uri.split("@", 1)[1]}
        return {"imageTag": self.uri.rsplit(":", 1)[1]}

    @property
    def ecr_account(self) -> str | None:
        """The account of a private Amazon ECR registry (None for any other registry)."""
        match = _ECR_HOST.match(self.registry)
        return match["account"] if match else None

    @property
    def ecr_region(self) -> str | None:
        """The region of a private Amazon ECR registry: where the node logs in (None for any other
        registry, which needs no login)."""
        match = _ECR_HOST.match(self.registry)
        return match["region"] if match else None

    def repository_arn(self) -> str | None:
        """The ARN of the ECR repository (IAM grants its pull); None for another registry."""
        if self.ecr_account is None or self.ecr_region is None:
            return None
        region = self.ecr_region
        partition = (
            "aws-cn" if region.startswith("cn-") else "aws-us-gov" if "-gov-" in region else "aws"
        )
        return f"arn:{partition}:ecr:{region}:{self.ecr_account}:repository/{self.repository}"


def exporter_images(config: EnvironmentConfig) -> list[ExporterImage]:
    """The images of the exporters that are on (node, then DCGM) and whose image is known: what
    the nodes pull, the execution role may read and ``make preflight`` checks. Empty on EKS."""
    if not config.is_slurm:
        return []
    exporters = config.cluster.node_setup.exporters
    images = [
        exporters.image(exporter, config.region)
        for exporter in IMAGE_EXPORTERS
        if getattr(exporters, exporter)
    ]
    return [image for image in images if image is not None]


# -- directory users (SSSD) --------------------------------------------------------------------

# A group name in sssd.conf's simple_allow_groups (a comma-separated list) and in a sudoers rule:
# no commas, quotes or backslashes, single spaces between words (AD names like "Domain Admins").
DIRECTORY_GROUP_PATTERN = r"^[A-Za-z0-9._@$-]+( [A-Za-z0-9._@$-]+)*$"
# A distinguished name on one line: attribute=value pairs (dc=example,dc=com).
DN_PATTERN = r"^[A-Za-z][A-Za-z0-9-]*=[^\n\r]*[^\s]$"
# A Secrets Manager secret ARN. IAM grants the exact ARN, which ends in the 6 characters
# Secrets Manager appends to the name (Secrets Manager user guide, "Secret ARN").
SECRET_ARN_PATTERN = (
    r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$"
)
_SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")
_LDAPS_URI = re.compile(r"^ldaps://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?/?$")
# keys that would put the bind password itself in the YAML (and so in git, the template and S3)
_INLINE_PASSWORD_KEYS = ("bind_password", "password", "ldap_default_authtok")

DirectoryGroup = Annotated[
    str,
    matching(
        DIRECTORY_GROUP_PATTERN,
        "a group name: letters, digits and . _ - @ $, single spaces between words (no commas)",
        max_length=256,
    ),
]
DistinguishedName = Annotated[
    str,
    matching(
        DN_PATTERN, "a distinguished name on one line, like dc=example,dc=com", max_length=1024
    ),
]
SecretArn = Annotated[
    str,
    matching(
        SECRET_ARN_PATTERN,
        "a Secrets Manager secret ARN like "
        "arn:aws:secretsmanager:us-west-2:111122223333:secret:name-AbCdEf",
        max_length=2048,
    ),
]


def _complete_secret_arn(value: str) -> str:
    if not _SECRET_SUFFIX.search(value):
        raise ValueError(
            f"{value!r} lacks the 6-character suffix Secrets Manager adds to the name "
            "(...:secret:name-AbCdEf); the nodes' role may read this exact ARN only: copy it from "
            "`aws secretsmanager describe-secret --secret-id NAME --query ARN`"
        )
    return value


class DirectoryAllowedGroups(StrictModel):
    """Directory groups whose members may log in, per Slurm node type. A node type left empty
    lets no directory user log in (SSSD ``access_provider = deny``); the users still resolve
    there, so Slurm jobs run as them on compute nodes."""

    controller: list[DirectoryGroup] = Field(
        default_factory=list, description="Groups that may log in to the controller."
    )
    login: list[DirectoryGroup] = Field(
        default_factory=list, description="Groups that may log in to the login nodes."
    )
    compute: list[DirectoryGroup] = Field(
        default_factory=list,
        description="Groups that may log in to compute nodes (with pam_slurm_adopt: only to "
        "nodes running one of their jobs).",
    )


class Directory(StrictModel):
    """Users and groups from an LDAP or Active Directory server, through SSSD over
    TLS (``ldaps://``). The nodes read the bind password and the CA certificate from Secrets
    Manager at boot with their execution role (which may read those two secrets only);
    nothing secret is in the YAML, the templates or S3. Homes follow
    ``home_on_shared_storage``."""

    uri: str = Field(
        description="LDAP over TLS: ldaps://host[:port], or several, comma-separated (failover). "
        "Plain ldap:// is refused: it sends the passwords unencrypted."
    )
    search_base: DistinguishedName = Field(
        description="Base DN of the user and group searches, e.g. dc=example,dc=com."
    )
    bind_dn: DistinguishedName = Field(
        description="DN SSSD binds as to search the directory (a read-only service account), e.g. "
        "cn=hyperpod-bind,ou=service,dc=example,dc=com."
    )
    bind_password_secret_arn: Annotated[SecretArn, AfterValidator(_complete_secret_arn)] = Field(
        description="Secrets Manager secret (full ARN, same region) whose SecretString is the bind "
        "password, as plain text."
    )
    ca_certificate_secret_arn: Annotated[SecretArn, AfterValidator(_complete_secret_arn)] = Field(
        description="Secrets Manager secret (full ARN, same region) whose SecretString is the PEM "
        "certificate of the CA that signed the server's certificate (verified: "
        "ldap_tls_reqcert demand)."
    )
    ldap_schema: Literal["ad", "rfc2307bis", "rfc2307"] = Field(
        default="ad",
        description="Directory schema: ad (Active Directory: sAMAccountName, UIDs and GIDs mapped "
        "from the SIDs, the same on every node), rfc2307bis or rfc2307 (OpenLDAP and others: "
        "uidNumber and gidNumber from the directory).",
    )
    allowed_groups: DirectoryAllowedGroups = Field(
        default_factory=DirectoryAllowedGroups,
        description="Groups whose members may log in, per node type: {controller, login, compute}.",
    )
    sudo_groups: list[DirectoryGroup] = Field(
        default_factory=list,
        description="Groups whose members may use sudo (with their password) on every node "
        "(/etc/sudoers.d/hyperpod-directory).",
    )
    ssh_public_key_attribute: (
        Annotated[str, matching(r"^[A-Za-z][A-Za-z0-9-]*$", "an LDAP attribute name")] | None
    ) = Field(
        default=None,
        description="LDAP attribute holding the users' SSH public keys (sshPublicKey with the "
        "openssh-lpk schema; altSecurityIdentities on AD): sshd asks SSSD for them. Null: keys "
        "in the users' authorized_keys only.",
    )

    @field_validator("uri")
    @classmethod
    def _ldaps_only(cls, value: str) -> str:
        uris = [part.strip() for part in value.split(",")]
        for uri in uris:
            if uri.lower().startswith("ldap://"):
                raise ValueError(
                    f"{uri!r} is plain LDAP: the bind password and every user's password would "
                    "cross the network unencrypted; use ldaps://host (LDAP over TLS, port 636)"
                )
            if not _LDAPS_URI.match(uri):
                raise ValueError(
                    f"{uri!r} is not valid; use ldaps://host[:port] (several comma-separated)"
                )
        return ",".join(uris)

    @model_validator(mode="wrap")
    @classmethod
    def _no_inline_password(
        cls, data: Any, handler: ModelWrapValidatorHandler[Directory]
    ) -> Directory:
        """An inline password key is an error at its own path (not an "unknown key"), reported
        with every other problem of the section."""
        inline = [k for k in _INLINE_PASSWORD_KEYS if isinstance(data, dict) and k in data]
        if not inline:
            return handler(data)
        errors = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "value_error",
                    "an inline password would sit in the YAML, the synthesized templates and S3; "
                    "store it in Secrets Manager (SecretString: the password) and give "
                    "bind_password_secret_arn instead",
                ),
                loc=(key,),
                input="(hidden)",
            )
            for key in inline
        ]
        try:
            handler({k: v for k, v in data.items() if k not in inline})
        except ValidationError as exc:
            errors += [
                InitErrorDetails(type=e["type"], loc=e["loc"], input=e["input"], ctx=e["ctx"])
                if "ctx" in e
                else InitErrorDetails(type=e["type"], loc=e["loc"], input=e["input"])
                for e in exc.errors()
            ]
        raise ValidationError.from_exception_data(cls.__name__, errors)


class NodeSetup(StrictModel):
    """What the lifecycle scripts do on each node, on top of HyperPod's own setup.

    HyperPod configures Slurm (and slurmdbd with the accounting database) and
    mounts FSx; the scripts wait for and verify that, then run the steps below.
    """

    users_file: (
        Annotated[
            str,
            matching(
                r"^[A-Za-z0-9._][A-Za-z0-9._/-]*$",
                "a path relative to the project root, like users.yaml",
                max_length=1024,
            ),
        ]
        | None
    ) = Field(
        default=None,
        description="A YAML file (relative to the project root) of users to create on "
        "every node: {groups: [{name, gid}], users: [{name, uid, groups, ssh_public_keys, "
        "account}]} (docs/operations.md, Lifecycle logs).",
        json_schema_extra=slurm_only(),
    )
    home_on_shared_storage: bool = Field(
        default=True,
        description="Home directories of the users file on FSx (<mount_path>/home/<name>); "
        "else local /home.",
        json_schema_extra=slurm_only(),
    )
    ssh_keys_between_nodes: bool = Field(
        default=True,
        description="A key pair per user of the users file in the shared home, "
        "authorized for logins between the nodes.",
        json_schema_extra=slurm_only(),
    )
    container_runtime_on_nvme: bool = Field(
        default=True,
        description="Docker data on the local NVMe (/opt/dlami/nvme), else on the "
        "group's EBS volume (/opt/sagemaker), on login and compute nodes.",
        json_schema_extra=slurm_only(),
    )
    nvidia_container_toolkit: bool = Field(
        default=True,
        description="On GPU nodes, check the NVIDIA container toolkit the AMI ships "
        "and register its runtime with Docker.",
        json_schema_extra=slurm_only(),
    )
    enroot_pyxis: bool = Field(
        default=True,
        description="Check that enroot and pyxis (shipped by the HyperPod AMI) are "
        "installed and pyxis is registered with Slurm; the scripts never download them.",
        json_schema_extra=slurm_only(),
    )
    eks_containerd_on_ebs: bool = Field(
        default=True,
        description="Containerd and kubelet data on the group's EBS volume "
        "(/opt/sagemaker) instead of the root volume.",
        json_schema_extra=eks_only(),
    )
    log_rotation: bool = Field(
        default=True,
        description="Rotate the lifecycle log (and the Slurm logs on Slurm nodes) daily.",
    )
    log_retention_days: Annotated[int, Field(ge=1, le=365), WHOLE_NUMBER] = Field(
        default=14, description="Days of rotated logs kept on the node."
    )
    fsx_mount_timeout_seconds: Annotated[int, Field(ge=30, le=3600), WHOLE_NUMBER] = Field(
        default=600,
        description="How long a node waits for the FSx mount before it fails.",
        json_schema_extra=slurm_only(),
    )
    fsx_efa_check: Annotated[Literal["off", "warn", "fail"], BeforeValidator(_yaml_off)] = Field(
        default="fail",
        description="EFA-enabled FSx: check that Lustre reaches FSx over EFA on nodes "
        "with EFA devices (one LNet NI per EFA device, and 64 MiB of direct I/O moves the efa "
        "counters; a silent fallback to TCP is slow), at provisioning and at every boot; fail "
        "the node (the default), or only warn in the log.",
        json_schema_extra=slurm_only(),
    )
    exporters: Exporters = Field(
        default_factory=Exporters,
        description="Prometheus exporters on the nodes.",
        json_schema_extra=slurm_only(),
    )
    directory: Directory | None = Field(
        default=None,
        description="Directory users through SSSD against LDAP or Active Directory "
        "over TLS (docs/operations.md, Directory users); null: local users only.",
        json_schema_extra=slurm_only(),
    )
    restrict_imds: bool = Field(
        default=True,
        description="The users' UIDs (2000 and up: the users file and directory "
        "users) cannot reach the instance metadata service (an iptables owner match, as AWS "
        "ParallelCluster's Imds: Secured), so a user or a job cannot take the node role's "
        "credentials; root, the Slurm daemons and the system accounts keep it "
        "(docs/security.md). false: every local user may use the node role.",
        json_schema_extra=slurm_only(),
    )
    pam_slurm_adopt: bool = Field(
        default=False,
        description="Compute nodes: sshd admits a user only to nodes running one of "
        "their jobs, into that job (pam_slurm_adopt, which must be on the node). Never on "
        "controller or login nodes: it locks users out there.",
        json_schema_extra=slurm_only(),
    )

    @field_validator("users_file")
    @classmethod
    def _inside_the_project(cls, value: str | None) -> str | None:
        if value is not None and ".." in value.split("/"):
            raise ValueError(f"{value!r} must stay inside the project (no '..' parts)")
        return value

    def directory_secret_arns(self, slurm: bool) -> list[str]:
        """The secrets the nodes read at boot for directory users (the bind password and the CA
        certificate); none without a directory or on EKS."""
        if not slurm or self.directory is None:
            return []
        return [self.directory.bind_password_secret_arn, self.directory.ca_certificate_secret_arn]


# -- the users file ---------------------------------------------------------------------------


def _cluster_id(kind: str) -> Any:
    """A UID or GID of the users file: 2000-59999, with the way to renumber below the range."""

    def check(value: int) -> int:
        if value < MIN_UID:
            raise ValueError(
                f"{value} is below {MIN_UID}: the AMI and the SSM agent (ssm-user) take IDs below "
                f"it, so a node may already have {value}; renumber from {MIN_UID} up, and on a "
                "running cluster then give the existing homes on the shared file system to the new "
                f"ID (chown -R NEW:NEW <mount>/home/NAME)"
            )
        if value > MAX_UID:
            raise ValueError(f"{value} is above {MAX_UID}, the last {kind} of a normal account")
        return value

    return AfterValidator(check)


class NodeGroup(StrictModel):
    """A group created on every Slurm node with the same GID (for shared file permissions)."""

    name: UserName = Field(description="Group name (the same rule as user names).")
    gid: Annotated[int, WHOLE_NUMBER, _cluster_id("GID")] = Field(
        description=f"GID, {MIN_UID}-{MAX_UID}, not the UID of any user (their own group's GID)."
    )

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        # the AMI's groups users may join have their own message (UsersFile.problems)
        if value in RESERVED_USER_NAMES and value not in AMI_GROUPS:
            raise ValueError(
                f"{value!r} is a group of the AMI or the system (base-passwd); choose another name"
            )
        return value


class NodeUser(StrictModel):
    """One user created on every Slurm node (same name and UID everywhere)."""

    name: UserName = Field(description="Login name (useradd's default name rule).")
    uid: Annotated[int, WHOLE_NUMBER, _cluster_id("UID")] = Field(
        description=f"UID, {MIN_UID}-{MAX_UID}; also the GID of the user's own group."
    )
    groups: list[UserName] = Field(
        default_factory=list,
        description="Supplementary groups: declared under groups (with a GID), or a group of the "
        f"AMI ({', '.join(sorted(AMI_GROUPS))}).",
    )
    account: UserName | None = Field(
        default=None,
        description="Slurm account of the user (with the accounting database); default: the "
        "user's name.",
    )
    ssh_public_keys: list[Annotated[str, StringConstraints(pattern=SSH_PUBLIC_KEY_PATTERN)]] = (
        Field(
            default_factory=list, description="OpenSSH public keys allowed to log in as this user."
        )
    )

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_USER_NAMES:
            raise ValueError(
                f"{value!r} is an account or group of the AMI or the system (base-passwd); "
                "choose another name"
            )
        return value


class UsersFile(StrictModel):
    """The users file: ``groups: [...]`` (with GIDs) and ``users: [...]``."""

    groups: list[NodeGroup] = Field(default_factory=list)
    users: list[NodeUser] = Field(default_factory=list)

    def problems(self) -> list[str]:
        """What would clash on a node, one line each with its path in the file: a name or an ID
        given twice, a group that takes a user's name or own-group GID, a group nobody declared."""
        found: list[str] = []
        owners: dict[tuple[str, Any], str] = {}

        def claim(kind: str, value: Any, path: str, what: str) -> None:
            owner = owners.get((kind, value))
            if owner is None:
                owners[kind, value] = path
                return
            why = ""
            if owner.startswith("users") != path.startswith("users"):
                why = " (each user has a group of its own name with GID = UID)"
            found.append(f"{path}: {what} {value!r} is taken by {owner}{why}")

        # a user's own group has the user's name and GID = UID: users and groups share both
        for index, user in enumerate(self.users):
            claim("name", user.name, f"users[{index}].name", "name")
            claim("id", user.uid, f"users[{index}].uid", "UID")
        for index, group in enumerate(self.groups):
            claim("name", group.name, f"groups[{index}].name", "name")
            claim("id", group.gid, f"groups[{index}].gid", "GID")
            if group.name in AMI_GROUPS:
                found.append(
                    f"groups[{index}].name: {group.name!r} is a group of the AMI, with the GID its "
                    "package gave it: do not declare it, list it in the users' groups"
                )
        declared = {group.name for group in self.groups}
        for index, user in enumerate(self.users):
            for position, name in enumerate(user.groups):
                if name not in declared and name not in AMI_GROUPS:
                    found.append(
                        f"users[{index}].groups[{position}]: {name!r} is not declared under "
                        "groups (add it with its GID, the same on every node) and is no group "
                        f"of the AMI ({', '.join(sorted(AMI_GROUPS))})"
                    )
        return found


# what a pattern mismatch in the users file means, in words (pydantic prints the regex)
_PATTERN_WORDS = {
    USER_NAME_PATTERN: "1-32 lowercase letters, digits, _ and -, starting with a letter or _",
    SSH_PUBLIC_KEY_PATTERN: "one OpenSSH public key line: its type (ssh-ed25519, ssh-rsa, "
    "ecdsa-sha2-nistp256, ...), the base64 key and an optional comment",
}


class UsersFileError(ValueError):
    """An unreadable or invalid users file: one line per problem in :attr:`problems`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def _in_words(error: Any) -> str:
    pattern = (error.get("ctx") or {}).get("pattern")
    if error.get("type") == "string_pattern_mismatch" and pattern in _PATTERN_WORDS:
        return f"{error.get('input')!r} is not valid; use {_PATTERN_WORDS[pattern]}"
    return str(error["msg"]).removeprefix("Value error, ")


def read_users_file(path: Path) -> UsersFile:
    """The users in ``path``; UsersFileError with one problem per line (key paths inside the
    file, each in words)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
        data = yaml.safe_load(text)
    except OSError as exc:
        raise UsersFileError([f"cannot read the file: {exc.strerror}"]) from None
    except UnicodeDecodeError as exc:
        raise UsersFileError(
            [f"is not UTF-8 at byte {exc.start}; save the file as UTF-8"]
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise UsersFileError([f"not valid YAML{where}: {problem}"]) from None
    try:
        users = UsersFile.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise UsersFileError(
            [f"{dotted(e['loc']) or '(top level)'}: {_in_words(e)}" for e in exc.errors()]
        ) from None
    problems = users.problems()
    if problems:
        raise UsersFileError(problems)
    return users


def users_json(users: UsersFile) -> str:
    """The users as the node reads them (``users.json``): stable, sorted keys."""
    return json.dumps(users.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def lifecycle_extra_files(config: EnvironmentConfig, project_root: Path) -> dict[str, str]:
    """Files uploaded beside the lifecycle scripts: ``users.json`` when a users file is set.

    Call after validation (the file exists and is valid then).
    """
    setup = config.cluster.node_setup
    if not config.is_slurm or setup.users_file is None:
        return {}
    return {USERS_FILE_ON_NODE: users_json(read_users_file(project_root / setup.users_file))}


# -- cross-key rules --------------------------------------------------------------------------


_PATH = "cluster.node_setup"
# Instance families with NVIDIA GPUs (ml.p*, ml.g*); Trainium/Inferentia have none.
_GPU_FAMILY_PREFIXES = ("p", "g")


def _family(instance_type: str) -> str:
    """``ml.p5.48xlarge`` -> ``p5``."""
    parts = instance_type.split(".")
    return parts[1] if len(parts) > 2 else ""


def check_node_setup(cfg: EnvironmentConfig, project_root: Path | None, out: IssueSink) -> None:
    """Cross-key problems of ``cluster.node_setup`` (errors and warnings) into ``out``."""
    setup = cfg.cluster.node_setup
    orchestrator = cfg.orchestrator
    # the keys of the other orchestrator: check_orchestrator_scope
    _check_directory(cfg, out)
    if not cfg.is_slurm:
        _check_eks_volumes(cfg, out)
        return

    if setup.users_file is not None and project_root is not None:
        path = project_root / setup.users_file
        if not path.is_file():
            out.error(
                f"{_PATH}.users_file",
                f"{setup.users_file!r} is not a file under {project_root}; give a path relative "
                "to the project root, or null",
            )
        else:
            try:
                read_users_file(path)
            except UsersFileError as exc:
                for problem in exc.problems:
                    out.error(f"{_PATH}.users_file", f"{setup.users_file}: {problem}")

    shared_homes = shared_homes_directory(cfg) is not None
    if setup.is_set("home_on_shared_storage") and setup.home_on_shared_storage and not shared_homes:
        out.warn(
            f"{_PATH}.home_on_shared_storage",
            "storage.fsx is disabled and there is no storage.openzfs: home directories stay on "
            "each node's local /home",
        )
    if setup.users_file is not None and setup.ssh_keys_between_nodes and not shared_homes:
        out.warn(
            f"{_PATH}.ssh_keys_between_nodes",
            "keys between nodes need home directories on shared storage (storage.fsx enabled or "
            "storage.openzfs, and home_on_shared_storage: true); no keys are generated",
        )

    exporters = setup.exporters
    types = [t for g in cfg.cluster.instance_groups for t in g.all_instance_types]
    if exporters.dcgm and not any(_family(t).startswith(_GPU_FAMILY_PREFIXES) for t in types):
        out.warn(
            f"{_PATH}.exporters.dcgm",
            "no instance group has NVIDIA GPUs (ml.p*, ml.g*): the DCGM exporter runs nowhere",
        )
    _check_exporter_images(cfg, out)
    accelerated = facts.ACCELERATED_FAMILY_PREFIXES
    if exporters.efa and not any(_family(t).startswith(accelerated) for t in types):
        out.warn(
            f"{_PATH}.exporters.efa",
            "no instance group is an accelerated type with EFA (ml.p*, ml.g*, ml.trn*): the EFA "
            "exporter runs nowhere",
        )
    if (
        setup.is_set("fsx_efa_check")
        and setup.fsx_efa_check != "off"
        and not cfg.storage.fsx.efa_enabled
    ):
        out.warn(
            f"{_PATH}.fsx_efa_check",
            f"storage.fsx.efa_enabled is false ({orchestrator}): there is no EFA transport to check",
        )


def _check_exporter_images(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """Each exporter that is on has an image: HyperPod's in a region the facts table knows, or
    one named; a closed network pulls only from private Amazon ECR of the cluster's region."""
    exporters = cfg.cluster.node_setup.exporters
    for exporter in IMAGE_EXPORTERS:
        if not getattr(exporters, exporter):
            continue
        path = f"{_PATH}.exporters.{exporter}_image"
        image = exporters.image(exporter, cfg.region)
        if image is None:
            repository, tag = facts.HYPERPOD_EXPORTER_IMAGES[exporter]
            known = facts.hyperpod_exporter_image(exporter, "us-west-2")
            out.error(
                path,
                f"not set, and HyperPod's {repository}:{tag} has no registry this app knows in "
                f"{cfg.region} (the table of {facts.HYPERPOD_EXPORTER_REGISTRY_ACCOUNTS_AS_OF}); "
                f"copy it (e.g. {known}) into a private Amazon ECR repository of {cfg.region} and "
                f"set {exporter}_image to it, or switch exporters.{exporter} off",
            )
            continue
        if image.hyperpod or not cfg.network.closed_network:
            continue
        # no NAT, no internet gateway: only AWS services behind the VPC endpoints (S3, private
        # Amazon ECR of the region) are reachable from the nodes
        if image.ecr_region != cfg.region:
            where = f"Amazon ECR of {image.ecr_region}" if image.ecr_region else f"{image.registry}"
            out.error(
                path,
                f"a closed network (network.closed_network: true) reaches no image in {where}; "
                f"copy {image.uri} into a private Amazon ECR repository of {cfg.region} and name "
                "it here, or set it to null (HyperPod's image of the region, reached through the "
                "ECR endpoints)",
            )


def _check_directory(cfg: EnvironmentConfig, out: IssueSink) -> None:
    """``directory``: the secrets in the config's region (and
    account); what a closed network needs to reach Secrets Manager and the SSSD packages."""
    setup = cfg.cluster.node_setup
    directory = setup.directory
    if not cfg.is_slurm or directory is None:
        return
    path = f"{_PATH}.directory"
    for key in ("bind_password_secret_arn", "ca_certificate_secret_arn"):
        arn = getattr(directory, key)
        _, _, _, region, account, _ = arn.split(":", 5)
        if region != cfg.region:
            # the nodes read it at boot from the cluster's region, through its endpoint
            out.error(
                f"{path}.{key}",
                f"is a secret of {region}, but the cluster runs in {cfg.region}; replicate it "
                f"(aws secretsmanager replicate-secret-to-regions --add-replica-regions "
                f"Region={cfg.region}) and give the replica's ARN",
            )
        if cfg.account is not None and account != cfg.account:
            out.error(
                f"{path}.{key}",
                f"belongs to account {account} but the key account says {cfg.account}; the "
                "nodes' execution role reads secrets of its own account: fix one of the two",
            )
    groups = directory.allowed_groups
    if not (groups.controller or groups.login or groups.compute):
        out.warn(
            f"{path}.allowed_groups",
            "names no group for any node type: directory users resolve on every node but can "
            "log in nowhere",
        )
    net = cfg.network
    if net.closed_network:
        # the secretsmanager endpoint comes with the closed network then (facts.
        # closed_network_endpoints): the nodes read the bind password and the CA at boot
        # apt-get needs the Ubuntu mirror, which a closed network cannot reach
        stock = [g.name for g in cfg.cluster.instance_groups if g.image_id is None]
        if stock:
            out.warn(
                path,
                f"groups {', '.join(stock)} boot HyperPod's image: where it lacks SSSD (sssd-ldap, "
                "libnss-sss, libpam-sss, sssd-tools) the nodes install it with apt-get, which a "
                "closed network (network.closed_network: true) cannot reach; give them an image "
                "with those packages (cluster.instance_groups[].image_id)",
            )


def _check_eks_volumes(cfg: EnvironmentConfig, out: IssueSink) -> None:
    setup = cfg.cluster.node_setup
    # only when asked for explicitly: a group without a volume is common and the node just skips
    if not (setup.is_set("eks_containerd_on_ebs") and setup.eks_containerd_on_ebs):
        return
    for i, group in enumerate(cfg.cluster.instance_groups):
        if group.ebs_volume_gb is None:
            out.warn(
                f"cluster.instance_groups[{i}].ebs_volume_gb",
                "not set: this group has no EBS volume at /opt/sagemaker, so containerd data stays "
                "on the root volume (cluster.node_setup.eks_containerd_on_ebs)",
            )
