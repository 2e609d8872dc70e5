"""A dataset folder is checked when it is read and when it is resumed: every chunk present,
its row count, the size and SHA-256 of each file as recorded when it was written; resuming
recomputes a chunk that is not as written; ``overwrite=True`` removes only a dataset's own
files; the metadata does not stop Parquet readers from opening the folder; a custom
sampler's output and the dataset's size are checked before anything is computed."""

import json
import os
import time

import numpy as np
import pytest

pytest.importorskip("dask")
pa = pytest.importorskip("pyarrow")

import robodyn  # noqa: E402
from robodyn.campaign.datasets import DatasetError, read_dataset  # noqa: E402

QUANTITIES = ["q", "qd", "qdd", "tau", "M"]


def _write(path, format="parquet", n=1000, chunk=100, **kwargs):
    robot = robodyn.robots.stanford_arm()
    return robodyn.dataset(robot, n, QUANTITIES, chunk=chunk, path=path, seed=3,
                           format=format, scheduler="synchronous", **kwargs)


@pytest.fixture(params=["parquet", "zarr"])
def written(request, tmp_path):
    if request.param == "zarr":
        pytest.importorskip("zarr")
    return request.param, _write(tmp_path / "d", request.param)


def _chunk_file(path, format, k):
    return path / (f"part-{k:06d}.parquet" if format == "parquet" else f"M/c/{k}/0/0")


def _assert_equal(a, b):
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_written_rows_are_the_robots(written):
    format, path = written
    got = read_dataset(path)
    robot = robodyn.robots.stanford_arm()
    assert got["q"].shape == (1000, 6)
    np.testing.assert_array_equal(got["tau"],
                                  robot.inverse_dynamics(got["q"], got["qd"], got["qdd"]))
    np.testing.assert_array_equal(got["M"], robot.mass_matrix(got["q"]))
    meta = json.loads((path / "_dataset.json").read_text())
    assert meta["complete"] and len(meta["chunks"]) == 10
    assert not (path / "_chunks").exists() and not (path / "dataset.json").exists()


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage"])
def test_read_names_a_missing_or_corrupt_chunk(written, damage):
    """A missing Parquet part used to read as 900 of 1000 rows, a missing Zarr chunk as 100 NaN
    rows, a same-size garbage chunk as wrong numbers."""
    format, path = written
    victim = _chunk_file(path, format, 4)
    if damage == "missing":
        victim.unlink()
    elif damage == "truncated":
        victim.write_bytes(victim.read_bytes()[:-100])
    else:
        data = bytearray(victim.read_bytes())
        data[len(data) // 2:len(data) // 2 + 64] = os.urandom(64)
        victim.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match=r"chunk 4 .*(missing|corrupt|not as written)") as e:
        read_dataset(path)
    assert str(path) in str(e.value) and victim.name in str(e.value)


def test_resume_recomputes_a_corrupt_or_missing_chunk(written, tmp_path):
    format, path = written
    reference = read_dataset(path)
    bad, gone = _chunk_file(path, format, 2), _chunk_file(path, format, 7)
    keep = _chunk_file(path, format, 5)
    data = bytearray(bad.read_bytes())
    data[200:208] = b"garbage!"
    bad.write_bytes(bytes(data))
    gone.unlink()
    before = keep.stat().st_mtime_ns
    time.sleep(0.01)
    _write(path, format)
    assert keep.stat().st_mtime_ns == before  # a good chunk is not written again
    _assert_equal(read_dataset(path), reference)


def test_parquet_readers_open_the_folder(tmp_path):
    path = _write(tmp_path / "d")
    table = pa.parquet.read_table(path)  # _dataset.json is skipped (a leading underscore)
    assert table.num_rows == 1000 and "M_5_5" in table.column_names
    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(path)
    np.testing.assert_array_equal(frame["tau_0"].to_numpy(), read_dataset(path)["tau"][:, 0])


