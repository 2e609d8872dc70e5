"""Datasets of dynamics quantities for learning: :func:`dataset` (``robodyn.dataset``).

``robodyn.dataset(robot, n, quantities=["q", "qd", "qdd", "tau", "M"], chunk=100_000,
path="data/")`` samples ``n`` states and computes the quantities through ``dask.array``: the
rows are cut into chunks of ``chunk`` rows, and each chunk is one Dask task that draws its
states and makes one batched C++ call per quantity (a C++ loop without the GIL). The chunks
run on the current Dask scheduler: a ``distributed.Client`` if one is active (or given as
``scheduler=``), else Dask's threads, one per core (the batched calls release the GIL).

Quantities (``n_v`` the number of velocities, ``robot.n``):

======================  ==============  ================================================
name                    shape per row   computed as
======================  ==============  ================================================
``q``, ``qd``, ``qdd``  (n,)            the sampled state
``tau``                 (n,)            ``robot.inverse_dynamics(q, qd, qdd)``
``M``                   (n, n)          ``robot.mass_matrix(q)``
``h``                   (n,)            ``robot.bias_torques(q, qd)``
``g``                   (n,)            ``robot.gravity_torques(q)``
``C``                   (n, n)          ``robot.coriolis_matrix(q, qd)``
``kinetic_energy``      ()              ``robot.kinetic_energy(q, qd)``
``potential_energy``    ()              ``robot.potential_energy(q)``
======================  ==============  ================================================

Sampling: ``sampler="uniform"`` draws ``q`` uniformly within the position limits (infinite
limits: +-pi), ``qd`` within +-velocity limits (infinite: +-pi) and ``qdd`` in +-2 pi (rad/s^2,
or m/s^2); a callable ``sampler(rng, m) -> (q, qd, qdd)`` (three ``(m, n)`` arrays; it must
pickle to run on a distributed cluster) replaces it. Chunk ``k`` draws from
``numpy.random.default_rng(SeedSequence(seed, spawn_key=(k,)))``, so the rows depend on the
seed and the chunk size only, not on the scheduler.

Files: ``format="parquet"`` writes ``path/part-NNNNNN.parquet``, one file per chunk, a column
per quantity (a fixed-size list of float64 for vectors and matrices, row-major; a float64 for
scalars), and ``path/dataset.json`` (robot, quantities, shapes, seed, rows).
``format="zarr"`` (needs the ``zarr`` package) writes one Zarr array per quantity, chunked like
the rows. :func:`read_dataset` reads either back as NumPy arrays.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

__all__ = ["dataset", "read_dataset", "QUANTITIES"]

# name -> (method, arguments from the state, shape kind: "v" (n,), "m" (n, n), "s" scalar)
QUANTITIES = {
    "q": (None, ("q",), "v"),
    "qd": (None, ("qd",), "v"),
    "qdd": (None, ("qdd",), "v"),
    "tau": ("inverse_dynamics", ("q", "qd", "qdd"), "v"),
    "M": ("mass_matrix", ("q",), "m"),
    "h": ("bias_torques", ("q", "qd"), "v"),
    "g": ("gravity_torques", ("q",), "v"),
    "C": ("coriolis_matrix", ("q", "qd"), "m"),
    "kinetic_energy": ("kinetic_energy", ("q", "qd"), "s"),
    "potential_energy": ("potential_energy", ("q",), "s"),
}


def _shape(kind, n):
    return {"v": (n,), "m": (n, n), "s": ()}[kind]


def uniform_sampler(robot):
    """The default sampler of ``robot`` (module documentation), as a picklable callable."""
    return _Uniform(robot)


class _Uniform:
    def __init__(self, robot):
        if getattr(robot, "nq", robot.n) != robot.n:
            raise ValueError("sampler: the uniform sampler draws joint positions only; give a "
                             "sampler(rng, m) -> (q, qd, qdd) for a free-floating robot")
        lo, hi = robot.position_limits
        self.lo = np.where(np.isfinite(lo), lo, -math.pi)
        self.hi = np.where(np.isfinite(hi), hi, math.pi)
        v = robot.velocity_limits
        self.vmax = np.where(np.isfinite(v), v, math.pi)
        self.amax = np.full(robot.n, 2.0 * math.pi)

    def __call__(self, rng, m):
        n = self.lo.shape[0]
        q = rng.uniform(self.lo, self.hi, (m, n))
        qd = rng.uniform(-self.vmax, self.vmax, (m, n))
        qdd = rng.uniform(-self.amax, self.amax, (m, n))
        return q, qd, qdd


def _layout(quantities, n):
    """[(name, first column, width, shape)] of the block array, and its width."""
    out, col = [], 0
    for name in quantities:
        shape = _shape(QUANTITIES[name][2], n)
        width = math.prod(shape)
        out.append((name, col, width, shape))
        col += width
    return out, col


def _block(robot, quantities, sampler, seed, sizes, width, block_id=None):
    """Rows of chunk ``block_id[0]``: draw the states, one batched call per quantity."""
    k = block_id[0]
    m = sizes[k]
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k,)))
    q, qd, qdd = (np.ascontiguousarray(x, dtype=np.float64) for x in sampler(rng, m))
    state = {"q": q, "qd": qd, "qdd": qdd}
    out = np.empty((m, width))
    col = 0
    for name in quantities:
        method, args, _ = QUANTITIES[name]
        value = state[name] if method is None else getattr(robot, method)(*(state[a] for a in args))
        value = np.asarray(value).reshape(m, -1)
        out[:, col:col + value.shape[1]] = value
        col += value.shape[1]
    return out


def dataset(robot, n, quantities=("q", "qd", "qdd", "tau"), sampler="uniform", chunk=100_000,
            path=None, *, format="parquet", seed=0, scheduler=None, compression=None,
            overwrite=False):
    """Sample ``n`` states of ``robot`` and compute ``quantities`` in chunks of ``chunk`` rows.

    Without ``path``: returns ``{name: dask.array}`` (lazy; shapes ``(n, *shape)``, chunked by
    rows; computing several together computes each chunk once). With ``path``: computes and
    writes the dataset (``format`` "parquet" or "zarr", module documentation) and returns the
    directory as a ``pathlib.Path``. ``scheduler``: None (the active Dask client, else threads),
    a Dask scheduler name ("threads", "processes", "synchronous"), a scheduler address or a
    ``distributed.Client``. ``compression``: the Parquet codec (default none: random floats do
    not compress, and the codec would cost more than the dynamics).
    """
    import robodyn

    if not isinstance(robot, robodyn.Robot):
        raise TypeError(f"robot: expected a robodyn.Robot, got {type(robot).__name__}")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n: expected a positive number of rows, got {n!r}")
    if isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1:
        raise ValueError(f"chunk: expected a positive number of rows, got {chunk!r}")
    if isinstance(quantities, str):
        quantities = [quantities]
    quantities = list(quantities)
    unknown = [q for q in quantities if q not in QUANTITIES]
    if unknown or not quantities or len(set(quantities)) != len(quantities):
        raise ValueError(f"quantities: expected distinct names among {', '.join(QUANTITIES)}, "
                         f"got {quantities!r}")
    if sampler == "uniform":
        sampler = uniform_sampler(robot)
    elif not callable(sampler):
        raise ValueError("sampler: expected 'uniform' or a callable sampler(rng, m) -> "
                         "(q, qd, qdd)")
    if format not in ("parquet", "zarr"):
        raise ValueError(f"format: expected 'parquet' or 'zarr', got {format!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    import dask.array as da

    n, chunk, nv = int(n), int(chunk), robot.n
    sizes = (chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ())
    layout, width = _layout(quantities, nv)
    table = da.map_blocks(_block, robot, quantities, sampler, int(seed), sizes, width,
                          dtype=np.float64, chunks=(sizes, (width,)),
                          meta=np.empty((0, 0), dtype=np.float64), token="robodyn-dataset")
    arrays = {name: table[:, c:c + w].reshape((n, *shape)) for name, c, w, shape in layout}
    if path is None:
        return arrays
    out = Path(path)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise ValueError(f"path {out}: exists and is not empty (overwrite=True replaces it)")
        _clear(out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"robot": robot.name, "n": nv, "rows": n, "chunk": chunk, "seed": int(seed),
            "format": format, "sampler": getattr(sampler, "__name__", type(sampler).__name__),
            "quantities": {name: list(shape) for name, _, _, shape in layout}}
    if format == "parquet":
        import dask

        blocks = table.to_delayed().ravel()
        writes = [dask.delayed(_write_part)(b, str(out / f"part-{k:06d}.parquet"), layout,
                                            compression) for k, b in enumerate(blocks)]
        _compute(writes, scheduler)
    else:
        try:
            import zarr  # noqa: F401
        except ImportError as e:
            raise ImportError(f"format='zarr' needs the zarr package ({e})") from None
        stores = [da.to_zarr(arrays[name].rechunk({0: chunk}), str(out / name), compute=False)
                  for name, _, _, _ in layout]
        _compute(stores, scheduler)
    (out / "dataset.json").write_text(json.dumps(meta, indent=1))
    return out


def _write_part(block, path, layout, compression):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {}
    for name, c, w, shape in layout:
        values = np.ascontiguousarray(block[:, c:c + w])
        if shape == ():
            cols[name] = pa.array(values.reshape(-1))
        else:
            cols[name] = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), w)
    tmp = path + ".tmp"
    pq.write_table(pa.table(cols), tmp, compression=compression or "none")
    os.replace(tmp, path)
    return block.shape[0]


def _compute(tasks, scheduler):
    import dask

    if scheduler is None or (isinstance(scheduler, str) and "://" not in scheduler):
        return dask.compute(*tasks, scheduler=scheduler)
    from .campaign import get_client

    client, owned = get_client(scheduler)
    try:
        return dask.compute(*tasks, scheduler=client)
    finally:
        if owned:
            client.close()


def _clear(out):
    for p in out.iterdir():
        if p.is_dir():
            import shutil

            shutil.rmtree(p)
        else:
            p.unlink()


def read_dataset(path, quantities=None):
    """A dataset written by :func:`dataset` as ``{name: numpy array (rows, *shape)}``."""
    path = Path(path)
    meta = json.loads((path / "dataset.json").read_text())
    shapes = {k: tuple(v) for k, v in meta["quantities"].items()}
    names = list(shapes) if quantities is None else list(quantities)
    for name in names:
        if name not in shapes:
            raise ValueError(f"quantities: {name!r} is not in {path} ({', '.join(shapes)})")
    if meta["format"] == "zarr":
        import zarr

        return {name: np.asarray(zarr.open_array(str(path / name), mode="r")[...])
                for name in names}
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = sorted(path.glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(p, columns=names) for p in parts])
    out = {}
    for name in names:
        col = table[name].combine_chunks()
        flat = col.flatten() if shapes[name] else col
        out[name] = flat.to_numpy(zero_copy_only=False).reshape((table.num_rows, *shapes[name]))
    return out
