"""Joint limits as hard stops: a joint that crosses its limit is put back on it and its
velocity reflected with the restitution (:class:`JointLimits`); with a free-floating base the
stop is an impulse on the whole body that keeps its momentum (:class:`FloatingLimits`)."""

from __future__ import annotations

import math

import numpy as np

from .. import _core

JOINT_LIMITS = ("stop", "report", "ignore")


class JointLimits:
    """Hard stops (or only the record of violations) at the end of every step: the C++ loop's
    ``joint_stops`` (simulate.hpp), called through ``robodyn._core``."""

    def __init__(self, lower, upper, stops, restitution):
        self.lower = np.ascontiguousarray(lower, dtype=np.float64)
        self.upper = np.ascontiguousarray(upper, dtype=np.float64)
        self.stops = stops
        self.restitution = restitution
        n = lower.shape[0]
        self.hits = np.zeros(n)
        self.excess = np.zeros(n)

    def __call__(self, q, qd):
        _core._joint_stops(q, qd, self.lower, self.upper, self.stops, self.restitution,
                           self.hits, self.excess)


class FloatingLimits(JointLimits):
    """The joints' limits of a free-floating robot, on the full q (nq,) and v (nv,): the same
    stops as :class:`JointLimits` on q[7:], v[6:] (the position put back on the limit, the
    joint's outward velocity reversed and scaled by the restitution), but the velocity change
    is made by an internal impulse between the link and its parent, ``M dv = E lam``, so
    that the base and the other joints take the reaction (a fixed base absorbs it; a free one
    cannot), and the base's velocity then restores the momentum ``robot.momentum`` had before
    the stop (moving a joint back onto its limit moves the bodies)."""

    def __init__(self, robot, lower, upper, stops, restitution):
        super().__init__(lower, upper, stops, restitution)
        self.robot = robot
        m = self.lower.shape[0]
        nv = m + 6
        # buffers and their views, allocated once: a step allocates nothing, at a stop or not
        self._views = None              # (q, v, q[7:], v[6:], v[:6]) of the loop's arrays
        self._flags = np.empty(m, dtype=bool)
        self._before = np.empty(m)      # the joints' velocities before the stops
        self._ones = np.ones(m)
        self._D = np.zeros((m, m))      # the projection on the stopped joints (a 0/1 diagonal)
        self._D_diag = self._D.reshape(-1)[::m + 1]
        self._g = np.empty(m)           # 1 - that diagonal
        self._T = np.empty((m, m))      # D X_j
        self._lam = np.empty(m)         # the impulses on the joints
        self._dv = np.empty(nv)
        self._h0 = np.empty(6)          # momentum before / after
        self._h = np.empty(6)
        self._M = np.empty((nv, nv))
        self._E = np.ascontiguousarray(np.eye(nv)[:, 6:])  # the joints' columns of 1
        self._X = np.empty((nv, m))     # M^-1 E
        self._Xj = self._X[6:]          # its joints' rows: E' M^-1 E
        self._S = np.empty((m, m))
        self._S_diag = self._S.reshape(-1)[::m + 1]
        self._Ag = np.empty((6, nv))    # centroidal momentum matrix, its base columns
        self._Ag_base = self._Ag[:, :6]
        self._A = np.empty((6, 6))      # (those, the moment moved to the origin)
        self._A_rows = tuple(self._A)
        self._c = np.empty(3)           # centre of mass, its coordinates as 0-d views
        self._c_i = tuple(self._c[i:i + 1].reshape(()) for i in range(3))
        self._t = np.empty((2, 6))      # scratch rows for the cross products
        self._t_rows = tuple(self._t)

    def __call__(self, q, v):
        """The stops on q (nq,), v (nv,) in place; True if the state was changed."""
        views = self._views
        if views is None or views[0] is not q or views[1] is not v:
            views = self._views = (q, v, q[7:], v[6:], v[:6])
        qj, vj = views[2], views[3]
        flags = self._flags
        # (count_nonzero, unlike any(), allocates nothing)
        np.greater(qj, self.upper, out=flags)
        if not np.count_nonzero(flags):
            np.less(qj, self.lower, out=flags)
            if not np.count_nonzero(flags):
                return False
        if not self.stops:
            super().__call__(qj, vj)  # only the record
            return False
        robot = self.robot
        h0 = robot.momentum(q, v, out=self._h0)
        before = self._before
        np.copyto(before, vj)
        super().__call__(qj, vj)
        np.not_equal(vj, before, out=flags)
        if np.count_nonzero(flags):
            # the joints J whose outward velocity was stopped: the velocity change the stops
            # ask for, "wanted" (zero on the other joints), is made by impulses lam on J,
            # dv = M^-1 E lam with (E' M^-1 E)_JJ lam = wanted: exactly `wanted` on J. The
            # system is solved at full size, D (E' M^-1 E) D + 1 - D with D the projection
            # on J, where wanted and so lam are zero off J (no index arrays, no broadcasting:
            # nothing allocated)
            lam, g, S, T, X = self._lam, self._g, self._S, self._T, self._X
            np.subtract(vj, before, out=lam)
            np.copyto(vj, before)
            np.copyto(self._D_diag, flags)
            np.subtract(self._ones, self._D_diag, out=g)
            np.copyto(X, self._E)
            _core._solve(robot.mass_matrix(q, out=self._M), X)
            np.dot(self._D, self._Xj, out=T)
            np.dot(T, self._D, out=S)
            self._S_diag += g
            _core._solve(S, lam)
            v += np.dot(X, lam, out=self._dv)
        # the joints put back on their limits moved the bodies (by about |qd| dt): the base's
        # velocity takes up the momentum that changed, h(q, v) = h0, through the base columns
        # of the momentum's matrix about the world origin (A_G with the moment moved there:
        # A[:3] += c x A[3:], column by column, as np.cross evaluates it)
        A, t0, t1 = self._A, *self._t_rows
        rows, c = self._A_rows, self._c_i
        robot.centroidal_momentum_matrix(q, out=self._Ag)
        np.copyto(A, self._Ag_base)
        robot.center_of_mass(q, out=self._c)
        for row, i, j in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
            np.multiply(rows[3 + j], c[i], out=t0)
            np.multiply(rows[3 + i], c[j], out=t1)
            t0 -= t1
            a = rows[row]
            a += t0
        h = robot.momentum(q, v, out=self._h)
        np.subtract(h0, h, out=h)
        _core._solve(A, h)
        v_base = views[4]
        v_base += h
        return True


def joint_limits(robot, mode, restitution, floating=False):
    """The plant's limits as a :class:`JointLimits`, or None (no finite limit, "ignore").
    ``floating``: the robot's q starts with its free base's 7 coordinates, which have no
    limits; the result then covers the joints only (q[7:], v[6:])."""
    if mode not in JOINT_LIMITS:
        raise ValueError(f"joint_limits: expected one of {', '.join(JOINT_LIMITS)}, "
                         f"got {mode!r}")
    try:
        e = float(restitution)
    except (TypeError, ValueError):
        e = math.nan
    if not 0.0 <= e <= 1.0:
        raise ValueError(f"restitution: expected a number in [0, 1], got {restitution!r}")
    limits = getattr(robot, "position_limits", None)
    if mode == "ignore" or limits is None:
        return None
    lower, upper = (np.array(x, dtype=np.float64) for x in limits)
    if floating:
        lower, upper = lower[7:], upper[7:]
    if not (np.isfinite(lower).any() or np.isfinite(upper).any()):
        return None
    if floating:
        return FloatingLimits(robot, lower, upper, mode == "stop", e)
    return JointLimits(lower, upper, mode == "stop", e)
