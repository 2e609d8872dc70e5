"""A coefficient given as a curve over the deflection: :class:`Curve` (evaluated in C++)."""

from __future__ import annotations

import numpy as np

__all__ = ["Curve", "CURVE_KINDS"]

CURVE_KINDS = ("linear", "cubic")


class Curve:
    """``y(s)`` through knots ``(x_i, y_i)``: piecewise linear (``kind="linear"``) or the
    natural cubic spline (``"cubic"``: zero second derivative at both ends). Outside the knots
    the end value is held (``y_0`` below ``x_0``, ``y_m`` above ``x_m``).

    Used as a stiffness or damping coefficient over the deflection of a force element
    (``Spring(..., stiffness_curve=Curve(...))``): the force is ``k(delta) delta + c(delta) rate``
    and the spring's potential ``integral_0^delta k(s) s ds``. The curve is evaluated in C++;
    ``x`` must be finite and strictly increasing (at least two knots), ``y`` finite and, for
    the coefficients of a force element, >= 0.
    """

    def __init__(self, x, y, kind: str = "linear"):
        x = np.array(x, dtype=float).reshape(-1)
        y = np.array(y, dtype=float).reshape(-1)
        if kind not in CURVE_KINDS:
            raise ValueError(f"Curve kind: expected one of {', '.join(CURVE_KINDS)}, got {kind!r}")
        if x.size < 2 or y.shape != x.shape:
            raise ValueError(f"Curve: expected x and y of one length >= 2, got {x.size} and "
                             f"{y.size} values")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("Curve: x and y must be finite")
        if not np.all(np.diff(x) > 0):
            i = int(np.argmin(np.diff(x) > 0))
            raise ValueError(f"Curve: knots x must be strictly increasing (x[{i}] = {x[i]:g}, "
                             f"x[{i + 1}] = {x[i + 1]:g})")
        self.x, self.y, self.kind = x, y, kind
        self.x.setflags(write=False)
        self.y.setflags(write=False)
        self.second_derivatives = _natural_spline(x, y) if kind == "cubic" else np.zeros_like(x)
        self.second_derivatives.setflags(write=False)

    def __repr__(self) -> str:
        return f"Curve({self.x.size} knots on [{self.x[0]:g}, {self.x[-1]:g}], {self.kind!r})"


def _natural_spline(x, y):
    """Second derivatives M of the natural cubic spline through (x, y): M_0 = M_m = 0 and
    h_{i-1} M_{i-1} + 2 (h_{i-1} + h_i) M_i + h_i M_{i+1} = 6 (slope_i - slope_{i-1})."""
    m = x.size - 1
    M = np.zeros(m + 1)
    if m < 2:
        return M
    h = np.diff(x)
    slope = np.diff(y) / h
    A = np.zeros((m - 1, m - 1))
    idx = np.arange(m - 1)
    A[idx, idx] = 2.0 * (h[:-1] + h[1:])
    A[idx[1:], idx[:-1]] = h[1:-1]
    A[idx[:-1], idx[1:]] = h[1:-1]
    M[1:-1] = np.linalg.solve(A, 6.0 * np.diff(slope))
    return M
