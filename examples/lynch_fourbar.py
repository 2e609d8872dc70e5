"""Lynch's closed-loop spatial four-bar (Lynch 1988, sec. 6.2 and Appendix C): its eigenvalue
by the constrained linearisation, by his QZ method, and from a simulated small oscillation.

Lynch's input (Appendix C): five bodies (1 the ground); revolutes ground-2 and ground-3, both
about z (PQ = z, RQ = x) at the ground's origin (SL21 = SL31 = 0); a universal joint between
body 3 and body 5 as two revolutes through the light cross body 4 (3-4 about body 3's z, 4-5
about body 4's x; body 5's axes at q = 0: z5 = x4, x5 = -z4); body 3's mass centre 0.5 m below
its pivot and the universal joint 0.5 m further (DL33 = SL43 = 0.5); body 5's mass centre
DL55 below the universal joint; the cut spherical joint between bodies 2 and 5 (n = 4
coordinates, m_d = 3 constraints, one degree of freedom); masses 10 kg (bodies 2, 3, 5) and
0.1 kg (body 4), inertias 0.1 kg m^2 (J4Z = 0.001 kg m^2), gravity along -y (9.81 m/s^2). Lynch reports one
eigenvalue, 12.887, from both his QZ solution of the 7 x 7 pencil (eq. 6.6) and the null-space
(QR) reduction (eq. 6.16): sigma^2 of Q2' K Q2 x = sigma^2 Q2' M Q2 x.

What the OCR leaves open, and what is assumed here:

- where the spherical joint sits on bodies 2 and 5: Figure 6.1 is lost and the appendix gives
  no data for the cut joint. Assumed: at the 1.0 m tips of both (body 2 a 1.0 m link with its
  mass centre at mid-length like body 3, body 5 likewise);
- DL55: the numeric input lists "DL22 = DL33 = DL44 = 0.5 m" while the symbolic DL[4,4] is
  zero and DL[5,5] = (0, -DL55, 0): read as DL55 = 0.5 m;
- bodies 2, 3, 4 have only a z inertia (JIP); they turn only about z, so their x and y
  inertias never enter (the URDF carries Lynch's zeros, loaded without the physical check);
- "eigenvalue" is sigma^2 (rad^2/s^2) of eq. 6.16, as his QZ pencil gives.

With both ground pivots at the same point and about the same axis, the loop closes a rigid
triangle (pivot, universal joint, spherical joint): the one free motion turns the whole
mechanism about z, a compound pendulum with sigma^2 = g |sum m r| / I_z about the pivot. Under
the assumptions above that is 13.237 (2.7 % above Lynch's 12.887), from the constrained
linearisation, the QZ pencil and the closed form alike, and from the simulated period. No
choice among the natural readings (spherical joint at 0.5, 1.0 or 1.5 m on either body, DL55
0.5 or 1.0, J4Z 0, 0.001 or 0.1, a ground link of 0, 0.5 or 1.0 m along x) gives 12.887 to three
figures: the figure depends on the lost joint location, so it is not reproduced exactly.

Writes lynch_fourbar.png and lynch_fourbar.csv.

    python examples/lynch_fourbar.py [--duration 5] [--dt 0.001] [--out-dir .]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import scipy.linalg

import robodyn
from robodyn.constraints.linearize import equilibrium, linearize

G = 9.81
LYNCH_EIGENVALUE = 12.887
MASS = {"body2": 10.0, "body3": 10.0, "body4": 0.1, "body5": 10.0}
J = 0.1           # kg m^2, Lynch's JiZ, i = 2, 3, 5 and J5X, J5Y
J4Z = 0.001       # kg m^2, the cross body of the universal joint
DL = 0.5          # m, joint to mass centre: DL22, DL33, DL55 (assumed)
SL43 = 0.5        # m, body 3's mass centre to the universal joint
TIP = 1.0         # m, the spherical joint on bodies 2 and 5 (assumed)
AMPLITUDE = 0.01  # rad/s along the free motion at the start


def lynch_urdf():
    """Appendix C's tree (the spherical joint cut) as URDF text."""
    def link(name, com, inertia):
        ixx, iyy, izz = inertia
        return (f'<link name="{name}"><inertial><origin xyz="0 {-com} 0"/>'
                f'<mass value="{MASS[name]}"/><inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" '
                'ixy="0" ixz="0" iyz="0"/></inertial></link>')

    def joint(name, parent, child, xyz, rpy="0 0 0"):
        return (f'<joint name="{name}" type="continuous"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
                '<axis xyz="0 0 1"/></joint>')

    return ('<robot name="lynch_fourbar"><link name="ground"/>'
            + link("body2", DL, (0, 0, J)) + link("body3", DL, (0, 0, J))
            + link("body4", 0.0, (0, 0, J4Z)) + link("body5", DL, (J, J, J))
            + joint("q2", "ground", "body2", "0 0 0")
            + joint("q3", "ground", "body3", "0 0 0")
            + joint("q4", "body3", "body4", f"0 {-(DL + SL43)} 0")
            # body 5: z5 = x4, x5 = -z4 (a quarter turn about y)
            + joint("q5", "body4", "body5", "0 0 0", f"0 {math.pi / 2} 0")
            + "</robot>")


