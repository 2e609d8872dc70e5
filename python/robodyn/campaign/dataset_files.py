"""A dataset's folder (:func:`robodyn.dataset`): its metadata, a record of every chunk, and
reading it back with every chunk checked (:func:`read_dataset`).

The folder holds:

- ``_dataset.json``: the robot, the quantities and their shapes, ``rows``, ``chunk``, the
  seed, the format, the resume token and ``"complete"``; once complete, ``"chunks"``: for each
  chunk its rows and, for each of its files, the size and checksum recorded when it was
  written (SHA-256 of a Parquet part, CRC-32 of a Zarr chunk file);
- ``part-NNNNNN.parquet`` (Parquet, one file per chunk) or ``NAME/`` (Zarr, one array per
  quantity);
- ``_chunks/NNNNNN.json`` while the dataset is being written: a chunk's record, written before
  its files take their final names (so every chunk file in place has its record); gathered
  into ``_dataset.json`` when the dataset is complete, and removed.

Names starting with ``_`` are skipped by Parquet readers (pyarrow, ``pandas.read_parquet``,
Dask, Spark, DuckDB's ``*.parquet`` globs), so the folder reads as one table. Folders written
before checksums were recorded (``dataset.json``) are still read, each chunk checked for its
file and its row count.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zlib
from pathlib import Path

import numpy as np

from ..util import safe_io

META = "_dataset.json"
OLD_META = "dataset.json"  # the metadata of folders written before the chunk records
RECORDS = "_chunks"
MAX_CHUNKS = 100_000  # tasks of one dataset: the lazy graph holds a few kB per chunk
MAX_CHUNK_BYTES = 4 << 30  # one chunk's values in a worker's memory


class DatasetError(ValueError):
    """A dataset folder that cannot be read as written: missing, corrupt or foreign files."""


def chunk_sizes(rows, chunk):
    """The rows of each chunk: ``chunk`` each, the last one what is left."""
    return (chunk,) * (rows // chunk) + ((rows % chunk,) if rows % chunk else ())


def part_name(k):
    return f"part-{k:06d}.parquet"


def column_names(name, shape):
    """Parquet column names of a quantity: ``tau_0 .. tau_{n-1}``, ``M_0_0 .. M_{n-1}_{n-1}``
    (row-major), or the name of a scalar."""
    if not shape:
        return [name]
    return [name + "".join(f"_{i}" for i in idx) for idx in np.ndindex(*shape)]


# ---------------------------------------------------------------- metadata and records

def read_meta(out):
    """The metadata of the folder ``out`` (``_dataset.json``, else the older
    ``dataset.json``), or None if it has none or it cannot be parsed."""
    for name in (META, OLD_META):
        try:
            meta = json.loads(safe_io.read_text(Path(out) / name))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) else None
    return None


def _write_json(path, value):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    os.replace(tmp, path)


def write_meta(out, meta):
    _write_json(Path(out) / META, meta)


def write_record(out, k, record):
    """Chunk ``k``'s record ``{"rows": m, "files": {relative path: [size, "algorithm:hex"]}}``."""
    where = Path(out) / RECORDS
    where.mkdir(exist_ok=True)
    _write_json(where / f"{k:06d}.json", record)


class _Crc32:
    """CRC-32 (zlib's, which releases the GIL on large buffers) with hashlib's ``update`` /
    ``hexdigest``."""

    def __init__(self):
        self._crc = 0

    def update(self, data):
        self._crc = zlib.crc32(data, self._crc)

    def hexdigest(self):
        return f"{self._crc:08x}"


# a record's checksums: "sha256:<hex>" for Parquet parts, "crc32:<hex>" for Zarr chunk files
# (2.3 GB/s against SHA-256's 1.5 on this machine: a raw chunk is written without a copy, so
# the checksum is most of what writing it costs the process)
HASHES = {"sha256": hashlib.sha256, "crc32": _Crc32}


def hasher(name):
    return HASHES[name]()


def file_record(path, algorithm):
    """``[size, "algorithm:hex"]`` of a written file."""
    size, digest = safe_io.file_digest(path, 1 << 62, new=HASHES[algorithm])
    return [size, f"{algorithm}:{digest}"]


def _digest_of(recorded):
    """``(hash factory, hex)`` of a recorded ``"algorithm:hex"`` (KeyError/ValueError if it
    is not one)."""
    algorithm, _, value = str(recorded).partition(":")
    return HASHES[algorithm], value


