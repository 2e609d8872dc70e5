"""The Matlab multibody toolbox's 3-D slider-crank under a constant crank torque.

After the toolbox thesis's example 5.1.4 (its parameters are only in a figure; these are ours):
the crank (r = 0.2 m, 1 kg) turns about the x axis at the origin, so its tip leaves the x-y
plane; the slider (1.5 kg) runs along a line parallel to x, e = 0.15 m below the x axis; the
connecting rod (L = 0.6 m, 2 kg) hangs on the slider by a universal joint (a light cross,
revolute about z then y) and is held to the crank's tip by a ball joint (a ``point`` loop
constraint). Gravity along -z, viscous damping 0.5 N m s on the crank, a constant 4 N m on it
from rest: the crank spins up towards about 8 rad/s and the slider's displacement is not
uniform, as in the thesis's Figure 5.22.

Checked on the run: the slider's position equals the closed form
s = sqrt(L^2 - (r cos theta)^2 - (r sin theta + e)^2) of the crank angle at every sample (the
loop closed), and the energy balance E(t) - E(0) = work of the torque - damping losses.

Writes slider_crank_3d.png and slider_crank_3d.csv.

    python examples/slider_crank_3d.py [--duration 3] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn

R, L, E = 0.2, 0.6, 0.15  # crank, rod, slider offset (m)
TORQUE = 4.0              # N m on the crank
DAMPING = 0.5             # N m s on the crank


def _link(name, mass, com, inertia):
    ix, iy, iz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ix}" iyy="{iy}" izz="{iz}" ixy="0" ixz="0" iyz="0"/>'
            '</inertial></link>')


def _joint(name, kind, parent, child, xyz, axis, rpy="0 0 0", damping=0.0):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            + ('<limit lower="-10" upper="10" effort="0" velocity="0"/>' if kind == "prismatic"
               else "") + f'<dynamics damping="{damping}"/></joint>')


def slider_crank_urdf():
    """The tree: crank (about x at the origin, along y), slider (along x at z = -e), cross and
    rod (the universal joint on the slider; the rod along -x at zero angles)."""
    rod_i = 2.0 * L**2 / 12
    return ('<robot name="slider_crank_3d"><link name="ground"/>'
            + _link("crank_link", 1.0, f"0 {R / 2} 0", (R**2 / 12, 1e-4, R**2 / 12))
            + _link("slider", 1.5, "0 0 0", (0.002, 0.002, 0.002))
            + _link("cross", 0.01, "0 0 0", (1e-6, 1e-6, 1e-6))
            + _link("rod", 2.0, f"{L / 2} 0 0", (2e-4, rod_i, rod_i))
            + _joint("crank", "continuous", "ground", "crank_link", "0 0 0", "1 0 0",
                     damping=DAMPING)
            + _joint("slide", "prismatic", "ground", "slider", f"0 0 {-E}", "1 0 0")
            + _joint("u1", "continuous", "slider", "cross", "0 0 0", "0 0 1",
                     rpy=f"0 0 {math.pi}")
            + _joint("u2", "continuous", "cross", "rod", "0 0 0", "0 1 0")
            + '</robot>')


def slider_crank():
    robot = robodyn.load_urdf(slider_crank_urdf())
    tip, end = np.eye(4), np.eye(4)
    tip[:3, 3] = [0.0, R, 0.0]
    end[:3, 3] = [L, 0.0, 0.0]
    ball = robodyn.LoopConstraint("crank_link", "rod", frame1=tip, frame2=end, kind="point",
                                  name="ball")
    return robodyn.ConstrainedRobot(robot, [ball], actuated=["crank"])


def slider_position(theta):
    """The closed form: the slider's x where the rod of length L reaches the crank's tip."""
    return np.sqrt(L**2 - (R * np.cos(theta))**2 - (R * np.sin(theta) + E)**2)


def run(duration=3.0, dt=1e-3, out_dir="."):
    system = slider_crank()
    q0 = np.array([0.0, slider_position(0.0), 0.0, 0.0])
    res = robodyn.simulate(system, lambda t, q, v, ref: np.array([TORQUE]),
                           duration=duration, dt=dt, q0=q0, control_rate="continuous")
    theta, s, omega = res.q[:, 0], res.q[:, 1], res.qd[:, 0]
    # the energy balance: torque work - damping losses, the power integrated by the
    # trapezoidal rule with its end correction -h^2/12 (P'(t) - P'(0)) (error O(h^4))
    power = TORQUE * omega - DAMPING * omega**2
    alpha = np.array([system.forward_dynamics(q, v, tau)[0][0]
                      for q, v, tau in zip(res.q, res.qd, res.tau)])
    dpower = (TORQUE - 2 * DAMPING * omega) * alpha
    h = np.diff(res.t)
    work = np.concatenate([[0.0], np.cumsum(0.5 * h * (power[1:] + power[:-1])
                                            - h**2 / 12 * (dpower[1:] - dpower[:-1]))])
    balance = (res.energy - res.energy[0]) - work
    out = {
        "slider_error": float(np.abs(s - slider_position(theta)).max()),
        "energy_balance": float(np.abs(balance).max() / max(np.abs(work).max(), 1e-300)),
        "max_residual": float(res.residual.max()),
        "final_speed": float(omega[-1]),
        "slider_range": (float(s.min()), float(s.max())),
        "result": res,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savetxt(out_dir / "slider_crank_3d.csv",
               np.column_stack([res.t, theta, omega, s, res.qd[:, 1], slider_position(theta),
                                res.energy, work, res.constraint_forces, res.residual]),
               delimiter=",", comments="", fmt="%.15g",
               header="t,crank_angle,crank_speed,slider_x,slider_speed,slider_x_closed_form,"
                      "energy,net_work,ball_fx,ball_fy,ball_fz,max_abs_phi")
    plot(out, out_dir / "slider_crank_3d.png")
    return out


def plot(out, path):
    from matplotlib.figure import Figure

    res = out["result"]
    fig = Figure(figsize=(12, 7), layout="constrained")
    ax = fig.subplots(2, 2)
    ax[0, 0].plot(res.t, res.q[:, 1])
    ax[0, 0].set_ylabel("slider x (m)")
    ax[0, 0].set_title(f"slider displacement (closed form to {out['slider_error']:.1e} m)")
    ax[0, 1].plot(res.t, res.qd[:, 0])
    ax[0, 1].set_ylabel("crank speed (rad/s)")
    ax[0, 1].set_title(f"crank under {TORQUE:g} N m, damping {DAMPING:g} N m s")
    for k, name in enumerate("xyz"):
        ax[1, 0].plot(res.t, res.constraint_forces[:, k], label=f"f{name}")
    ax[1, 0].set_ylabel("N")
    ax[1, 0].set_title("ball joint force on the crank (crank frame)")
    ax[1, 0].legend(loc="best", frameon=False)
    work = res.energy - res.energy[0]
    ax[1, 1].plot(res.t, work, label="E(t) - E(0)")
    ax[1, 1].set_ylabel("J")
    ax[1, 1].set_title(f"energy = net work to {out['energy_balance']:.1e} (relative)")
    ax[1, 1].legend(loc="upper left", frameon=False)
    for a in ax[1]:
        a.set_xlabel("t (s)")
    fig.suptitle(f"3-D slider-crank (r = {R}, L = {L}, offset {E} m)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=3.0, help="simulated time in s (3)")
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"slider against the closed form: max error {out['slider_error']:.2e} m; energy "
          f"balance {out['energy_balance']:.2e} (relative); max |phi| "
          f"{out['max_residual']:.2e}; final crank speed {out['final_speed']:.3g} rad/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
