"""Nie's Intelledex 605 on the thesis test motion: the joint torques, and the check the thesis
makes with them (Nie 1988, Ch. IV; the motion of shared/spec/robots.md).

The six joints move from (0, pi/2, 0, 0, 0, 0) to (pi/3, ..., pi/3) in T = 2 s on the smooth
rest-to-rest profile s(t) = t - T/(2 pi) sin(2 pi t / T). Inverse dynamics along the motion
gives the torques; integrating the forward dynamics under exactly those torques (open loop,
from the same start) must arrive at (pi/3, ..., pi/3) again. Writes intelledex_thesis_motion.png
(positions and torques) and intelledex_thesis_motion.csv (t, q, tau).

    python examples/intelledex_thesis_motion.py [--duration 2] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import robodyn
from robodyn import control, trajectories


def run(duration=2.0, dt=1e-3, out_dir="."):
    robot = robodyn.robots.intelledex_605()
    ref = trajectories.thesis_motion(duration, robot=robot)
    t = np.linspace(0.0, duration, int(round(duration / dt)) + 1)
    Q, QD, QDD = ref.sample(t)
    tau = robot.inverse_dynamics(Q, QD, QDD)  # one batch call: (len(t), 6)
    # the same torques fed to the forward dynamics, open loop, evaluated at every RK4 stage
    replay = robodyn.simulate(robot, control.Feedforward(robot, saturate=False), ref,
                              duration=duration, dt=dt, control_rate="continuous")
    out = {
        "final_error": float(np.max(np.abs(replay.q[-1] - ref.end))),
        "max_tracking_error": float(np.max(np.abs(replay.error))),
        "max_torque": np.max(np.abs(tau), axis=0),
        "t": t, "tau": tau,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = robot.joint_names
    header = "t," + ",".join(f"q_{j}" for j in names) + "," + ",".join(f"tau_{j}" for j in names)
    np.savetxt(out_dir / "intelledex_thesis_motion.csv", np.column_stack([t, Q, tau]),
               delimiter=",", header=header, comments="", fmt="%.12g")
    plot(t, Q, tau, replay, names, out, out_dir / "intelledex_thesis_motion.png")
    return out


def plot(t, Q, tau, replay, names, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 7), layout="constrained")
    ax = fig.subplots(2, 1, sharex=True)
    for i, name in enumerate(names):
        ax[0].plot(t, Q[:, i], color=f"C{i}", lw=1.8, label=name)
        replayed, = ax[0].plot(replay.t, replay.q[:, i], color="k", lw=0.8, ls="--",
                               label="forward dynamics\nunder those torques")
        ax[1].plot(t, tau[:, i], color=f"C{i}", lw=1.5, label=name)
    ax[0].set_ylabel("q (rad)")
    ax[0].set_title("thesis motion, and the forward dynamics driven by its torques "
                    f"(final error {out['final_error']:.1e} rad)")
    ax[1].set_ylabel("joint torque (N m)")
    ax[1].set_xlabel("t (s)")
    ax[1].set_title("inverse dynamics along the motion")
    ax[0].legend(handles=[replayed], loc="upper left", bbox_to_anchor=(1.01, 1.0),
                 frameon=False)
    ax[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("Intelledex 605 (Nie 1988): torques of the thesis test motion")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=2.0, help="motion time T in s (2)")
    p.add_argument("--dt", type=float, default=1e-3, help="time step in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"peak torques (N m): {np.array2string(out['max_torque'], precision=2)}")
    print(f"forward dynamics under the inverse-dynamics torques ends {out['final_error']:.2e} "
          f"rad from (pi/3, ..., pi/3)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
