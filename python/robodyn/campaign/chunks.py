"""The rows of a dataset chunk: the states drawn (a seeded sampler), the quantities computed by
batched calls in blocks of rows into per-thread buffers, as lazy arrays or as file columns."""

from __future__ import annotations

import math
import threading

import numpy as np

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


def shape_of(kind, n):
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
        lo = np.where(np.isfinite(lo), lo, -math.pi)
        hi = np.where(np.isfinite(hi), hi, math.pi)
        v = robot.velocity_limits
        v = np.where(np.isfinite(v), v, math.pi)
        a = np.full(robot.n, 2.0 * math.pi)
        # x = low + width * u for u uniform in [0, 1): rows q, qd, qdd
        self.low = np.stack([lo, -v, -a])[:, None, :]
        self.width = np.stack([hi - lo, 2.0 * v, 2.0 * a])[:, None, :]

    def __dask_tokenize__(self):  # the same sampler in every process (resuming compares it)
        return ("robodyn-uniform", self.low.tobytes(), self.width.tobytes())

    def __call__(self, rng, m, out=None):
        x = rng.random((3, m, self.low.shape[2]), out=out)
        x *= self.width
        x += self.low
        return x[0], x[1], x[2]

    def draw_into(self, rng, outs):
        """The same numbers as ``self(rng, m)`` drawn into three ``(m, n)`` arrays (the
        generator fills them in the order of one ``(3, m, n)`` draw)."""
        for x, w, lo in zip(outs, self.width, self.low):
            rng.random(x.shape, out=x)
            x *= w
            x += lo
        return outs


def states(robot, sampler, seed, k, m, reuse=False):
    """Chunk ``k``'s ``m`` states ``(q, qd, qdd)``, drawn from its own seed (``reuse``: the
    default sampler draws into this thread's buffer, valid until its next chunk)."""
    n = robot.n
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k,)))
    if not isinstance(sampler, _Uniform):
        return _checked_states(sampler(rng, m), m, n)
    if reuse:
        # (three page-aligned buffers: a chunk file can be written from them with O_DIRECT)
        drawn = sampler.draw_into(rng, [buffer("state-" + s, (m, n), aligned=True)
                                        for s in ("q", "qd", "qdd")])
    else:
        drawn = sampler(rng, m)
    return dict(zip(("q", "qd", "qdd"), drawn))


def _checked_states(drawn, m, n):
    """A custom sampler's ``(q, qd, qdd)`` as three C-contiguous float64 ``(m, n)`` arrays:
    real numbers only (no complex, string or object values), finite."""
    try:
        xs = [np.asarray(x) for x in drawn]
    except TypeError:
        raise ValueError(f"sampler: expected three ({m}, {n}) arrays (q, qd, qdd), got "
                         f"{type(drawn).__name__}") from None
    if len(xs) != 3 or any(x.shape != (m, n) for x in xs):
        raise ValueError(f"sampler: expected three ({m}, {n}) arrays (q, qd, qdd), got shapes "
                         f"{[x.shape for x in xs]}")
    out = {}
    for name, x in zip(("q", "qd", "qdd"), xs):
        if x.dtype.kind not in "fiu":
            raise ValueError(f"sampler: {name} has dtype {x.dtype}; expected real numbers "
                             "(float or int arrays)")
        x = np.ascontiguousarray(x, dtype=np.float64)
        if not np.isfinite(x).all():
            raise ValueError(f"sampler: {name} has non-finite values (NaN or inf)")
        out[name] = x
    return out


def chunk(robot, quantities, sampler, seed, k, m):
    """Chunk ``k`` (``m`` rows): its states, then one batched call per quantity;
    ``{name: array (m, *shape)}``."""
    state = states(robot, sampler, seed, k, m)
    out = {}
    for name in quantities:
        method, args, _ = QUANTITIES[name]
        out[name] = state[name] if method is None else np.asarray(
            getattr(robot, method)(*(state[a] for a in args)))
    return out


# rows per batched call when a chunk is written: a block's results stay in the cache while they
# are transposed into the file's columns (measured in bench/bench_campaign.py, "breakdown")
_BLOCK = 2048


