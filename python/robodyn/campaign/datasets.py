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

import math
from pathlib import Path

import numpy as np

from . import dataset_files as _files
from .chunks import QUANTITIES, release_buffers, shape_of, uniform_sampler
from .chunks import chunk as compute_chunk
from .dataset_files import DatasetError, read_dataset
from .writers import write_chunk, write_zarr_chunk

__all__ = ["dataset", "read_dataset", "QUANTITIES", "DatasetError"]

_FORMAT_VERSION = 3  # part of the resume token: a change of the file layout starts afresh


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
    task = dask.delayed(compute_chunk, pure=True)
    chunks = [task(robot, quantities, sampler, int(seed), k, m,
                   dask_key_name=f"robodyn-chunk-{key}-{k}") for k, m in enumerate(sizes)]
    arrays = {}
    for name in quantities:
        shape = shape_of(QUANTITIES[name][2], nv)
        arrays[name] = da.concatenate(
            [da.from_delayed(c[name], (m, *shape), dtype=np.float64,
                             name=f"robodyn-{name}-{key}-{k}")
             for k, (c, m) in enumerate(zip(chunks, sizes))], axis=0)
    layout = [(name, list(shape_of(QUANTITIES[name][2], nv))) for name in quantities]
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
        write = dask.delayed(write_chunk, pure=True)
        writes = [write(robot, quantities, sampler, int(seed), k, sizes[k], str(out),
                        compression, dask_key_name=f"robodyn-write-{key}-{k}") for k in todo]
    else:
        # (computed and each quantity's chunk written in one task, like Parquet)
        _zarr_arrays(out, layout, n, chunk, compression)
        write = dask.delayed(write_zarr_chunk, pure=True)
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
    widths = 3 * robot.n + sum(math.prod(shape_of(QUANTITIES[q][2], robot.n)) for q in quantities
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
            release_buffers()
    from .campaigns import get_client

    client, owned = get_client(scheduler)
    try:
        return dask.compute(*tasks, scheduler=client)
    finally:
        try:
            client.run(release_buffers)
        except Exception:  # noqa: BLE001  (a lost worker: its buffers went with it)
            pass
        if owned:
            client.close()

