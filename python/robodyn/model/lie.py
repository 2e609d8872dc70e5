"""SE(3) helpers for integrating a free-flyer on its manifold (NumPy only).

A free-flyer's configuration is a pose T = (R, p) and its velocity the body twist
xi = [w; v] (angular; linear, base axes), so T' = T xi^ and ``robot.integrate(q, xi, 1)`` is
T exp(xi^). Writing T(t) = T0 exp(theta(t)^) with theta in the tangent space at T0, the body
twist is xi = Jr(theta) theta' (Jr the right Jacobian of SE(3)), so

    theta' = Jr(theta)^-1 xi                                  (the "dexp^-1" transport)

which is what a Runge-Kutta-Munthe-Kaas stage needs (Munthe-Kaas 1998; Iserles et al. 2000,
"Lie-group methods"). Closed forms: Barfoot, "State Estimation for Robotics" (2017),
sec. 7.1.5 (SO(3) left Jacobian and the SE(3) block Q), with Jr(xi) = Jl(-xi).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["se3_right_jacobian_inv", "se3_dexpinv"]

# Jr(xi)^-1 = sum_k c_k ad_xi^k with c_k = (-1)^k B_k / k! (Bernoulli numbers, B_1 = -1/2):
# 1, 1/2, 1/12, 0, -1/720, 0, 1/30240, 0, -1/1209600, 0, 1/47900160; what is left is below
# 1e-15 |v| for |phi| < SERIES_ANGLE (the series converges for |phi| < 2 pi, by about
# (|phi| / 2 pi)^2 every second term)
_BERNOULLI = (0.5, 1.0 / 12.0, 0.0, -1.0 / 720.0, 0.0, 1.0 / 30240.0, 0.0, -1.0 / 1209600.0,
              0.0, 1.0 / 47900160.0)
SERIES_ANGLE = 0.2


def _hat(x, out):
    out[0, 0] = out[1, 1] = out[2, 2] = 0.0
    out[0, 1], out[0, 2] = -x[2], x[1]
    out[1, 0], out[1, 2] = x[2], -x[0]
    out[2, 0], out[2, 1] = -x[1], x[0]
    return out


def _so3_left_jacobian_inv(K, th):
    """Jl(phi)^-1 = 1 - K / 2 + c K^2 with K = hat(phi), th = |phi| (th < 2 pi)."""
    if th < 0.1:  # the series: the closed form cancels for small angles
        t2 = th * th
        c = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2 * t2 * t2 / 1209600.0
    else:
        c = (1.0 - th * math.sin(th) / (2.0 * (1.0 - math.cos(th)))) / (th * th)
    return np.eye(3) - 0.5 * K + c * (K @ K)


def _se3_Q(P, K, th):
    """Barfoot's Q(rho, phi) (eq. 7.86b) with P = hat(rho), K = hat(phi), th = |phi|."""
    t2 = th * th
    if th < 0.1:  # the series (truncation below 1e-16): the closed forms cancel
        t4 = t2 * t2
        c1 = 1.0 / 6.0 - t2 / 120.0 + t4 / 5040.0 - t4 * t2 / 362880.0
        c2 = 1.0 / 24.0 - t2 / 720.0 + t4 / 40320.0 - t4 * t2 / 3628800.0
        c3 = 1.0 / 120.0 - t2 / 2520.0 + t4 / 120960.0 - t4 * t2 / 9979200.0
    else:
        s, c = math.sin(th), math.cos(th)
        c1 = (th - s) / (t2 * th)
        c2 = (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2)
        c3 = (2.0 * th - 3.0 * s + th * c) / (2.0 * t2 * t2 * th)
    KP, PK = K @ P, P @ K
    KPK = KP @ K
    KK = K @ K
    return (0.5 * P + c1 * (KP + PK + KPK) + c2 * (KK @ P + P @ KK - 3.0 * KPK)
            + c3 * (KPK @ K + K @ KPK))


def se3_right_jacobian_inv(xi, out=None):
    """(6, 6) Jr(xi)^-1 for xi = [phi; rho] (angular first), |phi| < 2 pi.

    exp((xi + d)^) = exp(xi^) exp((Jr(xi) d)^) to first order in d. In robodyn's [angular;
    linear] order Jr(xi) = [[A, 0], [B, A]] with A = Jl(-phi), B = Q(-rho, -phi), so
    Jr^-1 = [[A^-1, 0], [-A^-1 B A^-1, A^-1]].
    """
    K, P = np.empty((3, 3)), np.empty((3, 3))
    _hat(-np.asarray(xi[:3], dtype=float), K)
    _hat(-np.asarray(xi[3:6], dtype=float), P)
    th = math.sqrt(float(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]))
    Ainv = _so3_left_jacobian_inv(K, th)
    B = _se3_Q(P, K, th)
    if out is None:
        out = np.empty((6, 6))
    out[:3, :3] = Ainv
    out[:3, 3:] = 0.0
    out[3:, :3] = -Ainv @ B @ Ainv
    out[3:, 3:] = Ainv
    return out


def se3_dexpinv(xi, v, out):
    """out[:6] = Jr(xi)^-1 v[:6] (xi = [phi; rho], v a twist [w; u], angular first).

    For |phi| < SERIES_ANGLE the series in ad_xi (ad_xi v = [phi x w; phi x u + rho x w])
    applied to the vector, in scalar arithmetic (a few microseconds); otherwise the closed
    form :func:`se3_right_jacobian_inv`.
    """
    # (item() reads a Python float without a view or a generator: the integrators' stages
    # call this, and allocate nothing)
    item = xi.item
    p0, p1, p2, r0, r1, r2 = item(0), item(1), item(2), item(3), item(4), item(5)
    if p0 * p0 + p1 * p1 + p2 * p2 >= SERIES_ANGLE * SERIES_ANGLE:
        out[:6] = se3_right_jacobian_inv(xi) @ v[:6]
        return out
    item = v.item
    w0, w1, w2, u0, u1, u2 = item(0), item(1), item(2), item(3), item(4), item(5)
    a0, a1, a2, b0, b1, b2 = w0, w1, w2, u0, u1, u2
    for c in _BERNOULLI:
        # (w, u) <- ad_xi (w, u)
        w0, w1, w2, u0, u1, u2 = (
            p1 * w2 - p2 * w1, p2 * w0 - p0 * w2, p0 * w1 - p1 * w0,
            p1 * u2 - p2 * u1 + r1 * w2 - r2 * w1,
            p2 * u0 - p0 * u2 + r2 * w0 - r0 * w2,
            p0 * u1 - p1 * u0 + r0 * w1 - r1 * w0)
        if c:
            a0 += c * w0
            a1 += c * w1
            a2 += c * w2
            b0 += c * u0
            b1 += c * u1
            b2 += c * u2
    out[0], out[1], out[2], out[3], out[4], out[5] = a0, a1, a2, b0, b1, b2
    return out
