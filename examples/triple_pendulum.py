"""Lynch's triple pendulum: energy kept without damping, lost with it (Lynch 1988, sec. 5.1).

Lynch's input data (Appendix A, sec. 9.2): three links of 1 kg hanging along -y, joints
1.0 m apart, each link's mass centre at mid-link (DL = SL = 0.5 m: 0.5 m from its joint to its
mass centre, 0.5 m on to the next joint), central inertias diag(0.2, 0.1, 0.2) kg m^2, gravity
along -y. The joint axes (his PQ and RQ vectors) are, at q = 0, along z, x and z: each link
turns in a plane perpendicular to the previous one's. From 30 degrees on every joint at rest,
two runs: without damping the total energy stays constant (to the integrator's error); with
his 5 N m s of viscous damping at each joint it falls monotonically and the angles settle to
zero (hanging straight down).

Linearised about q = 0, M qdd + K q = 0 with K the gravity stiffness dg/dq; the eigenvalues of
M^-1 K, scaled by 10, are Lynch's "initial eigenvalues" of Table 6.1: 46.0, 67.7, 198.6.

Writes triple_pendulum.png and triple_pendulum.csv.

    python examples/triple_pendulum.py [--duration 10] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn


LINK = 1.0  # m, joint to joint
COM = 0.5   # m, joint to the link's mass centre


def pendulum_urdf(damping=0.0):
    """The pendulum as URDF text (joint damping in N m s)."""
    inertial = (f'<inertial><origin xyz="0 {-COM} 0"/><mass value="1"/><inertia ixx="0.2" '
                'iyy="0.1" izz="0.2" ixy="0" ixz="0" iyz="0"/></inertial>')
    links = "".join(f'<link name="link{i}">{inertial}</link>' for i in (1, 2, 3))
    joints = []
    for i, (parent, xyz, axis) in enumerate((("ground", "0 0 0", "0 0 1"),
                                             ("link1", f"0 {-LINK} 0", "1 0 0"),
                                             ("link2", f"0 {-LINK} 0", "0 0 1")), start=1):
        joints.append(f'<joint name="q{i}" type="continuous"><parent link="{parent}"/>'
                      f'<child link="link{i}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
                      f'<dynamics damping="{damping}"/></joint>')
    return (f'<robot name="triple_pendulum"><link name="ground"/>{links}{"".join(joints)}'
            f'</robot>')


def table_6_1_eigenvalues(robot):
    """10 x the eigenvalues omega^2 of the pendulum linearised about q = 0 (Lynch's Table 6.1
    scaling), ascending: from robot.linearize, whose A = [[0, I], [-M^-1 K, ...]]."""
    n = robot.n
    A, _ = robot.linearize(np.zeros(n), np.zeros(n), robot.gravity_torques(np.zeros(n)))
    return np.sort(10.0 * np.linalg.eigvals(-A[n:, :n]).real)


def run(duration=10.0, dt=1e-3, out_dir="."):
    q0 = np.full(3, math.radians(30.0))
    runs, robots = {}, {}
    for label, c in (("undamped", 0.0), ("damped", 5.0)):
        robots[label] = robot = robodyn.load_urdf(pendulum_urdf(c), gravity=(0.0, -9.81, 0.0))
        runs[label] = robodyn.simulate(robot, None, None, duration=duration, dt=dt, q0=q0,
                                       control_rate="continuous")
    free, damped = runs["undamped"], runs["damped"]
    eigenvalues = table_6_1_eigenvalues(robots["undamped"])
    dE = np.diff(damped.energy)
    out = {
        "energy_drift": float(np.max(np.abs(free.energy - free.energy[0]))),
        "energy_scale": float(np.max(free.kinetic)),
        "damped_energy_rise": float(max(dE.max(), 0.0)),  # largest step up (0: monotone)
        "damped_energy_loss": float(damped.energy[0] - damped.energy[-1]),
        "damped_final_angles": damped.q[-1].copy(),
        "eigenvalues": eigenvalues,
        "undamped": free, "damped": damped,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    header = ("t,q1,q2,q3,energy,q1_damped,q2_damped,q3_damped,energy_damped")
    np.savetxt(out_dir / "triple_pendulum.csv",
               np.column_stack([free.t, free.q, free.energy, damped.q, damped.energy]),
               delimiter=",", header=header, comments="", fmt="%.12g")
    plot(free, damped, out, out_dir / "triple_pendulum.png")
    return out


def plot(free, damped, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6), layout="constrained")
    ax = fig.subplots(2, 2, sharex=True)
    for col, (res, label) in enumerate(((free, "no damping"), (damped, "damping 5 N m s"))):
        for i in range(3):
            ax[0, col].plot(res.t, np.degrees(res.q[:, i]), lw=1.2, label=f"q{i + 1}")
        ax[0, col].set_title(f"joint angles, {label}")
        ax[0, col].set_ylabel("angle (deg)")
        ax[1, col].plot(res.t, res.kinetic, lw=1.0, label="kinetic")
        ax[1, col].plot(res.t, res.potential, lw=1.0, label="potential")
        ax[1, col].plot(res.t, res.energy, lw=1.8, color="k", label="total")
        ax[1, col].set_ylabel("energy (J)")
        ax[1, col].set_xlabel("t (s)")
    for row in ax[:, 1]:
        row.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax[1, 0].set_title(f"energy: total constant to {out['energy_drift']:.1e} J")
    ax[1, 1].set_title("energy: the total falls monotonically")
    fig.suptitle("Lynch's triple pendulum (joints 1.0 m apart, mass centres at mid-link) from "
                 "30 degrees on every joint")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=10.0, help="simulated time in s (10)")
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print("linearised about q = 0, 10 omega^2: "
          + ", ".join(f"{x:.1f}" for x in out["eigenvalues"])
          + " (Lynch, Table 6.1: 46.0, 67.7, 198.6)")
    print(f"undamped: total energy constant to {out['energy_drift']:.2e} J "
          f"(kinetic up to {out['energy_scale']:.3g} J)")
    print(f"damped: energy lost {out['damped_energy_loss']:.4g} J, largest rise "
          f"{out['damped_energy_rise']:.1e} J, final angles (deg) "
          f"{np.array2string(np.degrees(out['damped_final_angles']), precision=3)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
