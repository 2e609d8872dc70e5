"""Joint-space reference trajectories: ``ref(t) -> (q, qd, qdd)``.

Every trajectory here is a callable object with

- ``ref(t)`` -> ``(q, qd, qdd)``, three ``(n,)`` float64 arrays at time ``t`` (seconds);
  ``ref(t, out=buf)`` writes them into the rows of a ``(3, n)`` buffer instead and returns
  views of it (no allocation, for control loops);
- ``ref.sample(ts)`` -> ``(Q, QD, QDD)``, each ``(len(ts), n)``, evaluated without a Python loop;
- ``ref.duration`` (the time after which the reference is at rest) and ``ref.n``.

Before ``t = 0`` every reference holds its first point and after ``duration`` its last point,
both at rest (zero velocity and acceleration).

Passing ``limits=(lower, upper)`` or ``robot=`` (which supplies ``robot.position_limits``) to a
constructor checks the whole motion, the positions between samples and knots included,
against the joint position limits and raises ``ValueError`` naming the joint, the time and the
value if the reference leaves them.

Profiles:

- :func:`smooth` -- the rest-to-rest profile of Nie's thesis (1988, eq. 60):
  ``s(t) = t - T/(2 pi) sin(2 pi t / T)``, ``q(t) = q0 + (q1 - q0) s(t) / T``;
  :func:`thesis_motion` and :func:`stanford_demo` are the two motions of ``robots.md``;
- :func:`quintic` -- quintic polynomial point to point with given end velocities and
  accelerations (rest to rest by default);
- :func:`waypoints` -- through a list of waypoints: a clamped cubic spline (zero velocity at
  both ends) or rest-to-rest quintic segments (stops at every waypoint);
- :class:`Sampled` / :func:`from_csv` -- sampled positions interpolated by a cubic spline whose
  first and second derivatives give ``qd`` and ``qdd``;
- :func:`constant` -- a set point.

This module imports NumPy and the standard library, and SciPy for the cubic splines.
"""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np

from ..util import safe_io

__all__ = [
    "Trajectory",
    "Smooth",
    "Quintic",
    "PiecewiseQuintic",
    "CubicSpline",
    "Sampled",
    "Constant",
    "smooth",
    "quintic",
    "quintic_coefficients",
    "waypoints",
    "from_csv",
    "constant",
    "thesis_motion",
    "stanford_demo",
    "check_limits",
    "default_reference",
]

# number of evenly spaced instants (plus all knots) at which limits are checked
_LIMIT_CHECK_SAMPLES = 2001


