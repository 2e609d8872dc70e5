"""A campaign's results on disk: one Parquet file of rows (and one of trajectories) per batch,
written atomically; the metrics of a run; :func:`read_results`, :func:`read_trajectories`."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class CampaignResult:
    """What :meth:`Campaign.run` did: the directory, the run table (sorted by run), batches
    computed now and skipped (already written), wall time (s)."""

    output: Path
    table: object
    computed: int
    skipped: int
    wall_time: float
    failed: int = field(init=False)

    def __post_init__(self):
        import pyarrow.compute as pc

        self.failed = int(pc.sum(pc.equal(self.table["status"], "failed")).as_py() or 0)


def run_metrics(res, plant):
    """The metric columns of a finished run."""
    q, qd, tau, t = res.q, res.qd, res.tau, res.t
    err = np.abs(res.q_ref - q)
    lower, upper = plant.position_limits
    vmax = plant.velocity_limits
    below, above = lower - q, q - upper
    excess = np.maximum(np.maximum(below, above), 0.0)
    power = np.abs(tau[:-1] * 0.5 * (qd[:-1] + qd[1:]))
    peaks = np.max(np.abs(tau), axis=0)
    return {
        "max_tracking_error": float(err.max()),
        "rms_tracking_error": float(np.sqrt(np.mean(err * err))),
        "final_tracking_error": float(err[-1].max()),
        "tau_peak": float(peaks.max()),
        "tau_peak_j": [float(x) for x in peaks],
        "energy": float(np.sum(power.sum(axis=1) * np.diff(t))),
        "position_limit_violations": int(np.count_nonzero(np.any(excess > 0.0, axis=1))),
        "velocity_limit_violations": int(np.count_nonzero(np.any(np.abs(qd) > vmax, axis=1))),
        "max_position_excess": float(excess.max()),
        "saturated_calls": int(res.saturated_calls),
        "steps": int(res.stats.get("steps", len(t) - 1)),
    }


def trajectory_table(trajs, n):
    import pyarrow as pa

    cols = {"run": [], "t": []}
    names = ("q", "qd", "tau", "q_ref")
    for name in names:
        for j in range(n):
            cols[f"{name}_{j}"] = []
    for i, tr in trajs:
        cols["run"].append(np.full(len(tr["t"]), i, dtype=np.int64))
        cols["t"].append(tr["t"])
        for name in names:
            for j in range(n):
                cols[f"{name}_{j}"].append(tr[name][:, j])
    data = {}
    for k, parts in cols.items():
        dtype = np.int64 if k == "run" else np.float64
        data[k] = np.concatenate(parts) if parts else np.empty(0, dtype=dtype)
    return pa.table(data)


def part_path(out, sub, b):
    return out / sub / f"part-{b:06d}.parquet"


def atomic(write, path):
    """``write(tmp)`` then rename to ``path`` (a reader never sees a partial file)."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{threading.get_ident()}-{path.name}")
    try:
        write(str(tmp))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write_text(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic(lambda p: Path(p).write_text(text), path)


def read_results(output):
    """The run table of a campaign directory (pyarrow.Table sorted by ``run``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = sorted((Path(output) / "runs").glob("part-*.parquet"))
    if not parts:
        raise FileNotFoundError(f"{output}: no runs written (runs/part-*.parquet)")
    table = pa.concat_tables([pq.read_table(p) for p in parts])
    return table.sort_by("run")


def read_trajectories(output, run=None):
    """Time series of a campaign run with ``trajectories=True`` (pyarrow.Table, columns
    ``run, t, q_j, qd_j, tau_j, q_ref_j``); ``run``: only that run."""
    import pyarrow.dataset as ds

    d = ds.dataset(str(Path(output) / "trajectories"), format="parquet")
    if run is None:
        return d.to_table()
    return d.to_table(filter=ds.field("run") == int(run))
