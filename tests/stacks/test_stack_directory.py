"""Directory users (cluster.node_setup.directory) in the stacks: the node execution role may read
exactly the directory's two secrets and decrypt them only through Secrets Manager; the secrets'
values never reach the templates or the uploaded lifecycle files."""

from __future__ import annotations

import json
from typing import Any

from stack_testkit import ref, uploaded_settings

BIND = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-bind-AbCdEf"
CA = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hyperpod/ldap-ca-AbCdEf"
DIRECTORY = {
    "uri": "ldaps://dc1.example.com",
    "search_base": "dc=example,dc=com",
    "bind_dn": "cn=hyperpod-bind,ou=service,dc=example,dc=com",
    "bind_password_secret_arn": BIND,
    "ca_certificate_secret_arn": CA,
    "allowed_groups": {"login": ["hpc-users"], "compute": ["hpc-users"]},
    "sudo_groups": ["hpc-admins"],
}
WITH_DIRECTORY = {"cluster.node_setup.directory": DIRECTORY}
ROLE_ID = "ExecutionRoleCDF74862"


def directory_policies(synth) -> dict[str, dict[str, Any]]:
    """The managed policies holding the directory statements, by logical id."""
    return {
        logical_id: resource
        for logical_id, resource in synth.resources("nodes", "AWS::IAM::ManagedPolicy").items()
        if any(
            s.get("Sid") == "ReadDirectorySecrets"
            for s in resource["Properties"]["PolicyDocument"]["Statement"]
        )
    }


def statements(policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_the_role_reads_exactly_the_two_secrets(build_variant) -> None:
    synth = build_variant(WITH_DIRECTORY, base="minimal")  # cdk-nag clean, or it raises
    (policy,) = directory_policies(synth).values()
    found = statements(policy)
    assert set(found) == {"ReadDirectorySecrets", "DecryptDirectorySecrets"}
    read = found["ReadDirectorySecrets"]
    assert read["Effect"] == "Allow"
    assert read["Action"] == "secretsmanager:GetSecretValue"
    assert read["Resource"] == [BIND, CA]
    assert ref(ROLE_ID) in synth.resolve(policy["Properties"]["Roles"])


def test_the_secrets_key_decrypts_only_through_secrets_manager_and_for_them(
    build_variant,
) -> None:
    (policy,) = directory_policies(build_variant(WITH_DIRECTORY, base="minimal")).values()
    decrypt = statements(policy)["DecryptDirectorySecrets"]
    assert decrypt["Action"] == "kms:Decrypt"
    # the key is the secrets' (AWS managed or a customer key, maybe of another account)
    assert decrypt["Resource"] == "*"
    assert decrypt["Condition"] == {
        "StringEquals": {
            "kms:ViaService": "secretsmanager.us-west-2.amazonaws.com",
            "kms:EncryptionContext:SecretARN": [BIND, CA],
        }
    }


def test_the_wildcard_key_is_acknowledged_with_its_reason(build_variant) -> None:
    synth = build_variant(WITH_DIRECTORY, base="minimal")
    found = [
        reason
        for path, finding, reason in synth.acknowledgments
        if path.endswith("/ExecutionRole/DirectorySecrets")
        and finding.endswith("AwsSolutions-IAM5[Resource::*]")
    ]
    assert found and "kms:ViaService" in found[0] and "EncryptionContext" in found[0]


def test_without_a_directory_the_role_reads_no_secret(build_variant) -> None:
    assert directory_policies(build_variant({}, base="minimal", nag=False)) == {}


def test_a_configured_execution_role_gets_the_same_read(build_variant) -> None:
    role_arn = "arn:aws:iam::111122223333:role/platform-hyperpod-nodes"
    synth = build_variant(
        {**WITH_DIRECTORY, "cluster.execution_role_arn": role_arn}, base="minimal", nag=False
    )
    (policy,) = directory_policies(synth).values()
    roles = json.dumps(synth.resolve(policy["Properties"]["Roles"]))
    assert "platform-hyperpod-nodes" in roles
    assert ROLE_ID in roles


def test_the_uploaded_settings_name_the_secrets_never_their_values(build_variant) -> None:
    synth = build_variant(WITH_DIRECTORY, base="minimal", nag=False)
    settings = uploaded_settings(synth)
    directory = json.loads(settings.read_text())["node_setup"]["directory"]
    assert directory["bind_password_secret_arn"] == BIND
    assert directory["ca_certificate_secret_arn"] == CA
    assert directory["allowed_groups"] == {
        "controller": [],
        "login": ["hpc-users"],
        "compute": ["hpc-users"],
    }
    # only the secrets' ARNs: no key holds a password or a certificate itself
    assert not [k for k in directory if "password" in k and not k.endswith("_secret_arn")]
    assert not [k for k in directory if "certificate" in k and not k.endswith("_secret_arn")]
