"""Observability: metrics and their alert rules, on both orchestrators.

- ``extension_handler/handler.py`` (:data:`EXTENSION_HANDLER_DIR`, a Lambda asset): the custom
  resource that installs HyperPod's ``sagemaker-observability`` cluster extension on Slurm.
- :mod:`hyperpod_cdk.facts.alert_rules`: AWS's GPU, disk and FSx alert rules, written
  here as an Amazon Managed Prometheus rule-groups namespace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: the extension custom resource's code: the asset directory (handlers ``handler.on_event``
#: and ``handler.is_complete``)
EXTENSION_HANDLER_DIR: Final = Path(__file__).parent / "extension_handler"
