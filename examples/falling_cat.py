"""DASC's cat turned over by robodyn's own zero-momentum manoeuvre.

The body is DASC's: the 16-DOF cat of its input deck (robodyn.robots.dasc_cat). The motion is
not DASC's: the document turns its cat with its two-stage feedback controller (decentralized,
hierarchical); this example drives a bend-and-twist loop of our own design with computed
torque. The cat starts upside down and at rest, so its angular momentum is zero
and stays zero: no external force acts, the joint torques are internal. It turns by changing
its shape along a closed loop (a geometric phase): the waist (the universal joint torso_bend
between the mid and rear torso) bends sideways and arches,

    torso_bend_1 = A sin(psi),  torso_bend_2 = B (1 - cos(psi)),  psi: 0 -> 4 pi,

so the direction of the bend circles the body twice (A = 1.0 rad sideways, B = 1.05 rad: the
back goes from the deck's 60-degree V through straight to arched), with psi following a
minimum-jerk time law over the turn; every other joint holds its initial angle. Each circuit
turns the whole cat about its long axis (Kane & Scher's cat); the two take it over. The joints
are driven by computed torque on the floating system (the base is unactuated: its acceleration
comes from the momentum balance, M_bb a_b = -(M_bj a_j + h_b)) with PD feedback, so they track
the loop, and the cat ends in its starting shape, at rest.

Writes falling_cat.png, falling_cat.csv and falling_cat.gif (the turn, animated).

    python examples/falling_cat.py [--duration 1.0] [--steps 4000] [--frames 40] [--out-dir .]

``--duration`` is the time of the turn (the roll does not depend on it, only the torques do);
the run lasts 10 % longer, holding the final shape. RK4 takes ``--steps`` steps per turn
(dt = duration / steps): the angular momentum, zero in exact arithmetic, then stays below
1e-9 N m s (RK4 does not conserve it exactly; its error falls as dt^4).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn

A, B = 1.0, 1.05  # waist loop: sideways bend and arch amplitudes, rad
CIRCUITS = 2
KP, KD = 400.0, 40.0  # PD on the joint error, 1/s^2 and 1/s (critically damped)


def time_law(t, T):
    """Minimum-jerk progress s(t) from 0 to 1 over [0, T], with s' and s''."""
    tau = min(max(t / T, 0.0), 1.0)
    s = tau ** 3 * (10 - 15 * tau + 6 * tau * tau)
    ds = 30 * tau * tau * (1 - tau) ** 2 / T
    dds = 60 * tau * (1 - tau) * (1 - 2 * tau) / (T * T)
    return s, ds, dds


class WaistLoop:
    """The joint reference (q, qd, qdd), joints only: the loop on torso_bend_1, _2."""

    def __init__(self, robot, T):
        joints = list(robot.joint_names)[-(robot.nv - 6):]
        self.n = len(joints)
        self.i1, self.i2 = joints.index("torso_bend_1"), joints.index("torso_bend_2")
        self.T = T

    def __call__(self, t):
        s, ds, dds = time_law(t, self.T)
        k = 2 * math.pi * CIRCUITS
        psi, dpsi, ddpsi = k * s, k * ds, k * dds
        q, qd, qdd = np.zeros(self.n), np.zeros(self.n), np.zeros(self.n)
        q[self.i1] = A * math.sin(psi)
        qd[self.i1] = A * math.cos(psi) * dpsi
        qdd[self.i1] = A * (math.cos(psi) * ddpsi - math.sin(psi) * dpsi ** 2)
        q[self.i2] = B * (1 - math.cos(psi))
        qd[self.i2] = B * math.sin(psi) * dpsi
        qdd[self.i2] = B * (math.sin(psi) * ddpsi + math.cos(psi) * dpsi ** 2)
        return q, qd, qdd


class FloatingComputedTorque:
    """Joint torques that give the joints a* = qdd_ref + KP e + KD e' while the unactuated
    base moves as the dynamics dictate: from M a + h = [0; tau] with a = [a_b; a*],
    a_b = -M_bb^-1 (M_bj a* + h_b) and tau = M_jb a_b + M_jj a* + h_j."""

    def __init__(self, robot, reference):
        self.robot = robot
        self.reference = reference
        self.tau = np.zeros(robot.nv)

    def __call__(self, t, q, v, ref):
        qr, vr, ar = self.reference(t)
        a = ar + KP * (qr - q[7:]) + KD * (vr - v[6:])
        M = self.robot.mass_matrix(q)
        h = self.robot.bias_torques(q, v)
        a_b = -np.linalg.solve(M[:6, :6], M[:6, 6:] @ a + h[:6])
        self.tau[6:] = M[6:, :6] @ a_b + M[6:, 6:] @ a + h[6:]
        return self.tau


