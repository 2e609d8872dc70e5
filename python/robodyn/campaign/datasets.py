"""Datasets of dynamics quantities for learning: :func:`dataset` (``robodyn.dataset``).

``robodyn.dataset(robot, n, quantities=["q", "qd", "qdd", "tau", "M"], chunk=100_000,
path="data/")`` samples ``n`` states and computes the quantities through ``dask.array``: the
rows are cut into chunks of ``chunk`` rows, and each chunk is one Dask task that draws its
states and makes one batched C++ call per quantity (a C++ loop without the GIL); the arrays are
views of the chunks' results (computing several of them computes each chunk once). Writing
Parquet computes and writes a chunk in one task (the rows never leave their worker), its
batched calls on blocks of 2,048 rows whose results go into the file's columns while they are
in the cache (the same numbers). The chunks run on the current Dask scheduler: a
``distributed.Client`` if one is active (or given as ``scheduler=``), else Dask's threads, one
per core (the batched calls release the GIL).

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

Files: ``format="parquet"`` writes ``path/part-NNNNNN.parquet``, one file per chunk, with a
float64 column per entry (``q_0 .. q_{n-1}``, ``M_0_0, M_0_1, ..`` row-major, ``kinetic_energy``),
uncompressed by default, and ``path/_dataset.json`` (robot, quantities, shapes, seed, rows, and
each chunk's rows and checksums: :mod:`robodyn.dataset_files`); Parquet readers skip names that
start with ``_``, so ``pandas.read_parquet(path)`` reads the folder as one table.
``format="zarr"`` (needs the ``zarr`` package) writes one Zarr (v3) array per quantity,
``path/NAME``, of shape ``(rows, *shape)``, chunked like the rows, NaN where nothing was
written; uncompressed by default, a chunk's file is its rows' raw little-endian bytes, and
robodyn writes it itself: the chunk's batched calls run on blocks of rows into reused
page-aligned outputs, and a writer thread writes each block from those outputs while the next
block is computed, with ``O_DIRECT`` where the file system takes it (no copy into the page
cache). Zarr is the fast path: no transpose into columns, no encoding, and the write hidden
behind the computation (a whole job on one core, on a disk: 0.88-0.91 of the batch call's rows
per CPU-second; on tmpfs, where the rows must be copied into new memory, 0.70-0.73; Parquet
0.54-0.58: bench/bench_campaign.py ``--dataset-job`` and docs/campaign.md). Parquet stays the
default: its files are tables any Parquet reader opens, and their layout is documented.
:func:`read_dataset` reads either back as NumPy arrays. The workers write the files themselves
(the rows never travel to the client), so on a cluster ``path`` must be a directory that every
worker sees (a shared file system).

Resuming: ``_dataset.json`` is written first, with a token of everything that determines the
rows (the robot's model, the quantities, the sampler, the seed, ``n``, ``chunk``, the format
and compression) and ``"complete": false``; each chunk's files are written under temporary
names, their sizes and checksums recorded (``_chunks/NNNNNN.json``), then renamed. The same call
into the same directory after an interruption (Ctrl-C, a lost client, SIGKILL) checks every
chunk there against its record and computes only the chunks missing or not as recorded; a
different dataset there is refused (``overwrite=True`` replaces it, removing only a dataset's
own files, and refuses a directory holding anything else), and :func:`read_dataset` refuses an
incomplete dataset and names a missing or corrupt chunk. A custom sampler must have a
deterministic Dask token to resume (a module-level function has one; an object can define
``__dask_tokenize__``).

Bounds: at most 100,000 chunks (``dataset_files.MAX_CHUNKS``) and 4 GiB of values per chunk
(``MAX_CHUNK_BYTES``), checked before any task is built.
"""

from __future__ import annotations

import errno
import math
import os
import sys
import threading
from pathlib import Path

import numpy as np

from . import dataset_files as _files
from .dataset_files import DatasetError, read_dataset

__all__ = ["dataset", "read_dataset", "QUANTITIES", "DatasetError"]

_FORMAT_VERSION = 3  # part of the resume token: a change of the file layout starts afresh

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


