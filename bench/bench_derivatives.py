"""Derivatives of the dynamics and the regressor against Pinocchio, from Python.

    python bench/bench_derivatives.py [--rounds 200] [--calls 50]

Robots: UR5 and Panda (example-robot-data; both libraries read the same URDF). Cases, each
robodyn's call against Pinocchio's, interleaved in the same process (a round times `calls`
calls of one, then of the other, with this thread's CPU time), medians over rounds, as
ratios (lower is faster):

- inverse_dynamics_derivatives  vs pin.computeRNEADerivatives
- forward_dynamics_derivatives  vs pin.computeABADerivatives
- regressor                     vs pin.computeJointTorqueRegressor

Also the operation counts of rnea_derivatives, forward_dynamics_derivatives and regressor on
random revolute DH chains n = 2..30 with their least-squares quadratic / cubic fits.
Writes bench/results/DERIVATIVES.md.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

import robodyn

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def urdf(name):
    from _load import example_robot_data_dir

    rel = {"ur5": "ur_description/urdf/ur5_robot.urdf",
           "panda": "panda_description/urdf/panda.urdf"}[name]
    return example_robot_data_dir() / rel


def interleaved(a, b, rounds, calls):
    ta, tb = [], []
    for _ in range(rounds):
        t0 = time.thread_time_ns()
        for _ in range(calls):
            a()
        t1 = time.thread_time_ns()
        for _ in range(calls):
            b()
        t2 = time.thread_time_ns()
        ta.append((t1 - t0) / calls)
        tb.append((t2 - t1) / calls)
    return float(np.median(ta)) / 1e3, float(np.median(tb)) / 1e3


def timings(rounds, calls):
    import pinocchio as pin

    rows = []
    for name in ("ur5", "panda"):
        path = urdf(name)
        model = pin.buildModelFromUrdf(str(path))
        data = model.createData()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            robot = robodyn.load_urdf(str(path), mimic="independent")
        n = robot.n
        assert model.nq == model.nv == n
        order = [model.joints[model.getJointId(j)].idx_v for j in robot.joint_names]
        assert order == list(range(n))
        rng = np.random.default_rng(0)
        q, qd, x = rng.uniform(-1, 1, (3, n))
        outs2 = (np.empty((n, n)), np.empty((n, n)))
        outs3 = (np.empty((n, n)), np.empty((n, n)), np.empty((n, n)))
        Y = np.empty((n, 10 * n))
        cases = [
            ("inverse_dynamics_derivatives", "computeRNEADerivatives",
             lambda: robot.inverse_dynamics_derivatives(q, qd, x),
             lambda: robot.inverse_dynamics_derivatives(q, qd, x, out=outs2),
             lambda: pin.computeRNEADerivatives(model, data, q, qd, x)),
            ("forward_dynamics_derivatives", "computeABADerivatives",
             lambda: robot.forward_dynamics_derivatives(q, qd, x),
             lambda: robot.forward_dynamics_derivatives(q, qd, x, out=outs3),
             lambda: pin.computeABADerivatives(model, data, q, qd, x)),
            ("regressor", "computeJointTorqueRegressor",
             lambda: robot.regressor(q, qd, x),
             lambda: robot.regressor(q, qd, x, out=Y),
             lambda: pin.computeJointTorqueRegressor(model, data, q, qd, x)),
        ]
        for label, peer, mine, mine_out, theirs in cases:
            a, b = interleaved(mine, theirs, rounds, calls)
            c, d = interleaved(mine_out, theirs, rounds, calls)
            rows.append((name, n, label, peer, a, b, a / b, c / d))
            print(f"{name:6s} n={n} {label:30s} robodyn {a:6.2f} us  pinocchio {b:6.2f} us  "
                  f"ratio {a / b:.2f} (out= {c / d:.2f})", flush=True)
    return rows, pin.__version__


def op_count_fits():
    from reference import random_models as R

    ns = np.arange(2, 31)
    fits = {}
    for alg, deg in (("rnea_derivatives", 2), ("forward_dynamics_derivatives", 3),
                     ("regressor", 2)):
        mul = np.array([robodyn.from_dh(R.random_dh_chain(int(n), np.random.default_rng(int(n))))
                        .op_counts(alg)["mul"] for n in ns], dtype=float)
        c = np.polyfit(ns, mul, deg)
        pred = np.polyval(c, ns)
        r2 = 1 - np.sum((mul - pred) ** 2) / np.sum((mul - mul.mean()) ** 2)
        fits[alg] = (c, r2, dict(zip(ns.tolist(), mul.astype(int).tolist())))
        terms = " + ".join(f"{v:.2f} n^{deg - k}" if deg - k > 0 else f"{v:.1f}"
                           for k, v in enumerate(c))
        print(f"{alg}: mul = {terms} (R^2 {r2:.6f}); n=6: {int(fits[alg][2][6])}", flush=True)
    return fits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    rows, version = timings(args.rounds, args.calls)
    fits = op_count_fits()
    if args.no_write:
        return
    lines = [f"# Derivatives and regressor against Pinocchio {version} (Python, same process)",
             "", "Medians of interleaved rounds of this thread's CPU time; ratio = robodyn / "
             "Pinocchio (lower is faster).", "",
             "| robot | n | robodyn | Pinocchio | robodyn us | Pinocchio us | ratio | ratio (out=) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, n, label, peer, a, b, r, ro in rows:
        lines.append(f"| {name} | {n} | {label} | {peer} | {a:.2f} | {b:.2f} | {r:.2f} | {ro:.2f} |")
    lines += ["", "Multiplications per call on random revolute DH chains n = 2..30 "
              "(counting scalar), least-squares polynomial fits:", ""]
    for alg, (c, r2, counts) in fits.items():
        deg = len(c) - 1
        terms = " + ".join(f"{v:.2f} n^{deg - k}" if deg - k > 0 else f"{v:.1f}"
                           for k, v in enumerate(c))
        lines.append(f"- {alg}: {terms} (R^2 {r2:.6f}); n = 6: {counts[6]}, n = 30: {counts[30]}")
    out = ROOT / "bench" / "results" / "DERIVATIVES.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