def records(out, meta, count):
    """``{k: record}`` of the chunks of the folder ``out``: those of its complete metadata and
    those in ``_chunks/``."""
    found = {}
    chunks = meta.get("chunks") if isinstance(meta, dict) else None
    if isinstance(chunks, list) and len(chunks) == count:
        found.update(enumerate(chunks))
    where = Path(out) / RECORDS
    if where.is_dir():
        for p in where.iterdir():
            m = re.fullmatch(r"(\d{6,})\.json", p.name)
            if m and int(m.group(1)) < count:
                try:
                    found[int(m.group(1))] = json.loads(safe_io.read_text(p, 1 << 20))
                except (OSError, ValueError):
                    pass
    return found


def check_chunk(out, k, rows, record, files):
    """Why chunk ``k`` of ``out`` is not as recorded (its ``files``, relative paths), or None:
    a missing record or file, another row count, size or checksum."""
    if not isinstance(record, dict) or record.get("rows") != rows:
        return "has no record of its rows" if not isinstance(record, dict) else (
            f"has {record.get('rows')!r} rows recorded, expected {rows}")
    recorded = record.get("files")
    if not isinstance(recorded, dict) or set(recorded) != set(files):
        return "has no record of its files"
    for rel in files:
        try:
            size, recorded_digest = recorded[rel]
            new, digest = _digest_of(recorded_digest)
            got = safe_io.file_digest(Path(out) / rel, int(size), new=new)
        except FileNotFoundError:
            return f"is missing its file {rel}"
        except (KeyError, TypeError, ValueError) as e:  # a bad record, or the file grew
            return f"file {rel} is not as written ({e})"
        if list(got) != [size, digest]:
            return f"file {rel} is corrupt ({got[0]} bytes; its checksum differs from the one " \
                   "recorded when it was written)"
    return None


def chunk_files(meta, k, zarr_keys=None):
    """The files of chunk ``k`` (relative paths): its Parquet part, or its Zarr chunk file in
    each quantity's array (``zarr_keys``: name -> the array's chunk key of chunk k)."""
    if meta["format"] == "parquet":
        return [part_name(k)]
    return [f"{name}/{zarr_keys[name](k)}" for name in meta["quantities"]]


def zarr_keys(out, names):
    """name -> (k -> the chunk key of row chunk ``k`` in the Zarr array ``out/name``)."""
    import zarr

    keys = {}
    for name in names:
        z = zarr.open_array(str(Path(out) / name), mode="r")
        zeros = (0,) * (z.ndim - 1)
        keys[name] = (lambda md, zs: lambda k: md.encode_chunk_key((k, *zs)))(z.metadata, zeros)
    return keys


# ---------------------------------------------------------------- replacing a folder

_OWN_FILES = re.compile(r"(_?dataset\.json(\.tmp)?|part-\d{6,}\.parquet(\.tmp)?)")
_OWN_CHUNK = re.compile(r"[0-9]+(\.[0-9a-f]+\.partial)?")


def _own_zarr_array(p, names):
    """Whether ``p`` is a Zarr array a dataset wrote: a quantity's name, zarr.json, and chunk
    files under c/ only (no link anywhere)."""
    if p.name not in names or p.is_symlink() or not p.is_dir():
        return False
    for root, dirs, files in os.walk(p):
        rel = Path(root).relative_to(p)
        for d in dirs:
            if (Path(root) / d).is_symlink() or not (
                    (rel == Path(".") and d == "c") or (rel.parts[:1] == ("c",)
                                                         and _OWN_CHUNK.fullmatch(d))):
                return False
        for f in files:
            if not ((rel == Path(".") and f == "zarr.json")
                    or (rel.parts[:1] == ("c",) and _OWN_CHUNK.fullmatch(f))):
                return False
    return True


def clear(out, names):
    """Remove the files a dataset wrote in ``out`` (metadata, records, Parquet parts, the
    Zarr arrays of the quantities ``names``); refuse, removing nothing, if anything else is
    there."""
    own, foreign = [], []
    for p in sorted(Path(out).iterdir()):
        if p.is_symlink():
            foreign.append(p.name)
        elif p.is_file() and _OWN_FILES.fullmatch(p.name):
            own.append(p)
        elif p.name == RECORDS and p.is_dir() and all(
                q.is_file() and not q.is_symlink() and re.fullmatch(r"\d{6,}\.json(\.tmp)?",
                                                                    q.name)
                for q in p.iterdir()):
            own.append(p)
        elif _own_zarr_array(p, names):
            own.append(p)
        else:
            foreign.append(p.name)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                           else "")
        raise DatasetError(f"path {out}: holds files that are not a dataset's ({shown}); "
                           "overwrite=True removes only a dataset's own files: move them or "
                           "choose another path")
    for p in own:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


# ---------------------------------------------------------------- reading

