"""``python -m robodyn.codegen``: see robodyn.codegen.command.main."""

import sys

from .command import main

sys.exit(main())
