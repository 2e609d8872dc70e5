"""Campaigns and datasets on Dask: speed-up over serial, per-core throughput, overheads.

    python bench/bench_campaign.py [--rounds 3] [--workers 2] [--json bench/results/campaign.json]

1. Campaign: 400 controlled simulations (Intelledex 605, computed torque, 10 s at 1 kHz, RK4,
   random plant mass errors and measurement noise over a grid of gains), run serially in this
   process and on a LocalCluster of ``--workers`` processes (started once, outside the timing;
   its start-up is reported apart), alternating, ``--rounds`` times each; the ratio of the
   medians is the speed-up. The two tables are checked equal.
2. Dataset: where a written chunk's CPU goes, step by step in this process (``breakdown``,
   also alone with ``--breakdown-only``); rows per CPU-second and per core of
   ``robodyn.dataset`` (q, qd, qdd, tau, M written to Parquet and to uncompressed Zarr, and
   computed without writing; the breakdown also has Parquet's writer options and layouts) on
   the same cluster, against one in-process batch call per quantity on a chunk's worth of
   states, with each process's share and idle background; the cost of gathering a chunk's
   arrays to the client instead of reducing them on the workers. ``--skip-campaign`` for these
   alone (results: ``bench/results/dataset.json``), ``--campaign-only`` for the campaign
   alone.
3. Overheads: the scheduler's cost per task (empty tasks), the bytes shipped per task and per
   result, the client's cost to write a batch; with them, a model of a 4-node x 32-core cluster
   running 10^6 simulations.
4. ``--dataset-job`` (alone; results: ``bench/results/dataset_job.json``): the dataset figure.
   Whole ``robodyn.dataset`` jobs (1,600,000 rows, Zarr and Parquet, into tmpfs and
   ``--job-dir``, default the system's temporary directory) in this process pinned to one core,
   each paired with its own batch calls on the same rows; rows per wall-second and per
   CPU-second against them (``bench_dataset_job``).

The machine's load average is recorded with every figure (other jobs share the cores).
"""

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


def load():
    return os.getloadavg()


QUICK = False  # --quick: a smoke test (40 runs of 1 s, a tenth of the dataset)


def cpu_seconds(client):
    """Process CPU seconds so far: (this process: client and scheduler, sum over workers)."""
    workers = client.run(time.process_time)
    return time.process_time(), sum(workers.values())


def cpu_since(client, before):
    now = cpu_seconds(client)
    return now[0] - before[0], now[1] - before[1]


