"""DASC's cat with its rotational spring-damper-actuators and the two-stage controller of its
chapter 4, over the input deck's 0.9003 s at its 1 ms RK4.

The body is DASC's 16-DOF cat (robodyn.robots.dasc_cat: its input deck's nine bodies, the
universal joints as two revolute joints each). What this example adds from the document:

- **Ten rotational spring-damper-actuators** (DASC eq. 3.35; the deck's SDA and CURVE blocks),
  one per relative degree of freedom, as robodyn.RotationalSpring with a stiffness and a
  damping curve (piecewise linear) for the anatomical limits of sec. 4.3.2: 34.70 N m/rad and
  1.80 N m s/rad at +-3.2 rad, falling to 0.1 and 0.01 (the neck's first axis: 0.5 and 0.05)
  inside each joint's range.
- **The two-stage controller** (eq. 4.10-4.15): the roll theta_j of the main bodies B1
  (front torso), B2 (neck) and B5 (rear torso) about the world x axis from the start, wrapped
  by eq. 4.15 to [0, 2 pi) about the target theta* = pi (the cat starts upside down); the
  enhanced errors E_j = |W_j (theta_j - theta*)| and the performance index P = sum E_j.
  Stage 1 (position control, while P >= 4.3): the independent actuators S3 (head twist, main
  body B2), S4 (torso twist, B1) and S7 (tail twist, B5); the one whose body has the largest
  E applies its amplitude against the error (bang-bang), the others the saturated PD law
  -k (theta_j - theta*) - c theta_j'; the dependent actuators S5 (waist bend), S8, S9 (limbs)
  and S10 (tail bend) apply a fixed ratio of S4's torque. Stage 2 (pointing control, once
  P < 4.3): S1 (neck bend) and S7 only, the saturated PD law on the body with the largest E.
  An actuator's torque acts on both bodies of its joint; its sign is taken so that the
  reaction on its main body opposes the error (from M^-1 at the current state).

Which inputs the OCR of the deck lost, and what is assumed. The CONTROL block, read with
the deck reader's format (DASC's CON branch: NCS NDCS / PDEX(1..2) / ISB systems, bodies /
WEI / targets / CON(IS, 1..4) per system / IDS dependents, related systems / RDM / LSB(1..4),
ANGL(3..4), UL), gives: three independent systems S3, S4, S7 on bodies B2, B1, B5, four
dependent S5, S8, S9, S10 ("1 0" read as 10) all related to S4, the switch P = 4.3 and a
desired index 0.0, the weights (1, 2, 2), the targets pi ("3J416" read as 3.1416), and per
independent system k = 20 N m/rad, c = 0.1 N m s/rad, the bang-bang amplitude 0.926 N m and
the PD law's bound U max 0.8 (S3, S4) and 0.926 N m (S7). Lost: the line of the dependents'
moment ratios RDM (absent between IDS and LSB; assumed 0.8 for all four), the stage-2
systems LSB ("I S 7 l'": read as S1 adjusted with S7 steering, as the text describes) and
its bound UL ("9.26", perhaps 0.926: the amplitude 0.926 is used; stage 2 is not reached).
The PD law's rate is that of each system's own body (the reader's "ISB(IX(1),2)" may be
OCR for IX(I)). The ten curve groups are assigned to the joints in
the order the deck lists its SDAs (SDA 7, the tail twist, has zero constants in the deck; its
curves are used). DASC measures an SDA's angle from two body-fixed vectors whose reference the
OCR leaves ambiguous, with rest angles theta0 (-1.571 on the waist's first axis, -0.262 and
0.262 on the limbs, 1.047 on the tail) and its curves' knots given relative to theta0: taken
literally on robodyn's joint coordinates (zero at the deck's configuration) theta0 would
throw the waist into its stiff limit at once, so here every spring is at rest in the deck's
configuration and each range sits where the deck puts it (knot + theta0, e.g. the waist's
first axis from -0.785 to 0.436 rad). The main bodies' roll is taken about the world x axis.

What it shows: the structure runs as the document describes it, stage 1 bang-bang with the
dependents following S4, and every force is internal, so the total momentum is zero in exact
arithmetic. RK4 keeps it only to its error, which falls as dt^4: 7e-6 N m s at the
deck's 1 ms (the light head and tail, driven that hard, move fast). After every step the base
velocity is therefore projected back onto zero momentum (``simulate(...,
project_momentum=True)``, robodyn.constraints.momentum: the smallest change of the velocity
in the kinetic-energy metric, which moves only the base, the jump an impulsive wrench on the
base equal to the error would cause): the angular momentum stays below 1e-13 N m s at 1 ms,
the corrections are at most 5e-6 and change the kinetic energy by -3e-11 J in all (against a
largest kinetic energy of 1.9 J), and the final state is as far from a 0.1 ms run as without
the projection (1.1e-4 rad); ``--free-momentum`` shows the drift. With the gains as read
the cat does not turn over in the deck's 0.9003 s: the front and the rear roll in opposite
directions (a twist) and stage 2 is not reached; the document's turn needs the inputs the
OCR lost.

Writes dasc_cat_control.png and dasc_cat_control.csv.

    python examples/dasc_cat_control.py [--duration 0.9003] [--dt 0.001] [--out-dir .]
        [--free-momentum]

(the controller runs at 1 kHz whatever --dt is)
"""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path

