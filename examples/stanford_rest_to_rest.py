"""Lynch's Stanford arm on a slow rest-to-rest motion: inverse dynamics, then forward dynamics
driven by those torques (Lynch 1988, sec. 5.2, eq. 5.2).

Every joint moves on Lynch's smooth profile (his eq. 5.2) over T = 10 s, from (0, 90 deg,
q3(0), 0, 0, 0) to (60 deg, 60 deg, q3(T), 60 deg, 60 deg, 60 deg). Two things differ from
Lynch: the arm is the bundled robodyn.robots.stanford_arm(), with the Robotics Toolbox's
parameters (models.DH.Stanford, after Paul 1981; robots/make_urdf.py gives every number),
not Lynch's, which are Kane & Levinson's (1983); and the sliding joint moves from q3 = 0.5 m
to 0.6 m where Lynch's goes from 0 to 0.1 m: the same 0.1 m stroke, shifted into the
Toolbox model's travel (0.3048 - 1.27 m). Three checks:

- the torques fed back into the forward dynamics reproduce the motion: the accelerations
  FD(q, qd, ID(q, qd, qdd)) = qdd to rounding at every instant, and integrating the forward
  dynamics under those torques (open loop) follows the motion to 1e-10 for the first 4 s. After
  that the error grows as e^(3 t) (about 1e-2 at 10 s with any integrator or step): held up by
  its shoulder, the arm is an inverted pendulum, and open loop nothing corrects the rounding
  errors it amplifies; a controller's feedback would (see computed_torque_wrong_model.py);
- the motion is so slow that the torques are nearly the gravity torques g(q);
- the first joint (vertical axis) and the last (the tool's axis, through its mass centre) carry
  no gravity torque.

Writes stanford_rest_to_rest.png and stanford_rest_to_rest.csv.

    python examples/stanford_rest_to_rest.py [--duration 10] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import robodyn
from robodyn import control, trajectories


def run(duration=10.0, dt=1e-3, out_dir="."):
    robot = robodyn.robots.stanford_arm()
    ref = trajectories.stanford_demo(duration, robot=robot)
    t = np.linspace(0.0, duration, int(round(duration / dt)) + 1)
    Q, QD, QDD = ref.sample(t)
    tau = robot.inverse_dynamics(Q, QD, QDD)
    g = robot.gravity_torques(Q)
    replay = robodyn.simulate(robot, control.Feedforward(robot, saturate=False), ref,
                              duration=duration, dt=dt, control_rate="continuous")
    scale = np.max(np.abs(g), axis=0)
    no_gravity = scale <= 1e-12 * np.max(scale)
    early = replay.t <= min(4.0, duration)
    out = {
        "fd_of_id_error": float(np.max(np.abs(robot.forward_dynamics(Q, QD, tau) - QDD))),
        "replay_error_4s": float(np.max(np.abs(replay.error[early]))),
        "replay_error": float(np.max(np.abs(replay.error))),
        "no_gravity_joints": [robot.joint_names[i] for i in np.flatnonzero(no_gravity)],
        # dynamic part of the torques, relative to each joint's largest gravity torque
        "dynamic_fraction": np.where(no_gravity, np.nan, np.max(np.abs(tau - g), axis=0)
                                     / np.where(no_gravity, 1.0, scale)),
        "gravity_scale": scale,
        "last_joint_gravity": float(np.max(np.abs(g[:, 5]))),
        "t": t, "tau": tau, "g": g,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = robot.joint_names
    header = ("t," + ",".join(f"q_{j}" for j in names) + "," + ",".join(f"tau_{j}" for j in names)
              + "," + ",".join(f"g_{j}" for j in names) + ","
              + ",".join(f"replay_q_{j}" for j in names))
    np.savetxt(out_dir / "stanford_rest_to_rest.csv",
               np.column_stack([t, Q, tau, g, replay.q]), delimiter=",", header=header,
               comments="", fmt="%.12g")
    plot(robot, t, tau, g, replay, out, out_dir / "stanford_rest_to_rest.png")
    return out


def plot(robot, t, tau, g, replay, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 7), layout="constrained")
    ax = fig.subplots(2, 3, sharex=True).ravel()
    for i, name in enumerate(robot.joint_names):
        unit = "N" if robot.spec.bodies[i].joint_type == "prismatic" else "N m"
        ax[i].plot(t, tau[:, i], color="C0", lw=1.8, label="inverse dynamics")
        ax[i].plot(t, g[:, i], color="k", lw=0.9, ls="--", label="gravity g(q)")
        ax[i].set_title(f"{name}: no gravity torque" if name in out["no_gravity_joints"] else
                        f"{name}: dynamic part {100 * out['dynamic_fraction'][i]:.2g} % of g",
                        fontsize="medium")
        ax[i].set_ylabel(f"{'force' if unit == 'N' else 'torque'} ({unit})")
        ax[i].ticklabel_format(axis="y", useOffset=False)
    ax[0].legend(loc="best", fontsize="small")
    for a in ax[3:]:
        a.set_xlabel("t (s)")
    fig.suptitle("Stanford arm (Robotics Toolbox parameters), Lynch's 10 s rest-to-rest motion "
                 "with q3 0.5 -> 0.6 m (Lynch: 0 -> 0.1 m)\ninverse-dynamics torques "
                 "(solid) and gravity's (dashed); fed to the forward dynamics they give back "
                 f"qdd to {out['fd_of_id_error']:.0e}")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=10.0, help="motion time T in s (10)")
    p.add_argument("--dt", type=float, default=1e-3, help="time step in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"FD(q, qd, ID(q, qd, qdd)) - qdd: {out['fd_of_id_error']:.1e}; open-loop replay "
          f"error {out['replay_error_4s']:.1e} over the first 4 s, {out['replay_error']:.1e} "
          f"over the whole motion (the unstable open loop amplifies rounding as e^(3 t))")
    print("dynamic part of the torques relative to gravity, per joint: "
          + ", ".join("-" if np.isnan(f) else f"{100 * f:.2g} %" for f in out["dynamic_fraction"]))
    print(f"joints without gravity torque: {', '.join(out['no_gravity_joints'])} (last joint: "
          f"{out['last_joint_gravity']:.1e} N m)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
