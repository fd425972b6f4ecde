"""Every Lambda handler the library ships is tested with what CloudFormation really sends (issue
31): a new handler fails here until a test drives it through tests/support/cfn_events.py."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LIBRARY = PROJECT_ROOT / "constructs" / "hyperpod_cdk"
TESTS = PROJECT_ROOT / "tests"

#: handler module -> the test that drives it through the fake
TESTED = {
    "eks/node_wait_handler/index.py": "eks/test_node_wait.py",
    "eks/task_governance_handler/handler.py": "eks/test_task_governance.py",
    "storage/key_policy_handler/index.py": "library/test_key_policy_handler.py",
    "observability/extension_handler/handler.py": (
        "observability/test_observability_extension_handler.py"
    ),
    "observability/grafana_handler/handler.py": "observability/test_grafana_handler.py",
    "network/restrict_default_sg/index.js": "library/test_default_sg_handler.py",
}
#: Lambda handlers that are no custom resource, with the reason
NOT_CUSTOM_RESOURCES = {
    # an EventBridge target (alerts/construct.py): CloudFormation never invokes it
    "alerts/log_bridge/handler.py",
}
# what a Lambda entry point looks like in this library (Python and Node.js)
_ENTRY = re.compile(r"^def (on_event|is_complete|handler)\(|^exports\.handler\b", re.MULTILINE)


def _handlers() -> set[str]:
    found = set()
    for path in [*LIBRARY.rglob("*.py"), *LIBRARY.rglob("*.js")]:
        if _ENTRY.search(path.read_text()):
            found.add(path.relative_to(LIBRARY).as_posix())
    return found


def test_every_handler_is_listed() -> None:
    assert _handlers() == set(TESTED) | NOT_CUSTOM_RESOURCES


def test_every_handler_test_uses_the_cloudformation_fake() -> None:
    for handler, test in TESTED.items():
        text = (TESTS / test).read_text()
        assert "from support.cfn_events import" in text, (handler, test)
        assert "cfn_event(" in text, (handler, test)
