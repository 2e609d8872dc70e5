"""Instructions per Python call, counted by valgrind (independent of the machine's load).

    python bench/py_callgrind.py ROBOT QUANTITY LABEL [--reps R]
    python bench/py_callgrind.py ur5 --table bench/results/py_callgrind.json

runs one implementation of robodyn.bench (e.g. ``ur5 id "robodyn out="``, ``ur5 id pinocchio``)
R times over its pool of states and exits; run under ``valgrind --tool=callgrind`` with R and
with 0, the difference of the two totals over R is the instructions of one call from Python,
interpreter overhead included; LABEL ``loop`` runs the loop without calls (its count is
subtracted by ``count``). ``count(robot, quantity, labels)`` does both runs for each label
(bench/run_all.py uses it).
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def _impl(robot, quantity, label):
    import numpy as np

    import peers as B

    case = B.load_case(robot) if not robot.startswith("chain") else __import__(
        "cpp_cases").chain_case(int(robot[5:]))
    lib = label.split()[0]
    peers = [p for p in B.PEERS if p == {"rtb": "rtb"}.get(lib, lib)]
    pool = B.random_states(case.robot, 64, np.random.default_rng(0))
    impls = B.implementations(case, pool, [quantity], peers, batch=0,
                              specialized="specialised" in label, notes=[])[quantity]
    for im in impls:
        if im.label == label:
            return im
    raise SystemExit(f"no implementation {label!r} for {robot} {quantity}: "
                     f"{[im.label for im in impls]}")


_DETERMINISTIC = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "MKL_NUM_THREADS": "1"}


def count(robot, quantity, labels, reps=5000):
    """{label: instructions per call, the empty loop's subtracted} (None where valgrind
    failed)."""
    out = {}
    for label in ["loop"] + list(labels):
        totals = []
        for r in (0, reps):
            # the two runs must differ by the calls alone: fixed hash seed, no BLAS thread pools
            # (spinning threads); children traced because the interpreter may re-exec itself
            p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                "--trace-children=yes", sys.executable, __file__, robot,
                                quantity, label, "--reps", str(r)], capture_output=True,
                               text=True, env={**os.environ, **_DETERMINISTIC})
            m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
            totals.append(int(m.group(1)) if p.returncode == 0 and m else None)
        out[label] = None if None in totals else (totals[1] - totals[0]) / reps
    loop = out.pop("loop") or 0.0
    return {k: (v - loop if v is not None else None) for k, v in out.items()}


LABELS = ("robodyn", "robodyn out=", "robodyn specialised", "pinocchio")


def table(robot="ur5", quantities=("id", "M", "fd"), labels=LABELS, reps=3000):
    """{quantity: {label: instructions per call}} for bench/results/py_callgrind.json."""
    return {q: count(robot, q, labels, reps) for q in quantities}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("robot")
    ap.add_argument("quantity", nargs="?")
    ap.add_argument("label", nargs="?")
    ap.add_argument("--reps", type=int, default=5000)
    ap.add_argument("--table", metavar="JSON",
                    help="count every LABELS implementation of id, M, fd on ROBOT under "
                         "valgrind and write the table to JSON (about 10 minutes)")
    a = ap.parse_args()
    if a.table:
        import json

        t = {"robot": a.robot, "instructions": table(a.robot, reps=min(a.reps, 3000))}
        print(json.dumps(t, indent=1), flush=True)
        pathlib.Path(a.table).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(a.table).write_text(json.dumps(t, indent=1))
        return
    if a.label == "loop":  # the loop alone: subtracted from the others
        rows = [(0,)] * 64
        for i in range(a.reps):
            rows[i % 64]
        return
    im = _impl(a.robot, a.quantity, a.label)
    # one pass over the pool first, so that the runs with reps = 0 and reps = R differ by the
    # calls alone (lazy initialisation, caches warmed)
    for row in im.args:
        im.fn(*row)
    rows = im.args
    k = len(rows)
    fn = im.fn
    gc.disable()
    for i in range(a.reps):
        fn(*rows[i % k])


if __name__ == "__main__":
    main()
