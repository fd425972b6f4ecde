"""The lifecycle capability: the node scripts and what feeds them.

- ``assets/``: the scripts themselves (``entrypoint.sh``, ``steps/``, ``lib/``) and the schema
  of the ``settings.json`` they read (``assets/settings.schema.json``). The repository's
  ``lifecycle_assets/`` is a symlink to this folder, so configs that say
  ``cluster.lifecycle_scripts: lifecycle_assets`` keep working.
- :mod:`hyperpod_cdk.lifecycle.settings`: renders ``settings.json`` from the typed config
  (``build_node_settings``) and checks it against that schema.
- :mod:`hyperpod_cdk.lifecycle.prefix`: the content-addressed S3 prefix of an upload.
- :mod:`hyperpod_cdk.lifecycle.scripts`: ``LifecycleScripts``, the construct that uploads them.
- :mod:`hyperpod_cdk.lifecycle.dry_run`: runs the entry script on a bundled fake node
  (``python -m hyperpod_cdk.lifecycle.dry_run``).

This ``__init__`` imports nothing, so the pure modules load without the CDK.
"""
