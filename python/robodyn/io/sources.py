"""A URDF source read, size-bounded: a path (a regular file only), XML text or bytes, or a
``.xacro`` file expanded (robodyn.io.xacro)."""

from __future__ import annotations

import os

from ..util import safe_io
from .urdf_source import MAX_BYTES, URDFError, URDFFileNotFoundError, decode
from .xacro import expand

__all__ = ["read_source", "is_xacro", "expand_xacro"]


def read_source(source, xacro_args=None, max_bytes=MAX_BYTES, xacro_env=False):
    """(text, label) of a path, an XML string or XML bytes, at most ``max_bytes`` long; a
    ``.xacro`` path is expanded (the expansion is held to the same limit).

    A path must name a regular file: devices (/dev/zero), FIFOs, sockets and directories are
    refused before anything is read (opened non-blocking, so a FIFO cannot stall the call)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes: expected a positive int, got {max_bytes!r}")
    if is_xacro(source):
        text, label = expand_xacro(os.fspath(source), xacro_args, xacro_env, max_bytes)
        if len(text) > max_bytes:
            raise URDFError(f"{label}: the expanded xacro has {len(text)} characters, over the "
                            f"limit of {max_bytes} (max_bytes=)")
        return text, label
    if xacro_args is not None:
        raise ValueError("xacro_args: given for a source that is not a .xacro file")
    if xacro_env:
        raise ValueError("xacro_env: given for a source that is not a .xacro file")
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > max_bytes:
            raise URDFError(f"<string>: {len(data)} bytes exceed the limit of {max_bytes} "
                            "(max_bytes=)")
        return decode(data, "<string>"), "<string>"
    if isinstance(source, str) and source.lstrip().startswith("<"):
        if len(source) > max_bytes:
            raise URDFError(f"<string>: {len(source)} characters exceed the limit of "
                            f"{max_bytes} (max_bytes=)")
        return source, "<string>"
    if isinstance(source, str) and not source.strip():
        raise URDFError("<string>: empty input")
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"parse_urdf expects a path or an XML string, not {type(source).__name__}")
    path = os.fspath(source)
    label = os.fsdecode(path)
    try:
        data = safe_io.read_bytes(path, max_bytes, error=URDFError,
                                  hint=" (pass max_bytes= to load a larger file)",
                                  not_regular="; a URDF is read from a regular file or given "
                                              "as text")
    except FileNotFoundError:
        raise URDFFileNotFoundError(
            f"{label}: file not found (a str is read as XML text only if it starts with '<')"
        ) from None
    return decode(data, label), label


def is_xacro(source):
    return (isinstance(source, (str, os.PathLike)) and not isinstance(source, bytes)
            and not (isinstance(source, str) and source.lstrip().startswith("<"))
            and os.fsdecode(os.fspath(source)).endswith(".xacro"))


def expand_xacro(path, xacro_args, xacro_env=False, max_bytes=MAX_BYTES):
    """URDF text of a xacro file with ``xacro_args`` (name -> value) as the values of its
    ``<xacro:arg>`` elements: robodyn.io.xacro.expand (no code runs, bounded). """
    return expand(path, xacro_args, allow_env=bool(xacro_env), max_bytes=max_bytes)
