"""``python -m robodyn.cli``: the ``robodyn`` command line."""

import sys

from .commands import main

sys.exit(main())
