"""A guard against per-call overhead regressions: instructions per Python call, counted by
valgrind's callgrind (independent of the machine's load), against a committed baseline.

    python bench/callgrind_guard.py                 # check against bench/results/callgrind_baseline.json
    python bench/callgrind_guard.py --update        # measure and write the baseline
    python bench/callgrind_guard.py --only inverse_dynamics --reps 300

Each main method of the bundled Intelledex 605 (n = 6; generic, and inverse dynamics by the
bundled generated kernels) is called R times over a seeded pool of 64 states in a process run
under ``valgrind --tool=callgrind``; one more process runs the same loop without the calls
(every process sets up and warms all the measured calls, so the runs differ by the loop). (total with the calls - total of the loop) / R is the instructions of
one call from Python, interpreter overhead included, as bench/py_callgrind.py counts them
(the runs differ by the calls alone: fixed hash seed, no BLAS threads, a warm-up pass over the
pool and garbage collection off before the loop). The check fails (exit status 1) when a method
costs more than ``--tolerance`` (default 3 %) above its baseline; it also says which got
cheaper. Counts depend on the compiler, Python and NumPy, which the baseline records: after
changing any of them, remeasure with ``--update`` (and say why in the commit).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASELINE = ROOT / "bench" / "results" / "callgrind_baseline.json"
ROBOT = "intelledex_605"
POOL = 64

# label -> (method, its arguments from a state (q, qd, x), with out=)
METHODS = {
    "inverse_dynamics": ("inverse_dynamics", 3, False),
    "inverse_dynamics out=": ("inverse_dynamics", 3, True),
    "inverse_dynamics specialised": ("inverse_dynamics", 3, False),
    "mass_matrix": ("mass_matrix", 1, False),
    "mass_matrix out=": ("mass_matrix", 1, True),
    "forward_dynamics": ("forward_dynamics", 3, False),
    "bias_torques": ("bias_torques", 2, False),
    "gravity_torques": ("gravity_torques", 1, False),
}
_DETERMINISTIC = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "MKL_NUM_THREADS": "1"}


def _robot(specialised):
    import robodyn
    from robodyn import _core

    robot = robodyn.robots.load(ROBOT)
    if specialised:
        # the kernels compiled into the extension, attached as Robot.specialized() does (which
        # would first trace and simplify the model: minutes under valgrind)
        for name, _sha, *addresses in _core._builtin_kernels():
            if name == ROBOT:
                robot._set_kernels(*addresses)
                break
        else:
            raise SystemExit(f"no bundled kernels for {ROBOT}")
    return robot


def _calls(label):
    """(bound method, rows of arguments, out array or None) of one labelled call, warmed up."""
    import numpy as np

    robot = _robot("specialised" in label)
    method, nargs, with_out = METHODS[label]
    rng = np.random.default_rng(0)
    n = robot.n
    states = [tuple(rng.uniform(-1, 1, n) for _ in range(nargs)) for _ in range(POOL)]
    fn = getattr(robot, method)
    out = np.empty((n, n) if method == "mass_matrix" else n) if with_out else None
    for row in states:  # lazy initialisation and caches warmed before the counted loop
        if out is None:
            fn(*row)
        else:
            fn(*row, out=out)
    return fn, states, out


def _child(label, setup, reps):
    # every child of one measurement sets up the same calls, so that two runs differ by the
    # counted loop alone
    calls = {name: _calls(name) for name in setup}
    gc.disable()
    if label == "loop":  # the loop alone: subtracted from the others
        rows = next(iter(calls.values()))[1]
        for i in range(reps):
            rows[i % POOL]
        return
    # (the unpacking of a state into its arguments is counted with the call, as in a user's
    # loop over states)
    fn, rows, out = calls[label]
    # written-out calls, as user code makes them (a starred call with a keyword would add the
    # interpreter's building and unpacking of a keyword dict to every call)
    if out is None and len(rows[0]) == 1:
        for i in range(reps):
            (q,) = rows[i % POOL]
            fn(q)
    elif out is None and len(rows[0]) == 2:
        for i in range(reps):
            q, qd = rows[i % POOL]
            fn(q, qd)
    elif out is None:
        for i in range(reps):
            q, qd, x = rows[i % POOL]
            fn(q, qd, x)
    elif len(rows[0]) == 1:
        for i in range(reps):
            (q,) = rows[i % POOL]
            fn(q, out=out)
    else:
        for i in range(reps):
            q, qd, x = rows[i % POOL]
            fn(q, qd, x, out=out)


def _total(label, setup, reps):
    """Instructions of one child process under callgrind (None if valgrind failed)."""
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        "--trace-children=yes", sys.executable, __file__, "--child", label,
                        "--setup", ",".join(setup), "--reps", str(reps)],
                       capture_output=True, text=True, env={**os.environ, **_DETERMINISTIC},
                       timeout=900)
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.stderr.write(p.stderr[-2000:])
        return None
    return int(m.group(1))


def measure(labels, reps):
    """{label: instructions per Python call} (the empty loop subtracted)."""
    loop = _total("loop", labels, reps)
    out = {}
    for label in labels:
        t = _total(label, labels, reps)
        out[label] = None if t is None or loop is None else round((t - loop) / reps, 1)
    return out


def environment():
    import numpy

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "machine": platform.machine()}


def compare(measured, baseline, tolerance):
    """(lines of the report, labels above baseline * (1 + tolerance))."""
    lines, worse = [], []
    for label, value in measured.items():
        base = baseline.get(label)
        if value is None:
            lines.append(f"{label:<30} valgrind failed")
            worse.append(label)
            continue
        if base is None:
            lines.append(f"{label:<30} {value:>9.1f}   (no baseline)")
            continue
        ratio = value / base
        flag = "  REGRESSION" if ratio > 1 + tolerance else ("  cheaper" if ratio < 1 - tolerance
                                                              else "")
        lines.append(f"{label:<30} {value:>9.1f}  baseline {base:>9.1f}  {ratio:6.3f}x{flag}")
        if ratio > 1 + tolerance:
            worse.append(label)
    return lines, worse


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="measure and write the baseline")
    ap.add_argument("--tolerance", type=float, default=0.03,
                    help="allowed growth over the baseline (default 0.03: 3 %%)")
    ap.add_argument("--reps", type=int, default=2000, help="calls per method (default 2000)")
    ap.add_argument("--only", nargs="+", choices=list(METHODS), help="these methods only")
    ap.add_argument("--baseline", type=pathlib.Path, default=BASELINE)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--setup", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(a.child, a.setup.split(","), a.reps)
        return 0
    labels = a.only or list(METHODS)
    start = time.perf_counter()
    measured = measure(labels, a.reps)
    took = time.perf_counter() - start
    if a.update:
        data = {"robot": ROBOT, "reps": a.reps, "environment": environment(),
                "instructions": measured}
        a.baseline.parent.mkdir(parents=True, exist_ok=True)
        a.baseline.write_text(json.dumps(data, indent=1) + "\n")
        for label, value in measured.items():
            print(f"{label:<30} {value}")
        print(f"wrote {a.baseline} ({took:.0f} s)")
        return 0 if None not in measured.values() else 1
    data = json.loads(a.baseline.read_text())
    if data.get("environment") != environment():
        print(f"note: baseline measured with {data.get('environment')}, this is "
              f"{environment()}; differences may come from there")
    lines, worse = compare(measured, data["instructions"], a.tolerance)
    print("\n".join(lines))
    print(f"({took:.0f} s; tolerance {a.tolerance:.0%})")
    if worse:
        print("per-call cost grew beyond the tolerance: " + ", ".join(worse))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