def _as_vector(x, name, n=None):
    """``x`` as a finite 1-D float64 array (a scalar gives length ``n`` or 1)."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {x!r}") from exc
    if a.ndim == 0:
        a = np.full(1 if n is None else n, float(a))
    if a.ndim != 1 or (n is not None and a.shape[0] != n):
        want = "(n,)" if n is None else f"({n},)"
        raise ValueError(f"{name}: expected shape {want}, got {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name}: expected at least one joint, got an empty array")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: values must be finite, got {a}")
    return a


def _as_time(T, name="T"):
    try:
        T = float(T)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected a positive number of seconds, got {T!r}") from exc
    if not math.isfinite(T) or T <= 0.0:
        raise ValueError(f"{name}: expected a positive, finite number of seconds, got {T!r}")
    return T


def _resolve_limits(n, limits, robot):
    """``(lower, upper)`` arrays from ``limits=`` or ``robot.position_limits``, or None."""
    if limits is None and robot is None:
        return None
    if limits is None:
        if getattr(robot, "n", n) != n:
            raise ValueError(f"robot: has {robot.n} joints but the reference has {n}")
        limits = robot.position_limits
    try:
        lower, upper = limits
    except (TypeError, ValueError) as exc:
        raise ValueError("limits: expected a pair (lower, upper) of (n,) arrays") from exc
    try:
        lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,))
        upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"limits: expected lower and upper of shape ({n},)") from exc
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(lower > upper):
        raise ValueError(f"limits: need lower <= upper, got lower={lower}, upper={upper}")
    return lower, upper


def _joint_label(i, joint_names):
    if joint_names is not None and i < len(joint_names):
        return f"joint {joint_names[i]!r} (index {i})"
    return f"joint {i}"


def check_limits(ref, limits=None, robot=None, extra_times=()):
    """Raise ``ValueError`` if ``ref`` leaves the position limits at any time in [0, duration].

    The message names the joint, the time and the value of the worst violation. The motion is
    sampled at ``_LIMIT_CHECK_SAMPLES`` evenly spaced instants plus
    ``extra_times`` (the knots of a piecewise reference). A tolerance of 1e-12 (relative to the
    size of the limits) lets a motion end exactly on a limit.
    """
    lim = _resolve_limits(ref.n, limits, robot)
    if lim is None:
        return
    lower, upper = lim
    T = ref.duration
    ts = np.linspace(0.0, T, _LIMIT_CHECK_SAMPLES) if T > 0 else np.zeros(1)
    if len(extra_times):
        ts = np.union1d(ts, np.clip(np.asarray(extra_times, dtype=np.float64), 0.0, T))
    Q = ref.sample(ts)[0]
    scale = 1.0 + np.maximum(np.abs(np.where(np.isfinite(lower), lower, 0.0)),
                             np.abs(np.where(np.isfinite(upper), upper, 0.0)))
    tol = 1e-12 * scale
    with np.errstate(invalid="ignore"):
        excess = np.maximum(lower - Q, Q - upper)  # > 0 outside the limits
    if not np.any(excess > tol):
        return
    k, i = np.unravel_index(np.argmax(excess), excess.shape)  # the worst violation
    names = getattr(robot, "joint_names", None)
    side = "lower" if Q[k, i] < lower[i] else "upper"
    raise ValueError(
        f"reference leaves the position limits: {_joint_label(i, names)} reaches "
        f"{Q[k, i]:.6g} at t = {ts[k]:.6g} s, outside [{lower[i]:.6g}, {upper[i]:.6g}] "
        f"({side} limit)")


class Trajectory:
    """Base class: a joint-space reference ``ref(t) -> (q, qd, qdd)``.

    Subclasses set ``n`` and ``duration``, implement ``_eval(ts)`` returning
    ``(Q, QD, QDD)`` of shape ``(len(ts), n)`` for any finite times (holding the end points at
    rest outside the motion), and may override ``__call__`` with a faster single-time path.
    """

    n: int
    duration: float

    def __call__(self, t, out=None):
        Q, QD, QDD = self.sample(np.array([float(t)]))
        if out is None:
            return Q[0], QD[0], QDD[0]
        out[0], out[1], out[2] = Q[0], QD[0], QDD[0]
        return out[0], out[1], out[2]

    def sample(self, ts):
        """``(Q, QD, QDD)``, each ``(len(ts), n)``, at the times ``ts`` (1-D)."""
        ts = np.asarray(ts, dtype=np.float64)
        if ts.ndim != 1:
            raise ValueError(f"ts: expected a 1-D array of times, got shape {ts.shape}")
        if not np.all(np.isfinite(ts)):
            raise ValueError("ts: times must be finite")
        return self._eval(ts)

    def _eval(self, ts):
        raise NotImplementedError

    def _finish(self, limits, robot, extra_times=()):
        check_limits(self, limits=limits, robot=robot, extra_times=extra_times)

    @property
    def start(self):
        """Position at t = 0."""
        return self(0.0)[0]

    @property
    def end(self):
        """Position held after ``duration``."""
        return self(self.duration)[0]

    def __repr__(self):
        return f"{type(self).__name__}(n={self.n}, duration={self.duration:g})"


class Smooth(Trajectory):
    """Nie's rest-to-rest profile: ``q = q0 + (q1 - q0) s(t) / T``,
    ``s(t) = t - T/(2 pi) sin(2 pi t / T)``.

    Derivatives: ``s' = 1 - cos(w t)``, ``s'' = w sin(w t)``, ``s''' = w^2 cos(w t)`` with
    ``w = 2 pi / T``, so velocity and acceleration are zero at both ends and the peak jerk is
    ``|q1 - q0| w^2 / T``.
    """

    def __init__(self, q0, q1, T, *, limits=None, robot=None):
        q0 = _as_vector(q0, "q0")
        q1 = _as_vector(q1, "q1")
        if q0.shape != q1.shape and 1 not in (q0.shape[0], q1.shape[0]):
            raise ValueError(f"q1: expected shape {q0.shape} like q0, got {q1.shape}")
        self.q0, self.q1 = (a.copy() for a in np.broadcast_arrays(q0, q1))
        self.n = self.q0.shape[0]
        self.T = _as_time(T)
        self.duration = self.T
        self.delta = self.q1 - self.q0
        self._w = 2.0 * math.pi / self.T
        self._coef = np.zeros((3, 1))
        self._finish(limits, robot)

    def __call__(self, t, out=None):
        t = float(t)
        if out is None:
            out = np.empty((3, self.n))
        if t <= 0.0:
            out[0] = self.q0
            out[1:] = 0.0
        elif t >= self.T:
            out[0] = self.q1
            out[1:] = 0.0
        else:
            # rows (s, s', s'') / T times delta, in one broadcast multiply
            w, T, c = self._w, self.T, self._coef
            wt = w * t
            sn = math.sin(wt)
            c[0, 0] = (t - sn / w) / T
            c[1, 0] = (1.0 - math.cos(wt)) / T
            c[2, 0] = w * sn / T
            np.multiply(c, self.delta, out=out)
            out[0] += self.q0
        return out[0], out[1], out[2]

    def _eval(self, ts):
        t = np.clip(ts, 0.0, self.T)[:, None]
        w, T = self._w, self.T
        inside = ((ts > 0.0) & (ts < T))[:, None]
        s = t - np.sin(w * t) / w
        Q = self.q0 + self.delta * s / T
        QD = np.where(inside, self.delta * (1.0 - np.cos(w * t)) / T, 0.0)
        QDD = np.where(inside, self.delta * w * np.sin(w * t) / T, 0.0)
        return Q, QD, QDD

    def jerk(self, t):
        """Third derivative ``d^3 q / dt^3`` at ``t`` (zero outside (0, T))."""
        t = float(t)
        if t <= 0.0 or t >= self.T:
            return np.zeros(self.n)
        return self.delta * self._w**2 * math.cos(self._w * t) / self.T


def smooth(q0, q1, T, *, limits=None, robot=None):
    """Nie's (1988) rest-to-rest profile from ``q0`` to ``q1`` in ``T`` seconds."""
    return Smooth(q0, q1, T, limits=limits, robot=robot)


