"""The reference a node follows: the joint order of the messages (:class:`JointOrder`) and a
piecewise quintic through the points of a trajectory (:class:`Reference`)."""

from __future__ import annotations

import array
import bisect
import math

import numpy as np

from robodyn.control import trajectories

from .params import ConfigError

def gains(value, n: int, name: str) -> np.ndarray:
    """A gain parameter (a number or n numbers, finite and >= 0) as an (n,) array."""
    if isinstance(value, (bool, str, bytes)):
        raise ConfigError(f"{name}: expected a number or {n} numbers, got {value!r}")
    try:
        g = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a number or {n} numbers, got {value!r}") from None
    if g.ndim == 0:
        g = np.full(n, float(g))
    if g.shape != (n,) or not np.all(np.isfinite(g)) or np.any(g < 0.0):
        raise ConfigError(f"{name}: expected a finite, non-negative number or {n} of them, "
                          f"got {value!r}")
    return g




class JointOrder:
    """Maps the joint names of a message onto the robot's joint order.

    ``permutation(names)`` gives ``perm`` with robot joint ``j`` at message index ``perm[j]``,
    so ``values[perm]`` is in robot order. Raises ValueError for duplicate, unknown or missing
    names. The last mapping is cached: a stream of messages with the same names costs one
    tuple comparison.
    """

    def __init__(self, joint_names):
        self.names = list(joint_names)
        self._index = {name: j for j, name in enumerate(self.names)}
        self._key = None
        self._perm = None

    def permutation(self, names) -> np.ndarray:
        key = tuple(names)
        if key == self._key:
            return self._perm
        if len(set(key)) != len(key):
            dup = sorted({x for x in key if key.count(x) > 1})
            raise ValueError(f"duplicate joint names {dup}")
        unknown = [x for x in key if x not in self._index]
        if unknown:
            raise ValueError(f"unknown joint names {unknown} (the robot has {self.names})")
        missing = [x for x in self.names if x not in key]
        if missing:
            raise ValueError(f"missing joint names {missing}")
        perm = np.empty(len(self.names), dtype=np.intp)
        for i, name in enumerate(key):
            perm[self._index[name]] = i
        self._key, self._perm = key, perm
        return perm


def vector(values, n: int, what: str) -> np.ndarray:
    """``values`` (an array.array of doubles or a sequence) as n finite float64 numbers.

    A view, not a copy, for an array.array('d') (what rclpy gives for float64[] fields).
    """
    if len(values) != n:
        raise ValueError(f"{what}: {len(values)} values for {n} joints")
    if isinstance(values, array.array) and values.typecode == "d":
        a = np.frombuffer(values, dtype=np.float64)
    else:
        try:
            a = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: expected numbers") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: non-finite value (NaN or inf)")
    return a


class Reference:
    """A joint reference ``ref(t, out)`` -> ``out`` = rows (q, qd, qdd), piecewise polynomial.

    ``knots`` are m increasing times (s); ``segments`` is a list of m - 1 (6, n) coefficient
    arrays, segment k being ``q(t) = sum_i c[i] s^i`` with ``s = t - knots[k]`` on
    ``[knots[k], knots[k+1])``. Before ``knots[0]`` the (6, n) polynomial ``first`` and after
    ``knots[-1]`` the polynomial ``last`` are evaluated at s = 0 (held: ``c[0]`` is q,
    ``c[1]`` qd and ``2 c[2]`` qdd).

    A call does one bisection, the (3, 6) basis at s (two ufuncs) and one (3, 6) x (6, n)
    product into ``out`` (a C-contiguous (3, n) float64 buffer); it allocates no arrays.
    """

    def __init__(self, knots, segments, first, last):
        self.knots = [float(t) for t in knots]
        # one view per segment (the call picks one without allocating), made a few thousand
        # at a time: one list() of 100 000 views would hold the interpreter for tens of ms
        self.segments = []
        for a in range(0, len(segments), 4096):
            self.segments.extend(list(segments[a:a + 4096]))
        self.first = first
        self.last = last
        if len(self.segments) != len(self.knots) - 1:
            raise ValueError("Reference: need one segment between consecutive knots")
        self.duration = self.knots[-1]
        # basis row r = d^r/ds^r of (1, s, ..., s^5) = K[r, i] s^E[r, i]: falling factorials K
        # (zero for i < r) and exponents E = max(i - r, 0); b is the (3, 6) basis at s
        i = np.arange(6)
        self._E = np.maximum(i - np.arange(3)[:, None], 0).astype(np.float64)
        self._K = np.array([[math.perm(k, r) for k in i] for r in range(3)], dtype=np.float64)
        self._basis = np.zeros((3, 6))
        self._s = np.zeros(())  # s as a 0-d array: no scalar conversion in the call

    def at(self, t: float) -> np.ndarray:
        """A new (3, n) array (q, qd, qdd) at ``t``: the same value as ``ref(t, out)``, safe to
        call from another thread than the one calling ``ref(t, out)`` (no shared buffer)."""
        out = np.empty((3, self.first.shape[1]))
        knots = self.knots
        if t < knots[0]:
            c, s = self.first, 0.0
        else:
            k = bisect.bisect_right(knots, t) - 1
            c, s = (self.segments[k], t - knots[k]) if k < len(self.segments) else (self.last,
                                                                                     0.0)
        b = np.power(np.array(s), self._E) * self._K
        return np.dot(b, c, out=out)

    def __call__(self, t: float, out: np.ndarray) -> np.ndarray:
        knots = self.knots
        # pick the polynomial and the local time
        if t < knots[0]:
            c, s = self.first, 0.0
        else:
            k = bisect.bisect_right(knots, t) - 1
            if k < len(self.segments):
                c, s = self.segments[k], t - knots[k]
            else:
                c, s = self.last, 0.0
        # basis rows at s, then (q, qd, qdd) = basis @ c
        b = self._basis
        self._s[()] = s
        np.power(self._s, self._E, out=b)
        np.multiply(b, self._K, out=b)
        np.dot(b, c, out=out)
        return out