# (thread id, name) -> array: a thread's buffers while a dataset is written (and its open Zarr
# arrays, (thread id, "zarr", path, name))
_buffers = {}


def buffer(name, shape, aligned=False):
    """This thread's array ``name`` of ``shape`` (float64), kept from one chunk to the next
    until :func:`release_buffers`: a new 100 MB array pays its page faults and the kernel's
    zeroing at every chunk (38 of the 212 ms of a 200,000-row chunk's draw, calls and columns,
    measured by bench/bench_campaign.py's breakdown). ``aligned``: its data starts on a
    4096-byte boundary (what ``O_DIRECT`` needs of the memory it writes from)."""
    key = (threading.get_ident(), name)
    b = _buffers.get(key)
    if b is None or b.shape != shape or (aligned and b.ctypes.data % ALIGN):
        _buffers.pop(key, None)  # (the old one freed first)
        _buffers[key] = b = _aligned_empty(shape) if aligned else np.empty(shape)
    return b


ALIGN = 4096  # O_DIRECT: memory address, file offset and length in multiples of this


def _aligned_empty(shape):
    nbytes = 8 * math.prod(shape)
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + nbytes].view(np.float64).reshape(shape)


def cached(key, make):
    """This thread's object ``key``, made by ``make()`` the first time and kept with the
    buffers until :func:`release_buffers` (the Zarr arrays a thread writes)."""
    full = (threading.get_ident(), *key)
    obj = _buffers.get(full)
    if obj is None:
        _buffers[full] = obj = make()
    return obj


def release_buffers():
    """Free the buffers of every thread of this process (a running task keeps its own)."""
    _buffers.clear()


def chunk_columns(robot, quantities, sampler, seed, k, m, block=_BLOCK, reuse=False):
    """Chunk ``k`` as its Parquet columns: a ``(columns, m)`` array, one row per column of
    :func:`dataset_files.column_names` (quantities in order), the same numbers as
    :func:`chunk`. The batched calls run on blocks of ``block`` rows into reused outputs, each
    block transposed into the columns while it is in the cache; with ``reuse`` (this thread's
    column and state arrays) draw, calls and columns cost 1.03x the draw and whole-chunk calls
    alone (measured)."""
    n = robot.n
    state = states(robot, sampler, seed, k, m, reuse)
    widths = [math.prod(shape_of(QUANTITIES[name][2], n)) for name in quantities]
    shape = (sum(widths), m)
    cols = buffer("columns", shape) if reuse else np.empty(shape)
    outs = {name: np.empty((min(block, m), *shape_of(QUANTITIES[name][2], n)))
            for name in quantities if name in OUT}
    for i in range(0, m, block):
        j = min(i + block, m)
        row = 0
        for name, w in zip(quantities, widths):
            method, args, _ = QUANTITIES[name]
            if method is None:
                values = state[name][i:j]
            else:
                inputs = [state[a][i:j] for a in args]
                if name in outs:
                    values = outs[name][:j - i]
                    getattr(robot, method)(*inputs, out=values)
                else:
                    values = np.asarray(getattr(robot, method)(*inputs))
            cols[row:row + w, i:j] = values.reshape(j - i, w).T
            row += w
    return cols


# quantities whose batched call takes an out= array
OUT = {"tau", "M", "h", "g", "C"}


def chunk_reused(robot, quantities, sampler, seed, k, m):
    """Chunk ``k`` (``m`` rows) as :func:`chunk` computes it (the same numbers), into this
    thread's buffers (valid until its next chunk): the states drawn into the state buffer,
    then one whole-chunk batched call per quantity into its own reused output."""
    n = robot.n
    state = states(robot, sampler, seed, k, m, reuse=True)
    out = {}
    for name in quantities:
        method, args, kind = QUANTITIES[name]
        inputs = [state[a] for a in args]
        if method is None:
            out[name] = state[name]
        elif name in OUT:
            out[name] = buffer("out-" + name, (m, *shape_of(kind, n)))
            getattr(robot, method)(*inputs, out=out[name])
        else:
            out[name] = np.asarray(getattr(robot, method)(*inputs))
    return out
