"""The Matlab multibody toolbox's four-bar: kinematics with a driven crank, then dynamics.

After the toolbox thesis's examples 5.1.1 and 5.1.2 (its dimensions are only in a figure; these
are ours: a Grashof crank-rocker, crank a = 0.2 m, coupler b = 0.5 m, rocker c = 0.4 m, ground
d = 0.45 m, rods of 2 kg/m). The tree is crank -> coupler on the ground pivot O2 = (0, 0, 0)
and the rocker on O4 = (d, 0, 0), all turning in the x-z plane (gravity along -z); a planar
closure (rows x and z of a frame at the rocker's tip) joins the coupler's tip to the rocker's.

1. Kinematic analysis (``robodyn.constraints.kinematic_analysis``, the driving constraint
   theta2 = theta0 + pi t, half a revolution a second as in the thesis): the rocker's angle
   equals the closed-form solution of Freudenstein's equation to 1e-9 rad over a whole turn,
   and the path of a point above the coupler's middle (the thesis's red point) closes after
   one turn (2 s).
2. Dynamics (``robodyn.simulate``): the driving constraint removed, the mechanism falls from
   rest under gravity; the crank rocks without completing a turn, as in the thesis. The total
   energy stays constant and the loop closed (projection after every RK4 step).

Writes fourbar.png, fourbar.csv (the kinematic analysis) and fourbar_dynamic.csv.

    python examples/fourbar.py [--duration 5] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn
from robodyn.constraints.assembly import kinematic_analysis

A, B, C, D = 0.2, 0.5, 0.4, 0.45  # crank, coupler, rocker, ground (m)
POINT = (B / 2, 0.0, 0.12)        # the tracked point, in the coupler's frame (m)
OMEGA = math.pi                   # crank speed of the kinematic analysis (rad/s)
THETA0 = 0.3                      # crank angle at t = 0 (rad)


def rod(name, length):
    """A slender rod along x, 2 kg/m, its mass centre at mid-length."""
    m = 2.0 * length
    i = m * length**2 / 12
    return (f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{m}"/>'
            f'<inertia ixx="{1e-4 * m}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/>'
            '</inertial></link>')


def fourbar_urdf():
    """The spanning tree: crank -> coupler on O2, rocker on O4, axes along -y (a positive
    angle turns x towards z)."""
    joint = ('<joint name="{n}" type="continuous"><parent link="{p}"/><child link="{c}"/>'
             '<origin xyz="{x} 0 0"/><axis xyz="0 -1 0"/></joint>')
    return ('<robot name="fourbar"><link name="ground"/>' + rod("crank_link", A)
            + rod("coupler_link", B) + rod("rocker_link", C)
            + joint.format(n="crank", p="ground", c="crank_link", x=0)
            + joint.format(n="coupler", p="crank_link", c="coupler_link", x=A)
            + joint.format(n="rocker", p="ground", c="rocker_link", x=D) + '</robot>')


def tip(length):
    T = np.eye(4)
    T[0, 3] = length
    return T


def fourbar(actuated=("crank",)):
    robot = robodyn.load_urdf(fourbar_urdf())
    loop = robodyn.LoopConstraint("rocker_link", "coupler_link", frame1=tip(C), frame2=tip(B),
                                  kind="axes", axes=("x", "z"), name="coupler_rocker")
    return robodyn.ConstrainedRobot(robot, [loop], actuated=actuated)


def freudenstein(theta2, branch=-1):
    """(theta3, theta4): the coupler's and the rocker's absolute angles at crank angle theta2,
    from K1 cos t4 - K2 cos t2 + K3 = cos(t2 - t4) by the half-angle substitution (branch -1:
    the open circuit)."""
    k1, k2, k3 = D / A, D / C, (A * A - B * B + C * C + D * D) / (2 * A * C)
    a = np.cos(theta2) - k1 - k2 * np.cos(theta2) + k3
    b = -2 * np.sin(theta2)
    c = k1 - (k2 + 1) * np.cos(theta2) + k3
    theta4 = 2 * np.arctan2(-b + branch * np.sqrt(b * b - 4 * a * c), 2 * a)
    x = D + C * np.cos(theta4) - A * np.cos(theta2)
    z = C * np.sin(theta4) - A * np.sin(theta2)
    return np.arctan2(z, x), theta4


def wrap(x):
    return np.angle(np.exp(1j * np.asarray(x)))


def tracked_point(robot, Q):
    """World (x, z) of POINT on the coupler for each configuration."""
    poses = robot.forward_kinematics(Q)[:, 1]
    p = poses[:, :3, :3] @ np.asarray(POINT) + poses[:, :3, 3]
    return p[:, [0, 2]]


def kinematics(dt=1e-3):
    system = fourbar()
    t = np.arange(int(round(2 * math.pi / OMEGA / dt)) + 1) * dt
    theta2 = THETA0 + OMEGA * t
    t3, t4 = freudenstein(THETA0)
    guess = np.array([THETA0, t3 - THETA0, t4])
    Q, QD, QDD = kinematic_analysis(system, ["crank"], theta2, np.full_like(t, OMEGA),
                                    np.zeros_like(t), q_guess=guess)
    _, t4_exact = freudenstein(theta2)
    return dict(system=system, t=t, q=Q, qd=QD, qdd=QDD, theta4_exact=t4_exact,
                point=tracked_point(system.robot, Q))


def dynamics(duration, dt):
    system = fourbar(actuated=())
    t3, t4 = freudenstein(THETA0)
    q0 = np.array([THETA0, t3 - THETA0, t4])
    return robodyn.simulate(system, None, duration=duration, dt=dt, q0=q0,
                            control_rate="continuous")


def run(duration=5.0, dt=1e-3, out_dir="."):
    kin = kinematics(dt)
    sim = dynamics(duration, dt)
    err = np.abs(wrap(kin["q"][:, 2] - kin["theta4_exact"]))
    closure = float(np.linalg.norm(kin["point"][-1] - kin["point"][0]))
    crank_turns = float((sim.q[:, 0].max() - sim.q[:, 0].min()) / (2 * math.pi))
    out = {
        "rocker_error": float(err.max()),
        "coupler_curve_closure": closure,
        "kinematic_residual": float(max(np.abs(kin["system"].residual(q)).max()
                                        for q in kin["q"])),
        "energy_drift": sim.energy_drift,
        "max_residual": float(sim.residual.max()),
        "crank_sweep_turns": crank_turns,
        "max_force": float(np.abs(sim.constraint_forces).max()),
        "kinematics": kin, "dynamics": sim,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savetxt(out_dir / "fourbar.csv",
               np.column_stack([kin["t"], kin["q"][:, 0], kin["q"][:, 0] + kin["q"][:, 1],
                                kin["q"][:, 2], kin["theta4_exact"], kin["qd"], kin["qdd"],
                                kin["point"]]),
               delimiter=",", comments="", fmt="%.15g",
               header="t,theta2,theta3,theta4,theta4_freudenstein,qd_crank,qd_coupler,"
                      "qd_rocker,qdd_crank,qdd_coupler,qdd_rocker,point_x,point_z")
    tip_x = A * np.cos(sim.q[:, 0])
    tip_z = A * np.sin(sim.q[:, 0])
    np.savetxt(out_dir / "fourbar_dynamic.csv",
               np.column_stack([sim.t, sim.q, sim.qd, tip_x, tip_z, sim.energy,
                                sim.constraint_forces, sim.residual]),
               delimiter=",", comments="", fmt="%.15g",
               header="t,q_crank,q_coupler,q_rocker,qd_crank,qd_coupler,qd_rocker,crank_tip_x,"
                      "crank_tip_z,energy,lambda_x,lambda_z,max_abs_phi")
    plot(out, out_dir / "fourbar.png")
    return out


def plot(out, path):
    from matplotlib.figure import Figure

    kin, sim = out["kinematics"], out["dynamics"]
    robot = kin["system"].robot
    fig = Figure(figsize=(12, 8), layout="constrained")
    ax = fig.subplots(2, 2)
    # the mechanism at eight crank angles and the tracked point's path
    a = ax[0, 0]
    a.plot([0, D], [0, 0], "k--", lw=1)
    for n, k in enumerate(np.linspace(0, kin["q"].shape[0] - 1, 5)[:-1].astype(int)):
        poses = robot.forward_kinematics(kin["q"][k])
        o3, R3 = poses[1][:3, 3], poses[1][:3, :3]
        o4 = poses[2][:3, 3]
        p3 = R3 @ [B, 0, 0] + o3
        mid, pt = R3 @ [B / 2, 0, 0] + o3, R3 @ np.asarray(POINT) + o3
        a.plot([0, o3[0], p3[0], o4[0]], [0, o3[2], p3[2], o4[2]], "-o", color=f"C{n}",
               lw=1.2, ms=3, label=f"t = {kin['t'][k]:.1f} s")
        a.plot([mid[0], pt[0]], [mid[2], pt[2]], color=f"C{n}", lw=0.8)
    a.plot(kin["point"][:, 0], kin["point"][:, 1], color="k", lw=1.8, label="tracked point")
    a.set_aspect("equal")
    a.set_xlabel("x (m)")
    a.set_ylabel("z (m)")
    a.set_title(f"coupler curve, one crank turn: closes to {out['coupler_curve_closure']:.1e} m")
    a.legend(loc="lower right", frameon=False, fontsize=8)
    # the rocker against Freudenstein's closed form
    a = ax[0, 1]
    a.plot(kin["t"], np.degrees(kin["q"][:, 0]), label="crank theta2 (driven)")
    a.plot(kin["t"], np.degrees(wrap(kin["q"][:, 2])), lw=2.5, label="rocker theta4 (robodyn)")
    a.plot(kin["t"], np.degrees(wrap(kin["theta4_exact"])), "k--", lw=1,
           label="rocker, Freudenstein")
    a.set_xlabel("t (s)")
    a.set_ylabel("angle (deg)")
    a.set_title(f"kinematic analysis at pi rad/s: max |error| {out['rocker_error']:.1e} rad")
    a.legend(loc="upper left", frameon=False, fontsize=8)
    # dynamics: the crank tip (the thesis's body one) falling from rest
    a = ax[1, 0]
    a.plot(sim.t, A * np.cos(sim.q[:, 0]), label="crank tip x")
    a.plot(sim.t, A * np.sin(sim.q[:, 0]), label="crank tip z")
    a.set_xlabel("t (s)")
    a.set_ylabel("m")
    a.set_title("dynamics from rest under gravity (no driver)")
    a.legend(loc="best", frameon=False)
    a = ax[1, 1]
    a.semilogy(sim.t, np.abs(sim.energy - sim.energy[0]) + 1e-18, label="|E(t) - E(0)| (J)")
    a.semilogy(sim.t, sim.residual + 1e-18, label="max |phi| (m)")
    a.set_xlabel("t (s)")
    a.set_title(f"energy drift {out['energy_drift']:.1e} (of the kinetic energy), "
                f"loop residual")
    a.legend(loc="lower right", frameon=False)
    fig.suptitle("The toolbox's four-bar (a = 0.2, b = 0.5, c = 0.4, d = 0.45 m)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=5.0,
                   help="simulated time of the dynamics in s (5)")
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step and sampling in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"kinematics: rocker angle against Freudenstein's closed form, max error "
          f"{out['rocker_error']:.2e} rad; coupler curve closes to "
          f"{out['coupler_curve_closure']:.2e} m after one turn")
    print(f"dynamics: energy drift {out['energy_drift']:.2e} (relative), max |phi| "
          f"{out['max_residual']:.2e}, crank sweep {out['crank_sweep_turns']:.2f} turn, "
          f"max |lambda| {out['max_force']:.3g} N")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
