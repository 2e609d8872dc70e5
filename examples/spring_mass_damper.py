"""A 5 lbm mass hung on a 50 lbf/ft spring, with and without a damper (the Matlab multibody
toolbox thesis, sec. 4.1.3).

The thesis hangs a five-pound body from a spring "set exactly at the initial length of the
spring" and lets it go (its Figures 4.2-4.5: displacement and net force over 10 s). Released
from rest at the unstretched length, the mass oscillates about the static deflection mg/k =
5 lbf / (50 lbf/ft) = 0.1 ft:

    x(t) = -(mg/k) (1 - cos w t),   w = sqrt(k/m) = sqrt(g / 0.1 ft) = 17.94 rad/s,

a period of 0.350 s and a peak of 0.2 ft below the start. With a damper the oscillation
decays to x = -mg/k. The damping constant is not legible in the text: we take a damping ratio
of 0.05 (c = 4.07 N s/m); the damped closed form is
x(t) = -(mg/k) (1 - e^(-z w t) (cos w_d t + z / sqrt(1 - z^2) sin w_d t)).

The model: one prismatic joint along z carrying the mass, a robodyn.Spring from the mass to a
world point 1 ft above it (rest length: the distance at q = 0), standard gravity. Simulated in
the C++ loop, RK4 at 0.1 ms.

Writes spring_mass_damper.png and spring_mass_damper.csv (lengths in ft).

    python examples/spring_mass_damper.py [--duration 10] [--dt 0.0001] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn
from robodyn.model.spec import Body, ModelSpec

LBM = 0.45359237           # kg
LBF = LBM * 9.80665        # N
FT = 0.3048                # m
G = 9.80665                # m/s^2 (standard gravity: a pound-mass weighs a pound-force)
MASS = 5 * LBM             # kg
K = 50 * LBF / FT          # N/m
ZETA = 0.05                # assumed damping ratio (the thesis's c is not legible)
C = 2 * ZETA * math.sqrt(K * MASS)


def hanging_mass(c=0.0):
    """The mass on its slide with the spring (and damper c, N s/m) to a point 1 ft above."""
    spec = ModelSpec([Body("mass", "drop", -1, "prismatic", np.array([0.0, 0.0, 1.0]),
                           np.eye(4), mass=MASS, inertia=np.eye(3) * 1e-4)],
                     gravity=np.array([0.0, 0.0, -G]), name="spring_mass_damper")
    return robodyn.Robot(spec).with_forces([
        robodyn.Spring("mass", [0.0, 0.0, 0.0], None, [0.0, 0.0, FT], k=K, c=c)])


def closed_form(t, zeta=0.0):
    """x(t) in m of the mass released at rest from the unstretched length."""
    w = math.sqrt(K / MASS)
    xs = MASS * G / K
    wd = w * math.sqrt(1 - zeta ** 2)
    return -xs * (1 - np.exp(-zeta * w * t) * (np.cos(wd * t)
                                              + zeta / math.sqrt(1 - zeta ** 2) * np.sin(wd * t)))


def run(duration=10.0, dt=1e-4, out_dir="."):
    runs = {label: robodyn.simulate(hanging_mass(c), duration=duration, dt=dt)
            for label, c in (("undamped", 0.0), ("damped", C))}
    free, damped = runs["undamped"], runs["damped"]
    t = free.t
    exact, exact_d = closed_form(t), closed_form(t, ZETA)
    w = math.sqrt(K / MASS)
    out = {
        "static_deflection_ft": MASS * G / K / FT,
        "period": 2 * math.pi / w,
        "peak_ft": float(-free.q[:, 0].min() / FT),
        "error_ft": float(np.max(np.abs(free.q[:, 0] - exact)) / FT),
        "damped_error_ft": float(np.max(np.abs(damped.q[:, 0] - exact_d)) / FT),
        "damped_final_ft": float(damped.q[-1, 0] / FT),
        "energy_drift": float(np.max(np.abs(free.energy - free.energy[0]))),
        "energy_scale": float(np.max(free.kinetic)),
        "engine": free.stats["engine"],
        "undamped": free, "damped": damped,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savetxt(out_dir / "spring_mass_damper.csv",
               np.column_stack([t, free.q[:, 0] / FT, exact / FT, damped.q[:, 0] / FT,
                                exact_d / FT, free.energy, damped.energy]),
               delimiter=",", header="t,x_ft,x_exact_ft,x_damped_ft,x_damped_exact_ft,"
               "energy,energy_damped", comments="", fmt="%.12g")
    plot(out, out_dir / "spring_mass_damper.png")
    return out


def plot(out, path):
    from matplotlib.figure import Figure

    free, damped = out["undamped"], out["damped"]
    t = free.t
    fig = Figure(figsize=(11, 6), layout="constrained")
    ax = fig.subplots(2, 1, sharex=True)
    ax[0].plot(t, free.q[:, 0] / FT, lw=1.2, label="no damping")
    ax[0].plot(t, closed_form(t) / FT, "k--", lw=0.8, label="-(mg/k)(1 - cos wt)")
    ax[0].plot(t, damped.q[:, 0] / FT, lw=1.2, label=f"damping ratio {ZETA}")
    ax[0].axhline(-out["static_deflection_ft"], color="0.5", lw=0.8, label="-mg/k = -0.1 ft")
    ax[0].set_ylabel("x (ft)")
    ax[0].set_title(f"displacement: peak {out['peak_ft']:.6f} ft, period {out['period']:.4f} s, "
                    f"closed form to {out['error_ft']:.1e} ft")
    ax[1].plot(t, free.energy - free.energy[0], lw=1.2, label="no damping")
    ax[1].plot(t, damped.energy - damped.energy[0], lw=1.2, label="damped")
    ax[1].set_ylabel("E(t) - E(0) (J)")
    ax[1].set_xlabel("t (s)")
    ax[1].set_title("kinetic + gravity + spring energy")
    for a in ax:
        a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("5 lbm on a 50 lbf/ft spring released at its unstretched length "
                 "(Matlab toolbox thesis, sec. 4.1.3)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=10.0, help="simulated time in s (10)")
    p.add_argument("--dt", type=float, default=1e-4, help="RK4 step in s (0.0001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"static deflection mg/k = {out['static_deflection_ft']:.6f} ft, period "
          f"{out['period']:.4f} s, peak {out['peak_ft']:.6f} ft (thesis: 0.2 ft)")
    print(f"x(t) = -(mg/k)(1 - cos wt) to {out['error_ft']:.2e} ft; damped run ends at "
          f"{out['damped_final_ft']:.6f} ft (closed form to {out['damped_error_ft']:.2e} ft)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
