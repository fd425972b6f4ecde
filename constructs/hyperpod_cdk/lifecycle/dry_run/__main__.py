"""``python -m hyperpod_cdk.lifecycle.dry_run NODE ...``: see the package docstring."""

import sys

from hyperpod_cdk.lifecycle.dry_run import main

sys.exit(main(sys.argv[1:]))
