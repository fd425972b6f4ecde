"""``python -m hyperpod_ops.verify CONFIG``: see :mod:`hyperpod_ops.verify.cli`."""

import sys

from hyperpod_ops.verify.cli import main

sys.exit(main(sys.argv[1:]))
