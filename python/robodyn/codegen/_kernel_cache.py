"""The per-user cache of compiled kernels (robodyn.codegen): what is trusted, and how a library
is loaded so that the bytes that run are the bytes that were checked.

An entry is a library ``<stem>-<key>.so`` and its record ``<stem>-<key>.sha256``
(``key=``, ``source=``, ``library=``: the cache key, the SHA-256 of the generated source and of
the library as compiled). A cached library is loaded only when

- the cache folder is a directory (not a symlink) owned by this user; it is made 0700;
- the record and the library, each opened with O_NOFOLLOW (a symlink is refused) and
  O_NONBLOCK (a FIFO cannot stall the open), are regular files owned by this user that neither
  group nor others can write, with one link (not a hard link to another file), and of bounded
  size;
- the record names this key and this source, and the library's bytes, read from the opened
  file, hash to the recorded digest;

and it is loaded from that opened file (``/proc/self/fd/N``), not from its name: a file put in
its place after the check is never the one loaded. A file another user planted (while the
folder was open to them, or through a symlink) fails the ownership test whatever record lies
next to it. Any failed test: the kernels are compiled again into a fresh private folder, and
the new library and record replace the entry (a rename: a symlink in the way is replaced, never
followed).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import stat
import tempfile
from pathlib import Path

RECORD_MAX = 4096            # bytes of a record
LIBRARY_MAX = 512 << 20      # bytes of a cached library read for its digest
_PROC_FD = "/proc/self/fd"


def cache_dir():
    """$ROBODYN_CACHE_DIR, else $XDG_CACHE_HOME/robodyn/kernels, else ~/.cache/robodyn/kernels."""
    env = os.environ.get("ROBODYN_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "robodyn" / "kernels"


def _uid():
    return os.getuid() if hasattr(os, "getuid") else None


def open_cache():
    """(path, fd) of the cache folder, created 0700; RuntimeError unless it is a directory
    (not a symlink) owned by this user; an existing one is tightened to 0700. The caller closes
    the fd."""
    cache = cache_dir()
    try:
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(cache, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise RuntimeError(f"kernel cache {cache} is not a directory ({e.strerror})") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISDIR(st.st_mode):
                raise RuntimeError(f"kernel cache {cache} is not a directory")
            uid = _uid()
            if uid is not None and st.st_uid != uid:
                raise RuntimeError(f"kernel cache {cache} belongs to another user "
                                   f"(uid {st.st_uid})")
            if st.st_mode & 0o077:
                os.fchmod(fd, 0o700)
        except BaseException:
            os.close(fd)
            raise
    except OSError as e:
        raise RuntimeError(f"kernel cache {cache}: {e.strerror or e}") from None
    return cache, fd


def private_cache():
    """The cache folder's path (see :func:`open_cache`)."""
    cache, fd = open_cache()
    os.close(fd)
    return cache


def _trusted(st):
    """Whether an fstat result is a file this user alone controls."""
    uid = _uid()
    return (stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid)
            and not st.st_mode & 0o022 and st.st_nlink == 1)


def _open_trusted(name, dir_fd):
    """An fd of ``name`` in the folder ``dir_fd`` if it is a file this user alone controls
    (checked on the opened file), else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return None
    if _trusted(os.fstat(fd)):
        return fd
    os.close(fd)
    return None


def _digest(fd, limit):
    """SHA-256 of the file of ``fd`` from its start, or None when it exceeds ``limit`` bytes."""
    os.lseek(fd, 0, os.SEEK_SET)
    h, size = hashlib.sha256(), 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return h.hexdigest()
        size += len(chunk)
        if size > limit:
            return None
        h.update(chunk)


def _record(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, RECORD_MAX + 1)
    if len(data) > RECORD_MAX:
        return None
    try:
        text = data.decode("ascii")
    except UnicodeError:
        return None
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return fields if set(fields) == {"key", "source", "library"} else None


def open_entry(cache_fd, stem, key, source_sha):
    """(fd, SHA-256) of the cached library ``<stem>-<key>.so`` when every test of the module's
    docstring passes (its bytes hash to the record's digest), else None."""
    rfd = _open_trusted(f"{stem}-{key}.sha256", cache_fd)
    if rfd is None:
        return None
    try:
        record = _record(rfd)
    finally:
        os.close(rfd)
    if record is None or record["key"] != key or record["source"] != source_sha:
        return None
    fd = _open_trusted(f"{stem}-{key}.so", cache_fd)
    if fd is None:
        return None
    if _digest(fd, LIBRARY_MAX) != record["library"]:
        os.close(fd)
        return None
    return fd, record["library"]


def install(cache, cache_fd, stem, key, source, compile_into):
    """Compile ``source`` (text) by ``compile_into(src_path, out_path)`` in a fresh private
    folder of the cache, record it, and move the library, record and source into place;
    returns (fd, SHA-256) of the new library (checked as :func:`open_entry` checks)."""
    with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
        tmp_fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            src, out = Path(tmp) / "kernels.cpp", Path(tmp) / "kernels.so"
            src.write_text(source)
            compile_into(src, out)
            fd = os.open("kernels.so", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=tmp_fd)
            try:
                os.fchmod(fd, 0o700)
                digest = _digest(fd, LIBRARY_MAX) if _trusted(os.fstat(fd)) else None
                if digest is None:
                    raise RuntimeError("kernel cache: the compiled library is not a private "
                                       f"file of at most {LIBRARY_MAX} bytes")
                source_sha = hashlib.sha256(source.encode()).hexdigest()
                rec = os.open("record", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                              | os.O_CLOEXEC, 0o600, dir_fd=tmp_fd)
                with os.fdopen(rec, "w") as f:
                    f.write(f"key={key}\nsource={source_sha}\nlibrary={digest}\n")
                for name, final in (("kernels.cpp", ".cpp"), ("kernels.so", ".so"),
                                    ("record", ".sha256")):
                    os.replace(name, f"{stem}-{key}{final}", src_dir_fd=tmp_fd,
                               dst_dir_fd=cache_fd)
            except BaseException:
                os.close(fd)
                raise
        finally:
            os.close(tmp_fd)
    return fd, digest


_KEPT_OPEN = []  # fds of the libraries loaded through /proc/self/fd/N


def load(fd, path):
    """The library of ``fd`` (the open file of ``path``) loaded (ctypes.CDLL); takes the fd
    over. Where /proc/self/fd exists, from the open file itself; the fd then stays open for
    the life of the process, so that no other file gets its number (the dynamic loader
    treats a name it has loaded before as that library). Elsewhere from ``path`` after
    checking that it still names the same file (a narrower window: the name could change
    between that check and the load)."""
    try:
        if os.path.isdir(_PROC_FD):
            lib = ctypes.CDLL(f"{_PROC_FD}/{fd}")
            _KEPT_OPEN.append(fd)
            return lib
        st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
        if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
            raise RuntimeError(f"kernel cache: {path} changed while it was being loaded")
        lib = ctypes.CDLL(str(path))
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return lib
