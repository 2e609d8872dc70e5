"""Free-floating robots: robodyn against Pinocchio's free-flyer model, Python single calls.

For each robot of example-robot-data (Solo12, Talos by default), robodyn loads the URDF with
``floating_base=True`` and Pinocchio with ``pin.JointModelFreeFlyer()``; both then run
inverse dynamics (``inverse_dynamics`` / ``pin.rnea``), the mass matrix (``mass_matrix`` /
``pin.crba``), forward dynamics (``forward_dynamics``, articulated-body / ``pin.aba``), the
derivatives (``inverse_dynamics_derivatives`` / ``pin.computeRNEADerivatives``, "did";
``forward_dynamics_derivatives`` / ``pin.computeABADerivatives``, "dfd") and the regressor
(``regressor`` / ``pin.computeJointTorqueRegressor``) on
the same pool of random states, interleaved in this process (robodyn.bench.measure: rounds
rotate the order, this thread's CPU time, the empty loop subtracted). The results are first
checked to agree (1e-8 relative, through tests/reference's coordinate helper logic written out
here). Reported: the median time per call and the median of the per-round ratios
robodyn / Pinocchio (lower is faster), also with ``out=``, for one batch call per state and,
with ``--specialized``, for the robot's generated kernels (``Robot.specialized()``, compiled
on first use).

The batch figure ("robodyn batch") is one call on N = 1984 states (the 64 distinct states
cycled through 31 times, so no row repeats the one before and finds its configuration in
robodyn's per-q cache) divided by N, against one ``pin.rnea`` (``pin.aba``) call from Python.
It runs on one thread, robodyn's default (``robodyn.get_num_threads()`` is 1 unless
``robodyn.set_num_threads`` is called; set to 1 here while timing), timed by this thread's CPU
clock like the single calls.

    python bench/bench_floating.py [solo12 talos ...] [--rounds 31] [--json out.json]
    python bench/bench_floating.py solo12 talos --only did dfd regressor
    python bench/bench_floating.py lynch_satellite solo12 --specialized --callgrind

The bundled seed systems (``lynch_satellite``, ``jpl_spacecraft``, ``dasc_cat``) are read
from their bundled URDFs (Pinocchio with the robot's gravity). ``--callgrind`` counts instead
the instructions of one Python call of each single-call implementation (valgrind, R calls
minus 0 calls, divided by R, the empty loop subtracted): immune to the machine's load.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np

import robodyn
import robodyn.io.urdf
from peers import Impl, measure

ROBOTS = {
    "solo12": "solo_description/robots/solo12.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "anymal": "anymal_b_simple_description/robots/anymal.urdf",
    "go1": "go1_description/urdf/go1.urdf",
}


def robots_dir():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
    from _load import example_robot_data_dir

    return example_robot_data_dir()


def maps(robot, model, pin):
    """robodyn -> Pinocchio q and velocity index maps (free-flyer v: [linear; angular]), and
    the continuous joints [(Pinocchio idx_q, robodyn q index)], which Pinocchio writes as
    (cos q, sin q)."""
    qmap, vmap = np.zeros(model.nq, dtype=int), np.zeros(model.nv, dtype=int)
    continuous = []
    iq = iv = 0
    for k, name in enumerate(robot.joint_names):
        j = model.joints[model.getJointId(name)]
        if k == 0:
            qmap[j.idx_q:j.idx_q + 7] = np.arange(7)
            vmap[j.idx_v:j.idx_v + 6] = [3, 4, 5, 0, 1, 2]
            iq, iv = 7, 6
            continue
        if j.nq == 2:
            continuous.append((j.idx_q, iq))
            qmap[j.idx_q:j.idx_q + 2] = iq
        elif j.nq != 1:
            raise SystemExit(f"{name}: Pinocchio joint with nq = {j.nq} not mapped")
        else:
            qmap[j.idx_q] = iq
        vmap[j.idx_v] = iv
        iq, iv = iq + 1, iv + 1
    return qmap, vmap, continuous


def pin_q(Q, qmap, continuous):
    """Pinocchio's configurations of robodyn's Q (N, nq)."""
    P = np.ascontiguousarray(Q[:, qmap])
    for k, i in continuous:
        P[:, k], P[:, k + 1] = np.cos(Q[:, i]), np.sin(Q[:, i])
    return P


def states(robot, count, rng):
    lo, hi = robot.position_limits
    Q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi), (count, robot.nq))
    Q[:, :3] = rng.normal(0, 1, (count, 3))
    quat = rng.standard_normal((count, 4))
    Q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return Q, rng.standard_normal((count, robot.nv)), rng.standard_normal((count, robot.nv))


SEEDS = ("lynch_satellite", "jpl_spacecraft", "dasc_cat")


def build(name, pool=64, batch=2000, seed=0, specialized=False):
    """(robot, {quantity: [Impl]}) of robot ``name``, checked against Pinocchio first."""
    import pinocchio as pin

    path = robodyn.robots.urdf_path(name) if name in SEEDS else robots_dir() / ROBOTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = robodyn.urdf.parse_urdf(str(path), floating_base=True, check_inertia=False,
                                       mimic="independent")
    # Pinocchio's rnea / aba have no joint friction: both sides without it
    for body in spec.bodies:
        body.damping = body.friction = 0.0
    robot = robodyn.Robot(spec)
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    model.gravity.linear = np.asarray(robot.gravity, dtype=float)
    data = model.createData()
    qmap, vmap, continuous = maps(robot, model, pin)
    rng = np.random.default_rng(seed)
    Q, V, A = states(robot, pool, rng)
    TAU = robot.inverse_dynamics(Q, V, A)
    PQ = pin_q(Q, qmap, continuous)
    PV, PA, PT = (np.ascontiguousarray(X[:, vmap]) for X in (V, A, TAU))
    # agreement first
    for k in range(4):
        tau = pin.rnea(model, data, PQ[k], PV[k], PA[k])
        M = pin.crba(model, data, PQ[k])
        M = np.triu(M) + np.triu(M, 1).T
        qdd = pin.aba(model, data, PQ[k], PV[k], PT[k])
        for label, ours, theirs in (("id", TAU[k][vmap], tau),
                                    ("M", robot.mass_matrix(Q[k])[np.ix_(vmap, vmap)], M),
                                    ("fd", robot.forward_dynamics(Q[k], V[k], TAU[k])[vmap], qdd)):
            scale = max(1.0, float(np.abs(theirs).max()))
            err = float(np.abs(ours - theirs).max()) / scale
            if err > 1e-8:
                raise SystemExit(f"{name} {label}: robodyn and Pinocchio differ by {err:.2e}")
    nv = robot.nv
    out_v, out_M = np.empty(nv), np.empty((nv, nv))
    rows3 = lambda *X: list(zip(*X))  # noqa: E731
    # the pool cycled through (np.tile): consecutive rows differ (np.repeat let 30 of every 31
    # rows hit the per-q cache)
    QB, VB, AB, TB = (np.tile(X, (batch // pool, 1)) for X in (Q, V, A, TAU))
    nb = len(QB)
    impls = {
        "id": [Impl("pinocchio", "pinocchio", "id", pin.rnea,
                    [(model, data, *r) for r in rows3(PQ, PV, PA)], pool, None),
               Impl("robodyn", "robodyn", "id", robot.inverse_dynamics, rows3(Q, V, A), pool,
                    None),
               Impl("robodyn out=", "robodyn", "id",
                    lambda q, v, a: robot.inverse_dynamics(q, v, a, out=out_v),
                    rows3(Q, V, A), pool, None),
               Impl("robodyn batch", "robodyn", "id", robot.inverse_dynamics, [(QB, VB, AB)],
                    nb, None, batch=True)],
        "M": [Impl("pinocchio", "pinocchio", "M", pin.crba,
                   [(model, data, q) for q in PQ], pool, None),
              Impl("robodyn", "robodyn", "M", robot.mass_matrix, [(q,) for q in Q], pool, None),
              Impl("robodyn out=", "robodyn", "M", lambda q: robot.mass_matrix(q, out=out_M),
                   [(q,) for q in Q], pool, None)],
        "fd": [Impl("pinocchio", "pinocchio", "fd", pin.aba,
                    [(model, data, *r) for r in rows3(PQ, PV, PT)], pool, None),
               Impl("robodyn", "robodyn", "fd", robot.forward_dynamics, rows3(Q, V, TAU), pool,
                    None),
               Impl("robodyn out=", "robodyn", "fd",
                    lambda q, v, t: robot.forward_dynamics(q, v, t, out=out_v),
                    rows3(Q, V, TAU), pool, None),
               Impl("robodyn crba", "robodyn", "fd",
                    lambda q, v, t: robot.forward_dynamics(q, v, t, method="crba"),
                    rows3(Q, V, TAU), pool, None),
               Impl("robodyn batch", "robodyn", "fd", robot.forward_dynamics, [(QB, VB, TB)],
                    nb, None, batch=True)],
    }
    # the derivatives (tangent dq) and the regressor: checked to agree, then timed
    ix = np.ix_(vmap, vmap)
    cols = np.concatenate([np.arange(10) + 10 * (model.getJointId(j) - 1)
                           for j in robot.joint_names])
    for k in range(2):
        pdq, pdv, _ = pin.computeRNEADerivatives(model, data, PQ[k], PV[k], PA[k])
        dq, dv = robot.inverse_dynamics_derivatives(Q[k], V[k], A[k])
        pin.computeABADerivatives(model, data, PQ[k], PV[k], PT[k])
        fq, fv, _ = robot.forward_dynamics_derivatives(Q[k], V[k], TAU[k])
        Yp = pin.computeJointTorqueRegressor(model, data, PQ[k], PV[k], PA[k])
        Y = robot.regressor(Q[k], V[k], A[k])
        for label, ours, theirs in (("did dq", dq[ix], pdq), ("did dv", dv[ix], pdv),
                                    ("dfd dq", fq[ix], data.ddq_dq),
                                    ("dfd dv", fv[ix], data.ddq_dv),
                                    ("regressor", Y[vmap], Yp[:, cols])):
            scale = max(1.0, float(np.abs(theirs).max()))
            err = float(np.abs(ours - theirs).max()) / scale
            if err > 1e-8:
                raise SystemExit(f"{name} {label}: robodyn and Pinocchio differ by {err:.2e}")
    pair = (np.empty((nv, nv)), np.empty((nv, nv)))
    triple = (np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv)))
    out_Y = np.empty((nv, 10 * len(robot.spec.bodies)))
    impls.update({
        "did": [Impl("pinocchio", "pinocchio", "did", pin.computeRNEADerivatives,
                     [(model, data, *r) for r in rows3(PQ, PV, PA)], pool, None),
                Impl("robodyn", "robodyn", "did", robot.inverse_dynamics_derivatives,
                     rows3(Q, V, A), pool, None),
                Impl("robodyn out=", "robodyn", "did",
                     lambda q, v, a: robot.inverse_dynamics_derivatives(q, v, a, out=pair),
                     rows3(Q, V, A), pool, None)],
        "dfd": [Impl("pinocchio", "pinocchio", "dfd", pin.computeABADerivatives,
                     [(model, data, *r) for r in rows3(PQ, PV, PT)], pool, None),
                Impl("robodyn", "robodyn", "dfd", robot.forward_dynamics_derivatives,
                     rows3(Q, V, TAU), pool, None),
                Impl("robodyn out=", "robodyn", "dfd",
                     lambda q, v, t: robot.forward_dynamics_derivatives(q, v, t, out=triple),
                     rows3(Q, V, TAU), pool, None)],
        "regressor": [Impl("pinocchio", "pinocchio", "regressor",
                           pin.computeJointTorqueRegressor,
                           [(model, data, *r) for r in rows3(PQ, PV, PA)], pool, None),
                      Impl("robodyn", "robodyn", "regressor", robot.regressor,
                           rows3(Q, V, A), pool, None),
                      Impl("robodyn out=", "robodyn", "regressor",
                           lambda q, v, a: robot.regressor(q, v, a, out=out_Y),
                           rows3(Q, V, A), pool, None)],
    })
    if specialized:
        fast = robot.specialized()
        if not fast.is_specialized():
            raise SystemExit(f"{name}: no generated kernels (no C++ compiler?)")
        impls["id"].append(Impl("specialised", "robodyn", "id", fast.inverse_dynamics,
                                rows3(Q, V, A), pool, None))
        impls["id"].append(Impl("specialised out=", "robodyn", "id",
                                lambda q, v, a: fast.inverse_dynamics(q, v, a, out=out_v),
                                rows3(Q, V, A), pool, None))
        impls["M"].append(Impl("specialised out=", "robodyn", "M",
                               lambda q: fast.mass_matrix(q, out=out_M), [(q,) for q in Q],
                               pool, None))
        impls["fd"].append(Impl("specialised", "robodyn", "fd", fast.forward_dynamics,
                                rows3(Q, V, TAU), pool, None))
        impls["fd"].append(Impl("specialised batch", "robodyn", "fd", fast.forward_dynamics,
                                [(QB, VB, TB)], nb, None, batch=True))
    return robot, impls


def bench_robot(name, rounds, pool=64, batch=2000, seed=0, specialized=False,
                quantities=None):
    robot, impls = build(name, pool, batch, seed, specialized)
    nv = robot.nv
    rows = next(im.count for im in impls["id"] if im.label == "robodyn batch")
    result = {"robot": name, "nq": robot.nq, "nv": nv, "batch_rows": rows, "batch_threads": 1, "clock": "thread cpu", "quantities": {}}
    previous = robodyn.get_num_threads()
    robodyn.set_num_threads(1)
    try:
        for quantity, ims in impls.items():
            if quantities and quantity not in quantities:
                continue
            samples = measure(ims, rounds=rounds)
            ref = samples["pinocchio"]
            result["quantities"][quantity] = {
                lab: {"median_us": float(np.median(s)) * 1e6,
                      "ratio": float(np.median(s / ref))} for lab, s in samples.items()}
    finally:
        robodyn.set_num_threads(previous)
    return result


# the implementations counted by --callgrind (each costs two valgrind runs)
CALLGRIND_LABELS = ("pinocchio", "robodyn", "specialised", "specialised out=")
_DETERMINISTIC = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _run_one(name, quantity, label, reps, specialized):
    """The body of one valgrind run: ``reps`` calls of one implementation (label "loop": the
    loop alone)."""
    robot, impls = build(name, specialized=specialized)
    im = next(im for im in impls[quantity] if im.label == label or label == "loop")
    rows, fn = im.args, im.fn
    for row in rows:  # warm: the runs with reps = R and 0 differ by the calls alone
        fn(*row)
    if label == "loop":
        fn = lambda *a: None  # noqa: E731
    k = len(rows)
    gc.disable()
    for i in range(reps):
        fn(*rows[i % k])


def instructions(name, quantity, labels, specialized, reps=2000):
    """{label: instructions per Python call} (valgrind --tool=callgrind; None if it failed)."""
    totals = {}
    for label in ["loop", *labels]:
        counts = []
        for r in (0, reps):
            cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                   sys.executable, __file__, name, "--one", quantity, label, "--reps", str(r)]
            if specialized:
                cmd.append("--specialized")
            p = subprocess.run(cmd, capture_output=True, text=True,
                               env={**os.environ, **_DETERMINISTIC})
            m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
            counts.append(int(m.group(1)) if p.returncode == 0 and m else None)
        totals[label] = None if None in counts else (counts[1] - counts[0]) / reps
    loop = totals.pop("loop") or 0.0
    return {k: (v - loop if v is not None else None) for k, v in totals.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("robots", nargs="*", default=["solo12", "talos"],
                   choices=sorted(ROBOTS) + list(SEEDS))
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--json", type=pathlib.Path)
    p.add_argument("--specialized", action="store_true",
                   help="also the generated kernels (Robot.specialized())")
    p.add_argument("--callgrind", action="store_true",
                   help="instructions per Python call (valgrind) instead of times")
    p.add_argument("--one", nargs=2, metavar=("QUANTITY", "LABEL"), help=argparse.SUPPRESS)
    p.add_argument("--reps", type=int, default=2000, help=argparse.SUPPRESS)
    p.add_argument("--only", nargs="+", choices=["id", "M", "fd", "did", "dfd", "regressor"],
                   help="measure only these quantities (single calls)")
    args = p.parse_args(argv)
    if args.one:
        _run_one(args.robots[0], *args.one, args.reps, args.specialized)
        return
    if args.callgrind:
        results = {}
        for name in args.robots:
            robot, impls = build(name, specialized=args.specialized)
            results[name] = {}
            print(f"{name} (nq {robot.nq}, nv {robot.nv}): instructions per Python call, "
                  "ratio to Pinocchio")
            for quantity, ims in impls.items():
                labels = [im.label for im in ims if im.label in CALLGRIND_LABELS]
                counts = instructions(name, quantity, labels, args.specialized)
                results[name][quantity] = counts
                ref = counts.get("pinocchio")
                print(f"  {quantity}: " + ", ".join(
                    f"{lab} {c:.0f}" + (f" ({c / ref:.2f}x)" if ref and c else "")
                    for lab, c in counts.items() if c is not None), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + "\n")
        return
    results = []
    for name in args.robots:
        r = bench_robot(name, args.rounds, specialized=args.specialized, quantities=args.only)
        results.append(r)
        print(f"{name} (nq {r['nq']}, nv {r['nv']}): median time per call (batch: per state of "
              f"one call on {r['batch_rows']} states, 1 thread), this thread's CPU time; ratio "
              f"to Pinocchio")
        for quantity, rows in r["quantities"].items():
            cells = ", ".join(f"{lab} {v['median_us']:.2f} us ({v['ratio']:.2f}x)"
                              for lab, v in rows.items())
            print(f"  {quantity}: {cells}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