def test_old_layout_still_reads(tmp_path):
    """A folder written before the chunk records (dataset.json, no checksums) reads, and a
    missing part is named rather than read as fewer rows."""
    path = _write(tmp_path / "d")
    reference = read_dataset(path)
    meta = json.loads((path / "_dataset.json").read_text())
    del meta["chunks"]
    (path / "dataset.json").write_text(json.dumps(meta))
    (path / "_dataset.json").unlink()
    _assert_equal(read_dataset(path), reference)
    (path / "part-000009.parquet").unlink()
    with pytest.raises(DatasetError, match="chunk 9 is missing its file part-000009.parquet"):
        read_dataset(path)


def test_overwrite_removes_only_the_datasets_own_files(tmp_path):
    path = _write(tmp_path / "d")
    (path / "notes.txt").write_text("mine")
    (path / "results").mkdir()
    (path / "results" / "table.csv").write_text("1,2\n")
    robot = robodyn.robots.stanford_arm()
    with pytest.raises(DatasetError, match=r"not a dataset's \(notes.txt, results\)"):
        robodyn.dataset(robot, 50, ["q"], chunk=10, path=path, overwrite=True)
    assert (path / "notes.txt").read_text() == "mine"
    assert (path / "results" / "table.csv").is_file()
    assert len(list(path.glob("part-*.parquet"))) == 10  # nothing removed
    # a folder of the dataset's own files only (also Zarr arrays of its quantities) is replaced
    (path / "notes.txt").unlink()
    (path / "results" / "table.csv").unlink()
    (path / "results").rmdir()
    out = robodyn.dataset(robot, 50, ["q"], chunk=10, path=path, overwrite=True,
                          scheduler="synchronous")
    assert sorted(p.name for p in out.iterdir()) == ["_dataset.json"] + [
        f"part-{k:06d}.parquet" for k in range(5)]
    assert read_dataset(out)["q"].shape == (50, 6)


def test_overwrite_refuses_a_foreign_file_inside_a_zarr_array(tmp_path):
    pytest.importorskip("zarr")
    path = _write(tmp_path / "z", "zarr")
    (path / "M" / "mine.txt").write_text("not Zarr's")
    robot = robodyn.robots.stanford_arm()
    with pytest.raises(DatasetError, match=r"not a dataset's \(M\)"):
        robodyn.dataset(robot, 50, ["q"], chunk=10, path=path, overwrite=True)
    assert (path / "M" / "mine.txt").is_file() and (path / "M" / "c" / "0").is_dir()


def _complex_sampler(rng, m):
    q = rng.uniform(-1, 1, (m, 6)) + 1j
    return q, np.zeros((m, 6)), np.zeros((m, 6))


def _string_sampler(rng, m):
    return np.full((m, 6), "0.5"), np.zeros((m, 6)), np.zeros((m, 6))


def _nan_sampler(rng, m):
    return np.full((m, 6), np.nan), np.zeros((m, 6)), np.zeros((m, 6))


@pytest.mark.parametrize("sampler, match", [(_complex_sampler, "q has dtype complex128"),
                                            (_string_sampler, "q has dtype <U3"),
                                            (_nan_sampler, "q has non-finite values")])
def test_sampler_output_must_be_real_finite_numbers(sampler, match):
    import dask

    robot = robodyn.robots.stanford_arm()
    arrays = robodyn.dataset(robot, 20, ["q", "tau"], sampler=sampler, chunk=10)
    with pytest.raises(ValueError, match=f"sampler: {match}"):
        dask.compute(arrays["tau"], scheduler="synchronous")


def test_size_bounds_are_checked_before_any_task(tmp_path):
    robot = robodyn.robots.stanford_arm()
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"10000000 chunks, over the limit of 100000; raise "
                                         r"chunk to at least 10000000 rows"):
        robodyn.dataset(robot, 10**12, ["q"])
    with pytest.raises(ValueError, match=r"chunk: .* GiB per chunk, over the limit of 4 GiB"):
        robodyn.dataset(robot, 10**10, ["q", "M"], chunk=10**8, path=tmp_path / "x")
    assert time.perf_counter() - t0 < 2.0
    assert not (tmp_path / "x").exists()
