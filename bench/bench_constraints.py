"""Constrained forward dynamics: robodyn's ConstrainedRobot.forward_dynamics against
Pinocchio's constraintDynamics (RigidConstraintModel), Python single calls; then robodyn's
constrained inverse dynamics and assembly per call (no peer has them).

Cases: the spatial four-bar of tests/reference/fourbars.py (a point loop), Talos
(talos_reduced, floating) with both feet welded to the ground (two 6-D constraints), Solo12
(floating) on four point feet (four 3-D constraints). Both libraries run on the same pool of 64
distinct random states (each call a new q, v, tau: no configuration cache hit), interleaved in
this process (peers.measure: rounds rotate the order, this thread's CPU time, the empty
loop subtracted); first the results are checked to agree (1e-8 relative) at a consistent state
(loops closed, v in the null space of J). Pinocchio's settings: ProximalSettings(1e-12, 0, 1)
(one plain KKT solve, as robodyn's default mu = 0). Reported: median time per call and the
median of the per-round ratios robodyn / Pinocchio (lower is faster).

Inverse dynamics (ConstrainedRobot.inverse_dynamics) runs on 8 consistent states (q assembled,
v projected, qdd from forward_dynamics); assembly (ConstrainedRobot.assemble, nothing held but
the four-bar's crank) from 8 guesses 0.05 rad (per coordinate, random) off a closed q.

``--instructions`` counts instructions per forward-dynamics call instead, under valgrind
(independent of the machine's load): each case is run three times under callgrind, the calls
left out, robodyn's R calls, Pinocchio's R calls; the differences over R.

    python bench/bench_constraints.py [fourbar talos solo12] [--rounds 31] [--json out.json]
    python bench/bench_constraints.py [cases] --instructions [--reps 2000]
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
    return robot, system, model, cms, q, ident, (robot.joint_names[0],)


def legged_case(pin, name, rng):
    from _load import example_robot_data_dir
    from reference.pinocchio_contacts import feet_case

    relative, feet, kind = ROBOTS[name]
    robot, system, model, coords, cms, q = feet_case(
        pin, str(example_robot_data_dir() / relative), feet, kind, rng)
    return robot, system, model, cms, q, (coords.q, coords.v, coords.v_back), ()


class Case:
    """Both libraries' systems, the agreement at a consistent state, and the pools."""

    def __init__(self, pin, name, rng):
        robot, system, model, cms, q0, (to_q, to_v, back_v), hold = (
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
        ddq = back_v(np.array(pin.constraintDynamics(model, data, to_q(q0), to_v(v0),
                                                     to_v(tau0), cms, cds, settings)))
        self.agreement = float(np.abs(qdd - ddq).max() / max(1.0, np.abs(ddq).max()))
        if self.agreement > 1e-8:
            raise SystemExit(f"{name}: robodyn and Pinocchio disagree (qdd, "
                             f"{self.agreement:.2e})")
        # the pool: distinct states near q0
        pool = []
        for _ in range(64):
            q = robot.integrate(q0, 0.05 * rng.standard_normal(robot.nv))
            pool.append((q, rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)))
        self.name, self.robot, self.system, self.q0, self.hold = name, robot, system, q0, hold
        self.rng = rng
        self.r_args = [(q, v, t) for q, v, t in pool]
        self.p_args = [(model, data, to_q(q), to_v(v), to_v(t), cms, cds, settings)
                       for q, v, t in pool]
        self.pin_fd = pin.constraintDynamics

    def consistent_states(self, count=8):
        """(guesses, (q, v, qdd) closed and consistent) near q0."""
        robot, system, rng = self.robot, self.system, self.rng
        guesses, states = [], []
        for _ in range(count):
            guess = robot.integrate(self.q0, 0.05 * rng.standard_normal(robot.nv))
            q = system.assemble(guess, hold=self.hold)
            v = system.project_velocity(q, rng.standard_normal(robot.nv), hold=self.hold)
            qdd = system.forward_dynamics(q, v, rng.standard_normal(robot.nv))[0]
            guesses.append(guess)
            states.append((q, v, qdd))
        return guesses, states