def _held(q, qd=None, qdd=None) -> np.ndarray:
    """(6, n) polynomial whose value at s = 0 is (q, qd, qdd) (missing ones zero)."""
    c = np.zeros((6, len(q)))
    c[0] = q
    if qd is not None:
        c[1] = qd
    if qdd is not None:
        c[2] = 0.5 * np.asarray(qdd)
    return c


def segment_coefficients(times, P, V=None, A=None) -> np.ndarray:
    """(m - 1, 6, n) coefficients of the polynomials through points P (m, n) at ``times``.

    Positions only: linear; with velocities V: cubic Hermite; with accelerations A too:
    quintic Hermite (position, velocity and acceleration continuous at every point). This is
    the interpolation of ros2_control's joint_trajectory_controller.
    """
    T = np.asarray(times, dtype=np.float64)
    h = np.diff(T)[:, None]
    p0, p1 = P[:-1], P[1:]
    dp = p1 - p0
    C = np.zeros((len(T) - 1, 6, P.shape[1]))
    C[:, 0] = p0
    if V is None:
        C[:, 1] = dp / h
        return C
    v0, v1 = V[:-1], V[1:]
    C[:, 1] = v0
    if A is None:
        C[:, 2] = (3.0 * dp / h - 2.0 * v0 - v1) / h
        C[:, 3] = (-2.0 * dp / h + v0 + v1) / h**2
        return C
    # quintic Hermite: the end conditions of robodyn.trajectories' quintic, per segment
    c = trajectories.quintic_coefficients(p0, p1, h, v0, v1, A[:-1], A[1:])
    C[:] = np.moveaxis(c, 0, 1)
    return C


def reference_from_points(times, P, V=None, A=None, start=None) -> Reference:
    """The Reference through points P (m, n) (V, A optional (m, n)) at ``times`` (m,).

    One point is held as given (velocity and acceleration zero if omitted). Several points
    are interpolated (:func:`segment_coefficients`); if the first time is positive and
    ``start`` = (q, qd, qdd) is given, the reference starts there at t = 0, otherwise the
    first position is held until the first time. After the last time its position is held
    at rest.
    """
    T = np.asarray(times, dtype=np.float64)
    if len(T) == 1:
        held = _held(P[0], None if V is None else V[0], None if A is None else A[0])
        return Reference(T, [], held, held)
    if T[0] > 0.0 and start is not None:
        q0, qd0, qdd0 = start
        T = np.concatenate(([0.0], T))
        P = np.vstack((q0, P))
        V = None if V is None else np.vstack((qd0, V))
        A = None if A is None else np.vstack((qdd0, A))
    C = segment_coefficients(T, P, V, A)
    if not np.all(np.isfinite(C)):
        raise ValueError("points too close in time (the interpolating polynomial overflows)")
    return Reference(T, C, _held(P[0]), _held(P[-1]))
