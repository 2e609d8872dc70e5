"""Every file robodyn reads goes through robodyn.safe_io: a regular file (no device, FIFO,
socket or directory, checked before and after a non-blocking open), at most a bounded size.
Each reader (URDF, reference CSV, campaign TOML, dataset metadata and chunks) is tried with
/dev/zero, a FIFO and a file over its bound, in-process and from the command line."""

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import robodyn
from robodyn import safe_io, trajectories

ROBODYN_MODULE = [sys.executable, "-m", "robodyn.cli"]
ZERO = "/dev/zero"


def _bounded(fn, seconds=10.0):
    """``fn()`` in a thread, within ``seconds``: (result, exception); a call still running then
    fails the test instead of hanging it (a FIFO opened for reading would block forever)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001  (returned to the test)
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s (blocked on the file?)"
    return box.get("value"), box.get("error")


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


def _refused(fn, match, seconds=10.0):
    t0 = time.perf_counter()
    _, err = _bounded(fn, seconds)
    assert isinstance(err, ValueError), repr(err)
    assert match in str(err), str(err)
    assert "\n" not in str(err)
    return time.perf_counter() - t0


# ---------------------------------------------------------------- the helper itself

def test_safe_io_refuses_devices_fifos_directories_and_large_files(tmp_path, fifo):
    for path in (ZERO, fifo, tmp_path):
        _, err = _bounded(lambda p=path: safe_io.read_bytes(p))
        assert isinstance(err, safe_io.FileReadError) and "not a regular file" in str(err), err
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(safe_io.FileReadError, match=r"1001 bytes exceed the limit of 1000\b"):
        safe_io.read_bytes(big, 1000)
    assert safe_io.read_bytes(big, 1001) == b"x" * 1001
    assert safe_io.file_digest(big, 1001)[0] == 1001
    with pytest.raises(safe_io.FileReadError, match="exceed the limit"):
        safe_io.file_digest(big, 1000)
    with pytest.raises(FileNotFoundError):
        safe_io.read_bytes(tmp_path / "missing")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(safe_io.FileReadError, match="not utf-8"):
        safe_io.read_text(tmp_path / "bad.txt")


def test_safe_io_checks_the_open_descriptor(tmp_path, fifo, monkeypatch):
    """A FIFO put in place of a regular file between the check and the open: the open does not
    block (O_NONBLOCK) and fstat on the descriptor refuses it."""
    real_stat = os.stat
    regular = real_stat(__file__)

    def lying_stat(path, *args, **kwargs):  # the path was a regular file when checked
        return regular if os.fspath(path) == os.fspath(fifo) else real_stat(path, *args,
                                                                              **kwargs)

    monkeypatch.setattr(safe_io.os, "stat", lying_stat)
    _, err = _bounded(lambda: safe_io.read_bytes(fifo))
    assert isinstance(err, safe_io.FileReadError) and "not a regular file" in str(err)
    assert stat.S_ISFIFO(real_stat(fifo).st_mode)


# ---------------------------------------------------------------- each reader

def test_reference_csv_reader(tmp_path, fifo):
    assert _refused(lambda: trajectories.from_csv(ZERO), "not a regular file") < 2.0
    _refused(lambda: trajectories.from_csv(fifo), "not a regular file")
    good = tmp_path / "ref.csv"
    good.write_text("t,q_0\n0,0\n1,0.5\n2,1\n")
    assert trajectories.from_csv(good).n == 1
    _refused(lambda: trajectories.from_csv(good, max_bytes=10), "exceed the limit of 10")


def test_campaign_toml_reader(tmp_path, fifo):
    pytest.importorskip("distributed")
    from robodyn.campaign import campaigns as cp

    _refused(lambda: cp.read_toml(ZERO), "not a regular file")
    _refused(lambda: cp.Campaign.from_toml(fifo), "not a regular file")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (cp.TOML_MAX_BYTES + 1))
    _refused(lambda: cp.read_toml(big), "exceed the limit")


def test_urdf_reader_shares_the_helper(tmp_path, fifo):
    _refused(lambda: robodyn.load_urdf(ZERO), "not a regular file")
    _refused(lambda: robodyn.load_urdf(str(fifo)), "not a regular file")


def test_dataset_metadata_reader(tmp_path):
    pytest.importorskip("pyarrow")
    from robodyn.campaign.datasets import read_dataset

    d = tmp_path / "d"
    d.mkdir()
    os.symlink(ZERO, d / "_dataset.json")
    _refused(lambda: read_dataset(d), "not a dataset")
    os.unlink(d / "_dataset.json")
    os.mkfifo(d / "_dataset.json")
    _refused(lambda: read_dataset(d), "not a dataset")


# ---------------------------------------------------------------- the command line

@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_cli_simulate_reference_device_or_fifo(tmp_path, kind):
    """`robodyn simulate --reference /dev/zero` (or a FIFO) exits 2 at once with one line,
    instead of reading gigabytes or blocking forever."""
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs")
        path = tmp_path / "ref.csv"
        os.mkfifo(path)
    else:
        path = Path(ZERO)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    p = subprocess.run([*ROBODYN_MODULE, "simulate", "stanford_arm", "--reference", str(path)],
                       capture_output=True, text=True, timeout=60, env=env)
    elapsed = time.perf_counter() - t0
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert "not a regular file" in lines[0] and str(path) in lines[0]
    assert elapsed < 30


def test_csv_within_the_bound_reads_as_before(tmp_path):
    ts = np.linspace(0.0, 1.0, 11)
    q = np.column_stack([np.sin(ts), np.cos(ts)])
    path = tmp_path / "ref.csv"
    np.savetxt(path, np.column_stack([ts, q]), delimiter=",", header="t,q_0,q_1", comments="")
    ref = trajectories.from_csv(path)
    np.testing.assert_allclose(ref(0.5)[0], q[5], rtol=1e-12)
