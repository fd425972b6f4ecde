"""The accounting database's credentials are kept with the database (security review M3, issue
31): the retention lands on the ``AWS::SecretsManager::Secret`` itself, not only on the
``SecretTargetAttachment`` that links it to the instance."""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_testkit import SHIPPED_CONFIGS, config_id, ref

SECRET = "AWS::SecretsManager::Secret"
DATABASES = ("AWS::RDS::DBInstance", "AWS::RDS::DBCluster")
ATTACHMENT = "AWS::SecretsManager::SecretTargetAttachment"


def _policies(resource: dict) -> tuple[str | None, str | None]:
    return resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=config_id)
def test_the_database_secret_is_retained_wherever_the_database_is(path: Path, synthesized) -> None:
    synth = synthesized(path)
    for template in synth.templates.values():
        resources = template.get("Resources", {})
        for attachment in (r for r in resources.values() if r["Type"] == ATTACHMENT):
            target = attachment["Properties"]["TargetId"]["Ref"]
            if _policies(resources[target]) != ("Retain", "Retain"):
                continue
            secret_id = attachment["Properties"]["SecretId"]["Ref"]
            assert resources[secret_id]["Type"] == SECRET
            assert _policies(resources[secret_id]) == ("Retain", "Retain"), secret_id


def test_full_keeps_its_accounting_secret(synthesized) -> None:
    """config/examples/full.yaml has the database (RETAIN): its generated secret is RETAIN too."""
    synth = synthesized("full")
    ((secret_id, secret),) = synth.resources("storage", SECRET).items()
    assert _policies(secret) == ("Retain", "Retain")
    database = synth.resources("storage")["SlurmAccountingDatabase"]
    assert _policies(database) == ("Retain", "Retain")
    (attachment,) = synth.resources("storage", ATTACHMENT).values()
    assert attachment["Properties"]["SecretId"] == ref(secret_id)
