"""Alerts: who is told when a HyperPod cluster breaks.

- :mod:`hyperpod_cdk.alerts.events`: the EventBridge rules' patterns on HyperPod's events and
  the text a person reads (input transformers).
- ``log_bridge/handler.py`` (:data:`LOG_BRIDGE_DIR`, a Lambda asset): on Slurm, the health
  monitoring agent's GPU faults reach no EventBridge rule; the function reads them from the
  cluster's log group (a CloudWatch Logs subscription) and publishes the same kind of alert.
- :mod:`hyperpod_cdk.alerts.construct`: the CDK constructs that deploy them
  (:class:`~hyperpod_cdk.alerts.construct.HyperPodAlerts`) and the groups' ``rollback_alarms:
  auto`` alarms (:class:`~hyperpod_cdk.alerts.construct.HyperPodRollbackAlarms`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: the log bridge function's code: the asset directory (handler ``handler.handler``)
LOG_BRIDGE_DIR: Final = Path(__file__).parent / "log_bridge"
#: the Lambda handler name inside :data:`LOG_BRIDGE_DIR`
LOG_BRIDGE_HANDLER: Final = "handler.handler"
