"""Dataset benchmarks of bench/bench_campaign.py on the cluster: rows per CPU-second against the
batch calls, and the cost of gathering chunks to the client."""


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
    if common.QUICK:
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
    if common.QUICK:
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