def rotation_between(R0, R1):
    """(angle in degrees, unit axis in world axes) of the rotation R1 R0^T."""
    Rd = R1 @ R0.T
    angle = math.acos(max(-1.0, min(1.0, (np.trace(Rd) - 1) / 2)))
    axis = np.array([Rd[2, 1] - Rd[1, 2], Rd[0, 2] - Rd[2, 0], Rd[1, 0] - Rd[0, 1]])
    if np.linalg.norm(axis) < 1e-9:  # angle 0 or pi: the axis from the symmetric part
        w, V = np.linalg.eigh(0.5 * (Rd + Rd.T))
        axis = V[:, -1]
    return math.degrees(angle), axis / np.linalg.norm(axis)


def run(duration=1.0, steps=4000, frames=40, out_dir="."):
    robot = robodyn.robots.dasc_cat()
    q0, v0 = robodyn.robots.initial_state("dasc_cat", robot)
    reference = WaistLoop(robot, duration)
    ctrl = FloatingComputedTorque(robot, reference)
    res = robodyn.simulate(robot, controller=ctrl, q0=q0, qd0=v0, duration=1.1 * duration,
                           dt=duration / steps, control_rate="continuous", integrator="rk4")
    links = list(robot.link_names)
    poses = [np.asarray(robot.forward_kinematics(q)) for q in (res.q[0], res.q[-1])]
    turns = {}
    for body in ("front_torso", "rear_torso", "head"):
        i = links.index(body)
        turns[body] = rotation_between(poses[0][i][:3, :3], poses[1][i][:3, :3])
    angle, axis = turns["front_torso"]
    qr = np.array([reference(t)[0] for t in res.t])
    out = {
        "roll_deg": angle,
        "axis": axis,
        "axis_from_x_deg": math.degrees(math.acos(min(1.0, abs(axis[0])))),
        "turns": turns,
        "max_angular_momentum": float(np.max(np.linalg.norm(res.momentum[:, :3], axis=1))),
        "max_linear_momentum": float(np.max(np.linalg.norm(res.momentum[:, 3:], axis=1))),
        "final_shape_error": float(np.max(np.abs(res.q[-1, 7:] - q0[7:]))),
        "final_speed": float(np.max(np.abs(res.qd[-1]))),
        "max_tracking_error": float(np.max(np.abs(qr - res.q[:, 7:]))),
        "max_torque": float(np.max(np.abs(res.tau))),
        "result": res,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    res.to_csv(out_dir / "falling_cat.csv")
    plot(robot, res, reference, out_dir / "falling_cat.png")
    animate(robot, res, frames, out_dir / "falling_cat.gif")
    return out


def roll_history(robot, res):
    """Rotation angle (deg) of the front and rear torso from their start, over time."""
    links = list(robot.link_names)
    i, j = links.index("front_torso"), links.index("rear_torso")
    P0 = np.asarray(robot.forward_kinematics(res.q[0]))
    out = []
    for q in res.q:
        P = np.asarray(robot.forward_kinematics(q))
        out.append([rotation_between(P0[k][:3, :3], P[k][:3, :3])[0] for k in (i, j)])
    return np.array(out)


def plot(robot, res, reference, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 9), layout="constrained")
    ax = fig.subplots(3, 1, sharex=True)
    rolls = roll_history(robot, res)
    ax[0].plot(res.t, rolls[:, 0], label="front torso")
    ax[0].plot(res.t, rolls[:, 1], label="rear torso", ls="--")
    ax[0].axhline(180.0, color="k", lw=0.6, ls=":", label="180 deg: turned over")
    ax[0].set_ylabel("deg")
    ax[0].set_title("rotation from the starting attitude")
    ax[0].legend(loc="lower right")
    names = res.q_names
    for name in ("torso_bend_1", "torso_bend_2"):
        k = names.index(name)
        ax[1].plot(res.t, res.q[:, k], label=name)
        ax[1].plot(res.t, [reference(t)[0][k - 7] for t in res.t], color="k", lw=0.6, ls=":",
                   label="reference" if name == "torso_bend_2" else None)
    ax[1].set_ylabel("rad")
    ax[1].set_title("waist joints and their reference")
    ax[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    h = np.linalg.norm(res.momentum[:, :3], axis=1)
    ax[2].semilogy(res.t, np.maximum(h, 1e-300), label="|angular momentum|")
    ax[2].axhline(1e-9, color="k", lw=0.6, ls=":", label="1e-9 N m s: RK4's bound here")
    ax[2].set_ylabel("N m s")
    ax[2].set_ylim(1e-18, max(1e-8, 10 * float(h.max())))
    ax[2].set_title("total angular momentum (about the world origin)")
    ax[2].set_xlabel("t (s)")
    ax[2].legend(loc="lower right")
    fig.suptitle("DASC's cat turned over with zero angular momentum by robodyn's own "
                 "bend-and-twist manoeuvre\n(computed torque on a loop of the waist joint, not "
                 "DASC's two-stage controller)")
    fig.savefig(path, dpi=100)


def skeleton(robot, q, coms):
    """Segments (parent COM -> joint point -> child COM) and the COM points, world frame."""
    P = np.asarray(robot.forward_kinematics(q))
    links = list(robot.link_names)
    world = {}
    for name, com in coms.items():
        T = P[links.index(name)]
        world[name] = T[:3, :3] @ com + T[:3, 3]
    segs = []
    for parent, child in robot_edges(robot):
        joint = P[links.index(child)][:3, 3]
        a = world.get(parent, P[links.index(parent)][:3, 3])
        b = world.get(child, joint)
        segs.append(np.array([a, joint, b]))
    return segs, world


def robot_edges(robot):
    spec = robot.spec
    names = [b.name for b in spec.bodies]
    return [(names[b.parent], b.name) for b in spec.bodies if b.parent >= 0]


def animate(robot, res, frames, path):
    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.figure import Figure

    coms = {b.name: np.asarray(b.com, dtype=float) for b in robot.spec.bodies if b.mass > 0}
    fig = Figure(figsize=(4.5, 4.5))
    ax = fig.add_subplot(projection="3d")
    idx = np.linspace(0, res.t.shape[0] - 1, max(frames, 2)).round().astype(int)
    c = robot.center_of_mass(res.q[0])
    legs = {"fore_limbs", "hind_limbs"}

    def draw(k):
        ax.cla()
        segs, world = skeleton(robot, res.q[idx[k]], coms)
        for s in segs:
            ax.plot(s[:, 0], s[:, 1], s[:, 2], color="0.3", lw=2)
        for name, p in world.items():
            ax.scatter(*p, s=30 if name not in legs else 60,
                       color="tab:red" if name in legs else "tab:blue")
        r = 0.3
        ax.set_xlim(c[0] - r, c[0] + r)
        ax.set_ylim(c[1] - r, c[1] + r)
        ax.set_zlim(c[2] - r, c[2] + r)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_zlabel("z")
        ax.view_init(elev=15, azim=-60)
        ax.set_title(f"t = {res.t[idx[k]]:.2f} s (legs red)", fontsize=9)
        return []

    anim = FuncAnimation(fig, draw, frames=len(idx), blit=False)
    anim.save(path, writer=PillowWriter(fps=12), dpi=70)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=1.0, help="time of the turn, s")
    p.add_argument("--steps", type=int, default=4000, help="RK4 steps per turn")
    p.add_argument("--frames", type=int, default=40, help="frames of the GIF")
    p.add_argument("--out-dir", "--out", dest="out_dir", default=".",
                   help="directory for the PNG, CSV (and GIF) files")
    args = p.parse_args(argv)
    out = run(args.duration, args.steps, args.frames, args.out_dir)
    print(out["result"].summary())
    ax = out["axis"]
    print(f"the front torso turned {out['roll_deg']:.1f} deg about ({ax[0]:.3f}, {ax[1]:.3f}, "
          f"{ax[2]:.3f}), {out['axis_from_x_deg']:.1f} deg from the long (x) axis; rear torso "
          f"{out['turns']['rear_torso'][0]:.1f} deg, head {out['turns']['head'][0]:.1f} deg")
    print(f"max |angular momentum| {out['max_angular_momentum']:.1e} N m s, max |linear "
          f"momentum| {out['max_linear_momentum']:.1e} N s")
    print(f"final shape error {out['final_shape_error']:.1e} rad, final max speed "
          f"{out['final_speed']:.1e}, max tracking error {out['max_tracking_error']:.1e} rad, "
          f"max joint torque {out['max_torque']:.3g} N m")
    return out


if __name__ == "__main__":
    main()