def thesis_motion(T=2.0, *, limits=None, robot=None):
    """The Intelledex 605 test motion of Nie's thesis (robots.md): from
    ``(0, pi/2, 0, 0, 0, 0)`` to ``(pi/3,) * 6`` with the smooth profile, ``T = 2 s``."""
    q0 = np.array([0.0, math.pi / 2, 0.0, 0.0, 0.0, 0.0])
    q1 = np.full(6, math.pi / 3)
    return Smooth(q0, q1, T, limits=limits, robot=robot)


def stanford_demo(T=10.0, *, limits=None, robot=None):
    """The Stanford arm demo motion (robots.md): from ``(0, pi/2, 0.5, 0, 0, 0)`` to
    ``(pi/3, pi/3, 0.6, pi/3, pi/3, pi/3)`` (q3 in metres) with the smooth profile."""
    p3 = math.pi / 3
    q0 = np.array([0.0, math.pi / 2, 0.5, 0.0, 0.0, 0.0])
    q1 = np.array([p3, p3, 0.6, p3, p3, p3])
    return Smooth(q0, q1, T, limits=limits, robot=robot)


def quintic_coefficients(q0, q1, T, v0, v1, a0, a1):
    """Coefficients ``c`` (shape ``(6, ...)``) of ``q(t) = sum_k c[k] t^k`` on ``[0, T]`` with
    ``q(0) = q0, q'(0) = v0, q''(0) = a0`` and ``q(T) = q1, q'(T) = v1, q''(T) = a1``. The
    arguments broadcast (e.g. ``(m, n)`` ends with ``T`` of shape ``(m, 1)``: m segments, as
    the ROS 2 node's trajectory interpolation uses it)."""
    c0, c1, c2 = q0, v0, a0 / 2.0
    # remaining three from q(T), q'(T), q''(T)
    h = q1 - (c0 + c1 * T + c2 * T**2)
    hv = v1 - (c1 + 2.0 * c2 * T)
    ha = a1 - 2.0 * c2
    c3 = (20.0 * h - 8.0 * hv * T + ha * T**2) / (2.0 * T**3)
    c4 = (-30.0 * h + 14.0 * hv * T - 2.0 * ha * T**2) / (2.0 * T**4)
    c5 = (12.0 * h - 6.0 * hv * T + ha * T**2) / (2.0 * T**5)
    return np.array([c0, c1, c2, c3, c4, c5])