def _states(robot, sampler, seed, k, m, reuse=False):
    """Chunk ``k``'s ``m`` states ``(q, qd, qdd)``, drawn from its own seed (``reuse``: the
    default sampler draws into this thread's buffer, valid until its next chunk)."""
    n = robot.n
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k,)))
    if not isinstance(sampler, _Uniform):
        return _checked_states(sampler(rng, m), m, n)
    if reuse:
        # (three page-aligned buffers: a chunk file can be written from them with O_DIRECT)
        drawn = sampler.draw_into(rng, [_buffer("state-" + s, (m, n), aligned=True)
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


def _chunk(robot, quantities, sampler, seed, k, m):
    """Chunk ``k`` (``m`` rows): its states, then one batched call per quantity;
    ``{name: array (m, *shape)}``."""
    state = _states(robot, sampler, seed, k, m)
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


def _buffer(name, shape, aligned=False):
    """This thread's array ``name`` of ``shape`` (float64), kept from one chunk to the next
    until :func:`_release_buffers`: a new 100 MB array pays its page faults and the kernel's
    zeroing at every chunk (38 of the 212 ms of a 200,000-row chunk's draw, calls and columns,
    measured by bench/bench_campaign.py's breakdown). ``aligned``: its data starts on a
    4096-byte boundary (what ``O_DIRECT`` needs of the memory it writes from)."""
    key = (threading.get_ident(), name)
    b = _buffers.get(key)
    if b is None or b.shape != shape or (aligned and b.ctypes.data % _ALIGN):
        _buffers.pop(key, None)  # (the old one freed first)
        _buffers[key] = b = _aligned_empty(shape) if aligned else np.empty(shape)
    return b


_ALIGN = 4096  # O_DIRECT: memory address, file offset and length in multiples of this


def _aligned_empty(shape):
    nbytes = 8 * math.prod(shape)
    raw = np.empty(nbytes + _ALIGN, np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start:start + nbytes].view(np.float64).reshape(shape)


def _release_buffers():
    """Free the buffers of every thread of this process (a running task keeps its own)."""
    _buffers.clear()


def _chunk_columns(robot, quantities, sampler, seed, k, m, block=_BLOCK, reuse=False):
    """Chunk ``k`` as its Parquet columns: a ``(columns, m)`` array, one row per column of
    :func:`dataset_files.column_names` (quantities in order), the same numbers as
    :func:`_chunk`. The batched calls run on blocks of ``block`` rows into reused outputs, each
    block transposed into the columns while it is in the cache; with ``reuse`` (this thread's
    column and state arrays) draw, calls and columns cost 1.03x the draw and whole-chunk calls
    alone (measured)."""
    n = robot.n
    state = _states(robot, sampler, seed, k, m, reuse)
    widths = [math.prod(_shape(QUANTITIES[name][2], n)) for name in quantities]
    shape = (sum(widths), m)
    cols = _buffer("columns", shape) if reuse else np.empty(shape)
    outs = {name: np.empty((min(block, m), *_shape(QUANTITIES[name][2], n)))
            for name in quantities if name in _OUT}
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
_OUT = {"tau", "M", "h", "g", "C"}


def _chunk_reused(robot, quantities, sampler, seed, k, m):
    """Chunk ``k`` (``m`` rows) as :func:`_chunk` computes it (the same numbers), into this
    thread's buffers (valid until its next chunk): the states drawn into the state buffer,
    then one whole-chunk batched call per quantity into its own reused output."""
    n = robot.n
    state = _states(robot, sampler, seed, k, m, reuse=True)
    out = {}
    for name in quantities:
        method, args, kind = QUANTITIES[name]
        inputs = [state[a] for a in args]
        if method is None:
            out[name] = state[name]
        elif name in _OUT:
            out[name] = _buffer("out-" + name, (m, *_shape(kind, n)))
            getattr(robot, method)(*inputs, out=out[name])
        else:
            out[name] = np.asarray(getattr(robot, method)(*inputs))
    return out


def _write_zarr_chunk(robot, quantities, sampler, seed, k, m, path, chunk):
    """Chunk ``k`` computed where it runs and stored as Zarr chunk ``k`` of each quantity's
    array (the arrays were created by :func:`dataset`). Uncompressed (the default), a chunk
    file is the rows' raw little-endian bytes: :func:`_write_raw_chunk` writes them itself,
    overlapped with the computation. Compressed, Zarr encodes and writes each whole chunk."""
    arrays = {name: _zarr_open(path, name) for name in quantities}
    if all(_raw_layout(z) for z in arrays.values()):
        return _write_raw_chunk(robot, quantities, sampler, seed, k, m, path, chunk, arrays)
    values = _chunk_reused(robot, quantities, sampler, seed, k, m)
    record = {"rows": m, "files": {}}
    for name in quantities:
        arrays[name][k * chunk:k * chunk + m] = values[name]
        zeros = (0,) * (arrays[name].ndim - 1)
        rel = f"{name}/{arrays[name].metadata.encode_chunk_key((k, *zeros))}"
        record["files"][rel] = _files.file_record(Path(path) / rel, "crc32")
    _files.write_record(path, k, record)
    return record


def _raw_layout(z):
    """Whether a chunk file of the Zarr array ``z`` is its rows' raw bytes as NumPy holds them:
    float64, no filter, no compressor, little-endian bytes, no sharding (as
    :func:`_zarr_arrays` creates it uncompressed)."""
    from zarr.codecs import BytesCodec

    return (sys.byteorder == "little" and hasattr(os, "pwrite") and z.metadata.zarr_format == 3
            and z.dtype == np.float64 and not z.filters and not z.compressors
            and getattr(z, "shards", None) is None
            and z.serializer == BytesCodec(endian="little"))


# a raw chunk is computed and written in about this many blocks, the write of each overlapping
# the computation of the next (blocks of a multiple of 512 rows: every block but the last is a
# multiple of 4096 bytes, so O_DIRECT takes it)
_BLOCKS_PER_CHUNK = 8


def _write_raw_chunk(robot, quantities, sampler, seed, k, m, path, chunk, arrays):
    """Chunk ``k`` as each quantity's Zarr chunk file of raw bytes, its write overlapped with
    its computation: the states are drawn, then the batched calls run on blocks of rows into
    this thread's reused, page-aligned outputs, and a writer thread writes each block into the
    chunk files while the next block is computed (the batched calls and ``pwrite`` release the
    GIL), so the task ends one block's write after its last call. The files are opened with
    ``O_DIRECT`` where the file system takes it: the device reads the rows from the buffers
    themselves, with no copy into the page cache (on this machine, new page-cache pages cost
    5-10x the copy: bench/bench_dataset_io.py, docs/campaign.md). Each file is written under a
    temporary name and renamed once complete, like Zarr's local store, and the last chunk is
    padded with the fill value (NaN) to the chunk's size, like Zarr."""
    from concurrent.futures import ThreadPoolExecutor

    n = robot.n
    state = _states(robot, sampler, seed, k, m, reuse=True)
    zeros = {name: (0,) * (arrays[name].ndim - 1) for name in quantities}
    files = {}
    block = max(512, -(-m // (_BLOCKS_PER_CHUNK * 512)) * 512)
    pool = ThreadPoolExecutor(1, thread_name_prefix="robodyn-write")
    pending = []
    try:
        for name in quantities:
            width = math.prod(_shape(QUANTITIES[name][2], n))
            where = Path(path) / name / arrays[name].metadata.encode_chunk_key((k, *zeros[name]))
            files[name] = _RawFile(where, 8 * width, m, chunk)
        for name in quantities:
            if QUANTITIES[name][0] is None:  # a state: ready to write
                pending.append(pool.submit(files[name].write, state[name], 0))
        for i in range(0, m, block):
            j = min(i + block, m)
            for name in quantities:
                method, args, kind = QUANTITIES[name]
                if method is None:
                    continue
                out = _buffer("out-" + name, (m, *_shape(kind, n)), aligned=True)[i:j]
                inputs = [state[a][i:j] for a in args]
                if name in _OUT:
                    getattr(robot, method)(*inputs, out=out)
                else:
                    np.copyto(out, getattr(robot, method)(*inputs))
                pending.append(pool.submit(files[name].write, out, i))
        for f in files.values():
            pending.append(pool.submit(f.finish))
        for p in pending:
            p.result()  # (a failed write raises here)
    except BaseException:
        for p in pending:
            p.cancel()
        pool.shutdown(wait=True)
        for f in files.values():
            f.discard()
        raise
    pool.shutdown(wait=True)
    # the record first: every chunk file in place has one
    record = {"rows": m, "files": {f.final.relative_to(path).as_posix():
                                   [f.size, "crc32:" + f.digest.hexdigest()]
                                   for f in files.values()}}
    _files.write_record(path, k, record)
    for f in files.values():
        f.commit()
    return record


class _RawFile:
    """A chunk file written at row offsets under a temporary name (``NAME.<hex>.partial``,
    Zarr's own, which :func:`_zarr_arrays` removes after an interruption), renamed by
    :meth:`commit`. Pieces whose address, offset and length are multiples of 4096 bytes go
    through a second descriptor opened with ``O_DIRECT`` if the file system accepts it; the
    rest (a last block's tail, the padding) through the ordinary one."""

    def __init__(self, final, row_bytes, rows, chunk_rows):
        import uuid

        self.final, self.row_bytes = final, row_bytes
        self.rows, self.chunk_rows = rows, chunk_rows
        final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = final.with_suffix(f".{uuid.uuid4().hex}.partial")
        # (the file's checksum and size, from the bytes as they are written in order)
        self.digest, self.size = _files.hasher("crc32"), 0
        self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
        self.dfd = None
        if _DIRECT:
            try:
                self.dfd = os.open(self.tmp, os.O_WRONLY | os.O_DIRECT | _CLOEXEC)
            except OSError:  # (a file system without direct I/O)
                self.dfd = None

    def write(self, values, row):
        values = np.ascontiguousarray(values)
        data = memoryview(values).cast("B")
        offset = row * self.row_bytes
        if offset != self.size:  # (the writes of a file come in order, one writer thread)
            raise RuntimeError(f"chunk file {self.final}: write at {offset}, expected {self.size}")
        self.digest.update(data)
        self.size += len(data)
        body = 0
        if self.dfd is not None and offset % _ALIGN == 0 and values.ctypes.data % _ALIGN == 0:
            body = len(data) - len(data) % _ALIGN
            try:
                _pwrite(self.dfd, data[:body], offset)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                # (refused after all, e.g. a device with a larger block: the ordinary way)
                os.close(self.dfd)
                self.dfd, body = None, 0
        for i in range(body, len(data), _WRITE_BYTES):
            _pwrite(self.fd, data[i:i + _WRITE_BYTES], offset + i)

    def finish(self):
        """Pad to the chunk's size with NaN (the arrays' fill value) and close."""
        pad = (self.chunk_rows - self.rows) * self.row_bytes
        if pad:
            data = np.full(pad // 8, np.nan).tobytes()
            _pwrite(self.fd, data, self.rows * self.row_bytes)
            self.digest.update(data)
            self.size += len(data)
        self._close()

    def _close(self):
        for fd in (self.fd, self.dfd):
            if fd is not None:
                os.close(fd)
        self.fd = self.dfd = None

    def commit(self):
        os.replace(self.tmp, self.final)

    def discard(self):
        self._close()
        self.tmp.unlink(missing_ok=True)


# direct I/O for raw chunk files where the platform has it (Linux)
_DIRECT = hasattr(os, "O_DIRECT")
# bytes per ordinary write: on ext4 a large write makes large page-cache folios, taken from the
# free 2 MB blocks that a virtual machine's guest has handed back to its host (free page
# reporting), which the host must fault in and zero again: 200 ms of system CPU per 96 MB in
# one write, 25 ms in writes of 64 KiB (this VM, bench/bench_dataset_io.py)
_WRITE_BYTES = 1 << 16
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _pwrite(fd, data, offset):
    """Write all of ``data`` at ``offset`` (``pwrite`` may write less than asked)."""
    done = 0
    while done < len(data):
        wrote = os.pwrite(fd, data[done:], offset + done)
        if wrote <= 0:  # (no progress: never loop on it)
            raise OSError(errno.EIO, f"pwrite wrote nothing at offset {offset + done}")
        done += wrote


def _zarr_open(path, name):
    """The Zarr array ``path/name`` opened for writing, kept by this thread until
    :func:`_release_buffers` (opening costs 0.65 ms, 2 % of a 200,000-row chunk's compute for
    five quantities)."""
    import zarr

    key = (threading.get_ident(), "zarr", path, name)
    z = _buffers.get(key)
    if z is None:
        # (write_empty_chunks: no scan for chunks equal to the fill value, 10 ms of a 58 MB
        # chunk, and every chunk has its file, which resuming looks for)
        _buffers[key] = z = zarr.open_array(str(Path(path) / name), mode="r+",
                                            config={"write_empty_chunks": True})
    return z


def _write_chunk(robot, quantities, sampler, seed, k, m, out, compression):
    """Chunk ``k`` computed and written where it was computed (nothing else moves) as
    ``out/part-NNNNNN.parquet``; its record (:mod:`robodyn.dataset_files`)."""
    # (this thread's buffers: the file is written before the next chunk of the thread)
    cols = _chunk_columns(robot, quantities, sampler, seed, k, m, reuse=True)
    names = [c for name in quantities
             for c in _files.column_names(name, _shape(QUANTITIES[name][2], robot.n))]
    return _write_columns(names, cols, out, k, compression)


def dataset(robot, n, quantities=("q", "qd", "qdd", "tau"), sampler="uniform", chunk=100_000,
            path=None, *, format="parquet", seed=0, scheduler=None, compression=None,
            overwrite=False):
    """Sample ``n`` states of ``robot`` and compute ``quantities`` in chunks of ``chunk`` rows.

    Without ``path``: returns ``{name: dask.array}`` (lazy; shapes ``(n, *shape)``, chunked by
    rows; computing several together computes each chunk once). With ``path``: computes and
    writes the dataset (``format`` "parquet" or "zarr", module documentation) and returns the
    directory as a ``pathlib.Path``. ``scheduler``: None (the active Dask client, else threads),
    a Dask scheduler name ("threads", "processes", "synchronous"), a scheduler address or a
    ``distributed.Client``. ``compression``: the Parquet codec, or for Zarr one of "zstd",
    "gzip", "blosc" (default none: random floats do not compress, and the codec would cost
    more than the dynamics). The same call into a
    directory holding an interrupted run of the same dataset computes only the missing chunks;
    ``overwrite=True`` replaces a different dataset or other files there.
    """
    from ..model import Robot

    if not isinstance(robot, Robot):
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
    if format == "zarr":
        _zarr_codecs(compression)  # (zarr installed, the codec known: before any file)
    import dask.array as da

    n, nv = int(n), robot.n
    chunk = min(int(chunk), n)  # (the same rows: one chunk of n rows)
    _check_bounds(robot, quantities, n, chunk)
    sizes = _files.chunk_sizes(n, chunk)
    # the states as one (3, n, nv) array chunked by rows; each quantity one task per chunk
    # one task per chunk draws its states and makes one batched call per quantity; the arrays
    # are views of its results. The task names: one token of everything that determines the
    # rows (the robot by its model's fingerprint, not pickled once more per array)
    import dask
    from dask.base import tokenize

    from ..model.spec import fingerprint

    key = tokenize(fingerprint(robot.spec), robot.is_specialized(), quantities, sampler,
                   int(seed), sizes)
    task = dask.delayed(_chunk, pure=True)
    chunks = [task(robot, quantities, sampler, int(seed), k, m,
                   dask_key_name=f"robodyn-chunk-{key}-{k}") for k, m in enumerate(sizes)]
    arrays = {}
    for name in quantities:
        shape = _shape(QUANTITIES[name][2], nv)
        arrays[name] = da.concatenate(
            [da.from_delayed(c[name], (m, *shape), dtype=np.float64,
                             name=f"robodyn-{name}-{key}-{k}")
             for k, (c, m) in enumerate(zip(chunks, sizes))], axis=0)
    layout = [(name, list(_shape(QUANTITIES[name][2], nv))) for name in quantities]
    if path is None:
        return arrays
    out = Path(path)
    meta = {"robot": robot.name, "n": nv, "rows": n, "chunk": chunk, "seed": int(seed),
            "format": format, "sampler": getattr(sampler, "__name__", type(sampler).__name__),
            "compression": compression,
            "quantities": dict(layout), "fingerprint": _resume_token(key, format, compression),
            "complete": False}
    todo, records = _prepare(out, meta, sizes, overwrite)
    if format == "parquet":
        # (computed and written in one task per chunk: the rows never leave their worker)
        write = dask.delayed(_write_chunk, pure=True)
        writes = [write(robot, quantities, sampler, int(seed), k, sizes[k], str(out),
                        compression, dask_key_name=f"robodyn-write-{key}-{k}") for k in todo]
    else:
        # (computed and each quantity's chunk written in one task, like Parquet)
        _zarr_arrays(out, layout, n, chunk, compression)
        write = dask.delayed(_write_zarr_chunk, pure=True)
        writes = [write(robot, quantities, sampler, int(seed), k, sizes[k], str(out), chunk,
                        dask_key_name=f"robodyn-zarr-{key}-{k}") for k in todo]
    records.update(zip(todo, _compute(writes, scheduler) if writes else ()))
    meta["complete"] = True
    meta["chunks"] = [records[k] for k in range(len(sizes))]
    _files.write_meta(out, meta)
    import shutil

    shutil.rmtree(out / _files.RECORDS, ignore_errors=True)  # (now in _dataset.json)
    return out


def _check_bounds(robot, quantities, n, chunk):
    """Refuse a dataset of more chunks than ``dataset_files.MAX_CHUNKS`` or a chunk of more
    values than ``MAX_CHUNK_BYTES`` (before any task or file), saying what to change."""
    chunks = -(-n // chunk)
    if chunks > _files.MAX_CHUNKS:
        raise ValueError(f"n: {n} rows in chunks of {chunk} make {chunks} chunks, over the limit "
                         f"of {_files.MAX_CHUNKS}; raise chunk to at least "
                         f"{-(-n // _files.MAX_CHUNKS)} rows (or lower n)")
    widths = 3 * robot.n + sum(math.prod(_shape(QUANTITIES[q][2], robot.n)) for q in quantities
                               if QUANTITIES[q][0] is not None)
    nbytes = 8 * widths * chunk
    if nbytes > _files.MAX_CHUNK_BYTES:
        raise ValueError(f"chunk: {chunk} rows of {8 * widths} bytes make {nbytes / 2**30:.3g} "
                         f"GiB per chunk, over the limit of {_files.MAX_CHUNK_BYTES >> 30} GiB; "
                         f"lower chunk to at most {_files.MAX_CHUNK_BYTES // (8 * widths)} rows")


def _resume_token(key, format, compression):
    """What makes two runs the same dataset on disk, or None if the sampler has no
    deterministic token (then a directory cannot be resumed)."""
    import dask
    from dask.base import tokenize

    try:
        with dask.config.set({"tokenize.ensure-deterministic": True}):
            return tokenize(key, format, compression, _FORMAT_VERSION)
    except RuntimeError:
        return None


def _prepare(out, meta, sizes, overwrite):
    """Create or check the directory ``out`` (module documentation, "Resuming"):
    ``(chunks still to compute, {k: record} of the chunks there as recorded)``."""
    old = _files.read_meta(out)
    same = (old is not None and meta["fingerprint"] is not None
            and old.get("fingerprint") == meta["fingerprint"]
            and (out / _files.META).is_file())
    if out.exists() and any(out.iterdir()) and not same:
        if not overwrite:
            what = ("holds another dataset (its _dataset.json differs)" if old is not None
                    else "exists and is not empty")
            if old is not None and meta["fingerprint"] is None:
                what += "; the sampler has no deterministic Dask token, so it cannot resume"
            raise ValueError(f"path {out}: {what} (overwrite=True replaces it)")
        _files.clear(out, QUANTITIES)
    out.mkdir(parents=True, exist_ok=True)
    for p in out.glob("part-*.parquet.tmp"):  # a write cut short
        p.unlink()
    if not same:
        _files.write_meta(out, meta)
        return list(range(len(sizes))), {}
    found = _files.records(out, old, len(sizes))
    keys = None
    if meta["format"] == "zarr" and found:
        try:
            keys = _files.zarr_keys(out, meta["quantities"])
        except Exception:  # noqa: BLE001  (an array missing or damaged: every chunk again)
            found = {}
    good = {}
    for k, record in found.items():
        if _files.check_chunk(out, k, sizes[k], record,
                              _files.chunk_files(meta, k, keys)) is None:
            good[k] = record
    todo = [k for k in range(len(sizes)) if k not in good]
    if old.get("complete") and todo:
        # (a complete dataset with chunks to compute again: the good ones' records kept in
        # _chunks/ while the metadata says incomplete)
        for k, record in good.items():
            _files.write_record(out, k, record)
        _files.write_meta(out, meta)
    return todo, good


def _zarr_codecs(compression):
    """The Zarr compressors of ``compression`` (None: uncompressed, the rows' raw bytes)."""
    try:
        import zarr.codecs as zc
    except ImportError as e:
        raise ImportError(f"format='zarr' needs the zarr package ({e})") from None
    codecs = {None: None, "none": None, "zstd": zc.ZstdCodec, "gzip": zc.GzipCodec,
              "blosc": zc.BloscCodec}
    if compression not in codecs:
        raise ValueError(f"compression: expected one of none, zstd, gzip, blosc for Zarr, got "
                         f"{compression!r}")
    return None if codecs[compression] is None else [codecs[compression]()]


def _zarr_arrays(out, layout, rows, chunk, compression):
    """Create the Zarr array of each quantity in ``out`` (``(rows, *shape)`` float64, chunks
    of ``chunk`` rows, NaN where nothing is written yet) unless it exists."""
    import zarr

    for name, shape in layout:
        where = out / name
        if not (where / "zarr.json").is_file():
            zarr.create_array(str(where), shape=(rows, *shape), chunks=(chunk, *shape),
                              dtype="float64", compressors=_zarr_codecs(compression),
                              fill_value=float("nan"), overwrite=True)
        for p in where.rglob("*.partial"):  # a write cut short (Zarr's temporary name)
            p.unlink()


def _write_columns(names, cols, out, k, compression):
    """Chunk ``k``'s Parquet file in ``out``: a float64 column per entry of every quantity
    (``cols``: ``(len(names), rows)``, each row a column; pyarrow takes them without a copy),
    its record written before it takes its name; the record."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: pa.array(c) for name, c in zip(names, cols)})
    path = os.path.join(out, _files.part_name(k))
    tmp = path + ".tmp"
    # flat float64 columns (nested lists cost 1.7x more to encode), no dictionary (random
    # doubles: it would be abandoned), no page statistics (unused for training data), values
    # handed to the encoder 65,536 at a time (default 1,024: 13 % more CPU, measured). Also
    # measured (bench_campaign's breakdown), not kept: store_schema=False, 64 MB data pages and
    # version-2 pages change nothing beyond the noise; BYTE_STREAM_SPLIT costs 12-15 % more; a
    # FixedSizeList column per quantity saves the transpose but costs 65-95 ms more to encode
    # than the 35-50 ms it saves; M's upper triangle saves 17 ms of 98 but packing it costs 7
    # (a 2-4 % gain for a layout every reader would have to unpack)
    pq.write_table(table, tmp, compression=compression or "none", use_dictionary=False,
                   write_statistics=False, write_batch_size=65_536)
    record = {"rows": cols.shape[1],
              "files": {_files.part_name(k): _files.file_record(tmp, "sha256")}}
    _files.write_record(out, k, record)
    os.replace(tmp, path)
    return record


def _compute(tasks, scheduler):
    """Compute ``tasks`` on ``scheduler`` (see :func:`dataset`), then free the write buffers
    wherever the chunks ran."""
    import dask

    if scheduler is None:
        try:
            from distributed import default_client

            scheduler = default_client()
        except (ImportError, ValueError):
            pass
    if scheduler is None or (isinstance(scheduler, str) and "://" not in scheduler):
        try:
            return dask.compute(*tasks, scheduler=scheduler)
        finally:
            _release_buffers()
    from .campaigns import get_client

    client, owned = get_client(scheduler)
    try:
        return dask.compute(*tasks, scheduler=client)
    finally:
        try:
            client.run(_release_buffers)
        except Exception:  # noqa: BLE001  (a lost worker: its buffers went with it)
            pass
        if owned:
            client.close()
