"""LQR holding an arm at a pose, from robodyn's analytical linearisation.

The Intelledex 605 is linearised about a pose q* at rest with the gravity torque
tau* = g(q*) (robot.linearize: A, B of x = [q; qd]); scipy.linalg.solve_continuous_are gives
the Riccati solution P and the gain K = R^-1 B' P. The nonlinear arm is then simulated
(robodyn.simulate, RK4 at 1 kHz) from a pose 0.2 rad off q* under tau = tau* - K (x - x*).

The linearisation's slowest closed-loop pole and the final error show that the pose is held.
Writes lqr_hold.png (joint errors and torques) and lqr_hold.csv (t, q, qd, tau).

    python examples/lqr_hold.py [--duration 3] [--out-dir .]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.linalg

import robodyn


def lqr_gain(robot, q_star, omega=10.0, q_weight=1.0, qd_weight=0.001):
    """K and tau* for holding q_star: LQR on the linearisation at (q*, 0, g(q*)).

    The torque weights follow each joint's inertia m_i = M(q*)[i, i] so that every joint gets
    a closed-loop bandwidth near ``omega`` rad/s (a decoupled double integrator m x'' = u with
    weights q, r has its poles at about (q / (r m^2))^(1/4)): r_i = q / (omega^4 m_i^2). The
    wrist's tiny inertia would otherwise get poles far beyond what a 1 kHz loop can hold."""
    n = robot.n
    tau_star = robot.gravity_torques(q_star)
    A, B = robot.linearize(q_star, np.zeros(n), tau_star)
    m = np.diag(robot.mass_matrix(q_star))
    Q = np.diag(np.r_[np.full(n, q_weight), np.full(n, qd_weight)])
    R = np.diag(q_weight / (omega ** 4 * m ** 2))
    P = scipy.linalg.solve_continuous_are(A, B, Q, R)
    K = np.linalg.solve(R, B.T @ P)
    return K, tau_star, A, B


Q_STAR = np.array([0.3, 1.2, -0.6, 0.2, 0.7, 0.1])  # rad, the pose held
OFFSET = 0.2 * np.array([1, -1, 1, -1, 1, -1])        # rad, the start's offset from it


def run(duration=3.0, out_dir="."):
    robot = robodyn.robots.intelledex_605()
    n = robot.n
    K, tau_star, A, B = lqr_gain(robot, Q_STAR)
    closed = np.linalg.eigvals(A - B @ K)
    x_star = np.r_[Q_STAR, np.zeros(n)]

    def lqr(t, q, qd, ref):
        return tau_star - K @ (np.r_[q, qd] - x_star)

    res = robodyn.simulate(robot, controller=lqr, duration=duration, dt=1e-3,
                           q0=Q_STAR + OFFSET, qd0=np.zeros(n))
    err = res.q - Q_STAR
    out = {
        "slowest_pole": float(closed.real.max()),
        "closed_loop_poles": closed,
        "initial_error": float(np.abs(err[0]).max()),
        "final_error": float(np.abs(err[-1]).max()),
        "result": res,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = robot.joint_names
    header = ",".join(["t"] + [f"q_{j}" for j in names] + [f"qd_{j}" for j in names]
                      + [f"tau_{j}" for j in names])
    np.savetxt(out_dir / "lqr_hold.csv", np.column_stack([res.t, res.q, res.qd, res.tau]),
               delimiter=",", header=header, comments="", fmt="%.12g")
    plot(names, res, err, out, out_dir / "lqr_hold.png")
    return out


def plot(names, res, err, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 6), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    for i, name in enumerate(names):
        ax1.plot(res.t, err[:, i], color=f"C{i}", label=name)
        ax2.plot(res.t, res.tau[:, i], color=f"C{i}", label=name)
    ax1.set_ylabel("q - q* (rad)")
    ax1.set_title(f"joint errors (final max |q - q*| {out['final_error']:.1e} rad)")
    ax2.set_ylabel("torque (N m)")
    ax2.set_xlabel("t (s)")
    ax2.set_title("joint torques (tau* - K (x - x*))")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    fig.suptitle(f"Intelledex 605 held at q* by LQR (slowest closed-loop pole "
                 f"{out['slowest_pole']:.2f} 1/s)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0, help="simulated time in s (3)")
    ap.add_argument("--out-dir", "--out", dest="out_dir", default=".",
                    help="directory for the PNG and the CSV (.)")
    args = ap.parse_args(argv)
    out = run(args.duration, args.out_dir)
    print(f"closed-loop poles: max real part {out['slowest_pole']:.3f} 1/s; "
          f"final |q - q*| = {out['final_error']:.2e} rad (start {out['initial_error']:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