def _poly_eval(c, t):
    """q, qd, qdd of the quintic ``c`` (6, n) at local times ``t`` (m, 1)."""
    Q = c[0] + t * (c[1] + t * (c[2] + t * (c[3] + t * (c[4] + t * c[5]))))
    QD = c[1] + t * (2 * c[2] + t * (3 * c[3] + t * (4 * c[4] + t * 5 * c[5])))
    QDD = 2 * c[2] + t * (6 * c[3] + t * (12 * c[4] + t * 20 * c[5]))
    return Q, QD, QDD


class Quintic(Trajectory):
    """Quintic polynomial from ``q0`` to ``q1`` in ``T`` seconds with end velocities
    ``qd0``, ``qd1`` and accelerations ``qdd0``, ``qdd1`` (all zero by default: rest to rest).

    After ``T`` the reference holds ``q1`` at rest, so non-zero end velocities make ``qd``
    jump at ``T``; use them only for segments of a longer motion.
    """

    def __init__(self, q0, q1, T, qd0=0.0, qd1=0.0, qdd0=0.0, qdd1=0.0, *, limits=None,
                 robot=None):
        self.q0 = _as_vector(q0, "q0")
        n = self.n = self.q0.shape[0]
        self.q1 = _as_vector(q1, "q1", n)
        self.T = self.duration = _as_time(T)
        ends = [_as_vector(v, name, n) for v, name in
                ((qd0, "qd0"), (qd1, "qd1"), (qdd0, "qdd0"), (qdd1, "qdd1"))]
        self.c = quintic_coefficients(self.q0, self.q1, self.T, *ends)
        self._finish(limits, robot)

    def _eval(self, ts):
        t = np.clip(ts, 0.0, self.T)[:, None]
        Q, QD, QDD = _poly_eval(self.c, t)
        inside = ((ts >= 0.0) & (ts <= self.T))[:, None]
        return Q, np.where(inside, QD, 0.0), np.where(inside, QDD, 0.0)


def quintic(q0, q1, T, qd0=0.0, qd1=0.0, qdd0=0.0, qdd1=0.0, *, limits=None, robot=None):
    """Quintic point-to-point motion (rest to rest unless end velocities are given)."""
    return Quintic(q0, q1, T, qd0, qd1, qdd0, qdd1, limits=limits, robot=robot)


def _as_knots(times, m):
    ts = _as_vector(times, "times")
    if ts.shape[0] != m:
        raise ValueError(f"times: expected {m} times (one per point), got {ts.shape[0]}")
    if np.any(np.diff(ts) <= 0.0):
        raise ValueError("times: must be strictly increasing")
    return ts


def _as_points(points, name="points"):
    try:
        P = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected an (m, n) array of numbers") from exc
    if P.ndim == 1:
        P = P[:, None]
    if P.ndim != 2 or P.shape[0] < 2 or P.shape[1] < 1:
        raise ValueError(f"{name}: expected an (m, n) array with m >= 2 points, got shape "
                         f"{P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name}: values must be finite")
    return P


