"""Instructions per row of a batch call, and per call of pin.rnea / pin.aba, by callgrind.

    python bench/batch_profile.py talos id [--rows 2000] [--reps 5] [--threads 1]

runs, under ``valgrind --tool=callgrind``, a child that builds the robot (the floating robots
of bench/bench_floating.py with their Pinocchio free-flyer models) and calls the batch method
(``id``: inverse_dynamics, ``fd``: forward_dynamics, ``M``: mass_matrix) REPS times on ROWS
states, then the same child with REPS = 0; the difference of the two totals over REPS * ROWS
is one row of the batch, everything included (the boundary's checks, the workspace, the loop,
the algorithm). Likewise ``pin`` (pin.rnea / pin.aba / pin.crba called from Python on each
state) and ``single`` (robodyn's single call). The algorithm's own share is the C++ harness's
count of the same call (bench/cpp/bench_vs_pinocchio.cpp --count). Instruction counts do not
depend on the machine's load.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

METHODS = {"id": "inverse_dynamics", "fd": "forward_dynamics", "M": "mass_matrix"}
MODES = ("batch", "single", "pin")


def child(robot, quantity, mode, rows, reps, threads):
    import numpy as np

    import robodyn

    import warnings

    import bench_floating as bf
    import robodyn.io.urdf

    path = bf.robots_dir() / bf.ROBOTS[robot]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = robodyn.urdf.parse_urdf(str(path), floating_base=True, check_inertia=False,
                                       mimic="independent")
    # Pinocchio's rnea / aba have no joint friction: both sides without it (as bench_floating)
    for body in spec.bodies:
        body.damping = body.friction = 0.0
    r = robodyn.Robot(spec)
    Q, V, A = bf.states(r, rows, np.random.default_rng(0))
    robodyn.set_num_threads(threads)
    T = r.inverse_dynamics(Q, V, A)
    if mode == "pin":
        import pinocchio as pin

        model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        data = model.createData()
        qmap, vmap, _ = bf.maps(r, model, pin)
        PQ, PV, PA, PT = (np.ascontiguousarray(X[:, m]) for X, m in
                          ((Q, qmap), (V, vmap), (A, vmap), (T, vmap)))
        f = {"id": pin.rnea, "fd": pin.aba, "M": pin.crba}[quantity]
        states = {"id": list(zip(PQ, PV, PA)), "fd": list(zip(PQ, PV, PT)),
                  "M": [(q,) for q in PQ]}[quantity]
        for s in states:
            f(model, data, *s)
        for _ in range(reps):
            for s in states:
                f(model, data, *s)
        return
    fn = getattr(r, METHODS[quantity])
    if mode == "single":
        states = {"id": list(zip(Q, V, A)), "fd": list(zip(Q, V, T)),
                  "M": [(q,) for q in Q]}[quantity]
        for s in states:
            fn(*s)
        for _ in range(reps):
            for s in states:
                fn(*s)
        return
    args = {"id": (Q, V, A), "fd": (Q, V, T), "M": (Q,)}[quantity]
    fn(*args)  # warm
    for _ in range(reps):
        fn(*args)


def total(robot, quantity, mode, rows, reps, threads):
    """callgrind's instruction total of one child run."""
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        sys.executable, __file__, robot, quantity, "--mode", mode,
                        "--rows", str(rows), "--reps", str(reps), "--threads", str(threads),
                        "--child"], env=env, capture_output=True, text=True)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"callgrind {robot} {quantity} {mode}: {r.stderr[-1500:]}")
    return int(m.group(1))


def per_row(robot, quantity, mode, rows, reps, threads=1):
    """Instructions per row (batch) or per call (single, pin)."""
    t0 = total(robot, quantity, mode, rows, 0, threads)
    t1 = total(robot, quantity, mode, rows, reps, threads)
    return (t1 - t0) / (reps * rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("robot", help="a robot of bench/bench_floating.py (solo12, talos, ...)")
    p.add_argument("quantity", choices=sorted(METHODS))
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--mode", choices=MODES, nargs="+", default=list(MODES))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a.robot, a.quantity, a.mode[0], a.rows, a.reps, a.threads)
        return
    print(f"{a.robot} {a.quantity}: instructions per state (callgrind; batch: {a.rows} rows, "
          f"{a.threads} thread(s))")
    for mode in a.mode:
        rows = a.rows if mode == "batch" else 64
        print(f"  {mode:8s} {per_row(a.robot, a.quantity, mode, rows, a.reps, a.threads):10.1f}",
              flush=True)


if __name__ == "__main__":
    main()
