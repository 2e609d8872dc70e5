"""Dataset benchmarks of bench/bench_campaign.py in this process: where a written chunk's CPU goes
(breakdown) and whole dataset jobs (--dataset-job)."""


from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import robodyn
from robodyn import campaign as cp
from robodyn.campaign.datasets import uniform_sampler

import campaign_common as common  # noqa: E402  (QUICK, set by bench_campaign.py --quick)
from campaign_common import cpu_seconds, cpu_since, load  # noqa: E402,F401


def bench_breakdown(tmp, chunk=200_000, rounds=7):
    """Where a written chunk's CPU time goes, in this process (one thread), each step timed
    by process CPU time, the steps interleaved round by round, medians: the reference batch
    call (ID + M on ready states into new arrays), the state draw, the batched calls on
    blocks into reused outputs with the transpose into columns (several block sizes), the
    whole-chunk calls then the transpose (the previous pipeline), the Parquet encoding and
    write, the Dask task around it (synchronous scheduler)."""
    from robodyn import datasets as ds
    from robodyn.campaign import chunks, dataset_files, writers

    robot = robodyn.robots.intelledex_605()
    if common.QUICK:
        chunk, rounds = chunk // 10, 3
    quantities = ["q", "qd", "qdd", "tau", "M"]
    robodyn.set_num_threads(1)
    sampler = uniform_sampler(robot)
    names = [c for q in quantities
             for c in dataset_files.column_names(q, chunks.shape_of(ds.QUANTITIES[q][2], robot.n))]
    q, qd, qdd = sampler(np.random.default_rng(0), chunk)
    blocks = (512, 2048, 8192, chunk)
    steps = {}

    def cpu(name, f):
        c0 = time.process_time()
        r = f()
        steps.setdefault(name, []).append(time.process_time() - c0)
        return r

    def transpose(parts):  # the previous pipeline: whole-chunk arrays to columns
        return [np.ascontiguousarray(v.reshape(chunk, -1).T) for v in parts.values()]

    f = str(Path(tmp) / "b.parquet")
    parts = chunks.chunk(robot, quantities, sampler, 0, 0, chunk)
    cols = chunks.chunk_columns(robot, quantities, sampler, 0, 0, chunk)
    # Parquet layouts and writer options (the same numbers): M's upper triangle only (it is
    # symmetric: 21 of its 36 columns), and a FixedSizeList column per quantity (the row-major
    # arrays as they are, no transpose)
    n = robot.n
    upper = [i * n + j for i in range(n) for j in range(i, n)]
    tri_names = names[:3 * n + n] + [names[4 * n + k] for k in upper]
    tri_cols = np.concatenate([cols[:4 * n], cols[4 * n:][upper]])
    tri_block = np.empty((2048, n, n))

    def pack_upper(r):  # M computed in blocks of 2,048 rows, its upper triangle packed
        out = chunks.buffer("upper", (chunk, len(upper)))
        for i in range(0, chunk, 2048):
            j = min(i + 2048, chunk)
            robot.mass_matrix(q[i:j], out=tri_block[:j - i])
            np.take(tri_block[:j - i].reshape(j - i, n * n), upper, axis=1, out=out[i:j])

    def parquet(names, cols, **options):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({name: pa.array(c) for name, c in zip(names, cols)})
        kw = dict(compression="none", use_dictionary=False, write_statistics=False,
                  write_batch_size=65_536)
        pq.write_table(table, f, **{**kw, **options})

    def parquet_lists(r):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({k: pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)),
                                                               v[0].size)
                          for k, v in parts.items()})
        pq.write_table(table, f, compression="none", use_dictionary=False,
                       write_statistics=False, write_batch_size=65_536)

    def raw(r):  # the bytes alone, one write into one new file
        with open(Path(tmp) / "raw", "wb") as fh:
            for v in parts.values():
                fh.write(v.data)
        return Path(tmp) / "raw"

    # Zarr arrays of 2 x rounds chunks, created empty: round r writes its chunk 2 r (the
    # write alone) and 2 r + 1 (the whole task), each into a new file
    zpath = Path(tmp) / "zarr"
    zpath.mkdir()
    ds._zarr_arrays(zpath, [(k, v.shape[1:]) for k, v in parts.items()], 2 * rounds * chunk,
                    chunk, None, 2 * rounds)
    zarrs = {}

    def zarr_write(r):
        import zarr

        for name, v in parts.items():
            z = zarrs.get(name) or zarr.open_array(str(zpath / name), mode="r+",
                                                   config={"write_empty_chunks": True})
            zarrs[name] = z
            z[2 * r * chunk:(2 * r + 1) * chunk] = v

    def dataset(r, format="parquet"):
        return robodyn.dataset(robot, chunk, quantities, chunk=chunk, path=Path(tmp) / f"s{r}",
                               scheduler="synchronous", format=format)

    todo = [("batch call ID + M", lambda r: (robot.inverse_dynamics(q, qd, qdd),
                                             robot.mass_matrix(q))),
            ("draw states", lambda r: chunks.states(robot, sampler, 0, r, chunk)),
            ("draw + whole-chunk calls", lambda r: chunks.chunk(robot, quantities, sampler, 0, r,
                                                             chunk)),
            ("transpose whole-chunk results", lambda r: transpose(parts))]
    todo += [(f"draw + calls in blocks of {b} + columns",
              lambda r, b=b: chunks.chunk_columns(robot, quantities, sampler, 0, r, chunk, b))
             for b in blocks]
    todo += [("the same, blocks of 2048, buffers reused", lambda r: chunks.chunk_columns(
                 robot, quantities, sampler, 0, r, chunk, 2048, reuse=True)),
             ("Parquet encode + write", lambda r: writers.write_columns(names, cols, f, None)),
             ("Parquet, store_schema=False", lambda r: parquet(names, cols, store_schema=False)),
             ("Parquet, data pages of 64 MB", lambda r: parquet(names, cols,
                                                                 data_page_size=1 << 26)),
             ("Parquet, data page version 2.0", lambda r: parquet(names, cols,
                                                                  data_page_version="2.0")),
             ("Parquet, BYTE_STREAM_SPLIT encoding", lambda r: parquet(
                 names, cols, column_encoding="BYTE_STREAM_SPLIT")),
             ("Parquet, M's upper triangle (21 of 36 columns)", lambda r: parquet(tri_names,
                                                                                  tri_cols)),
             ("Parquet, a FixedSizeList column per quantity", parquet_lists),
             ("M in blocks, its upper triangle packed", pack_upper),
             ("raw bytes: one write into a new file", raw),
             ("draw + whole-chunk calls into reused buffers (Zarr writer)",
              lambda r: chunks.chunk_reused(robot, quantities, sampler, 0, r, chunk)),
             ("Zarr write, uncompressed (one chunk per quantity)", zarr_write),
             ("whole chunk task (draw, calls, columns, Parquet)",
              lambda r: writers.write_chunk(robot, quantities, sampler, 0, r, chunk, f, None)),
             ("whole chunk task, Zarr (draw, calls, write)",
              lambda r: writers.write_zarr_chunk(robot, quantities, sampler, 0, 2 * r + 1, chunk,
                                             str(zpath), chunk)),
             ("robodyn.dataset, one chunk, synchronous", dataset),
             ("robodyn.dataset, one chunk, synchronous, Zarr",
              lambda r: dataset(r, "zarr"))]
    # the steps in a new order each round (a step's cost depends on what ran before it: the
    # memory freed, the cache)
    order = list(range(len(todo)))
    for r in range(rounds):
        random.Random(r).shuffle(order)
        for i in order:
            name, step = todo[i]
            made = cpu(name, lambda: step(r))
            if isinstance(made, Path):  # (removed, not timed)
                shutil.rmtree(made) if made.is_dir() else made.unlink()
    chunks.release_buffers()
    steps = {name: steps[name] for name, _ in todo}
    med = {k: statistics.median(v) for k, v in steps.items()}
    ref = med["batch call ID + M"]
    for k, v in med.items():
        print(f"  {k:52s} {1e3 * v:7.1f} ms CPU  ({ref / v:.2f} of the batch call's rate)",
              flush=True)
    return {"chunk": chunk, "rounds": rounds, "cpu_s": steps, "median_cpu_s": med,
            "rate_vs_batch_call": {k: ref / v for k, v in med.items()}}