class PiecewiseQuintic(Trajectory):
    """Rest-to-rest quintic segments between consecutive waypoints (stops at each one)."""

    def __init__(self, points, times, *, limits=None, robot=None):
        P = _as_points(points)
        self.points = P
        self.knots = _as_knots(times, P.shape[0])
        self.n = P.shape[1]
        self.t0 = self.knots[0]
        self.duration = float(self.knots[-1])
        h = np.diff(self.knots)
        z = np.zeros(self.n)
        self.c = np.stack([quintic_coefficients(P[k], P[k + 1], h[k], z, z, z, z)
                           for k in range(P.shape[0] - 1)])  # (segments, 6, n)
        self._finish(limits, robot, extra_times=self.knots)

    def _eval(self, ts):
        kn = self.knots
        tc = np.clip(ts, kn[0], kn[-1])
        seg = np.clip(np.searchsorted(kn, tc, side="right") - 1, 0, len(kn) - 2)
        tl = (tc - kn[seg])[:, None]
        Q, QD, QDD = _poly_eval(self.c[seg].transpose(1, 0, 2), tl)  # coefficients (6, m, n)
        inside = ((ts >= kn[0]) & (ts <= kn[-1]))[:, None]
        return Q, np.where(inside, QD, 0.0), np.where(inside, QDD, 0.0)


class CubicSpline(Trajectory):
    """A C2 cubic spline through ``points`` (m, n) at ``times`` (m,).

    ``bc="clamped"`` uses end velocities ``qd0``/``qd1`` (zero by default, so the motion starts
    and ends at rest); ``"natural"`` has zero acceleration at both ends; ``"not-a-knot"`` a
    continuous third derivative at the second and second-to-last knots (through three points:
    the parabola). The spline is SciPy's ``scipy.interpolate.CubicSpline``; ``sample`` gives its
    value and first two derivatives. Outside ``[times[0], times[-1]]`` the end points are held
    at rest.
    """

    def __init__(self, points, times, bc="clamped", qd0=0.0, qd1=0.0, *, limits=None,
                 robot=None):
        P = _as_points(points)
        self.points = P
        self.knots = _as_knots(times, P.shape[0])
        self.n = P.shape[1]
        self.duration = float(self.knots[-1])
        v0 = _as_vector(qd0, "qd0", self.n)
        v1 = _as_vector(qd1, "qd1", self.n)
        if bc not in ("clamped", "natural", "not-a-knot"):
            raise ValueError(f"bc: expected 'clamped', 'natural' or 'not-a-knot', got {bc!r}")
        self.bc = bc
        from scipy.interpolate import CubicSpline as _Spline

        bc_type = ((1, v0), (1, v1)) if bc == "clamped" else bc
        self._spline = _Spline(self.knots, P, axis=0, bc_type=bc_type, extrapolate=False)
        self._finish(limits, robot, extra_times=self.knots)

    def _eval(self, ts):
        x = self.knots
        tc = np.clip(ts, x[0], x[-1])
        spline = self._spline
        inside = ((ts >= x[0]) & (ts <= x[-1]))[:, None]
        return (spline(tc), np.where(inside, spline(tc, 1), 0.0),
                np.where(inside, spline(tc, 2), 0.0))


def waypoints(points, times, kind="cubic", *, limits=None, robot=None):
    """A motion through ``points`` (m, n) reached at ``times`` (m,), starting and ending at rest.

    ``kind="cubic"``: one clamped cubic spline, C2, passing through the interior waypoints
    without stopping; ``kind="quintic"``: rest-to-rest quintic segments, stopping at every
    waypoint.
    """
    if kind == "cubic":
        return CubicSpline(points, times, bc="clamped", limits=limits, robot=robot)
    if kind == "quintic":
        return PiecewiseQuintic(points, times, limits=limits, robot=robot)
    raise ValueError(f"kind: expected 'cubic' or 'quintic', got {kind!r}")


class Sampled(CubicSpline):
    """Sampled positions ``q`` (m, n) at times ``t`` (m,), interpolated by a cubic spline.

    ``qd`` and ``qdd`` are the spline's first and second derivatives. ``bc`` defaults to
    ``"not-a-knot"`` (no assumption about the end velocities); pass ``bc="clamped"`` for data
    that starts and ends at rest. Outside the sampled interval the end samples are held at rest.
    """

    def __init__(self, t, q, bc="not-a-knot", *, limits=None, robot=None):
        super().__init__(q, t, bc=bc, limits=limits, robot=robot)


def _is_number(s):
    try:
        float(s)
    except ValueError:
        return False
    return True


