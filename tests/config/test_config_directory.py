"""cluster.node_setup.directory (directory users through SSSD) and pam_slurm_adopt: each rule is
a config error with its dotted key path (or a warning), and what reaches the node's settings."""

from __future__ import annotations

from typing import Any

import pytest
from config_testkit import assert_issue, build

from hyperpod_cdk.config import ConfigError, EnvironmentConfig, Issue, validate
from hyperpod_cdk.config.node_setup import Directory, DirectoryAllowedGroups
from hyperpod_cdk.lifecycle.settings import node_settings

NS = "cluster.node_setup"
DIR = f"{NS}.directory"
BIND = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-bind-AbCdEf"
CA = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-ca-AbCdEf"
DIRECTORY: dict[str, Any] = {
    "uri": "ldaps://dc1.example.com",
    "search_base": "dc=example,dc=com",
    "bind_dn": "cn=hyperpod-bind,ou=service,dc=example,dc=com",
    "bind_password_secret_arn": BIND,
    "ca_certificate_secret_arn": CA,
    "allowed_groups": {"login": ["hpc users"], "compute": ["hpc users"]},
    "sudo_groups": ["Domain Admins"],
}


def directory(**changes: Any) -> dict[str, Any]:
    """The valid directory section with some keys changed (None removes one)."""
    data = {**DIRECTORY, **changes}
    return {k: v for k, v in data.items() if v is not None}