def bench_dataset_job(dirs, rows=1_600_000, chunk=200_000, rounds=5, pause=3.0, one_core=True):
    """The figure: rows per second per core of a whole ``robodyn.dataset`` job (Intelledex 605,
    q, qd, qdd, tau, M, ``rows`` rows in chunks of ``chunk``) against one batch call per
    quantity (ID, M) on the same rows in this process, by wall-clock time and by this
    process's CPU time (all its threads, user + system). With ``one_core`` the process is
    pinned to one CPU (``sched_setaffinity``): the job, its writer thread included, uses one
    core, so its rows per wall-second are its rows per second per core. The variants
    interleaved in a new order each round, medians over ``rounds``. Each written dataset is
    removed after its timing, then ``pause`` seconds pass: the kernel hands its freed pages
    back to the host (free page reporting), so every call writes into memory as a new job
    does, not into the pages the previous one just freed. Variants: the Zarr writer
    (``format="zarr"``, uncompressed: raw chunk files written with ``O_DIRECT`` from the
    batched calls' outputs, overlapped with the next block's calls), the same without
    ``O_DIRECT``, the previous writer (each chunk through Zarr's store after the whole
    chunk's calls), Parquet; and the draw + batched calls alone (``robodyn.dataset`` without
    a path, the chunks reduced)."""
    import dask

    from robodyn.campaign import writers

    robot = robodyn.robots.intelledex_605()
    if common.QUICK:
        rows, chunk, rounds, pause = rows // 10, chunk // 10, 2, 0.5
    quantities = ["q", "qd", "qdd", "tau", "M"]
    robodyn.set_num_threads(1)
    cpus = os.sched_getaffinity(0)
    if one_core:
        os.sched_setaffinity(0, {min(cpus)})
    rng = np.random.default_rng(0)
    q, qd, qdd = uniform_sampler(robot)(rng, chunk)

    def batch(where, r):
        for _ in range(rows // chunk):
            robot.inverse_dynamics(q, qd, qdd)
            robot.mass_matrix(q)

    def compute(where, r):
        arrays = robodyn.dataset(robot, rows, quantities, chunk=chunk, seed=r)
        dask.compute(*[a.sum() for a in arrays.values()], scheduler="synchronous")

    def write(format, raw=True, direct=True):
        def run(where, r):
            saved = writers._raw_layout, writers._DIRECT
            if not raw:
                writers._raw_layout = lambda z: False
            writers._DIRECT = direct
            try:
                return robodyn.dataset(robot, rows, quantities, chunk=chunk, seed=r,
                                       path=Path(where) / f"job{r}", format=format,
                                       scheduler="synchronous")
            finally:
                writers._raw_layout, writers._DIRECT = saved
        return run

    variants = [("batch call ID + M", None, batch), ("draw + batched calls, no file", None,
                                                       compute)]
    for label, where in dirs.items():
        variants += [(f"{label}: zarr (raw chunk files, O_DIRECT, overlapped)", where,
                      write("zarr")),
                     (f"{label}: zarr, buffered writes (no O_DIRECT), overlapped", where,
                      write("zarr", direct=False)),
                     (f"{label}: zarr through Zarr's store (the previous writer)", where,
                      write("zarr", raw=False)),
                     (f"{label}: parquet", where, write("parquet"))]
    # warm-up: imports, the first chunk's buffers
    for name, where, f in variants:
        made = f(where or tempfile.gettempdir(), 99)
        if isinstance(made, Path):
            shutil.rmtree(made)

    def timed(f, where, r):
        r0 = os.times()
        t0 = time.perf_counter()
        made = f(where, r)
        wall = time.perf_counter() - t0
        r1 = os.times()
        if isinstance(made, Path):  # (removed, not timed)
            shutil.rmtree(made)
        return {"wall_s": wall, "cpu_s": (r1.user - r0.user) + (r1.system - r0.system),
                "user_s": r1.user - r0.user, "sys_s": r1.system - r0.system}

    # each variant timed next to its own batch calls on the same rows (before or after it,
    # alternately): the pair shares the load of the moment, and its ratio is one sample
    res = {name: [] for name, _, _ in variants[1:]}
    ref = {name: [] for name, _, _ in variants[1:]}
    loads = []
    try:
        for r in range(rounds):
            order = list(range(1, len(variants)))
            random.Random(r).shuffle(order)
            for i in order:
                name, where, f = variants[i]
                time.sleep(pause)  # (the freed pages reported to the host: a new job's memory)
                first = (r + i) % 2
                if first:
                    ref[name].append(timed(batch, None, r))
                res[name].append(timed(f, where, r))
                if not first:
                    ref[name].append(timed(batch, None, r))
            loads.append(load()[0])
            print(f"  round {r} (load {loads[-1]:.1f}), vs the batch call, wall / CPU: "
                  + ", ".join(f"{name.split(' (')[0]} "
                              f"{ref[name][-1]['wall_s'] / v[-1]['wall_s']:.2f}/"
                              f"{ref[name][-1]['cpu_s'] / v[-1]['cpu_s']:.2f}"
                              for name, v in res.items()), flush=True)
    finally:
        if one_core:
            os.sched_setaffinity(0, cpus)
    med = {name: {k: statistics.median(x[k] for x in v) for k in v[0]}
           for name, v in res.items()}
    everyref = [x for v in ref.values() for x in v]
    med["batch call ID + M"] = {k: statistics.median(x[k] for x in everyref)
                                for k in everyref[0]}
    ratio = {how: {name: statistics.median(b[how + "_s"] / x[how + "_s"]
                                           for b, x in zip(ref[name], v))
                   for name, v in res.items()} for how in ("wall", "cpu")}
    for how in ratio:
        ratio[how]["batch call ID + M"] = 1.0
    out = {"rows": rows, "chunk": chunk, "rounds": rounds, "quantities": quantities,
           "dirs": dirs, "one_core": one_core, "pause_s": pause, "load": loads,
           "bytes_per_row": 8 * (4 * 6 + 36), "per_round": res, "batch_next_to_each": ref,
           "median": med,
           "rows_per_wall_s": {k: rows / v["wall_s"] for k, v in med.items()},
           "rows_per_cpu_s": {k: rows / v["cpu_s"] for k, v in med.items()},
           # the median of the per-pair ratios (the variant against its own batch calls)
           "vs_batch_call_wall": ratio["wall"], "vs_batch_call_cpu": ratio["cpu"]}
    print(f"  {rows:,} rows in chunks of {chunk:,}, {rounds} rounds, load "
          f"{min(loads):.1f}-{max(loads):.1f}; vs the batch call, wall (one core) / CPU:")
    for k in med:
        print(f"    {k:62s} {out['vs_batch_call_wall'][k]:.2f} / "
              f"{out['vs_batch_call_cpu'][k]:.2f}   ({1e3 * med[k]['wall_s'] / (rows / chunk):.0f}"
              f" ms wall, {1e3 * med[k]['cpu_s'] / (rows / chunk):.0f} ms CPU a chunk, of "
              f"which sys {1e3 * med[k]['sys_s'] / (rows / chunk):.0f})", flush=True)
    return out
