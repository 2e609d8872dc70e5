"""JPL's five-body spacecraft: platform manoeuvres with hinge servos and on-off attitude jets
(JPL TR 32-1592, Cases 1 and 2).

The bus (floating) carries a rotating hub with a TV platform (hinges 1, 2) and a gimbal with
a boom (hinges 3, 4). Hinge servos: tau_k = -3500 (gamma_k - gamma_kc) - 20 gammadot_k on the
platform (k = 1, 2), -2000 gamma_k - 10 gammadot_k on the boom (k = 3, 4). Jets on the bus:
a torque (0.23 f1, 0.21 f2, 0.31 f3) N m, f_i in {-1, 0, +1}, switched on the sign of
IN_i = -theta_i - 2.0 omega_i when |IN_i| exceeds the 0.005 rad dead band (theta_i the
celestial-sensor angles, omega_i the bus rates), each firing held for at least TM = 0.020 s
(our reading of the report's TM; the switching amplifier's figure is lost). The jets reach the
simulator as a wrench on the bus link returned by the controller.

- Case 1: gamma1 218 -> 168 deg and gamma2 -30 -> 20 deg at 1 deg/s from t = 0 (50 s), run
  to 60 s, with jets (the report: the jets begin pulsing on axis 2 at about t = 4.6 s, the
  other axes much later) and without (the bus rates return to zero on average once the
  platform stops: the angular momentum stays zero);
- Case 2: gamma1 218 -> 220 deg at 1 deg/s from t = 0, gamma2 -30 -> -25 deg at 1 deg/s
  from t = 5 s, run to 20 s: no jet fires.

Writes jpl_spacecraft.png and jpl_spacecraft_case1.csv, jpl_spacecraft_case1_nojets.csv,
jpl_spacecraft_case2.csv (every 10 ms, with the sensor angles).

    python examples/jpl_spacecraft.py [--duration 60] [--dt 0.001] [--out-dir .]

``--duration`` caps each run's length (Case 1 is 60 s, Case 2 20 s).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import robodyn

DEG = math.pi / 180.0
JET_TORQUE = np.array([0.23, 0.21, 0.31])  # N m, bus axes
DEAD_BAND = 0.005  # rad
TAU_R = 2.0  # s, rate feedback
MIN_ON = 0.020  # s, minimum on-time of a firing (the report's TM)
SLEW_END = 50.0  # s, Case 1's platform stops


def rotation(quat):
    """Rotation matrix (base to world) of a unit quaternion (x, y, z, w)."""
    x, y, z, w = quat
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def sensor_angles(q):
    """theta1..3 from the inertial Z (N) and X (L) axes expressed in the bus frame."""
    Rt = rotation(q[3:7]).T
    N, L = Rt[:, 2], Rt[:, 0]
    return np.array([math.atan2(N[1], N[2]), math.atan2(-N[0], N[2]), math.atan2(-L[1], L[0])])


def ramp(t, start, rate_deg, t0, t1):
    """start + rate (t - t0) between t0 and t1, constant outside (rad)."""
    return (start + rate_deg * (min(max(t, t0), t1) - t0)) * DEG


class Spacecraft:
    """Hinge servos following the platform commands, and the jets (or none)."""

    def __init__(self, robot, commands, jets=True):
        self.commands = commands  # t -> (gamma1c, gamma2c)
        self.jets = jets
        names = list(robot.joint_names)[-4:]
        self.hinge = [names.index(f"hinge{k}") for k in (1, 2, 3, 4)]
        self.bus = robot.link_names[0]
        self.nv = robot.nv
        self.f = np.zeros(3)
        self.on_since = np.full(3, -math.inf)
        self.firings = []  # (t, axis 1..3, sign)

    def __call__(self, t, q, v, ref):
        g, gd = q[7:][self.hinge], v[6:][self.hinge]
        g1c, g2c = self.commands(t)
        tau = np.zeros(self.nv)
        tau[6 + self.hinge[0]] = -3500.0 * (g[0] - g1c) - 20.0 * gd[0]
        tau[6 + self.hinge[1]] = -3500.0 * (g[1] - g2c) - 20.0 * gd[1]
        tau[6 + self.hinge[2]] = -2000.0 * g[2] - 10.0 * gd[2]
        tau[6 + self.hinge[3]] = -2000.0 * g[3] - 10.0 * gd[3]
        if not self.jets:
            return tau
        signal = -sensor_angles(q) - TAU_R * v[:3]
        want = np.where(np.abs(signal) > DEAD_BAND, np.sign(signal), 0.0)
        for i in range(3):
            held = self.f[i] != 0.0 and t - self.on_since[i] < MIN_ON - 1e-12
            if want[i] != self.f[i] and not held:
                if want[i] != 0.0:
                    self.on_since[i] = t
                    self.firings.append((t, i + 1, int(want[i])))
                self.f[i] = want[i]
        return tau, {self.bus: np.concatenate([JET_TORQUE * self.f, np.zeros(3)])}


def case1_commands(t):
    return ramp(t, 218.0, -1.0, 0.0, SLEW_END), ramp(t, -30.0, 1.0, 0.0, SLEW_END)


def case2_commands(t):
    return ramp(t, 218.0, 1.0, 0.0, 2.0), ramp(t, -30.0, 1.0, 5.0, 10.0)


def simulate(robot, commands, duration, dt, jets):
    q0, v0 = robodyn.robots.initial_state("jpl_spacecraft", robot)
    ctrl = Spacecraft(robot, commands, jets)
    res = robodyn.simulate(robot, controller=ctrl, q0=q0, qd0=v0, duration=duration, dt=dt,
                           control_rate=1.0 / dt, integrator="rk4")
    res.sensor = np.array([sensor_angles(q) for q in res.q])
    return res, ctrl


def run(duration=60.0, dt=1e-3, out_dir="."):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the bus inertia, as printed
        robot = robodyn.robots.jpl_spacecraft()
    d1, d2 = min(duration, 60.0), min(duration, 20.0)
    c1, jets1 = simulate(robot, case1_commands, d1, dt, True)
    c1n, _ = simulate(robot, case1_commands, d1, dt, False)
    c2, jets2 = simulate(robot, case2_commands, d2, dt, True)
    first = {}
    for t, axis, sign in jets1.firings:
        first.setdefault(axis, (t, sign))
    # without jets: the mean bus rate once the platform has stopped (t >= 50 s; none in a
    # run that ends sooner), against its mean during the slew (10 s < t < 45 s); what is left
    # after is the boom's and the platform's lightly damped vibration
    w = c1n.qd[:, :3]
    after = c1n.t >= SLEW_END
    during = (c1n.t > min(10.0, 0.2 * d1)) & (c1n.t < min(45.0, 0.8 * d1))
    out = {
        "first_firing": first,  # axis -> (t, sign)
        "firings_case1": len(jets1.firings),
        "firings_case2": len(jets2.firings),
        "max_sensor_angle_case1": float(np.max(np.abs(c1.sensor))),
        "rate_mean_after": (np.mean(w[after], axis=0) if after.any()
                            else np.full(3, np.nan)),
        "rate_amplitude_after": (np.max(np.abs(w[after]), axis=0) if after.any()
                                 else np.full(3, np.nan)),
        "rate_mean_during": np.mean(w[during], axis=0),
        "momentum_drift_nojets": c1n.momentum_drift,
        "results": (c1, c1n, c2),
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for res, name in ((c1, "case1"), (c1n, "case1_nojets"), (c2, "case2")):
        write_csv(res, out_dir / f"jpl_spacecraft_{name}.csv")
    plot(c1, c1n, c2, jets1, out_dir / "jpl_spacecraft.png")
    return out


def write_csv(res, path, every=0.01):
    """The result's columns (SimulationResult.columns) and the sensor angles, one row every
    ``every`` seconds (the full 1 kHz record of a 60 s run is 50 MB)."""
    names, data = res.columns()
    keep = np.unique(np.searchsorted(res.t, np.arange(0.0, res.t[-1] + 1e-9, every)))
    data = np.hstack([data, res.sensor])[keep]
    np.savetxt(path, data, delimiter=",", header=",".join(names + ["theta1", "theta2",
                                                                      "theta3"]),
               comments="", fmt="%.17g")


def plot(c1, c1n, c2, jets1, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 10), layout="constrained")
    ax = fig.subplots(3, 2)
    k = c1.t <= 10.0
    for i in range(3):  # axis i in colour Ci throughout: its rate W, its angle THET, its jet
        style = dict(lw=0.8, color=f"C{i}")
        ax[0, 0].plot(c1.t, c1.qd[:, i], **style, label=f"axis {i + 1} (W{i + 1}, THET{i + 1})")
        ax[0, 1].plot(c1n.t, c1n.qd[:, i], **style)
        ax[1, 0].plot(c1.t, c1.sensor[:, i], **style)
        ax[2, 0].plot(c1.t[k], c1.qd[k, i], **style)
        ax[2, 1].plot(c2.t, c2.sensor[:, i], **style)
    ax[0, 0].set_title("Case 1 with jets: bus rates (rad/s)")
    ax[0, 1].set_title("Case 1 without jets: bus rates (rad/s)")
    ax[1, 0].set_title("Case 1 with jets: sensor angles (rad)")
    ax[2, 0].set_title("Case 1 with jets, first 10 s: bus rates (rad/s)")
    ax[2, 1].set_title("Case 2: sensor angles (rad)")
    for a in (ax[1, 0], ax[2, 1]):
        a.axhline(DEAD_BAND, color="k", ls="--", lw=0.6, label="dead band")
        a.axhline(-DEAD_BAND, color="k", ls="--", lw=0.6)
    if c1n.t[-1] >= SLEW_END:
        ax[0, 1].axvline(SLEW_END, color="0.5", ls=":", lw=0.8, label="the platform stops")
    if jets1.firings:
        t, axis, sign = np.array(jets1.firings).T
        for s, marker, word in ((1, "^", "+"), (-1, "v", "-")):
            on = sign == s
            if on.any():
                ax[1, 1].scatter(t[on], axis[on] + 0.15 * s, s=9, marker=marker,
                                 c=[f"C{int(a) - 1}" for a in axis[on]],
                                 label=f"a jet fires, {word} torque")
    ax[1, 1].set_yticks([1, 2, 3])
    ax[1, 1].set_ylim(0.5, 3.5)
    ax[1, 1].set_ylabel("axis")
    ax[1, 1].set_title("Case 1: jet firings per axis")
    for a in ax.ravel():
        a.set_xlabel("t (s)")
    handles, labels = [], []
    for a in (ax[0, 0], ax[1, 0], ax[0, 1], ax[1, 1]):
        h, lab = a.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize="small",
               frameon=False)
    fig.suptitle("JPL five-body spacecraft (TR 32-1592)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--out-dir", "--out", dest="out_dir", default=".",
                   help="directory for the PNG, CSV (and GIF) files")
    args = p.parse_args(argv)
    out = run(args.duration, args.dt, args.out_dir)
    for axis in (1, 2, 3):
        if axis in out["first_firing"]:
            t, sign = out["first_firing"][axis]
            print(f"Case 1: axis {axis} jet first fires at t = {t:.3f} s ({'+-'[sign < 0]})")
        else:
            print(f"Case 1: axis {axis} jet never fires")
    print(f"Case 1: {out['firings_case1']} firings; largest sensor angle "
          f"{out['max_sensor_angle_case1']:.4f} rad (dead band {DEAD_BAND})")
    fmt = {"float_kind": lambda x: f"{x:.1e}"}
    during = np.array2string(out["rate_mean_during"], formatter=fmt)
    if np.isnan(out["rate_mean_after"]).any():
        after = f"the run ends before the platform stops at {SLEW_END:g} s"
    else:
        after = (f"after it stops (t >= {SLEW_END:g} s) "
                 f"{np.array2string(out['rate_mean_after'], formatter=fmt)} rad/s, vibrating by "
                 f"up to {np.array2string(out['rate_amplitude_after'], formatter=fmt)}")
    print(f"Case 1 without jets: mean bus rates during the slew {during} rad/s, {after}; "
          f"momentum drift {out['momentum_drift_nojets'][0]:.1e} N m s")
    print(f"Case 2: {out['firings_case2']} jet firings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
