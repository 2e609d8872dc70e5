"""Campaign benchmarks of bench/bench_campaign.py: serial against the cluster, the scheduler's
overheads, and the model of a 4-node x 32-core cluster."""


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


def make_campaign(runs=400, batch=10):
    if common.QUICK:
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
