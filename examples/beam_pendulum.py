"""A 3500 kg pendulum hung from the middle of a flexible beam fixed at both ends (the Matlab
multibody toolbox thesis, sec. 5.1.4, Figures 5.23-5.25), as far as the text allows.

The thesis builds the beam from twenty nodes 0.2 m apart (2-D beam elements after Logan,
2007: E "210 MPA", area 0.1 m^2, second moment 1e-6 m^4, both end nodes fixed) and hangs a
3500 kg, 2 m pendulum from its middle; the middle node drops "about .1 meters" as the
pendulum swings through its lowest point, and the beam vibrates when the pendulum, at its
highest, unloads it.

What is assumed here (the node masses, the release angle and the element matrices are not in
the text):

- the beam acts on the pendulum through its midspan only: the fixed-fixed beam's midspan
  stiffness to a central load, k = 192 E I / L^3, with L = 19 x 0.2 m = 3.8 m; E = 210 GPa
  (steel; with the text's 210 MPa the static sag under 3500 kg would be 47 m, against the
  quoted 0.1 m), so k = 7.35e5 N/m; the midspan moves vertically only (its axial stiffness
  is four orders larger);
- the beam's mass at midspan: 13/35 of a steel beam's (7850 kg/m^3 x 0.1 m^2 x 3.8 m), the
  Rayleigh mass of its static deflection shape: 1107 kg;
- the pendulum: a point mass of 3500 kg 2 m from its pivot, released at rest horizontal.

The model: the midspan as a body on a vertical prismatic joint with a robodyn.Spring (k) to a
world point above it, the pendulum on a revolute joint about y at the midspan. Quasi-statically
the pendulum's tension at the bottom of a swing from the horizontal is 3 m g, which bends the
beam by 3 m g / k = 0.14 m.

Writes beam_pendulum.png and beam_pendulum.csv.

    python examples/beam_pendulum.py [--duration 5] [--dt 0.0005] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn
from robodyn.model.spec import Body, ModelSpec

E = 210e9               # Pa (the text: "210 MPA"; see the module docstring)
I_AREA = 1e-6           # m^4
AREA = 0.1              # m^2
SPAN = 19 * 0.2         # m, twenty nodes 0.2 m apart
K_BEAM = 192 * E * I_AREA / SPAN ** 3
BEAM_MASS = 13 / 35 * 7850 * AREA * SPAN   # kg at midspan (assumed: steel, Rayleigh mass)
PENDULUM_MASS = 3500.0  # kg
PENDULUM_LENGTH = 2.0   # m
G = 9.81


def beam_pendulum():
    mid = Body("beam_mid", "beam_deflection", -1, "prismatic", np.array([0.0, 0.0, 1.0]),
               np.eye(4), mass=BEAM_MASS, inertia=np.eye(3) * 1.0)
    bob = Body("pendulum", "swing", 0, "revolute", np.array([0.0, 1.0, 0.0]), np.eye(4),
               mass=PENDULUM_MASS, com=np.array([PENDULUM_LENGTH, 0.0, 0.0]),
               inertia=np.eye(3) * 1.0)
    robot = robodyn.Robot(ModelSpec([mid, bob], gravity=np.array([0.0, 0.0, -G]),
                                    name="beam_pendulum"))
    # the beam's midspan stiffness, as a spring along the joint to a point 1 m above
    return robot.with_forces([robodyn.Spring("beam_mid", None, None, [0.0, 0.0, 1.0],
                                             k=K_BEAM)])


def run(duration=5.0, dt=5e-4, out_dir="."):
    robot = beam_pendulum()
    res = robodyn.simulate(robot, duration=duration, dt=dt)
    deflection = res.q[:, 0]
    spring = np.array([robot.element_states(q, qd)[0, 2] for q, qd in zip(res.q, res.qd)])
    out = {
        "k": K_BEAM,
        "quasi_static_bottom": 3 * PENDULUM_MASS * G / K_BEAM,
        "static_sag": (PENDULUM_MASS + BEAM_MASS) * G / K_BEAM,
        "max_deflection": float(-deflection.min()),
        "energy_drift": float(np.max(np.abs(res.energy - res.energy[0]))),
        "energy_scale": float(np.max(res.kinetic)),
        "engine": res.stats["engine"],
        "result": res,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savetxt(out_dir / "beam_pendulum.csv",
               np.column_stack([res.t, deflection, res.q[:, 1], -spring, res.energy]),
               delimiter=",", header="t,midspan_z,swing_angle,beam_force,energy",
               comments="", fmt="%.12g")
    plot(res, out, out_dir / "beam_pendulum.png")
    return out


def plot(res, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6), layout="constrained")
    ax = fig.subplots(2, 1, sharex=True)
    ax[0].plot(res.t, res.q[:, 0], lw=1.2, label="midspan")
    ax[0].axhline(-out["quasi_static_bottom"], color="0.5", ls="--", lw=0.8,
                  label="-3 m g / k (quasi-static)")
    ax[0].set_ylabel("vertical displacement (m)")
    ax[0].set_title(f"beam midspan: lowest {-out['max_deflection']:.3f} m (thesis: about 0.1 m)")
    ax[1].plot(res.t, np.degrees(res.q[:, 1]), lw=1.2, label="pendulum angle")
    ax[1].set_ylabel("angle below +x (deg)")
    ax[1].set_xlabel("t (s)")
    ax[1].set_title(f"the swing (energy constant to {out['energy_drift']:.1e} J)")
    for a in ax:
        a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("A 3500 kg, 2 m pendulum on a fixed-fixed beam's midspan, the beam as a spring "
                 "(Matlab toolbox thesis, 5.1.4)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=5.0, help="simulated time in s (5)")
    p.add_argument("--dt", type=float, default=5e-4, help="RK4 step in s (0.0005)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"beam midspan stiffness {out['k']:.4g} N/m; lowest midspan point "
          f"{-out['max_deflection']:.4f} m (thesis: about 0.1 m; 3 m g / k = "
          f"{out['quasi_static_bottom']:.4f} m); energy constant to {out['energy_drift']:.1e} J")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
