"""The operational commands of a hyperpod-cdk environment, beside the construct library: they
check, report on, verify and change a deployed environment through the AWS APIs.

``python -m hyperpod_ops.<command>`` (the Makefile targets): ``preflight`` and ``status`` read
only; ``verify`` creates test objects (Slurm jobs, files on FSx, Kubernetes pods) and removes
them; ``sync_users`` runs steps on the nodes (SSM); ``migrate`` rewrites a deployed stack's
template and patches Kubernetes objects; ``update_notes`` and ``deploy_gate`` synthesize the CDK
app in a subprocess (this package imports no ``aws_cdk``) and compare templates, and the gate then
runs ``cdk deploy``; ``chart --mirror-list`` lists the images to mirror. Every check is a small
function that takes boto3 clients, so tests drive them with botocore's Stubber; boto3 is imported
only when a session is built.
"""

from hyperpod_ops.check import Check, format_check, summary

__all__ = ["Check", "format_check", "summary"]
