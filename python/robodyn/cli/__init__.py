"""The command line ``robodyn`` (commands: info, id, simulate, show, opcount, codegen, bench,
campaign). Imported by nothing else in the package; imports every layer below."""

from .commands import *  # noqa: F401,F403
from .commands import __all__ as _commands

__all__ = list(_commands)
