"""Simulation campaigns on Dask: sweeps of controlled simulations, one Parquet row per run.

A :class:`Campaign` describes many runs of :func:`robodyn.simulate` of one robot: a base
configuration (controller, reference motion, simulation settings, plant perturbation, initial
state) and the parameters that vary, on a grid (every combination) and/or drawn at random::

    import robodyn
    from robodyn.campaign import Campaign, uniform, normal

    c = Campaign("stanford_arm",
                 controller={"type": "computed-torque", "kp": 400.0, "kd": 40.0},
                 simulation={"duration": 2.0, "control_rate": 1000.0},
                 grid={"simulation.control_rate": [250.0, 1000.0]},
                 random={"model.mass_scale": uniform(0.8, 1.2, per="link"),
                         "controller.noise_std": uniform(0.0, 1e-3)},
                 samples=100, seed=1)
    result = c.run("out/")            # LocalCluster on 127.0.0.1, one worker process per core
    table = result.table              # pyarrow.Table, one row per run, sorted by "run"

or from a TOML file (``Campaign.from_toml``; ``robodyn campaign config.toml [--scheduler
tcp://host:8786]``); see docs/campaign.md for the keys.

Runs and seeds. The runs are numbered ``0 .. runs - 1``: run ``i`` takes grid point
``i // samples`` and random draw ``i % samples``. Its random parameters come from a generator
seeded by ``SeedSequence(seed, spawn_key=(i, 0))`` and its measurement noise from
``(i, 1)``, so a run's numbers depend on the seed and its index only, not on the order, the
batch or the worker that ran it: the same campaign gives the same table, serially or on any
cluster.

What varies. Keys are ``section.name``:

- ``controller.``: ``type`` ("computed-torque", "pd-gravity", "feedforward", "none"), ``kp``,
  ``kd`` (scalar or per joint), ``noise_std``, ``velocity_noise_std`` (measurement noise),
  ``delay`` (control periods), ``saturate``;
- ``simulation.``: ``duration``, ``dt``, ``control_rate`` (Hz), ``integrator``, ``method``;
- ``model.``: ``mass_scale``, ``inertia_scale`` (per link or for all): the *plant* differs
  from the controller's nominal model by these factors (mass, rotational inertia about the
  centre of mass);
- ``reference.``: ``q0``, ``q1``, ``T`` of a smooth rest-to-rest move (default: the motion
  ``robodyn simulate`` uses);
- ``initial.``: ``q_offset`` (added to the reference's start), ``qd`` (initial velocity).

Results. Each batch of runs (``batch`` runs: one Dask task) becomes one Parquet file
``runs/part-NNNNNN.parquet`` of the output directory (and ``trajectories/part-NNNNNN.parquet``
with ``trajectories=True``), written by the client as tasks finish, atomically (a temporary
file renamed). Columns: ``run``, ``grid_index``, ``sample``, the varying parameters (a vector
parameter as ``name_0 .. name_{n-1}``), ``status`` ("ok" or "failed"), ``error`` (the
exception, empty if ok) and the metrics (null for a failed run):

- ``max_tracking_error``, ``rms_tracking_error``, ``final_tracking_error``: of ``q_ref - q``
  over all samples and joints (rad or m);
- ``tau_peak`` and ``tau_peak_<j>``: largest ``|tau|`` applied (overall, per joint);
- ``energy``: actuator work ``integral of sum_j |tau_j qd_j| dt`` (J; tau held over each
  step, qd averaged over it);
- ``position_limit_violations``, ``velocity_limit_violations``: recorded samples at which some
  joint is beyond its position / velocity limit; ``max_position_excess``: how far (rad or m);
- ``saturated_calls``: controller calls whose torque was clipped to the effort limits;
- ``steps``: integration steps.

A run that fails (a parameter the controller or the model rejects, a diverging simulation)
is recorded as a failed row; the rest of its batch and of the campaign go on.

Resuming. The output directory holds ``campaign.json`` (the campaign's fingerprint, a SHA-256
of everything that determines the rows). Running the same campaign into it again computes only
the batches whose file is missing, so a campaign interrupted at any point (even by SIGKILL)
finishes where it stopped; a different campaign is refused (``overwrite=True`` replaces it).

This module imports Dask and pyarrow (the ``campaign`` extra) only when it runs.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import threading
import time
import typing
from pathlib import Path

import numpy as np

from ..util import safe_io
from .cluster import get_client
from .config import (CONTROLLERS, FORMAT_VERSION, INT_METRICS, KEYS, MAX_BATCHES, MAX_RUNS,
                     METRICS, TOML_MAX_BYTES, VECTOR_KEYS, plain, read_toml)
from .results import (CampaignResult, atomic, atomic_write_text, part_path, read_results,
                      read_trajectories, run_metrics, trajectory_table)
from .samplers import Sampler, choice, integers, loguniform, normal, sampler_from, uniform
from .schema import SECTIONS, CampaignFile, Parameter, Settings, Values, checked

__all__ = ["Campaign", "CampaignResult", "Sampler", "uniform", "normal", "loguniform", "choice",
           "integers", "read_results", "read_trajectories", "read_toml", "get_client",
           "METRICS", "TOML_MAX_BYTES"]


def _load_robot(robot, xacro_env=False):
    from ..io import load_urdf, robots
    from ..model import Robot

    if isinstance(robot, Robot):
        return robot
    text = str(robot)
    if text in robots.available():
        return robots.load(text)
    if os.path.isfile(text):
        return load_urdf(text, xacro_env=bool(xacro_env) and text.endswith(".xacro"))
    raise ValueError(f"robot: {text!r} is neither a bundled robot "
                     f"({', '.join(robots.available())}) nor a URDF file")


class Campaign:
    """A sweep of controlled simulations of one robot (see the module documentation).

    Parameters
    ----------
    robot : robodyn.Robot, bundled robot name or URDF path
        The nominal model: the controller's model and, unperturbed, the plant.
    controller, simulation, model, reference, initial : dict
        Base values of the keys of each section (module documentation).
    grid : dict ``"section.name" -> list``
        Every combination of these values is a grid point (in the order given).
    random : dict ``"section.name" -> Sampler`` (or its TOML form)
        Drawn per run.
    samples : int
        Runs per grid point (random draws); ``runs = samples * grid points``.
    seed : int
        Root of every run's seeds.
    batch : int
        Runs per Dask task and per Parquet file.
    trajectories : bool
        Also write every run's time series (``trajectory_stride``: every k-th sample).
    specialized : bool
        Run the controller's model on generated, robot-specific code (compiled on the client
        first, then once per worker process).
    xacro_env : bool
        Let a ``.xacro`` robot file read environment variables and ROS package paths
        (``robodyn campaign --xacro-allow-env``; not settable from the TOML file).
    """

    def __init__(self, robot, *, controller=None, simulation=None, model=None, reference=None,
                 initial=None, grid=None, random=None, samples=1, seed=0, batch=8,
                 trajectories=False, trajectory_stride=1, specialized=False, name="campaign",
                 xacro_env=False):
        self.robot = _load_robot(robot, xacro_env)
        if specialized and not self.robot.is_specialized():
            self.robot = self.robot.specialized()
        self.name = str(name)
        self.base = {}
        for section, values in (("controller", controller), ("simulation", simulation),
                                ("model", model), ("reference", reference),
                                ("initial", initial)):
            values = plain({} if values is None else values)
            checked(values, SECTIONS[section], section)
            self.base[section] = dict(values)
        self.grid = {}
        grid, random = (plain({} if v is None else v) for v in (grid, random))
        for key, values in checked(grid, typing.Dict[Parameter, typing.Any], "grid").items():
            section, name = key.split(".")
            for value in checked(values, Values, f"grid.{key}"):
                checked({name: value}, SECTIONS[section], f"grid.{section}")
            self.grid[key] = list(values)
        self.random = {}
        for key, value in checked(random, typing.Dict[Parameter, typing.Any], "random").items():
            if key in self.grid:
                raise ValueError(f"random.{key}: also on the grid; give it in one place")
            self.random[key] = sampler_from(value, key)
        checked(dict(samples=samples, seed=seed, batch=batch,
                     trajectory_stride=trajectory_stride), Settings, "")
        runs = math.prod(len(v) for v in self.grid.values()) * samples
        if runs > MAX_RUNS:
            raise ValueError(f"samples: {samples} samples x {runs // samples} grid points make "
                             f"{runs} runs, over the limit of {MAX_RUNS}; lower samples or the "
                             "grid")
        if -(-runs // batch) > MAX_BATCHES:
            raise ValueError(f"batch: {runs} runs in batches of {batch} make {-(-runs // batch)} "
                             f"batches (a task and a file each), over the limit of "
                             f"{MAX_BATCHES}; raise batch to at least {-(-runs // MAX_BATCHES)}")
        self.samples, self.seed, self.batch = int(samples), int(seed), int(batch)
        self.trajectories, self.trajectory_stride = bool(trajectories), int(trajectory_stride)
        self._columns = self._parameter_columns()

    # ---- construction from files

    @classmethod
    def from_dict(cls, config, *, base_dir=None, xacro_env=False):
        """A campaign from the dict form of the TOML file (docs/campaign.md); ``xacro_env``:
        as in :class:`Campaign` (the caller's choice, not a key of the file)."""
        checked(plain(config), CampaignFile, "")
        config = copy.deepcopy(dict(config))
        top = dict(config.pop("campaign", {}))
        for k in list(config):
            if k not in KEYS and k not in ("grid", "random"):
                top[k] = config.pop(k)
        if "robot" not in top:
            raise ValueError("campaign: 'robot' is required (a bundled name or a URDF path)")
        robot = top.pop("robot")
        if base_dir is not None and isinstance(robot, str) and not os.path.isabs(robot):
            candidate = Path(base_dir) / robot
            if candidate.is_file():
                robot = str(candidate)
        top.pop("output", None)
        return cls(robot, grid=config.pop("grid", None), random=config.pop("random", None),
                   **{s: config.pop(s, None) for s in KEYS}, **top, xacro_env=xacro_env)

    @classmethod
    def from_toml(cls, path):
        """A campaign from a TOML file (docs/campaign.md); relative robot paths are read from
        the file's directory."""
        path = Path(path)
        config = read_toml(path)
        return cls.from_dict(config, base_dir=path.parent)

    # ---- the runs

    @property
    def grid_points(self):
        return math.prod(len(v) for v in self.grid.values()) if self.grid else 1

    @property
    def runs(self):
        return self.grid_points * self.samples

    @property
    def batches(self):
        return -(-self.runs // self.batch)

    def _grid_point(self, g):
        """The grid values of grid point ``g`` (the last key varies fastest)."""
        out = {}
        for key in reversed(list(self.grid)):
            values = self.grid[key]
            g, k = divmod(g, len(values))
            out[key] = values[k]
        return dict(reversed(list(out.items())))

    def parameters(self, i):
        """The varying parameters of run ``i``: ``{"section.name": value}``."""
        if not 0 <= i < self.runs:
            raise IndexError(f"run {i} out of range 0..{self.runs - 1}")
        params = self._grid_point(i // self.samples)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(i, 0)))
        for key, sampler in self.random.items():
            params[key] = sampler.draw(rng, self.robot.n)
        return params

    def noise_seed(self, i):
        """The seed of run ``i``'s measurement noise."""
        return int(np.random.SeedSequence(self.seed, spawn_key=(i, 1)).generate_state(2, np.uint64)[0])

    def settings(self, i):
        """The full configuration of run ``i``: the base sections with its parameters in."""
        cfg = copy.deepcopy(self.base)
        for key, value in self.parameters(i).items():
            section, name = key.split(".", 1)
            cfg[section][name] = value
        return cfg

    # ---- identity and columns

    def describe(self):
        """The campaign as plain data (what ``campaign.json`` records)."""
        return {"name": self.name, "robot": self.robot.name, "n": self.robot.n,
                "specialized": self.robot.is_specialized(), "samples": self.samples,
                "seed": self.seed, "batch": self.batch, "runs": self.runs,
                "trajectories": self.trajectories, "trajectory_stride": self.trajectory_stride,
                "base": self.base, "grid": self.grid,
                "random": {k: s.to_dict() for k, s in self.random.items()}}

    def fingerprint(self):
        """SHA-256 of everything that determines the rows (the model included)."""
        from ..model.spec import fingerprint

        text = json.dumps({"format": FORMAT_VERSION, **self.describe()}, sort_keys=True,
                          default=repr)
        return hashlib.sha256((text + fingerprint(self.robot.spec)).encode()).hexdigest()

    def _parameter_columns(self):
        """[(key, column names, kind)] of the varying parameters; kind "f", "i", "s", "b"."""
        n = self.robot.n
        cols = []
        for key, values in self.grid.items():
            cols.append((key, *self._column_shape(key, values, n)))
        for key, sampler in self.random.items():
            if sampler.per is not None:
                cols.append((key, [f"{key}_{j}" for j in range(n)], "f"))
            elif sampler.kind == "choice":
                cols.append((key, *self._column_shape(key, list(sampler.args), n)))
            else:
                cols.append((key, [key], "i" if sampler.kind == "integers" else "f"))
        return cols

    @staticmethod
    def _column_shape(key, values, n):
        vector = [isinstance(v, (list, tuple)) for v in values]
        if any(vector):
            if not all(vector) or any(len(v) != n for v in values):
                raise ValueError(f"{key}: vector values must all have {n} entries (one per "
                                 f"joint), got {values!r}")
            if key not in VECTOR_KEYS:
                raise ValueError(f"{key}: takes a single value, got a vector")
            return [f"{key}_{j}" for j in range(n)], "f"
        if all(isinstance(v, bool) for v in values):
            return [key], "b"
        if all(isinstance(v, str) for v in values):
            return [key], "s"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return [key], "i"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return [key], "f"
        raise ValueError(f"{key}: values must be all numbers, all strings or all booleans, "
                         f"got {values!r}")

    def schema(self):
        """The pyarrow schema of the run table."""
        import pyarrow as pa

        types = {"f": pa.float64(), "i": pa.int64(), "s": pa.string(), "b": pa.bool_()}
        fields = [pa.field("run", pa.int64()), pa.field("grid_index", pa.int64()),
                  pa.field("sample", pa.int64())]
        for _, names, kind in self._columns:
            fields += [pa.field(c, types[kind]) for c in names]
        fields += [pa.field("status", pa.string()), pa.field("error", pa.string())]
        for m in METRICS:
            fields.append(pa.field(m, pa.int64() if m in INT_METRICS else pa.float64()))
        fields += [pa.field(f"tau_peak_{j}", pa.float64()) for j in range(self.robot.n)]
        return pa.schema(fields)

    # ---- running

    def run_one(self, i):
        """Simulate run ``i``: ``(row, trajectory)`` (``row`` a dict of the table's columns,
        ``trajectory`` a dict of arrays or None). Never raises for a failing run."""
        row = {"run": i, "grid_index": i // self.samples, "sample": i % self.samples}
        traj = None
        try:
            params = self.parameters(i)
        except Exception as e:  # noqa: BLE001  (recorded in the row)
            params = {}
            err = e
        else:
            err = None
        for key, names, kind in self._columns:
            value = params.get(key)
            if len(names) == 1:
                row[names[0]] = value
            else:
                for j, c in enumerate(names):
                    row[c] = None if value is None else float(np.broadcast_to(value, (len(names),))[j])
        metrics = None
        if err is None:
            try:
                metrics, traj = self._simulate(i)
            except Exception as e:  # noqa: BLE001  (recorded in the row)
                err = e
        row["status"] = "ok" if err is None else "failed"
        row["error"] = "" if err is None else f"{type(err).__name__}: {err}"[:2000]
        for m in METRICS:
            row[m] = None if metrics is None else metrics[m]
        for j in range(self.robot.n):
            row[f"tau_peak_{j}"] = None if metrics is None else metrics["tau_peak_j"][j]
        return row, (traj if err is None else None)

    def _plant(self, cfg):
        model = cfg["model"]
        if not any(k in model for k in ("mass_scale", "inertia_scale")):
            return self.robot
        from ..model.build import robot as build_robot

        n = self.robot.n
        ms = np.broadcast_to(np.asarray(model.get("mass_scale", 1.0), dtype=float), (n,))
        js = np.broadcast_to(np.asarray(model.get("inertia_scale", 1.0), dtype=float), (n,))
        spec = self.robot.spec
        for b, m, s in zip(spec.bodies, ms, js):
            b.mass = float(b.mass) * float(m)
            b.inertia = np.asarray(b.inertia, dtype=float) * float(s)
        plant = build_robot(spec)
        # the nominal robot's force elements (robodyn.model.forces) act on the perturbed plant
        forces = getattr(self.robot, "forces", ())
        return plant.with_forces(forces) if forces else plant

    def _reference(self, cfg, robot, duration):
        from ..control import trajectories as tr

        ref = cfg["reference"]
        if "q1" in ref:
            n = robot.n
            q0 = np.broadcast_to(np.asarray(ref.get("q0", 0.0), dtype=float), (n,)).copy()
            q1 = np.broadcast_to(np.asarray(ref["q1"], dtype=float), (n,)).copy()
            return tr.smooth(q0, q1, float(ref.get("T", duration or 2.0)))
        if "q0" in ref:
            raise ValueError("reference: q0 needs q1 (a smooth move from q0 to q1)")
        return tr.default_reference(robot, duration, ref.get("T"))

    def _controller(self, cfg, model, reference, i):
        from .. import control as ct

        c = cfg["controller"]
        kind = c.get("type", "computed-torque")
        if kind not in CONTROLLERS:
            raise ValueError(f"controller.type: expected one of {', '.join(CONTROLLERS)}, "
                             f"got {kind!r}")
        if kind == "none":
            return None
        kp, kd = c.get("kp"), c.get("kd")
        if kind == "computed-torque":
            kp = ct.COMPUTED_TORQUE_KP if kp is None else kp
            cls, kd = ct.ComputedTorque, ct.COMPUTED_TORQUE_KD if kd is None else kd
        elif kind == "pd-gravity":
            kp0, kd0 = ct.pd_gains(model, reference(reference.duration)[0], bandwidth_hz=5.0)
            cls, kp, kd = ct.PDGravity, kp0 if kp is None else kp, kd0 if kd is None else kd
        else:
            cls, kp, kd = ct.Feedforward, 0.0 if kp is None else kp, 0.0 if kd is None else kd
        return cls(model, kp, kd, saturate=bool(c.get("saturate", True)),
                   noise_std=c.get("noise_std", 0.0),
                   velocity_noise_std=c.get("velocity_noise_std", 0.0),
                   delay=c.get("delay", 0), seed=self.noise_seed(i))

    def _simulate(self, i):
        from ..sim import simulate

        cfg = self.settings(i)
        sim = cfg["simulation"]
        model = self.robot
        plant = self._plant(cfg)
        n = model.n
        duration = sim.get("duration")
        reference = self._reference(cfg, model, duration)
        duration = float(duration if duration is not None else reference.duration)
        controller = self._controller(cfg, model, reference, i)
        init = cfg["initial"]
        q0 = reference(0.0)[0] + np.broadcast_to(
            np.asarray(init.get("q_offset", 0.0), dtype=float), (n,))
        qd0 = np.broadcast_to(np.asarray(init.get("qd", 0.0), dtype=float), (n,)).copy()
        res = simulate(plant, controller, reference, duration=duration,
                       dt=sim.get("dt", 1e-3), control_rate=sim.get("control_rate", 1000.0),
                       integrator=sim.get("integrator", "rk4"), q0=q0, qd0=qd0,
                       method=sim.get("method", "aba"),
                       max_steps=int(sim.get("max_steps", 2_000_000)))
        metrics = run_metrics(res, plant)
        traj = None
        if self.trajectories:
            k = self.trajectory_stride
            traj = {"t": res.t[::k], "q": res.q[::k], "qd": res.qd[::k], "tau": res.tau[::k],
                    "q_ref": res.q_ref[::k]}
        return metrics, traj

    def run_batch(self, b):
        """Runs of batch ``b``: ``(run table, trajectory table or None)`` as pyarrow tables."""
        import pyarrow as pa

        first = b * self.batch
        runs = range(first, min(first + self.batch, self.runs))
        rows, trajs = [], []
        for i in runs:
            row, traj = self.run_one(i)
            rows.append(row)
            if traj is not None:
                trajs.append((i, traj))
        schema = self.schema()
        table = pa.Table.from_pylist(rows, schema=schema)
        ttable = trajectory_table(trajs, self.robot.n) if self.trajectories else None
        return table, ttable

    def run(self, output, scheduler=None, *, workers=None, progress=True, overwrite=False,
            on_batch=None):
        """Run the campaign into the directory ``output``; returns a :class:`CampaignResult`.

        ``scheduler``: None (a LocalCluster on 127.0.0.1 with ``workers`` processes, default
        one per core, closed at the end), ``"serial"`` (in this process, no Dask), a scheduler
        address (``"tcp://host:8786"``) or a ``distributed.Client``. Batches already in
        ``output`` (same campaign) are not run again. ``progress`` shows Dask's progress bar.
        ``on_batch(b)`` is called after batch ``b`` is written.
        """
        t0 = time.perf_counter()
        out = Path(output)
        todo = self._prepare(out, overwrite)
        computed = 0
        if todo:
            if isinstance(scheduler, str) and scheduler == "serial":
                for b in todo:
                    self._write(out, b, *self.run_batch(b))
                    computed += 1
                    if on_batch:
                        on_batch(b)
            else:
                computed = self._run_dask(out, todo, scheduler, workers, progress, on_batch)
        table = read_results(out)
        return CampaignResult(out, table, computed=computed,
                              skipped=self.batches - len(todo), wall_time=time.perf_counter() - t0)

    def _prepare(self, out, overwrite):
        """Create or check ``out``; the batches still to run."""
        meta = out / "campaign.json"
        fp = self.fingerprint()
        if meta.is_file():
            try:
                old = json.loads(safe_io.read_text(meta)).get("fingerprint")
            except (OSError, ValueError, AttributeError):
                old = None
            if old != fp:
                if not overwrite:
                    raise ValueError(f"output {out}: holds a different campaign (its "
                                     "campaign.json differs); use another directory or "
                                     "overwrite=True (--overwrite)")
                for sub in ("runs", "trajectories"):
                    for p in (out / sub).glob("part-*.parquet"):
                        p.unlink()
        elif out.exists() and any(out.iterdir()) and not overwrite:
            raise ValueError(f"output {out}: exists and is not a campaign directory")
        (out / "runs").mkdir(parents=True, exist_ok=True)
        if self.trajectories:
            (out / "trajectories").mkdir(exist_ok=True)
        for sub in ("runs", "trajectories"):
            for p in (out / sub).glob(".tmp-*"):  # a write cut short
                p.unlink()
        if not meta.is_file() or overwrite:
            atomic_write_text(meta, json.dumps({"fingerprint": fp, "batches": self.batches,
                                                 **self.describe()}, indent=1, default=repr))
        # (the directory listed once, not a file looked up per batch)
        written = {p.name for p in os.scandir(out / "runs") if p.is_file()}
        return [b for b in range(self.batches) if part_path(out, "runs", b).name not in written]

    def _write(self, out, b, table, ttable):
        import pyarrow.parquet as pq

        if ttable is not None:  # first, so that a run file means the batch is complete
            atomic(lambda p: pq.write_table(ttable, p), part_path(out, "trajectories", b))
        atomic(lambda p: pq.write_table(table, p), part_path(out, "runs", b))

    def _run_dask(self, out, todo, scheduler, workers, progress, on_batch):
        from distributed import as_completed

        client, owned = get_client(scheduler, workers)
        try:
            campaign = client.scatter(self, broadcast=True, hash=False)
            tag = self.fingerprint()[:10]
            futures = {client.submit(_batch_task, campaign, b, key=f"campaign-{tag}-{b}",
                                     pure=False, retries=1): b for b in todo}
            bar = _start_progress(list(futures)) if progress else None
            computed = 0
            failures = []
            for fut in as_completed(futures):
                b = futures[fut]
                try:
                    table, ttable = fut.result()
                except Exception as e:  # noqa: BLE001  a lost task: the batch is retried next time
                    failures.append((b, e))
                    continue
                self._write(out, b, table, ttable)
                computed += 1
                fut.release()
                if on_batch:
                    on_batch(b)
            if bar is not None:
                bar.join(timeout=10.0)
            if failures:
                b, e = failures[0]
                raise RuntimeError(f"{len(failures)} batch(es) could not be computed (batch {b}: "
                                   f"{type(e).__name__}: {e}); run the campaign again to resume")
            return computed
        finally:
            if owned:
                cluster = client.cluster
                client.close()
                if cluster is not None:
                    cluster.close()


def _batch_task(campaign, b):
    return campaign.run_batch(b)


def _start_progress(futures):
    """Dask's text progress bar, in a thread (the client writes results meanwhile)."""
    from distributed import progress

    t = threading.Thread(target=progress, args=(futures,), kwargs={"notebook": False},
                         daemon=True)
    t.start()
    return t
