"""Where the time of writing a dataset chunk's bytes goes on this machine (no robodyn needed).

    python bench/bench_dataset_io.py [--dir /tmp] [--rounds 5] [--chunks 8] [--json out.json]

A chunk is the 96 MB of raw bytes that ``robodyn.dataset`` writes for 200,000 rows of the
Intelledex 605's q, qd, qdd, tau, M (five files: 9.6 MB x 4 + 57.6 MB). Each way of writing it
is timed per chunk over a dataset of ``--chunks`` chunks, the ways interleaved round by round
(the machine is shared), medians; for each: wall time, this process's CPU time (user and
system, all threads: ``getrusage``) and its minor page faults. The ways:

- ``memory, new array`` / ``memory, reused array``: the bytes written into a new NumPy array
  (its pages touched the first time) or into the same array again: the cost of fresh memory;
- ``buffered, overwrite``: the same chunk files rewritten in place (the page cache's pages
  reused), as a per-chunk bench that overwrites one chunk measures;
- ``buffered, new files``: every chunk in new files (what a dataset does), one ``pwrite`` a
  file, or in writes of 64 KiB (ext4 makes smaller page-cache folios);
- ``O_DIRECT, new files``: new files written with ``O_DIRECT`` from a 4096-aligned buffer (no
  page cache: the device's DMA reads the buffer; not on tmpfs, where it is buffered anyway);
- ``O_DIRECT, new files, in a thread``: the same write from a second thread while this thread
  computes (a busy loop of the same length as a chunk's batch calls): how much of the write's
  wall time the overlap hides, and what CPU it costs.

``--freed``: 6 files of 96 MB written and deleted, then 6 new files, at once or after 8 s (the
freed memory handed back to the host in between). It also reports the kernel's free page reporting (a virtual machine's guest returns free
memory to its host, which must fault it in again and zero it when the guest touches it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

SIZES = [9_600_000] * 4 + [57_600_000]  # bytes of q, qd, qdd, tau (200,000 x 6) and M (x 36)
ALIGN = 4096


def aligned(nbytes):
    raw = np.empty(nbytes + ALIGN, np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off:off + nbytes]


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), r.ru_utime, r.ru_stime, r.ru_minflt


def since(u0):
    u1 = usage()
    return {"wall": u1[0] - u0[0], "user": u1[1] - u0[1], "sys": u1[2] - u0[2],
            "minflt": u1[3] - u0[3]}


def write_files(paths, bufs, direct=False, overwrite=False, piece=1 << 40):
    flags = os.O_WRONLY | os.O_CREAT | (0 if overwrite else os.O_TRUNC)
    if direct:
        flags |= os.O_DIRECT
    for p, b in zip(paths, bufs):
        fd = os.open(p, flags, 0o644)
        try:
            mv = memoryview(b).cast("B")
            done = 0
            while done < len(mv):
                done += os.pwrite(fd, mv[done:done + piece], done)
        finally:
            os.close(fd)


def busy(seconds):
    """A CPU-bound loop of ``seconds`` of this thread's CPU (the compute a write overlaps)."""
    x = np.ones(1 << 14)
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        np.sin(x, out=x)


