"""The Matlab multibody toolbox's Ackermann steering linkage: the inner wheel turns more.

After the toolbox thesis's example 5.1.3 (a rack and pinion of a small FSAE car; its
dimensions are only in a CAD sketch, these are ours): kingpins w = 1.2 m apart, wheelbase
l = 1.6 m, steering arms 0.15 m long pointing back and inwards at the rear axle's centre (the
classic Ackermann trapezoid), a rack behind the axle whose ends drive the arms through 0.3 m
tie rods. The tree is the rack (prismatic along x), the two uprights (revolute about z at the
kingpins) and the two tie rods (revolute about z at the rack's ends); two planar closures
(rows x and y) join each tie rod's end to its steering arm.

Kinematic analysis (``robodyn.constraints.kinematic_analysis``) with the rack driven over
+-RACK m: the wheel on the inside of the turn always turns more than the outside one, and
both angles are compared with the ideal Ackermann condition cot(d_o) - cot(d_i) = w / l (the
inner angle it asks for, given the outer one): the linkage approximates it.

Writes ackermann.png and ackermann.csv.

    python examples/ackermann.py [--duration 4] [--dt 0.01] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn
from robodyn.constraints.assembly import kinematic_analysis

W, WHEELBASE = 1.2, 1.6   # kingpin spacing and wheelbase (m)
ARM, TIE = 0.15, 0.3      # steering arm and tie rod lengths (m)
RACK = 0.06               # rack travel each way (m)
BETA = math.atan2(W / 2, WHEELBASE)  # the arms point at the rear axle's centre


def _arm_tip(side):
    """The steering arm's tip in the upright's frame (side -1 left, +1 right)."""
    return np.array([-side * ARM * math.sin(BETA), -ARM * math.cos(BETA), 0.0])


def _link(name, mass=0.5):
    return (f'<link name="{name}"><inertial><mass value="{mass}"/><inertia ixx="0.01" '
            'iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def ackermann_urdf():
    half_rack = W / 2 - ARM * math.sin(BETA) - TIE
    rack_y = -ARM * math.cos(BETA)
    joints = ['<joint name="rack" type="prismatic"><parent link="chassis"/>'
              '<child link="rack_link"/>'
              f'<origin xyz="0 {rack_y} 0"/><axis xyz="1 0 0"/>'
              '<limit lower="-0.2" upper="0.2" effort="0" velocity="0"/></joint>']
    for side, name in ((-1, "left"), (1, "right")):
        joints.append(f'<joint name="{name}_steer" type="continuous"><parent link="chassis"/>'
                      f'<child link="{name}_upright"/><origin xyz="{side * W / 2} 0 0"/>'
                      '<axis xyz="0 0 1"/></joint>')
        # the tie rod points outwards along x from the rack's end at zero angle
        joints.append(f'<joint name="{name}_tie" type="continuous"><parent link="rack_link"/>'
                      f'<child link="{name}_tie_rod"/><origin xyz="{side * half_rack} 0 0" '
                      f'rpy="0 0 {0.0 if side > 0 else math.pi}"/><axis xyz="0 0 1"/></joint>')
    links = "".join(_link(n) for n in ("rack_link", "left_upright", "right_upright",
                                       "left_tie_rod", "right_tie_rod"))
    return f'<robot name="ackermann"><link name="chassis"/>{links}{"".join(joints)}</robot>'


def ackermann():
    robot = robodyn.load_urdf(ackermann_urdf(), gravity=(0.0, 0.0, 0.0))
    loops = []
    for side, name in ((-1, "left"), (1, "right")):
        arm, tie = np.eye(4), np.eye(4)
        arm[:3, 3] = _arm_tip(side)
        tie[:3, 3] = [TIE, 0.0, 0.0]
        loops.append(robodyn.LoopConstraint(f"{name}_upright", f"{name}_tie_rod", frame1=arm,
                                            frame2=tie, kind="axes", axes=("x", "y"),
                                            name=f"{name}_tie_end"))
    return robodyn.ConstrainedRobot(robot, loops, actuated=["rack"])


def ideal_inner(outer):
    """The inner angle of the Ackermann condition cot(d_o) - cot(d_i) = w / l (magnitudes)."""
    return np.arctan(1.0 / (1.0 / np.tan(outer) - W / WHEELBASE))


def run(duration=4.0, dt=0.01, out_dir="."):
    system = ackermann()
    t = np.arange(int(round(duration / dt)) + 1) * dt
    # one sweep of the rack: 0 -> +RACK -> -RACK -> 0 over the duration
    w = 2 * math.pi / duration
    x, xd, xdd = RACK * np.sin(w * t), RACK * w * np.cos(w * t), -RACK * w * w * np.sin(w * t)
    Q, QD, QDD = kinematic_analysis(system, ["rack"], x, xd, xdd, q_guess=np.zeros(5))
    names = system.robot.joint_names
    left, right = Q[:, names.index("left_steer")], Q[:, names.index("right_steer")]
    # the rack to +x pushes the arms (behind the kingpins) to +x: both wheels turn
    # anticlockwise, a left turn, and the left wheel is on the inside
    inner = np.where(x > 0, np.abs(left), np.abs(right))
    outer = np.where(x > 0, np.abs(right), np.abs(left))
    moving = np.abs(x) > 1e-3 * RACK
    ideal = ideal_inner(np.maximum(outer, 1e-12))
    out = {
        "inner_minus_outer_min": float((inner - outer)[moving].min()),
        "max_inner_deg": float(np.degrees(inner.max())),
        "max_outer_deg": float(np.degrees(outer.max())),
        "ackermann_error_deg": float(np.degrees(np.abs(inner - ideal)[moving].max())),
        "max_residual": float(max(np.abs(system.residual(q)).max() for q in Q)),
        "t": t, "rack": x, "left": left, "right": right, "inner": inner, "outer": outer,
        "ideal_inner": ideal,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savetxt(out_dir / "ackermann.csv",
               np.column_stack([t, x, left, right, inner, outer, ideal, QD[:, 1], QD[:, 2]]),
               delimiter=",", comments="", fmt="%.15g",
               header="t,rack_x,left_angle,right_angle,inner_angle,outer_angle,"
                      "ideal_inner_angle,left_rate,right_rate")
    plot(out, out_dir / "ackermann.png")
    return out


def plot(out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    ax = fig.subplots(1, 2)
    order = np.argsort(out["rack"])
    x = 1000 * out["rack"][order]
    ax[0].plot(x, np.degrees(out["left"][order]), label="left wheel")
    ax[0].plot(x, np.degrees(out["right"][order]), label="right wheel")
    ax[0].plot(x, np.degrees((out["inner"] - out["outer"])[order]), label="inner - outer")
    ax[0].set_xlabel("rack position (mm)")
    ax[0].set_ylabel("steering angle (deg)")
    ax[0].set_title("the inner wheel always turns more")
    ax[0].legend(loc="upper left", frameon=False)
    ax[1].plot(np.degrees(out["outer"][order]), np.degrees(out["inner"][order]), ".",
               ms=3, label="linkage")
    o = np.linspace(0, out["outer"].max(), 100)
    ax[1].plot(np.degrees(o), np.degrees(ideal_inner(np.maximum(o, 1e-12))), "k--",
               label="ideal: cot(do) - cot(di) = w / l")
    ax[1].plot(np.degrees(o), np.degrees(o), ":", color="0.5", label="parallel steering")
    ax[1].set_xlabel("outer wheel (deg)")
    ax[1].set_ylabel("inner wheel (deg)")
    ax[1].set_title(f"against the ideal: within {out['ackermann_error_deg']:.2f} deg")
    ax[1].legend(loc="upper left", frameon=False)
    fig.suptitle(f"Ackermann linkage (w = {W} m, l = {WHEELBASE} m, arms {ARM} m, tie rods "
                 f"{TIE} m)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=4.0, help="time of one rack sweep in s (4)")
    p.add_argument("--dt", type=float, default=0.01, help="sampling in s (0.01)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"inner wheel up to {out['max_inner_deg']:.2f} deg, outer up to "
          f"{out['max_outer_deg']:.2f} deg; inner - outer >= "
          f"{np.degrees(out['inner_minus_outer_min']):.3g} deg; the ideal Ackermann inner "
          f"angle within {out['ackermann_error_deg']:.3f} deg; max |phi| "
          f"{out['max_residual']:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
