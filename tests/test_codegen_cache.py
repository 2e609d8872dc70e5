"""The kernel cache trusts only the user's own private files (docs/security.md, "The kernel
cache"): a library another user planted (with a record that matches it), one reached through
a symlink or a hard link, one that others could write, and a record that is a FIFO are never
loaded nor waited on; the kernels are compiled again into place instead.

The planted library's constructor writes a marker file: the marker is the proof that its code
ran in this process. Another user's files are made with os.chown (the tests run as root;
elsewhere those tests are skipped).
"""

import hashlib
import os
import re
import stat
import subprocess
import threading
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import robodyn
from robodyn import codegen
from robodyn.codegen import kernels as codegen_kernels, compiled as codegen_specialize  # noqa: E402,F401
from reference import random_models as rm

pytestmark = pytest.mark.skipif(codegen_specialize._compiler() is None, reason="needs a C++ compiler")

FOREIGN_UID = 4242
PLANTED = r"""
#include <cstdio>
__attribute__((constructor)) static void planted() {
  if (std::FILE* f = std::fopen(MARKER, "w")) {
    std::fputs("the planted library ran", f);
    std::fclose(f);
  }
}
"""


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A robot's kernels compiled into a fresh cache (not loaded), and a planted library."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(folder))
    monkeypatch.setattr(codegen_specialize, "_SPECIALIZED", {})
    monkeypatch.setattr(codegen_specialize, "_LOADED", {})
    robot = robodyn.Robot(rm.random_chain(3, np.random.default_rng(31)))
    lib = codegen.compile_kernels(codegen.generate(robot))
    marker = tmp_path / "marker"
    src, planted = tmp_path / "planted.cpp", tmp_path / "planted.so"
    src.write_text(PLANTED)
    subprocess.run([*codegen_specialize._compiler().split(), "-shared", "-fPIC", f'-DMARKER="{marker}"',
                    "-o", str(planted), str(src)], check=True, capture_output=True, timeout=300)
    return SimpleNamespace(robot=robot, folder=folder, lib=lib, record=lib.with_suffix(".sha256"),
                           planted=planted, marker=marker)


def _record_for(c, library):
    """The entry's record text, claiming the digest of ``library`` (what an attacker writes)."""
    return re.sub(r"library=\w+", f"library={_sha256(library)}", c.record.read_text())


def _foreign(path):
    if os.getuid() != 0:
        pytest.skip("making another user's file needs root")
    os.chown(path, FOREIGN_UID, FOREIGN_UID, follow_symlinks=False)


def _specialize_and_check(c):
    """Specialise the robot again (nothing loaded in this process yet): the planted code must
    not have run, and the kernels must be freshly compiled, private, and right."""
    codegen_specialize._SPECIALIZED.clear()
    codegen_specialize._LOADED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        special = c.robot.specialized()
    assert not c.marker.exists(), "the planted library was loaded"
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], \
        [str(w.message) for w in caught]
    assert special.is_specialized()
    q, qd, x = np.random.default_rng(3).standard_normal((3, 3))
    ref = c.robot.inverse_dynamics(q, qd, x)
    np.testing.assert_allclose(special.inverse_dynamics(q, qd, x), ref, rtol=1e-9,
                               atol=1e-9 * np.abs(ref).max())
    st = os.lstat(c.lib)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_nlink == 1
    assert not st.st_mode & 0o022
    assert _sha256(c.lib) != _sha256(c.planted)
    assert stat.S_IMODE(os.stat(c.folder).st_mode) == 0o700


def test_planted_library_of_another_user_is_not_loaded(cache):
    """A folder once open to everyone: another user replaced the library by theirs and wrote
    a record that matches it. The folder is tightened; their files are still not trusted."""
    c = cache
    os.chmod(c.folder, 0o777)
    text = _record_for(c, c.planted)
    fake = c.folder / "fake"
    fake.write_bytes(c.planted.read_bytes())
    _foreign(fake)
    os.replace(fake, c.lib)
    fake.write_text(text)
    _foreign(fake)
    os.replace(fake, c.record)
    _specialize_and_check(c)


def test_symlinked_library_is_not_followed(cache):
    c = cache
    text = _record_for(c, c.planted)
    c.lib.unlink()
    c.lib.symlink_to(c.planted)
    c.record.write_text(text)
    before = _sha256(c.planted)
    _specialize_and_check(c)
    assert _sha256(c.planted) == before  # replaced the link, wrote nothing through it


def test_hard_link_to_another_file_is_not_trusted(cache):
    c = cache
    text = _record_for(c, c.planted)
    c.lib.unlink()
    os.link(c.planted, c.lib)
    c.record.write_text(text)
    _specialize_and_check(c)


def test_library_others_could_write_is_not_trusted(cache):
    """Library and record writable by everyone (as an old umask could leave them), both
    rewritten in place: still this user's files, yet not trusted."""
    c = cache
    text = _record_for(c, c.planted)
    os.chmod(c.lib, 0o666)
    os.chmod(c.record, 0o666)
    with open(c.lib, "r+b") as f:
        f.truncate(0)
        f.write(c.planted.read_bytes())
    with open(c.record, "w") as f:
        f.write(text)
    _specialize_and_check(c)


def test_fifo_record_does_not_block(cache):
    """A FIFO in place of the record: refused at once, not waited on (a writer opens it after
    10 s only if the call is still blocked)."""
    c = cache
    c.record.unlink()
    os.mkfifo(c.record)
    done = threading.Event()

    def unblock():
        if not done.wait(10.0):
            fd = os.open(c.record, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)

    writer = threading.Thread(target=unblock, daemon=True)
    writer.start()
    t0 = time.perf_counter()
    try:
        _specialize_and_check(c)
    finally:
        elapsed = time.perf_counter() - t0
        done.set()
        writer.join()
    assert elapsed < 8.0
    assert stat.S_ISREG(os.lstat(c.record).st_mode)


def test_libraries_loaded_in_turn_are_each_their_own(tmp_path, monkeypatch):
    """Each library is loaded from its own open file (/proc/self/fd/N): two robots specialised
    one after the other each run their own kernels (a reused N would give the first again)."""
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(codegen_specialize, "_SPECIALIZED", {})
    monkeypatch.setattr(codegen_specialize, "_LOADED", {})
    rng = np.random.default_rng(5)
    for n in (2, 4):
        robot = robodyn.Robot(rm.random_chain(n, np.random.default_rng(40 + n)))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            special = robot.specialized()
        assert special.is_specialized()
        q, qd, x = rng.standard_normal((3, n))
        ref = robot.inverse_dynamics(q, qd, x)
        np.testing.assert_allclose(special.inverse_dynamics(q, qd, x), ref, rtol=1e-9,
                                   atol=1e-9 * np.abs(ref).max())