def freed_then_new(base, pause, files=6):
    """``files`` files of 96 MB written (one ``pwrite`` each) and deleted, then after ``pause``
    seconds ``files`` new ones: the system CPU of each new file, and the MB the kernel reported
    to the host (handed back) during the pause."""
    buf = np.random.default_rng(1).random(sum(SIZES) // 8)
    for k in range(files):
        write_files([base / f"old{k}"], [buf])
    for k in range(files):
        (base / f"old{k}").unlink()
    r0 = _read(REPORTED)
    time.sleep(pause)
    r1 = _read(REPORTED)
    sys_ms = []
    for k in range(files):
        u0 = usage()
        write_files([base / f"fresh{k}"], [buf])
        sys_ms.append(1e3 * since(u0)["sys"])
    for k in range(files):
        (base / f"fresh{k}").unlink()
    reported = (int(r1) - int(r0)) / 1024 if r0 and r1 else None
    return {"pause_s": pause, "sys_ms_per_file": sys_ms, "reported_mb_during_pause": reported}


REPORTED = "/sys/module/page_reporting/parameters/reported_kib"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--chunks", type=int, default=8)
    p.add_argument("--compute-ms", type=float, default=140.0,
                   help="the compute a write overlaps (the chunk's batch calls: ~140 ms)")
    p.add_argument("--pause", type=float, default=4.0,
                   help="seconds after each way's files are removed (free page reporting)")
    p.add_argument("--json", default=None)
    p.add_argument("--freed", action="store_true",
                   help="only: new files written right after freeing as much, and after 8 s")
    args = p.parse_args(argv)
    if args.freed:
        base = Path(tempfile.mkdtemp(prefix="robodyn-io-", dir=args.dir))
        try:
            out = [freed_then_new(base, pause) for _ in range(2) for pause in (0.0, 8.0)]
        finally:
            shutil.rmtree(base)
        for x in out:
            print(f"  after a pause of {x['pause_s']:.0f} s ({x['reported_mb_during_pause']} MB "
                  f"reported): system CPU per new 96 MB file "
                  f"{[round(v) for v in x['sys_ms_per_file']]} ms")
        if args.json:
            Path(args.json).write_text(json.dumps({"dir": args.dir, "freed": out}, indent=1)
                                       + "\n")
        return
    base = Path(tempfile.mkdtemp(prefix="robodyn-io-", dir=args.dir))
    src = [aligned(n) for n in SIZES]
    rng = np.random.default_rng(0)
    for b in src:
        b.view(np.float64)[:] = rng.random(b.size // 8)
    reused = [np.empty(n, np.uint8) for n in SIZES]
    for b in reused:
        b[:] = 1
    direct_ok = True
    try:
        write_files([base / "probe"], [src[0][:ALIGN]], direct=True)
    except OSError as e:
        direct_ok = f"no: {e}"
    ways = {
        "memory, new array": lambda r, k: [np.copyto(np.empty(n, np.uint8), b)
                                           for n, b in zip(SIZES, src)],
        "memory, reused array": lambda r, k: [np.copyto(d, b) for d, b in zip(reused, src)],
        "buffered, overwrite": lambda r, k: write_files(
            [base / f"over{i}" for i in range(5)], src, overwrite=True),
        "buffered, new files": lambda r, k: write_files(
            [base / f"new-{r}-{k}-{i}" for i in range(5)], src),
        "buffered, new files, writes of 64 KiB": lambda r, k: write_files(
            [base / f"small-{r}-{k}-{i}" for i in range(5)], src, piece=1 << 16),
    }
    if direct_ok is True:
        ways["O_DIRECT, new files"] = lambda r, k: write_files(
            [base / f"direct-{r}-{k}-{i}" for i in range(5)], src, direct=True)

        def overlapped(r, k):
            t = threading.Thread(target=write_files, args=(
                [base / f"odirect-{r}-{k}-{i}" for i in range(5)], src, True))
            t.start()
            busy(args.compute_ms / 1e3)
            t.join()
        ways["O_DIRECT, new files, in a thread"] = overlapped
        ways["compute alone (the busy loop)"] = lambda r, k: busy(args.compute_ms / 1e3)
    res = {w: [] for w in ways}
    load = [os.getloadavg()[0]]
    names = list(ways)
    try:
        for r in range(args.rounds):
            for w in names[r % len(names):] + names[:r % len(names)]:
                for k in range(args.chunks):
                    u0 = usage()
                    ways[w](r, k)
                    res[w].append(since(u0))
                for f in base.iterdir():  # (not timed; "over*" stays)
                    if not f.name.startswith("over"):
                        f.unlink()
                # the freed pages reported to the host before the next way (as a new job's
                # memory is), not reused at once
                time.sleep(args.pause)
            load.append(os.getloadavg()[0])
            print(f"round {r} done, load {load[-1]:.2f}", flush=True)
    finally:
        shutil.rmtree(base)
    mb = sum(SIZES) / 1e6
    out = {"dir": args.dir, "chunk_bytes": sum(SIZES), "chunks": args.chunks,
           "rounds": args.rounds, "o_direct": direct_ok, "load": load,
           "page_reporting_order": _read("/sys/module/page_reporting/parameters/"
                                         "page_reporting_order"),
           "median_per_chunk": {}}
    print(f"dir {args.dir}, {mb:.0f} MB a chunk, {args.chunks} chunks x {args.rounds} rounds, "
          f"load {min(load):.1f}-{max(load):.1f}")
    for w, v in res.items():
        med = {k: statistics.median(x[k] for x in v) for k in v[0]}
        out["median_per_chunk"][w] = med
        print(f"  {w:34s} wall {1e3 * med['wall']:7.1f} ms  CPU user {1e3 * med['user']:6.1f} "
              f"sys {1e3 * med['sys']:6.1f} ms  minor faults {med['minflt']:7.0f}  "
              f"({mb / med['wall']:,.0f} MB/s wall)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def _read(p):
    try:
        return Path(p).read_text().strip()
    except OSError:
        return None


if __name__ == "__main__":
    main()
