"""Campaigns and datasets on Dask: speed-up over serial, per-core throughput, overheads.

    python bench/bench_campaign.py [--rounds 3] [--workers 2] [--json bench/results/campaign.json]

1. Campaign: 400 controlled simulations (Intelledex 605, computed torque, 10 s at 1 kHz, RK4,
   random plant mass errors and measurement noise over a grid of gains), run serially in this
   process and on a LocalCluster of ``--workers`` processes (started once, outside the timing;
   its start-up is reported apart), alternating, ``--rounds`` times each; the ratio of the
   medians is the speed-up. The two tables are checked equal.
2. Dataset: rows per second per core of ``robodyn.dataset`` (q, qd, qdd, tau, M written to
   Parquet) on the same cluster, against one in-process batch call per quantity on a chunk's
   worth of states (compute only), and against the whole pipeline in this process.
3. Overheads: the scheduler's cost per task (empty tasks), the bytes shipped per task and per
   result, the client's cost to write a batch; with them, a model of a 4-node x 32-core cluster
   running 10^6 simulations.

The machine's load average is recorded with every figure (other jobs share the cores).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import robodyn
from robodyn import campaign as cp
from robodyn.datasets import uniform_sampler


def load():
    return os.getloadavg()


QUICK = False  # --quick: a smoke test (40 runs of 1 s, a tenth of the dataset)


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
    serial, dist = [], []
    tables = {}
    for r in range(rounds):
        for mode in ("serial", "dask"):
            out = Path(tmp) / f"{mode}{r}"
            t0 = time.perf_counter()
            res = c.run(out, "serial" if mode == "serial" else client, progress=False)
            dt = time.perf_counter() - t0
            (serial if mode == "serial" else dist).append(dt)
            tables[mode] = res.table
            print(f"  round {r} {mode:6s} {dt:7.2f} s  load {load()[0]:.2f}", flush=True)
    assert tables["serial"].equals(tables["dask"]), "cluster table differs from serial"
    ok = int(sum(1 for s in tables["serial"]["status"].to_pylist() if s == "ok"))
    return {"runs": c.runs, "batch": c.batch, "ok": ok, "serial_s": serial, "dask_s": dist,
            "speedup": statistics.median(serial) / statistics.median(dist),
            "per_run_ms": 1e3 * statistics.median(serial) / c.runs}


def bench_overheads(client, tmp, n_tasks=2000):
    c = make_campaign()
    # the scheduler's cost per task: empty tasks, submitted together
    fs = client.map(_noop, range(100), pure=False)
    client.gather(fs)
    t0 = time.perf_counter()
    fs = client.map(_noop, range(n_tasks), pure=False)
    client.gather(fs)
    per_task = (time.perf_counter() - t0) / n_tasks
    del fs
    # sizes: the campaign (scattered once per worker), a task's result, the robot
    table, ttable = c.run_batch(0)
    (Path(tmp) / "runs").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for b in range(20):
        c._write(Path(tmp), 1000 + b, table, ttable)
    write = (time.perf_counter() - t0) / 20
    return {"scheduler_s_per_task": per_task,
            "campaign_pickle_bytes": len(pickle.dumps(c)),
            "robot_pickle_bytes": len(pickle.dumps(c.robot)),
            "result_pickle_bytes_per_batch": len(pickle.dumps((table, ttable))),
            "rows_per_batch": table.num_rows,
            "client_write_s_per_batch": write}


def _noop(i):
    return i


def bench_dataset(client, workers, tmp, rows=2_000_000, chunk=200_000, rounds=3):
    robot = robodyn.robots.intelledex_605()
    if QUICK:
        rows, chunk = rows // 10, chunk // 10
    quantities = ["q", "qd", "qdd", "tau", "M"]
    robodyn.set_num_threads(1)
    rng = np.random.default_rng(0)
    q, qd, qdd = uniform_sampler(robot)(rng, chunk)
    batch, local, dist = [], [], []
    for r in range(rounds):
        t0 = time.process_time()
        robot.inverse_dynamics(q, qd, qdd)
        robot.mass_matrix(q)
        batch.append(chunk / (time.process_time() - t0))
        t0 = time.perf_counter()
        robodyn.dataset(robot, chunk, quantities, chunk=chunk, path=Path(tmp) / f"l{r}",
                        scheduler="synchronous")
        local.append(chunk / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        robodyn.dataset(robot, rows, quantities, chunk=chunk, path=Path(tmp) / f"d{r}",
                        scheduler=client)
        dist.append(rows / (time.perf_counter() - t0) / workers)
        print(f"  round {r}: batch call {batch[-1]:,.0f} rows/s, in-process dataset "
              f"{local[-1]:,.0f} rows/s, cluster {dist[-1]:,.0f} rows/s per core  load "
              f"{load()[0]:.2f}", flush=True)
    b, l, d = (statistics.median(x) for x in (batch, local, dist))
    return {"rows": rows, "chunk": chunk, "quantities": quantities,
            "batch_call_rows_per_s": b, "in_process_dataset_rows_per_s": l,
            "cluster_rows_per_s_per_core": d, "per_core_vs_batch_call": d / b,
            "per_core_vs_in_process_dataset": d / l, "bytes_per_row": 8 * (4 * 6 + 36)}


def model_cluster(per_run_s, over, nodes=4, cores=32, n=10**6, batch=100):
    """Time of ``n`` simulations on ``nodes`` x ``cores`` with the measured overheads."""
    workers = nodes * cores
    tasks = n / batch
    compute = n * per_run_s / workers
    scheduler = tasks * over["scheduler_s_per_task"]  # one scheduler thread, overlapped
    client = tasks * over["client_write_s_per_batch"]  # one client, overlapped
    rows_bytes = over["result_pickle_bytes_per_batch"] / over["rows_per_batch"] * n
    tail = batch * per_run_s  # the last tasks finish one batch after the rest
    total = max(compute, scheduler, client) + tail
    return {"simulations": n, "workers": workers, "batch": batch, "tasks": tasks,
            "compute_s": compute, "scheduler_s": scheduler, "client_write_s": client,
            "result_bytes": rows_bytes, "tail_s": tail, "total_s": total,
            "efficiency": compute / total}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=None)
    p.add_argument("--skip-campaign", action="store_true")
    p.add_argument("--quick", action="store_true", help="a smoke test, not a measurement")
    args = p.parse_args(argv)
    global QUICK
    QUICK = args.quick
    from distributed import Client, LocalCluster

    out = {"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "load_start": load()}
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address="127.0.0.1:0")
    client = Client(cluster)
    out["cluster_start_s"] = time.perf_counter() - t0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if not args.skip_campaign:
                print("campaign of 400 simulations:", flush=True)
                out["campaign"] = bench_campaign(client, args.rounds, tmp)
            print("overheads:", flush=True)
            out["overheads"] = bench_overheads(client, Path(tmp) / "o")
            print("dataset:", flush=True)
            out["dataset"] = bench_dataset(client, args.workers, tmp, rounds=args.rounds)
    finally:
        client.close()
        cluster.close()
    out["load_end"] = load()
    per_run = out["campaign"]["per_run_ms"] / 1e3 if "campaign" in out else 0.04
    out["model_4x32"] = [model_cluster(per_run, out["overheads"], batch=b)
                         for b in (1, 10, 100, 1000)]
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
