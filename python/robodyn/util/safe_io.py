"""Reading a file that may come from elsewhere: one regular file, at most a bounded size.

Every file robodyn reads (a URDF, a reference CSV, a campaign TOML, a dataset's metadata and
chunks) is opened by :func:`open_regular`:

- the path must name a regular file (symbolic links followed): a directory, a device
  (``/dev/zero``, ``/dev/urandom``), a FIFO or a socket is refused before anything is read;
- it is opened non-blocking (a FIFO put in its place between the check and the open cannot
  stall the call) and checked again on the open descriptor (``fstat``);
- a file larger than ``max_bytes`` is refused from its size, and at most ``max_bytes + 1``
  bytes are ever read (a file that grows while it is read is refused too).

Errors are ``error`` (default ``FileReadError``, a ``ValueError``) with one line naming the
file and the reason; a missing file raises ``FileNotFoundError`` for the caller to name.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat

__all__ = ["FileReadError", "MAX_BYTES", "open_regular", "read_bytes", "read_text",
           "file_digest"]

MAX_BYTES = 64 << 20  # the default bound of one file: 64 MiB

_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
          | getattr(os, "O_BINARY", 0))
_NOT_REGULAR = "not a regular file (a directory, device, FIFO or socket)"


class FileReadError(ValueError):
    """A file that cannot be read safely: not a regular file, too large, or unreadable."""


def _check_limit(max_bytes):
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes: expected a non-negative int, got {max_bytes!r}")


@contextlib.contextmanager
def open_regular(path, max_bytes=MAX_BYTES, *, error=FileReadError, hint="", not_regular=""):
    """``(file, size)``: the regular file ``path`` opened for binary reading, non-blocking,
    its size at most ``max_bytes`` (module documentation). ``hint`` follows the size message
    (how to allow more), ``not_regular`` the refusal of a special file."""
    _check_limit(max_bytes)
    path = os.fspath(path)
    label = os.fsdecode(path)
    refuse = f"{label}: cannot read the file: {_NOT_REGULAR}{not_regular}"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise error(refuse)
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise error(f"{label}: cannot read the file: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the check and the open
            raise error(refuse)
        if st.st_size > max_bytes:
            raise error(f"{label}: {st.st_size} bytes exceed the limit of {max_bytes}{hint}")
        yield f, st.st_size


def read_bytes(path, max_bytes=MAX_BYTES, *, error=FileReadError, hint="", not_regular=""):
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them (module
    documentation)."""
    label = os.fsdecode(os.fspath(path))
    with open_regular(path, max_bytes, error=error, hint=hint, not_regular=not_regular) as (f, _):
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise error(f"{label}: cannot read the file: {e.strerror or e}") from None
    if len(data) > max_bytes:  # grew while being read
        raise error(f"{label}: more than {max_bytes} bytes{hint}")
    return data


def read_text(path, max_bytes=MAX_BYTES, *, error=FileReadError, hint="", encoding="utf-8"):
    """The text of the regular file ``path`` (``encoding``; a BOM is dropped), at most
    ``max_bytes`` bytes (module documentation)."""
    data = read_bytes(path, max_bytes, error=error, hint=hint)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        raise error(f"{os.fsdecode(os.fspath(path))}: not {encoding} text (byte {e.start})") \
            from None
    return text[1:] if text.startswith("\ufeff") else text


def file_digest(path, max_bytes=MAX_BYTES, *, new=hashlib.sha256, error=FileReadError):
    """``(size, hex digest)`` of the regular file ``path`` by the hash ``new()`` (default
    SHA-256; an object with ``update`` and ``hexdigest``), read in pieces of 1 MiB (at most
    ``max_bytes`` bytes)."""
    label = os.fsdecode(os.fspath(path))
    h = new()
    size = 0
    with open_regular(path, max_bytes, error=error) as (f, _):
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while size <= max_bytes:
            try:
                got = f.readinto(buf)
            except OSError as e:
                raise error(f"{label}: cannot read the file: {e.strerror or e}") from None
            if not got:
                break
            h.update(view[:got])
            size += got
    if size > max_bytes:
        raise error(f"{label}: more than {max_bytes} bytes")
    return size, h.hexdigest()
