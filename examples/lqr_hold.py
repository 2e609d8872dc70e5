"""LQR holding an arm at a pose, from robodyn's analytical linearisation.

The Intelledex 605 is linearised about a pose q* at rest with the gravity torque
tau* = g(q*) (robot.linearize: A, B of x = [q; qd]); scipy.linalg.solve_continuous_are gives
the Riccati solution P and the gain K = R^-1 B' P. The nonlinear arm is then simulated
(robodyn.simulate, RK4 at 1 kHz) from a pose 0.2 rad off q* under tau = tau* - K (x - x*).

    python examples/lqr_hold.py [--duration 3] [--out lqr_hold]

writes lqr_hold.png (joint errors and torques) and lqr_hold.csv (t, q, qd, tau).
"""

import argparse
import pathlib

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--out", default="lqr_hold", help="output prefix (.png, .csv)")
    args = ap.parse_args(argv)

    robot = robodyn.robots.intelledex_605()
    n = robot.n
    q_star = np.array([0.3, 1.2, -0.6, 0.2, 0.7, 0.1])
    K, tau_star, A, B = lqr_gain(robot, q_star)
    closed = np.linalg.eigvals(A - B @ K)
    x_star = np.r_[q_star, np.zeros(n)]

    def lqr(t, q, qd, ref):
        return tau_star - K @ (np.r_[q, qd] - x_star)

    q0 = q_star + 0.2 * np.array([1, -1, 1, -1, 1, -1])
    res = robodyn.simulate(robot, controller=lqr, duration=args.duration, dt=1e-3, q0=q0,
                           qd0=np.zeros(n))
    err = res.q - q_star
    out = pathlib.Path(args.out)
    header = ",".join(["t"] + [f"q{i}" for i in range(n)] + [f"qd{i}" for i in range(n)] +
                      [f"tau{i}" for i in range(n)])
    np.savetxt(out.with_suffix(".csv"), np.column_stack([res.t, res.q, res.qd, res.tau]),
               delimiter=",", header=header, comments="")

    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 6))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.plot(res.t, err)
    ax1.set_ylabel("q - q* (rad)")
    ax1.set_title(f"Intelledex 605 held by LQR (slowest closed-loop pole "
                  f"{closed.real.max():.2f} 1/s)")
    ax2.plot(res.t, res.tau)
    ax2.set_ylabel("torque (N m)")
    ax2.set_xlabel("t (s)")
    fig.savefig(out.with_suffix(".png"), dpi=100)
    final = float(np.abs(err[-1]).max())
    print(f"closed-loop poles: max real part {closed.real.max():.3f} 1/s; "
          f"final |q - q*| = {final:.2e} rad")
    return res, closed


if __name__ == "__main__":
    main()