def run_case(pin, name, rounds, rng):
    case = Case(pin, name, rng)
    system = case.system
    impls = [Impl("robodyn", "robodyn", "cfd", system.forward_dynamics, case.r_args,
                  len(case.r_args), None),
             Impl("pinocchio", "pinocchio", "cfd", case.pin_fd, case.p_args, len(case.p_args),
                  None)]
    samples = measure(impls, rounds=rounds)
    ratio = np.median(samples["robodyn"] / samples["pinocchio"])
    guesses, states = case.consistent_states()
    hold = case.hold
    others = [Impl("id", "robodyn", "cid", system.inverse_dynamics, states, len(states), None),
              Impl("assemble", "robodyn", "assemble", lambda g: system.assemble(g, hold=hold),
                   [(g,) for g in guesses], len(guesses), None)]
    times = measure(others, rounds=max(3, rounds // 4))
    return {"case": name, "nv": case.robot.nv, "rows": system.rows,
            "robodyn_us": float(np.median(samples["robodyn"]) * 1e6),
            "pinocchio_us": float(np.median(samples["pinocchio"]) * 1e6),
            "ratio": float(ratio), "agreement": case.agreement,
            "inverse_dynamics_us": float(np.median(times["id"]) * 1e6),
            "assemble_us": float(np.median(times["assemble"]) * 1e6)}


def calls(name, lib, reps):
    """The body of one --instructions run: build the case, one pass over the pool, then reps
    calls of lib ('robodyn', 'pinocchio'; 'none' for the run without calls)."""
    import pinocchio as pin

    case = Case(pin, name, np.random.default_rng(7))
    fn, rows = {"robodyn": (case.system.forward_dynamics, case.r_args),
                "pinocchio": (case.pin_fd, case.p_args),
                "none": (lambda *a: None, case.r_args)}[lib]
    # both libraries warmed in every run, so the runs differ by the counted calls alone
    for a in case.r_args:
        case.system.forward_dynamics(*a)
    for a in case.p_args:
        case.pin_fd(*a)
    gc.disable()
    k = len(rows)
    for i in range(reps if lib != "none" else 0):
        fn(*rows[i % k])


def instructions(name, reps):
    """{'robodyn': instructions per call, 'pinocchio': ...} (None where valgrind failed)."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    totals = {}
    for lib in ("none", "robodyn", "pinocchio"):
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                            sys.executable, __file__, name, "--calls", lib, "--reps",
                            str(reps)], capture_output=True, text=True, env=env)
        m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
        totals[lib] = int(m.group(1)) if p.returncode == 0 and m else None
    base = totals.pop("none")
    return {lib: None if t is None or base is None else (t - base) / reps
            for lib, t in totals.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", default=["fourbar", "talos", "solo12"])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--json")
    parser.add_argument("--instructions", action="store_true",
                        help="instructions per call under valgrind instead of times")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--calls", choices=("none", "robodyn", "pinocchio"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.calls:
        calls(args.cases[0], args.calls, args.reps)
        return
    rows = []
    if args.instructions:
        print(f"{'case':8s} {'robodyn instr':>13s} {'pinocchio instr':>15s} {'ratio':>6s}")
        for name in args.cases:
            c = instructions(name, args.reps)
            r, p = c["robodyn"], c["pinocchio"]
            ratio = r / p if r and p else float("nan")
            rows.append({"case": name, "robodyn_instructions": r,
                         "pinocchio_instructions": p, "ratio": ratio})
            print(f"{name:8s} {r or float('nan'):13.0f} {p or float('nan'):15.0f} "
                  f"{ratio:6.2f}", flush=True)
    else:
        import pinocchio as pin

        rng = np.random.default_rng(7)
        print(f"{'case':8s} {'nv':>3s} {'rows':>4s} {'robodyn us':>10s} {'pinocchio us':>12s} "
              f"{'ratio':>6s} {'inverse us':>10s} {'assemble us':>11s}")
        for name in args.cases:
            r = run_case(pin, name, args.rounds, rng)
            rows.append(r)
            print(f"{name:8s} {r['nv']:3d} {r['rows']:4d} {r['robodyn_us']:10.2f} "
                  f"{r['pinocchio_us']:12.2f} {r['ratio']:6.2f} "
                  f"{r['inverse_dynamics_us']:10.1f} {r['assemble_us']:11.1f}", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