import numpy as np

import robodyn
from robodyn import Curve, RotationalSpring

OUTER_K, OUTER_C = 34.70, 1.80
# (joint, the deck's theta0, its knots over theta - theta0, inner stiffness, inner damping)
SDA = [
    ("neck_bend_1", 0.0, (-3.2, -0.785, 0.785, 3.2), 0.5, 0.05),
    ("neck_bend_2", 0.0, (-3.2, -0.646, 0.646, 3.2), 0.1, 0.01),
    ("head_twist", 0.0, (-3.2, -1.047, 1.047, 3.2), 0.1, 0.01),
    ("torso_twist", 0.0, (-3.2, -1.571, 1.571, 3.2), 0.1, 0.01),
    ("torso_bend_1", -1.571, (-1.629, 0.786, 2.007, 4.771), 0.1, 0.01),
    ("torso_bend_2", 0.0, (-3.2, -0.523, 0.523, 3.2), 0.1, 0.01),
    ("tail_twist", 0.0, (-3.2, -1.134, 1.134, 3.2), 0.1, 0.01),
    ("fore_limb_swing", -0.262, (-2.938, -1.134, 0.262, 3.462), 0.1, 0.01),
    ("hind_limb_swing", 0.262, (-3.462, -0.262, 1.134, 2.938), 0.1, 0.01),
    ("tail_bend", 1.047, (-4.247, -2.443, 0.349, 2.153), 0.1, 0.01),
]
MAIN_BODIES = ("neck", "front_torso", "rear_torso")      # B2, B1, B5
WEIGHTS = (1.0, 2.0, 2.0)
INDEPENDENT = ("head_twist", "torso_twist", "tail_twist")  # S3, S4, S7 -> B2, B1, B5
DEPENDENT = ("torso_bend_1", "fore_limb_swing", "hind_limb_swing", "tail_bend")  # S5, S8-S10
STAGE2 = ("neck_bend_1", "tail_twist")                    # S1, S7
# the deck's CONTROL block: per independent system (k, c, amplitude, U max); BOUND is the
# bang-bang amplitude (also the stage-2 bound, assumed); RATIO the dependents' (assumed)
GAIN_K, GAIN_C, BOUND, RATIO, P_SWITCH = 20.0, 0.1, 0.926, 0.8, 4.3
U_MAX = {"head_twist": 0.8, "torso_twist": 0.8, "tail_twist": 0.926}
TARGET = math.pi


