"""Read-only checks of a target account before a deploy, and the state of a deployed cluster.

``python -m hyperpod_ops.preflight CONFIG`` (``make preflight``) and
``python -m hyperpod_ops.status CONFIG`` (``make status``). Every check is a
small function that takes boto3 clients, so tests drive them with botocore's
Stubber. boto3 is imported only when a session is built: importing
``hyperpod_cdk`` (or this package) never needs it.
"""

from hyperpod_ops.check import Check, format_check, summary

__all__ = ["Check", "format_check", "summary"]
