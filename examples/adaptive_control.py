"""Slotine-Li adaptive computed torque against plain computed torque with a wrong model.

The plant is the bundled Intelledex 605; both controllers get a model whose masses and
inertias are wrong by +-30 % (alternating per link) and track the thesis motion
(robodyn.trajectories.thesis_motion, 2 s, then held). Plain computed torque (kp 100 1/s^2,
kd 20 1/s) keeps its wrong model; the adaptive controller (robodyn.control.AdaptiveComputedTorque)
updates its parameter estimate from the tracking error, and its tracking error ends far below
plain computed torque's. The estimates need not reach the true values: one motion does not
excite every parameter.

Writes adaptive_control.png (tracking errors, estimated masses) and adaptive_control.csv (t,
the error norms of both controllers, the estimated masses).

    python examples/adaptive_control.py [--duration 4] [--out-dir .]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import robodyn
from robodyn.control import AdaptiveComputedTorque, ComputedTorque


def wrong_model(robot, error=0.3):
    """The robot with masses and rotational inertias scaled by 1 +- error (alternating)."""
    spec = robot.spec
    for k, b in enumerate(spec.bodies):
        f = 1 + error if k % 2 == 0 else 1 - error
        b.mass *= f
        b.inertia = b.inertia * f
    return robodyn.Robot(spec)


def run(duration=4.0, out_dir=".", error=0.3, lam=10.0, gamma=20.0, kp=100.0, kd_ct=20.0):
    plant = robodyn.robots.intelledex_605()
    model = wrong_model(plant, error)
    ref = robodyn.trajectories.thesis_motion()
    # kd in torque units: 20 / s times each joint's inertia (the wrist's is tiny)
    kd = 20.0 * np.diag(plant.mass_matrix(ref(0.0)[0]))
    ct = ComputedTorque(model, kp=kp, kd=kd_ct, saturate=False)
    ad = AdaptiveComputedTorque(model, lam=lam, kd=kd, gamma=gamma, saturate=False)
    t_est, estimates = [], []

    def adaptive(t, q, qd, r):
        tau = ad(t, q, qd, r)
        t_est.append(t)
        estimates.append(ad.estimate.copy())
        return tau

    res_ct = robodyn.simulate(plant, controller=ct, reference=ref, duration=duration)
    res_ad = robodyn.simulate(plant, controller=adaptive, reference=ref, duration=duration)
    e_ct = np.linalg.norm(res_ct.q - res_ct.q_ref, axis=1)
    e_ad = np.linalg.norm(res_ad.q - res_ad.q_ref, axis=1)
    # the estimate in force at each recorded instant (the last update at or before it)
    k = np.clip(np.searchsorted(t_est, res_ad.t + 1e-12, side="right") - 1, 0, None)
    est = np.array(estimates)[k]
    n = plant.n
    masses = est[:, 0:10 * n:10]
    out = {
        "rms_computed_torque": float(np.sqrt(np.mean(e_ct ** 2))),
        "rms_adaptive": float(np.sqrt(np.mean(e_ad ** 2))),
        "t": res_ad.t, "error_computed_torque": e_ct, "error_adaptive": e_ad,
        "estimates": np.array(estimates), "masses": masses,
        "plant": plant, "model": model, "results": (res_ct, res_ad),
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = [b.name for b in plant.spec.bodies]  # joint order, as the parameters
    header = ",".join(["t", "error_computed_torque", "error_adaptive"]
                      + [f"mass_{name}" for name in names])
    np.savetxt(out_dir / "adaptive_control.csv",
               np.column_stack([res_ad.t, e_ct, e_ad, masses]), delimiter=",", header=header,
               comments="", fmt="%.12g")
    plot(out, names, out_dir / "adaptive_control.png", error)
    return out


def plot(out, names, path, error):
    from matplotlib.figure import Figure

    plant, t = out["plant"], out["t"]
    fig = Figure(figsize=(10, 7), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.semilogy(t, out["error_computed_torque"] + 1e-12,
                 label="computed torque,\nwrong model")
    ax1.semilogy(t, out["error_adaptive"] + 1e-12, label="Slotine-Li adaptive,\nsame model")
    ax1.set_ylabel("|q_ref - q| (rad)")
    ax1.set_ylim(bottom=1e-6)  # both start on the reference (0 at t = 0)
    ax1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax1.set_title(f"tracking error (RMS: computed torque {out['rms_computed_torque']:.1e} rad, "
                  f"adaptive {out['rms_adaptive']:.1e} rad)")
    for i, name in enumerate(names):  # wide to narrow: lines that coincide stay visible
        ax2.plot(t, out["masses"][:, i] / plant.masses[i], color=f"C{i}", label=name,
                 lw=1.2 * (len(names) - i))
    ax2.axhline(1.0, color="k", lw=0.6, ls="--", label="true mass")
    ax2.set_ylabel("estimated / true mass")
    ax2.set_xlabel("t (s)")
    ax2.set_title("the adaptive controller's mass estimates, per link\n(the motion need not "
                  "excite every parameter: some stay where they started)")
    ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    fig.suptitle(f"Intelledex 605 on the thesis motion, controller's masses and inertias off "
                 f"by +-{100 * error:.0f} %")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=4.0, help="simulated time in s (4)")
    p.add_argument("--out-dir", "--out", dest="out_dir", default=".",
                   help="directory for the PNG and the CSV (.)")
    args = p.parse_args(argv)
    out = run(args.duration, args.out_dir)
    print(f"RMS tracking error: computed torque {out['rms_computed_torque']:.3e} rad, "
          f"adaptive {out['rms_adaptive']:.3e} rad")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