def read_dataset(path, quantities=None):
    """A dataset written by :func:`robodyn.dataset` as ``{name: numpy array (rows, *shape)}``.

    Every chunk is checked before its rows are used: its file(s) present, its row count, and
    the size and checksum of each file as recorded when it was written; a missing or corrupt
    chunk raises :class:`DatasetError` naming it (the same ``robodyn.dataset`` call recomputes
    it)."""
    path = Path(path)
    meta = read_meta(path)
    if meta is None:
        raise DatasetError(f"path {path}: not a dataset ({META} missing or unreadable)")
    if not meta.get("complete", True):
        raise DatasetError(f"path {path}: the dataset is incomplete (interrupted); run the same "
                           "robodyn.dataset call again to finish it")
    try:
        shapes = {k: tuple(int(x) for x in v) for k, v in meta["quantities"].items()}
        rows, chunk, fmt = int(meta["rows"]), int(meta["chunk"]), meta["format"]
        sizes = chunk_sizes(rows, chunk)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        raise DatasetError(f"path {path}: its metadata is not a dataset's") from None
    if (fmt not in ("parquet", "zarr") or len(sizes) > MAX_CHUNKS
            or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) for name in shapes)):
        raise DatasetError(f"path {path}: its metadata is not a dataset's")
    names = list(shapes) if quantities is None else list(quantities)
    for name in names:
        if name not in shapes:
            raise ValueError(f"quantities: {name!r} is not in {path} ({', '.join(shapes)})")
    checked = "chunks" in meta  # (folders of the older layout have no checksums)
    found = records(path, meta, len(sizes)) if checked else {}
    if checked and len(found) != len(sizes):
        raise DatasetError(f"path {path}: records {len(found)} chunks, expected {len(sizes)}")

    def fail(k, why):
        raise DatasetError(f"path {path}: chunk {k} {why}; run the same robodyn.dataset call "
                           "again to recompute it")

    if fmt == "zarr":
        import zarr

        try:
            keys = zarr_keys(path, shapes)
        except Exception as e:  # noqa: BLE001  (zarr's errors for a missing or damaged array)
            raise DatasetError(f"path {path}: a quantity's Zarr array cannot be opened "
                               f"({type(e).__name__}: {e})") from None
        for k, m in enumerate(sizes):
            files = chunk_files(meta, k, keys)
            if checked:
                why = check_chunk(path, k, m, found[k], files)
                if why:
                    fail(k, why)
            else:  # (the older layout: no record; every chunk file present)
                for rel in files:
                    if not (path / rel).is_file():
                        fail(k, f"is missing its file {rel}")
        return {name: np.asarray(zarr.open_array(str(path / name), mode="r")[...])
                for name in names}
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {name: column_names(name, shapes[name]) for name in names}
    wanted = [c for name in names for c in cols[name]]
    width = sum(len(column_names(name, shape)) for name, shape in shapes.items())
    out = {name: np.empty((rows, *shapes[name])) for name in names}
    start = 0
    for k, m in enumerate(sizes):
        rel = part_name(k)
        if checked:
            rec = found[k]
            if not isinstance(rec, dict) or rec.get("rows") != m:
                fail(k, "has no record of its rows" if not isinstance(rec, dict)
                     else f"has {rec.get('rows')!r} rows recorded, expected {m}")
            try:
                size, recorded_digest = rec["files"][rel]
                new, digest = _digest_of(recorded_digest)
                limit = int(size)
            except (KeyError, TypeError, ValueError):
                fail(k, "has no record of its file")
        else:  # (the older layout: no record; a bound from the rows)
            size, digest, limit = None, None, 2 * 8 * m * width + (1 << 24)
        try:
            data = safe_io.read_bytes(path / rel, limit)
        except FileNotFoundError:
            fail(k, f"is missing its file {rel}")
        except ValueError as e:
            fail(k, f"file {rel} is not as written ({e})")
        if checked:
            h = new()
            h.update(data)
            if len(data) != size or h.hexdigest() != digest:
                fail(k, f"file {rel} is corrupt ({len(data)} bytes; its checksum differs from "
                        "the one recorded when it was written)")
        try:
            table = pq.read_table(pa.BufferReader(data), columns=wanted)
        except (pa.ArrowException, OSError) as e:
            fail(k, f"file {rel} is not a readable Parquet file ({e})")
        if table.num_rows != m:
            fail(k, f"file {rel} has {table.num_rows} rows, expected {m}")
        for name in names:
            dest = out[name].reshape(rows, -1)
            for j, c in enumerate(cols[name]):
                dest[start:start + m, j] = table[c].to_numpy()
        start += m
    return out
