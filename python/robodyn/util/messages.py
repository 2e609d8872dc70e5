"""How the command line says a warning: one ``robodyn: warning: ...`` line per problem, naming
the user's file, without Python's file path, warning class and source line."""

from __future__ import annotations

import re
import sys

__all__ = ["warning_lines", "say_warning"]

# the first line of a URDFWarning: "FILE: loaded with N warnings (...):", then "  WHERE: WHY"
_URDF_HEADER = re.compile(r"^(?P<label>.+): loaded with \d+ warnings? \(.*\):$")


def warning_lines(message):
    """The lines ``robodyn: warning: ...`` say for one warning: one line per problem, each
    naming its file (a URDF file's warnings, ``arm.urdf: link 'x': ...``), any other message
    on one line."""
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    if not lines:
        return []
    header = _URDF_HEADER.match(lines[0])
    if header and len(lines) > 1:
        return [f"{header['label']}: {ln}" for ln in lines[1:]]
    return ["; ".join(lines)]


def say_warning(message, category=None, filename=None, lineno=None, file=None, line=None):
    """Print a warning to stderr as ``robodyn: warning: ...`` lines (:func:`warning_lines`),
    without Python's file path and source line; the signature of
    :func:`warnings.showwarning`, which :func:`robodyn.cli.main` replaces with it."""
    for text in warning_lines(message):
        print(f"robodyn: warning: {text}", file=file or sys.stderr)
