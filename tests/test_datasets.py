"""Datasets (robodyn.dataset): chunks are the robot's own batched calls, written as Parquet or
Zarr, locally or on a 2-worker LocalCluster on 127.0.0.1; a SIGKILLed writer resumes."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")

import robodyn  # noqa: E402
from robodyn.campaign.datasets import read_dataset  # noqa: E402
from _campaign import cluster  # noqa: E402,F401  (the module's LocalCluster fixture)


QUANTITIES = ["q", "qd", "qdd", "tau", "M", "h", "g", "kinetic_energy"]


def test_dataset_chunks_are_the_robots_batched_calls():
    robot = robodyn.robots.intelledex_605()
    arrays = robodyn.dataset(robot, 1000, QUANTITIES, chunk=300, seed=4)
    assert arrays["M"].shape == (1000, 6, 6) and arrays["M"].chunks[0] == (300, 300, 300, 100)
    import dask

    got = dict(zip(arrays, dask.compute(*arrays.values(), scheduler="threads")))
    q, qd, qdd = got["q"], got["qd"], got["qdd"]
    lo, hi = robot.position_limits
    assert np.all((q >= lo) & (q <= hi)) and np.all(np.abs(qd) <= robot.velocity_limits)
    np.testing.assert_array_equal(got["tau"], robot.inverse_dynamics(q, qd, qdd))
    np.testing.assert_array_equal(got["M"], robot.mass_matrix(q))
    np.testing.assert_array_equal(got["kinetic_energy"], robot.kinetic_energy(q, qd))
    # the quantities agree with each other: tau = M qdd + h (h has gravity), KE = qd'M qd / 2
    np.testing.assert_allclose(got["tau"], np.einsum("kij,kj->ki", got["M"], qdd) + got["h"],
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got["kinetic_energy"],
                               0.5 * np.einsum("ki,kij,kj->k", qd, got["M"], qd), rtol=1e-10)
    # chunk k draws from SeedSequence(seed, spawn_key=(k,)): the schedulers agree
    again = robodyn.dataset(robot, 1000, ["q", "tau"], chunk=300, seed=4)
    q2, tau2 = dask.compute(again["q"], again["tau"], scheduler="synchronous")
    np.testing.assert_array_equal(q2, q)
    np.testing.assert_array_equal(tau2, got["tau"])


def test_dataset_files_parquet_and_zarr(cluster, tmp_path):
    robot = robodyn.robots.stanford_arm()
    p = robodyn.dataset(robot, 700, QUANTITIES, chunk=250, path=tmp_path / "p", seed=2)
    assert sorted(x.name for x in p.glob("part-*.parquet")) == [
        "part-000000.parquet", "part-000001.parquet", "part-000002.parquet"]
    ref = read_dataset(p)
    np.testing.assert_array_equal(ref["M"], robot.mass_matrix(ref["q"]))
    np.testing.assert_array_equal(ref["g"], robot.gravity_torques(ref["q"]))
    # the same dataset on the distributed cluster (the robot pickled to the workers)
    d = robodyn.dataset(robot, 700, QUANTITIES, chunk=250, path=tmp_path / "d", seed=2,
                        scheduler=cluster.scheduler_address)
    got = read_dataset(d)
    for k in QUANTITIES:
        np.testing.assert_array_equal(got[k], ref[k])
    zarr = pytest.importorskip("zarr")
    z = robodyn.dataset(robot, 700, QUANTITIES, chunk=250, path=tmp_path / "z", seed=2,
                        format="zarr")
    got = read_dataset(z)
    for k in QUANTITIES:
        np.testing.assert_array_equal(got[k], ref[k])
    # uncompressed: a Zarr chunk file is its rows' raw little-endian bytes (the last chunk
    # padded to the chunk's size), readable by zarr itself
    M = zarr.open_array(str(z / "M"), mode="r")
    assert M.shape == (700, 6, 6) and M.chunks == (250, 6, 6) and not M.compressors
    raw = [(z / "M" / "c" / str(k) / "0" / "0").read_bytes() for k in range(3)]
    assert raw[1] == ref["M"][250:500].astype("<f8").tobytes()
    assert len(raw[2]) == 250 * 36 * 8 and raw[2][:200 * 36 * 8] == ref["M"][500:].tobytes()
    np.testing.assert_array_equal(M[...], ref["M"])
    # the same on the distributed cluster, and compressed
    d = robodyn.dataset(robot, 700, QUANTITIES, chunk=250, path=tmp_path / "dz", seed=2,
                        format="zarr", scheduler=cluster.scheduler_address)
    c = robodyn.dataset(robot, 700, QUANTITIES, chunk=250, path=tmp_path / "cz", seed=2,
                        format="zarr", compression="zstd")
    assert zarr.open_array(str(c / "M"), mode="r").compressors
    for path in (d, c):
        got = read_dataset(path)
        for k in QUANTITIES:
            np.testing.assert_array_equal(got[k], ref[k])
    with pytest.raises(ValueError, match="another dataset"):
        robodyn.dataset(robot, 10, ["q"], path=tmp_path / "z")
    with pytest.raises(ValueError, match="compression.*lz4"):
        robodyn.dataset(robot, 10, ["q"], path=tmp_path / "bad", format="zarr",
                        compression="lz4")
    assert not (tmp_path / "bad").exists()


def test_dataset_bad_arguments():
    robot = robodyn.robots.stanford_arm()
    for kwargs, match in (({"n": 0}, "n:"), ({"quantities": ["q", "torque"]}, "torque"),
                          ({"quantities": ["q", "q"]}, "distinct"), ({"chunk": 0}, "chunk"),
                          ({"sampler": "gaussian"}, "sampler"), ({"format": "csv"}, "format")):
        args = {"n": 10, **kwargs}
        with pytest.raises(ValueError, match=match):
            robodyn.dataset(robot, **args)
    with pytest.raises(TypeError, match="robot"):
        robodyn.dataset("stanford_arm", 10)


def test_dataset_custom_sampler():
    robot = robodyn.robots.stanford_arm()

    arrays = robodyn.dataset(robot, 50, ["q", "qd", "tau"], sampler=_zero_velocity_sampler,
                             chunk=20)
    import dask

    q, qd, tau = dask.compute(arrays["q"], arrays["qd"], arrays["tau"], scheduler="sync")
    assert np.all(qd == 0.0)
    np.testing.assert_allclose(tau, robot.gravity_torques(q), rtol=1e-12, atol=1e-12)


def _zero_velocity_sampler(rng, m):
    q = rng.uniform(-1.0, 1.0, (m, 6))
    return q, np.zeros((m, 6)), np.zeros((m, 6))


_DATASET_SCRIPT = """
import sys
import robodyn
robot = robodyn.robots.intelledex_605()
robodyn.dataset(robot, 60_000, ["q", "qd", "qdd", "tau", "M"], chunk=500, seed=9,
                path=sys.argv[1], format=sys.argv[2])