def _at(y):
    T = np.eye(4)
    T[1, 3] = y
    return T


def lynch_system():
    """The four-bar: the tree and the spherical joint (a point constraint) at the tips."""
    robot = robodyn.load_urdf(lynch_urdf(), gravity=(0.0, -G, 0.0), check_inertia=False)
    spherical = robodyn.LoopConstraint("body2", "body5", frame1=_at(-TIP), frame2=_at(-TIP),
                                       kind="point", name="spherical")
    return robodyn.ConstrainedRobot(robot, [spherical], actuated=())


def closed_form_sigma2():
    """sigma^2 = g |sum m r| / I_z of the rigid triangle (pivot O, universal joint U at
    DL + SL43 on body 3, spherical joint S at TIP on body 2 and on body 5) turning about z,
    written from the plane geometry alone."""
    ou, os_, us = DL + SL43, TIP, TIP
    angle = math.acos((ou**2 + os_**2 - us**2) / (2 * ou * os_))  # between O->U and O->S
    u3 = np.array([0.0, -1.0])
    u2 = np.array([math.sin(angle), -math.cos(angle)])
    U, S = ou * u3, os_ * u2
    u5 = (S - U) / us
    # (mass, mass centre, inertia about the vertical axis z: body 5's is J5X, x5 = -z4)
    bodies = [(MASS["body2"], DL * u2, J), (MASS["body3"], DL * u3, J),
              (MASS["body4"], U, J4Z), (MASS["body5"], U + DL * u5, J)]
    moment = sum(m * r for m, r, _ in bodies)
    inertia = sum(j + m * (r @ r) for m, r, j in bodies)
    return G * float(np.linalg.norm(moment)) / inertia


def qz_eigenvalues(system, q, lin):
    """Lynch's eq. 6.6: the (n + m_d) pencil [[K, J'], [J, 0]] x = sigma^2 [[M, 0], [0, 0]] x
    (K the open-loop stiffness with the constraint forces' geometric term), by QZ."""
    robot = system.robot
    n, m = robot.nv, system.rows
    zero = np.zeros(n)
    dq = np.asarray(robot.inverse_dynamics_derivatives(q, zero, zero)[0])
    K = dq + _geometric(system, q, lin.lam)
    Jq = np.asarray(system.jacobian(q))
    A = np.block([[K, Jq.T], [Jq, np.zeros((m, m))]])
    B = np.zeros_like(A)
    B[:n, :n] = robot.mass_matrix(q)
    return scipy.linalg.eigvals(A, B)


def _geometric(system, q, lam, h=1e-6):
    n = system.robot.nv
    return np.column_stack([(np.asarray(system.jacobian(q + h * e)).T @ lam
                             - np.asarray(system.jacobian(q - h * e)).T @ lam) / (2 * h)
                            for e in np.eye(n)])


def qr_sigma2(system, q, lin):
    """Lynch's eq. 6.7-6.16 literally: Q2 from the QR decomposition of J', then
    sigma^2 = (Q2' K Q2) / (Q2' M Q2) for the one degree of freedom."""
    Jq = np.asarray(system.jacobian(q))
    Qfull, _ = np.linalg.qr(Jq.T, mode="complete")
    Q2 = Qfull[:, system.rows:]
    zero = np.zeros(system.robot.nv)
    K = (np.asarray(system.robot.inverse_dynamics_derivatives(q, zero, zero)[0])
         + _geometric(system, q, lin.lam))
    M = np.asarray(system.robot.mass_matrix(q))
    return np.linalg.eigvals(np.linalg.solve(Q2.T @ M @ Q2, Q2.T @ K @ Q2)).real


