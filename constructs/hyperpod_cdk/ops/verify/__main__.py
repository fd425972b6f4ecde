"""``python -m hyperpod_cdk.ops.verify CONFIG``: see :mod:`hyperpod_cdk.ops.verify.cli`."""

import sys

from hyperpod_cdk.ops.verify.cli import main

sys.exit(main(sys.argv[1:]))
