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

import campaign_common as common  # noqa: E402  (QUICK, set by bench_campaign.py --quick)
from campaign_common import cpu_seconds, cpu_since, load  # noqa: E402,F401
from campaign_breakdown import bench_breakdown, bench_dataset_job  # noqa: E402
from campaign_datasets import bench_dataset, bench_transfer  # noqa: E402
from campaign_runs import bench_campaign, bench_overheads, model_cluster  # noqa: E402


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
    common.QUICK = args.quick
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
