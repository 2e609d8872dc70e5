"""Constrained forward dynamics: robodyn's ConstrainedRobot.forward_dynamics against
Pinocchio's constraintDynamics (RigidConstraintModel), Python single calls.

Cases: the spatial four-bar of tests/reference/fourbars.py (a point loop), Talos
(talos_reduced, floating) with both feet welded to the ground (two 6-D constraints), Solo12
(floating) on four point feet (four 3-D constraints). Both libraries run on the same pool of 64
distinct random states (each call a new q, v, tau: no configuration cache hit), interleaved in
this process (peers.measure: rounds rotate the order, this thread's CPU time, the empty
loop subtracted); first the results are checked to agree (1e-8 relative) at a consistent state
(loops closed, v in the null space of J). Pinocchio's settings: ProximalSettings(1e-12, 0, 1)
(one plain KKT solve, as robodyn's default mu = 0). Reported: median time per call and the
median of the per-round ratios robodyn / Pinocchio (lower is faster).

    python bench/bench_constraints.py [fourbar talos solo12] [--rounds 31] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

import robodyn
from peers import Impl, measure

HERE = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "tests"))

ROBOTS = {
    "talos": ("talos_data/robots/talos_reduced.urdf", ("left_sole_link", "right_sole_link"),
              "weld"),
    "solo12": ("solo_description/robots/solo12.urdf", ("FL_FOOT", "FR_FOOT", "HL_FOOT",
                                                       "HR_FOOT"), "point"),
}


def se3(pin, T):
    return pin.SE3(np.array(T[:3, :3]), np.array(T[:3, 3]))


def fourbar_case(pin, rng):
    from reference import fourbars

    urdf = fourbars.SPATIAL
    robot = robodyn.load_urdf(urdf)
    T1, T2 = np.eye(4), np.eye(4)
    T1[:3, 3], T2[:3, 3] = (0.6, 0, 0), (0, 0, 0.3)
    system = robodyn.ConstrainedRobot(robot, [
        robodyn.LoopConstraint("coupler", "rocker", T1, T2, kind="point")])
    q = rng.uniform(-0.5, 0.5, robot.nv)
    for _ in range(40):   # close the loop (Gauss-Newton, crank held)
        dq = np.zeros(robot.nv)
        dq[1:] = -np.linalg.lstsq(system.jacobian(q)[:, 1:], system.residual(q), rcond=None)[0]
        q = q + dq
    model = pin.buildModelFromXML(urdf)
    cms = [pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model,
                                    model.getJointId("u2"), se3(pin, T1),
                                    model.getJointId("rocker_joint"), se3(pin, T2),
                                    pin.ReferenceFrame.LOCAL)]
    ident = (lambda x: x, lambda x: x, lambda x: x)
    return robot, system, model, cms, q, ident


def legged_case(pin, name, rng):
    from _load import example_robot_data_dir
    from reference.pinocchio_contacts import feet_case

    relative, feet, kind = ROBOTS[name]
    robot, system, model, coords, cms, q = feet_case(
        pin, str(example_robot_data_dir() / relative), feet, kind, rng)
    return robot, system, model, cms, q, (coords.q, coords.v, coords.v_back)


def run_case(pin, name, rounds, rng):
    robot, system, model, cms, q0, (to_q, to_v, back_v) = (
        fourbar_case(pin, rng) if name == "fourbar" else legged_case(pin, name, rng))
    # damping and friction are in robodyn's h, not in Pinocchio's: compared without them
    spec = robot.spec
    for b in spec.bodies:
        b.damping = b.friction = 0.0
    robot = type(robot)(spec)
    system = robodyn.ConstrainedRobot(robot, system.constraints)
    data = model.createData()
    cms = pin.StdVec_RigidConstraintModel(cms)
    cds = pin.StdVec_RigidConstraintData([cm.createData() for cm in cms])
    pin.initConstraintDynamics(model, data, cms, cds)
    settings = pin.ProximalSettings(1e-12, 0.0, 1)
    # agreement at a consistent state
    J = system.jacobian(q0)
    v0 = rng.standard_normal(robot.nv)
    v0 -= np.linalg.pinv(J) @ (J @ v0)
    tau0 = rng.standard_normal(robot.nv)
    qdd, lam = system.forward_dynamics(q0, v0, tau0)
    ddq = back_v(np.array(pin.constraintDynamics(model, data, to_q(q0), to_v(v0), to_v(tau0),
                                                 cms, cds, settings)))
    err = np.abs(qdd - ddq).max() / max(1.0, np.abs(ddq).max())
    if err > 1e-8:
        raise SystemExit(f"{name}: robodyn and Pinocchio disagree (qdd, {err:.2e})")
    # the pool: distinct states near q0
    pool = []
    for _ in range(64):
        q = robot.integrate(q0, 0.05 * rng.standard_normal(robot.nv))
        pool.append((q, rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)))
    fd = system.forward_dynamics
    r_args = [(q, v, t) for q, v, t in pool]
    p_args = [(model, data, to_q(q), to_v(v), to_v(t), cms, cds, settings) for q, v, t in pool]
    impls = [Impl("robodyn", "robodyn", "cfd", fd, r_args, len(r_args), None),
             Impl("pinocchio", "pinocchio", "cfd", pin.constraintDynamics, p_args, len(p_args),
                  None)]
    samples = measure(impls, rounds=rounds)
    ratio = np.median(samples["robodyn"] / samples["pinocchio"])
    return {"case": name, "nv": robot.nv, "rows": system.rows,
            "robodyn_us": float(np.median(samples["robodyn"]) * 1e6),
            "pinocchio_us": float(np.median(samples["pinocchio"]) * 1e6),
            "ratio": float(ratio), "agreement": float(err)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", default=["fourbar", "talos", "solo12"])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import pinocchio as pin

    rng = np.random.default_rng(7)
    rows = []
    print(f"{'case':8s} {'nv':>3s} {'rows':>4s} {'robodyn us':>10s} {'pinocchio us':>12s} "
          f"{'ratio':>6s}")
    for name in args.cases:
        r = run_case(pin, name, args.rounds, rng)
        rows.append(r)
        print(f"{name:8s} {r['nv']:3d} {r['rows']:4d} {r['robodyn_us']:10.2f} "
              f"{r['pinocchio_us']:12.2f} {r['ratio']:6.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
