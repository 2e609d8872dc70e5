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
robodyn / Pinocchio (lower is faster), also with ``out=`` and for one batch call per state.

    python bench/bench_floating.py [solo12 talos ...] [--rounds 31] [--only did dfd ...]
                                   [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import warnings

import numpy as np

import robodyn
import robodyn.urdf
from robodyn.bench import Impl, measure

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
    """robodyn -> Pinocchio q and velocity index maps (free-flyer v: [linear; angular])."""
    qmap, vmap = np.zeros(model.nq, dtype=int), np.zeros(model.nv, dtype=int)
    iq = iv = 0
    for k, name in enumerate(robot.joint_names):
        j = model.joints[model.getJointId(name)]
        if k == 0:
            qmap[j.idx_q:j.idx_q + 7] = np.arange(7)
            vmap[j.idx_v:j.idx_v + 6] = [3, 4, 5, 0, 1, 2]
            iq, iv = 7, 6
            continue
        if j.nq != 1:
            raise SystemExit(f"{name}: Pinocchio joint with nq = {j.nq} (continuous) not mapped")
        qmap[j.idx_q], vmap[j.idx_v] = iq, iv
        iq, iv = iq + 1, iv + 1
    return qmap, vmap


def states(robot, count, rng):
    lo, hi = robot.position_limits
    Q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi), (count, robot.nq))
    Q[:, :3] = rng.normal(0, 1, (count, 3))
    quat = rng.standard_normal((count, 4))
    Q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return Q, rng.standard_normal((count, robot.nv)), rng.standard_normal((count, robot.nv))


def bench_robot(name, rounds, pool=64, batch=2000, seed=0, quantities=None):
    import pinocchio as pin

    path = robots_dir() / ROBOTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = robodyn.urdf.parse_urdf(str(path), floating_base=True, check_inertia=False,
                                       mimic="independent")
    # Pinocchio's rnea / aba have no joint friction: both sides without it
    for body in spec.bodies:
        body.damping = body.friction = 0.0
    robot = robodyn.Robot(spec)
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    data = model.createData()
    qmap, vmap = maps(robot, model, pin)
    rng = np.random.default_rng(seed)
    Q, V, A = states(robot, pool, rng)
    TAU = robot.inverse_dynamics(Q, V, A)
    PQ, PV, PA, PT = (np.ascontiguousarray(X[:, m]) for X, m in
                      ((Q, qmap), (V, vmap), (A, vmap), (TAU, vmap)))
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
    QB, VB, AB = (np.repeat(X, batch // pool, axis=0) for X in (Q, V, A))
    TB = np.repeat(TAU, batch // pool, axis=0)
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
    if quantities:
        impls = {k: v for k, v in impls.items() if k in quantities}
    result = {"robot": name, "nq": robot.nq, "nv": nv, "quantities": {}}
    for quantity, ims in impls.items():
        samples = measure(ims, rounds=rounds)
        ref = samples["pinocchio"]
        result["quantities"][quantity] = {
            lab: {"median_us": float(np.median(s)) * 1e6,
                  "ratio": float(np.median(s / ref))} for lab, s in samples.items()}
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("robots", nargs="*", default=["solo12", "talos"], choices=sorted(ROBOTS))
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--json", type=pathlib.Path)
    p.add_argument("--only", nargs="+", choices=["id", "M", "fd", "did", "dfd", "regressor"],
                   help="measure only these quantities")
    args = p.parse_args(argv)
    results = []
    for name in args.robots:
        r = bench_robot(name, args.rounds, quantities=args.only)
        results.append(r)
        print(f"{name} (nq {r['nq']}, nv {r['nv']}): median time per call, ratio to Pinocchio")
        for quantity, rows in r["quantities"].items():
            cells = ", ".join(f"{lab} {v['median_us']:.2f} us ({v['ratio']:.2f}x)"
                              for lab, v in rows.items())
            print(f"  {quantity}: {cells}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