def make_campaign(runs=400, batch=10):
    if QUICK:
        runs, duration = 40, 1.0
    else:
        duration = 10.0
    return cp.Campaign(
        "intelledex_605",
        controller={"type": "computed-torque", "kd": 40.0},
        simulation={"duration": duration, "dt": 1e-3, "control_rate": 1000.0},
        grid={"controller.kp": [100.0, 200.0, 400.0, 800.0]},
        random={"model.mass_scale": cp.uniform(0.8, 1.2, per="link"),
                "controller.noise_std": cp.loguniform(1e-5, 1e-3)},
        samples=runs // 4, seed=2026, batch=batch, name="bench400")


def bench_campaign(client, rounds, tmp):
    c = make_campaign()
    # warm-up: the workers import robodyn, pyarrow and the simulator once
    t0 = time.perf_counter()
    warm = cp.Campaign("intelledex_605", simulation={"duration": 0.1}, samples=4, batch=1)
    warm.run(Path(tmp) / "warm", client, progress=False)
    warm.run(Path(tmp) / "warm-serial", "serial")
    first = time.perf_counter() - t0
    serial, dist, serial_cpu, dist_cpu, idle_rate = [], [], [], [], []
    tables = {}
    for r in range(rounds):
        for mode in ("serial", "dask"):
            out = Path(tmp) / f"{mode}{r}"
            before = cpu_seconds(client)
            t0 = time.perf_counter()
            res = c.run(out, "serial" if mode == "serial" else client, progress=False)
            dt = time.perf_counter() - t0
            cpu = cpu_since(client, before)
            if mode == "serial":
                serial.append(dt)
                serial_cpu.append(cpu[0])
                idle_rate.append(cpu[1] / dt)  # the idle workers' own CPU per second
            else:
                dist.append(dt)
                dist_cpu.append(cpu)
            tables[mode] = res.table
            print(f"  round {r} {mode:6s} {dt:7.2f} s  cpu: this process {cpu[0]:.2f} s, "
                  f"workers {cpu[1]:.2f} s  load {load()[0]:.2f}", flush=True)
    assert tables["serial"].equals(tables["dask"]), "cluster table differs from serial"
    ok = int(sum(1 for s in tables["serial"]["status"].to_pylist() if s == "ok"))
    # CPU accounting (independent of the other jobs on the machine): the cluster's CPU seconds
    # (workers + client/scheduler) against the serial run's; with w idle cores the speed-up is
    # at most w times this efficiency
    total = [a + b for a, b in dist_cpu]
    eff = statistics.median(serial_cpu) / statistics.median(total)
    # the same without the workers' idle background (heartbeats, monitors: a rate per second,
    # measured while they wait during the serial runs), which grows with the wall time and so
    # with the other jobs' load
    rate = statistics.median(idle_rate)
    net = [a + b - rate * w for (a, b), w in zip(dist_cpu, dist)]
    eff_net = statistics.median(serial_cpu) / statistics.median(net)
    return {"runs": c.runs, "batch": c.batch, "ok": ok, "serial_s": serial, "dask_s": dist,
            "serial_cpu_s": serial_cpu, "dask_cpu_s": dist_cpu, "warm_up_s": first,
            "cpu_efficiency": eff, "speedup_bound_from_cpu": eff * len(client.nthreads()),
            "idle_worker_cpu_per_s": rate, "cpu_efficiency_net_of_idle": eff_net,
            "speedup": statistics.median(serial) / statistics.median(dist),
            "per_run_ms": 1e3 * statistics.median(serial) / c.runs}


def bench_overheads(client, tmp, n_tasks=2000):
    c = make_campaign()
    # the scheduler's cost per task: empty tasks, submitted together
    fs = client.map(_noop, range(100), pure=False)
    client.gather(fs)
    before = cpu_seconds(client)
    t0 = time.perf_counter()
    fs = client.map(_noop, range(n_tasks), pure=False)
    client.gather(fs)
    per_task = (time.perf_counter() - t0) / n_tasks
    cpu_client, cpu_workers = cpu_since(client, before)
    del fs
    # sizes: the campaign (scattered once per worker), a task's result, the robot
    table, ttable = c.run_batch(0)
    (Path(tmp) / "runs").mkdir(parents=True, exist_ok=True)
    t0 = time.process_time()
    for b in range(20):
        c._write(Path(tmp), 1000 + b, table, ttable)
    write = (time.process_time() - t0) / 20
    return {"scheduler_s_per_task": per_task,
            "client_and_scheduler_cpu_s_per_task": cpu_client / n_tasks,
            "worker_cpu_s_per_task": cpu_workers / n_tasks,
            "campaign_pickle_bytes": len(pickle.dumps(c)),
            "robot_pickle_bytes": len(pickle.dumps(c.robot)),
            "result_pickle_bytes_per_batch": len(pickle.dumps((table, ttable))),
            "rows_per_batch": table.num_rows,
            "client_write_s_per_batch": write}


def _noop(i):
    return i


def bench_dataset(client, workers, tmp, rows=2_000_000, chunk=200_000, rounds=3,
                  small=50_000):
    """Rows per second: one batch call per quantity on ``chunk`` states in this process
    (compute only; the reference), against ``robodyn.dataset`` on the cluster, written to
    Parquet (chunks of ``chunk`` and of ``small`` rows) and computed without writing (the
    chunks reduced on the workers, so only the Dask overhead is added to the compute). Per
    CPU-second (this process, which holds the client and the scheduler, plus the workers) and
    per core of wall time; the variants interleaved round by round."""
    import dask

    robot = robodyn.robots.intelledex_605()
    if QUICK:
        rows, chunk, small = rows // 10, chunk // 10, small // 10
    quantities = ["q", "qd", "qdd", "tau", "M"]
    robodyn.set_num_threads(1)
    rng = np.random.default_rng(0)
    q, qd, qdd = uniform_sampler(robot)(rng, chunk)
    # warm-up: imports (dask.array here and on the workers)
    robodyn.dataset(robot, 1000, quantities, chunk=500, path=Path(tmp) / "w1",
                    scheduler=client)
    robodyn.dataset(robot, 1000, quantities, chunk=500, path=Path(tmp) / "w2",
                    scheduler=client, format="zarr")
    res = {}
    parts = {}

    def add(name, wall, cpu):
        res.setdefault(name, []).append(rows / wall / workers)
        res.setdefault(name + "_cpu", []).append(rows / sum(cpu))
        # CPU seconds per chunk: this process (client and scheduler) and the workers, and the
        # idle background of each (heartbeats, monitors: a rate per second of wall time,
        # measured each round while the cluster waits; it grows with the other jobs' load)
        per = rows / {"cluster_write_small": small}.get(name, chunk)  # chunks
        parts.setdefault(name, []).append({"client_scheduler": cpu[0] / per,
                                           "workers": cpu[1] / per,
                                           "client_scheduler_idle": idle[-1][0] * wall / per,
                                           "workers_idle": idle[-1][1] * wall / per})

    idle = []
    for r in range(rounds):
        before = cpu_seconds(client)
        t0 = time.perf_counter()
        time.sleep(2.0)
        cpu = cpu_since(client, before)
        idle.append((cpu[0] / (time.perf_counter() - t0), cpu[1] / (time.perf_counter() - t0)))
        # the reference, three times a round here (the load makes one call vary up to 2x),
        # and once on each worker (the cores and neighbours the cluster's chunks ran with)
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            robot.inverse_dynamics(q, qd, qdd)
            robot.mass_matrix(q)
            res.setdefault("batch", []).append(chunk / (time.perf_counter() - t0))
            res.setdefault("batch_cpu", []).append(chunk / (time.process_time() - c0))
        res.setdefault("batch_cpu_on_workers", []).extend(
            client.run(_batch_rate, chunk).values())
        for name, c, format in (("cluster_write", chunk, "parquet"),
                                ("cluster_write_small", small, "parquet"),
                                ("cluster_write_zarr", chunk, "zarr")):
            before = cpu_seconds(client)
            t0 = time.perf_counter()
            robodyn.dataset(robot, rows, quantities, chunk=c, path=Path(tmp) / f"d{r}",
                            scheduler=client, seed=r, format=format)
            add(name, time.perf_counter() - t0, cpu_since(client, before))
            shutil.rmtree(Path(tmp) / f"d{r}")
        arrays = robodyn.dataset(robot, rows, quantities, chunk=chunk, seed=r + 1)
        before = cpu_seconds(client)
        t0 = time.perf_counter()
        dask.compute(*[a.sum() for a in arrays.values()], scheduler=client)
        add("cluster_compute", time.perf_counter() - t0, cpu_since(client, before))
        print(f"  round {r}: batch call {res['batch'][-1]:,.0f} rows/s "
              f"({res['batch_cpu'][-1]:,.0f} per CPU-s; on the workers "
              f"{res['batch_cpu_on_workers'][-1]:,.0f}); cluster, per core / per CPU-s: "
              f"written {res['cluster_write'][-1]:,.0f} / {res['cluster_write_cpu'][-1]:,.0f}, "
              f"in chunks of {small}: {res['cluster_write_small'][-1]:,.0f} / "
              f"{res['cluster_write_small_cpu'][-1]:,.0f}, Zarr "
              f"{res['cluster_write_zarr'][-1]:,.0f} / {res['cluster_write_zarr_cpu'][-1]:,.0f}, "
              f"computed "
              f"{res['cluster_compute'][-1]:,.0f} / {res['cluster_compute_cpu'][-1]:,.0f}  "
              f"load {load()[0]:.2f}", flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    ratios = {k: med[k] / med["batch_cpu" if k.endswith("_cpu") else "batch"]
              for k in med if k.startswith("cluster")}
    ratios_workers = {k: med[k] / med["batch_cpu_on_workers"]
                      for k in med if k.startswith("cluster") and k.endswith("_cpu")}
    per_chunk = {name: {k: statistics.median(x[k] for x in v) for k in v[0]}
                 for name, v in parts.items()}
    # the batch call's CPU for a chunk's rows against the cluster's, net of the idle background
    sizes = {"cluster_write": chunk, "cluster_write_small": small, "cluster_write_zarr": chunk,
             "cluster_compute": chunk}
    net = {name: sizes[name] / med["batch_cpu"] / (v["client_scheduler"] + v["workers"]
                                                   - v["workers_idle"])
           for name, v in per_chunk.items()}
    # (also net of the client + scheduler's background: an over-estimate when that exceeds
    # what the process used)
    net_both = {name: sizes[name] / med["batch_cpu"] / (
        v["client_scheduler"] + v["workers"] - v["client_scheduler_idle"] - v["workers_idle"])
        for name, v in per_chunk.items()}
    return {"rows": rows, "chunk": chunk, "small_chunk": small, "quantities": quantities,
            "rounds": res, "median_rows_per_s": med, "vs_batch_call": ratios,
            "vs_batch_call_on_the_workers": ratios_workers,
            "idle_cpu_per_s_client_scheduler_workers": idle, "cpu_s_per_chunk": per_chunk,
            "vs_batch_call_per_cpu_s_net_of_worker_idle": net,
            "vs_batch_call_per_cpu_s_net_of_all_idle": net_both,
            "bytes_per_row": 8 * (4 * 6 + 36)}


def _batch_rate(chunk):
    """Rows per CPU-second of one batch call per quantity (ID, M) on ``chunk`` states, in the
    process that runs it (a worker, through ``client.run``)."""
    robot = robodyn.robots.intelledex_605()
    robodyn.set_num_threads(1)
    q, qd, qdd = uniform_sampler(robot)(np.random.default_rng(0), chunk)
    c0 = time.process_time()
    robot.inverse_dynamics(q, qd, qdd)
    robot.mass_matrix(q)
    return chunk / (time.process_time() - c0)


def bench_transfer(client, rows=400_000, chunk=200_000, rounds=7):
    """The cost of moving a chunk's arrays to the client: the lazy arrays of a dataset gathered
    into this process against reduced on the workers (interleaved; CPU seconds per chunk of
    this process, client and scheduler, and of the workers; wall per chunk)."""
    import dask

    robot = robodyn.robots.intelledex_605()
    if QUICK:
        rows, chunk, rounds = rows // 10, chunk // 10, 3
    quantities = ["q", "qd", "qdd", "tau", "M"]
    res = {"gathered": [], "reduced": []}
    for r in range(rounds):
        for mode in ("reduced", "gathered"):
            arrays = robodyn.dataset(robot, rows, quantities, chunk=chunk, seed=r)
            before = cpu_seconds(client)
            t0 = time.perf_counter()
            if mode == "reduced":
                dask.compute(*[a.sum() for a in arrays.values()], scheduler=client)
            else:
                dask.compute(*arrays.values(), scheduler=client)
            wall = time.perf_counter() - t0
            cpu = cpu_since(client, before)
            res[mode].append([cpu[0] * chunk / rows, cpu[1] * chunk / rows, wall * chunk / rows])
    med = {mode: dict(zip(("client_scheduler_cpu_s", "workers_cpu_s", "wall_s"),
                          (statistics.median(x[i] for x in v) for i in range(3))))
           for mode, v in res.items()}
    print(f"  per chunk of {chunk}: {med}  load {load()[0]:.2f}", flush=True)
    return {"rows": rows, "chunk": chunk, "per_chunk": med, "rounds": res}


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
    if QUICK:
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
    if QUICK:
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


def model_cluster(per_run_s, over, start_s, nodes=4, cores=32, n=10**6, batch=100):
    """Time of ``n`` simulations on ``nodes`` x ``cores`` worker processes with the overheads
    measured here: the scheduler (one thread) handles every task, the client (one process)
    writes every batch, the workers add their per-task cost to the compute; the three run
    concurrently, so the slowest sets the pace, plus the last batch (the tail) and the start."""
    workers = nodes * cores
    tasks = n / batch
    compute = (n * per_run_s + tasks * over["worker_cpu_s_per_task"]) / workers
    scheduler = tasks * over["client_and_scheduler_cpu_s_per_task"]
    client = tasks * over["client_write_s_per_batch"]
    tail = batch * per_run_s
    total = max(compute, scheduler, client) + tail + start_s
    return {"simulations": n, "workers": workers, "batch": batch, "tasks": tasks,
            "compute_s": compute, "scheduler_s": scheduler, "client_write_s": client,
            "result_bytes": over["result_pickle_bytes_per_batch"] / over["rows_per_batch"] * n,
            "tail_s": tail, "start_s": start_s, "total_s": total,
            "efficiency": n * per_run_s / workers / total}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=None)
    p.add_argument("--skip-campaign", action="store_true")
    p.add_argument("--breakdown-only", action="store_true",
                   help="only the in-process breakdown of a written chunk (no cluster)")
    p.add_argument("--skip-breakdown", action="store_true",
                   help="no in-process breakdown of a written chunk")
    p.add_argument("--campaign-only", action="store_true",
                   help="only the campaign of 400 simulations (no overheads, no dataset)")
    p.add_argument("--dir", default=None,
                   help="where the files are written (default: /dev/shm, in memory; a disk's "
                        "file system writes differently, e.g. ext4 with large folios)")
    p.add_argument("--quick", action="store_true", help="a smoke test, not a measurement")
    p.add_argument("--dataset-job", action="store_true",
                   help="only the figure: whole robodyn.dataset jobs in this process, pinned to "
                        "one core, against the batch call (tmpfs and --job-dir)")
    p.add_argument("--job-dir", default=tempfile.gettempdir(),
                   help="the default directory of --dataset-job (besides /dev/shm)")
    args = p.parse_args(argv)
    global QUICK
    QUICK = args.quick
    if args.dataset_job:
        out = {"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "load_start": load(), "kernel": platform.release()}
        dirs = {"tmpfs": "/dev/shm", "default dir": args.job_dir}
        with tempfile.TemporaryDirectory(dir=dirs["tmpfs"]) as a, \
                tempfile.TemporaryDirectory(dir=dirs["default dir"]) as b:
            out["dataset_job"] = bench_dataset_job(
                {"tmpfs": a, "default dir": b}, rounds=args.rounds)
        out["dataset_job"]["dirs"] = dirs
        out["load_end"] = load()
        text = json.dumps(out, indent=1)
        if args.json:
            Path(args.json).write_text(text + "\n")
        return
    from distributed import Client, LocalCluster

    out = {"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "load_start": load()}
    # files in memory by default: not the disk
    shm = args.dir or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    out["dir"] = shm or tempfile.gettempdir()
    if not (args.campaign_only or args.skip_breakdown):
        print("breakdown of a written chunk (CPU time, this process):", flush=True)
        with tempfile.TemporaryDirectory(dir=shm) as tmp:
            out["breakdown"] = bench_breakdown(tmp, rounds=2 * args.rounds + 1)
    if args.breakdown_only:
        out["load_end"] = load()
        print(json.dumps(out, indent=1))
        return
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address="127.0.0.1:0")
    client = Client(cluster)
    out["cluster_start_s"] = time.perf_counter() - t0
    try:
        with tempfile.TemporaryDirectory(dir=shm) as tmp:
            if not args.skip_campaign:
                print("campaign of 400 simulations:", flush=True)
                out["campaign"] = bench_campaign(client, args.rounds, tmp)
            if args.campaign_only:
                return _finish(out, args)
            print("overheads:", flush=True)
            out["overheads"] = bench_overheads(client, Path(tmp) / "o")
            print("dataset:", flush=True)
            out["dataset"] = bench_dataset(client, args.workers, tmp, rounds=args.rounds)
            print("dataset arrays gathered to the client:", flush=True)
            out["transfer"] = bench_transfer(client)
    finally:
        client.close()
        cluster.close()
    _finish(out, args)


def _finish(out, args):
    out["load_end"] = load()
    if "overheads" not in out:
        text = json.dumps(out, indent=1)
        print(text)
        if args.json:
            Path(args.json).write_text(text + "\n")
        return
    # per run: the serial run's CPU seconds (the other jobs' load does not enter)
    per_run = (statistics.median(out["campaign"]["serial_cpu_s"]) / out["campaign"]["runs"]
               if "campaign" in out else 0.04)
    out["model_4x32"] = [model_cluster(per_run, out["overheads"], out["cluster_start_s"],
                                       batch=b) for b in (1, 10, 100, 1000)]
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