def elements():
    out = []
    for joint, theta0, knots, k_in, c_in in SDA:
        # at rest in the deck's configuration (q = 0), the limits where the deck puts them
        limits = np.array(knots) + theta0
        out.append(RotationalSpring(
            joint, rest=0.0,
            stiffness_curve=Curve(limits, [OUTER_K, k_in, k_in, OUTER_K]),
            damping_curve=Curve(limits, [OUTER_C, c_in, c_in, OUTER_C])))
    return out


def cat():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return robodyn.robots.load("dasc_cat").with_forces(elements())


def wrap(theta, target):
    """DASC eq. 4.15: theta -/+ 2 pi so that it has the sign of the target."""
    if theta >= 0 and target < 0:
        return theta - 2 * math.pi
    if theta < 0 and target >= 0:
        return theta + 2 * math.pi
    return theta


class TwoStage:
    """DASC's two-stage controller (module docstring): ctrl(t, q, v, ref) -> tau (nv,)."""

    def __init__(self, robot, q0):
        self.robot = robot
        links = list(robot.link_names)
        self.body = [links.index(b) for b in MAIN_BODIES]
        joints = list(robot.joint_names)
        # velocity index of joint j: 6 base coordinates, then the joints after root_joint
        self.col = {j: 5 + joints.index(j) for j in joints[1:]}
        poses = np.asarray(robot.forward_kinematics(q0))
        self.R0 = [poses[b][:3, :3] for b in self.body]
        self.stage = 1
        self.switch_time = None
        self.log = []

    def measure(self, q, v):
        poses = np.asarray(self.robot.forward_kinematics(q))
        theta, rate = [], []
        for b, R0 in zip(self.body, self.R0):
            R = poses[b][:3, :3] @ R0.T
            theta.append(wrap(math.atan2(R[2, 1] - R[1, 2], R[1, 1] + R[2, 2]), TARGET))
            rate.append(float(np.asarray(self.robot.jacobian(q, b))[0] @ v))
        return np.array(theta), np.array(rate)

    def effect(self, q, joints):
        """Sign of the main body's roll acceleration per unit torque of each joint (the
        reaction on it: DASC's actuator acts on both bodies of its joint)."""
        Minv = np.linalg.inv(np.asarray(self.robot.mass_matrix(q)))
        out = []
        for joint, b in zip(joints, self.body):
            Jx = np.asarray(self.robot.jacobian(q, b))[0]
            out.append(math.copysign(1.0, Jx @ Minv[:, self.col[joint]]))
        return np.array(out)

    def __call__(self, t, q, v, ref):
        theta, rate = self.measure(q, v)
        err = theta - TARGET
        E = np.abs(np.array(WEIGHTS) * err)
        P = float(E.sum())
        if self.stage == 1 and P < P_SWITCH:
            self.stage, self.switch_time = 2, t
        tau = np.zeros(self.robot.nv)
        u = {}
        jmax = int(np.argmax(E))
        if self.stage == 1:
            sign = self.effect(q, INDEPENDENT)
            for i, joint in enumerate(INDEPENDENT):
                if i == jmax:
                    u[joint] = -BOUND * math.copysign(1.0, err[i]) * sign[i]
                else:
                    u[joint] = sign[i] * float(np.clip(-GAIN_K * err[i] - GAIN_C * rate[i],
                                                       -U_MAX[joint], U_MAX[joint]))
            for joint in DEPENDENT:
                u[joint] = RATIO * u["torso_twist"]
        else:
            sign = self.effect(q, [STAGE2[0]] * 3)[jmax], self.effect(q, [STAGE2[1]] * 3)[jmax]
            for joint, sg in zip(STAGE2, sign):
                u[joint] = sg * float(np.clip(-GAIN_K * err[jmax] - GAIN_C * rate[jmax],
                                              -BOUND, BOUND))
        for joint, value in u.items():
            tau[self.col[joint]] = value
        self.log.append((t, self.stage, P, *theta, *[u.get(j, 0.0) for j in
                                                     INDEPENDENT + DEPENDENT + STAGE2[:1]]))
        return tau