"""

# the files that hold a written chunk: a Parquet part, or a Zarr chunk of the last quantity
_CHUNK_FILES = {"parquet": "part-*.parquet", "zarr": "M/c/*/0/0"}


@pytest.mark.parametrize("format", ["parquet", "zarr"])
def test_dataset_resumes_after_sigkill(tmp_path, format):
    """robodyn.dataset writing Parquet or Zarr in a child process, SIGKILLed once a few chunks
    are written; the same call again writes only the missing chunks (the files already there
    are untouched), and the finished dataset equals one written without interruption."""
    if format == "zarr":
        pytest.importorskip("zarr")
    out = tmp_path / "killed"
    files = _CHUNK_FILES[format]
    proc = subprocess.Popen([sys.executable, "-c", _DATASET_SCRIPT, str(out), format],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if len(list(out.glob(files))) >= 3:
                break
            time.sleep(0.005)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.kill()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    before = {p: p.stat().st_mtime_ns for p in out.glob(files)}
    assert 3 <= len(before) < 120
    with pytest.raises(ValueError, match="incomplete"):
        read_dataset(out)
    robot = robodyn.robots.intelledex_605()
    quantities = ["q", "qd", "qdd", "tau", "M"]
    # another dataset in that directory is refused; the same one resumes
    with pytest.raises(ValueError, match="another dataset"):
        robodyn.dataset(robot, 60_000, quantities, chunk=500, seed=10, path=out, format=format)
    robodyn.dataset(robot, 60_000, quantities, chunk=500, seed=9, path=out, format=format)
    assert {p: p.stat().st_mtime_ns for p in out.glob(files) if p in before} == before
    assert len(list(out.glob(files))) == 120
    assert not list(out.rglob("*.tmp")) and not list(out.rglob("*.partial"))
    got = read_dataset(out)
    ref = read_dataset(robodyn.dataset(robot, 60_000, quantities, chunk=500, seed=9,
                                       path=tmp_path / "whole", scheduler="synchronous"))
    for k in quantities:
        np.testing.assert_array_equal(got[k], ref[k])


def test_written_chunks_equal_the_lazy_arrays_across_blocks(tmp_path):
    """A written chunk is computed in blocks of 2,048 rows into reused buffers (the last block
    partial, two chunks through one thread's buffers): the files hold exactly the lazy arrays'
    numbers, and the buffers are freed at the end."""
    from robodyn.campaign import chunks as datasets

    robot = robodyn.robots.intelledex_605()
    quantities = ["q", "tau", "qd", "M", "kinetic_energy", "qdd", "C"]
    path = robodyn.dataset(robot, 9_000, quantities, chunk=5_000, path=tmp_path / "d", seed=3,
                           scheduler="synchronous")
    assert datasets._buffers == {}
    got = read_dataset(path)
    import dask

    arrays = robodyn.dataset(robot, 9_000, quantities, chunk=5_000, seed=3)
    ref = dict(zip(arrays, dask.compute(*arrays.values(), scheduler="synchronous")))
    for k in quantities:
        np.testing.assert_array_equal(got[k], ref[k])
    np.testing.assert_array_equal(got["C"][4_321], robot.coriolis_matrix(got["q"][4_321],
                                                                         got["qd"][4_321]))


def _zarr_chunk_bytes(path, names):
    """Every chunk file of each quantity's Zarr array: {relative path: bytes}."""
    return {str(p.relative_to(path)): p.read_bytes()
            for name in names for p in sorted((path / name).rglob("c/**/*")) if p.is_file()}


def test_zarr_raw_chunks_direct_and_buffered_are_the_same_bytes(tmp_path, monkeypatch):
    """An uncompressed Zarr chunk is written by robodyn itself in blocks of 512 rows (the
    write of each block overlapping the next block's calls), through O_DIRECT where the file
    system takes it (the aligned part of each block) and ordinary writes for the rest (the
    last block's tail, the last chunk's NaN padding). The files are the same bytes with
    O_DIRECT, without it, and when the file system refuses it at the first write (EINVAL); they
    hold exactly the lazy arrays' rows, readable by Zarr; no temporary file is left."""
    zarr = pytest.importorskip("zarr")
    import dask
    import errno
    import fcntl

    from robodyn.campaign import writers as datasets

    robot = robodyn.robots.intelledex_605()
    quantities = ["q", "tau", "M", "kinetic_energy", "qd", "qdd"]
    args = dict(n=5_000, quantities=quantities, chunk=2_100, seed=5, format="zarr",
                scheduler="synchronous")
    real = datasets._pwrite
    calls = {"direct": 0, "buffered": 0}

    def counting(fd, data, offset):
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0))
        calls["direct" if direct else "buffered"] += 1
        if direct:  # what O_DIRECT needs: page-aligned offset and length
            assert offset % 4096 == 0 and len(data) % 4096 == 0
        return real(fd, data, offset)

    monkeypatch.setattr(datasets, "_pwrite", counting)
    direct = robodyn.dataset(robot, path=tmp_path / "direct", **args)
    used_direct = calls["direct"]
    monkeypatch.setattr(datasets, "_DIRECT", False)
    calls.update(direct=0, buffered=0)
    buffered = robodyn.dataset(robot, path=tmp_path / "buffered", **args)
    assert calls["direct"] == 0 and calls["buffered"] > 0

    def refusing(fd, data, offset):  # a file system that opens O_DIRECT but refuses the write
        if fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, data, offset)

    monkeypatch.setattr(datasets, "_DIRECT", True)
    monkeypatch.setattr(datasets, "_pwrite", refusing)
    refused = robodyn.dataset(robot, path=tmp_path / "refused", **args)
    monkeypatch.setattr(datasets, "_pwrite", real)
    files = _zarr_chunk_bytes(direct, quantities)
    assert len(files) == 3 * len(quantities)  # chunks of 2,100, 2,100 and 800 rows
    assert _zarr_chunk_bytes(buffered, quantities) == files
    assert _zarr_chunk_bytes(refused, quantities) == files
    try:  # where tmp_path's file system takes O_DIRECT, the aligned blocks went through it
        os.close(os.open(tmp_path / "probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT))
        assert used_direct >= 3 * len(quantities)
    except (AttributeError, OSError):
        pass
    arrays = robodyn.dataset(robot, 5_000, quantities, chunk=2_100, seed=5)
    ref = dict(zip(arrays, dask.compute(*arrays.values(), scheduler="synchronous")))
    got = read_dataset(direct)
    for k in quantities:
        np.testing.assert_array_equal(got[k], ref[k])
    # the last chunk: 800 rows, then NaN up to the chunk's 2,100 rows, as Zarr pads it
    last = np.frombuffer(files["M/c/2/0/0"], "<f8").reshape(2_100, 6, 6)
    np.testing.assert_array_equal(last[:800], ref["M"][4_200:])
    assert np.isnan(last[800:]).all()
    assert zarr.open_array(str(direct / "M"), mode="r")[4_199, 2, 3] == ref["M"][4_199, 2, 3]
    for path in (direct, buffered, refused):
        assert not list(path.rglob("*.partial"))


def test_zarr_raw_chunk_write_failure_leaves_no_partial_file(tmp_path, monkeypatch):
    """A chunk whose write fails (here: the disk full at the 4th write) raises that error out
    of robodyn.dataset and leaves none of its temporary files; the same call then resumes and
    gives the whole dataset."""
    pytest.importorskip("zarr")
    import errno

    from robodyn.campaign import writers as datasets

    robot = robodyn.robots.stanford_arm()
    quantities = ["q", "qd", "qdd", "tau", "M"]
    args = dict(quantities=quantities, chunk=1_500, seed=8, format="zarr",
                scheduler="synchronous")
    real = datasets._pwrite
    count = [0]

    def full(fd, data, offset):
        count[0] += 1
        if count[0] == 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(datasets, "_pwrite", full)
    with pytest.raises(OSError, match="No space left"):
        robodyn.dataset(robot, 3_000, path=tmp_path / "d", **args)
    assert not list((tmp_path / "d").rglob("*.partial"))
    assert not list((tmp_path / "d").glob("*/c/0/*"))  # the failed chunk: no file at all
    monkeypatch.setattr(datasets, "_pwrite", real)
    got = read_dataset(robodyn.dataset(robot, 3_000, path=tmp_path / "d", **args))
    np.testing.assert_array_equal(got["M"], robot.mass_matrix(got["q"]))
    np.testing.assert_array_equal(got["tau"],
                                  robot.inverse_dynamics(got["q"], got["qd"], got["qdd"]))
