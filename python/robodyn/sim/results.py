"""The result of a simulation: :class:`SimulationResult` (time series, metrics, summary,
CSV, figures)."""

from __future__ import annotations

import math
import os

import numpy as np

from ..control import trajectories as _traj
from .inputs import BASE_Q_NAMES, BASE_V_NAMES, sizes


def batch_or_loop(fn, *arrays):
    """``fn`` on (N, n) batches if the robot supports them, else row by row."""
    m = arrays[0].shape[0]
    try:
        out = np.asarray(fn(*arrays), dtype=np.float64)
        if out.shape == (m,):
            return out
    except (TypeError, ValueError):
        pass
    return np.array([float(fn(*[a[i] for a in arrays])) for i in range(m)])


def batch_rows(fn, *arrays):
    """``fn`` on (N, k) batches if the robot supports them, else row by row: (N, m)."""
    m = arrays[0].shape[0]
    try:
        out = np.asarray(fn(*arrays), dtype=np.float64)
        if out.ndim == 2 and out.shape[0] == m:
            return out
    except (TypeError, ValueError):
        pass
    return np.array([np.asarray(fn(*[a[i] for a in arrays]), dtype=np.float64)
                     for i in range(m)])


def sample_reference(reference, ts, nq, n=None):
    n = nq if n is None else n
    if reference is None:
        return None, None, None
    if isinstance(reference, _traj.Trajectory):
        return reference.sample(ts)
    Q = np.empty((ts.shape[0], nq))
    QD = np.empty((ts.shape[0], n))
    QDD = np.empty_like(QD)
    for i, t in enumerate(ts):
        Q[i], QD[i], QDD[i] = reference(t)
    return Q, QD, QDD


