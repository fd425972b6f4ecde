"""Every AWS operation a make verify test makes must be in the permissions table
(hyperpod_ops.verify.permissions), so docs/operations.md lists what verify needs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ops_testkit import StubbedAws

from hyperpod_ops.verify.permissions import BY_OPERATION


@pytest.fixture
def aws(aws: StubbedAws) -> Iterator[StubbedAws]:
    """The stubbed clients of tests/ops/conftest.py, checked against the permissions table."""
    yield aws
    missing = sorted(aws.called - set(BY_OPERATION))
    assert not missing, f"make verify called {missing}: add them to ops/verify/permissions.py"
