"""The limits a node checks: a reference's points and interpolation within the joint limits,
a measured joint state within the limits plus a margin."""

from __future__ import annotations

import numpy as np

from .reference import Reference

def joint_limits(robot):
    """``(lower, upper, velocity)`` (n,) arrays for the reference checks: a joint whose lower
    limit is not below its upper one has no position limit (-inf, inf), and a non-positive or
    infinite velocity limit is no limit (inf)."""
    lower, upper = (np.asarray(x, dtype=np.float64).copy() for x in robot.position_limits)
    free = ~(lower < upper)
    lower[free], upper[free] = -np.inf, np.inf
    vmax = np.asarray(robot.velocity_limits, dtype=np.float64).copy()
    vmax[~(vmax > 0.0) | ~np.isfinite(vmax)] = np.inf
    return lower, upper, vmax




_CHECK_SAMPLES = 8
_CHECK_CHUNK = 1024  # intervals per numpy call: a few hundred microseconds each


def _limit_check(limits, names):
    """``check(Q, QD, QDD, where)`` raising ValueError (naming ``where(row)`` and the joint)
    unless the (k, n) values are finite, Q within [lower, upper] and |QD| within the velocity
    limit (QD, QDD may be None), with a relative tolerance of 1e-9 for rounding."""
    lower, upper, vmax = limits
    n = lower.shape[0]
    names = [f"joint {j}" for j in range(n)] if names is None else list(names)
    tol_p = 1e-9 * np.maximum(1.0, np.maximum(np.abs(np.where(np.isfinite(lower), lower, 0)),
                                              np.abs(np.where(np.isfinite(upper), upper, 0))))
    lo, hi = lower - tol_p, upper + tol_p
    vlim = vmax * (1.0 + 1e-9) + 1e-12

    def check(Q, QD, QDD, where):
        # Q, QD, QDD: (k, n) values at the instants described by where(i)
        for what, X in (("position", Q), ("velocity", QD), ("acceleration", QDD)):
            if X is None:
                continue
            bad = ~np.isfinite(X)
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise ValueError(f"{where(i)}: {names[j]} {what} is not finite (overflow)")
        for bad, what in ((Q < lo, "below"), (Q > hi, "above")):
            if bad.any():
                i, j = np.argwhere(bad)[0]
                lim = lower[j] if what == "below" else upper[j]
                raise ValueError(f"{where(i)}: {names[j]} position {Q[i, j]:.6g} is {what} its "
                                 f"limit {lim:.6g}")
        if QD is None:
            return
        bad = np.abs(QD) > vlim
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"{where(i)}: {names[j]} velocity {QD[i, j]:.6g} exceeds its "
                             f"limit {vmax[j]:.6g}")

    return check


def check_points(P, V, limits, names=None):
    """Raise ValueError unless the (m, n) positions P are within the joint limits and the
    velocities V (or None) within the velocity limits (:func:`joint_limits`), naming the
    first point and joint that are not."""
    _limit_check(limits, names)(P, V, None, lambda i: f"point {i}")


def check_reference(ref: Reference, limits, names=None):
    """Raise ValueError unless the reference stays within ``limits`` = ``(lower, upper,
    velocity)`` (:func:`joint_limits`): positions within [lower, upper] and ``|qd|`` within the
    velocity limit, and (q, qd, qdd) finite, at every point and at 8 equally spaced instants
    inside every interval (cubic and quintic pieces can overshoot between points). A relative
    tolerance of 1e-9 allows for rounding. ``names`` name the joints in the message."""
    check = _limit_check(limits, names)

    # the held polynomials (before the first and after the last point)
    for label, c in (("start", ref.first), ("end", ref.last)):
        check(c[0:1], c[1:2], 2.0 * c[2:3], lambda i, label=label: f"reference {label}")
    # the intervals, at 0, 1/S, ..., (S-1)/S of each, in chunks (bounded memory)
    segs = ref.segments
    if not segs:
        return
    knots = np.asarray(ref.knots)
    frac = np.arange(_CHECK_SAMPLES) / _CHECK_SAMPLES
    i6 = np.arange(6)
    for a in range(0, len(segs), _CHECK_CHUNK):
        C = np.asarray(segs[a:a + _CHECK_CHUNK])  # (k, 6, n)
        h = np.diff(knots[a:a + C.shape[0] + 1])
        s = h[:, None] * frac[None, :]  # (k, S)
        S = s[:, :, None]
        # basis rows of q, qd, qdd at s: (k, S, 6)
        Bq = S ** i6
        Bd = i6 * S ** np.maximum(i6 - 1, 0)
        Bdd = i6 * np.maximum(i6 - 1, 0) * S ** np.maximum(i6 - 2, 0)
        with np.errstate(over="ignore", invalid="ignore"):
            vals = [np.matmul(B, C).reshape(-1, C.shape[2]) for B in (Bq, Bd, Bdd)]

        def where(i, a=a):
            k = a + i // _CHECK_SAMPLES
            f = (i % _CHECK_SAMPLES) / _CHECK_SAMPLES
            return (f"t = {knots[k] + f * (knots[k + 1] - knots[k]):.6g} s (interval {k}"
                    f"{'' if f else ', at its start'})")

        check(*vals, where)


def joint_state_bounds(limits, margin):
    """``(lower, upper, velocity)`` a measured joint state must keep: the joint limits
    (:func:`joint_limits`) widened by ``margin`` times each joint's range on either side, and
    the velocity limits times ``1 + margin`` (a sensor reads a little past a limit; a joint
    without a limit keeps none)."""
    lower, upper, vmax = limits
    span = np.where(np.isfinite(upper - lower), upper - lower, 0.0)
    return lower - margin * span, upper + margin * span, vmax * (1.0 + margin)


def check_joint_state(q, qd, bounds, names):
    """Raise ValueError unless the (n,) positions ``q`` (and velocities ``qd``, or None), in
    robot joint order, are finite and within ``bounds`` (:func:`joint_state_bounds`), naming
    the first joint that is not."""
    lower, upper, vmax = bounds
    for what, x in (("position", q), ("velocity", qd)):
        if x is not None and not np.all(np.isfinite(x)):
            j = int(np.argmax(~np.isfinite(x)))
            raise ValueError(f"{names[j]} {what} is not finite")
    bad = (q < lower) | (q > upper)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"{names[j]} position {q[j]:.6g} is outside [{lower[j]:.6g}, "
                         f"{upper[j]:.6g}] (its limits and the joint_state_margin)")
    if qd is not None:
        bad = np.abs(qd) > vmax
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(f"{names[j]} velocity {qd[j]:.6g} exceeds {vmax[j]:.6g} (its "
                             "limit and the joint_state_margin)")


# the range of a builtin_interfaces/Duration (int32 seconds), in s
