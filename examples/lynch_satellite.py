"""Lynch's eight-degree-of-freedom satellite, 10 s of free motion (Lynch 1988, sec. 5.3).

A 20 kg base carries two 10 kg one-link arms hinged about its z axis. The arms start at
q2 = -pi/3, q3 = +pi/3 and the base turns at 2 rad/s about its y axis; no gravity, no joint
torques. The thesis reports the joint angles oscillating about +-pi/2 (centrifugal effects),
the base's spin oscillating, and constant angular momentum. This script checks each, and
q3 = -q2 (the system is symmetric), and writes lynch_satellite.png and lynch_satellite.csv.

    python examples/lynch_satellite.py [--duration 10] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn


def run(duration=10.0, dt=1e-3, out_dir="."):
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    res = robodyn.simulate(robot, q0=q0, qd0=v0, duration=duration, dt=dt,
                           control_rate="continuous", integrator="rk4")
    i2, i3 = res.q_names.index("q2"), res.q_names.index("q3")
    q2, q3 = res.q[:, i2], res.q[:, i3]
    w = res.qd[:, :3]  # base angular velocity, base frame
    h = res.momentum  # [angular about the world origin; linear], world frame
    # about another fixed point P: h_P = h_O - P x p (the linear momentum p is zero here)
    P = np.array([1.0, -2.0, 0.5])
    h_P = h[:, :3] - np.cross(P, h[:, 3:])
    out = {
        "momentum_drift": res.momentum_drift[0],
        "momentum_drift_about_P": float(np.max(np.linalg.norm(h_P - h_P[0], axis=1))),
        "momentum": float(np.linalg.norm(h[0, :3])),
        "q2_range": (float(q2.min()), float(q2.max())),
        "q2_mid": float(0.5 * (q2.min() + q2.max())),
        "q3_mid": float(0.5 * (q3.min() + q3.max())),
        "symmetry": float(np.max(np.abs(q2 + q3))),
        "wy_range": (float(w[:, 1].min()), float(w[:, 1].max())),
        "w_off_axis": float(np.max(np.abs(w[:, [0, 2]]))),
        "result": res,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    res.to_csv(out_dir / "lynch_satellite.csv")
    plot(res, q2, q3, w, h, out_dir / "lynch_satellite.png")
    return out


def plot(res, q2, q3, w, h, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 8), layout="constrained")
    ax = fig.subplots(3, 1, sharex=True)
    ax[0].plot(res.t, q2, label="q2")
    ax[0].plot(res.t, q3, label="q3")
    for y in (-math.pi / 2, math.pi / 2):
        ax[0].axhline(y, color="k", lw=0.6, ls="--")
    ax[0].set_ylabel("arm angle (rad)")
    ax[0].set_title("arm angles (dashed: +-pi/2)")
    ax[0].legend(loc="right")
    for i, name in enumerate("xyz"):
        ax[1].plot(res.t, w[:, i], label=f"w{name}")
    ax[1].set_ylabel("rad/s")
    ax[1].set_title("base angular velocity (base frame)")
    ax[1].legend(loc="right")
    for i, name in enumerate("xyz"):
        ax[2].plot(res.t, h[:, i] - h[0, i], label=f"h{name} - h{name}(0)")
    ax[2].set_ylabel("N m s")
    ax[2].set_title(f"angular momentum about the world origin, change from "
                    f"h(0) = {np.round(h[0, :3], 6).tolist()}")
    ax[2].legend(loc="right")
    ax[2].set_xlabel("t (s)")
    fig.suptitle("Lynch's satellite, free motion (RK4)")
    fig.savefig(path, dpi=100)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--out-dir", "--out", dest="out_dir", default=".",
                   help="directory for the PNG, CSV (and GIF) files")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out_dir)
    print(out["result"].summary())
    print(f"angular momentum |h| = {out['momentum']:.6g} N m s; drift about the origin "
          f"{out['momentum_drift']:.2e}, about (1, -2, 0.5) m {out['momentum_drift_about_P']:.2e}")
    lo, hi = out["q2_range"]
    print(f"q2 oscillates in [{lo:.4f}, {hi:.4f}] rad, about {out['q2_mid']:.4f} "
          f"(-pi/2 = {-math.pi / 2:.4f}); q3 about {out['q3_mid']:.4f}; "
          f"max |q2 + q3| = {out['symmetry']:.1e}")
    lo, hi = out["wy_range"]
    print(f"base spin w_y oscillates in [{lo:.4f}, {hi:.4f}] rad/s; "
          f"max |w_x|, |w_z| = {out['w_off_axis']:.1e}")
    return out


if __name__ == "__main__":
    main()