class SimulationResult:
    """Recorded simulation: arrays over the time grid ``t`` (length ``N + 1``).

    Attributes
    ----------
    t : (N+1,) times (s).
    q, qd : (N+1, nq) positions and (N+1, nv) velocities (nq = nv but for floating robots).
    tau : (N+1, nv) applied torque (plus the generalized forces of any wrenches the
        controller returned); ``tau[k]`` is the torque applied from ``t[k]`` on (the
        held command under a zero-order hold; the first-stage torque in continuous mode).
    joint_names : names of the entries of qd and tau; q_names those of q (the same for a
        fixed-base robot; a floating robot's start with base_x .. base_qw and base_wx ..
        base_vz).
    momentum : (N+1, 6) floating robots only (else None): ``robot.momentum(q, qd)``, the
        total [angular about the world origin; linear] momentum in world axes.
    q_ref, qd_ref, qdd_ref : (N+1, n) the reference sampled at ``t``, or None without one.
    kinetic, potential, energy : (N+1,) kinetic, gravity potential and total energy (J).
    joint_names, joint_types ("revolute" or "prismatic"), robot_name, controller_name,
    integrator, dt, control_rate (Hz or None), duration, wall_time (s, of the integration loop),
    stats (steps, rejected, fd_calls, control_calls, cpu_time: process CPU seconds of the loop,
    engine: "cpp" or "python").
    joint_limits ("stop", "report" or "ignore"), restitution, position_limits ((n,) lower,
    (n,) upper or None), limit_hits ((n,) steps that ended beyond a limit), limit_excess ((n,)
    largest distance beyond a limit, rad or m); all three in the layout of qd (a floating
    robot's six base entries have no limits).
    """

    def __init__(self, t, q, qd, tau, q_ref=None, qd_ref=None, qdd_ref=None, kinetic=None,
                 potential=None, joint_names=None, robot_name="robot", controller_name="none",
                 integrator="rk4", dt=None, control_rate=None, duration=None, wall_time=None,
                 stats=None, saturated_calls=0, q_names=None, momentum=None, joint_types=None,
                 joint_limits="ignore", restitution=0.0, position_limits=None, robot=None):
        self.t = t
        self.q = q
        self.qd = qd
        self.tau = tau
        self.q_ref = q_ref
        self.qd_ref = qd_ref
        self.qdd_ref = qdd_ref
        self.kinetic = kinetic
        self.potential = potential
        self.energy = None if kinetic is None else kinetic + potential
        self.joint_names = list(joint_names) if joint_names is not None else [
            f"q{i + 1}" for i in range(qd.shape[1])]
        self.q_names = list(q_names) if q_names is not None else list(self.joint_names)
        self.momentum = momentum
        self.robot_name = robot_name
        self.controller_name = controller_name
        self.integrator = integrator
        self.dt = dt
        self.control_rate = control_rate
        self.duration = duration if duration is not None else float(t[-1] - t[0])
        self.wall_time = wall_time
        self.stats = dict(stats or {})
        self.saturated_calls = saturated_calls
        self.joint_types = list(joint_types) if joint_types is not None else [
            "revolute"] * qd.shape[1]
        self.joint_limits = joint_limits
        self.restitution = restitution
        self.position_limits = position_limits
        self.limit_hits = np.zeros(qd.shape[1], dtype=np.int64)
        self.limit_excess = np.zeros(qd.shape[1])
        self.robot = robot  # the plant, for animate(); None for a result built by hand

    @classmethod
    def _build(cls, robot, controller, reference, grid, rec, stats, wall, **meta):
        nq, n = sizes(robot)
        if "y" in rec:
            Q = np.ascontiguousarray(rec["y"][:, :nq])
            QD = np.ascontiguousarray(rec["y"][:, nq:])
        else:
            Q, QD = rec["q"], rec["qd"]
        kin = batch_or_loop(robot.kinetic_energy, Q, QD)
        pot = batch_or_loop(robot.potential_energy, Q)
        q_ref, qd_ref, qdd_ref = sample_reference(reference, grid, nq, n)
        names = list(getattr(robot, "joint_names", None) or [f"q{i + 1}" for i in range(n)])
        q_names = None
        momentum = None
        if nq != n:
            joints = names[-(n - 6):] if n > 6 else []
            names = list(BASE_V_NAMES) + joints
            q_names = list(BASE_Q_NAMES) + joints
            if callable(getattr(robot, "momentum", None)):
                momentum = batch_rows(robot.momentum, Q, QD)
        robot_name = getattr(getattr(robot, "spec", None), "name", None) or getattr(
            robot, "name", "robot")
        cname = "none" if controller is None else type(controller).__name__
        spec = getattr(robot, "spec", None)
        types = [b.joint_type for b in spec.bodies] if spec is not None else None
        limits = getattr(robot, "position_limits", None)
        if nq != n:  # the free-flyer's angular and linear velocity, then the joints
            types = ["revolute"] * 3 + ["prismatic"] * 3 + (types or [])[-(n - 6):] \
                if n > 6 else ["revolute"] * 3 + ["prismatic"] * 3
            if limits is not None:  # in the layout of qd: the base's six entries unbounded
                limits = tuple(np.concatenate([np.full(6, sign * np.inf),
                                               np.asarray(x, dtype=float)[7:]])
                               for sign, x in zip((-1.0, 1.0), limits))
        return cls(grid, Q, QD, rec["tau"], q_ref, qd_ref, qdd_ref, kin, pot, names,
                   robot_name=robot_name, controller_name=cname, wall_time=wall, stats=stats,
                   saturated_calls=getattr(controller, "saturated_calls", 0), q_names=q_names,
                   momentum=momentum, joint_types=types, position_limits=limits, robot=robot,
                   **meta)

    def units(self, i):
        """Units of joint ``i``: (position, velocity, effort), e.g. ("m", "m/s", "N")."""
        if self.joint_types[i] == "prismatic":
            return "m", "m/s", "N"
        return "rad", "rad/s", "N m"

    def limit_report(self):
        """One line per joint that ended a step beyond a position limit (empty if none)."""
        lines = []
        for i in np.flatnonzero(self.limit_hits):
            u = self.units(i)[0]
            lo, hi = (float(x[i]) for x in self.position_limits)
            verb = "stopped at" if self.joint_limits == "stop" else "went beyond"
            lines.append(f"joint {self.joint_names[i]} {verb} its limits [{lo:g}, {hi:g}] {u} "
                         f"in {int(self.limit_hits[i])} steps, up to {self.limit_excess[i]:.3g} "
                         f"{u} beyond")
        return lines

    @property
    def n(self):
        """Number of velocity (and torque) entries, nv."""
        return self.qd.shape[1]

    @property
    def floating(self):
        """Whether the robot has a free-flyer base (q has one entry more than qd)."""
        return self.q.shape[1] != self.qd.shape[1]

    @property
    def external_impulse(self):
        """(N+1, 6) impulse of the external forces from the start, [angular about the world
        origin, N m s; linear, N s] in world axes: gravity's (m g T for the linear part) and
        that of any wrench on the robot (the base block of ``tau``); None unless the robot is
        floating (and known: ``res.robot``). See :mod:`robodyn._momentum`."""
        from ..model.momentum import external_impulse

        return external_impulse(self)

    @property
    def momentum_drift(self):
        """``(angular, linear)``: max over the run of ``|h(t) - h(0) - J(t)|``, the change of
        the total momentum that the external impulse J (:attr:`external_impulse`: gravity, any
        wrench on the robot) does not explain (2-norm of the angular part about the world
        origin, N m s, and of the linear part, N s); None unless the robot is floating. Zero
        to rounding and integration error (joint torques and friction are internal). A result
        without its robot counts J as zero."""
        if self.momentum is None:
            return None
        d = self.momentum - self.momentum[0]
        impulse = self.external_impulse
        if impulse is not None:
            d = d - impulse
        return (float(np.max(np.linalg.norm(d[:, :3], axis=1))),
                float(np.max(np.linalg.norm(d[:, 3:], axis=1))))

    @property
    def error(self):
        """Tracking error ``q_ref - q`` (N+1, nq), or None without a reference (for a floating
        robot the base entries compare quaternion components)."""
        return None if self.q_ref is None else self.q_ref - self.q

    @property
    def max_error(self):
        """Largest ``|q_ref - q|`` per joint over the run, or None without a reference."""
        e = self.error
        return None if e is None else np.max(np.abs(e), axis=0)

    @property
    def max_torque(self):
        """Largest ``|tau|`` per joint over the run."""
        return np.max(np.abs(self.tau), axis=0)

    @property
    def real_time_factor(self):
        """Simulated time / wall-clock time of the integration loop."""
        if not self.wall_time:
            return math.inf
        return self.duration / self.wall_time

    @property
    def energy_drift(self):
        """``max |E(t) - E(0)|`` relative to the largest kinetic energy of the run."""
        E = self.energy
        scale = max(float(np.max(np.abs(self.kinetic))), 1e-300)
        return float(np.max(np.abs(E - E[0]))) / scale

    def actuator_work(self):
        """(N+1,) work done on the robot by the applied joint torques since ``t[0]`` (J):
        ``sum_k tau[k] . (q[k+1] - q[k])``, exact for a torque held over each interval. A
        floating robot's base wrench works along ``robot.difference(q[k], q[k+1])`` (the
        base's twist over the interval, exact for a twist constant over it)."""
        w = np.zeros(self.t.shape[0])
        if self.t.shape[0] < 2:
            return w
        if not self.floating:
            dq = np.diff(self.q, axis=0)
        elif self.robot is not None:
            # the base's step in its tangent space (its twist over the interval, base frame)
            dq = np.asarray(self.robot.difference(self.q[:-1], self.q[1:]), dtype=np.float64)
        else:  # a result built by hand: the base's step by the trapezoidal rule on qd
            dq = np.empty((self.t.shape[0] - 1, self.n))
            dq[:, 6:] = np.diff(self.q[:, 7:], axis=0)
            dq[:, :6] = (0.5 * np.diff(self.t)[:, None]) * (self.qd[:-1, :6] + self.qd[1:, :6])
        w[1:] = np.cumsum(np.einsum("ij,ij->i", self.tau[:-1], dq))
        return w

    def summary(self):
        """A one-screen text summary."""
        rate = "continuous" if self.control_rate is None else f"{self.control_rate:g} Hz"
        lines = [
            f"robot {self.robot_name} ("
            + (f"free-flyer base and {self.n - 6} joint{'s' if self.n != 7 else ''}"
               if self.floating
               else f"{self.n} joints")
            + f"), controller {self.controller_name}, "
            f"integrator {self.integrator}, dt {self.dt:g} s, control {rate}",
            f"simulated {self.duration:g} s in {self.wall_time:.3f} s wall: real-time factor "
            f"{self.real_time_factor:.1f}x ({self.stats.get('steps', 0)} steps, "
            f"{self.stats.get('fd_calls', 0)} forward-dynamics calls, "
            f"{self.stats.get('control_calls', 0)} controller calls, "
            f"{self.stats.get('engine', 'python')} loop)",
        ]
        width = max(8, max(len(s) for s in self.joint_names))
        err = self.max_error
        if err is not None and err.shape[0] != self.n:
            err = None
        head = f"  {'joint':<{width}}  {'max |tau|':>16}"
        if err is not None:
            head += f"  {'max |error|':>16}  {'final error':>16}"
        lines.append(head)
        final = None if err is None else np.abs(self.error[-1])
        for i, name in enumerate(self.joint_names):
            pos, _, eff = self.units(i)
            row = f"  {name:<{width}}  {self.max_torque[i]:12.4g} {eff:<3}"
            if err is not None:
                row += f"  {err[i]:12.3e} {pos:<3}  {final[i]:12.3e} {pos:<3}"
            lines.append(row)
        if err is not None:
            worst = int(np.argmax(err))
            lines.append(f"max tracking error {float(err[worst]):.3e} {self.units(worst)[0]} "
                         f"(joint {self.joint_names[worst]})")
        if self.momentum is not None:
            from ..model.momentum import momentum_lines

            lines += momentum_lines(self)
        if self.saturated_calls:
            lines.append(f"torque saturated in {self.saturated_calls} controller calls")
        report = self.limit_report()
        if report and self.joint_limits == "stop":
            lines.append(f"joint limits (hard stops, restitution {self.restitution:g}):")
            lines += ["  " + r for r in report]
        elif report:
            lines.append("WARNING: joint limits exceeded and NOT enforced "
                         "(joint_limits='report'):")
            lines += ["  " + r for r in report]
        if self.energy is not None:
            lines.append(f"energy: start {self.energy[0]:.6g} J, end {self.energy[-1]:.6g} J")
        return "\n".join(lines)

    def __repr__(self):
        return (f"SimulationResult(robot={self.robot_name!r}, n={self.n}, "
                f"samples={self.t.shape[0]}, duration={self.duration:g})")

    def columns(self):
        """Column names and the (N+1, k) data table written by :meth:`to_csv`."""
        names = ["t"]
        blocks = [self.t[:, None]]
        for prefix, arr, labels in (("q_", self.q, self.q_names),
                                    ("qd_", self.qd, self.joint_names),
                                    ("tau_", self.tau, self.joint_names),
                                    ("q_ref_", self.q_ref, self.q_names),
                                    ("qd_ref_", self.qd_ref, self.joint_names),
                                    ("qdd_ref_", self.qdd_ref, self.joint_names)):
            if arr is not None:
                names += [prefix + j for j in labels]
                blocks.append(arr)
        if self.momentum is not None:
            names += ["momentum_" + c for c in ("ax", "ay", "az", "lx", "ly", "lz")]
            blocks.append(self.momentum)
        if self.energy is not None:
            names += ["kinetic", "potential", "energy"]
            blocks += [self.kinetic[:, None], self.potential[:, None], self.energy[:, None]]
        return names, np.hstack(blocks)

    def to_csv(self, path):
        """Write the time series as CSV (one header line, then one row per sample)."""
        names, data = self.columns()
        path = os.fspath(path)
        np.savetxt(path, data, delimiter=",", header=",".join(names), comments="",
                   fmt="%.17g")
        return path

    def plot(self, path=None, show=False):
        """Figure of joint positions with references, tracking error, torques and energy.

        Saved to ``path`` (PNG by extension) when given. Needs matplotlib (the ``plot``
        extra: ``pip install robodyn[plot]``). Returns the matplotlib Figure.
        """
        from .plotting import plot_result
        return plot_result(self, path=path, show=show)

    def show(self, **kwargs):
        """Play the run back in the browser until Ctrl-C (robodyn.view.show_result)."""
        from ..view import show_result
        return show_result(self, **kwargs)

    def save_html(self, path, **kwargs):
        """Write the run's 3-D playback as one self-contained HTML file (robodyn.view)."""
        from ..view import save_html
        return save_html(self, path, **kwargs)

    def animate(self, path, fps=25.0, max_frames=250, progress=False):
        """Write the motion as an animated GIF at ``path``: the robot as a 3-D stick figure
        with its joint frames (robodyn.plotting.animate_result; needs matplotlib and pillow,
        the ``plot`` extra). ``fps`` frames per simulated second, at most ``max_frames``
        (longer runs are sampled more sparsely and play faster); ``progress``: a progress bar
        on stderr. Returns the path."""
        from .plotting import animate_result
        return animate_result(self, path, fps=fps, max_frames=max_frames, progress=progress)