def issues_of(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    """Errors and warnings of the changed base config (no project root: no file checks)."""
    try:
        return validate(build(changes, base))[1]
    except ConfigError as exc:
        return exc.issues


def errors_of(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    return [i for i in issues_of(changes, base) if i.severity == "error"]


def warnings_of(changes: dict[str, Any], base: str = "slurm") -> list[Issue]:
    return [i for i in issues_of(changes, base) if i.severity == "warning"]


def config_of(changes: dict[str, Any], base: str = "slurm") -> EnvironmentConfig:
    cfg, _ = validate(build(changes, base))
    assert isinstance(cfg, EnvironmentConfig)
    return cfg


# -- valid -------------------------------------------------------------------------------------


def test_a_directory_over_tls_with_its_secrets_is_valid() -> None:
    assert issues_of({DIR: directory()}) == []
    setup = config_of({DIR: directory()}).cluster.node_setup
    assert setup.directory is not None
    assert setup.directory.ldap_schema == "ad"
    assert setup.directory.allowed_groups.controller == []
    assert setup.pam_slurm_adopt is False


def test_the_defaults_have_no_directory_and_no_pam_slurm_adopt() -> None:
    setup = config_of({}).cluster.node_setup
    assert setup.directory is None
    assert setup.pam_slurm_adopt is False
    assert setup.directory_secret_arns(True) == []


def test_several_servers_are_one_comma_separated_uri() -> None:
    cfg = config_of({DIR: directory(uri="ldaps://dc1.example.com , ldaps://dc2.example.com:636")})
    assert cfg.cluster.node_setup.directory is not None
    assert (
        cfg.cluster.node_setup.directory.uri
        == "ldaps://dc1.example.com,ldaps://dc2.example.com:636"
    )


def test_pam_slurm_adopt_is_a_slurm_switch() -> None:
    assert issues_of({f"{NS}.pam_slurm_adopt": True}) == []
    assert config_of({f"{NS}.pam_slurm_adopt": True}).cluster.node_setup.pam_slurm_adopt


def test_every_key_has_a_description() -> None:
    for model in (Directory, DirectoryAllowedGroups):
        assert model.__doc__
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"


# -- errors, each at its key path ------------------------------------------------------------


def case(changes: dict[str, Any], path: str, fragment: str, base: str = "slurm") -> Any:
    return pytest.param(changes, path, fragment, base, id=f"{path}: {fragment}")


REJECTED = [
    case(
        {DIR: directory()},
        DIR,
        "applies only with orchestrator: slurm",
        base="eks",
    ),
    case({f"{NS}.pam_slurm_adopt": True}, f"{NS}.pam_slurm_adopt", "orchestrator: slurm", "eks"),
    case(
        {DIR: directory(uri="ldap://dc1.example.com")},
        f"{DIR}.uri",
        "is plain LDAP: the bind password and every user's password would cross the network "
        "unencrypted; use ldaps://",
    ),
    case(
        {DIR: directory(uri="ldaps://dc1.example.com,ldap://dc2.example.com")},
        f"{DIR}.uri",
        "'ldap://dc2.example.com' is plain LDAP",
    ),
    case(
        {DIR: directory(uri="https://dc1.example.com")},
        f"{DIR}.uri",
        "use ldaps://host[:port]",
    ),
    case(
        {DIR: directory(bind_password="hunter2")},
        f"{DIR}.bind_password",
        "an inline password would sit in the YAML, the synthesized templates and S3; store it "
        "in Secrets Manager (SecretString: the password) and give bind_password_secret_arn",
    ),
    case({DIR: directory(password="hunter2")}, f"{DIR}.password", "bind_password_secret_arn"),
    case(
        {DIR: directory(bind_password_secret_arn="arn:aws:ssm:us-west-2:111122223333:parameter/x")},
        f"{DIR}.bind_password_secret_arn",
        "use a Secrets Manager secret ARN like arn:aws:secretsmanager:",
    ),
    case(
        {
            DIR: directory(
                ca_certificate_secret_arn=(
                    "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ca"
                )
            )
        },
        f"{DIR}.ca_certificate_secret_arn",
        "lacks the 6-character suffix Secrets Manager adds to the name",
    ),
    case(
        {
            DIR: directory(
                bind_password_secret_arn=BIND.replace("us-west-2", "us-east-1"),
            )
        },
        f"{DIR}.bind_password_secret_arn",
        "is a secret of us-east-1, but the cluster runs in us-west-2; replicate it",
    ),
    case(
        {"account": "444455556666", DIR: directory()},
        f"{DIR}.ca_certificate_secret_arn",
        "belongs to account 111122223333 but the key account says 444455556666",
    ),
    case(
        {DIR: directory(allowed_groups={"gpu": ["hpc users"]})},
        f"{DIR}.allowed_groups.gpu",
        "unknown key; allowed here: compute, controller, login",
    ),
    case(
        {DIR: directory(sudo_groups=["admins,ops"])},
        f"{DIR}.sudo_groups[0]",
        "(no commas)",
    ),
    case({DIR: directory(uri=None)}, f"{DIR}.uri", "required key is missing"),
    case(
        {DIR: directory(search_base="example.com")},
        f"{DIR}.search_base",
        "a distinguished name on one line, like dc=example,dc=com",
    ),
    case(
        {DIR: directory(ldap_schema="openldap")},
        f"{DIR}.ldap_schema",
        "is not allowed; use 'ad', 'rfc2307bis' or 'rfc2307'",
    ),
]


@pytest.mark.parametrize(("changes", "path", "fragment", "base"), REJECTED)
def test_rejected(changes: dict[str, Any], path: str, fragment: str, base: str) -> None:
    assert_issue(errors_of(changes, base), path, fragment)


def test_an_inline_password_is_reported_with_every_other_problem_of_the_section() -> None:
    found = errors_of({DIR: directory(bind_password="hunter2", uri="ldap://dc1.example.com")})
    assert {i.path for i in found} == {f"{DIR}.bind_password", f"{DIR}.uri"}
    assert not any("hunter2" in str(i) for i in found)


def test_another_account_is_fine_while_account_is_not_set() -> None:
    other = BIND.replace("111122223333", "999988887777")
    assert errors_of({DIR: directory(bind_password_secret_arn=other)}) == []


def test_explicit_off_values_are_fine_on_eks() -> None:
    assert errors_of({DIR: None, f"{NS}.pam_slurm_adopt": False}, base="eks") == []


def test_a_closed_network_with_the_endpoint_is_warned_about_the_packages() -> None:
    changes = {"network.closed_network": True, DIR: directory()}
    assert errors_of(changes) == []
    assert_issue(warnings_of(changes), DIR, "apt-get, which a closed network")
    images = {
        f"cluster.instance_groups[{i}].image_id": f"ami-0{i}23456789abcdef0" for i in (0, 1, 2)
    }
    assert not [w for w in warnings_of({**changes, **images}) if w.path == DIR]


def test_a_directory_nobody_may_log_in_from_is_a_warning() -> None:
    changes = {DIR: directory(allowed_groups={})}
    assert errors_of(changes) == []
    assert_issue(warnings_of(changes), f"{DIR}.allowed_groups", "can log in nowhere")


# -- what the node gets ------------------------------------------------------------------------


def test_the_node_gets_the_directory_without_any_secret() -> None:
    settings = node_settings(config_of({DIR: directory(), f"{NS}.pam_slurm_adopt": True}))
    node_setup = settings["node_setup"]
    assert node_setup["pam_slurm_adopt"] is True
    assert node_setup["directory"] == {
        "uri": "ldaps://dc1.example.com",
        "search_base": "dc=example,dc=com",
        "bind_dn": "cn=hyperpod-bind,ou=service,dc=example,dc=com",
        "bind_password_secret_arn": BIND,
        "ca_certificate_secret_arn": CA,
        "ldap_schema": "ad",
        "allowed_groups": {"controller": [], "login": ["hpc users"], "compute": ["hpc users"]},
        "sudo_groups": ["Domain Admins"],
    }  # no nulls: the upload drops them, and the upload must be what is hashed
    keys = node_settings(config_of({DIR: directory(ssh_public_key_attribute="sshPublicKey")}))
    assert keys["node_setup"]["directory"]["ssh_public_key_attribute"] == "sshPublicKey"


def test_without_a_directory_the_settings_have_none() -> None:
    assert "directory" not in node_settings(config_of({}))["node_setup"]


def test_the_role_reads_the_two_secrets_on_slurm_only() -> None:
    setup = config_of({DIR: directory()}).cluster.node_setup
    assert setup.directory_secret_arns(True) == [BIND, CA]
    assert setup.directory_secret_arns(False) == []