def from_csv(path, *, time_column=0, columns=None, delimiter=",", bc="not-a-knot",
             limits=None, robot=None, max_bytes=safe_io.MAX_BYTES):
    """Read sampled positions from a CSV file and interpolate them (see :class:`Sampled`).

    The file has one row per sample; an optional first line of column names is detected.
    ``time_column`` (index or name) holds the time in seconds. ``columns`` selects the
    position columns (indices or names); by default, the columns named ``q_*`` (as written by
    ``SimulationResult.to_csv``, ``q_ref_*`` excluded) if there are any, else every column
    but the time. The file must be a regular file of at most ``max_bytes`` bytes (default
    64 MiB; :mod:`robodyn.safe_io`).
    """
    path = os.fspath(path)
    text = safe_io.read_text(path, max_bytes, hint=" (from_csv(..., max_bytes=) allows more)")
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
            if r and any(c.strip() for c in r)]
    del text
    if not rows:
        raise ValueError(f"{path}: empty CSV file")
    header = None
    if not all(_is_number(c) for c in rows[0]):
        header = [c.strip() for c in rows[0]]
        rows = rows[1:]
    try:
        data = np.array([[float(c) for c in r] for r in rows], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}: non-numeric value in the data rows ({exc})") from exc
    if data.ndim != 2 or data.shape[0] < 2:
        raise ValueError(f"{path}: need at least two rows of samples")

    def index(c):
        if isinstance(c, str):
            if header is None or c not in header:
                raise ValueError(f"{path}: no column named {c!r}")
            return header.index(c)
        return int(c)

    tc = index(time_column)
    if columns is None:
        if header is not None and any(h.startswith("q_") and not h.startswith("q_ref_")
                                      for h in header):
            cols = [i for i, h in enumerate(header)
                    if h.startswith("q_") and not h.startswith("q_ref_")]
        else:
            cols = [i for i in range(data.shape[1]) if i != tc]
    else:
        cols = [index(c) for c in columns]
    if not cols:
        raise ValueError(f"{path}: no position columns")
    return Sampled(data[:, tc], data[:, cols], bc=bc, limits=limits, robot=robot)


class Constant(Trajectory):
    """A set point: ``q`` for all t, zero velocity and acceleration (``duration`` 0)."""

    def __init__(self, q, *, limits=None, robot=None):
        self.q = _as_vector(q, "q")
        self.n = self.q.shape[0]
        self.duration = 0.0
        self._finish(limits, robot)

    def __call__(self, t, out=None):
        if out is None:
            out = np.empty((3, self.n))
        out[0] = self.q
        out[1:] = 0.0
        return out[0], out[1], out[2]

    def _eval(self, ts):
        m = ts.shape[0]
        return (np.broadcast_to(self.q, (m, self.n)).copy(), np.zeros((m, self.n)),
                np.zeros((m, self.n)))


def constant(q, *, limits=None, robot=None):
    """Hold the set point ``q``."""
    return Constant(q, limits=limits, robot=robot)


def default_reference(robot, duration=None, move_time=None):
    """The reference ``robodyn simulate`` uses when none is given.

    - ``intelledex_605``: Nie's thesis test motion (T = 2 s unless ``move_time``);
    - ``stanford_arm``: the demo motion of robots.md with T = ``move_time``, else
      ``duration``, else 10 s;
    - any other robot: a smooth move from the zero pose (clipped into the limits) by 0.3 rad
      per revolute joint and 0.05 m per prismatic joint, reversed where that would leave the
      limits, T = ``move_time``, else ``duration``, else 2 s.
    """
    name = getattr(robot, "name", "")
    if name == "intelledex_605" and robot.n == 6:
        return thesis_motion(move_time or 2.0, robot=robot)
    if name == "stanford_arm" and robot.n == 6:
        return stanford_demo(move_time or duration or 10.0, robot=robot)
    lower, upper = (np.asarray(x, dtype=np.float64) for x in robot.position_limits)
    q0 = np.clip(np.zeros(robot.n), lower, upper)
    step = np.array([0.05 if b.joint_type == "prismatic" else 0.3 for b in robot.spec.bodies])
    q1 = np.where(q0 + step <= upper, q0 + step, q0 - step)
    q1 = np.clip(q1, lower, upper)
    return smooth(q0, q1, move_time or duration or 2.0, robot=robot)