def run(duration=0.9003, dt=1e-3, out_dir=".", project_momentum=True):
    robot = cat()
    q0, v0 = robodyn.robots.initial_state("dasc_cat", robot)
    ctrl = TwoStage(robot, q0)
    res = robodyn.simulate(robot, ctrl, duration=duration, dt=dt, control_rate=1000.0,
                           q0=q0, qd0=v0, joint_limits="ignore",
                           project_momentum=project_momentum)
    L = np.linalg.norm(res.momentum[:, :3], axis=1)
    log = np.array(ctrl.log)
    theta_end, _ = ctrl.measure(res.q[-1], res.qd[-1])
    out = {
        "max_angular_momentum": float(L.max()),
        "switch_time": ctrl.switch_time,
        "final_errors": theta_end - TARGET,
        "initial_errors": log[0, 3:6] - TARGET,
        "final_P": float(np.sum(np.abs(np.array(WEIGHTS) * (theta_end - TARGET)))),
        "steps": res.stats.get("steps"),
        "projection": res.stats.get("momentum_projection"),
        "max_kinetic": float(res.kinetic.max()),
        "result": res,
        "log": log,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = ["t", "stage", "P", "theta_B2", "theta_B1", "theta_B5"] + [
        f"u_{j}" for j in INDEPENDENT + DEPENDENT + STAGE2[:1]]
    np.savetxt(out_dir / "dasc_cat_control.csv", log, delimiter=",", header=",".join(names),
               comments="", fmt="%.12g")
    plot(res, log, L, out, out_dir / "dasc_cat_control.png")
    return out


def plot(res, log, L, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 8), layout="constrained")
    ax = fig.subplots(3, 1, sharex=True)
    t = log[:, 0]
    for k, name in enumerate(("B2 (neck)", "B1 (front torso)", "B5 (rear torso)")):
        ax[0].plot(t, log[:, 3 + k] - TARGET, lw=1.2, label=name)
    ax[0].set_ylabel("theta_j - theta* (rad)")
    ax[0].set_title("roll errors of the main bodies about x (target: turned by pi)")
    labels = ["S3 head twist", "S4 torso twist", "S7 tail twist", "S5 waist bend (dep.)",
              "S8 fore limbs (dep.)", "S9 hind limbs (dep.)", "S10 tail bend (dep.)",
              "S1 neck bend (stage 2)"]
    for k, name in enumerate(labels):
        ax[1].plot(t, log[:, 6 + k], lw=1.0, label=name)
    ax[1].set_ylabel("actuator torque (N m)")
    switch = out["switch_time"]
    ax[1].set_title("actuators: stage 1 bang-bang / PD" + (
        f", stage 2 from {switch:.3f} s" if switch is not None else " (stage 2 not reached)"))
    ax[2].semilogy(res.t, np.maximum(L, 1e-18), lw=1.2, label="|angular momentum|")
    ax[2].set_ylabel("N m s")
    ax[2].set_xlabel("t (s)")
    ax[2].set_title(f"total angular momentum: at most {out['max_angular_momentum']:.1e} N m s")
    for a in ax:
        a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("DASC's cat: rotational spring-damper-actuators and the two-stage controller")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=0.9003, help="simulated time in s (0.9003)")
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    p.add_argument("--free-momentum", action="store_true",
                   help="no momentum projection after the steps (RK4's drift shows)")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out, project_momentum=not args.free_momentum)
    switch = out["switch_time"]
    print(f"angular momentum at most {out['max_angular_momentum']:.2e} N m s; stage 2 "
          + (f"from {switch:.4f} s" if switch is not None else "not reached")
          + "; roll errors (B2, B1, B5) from "
          + np.array2string(out["initial_errors"], precision=3) + " to "
          + np.array2string(out["final_errors"], precision=3) + " rad")
    if out["projection"]:
        pr = out["projection"]
        print(f"momentum projection: {pr['steps']} steps, largest correction "
              f"{pr['max_correction']:.2e}, kinetic energy changed by {pr['energy_change']:.2e} J "
              f"in all (largest kinetic energy {out['max_kinetic']:.3g} J)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