def run(duration=5.0, dt=1e-3, out_dir="."):
    system = lynch_system()
    # the hanging equilibrium near the triangle's (the loop closed, gravity balanced)
    q_eq = equilibrium(system, np.array([0.5, -0.5, 2.1, 0.0]))
    lin = linearize(system, q_eq)
    sigma2 = float(lin.omega_squared[0])
    qz = qz_eigenvalues(system, q_eq, lin)
    finite = qz[np.isfinite(qz)].real
    # a small oscillation: rest at the equilibrium plus a velocity along the free motion
    Z = lin.Z[:, 0]
    v0 = AMPLITUDE * Z
    res = robodyn.simulate(system, duration=duration, dt=dt, q0=q_eq, qd0=v0)
    z = (res.q - q_eq) @ Z
    omega = math.sqrt(sigma2)
    z_lin = AMPLITUDE / omega * np.sin(omega * res.t)
    # the period: twice the mean spacing of the zero crossings of z after the start
    k = np.flatnonzero(z[1:-1] * z[2:] < 0) + 1
    t_zero = res.t[k] - z[k] * (res.t[k + 1] - res.t[k]) / (z[k + 1] - z[k])
    period = 2 * float(np.mean(np.diff(t_zero))) if t_zero.size > 1 else float("nan")
    out = {
        "q_equilibrium": q_eq,
        "sigma2": sigma2,
        "sigma2_closed_form": closed_form_sigma2(),
        "sigma2_qr": float(qr_sigma2(system, q_eq, lin)[0]),
        "sigma2_qz": finite,
        "qz_infinite": int(np.sum(~np.isfinite(qz))),
        "lynch": LYNCH_EIGENVALUE,
        "relative_gap": sigma2 / LYNCH_EIGENVALUE - 1.0,
        "sigma2_simulated": (2 * math.pi / period) ** 2 if period == period else float("nan"),
        "linear_error": float(np.max(np.abs(z - z_lin))),
        "energy_drift": float(np.max(np.abs(res.energy - res.energy[0]))),
        "residual": float(res.residual.max()),
        "result": res,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savetxt(out_dir / "lynch_fourbar.csv",
               np.column_stack([res.t, res.q, z, z_lin, res.energy]), delimiter=",",
               header="t,q2,q3,q4,q5,z,z_linear,energy", comments="", fmt="%.12g")
    plot(res, z, z_lin, out, out_dir / "lynch_fourbar.png")
    return out


def plot(res, z, z_lin, out, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 6), layout="constrained")
    ax = fig.subplots(2, 1, sharex=True)
    ax[0].plot(res.t, z, lw=1.8, label="simulated (RK4, loop projected)")
    ax[0].plot(res.t, z_lin, "--", lw=1.2, label=f"linearised, sigma^2 = {out['sigma2']:.4f}")
    ax[0].set_ylabel("z = Z'(q - q*) (rad)")
    ax[0].set_title(f"free motion about the equilibrium: sigma^2 {out['sigma2']:.4f} rad^2/s^2\n"
                    f"(closed form {out['sigma2_closed_form']:.4f}, QZ "
                    f"{out['sigma2_qz'][0]:.4f}; Lynch 12.887)")
    ax[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax[1].plot(res.t, res.energy - res.energy[0], lw=1.2)
    ax[1].set_ylabel("energy change (J)")
    ax[1].set_xlabel("t (s)")
    fig.suptitle("Lynch's spatial four-bar (Appendix C; spherical joint at the 1 m tips, "
                 "assumed)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=5.0, help="simulated time in s (5)")
    p.add_argument("--dt", type=float, default=1e-3, help="RK4 step in s (0.001)")
    p.add_argument("--out-dir", "--out", dest="out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out)
    print(f"equilibrium q = {np.array2string(out['q_equilibrium'], precision=4)} rad")
    print(f"eigenvalue sigma^2: constrained linearisation {out['sigma2']:.4f}, Lynch's QR "
          f"reduction {out['sigma2_qr']:.4f}, QZ {out['sigma2_qz'][0]:.4f} (and "
          f"{out['qz_infinite']} infinite), closed form {out['sigma2_closed_form']:.4f}; "
          f"Lynch reports 12.887 ({100 * out['relative_gap']:+.1f} %: the spherical joint's "
          "location is lost from the OCR)")
    from_period = (f"{out['sigma2_simulated']:.4f}" if out["sigma2_simulated"] == out[
        "sigma2_simulated"] else "- (run over one period, 1.73 s)")
    print(f"simulated: sigma^2 from the period {from_period}, "
          f"max |z - z_linear| {out['linear_error']:.2e} rad, energy constant to "
          f"{out['energy_drift']:.1e} J, loop closed to {out['residual']:.1e} m")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
