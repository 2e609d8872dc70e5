"""Zarr chunks written by robodyn itself when uncompressed: blocks of rows written as they
are computed (the write of one overlapping the next one's calls), through ``O_DIRECT`` where
the file system takes it; and the chunk writer of both formats."""

from __future__ import annotations

import errno
import math
import os
import sys
from pathlib import Path

import numpy as np

from . import dataset_files as _files
from .chunks import (ALIGN, OUT, QUANTITIES, buffer, cached, chunk_columns, chunk_reused,
                     shape_of, states)

def write_zarr_chunk(robot, quantities, sampler, seed, k, m, path, chunk):
    """Chunk ``k`` computed where it runs and stored as Zarr chunk ``k`` of each quantity's
    array (the arrays were created by :func:`dataset`). Uncompressed (the default), a chunk
    file is the rows' raw little-endian bytes: :func:`_write_raw_chunk` writes them itself,
    overlapped with the computation. Compressed, Zarr encodes and writes each whole chunk."""
    arrays = {name: _zarr_open(path, name) for name in quantities}
    if all(_raw_layout(z) for z in arrays.values()):
        return _write_raw_chunk(robot, quantities, sampler, seed, k, m, path, chunk, arrays)
    values = chunk_reused(robot, quantities, sampler, seed, k, m)
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
    state = states(robot, sampler, seed, k, m, reuse=True)
    zeros = {name: (0,) * (arrays[name].ndim - 1) for name in quantities}
    files = {}
    block = max(512, -(-m // (_BLOCKS_PER_CHUNK * 512)) * 512)
    pool = ThreadPoolExecutor(1, thread_name_prefix="robodyn-write")
    pending = []
    try:
        for name in quantities:
            width = math.prod(shape_of(QUANTITIES[name][2], n))
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
                out = buffer("out-" + name, (m, *shape_of(kind, n)), aligned=True)[i:j]
                inputs = [state[a][i:j] for a in args]
                if name in OUT:
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
        if self.dfd is not None and offset % ALIGN == 0 and values.ctypes.data % ALIGN == 0:
            body = len(data) - len(data) % ALIGN
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
    :func:`release_buffers` (opening costs 0.65 ms, 2 % of a 200,000-row chunk's compute for
    five quantities)."""
    import zarr

    # (write_empty_chunks: no scan for chunks equal to the fill value, 10 ms of a 58 MB
    # chunk, and every chunk has its file, which resuming looks for)
    return cached(("zarr", path, name), lambda: zarr.open_array(
        str(Path(path) / name), mode="r+", config={"write_empty_chunks": True}))


def write_chunk(robot, quantities, sampler, seed, k, m, out, compression):
    """Chunk ``k`` computed and written where it was computed (nothing else moves) as
    ``out/part-NNNNNN.parquet``; its record (:mod:`robodyn.dataset_files`)."""
    # (this thread's buffers: the file is written before the next chunk of the thread)
    cols = chunk_columns(robot, quantities, sampler, seed, k, m, reuse=True)
    names = [c for name in quantities
             for c in _files.column_names(name, shape_of(QUANTITIES[name][2], robot.n))]
    return write_columns(names, cols, out, k, compression)


def write_columns(names, cols, out, k, compression):
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
