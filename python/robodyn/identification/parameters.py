"""Dynamic parameter identification from measured joint torques.

The inverse dynamics is linear in the parameters::

    tau = Y(q, qd, qdd) pi + Yj(q, qd, qdd) pj

with ``pi = robot.dynamic_parameters()`` (10 per body: ``[m, m c, I about the link origin]``,
Pinocchio's order) and ``pj = robot.joint_parameters()`` (armature, viscous and Coulomb
friction per joint). Not every parameter shows in the torques: some never act (the mass of a
body on the base joint's axis), others only in fixed combinations. Gautier & Khalil's base
parameters are the identifiable combinations:

- :func:`base_parameters` stacks ``[Y | Yj]`` over random states and finds, by QR with column
  pivoting, the independent columns and the regrouping matrix ``E`` with
  ``tau = Y_base (E p)`` for every parameter vector ``p`` (``Y_base`` = the independent
  columns). ``result.count`` is the number of base parameters.
- :func:`least_squares` identifies the base parameters from measured ``(q, qd, qdd, tau)``
  (ordinary or weighted least squares); :func:`filtered_derivatives` estimates ``qd`` and
  ``qdd`` from sampled ``q`` (zero-phase Butterworth, central differences).
- :func:`consistent_fit` identifies a full, physically consistent parameter set (positive
  mass, positive definite pseudo-inertia through the log-Cholesky parametrisation of Rucker &
  Wensing 2022, non-negative joint terms) by ``scipy.optimize.least_squares``, and returns a
  new :class:`robodyn.Robot` (write it with ``robot.to_urdf()``).
- :func:`fourier_trajectory`: the finite Fourier series excitation of Swevers et al. (1997),
  ``q_j(t) = q0_j + sum_l a_jl / (l w) sin(l w t) - b_jl / (l w) cos(l w t)`` (periodic, so
  the record can be averaged and filtered without edge effects).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
import math

import numpy as np

__all__ = ["BaseParameters", "base_parameters", "least_squares", "Identified",
           "NotIdentifiableError", "filtered_derivatives", "consistent_fit", "fourier_trajectory", "full_regressor",
           "parameters_to_pseudo_inertia", "log_cholesky_to_parameters"]


class NotIdentifiableError(ValueError):
    """The measured data cannot determine the base parameters: the (weighted) regressor of the
    data is rank deficient. ``directions`` lists the parameter combinations the torques do not
    see, each a dict {base parameter name: weight} (the estimate could move along any of them
    without changing the predicted torques)."""

    def __init__(self, message, directions):
        super().__init__(message)
        self.directions = directions


def _finite_batch(arrays):
    """The named (N, n) arrays as float arrays of one row count, each finite; ValueError
    naming the first that is not."""
    out = []
    rows = None
    for name, x, n in arrays:
        try:
            a = np.atleast_2d(np.asarray(x, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected real numbers") from None
        if a.ndim != 2 or a.shape[1] != n or (rows is not None and a.shape[0] != rows):
            want = f"({rows if rows is not None else 'N'}, {n})"
            raise ValueError(f"{name}: expected shape {want}, got {a.shape}")
        bad = ~np.isfinite(a)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"{name}: sample {i}, joint {j} is {a[i, j]} (every value must be "
                             "finite)")
        rows = a.shape[0]
        out.append(a)
    return out


def _null_directions(W, names, rank_tolerance):
    """The directions x with W x = 0 (up to ``rank_tolerance`` relative to the largest singular
    value of W with unit-norm columns), each a dict {name: weight} with the weight of its
    leading parameter 1 and weights below 1e-6 of the largest left out."""
    norms = np.linalg.norm(W, axis=0)
    scale = np.where(norms > 0, norms, 1.0)
    # W's singular values and right vectors are R's (W = Q R): an SVD of (p, p), not (N n, p)
    R = np.linalg.qr(W / scale, mode="r")
    _, s, Vt = np.linalg.svd(R, full_matrices=True)
    big = s[0] if s.size and s[0] > 0 else 1.0
    rank = int(np.sum(s > rank_tolerance * big))
    N = Vt[rank:].T / scale[:, None]  # (p, k) in the parameters' own units
    if N.shape[1] == 0:
        return []
    # a readable basis: one leading parameter per direction (QR with pivoting picks them),
    # the basis rewritten with the identity on the leading parameters
    import scipy.linalg

    _, _, piv = scipy.linalg.qr(N.T, pivoting=True)
    lead = piv[:N.shape[1]]
    B = np.linalg.solve(N[lead].T, N.T)  # (k, p), B[:, lead] = identity
    out = []
    for row in B:
        top = np.max(np.abs(row))
        out.append({names[k]: float(row[k]) for k in np.argsort(-np.abs(row))
                    if abs(row[k]) > 1e-6 * top})
    return out


def _describe(direction):
    """'a - 0.5 d + 0.25 b' of {name: weight}."""
    text = ""
    for name, w in direction.items():
        size = "" if abs(abs(w) - 1.0) < 5e-4 else f"{abs(w):.3g} "
        sign = ("-" if w < 0 else "") if not text else (" - " if w < 0 else " + ")
        text += f"{sign}{size}{name}"
    return text


def full_regressor(robot, q, qd, qdd, joint=True):
    """``[Y | Yj]`` of the batch (N, n) stacked to (N n, 10 n (+ 3 n)); ``joint=False`` leaves
    out the armature / friction columns."""
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    Y = robot.regressor(q, qd, qdd)
    if joint:
        Y = np.concatenate([Y, robot.joint_regressor(q, qd, qdd)], axis=-1)
    return Y.reshape(-1, Y.shape[-1])


def all_parameters(robot, joint=True):
    """``[dynamic_parameters, joint_parameters]`` (the columns of :func:`full_regressor`)."""
    p = robot.dynamic_parameters()
    return np.concatenate([p, robot.joint_parameters()]) if joint else p


@dataclass
class BaseParameters:
    """The base (identifiable) parameters of a robot.

    ``independent``: indices of the full-parameter columns kept (``count`` of them);
    ``E``: (count, p) regrouping matrix, base = ``E @ full`` (``full`` = :func:`all_parameters`);
    ``rank_tolerance``: the relative threshold on |R_kk| used; ``joint``: whether the
    armature / friction columns are included.
    """

    independent: np.ndarray
    E: np.ndarray
    count: int
    joint: bool
    rank_tolerance: float
    names: list

    def regressor(self, robot, q, qd, qdd):
        """Y_base: the independent columns of the full regressor, (N n, count)."""
        return full_regressor(robot, q, qd, qdd, self.joint)[:, self.independent]

    def of(self, robot):
        """The base parameters of ``robot``'s model, ``E @ full``."""
        return self.E @ all_parameters(robot, self.joint)


def _parameter_names(robot, joint):
    labels = ["m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"]
    joints = [b.joint_name for b in robot.spec.bodies]  # every body (coupled joints too)
    names = [f"{j}:{l}" for j in joints for l in labels]
    if joint:
        for kind in ("armature", "damping", "friction"):
            names += [f"{j}:{kind}" for j in joints]
    return names


def random_states(robot, samples, rng):
    """(q, qd, qdd) batches of ``samples`` random states (q within the limits, or +-pi)."""
    lo, hi = robot.position_limits
    q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi), (samples, robot.n))
    return q, rng.standard_normal((samples, robot.n)), rng.standard_normal((samples, robot.n))


def base_parameters(robot, samples=200, rng=None, joint=True, rank_tolerance=1e-8):
    """Base parameters by QR with column pivoting of ``[Y | Yj]`` stacked over ``samples``
    random states (Gautier 1991). Columns whose norm is below ``rank_tolerance`` times the
    largest never act; the rank is the number of |R_kk| above ``rank_tolerance`` |R_00|."""
    import scipy.linalg

    if (isinstance(samples, bool) or not isinstance(samples, (int, np.integer))
            or not 1 <= samples <= 10**6):
        raise ValueError(f"samples: expected an integer in 1..1000000, got {samples!r}")
    try:
        tol = float(rank_tolerance)
    except (TypeError, ValueError):
        tol = math.nan
    if not 0.0 < tol < 1.0:
        raise ValueError(f"rank_tolerance: expected a number in (0, 1), got {rank_tolerance!r}")
    rng = np.random.default_rng(0) if rng is None else rng
    W = full_regressor(robot, *random_states(robot, samples, rng), joint=joint)
    p = W.shape[1]
    # columns scaled to unit norm so the pivoting does not depend on units
    norms = np.linalg.norm(W, axis=0)
    scale = np.where(norms > rank_tolerance * norms.max(), norms, 1.0)
    _, Rm, perm = scipy.linalg.qr(W / scale, mode="economic", pivoting=True)
    d = np.abs(np.diag(Rm))
    r = int(np.sum(d > rank_tolerance * d[0]))
    ind, dep = perm[:r], perm[r:]
    # W_dep = W_ind beta (in unscaled columns): beta = S_ind^-1 R11^-1 R12 S_dep
    beta = scipy.linalg.solve_triangular(Rm[:r, :r], Rm[:r, r:])
    beta = beta / scale[ind][:, None] * scale[dep][None, :]
    E = np.zeros((r, p))
    E[np.arange(r), ind] = 1.0
    E[:, dep] = beta
    order = np.argsort(ind)  # independent columns in parameter order
    return BaseParameters(independent=ind[order], E=E[order], count=r, joint=joint,
                          rank_tolerance=rank_tolerance,
                          names=[_parameter_names(robot, joint)[k] for k in ind[order]])


@dataclass
class Identified:
    """Least-squares estimate of the base parameters, with the model that predicts torques."""

    base: BaseParameters
    values: np.ndarray        # (count,) base parameters
    std: np.ndarray           # (count,) standard deviations (residual-variance estimate)
    residual_rms: float       # RMS of tau - prediction on the identification data

    def predict(self, robot, q, qd, qdd):
        """Torques of the identified model, (N, n) (any robot of the same structure)."""
        q = np.atleast_2d(q)
        return (self.base.regressor(robot, q, qd, qdd) @ self.values).reshape(q.shape)


def least_squares(robot, q, qd, qdd, tau, base=None, weights=None):
    """Identify the base parameters from measured ``(q, qd, qdd, tau)`` (each (N, n)).

    ``base``: a :class:`BaseParameters` (default ``base_parameters(robot)``); ``weights``:
    optional (n,) per-joint weights (e.g. 1 / noise std). Returns :class:`Identified`.

    Raises ValueError for non-finite or misshapen inputs, and :class:`NotIdentifiableError`
    (a ValueError) when the data cannot determine every base parameter (the weighted
    regressor of the data is rank deficient, judged with ``base.rank_tolerance``): its
    message and ``directions`` name the parameter combinations the torques do not see."""
    base = base_parameters(robot) if base is None else base
    nq, nv = robot.nq, robot.nv
    q, qd, qdd, tau = _finite_batch([("q", q, nq), ("qd", qd, nv), ("qdd", qdd, nv),
                                            ("tau", tau, nv)])
    W = base.regressor(robot, q, qd, qdd)
    t = tau.reshape(-1)
    if weights is not None:
        wj = np.asarray(weights, dtype=float)
        if wj.shape != (nv,) or not np.all(np.isfinite(wj)) or np.any(wj < 0):
            raise ValueError(f"weights: expected {nv} finite numbers >= 0, got {weights!r}")
        w = np.tile(wj, tau.shape[0])
        W, t = W * w[:, None], t * w
    directions = _null_directions(W, base.names, base.rank_tolerance)
    if directions:
        shown = "; ".join(f"[{k + 1}] {_describe(d)}" for k, d in enumerate(directions[:5]))
        more = f"; and {len(directions) - 5} more" if len(directions) > 5 else ""
        raise NotIdentifiableError(
            f"least_squares: the data determine only {base.count - len(directions)} of the "
            f"{base.count} base parameters ({W.shape[0]} equations); the torques do not change "
            f"along {len(directions)} combination{'s' if len(directions) > 1 else ''} of "
            f"them: {shown}{more} (excite every joint with more varied q, qd, qdd)",
            directions)
    x, *_ = np.linalg.lstsq(W, t, rcond=None)
    res = t - W @ x
    dof = max(W.shape[0] - W.shape[1], 1)
    sigma2 = float(res @ res) / dof
    cov = sigma2 * np.linalg.pinv(W.T @ W)
    return Identified(base, x, np.sqrt(np.maximum(np.diag(cov), 0.0)),
                      float(np.sqrt(np.mean(res ** 2))))


def filtered_derivatives(t, q, cutoff_hz, order=4):
    """Smoothed ``q`` and its derivatives from uniformly sampled positions.

    ``t``: (N,) sample times (uniform), ``q``: (N, n). A zero-phase Butterworth low-pass
    (``scipy.signal.butter`` + ``filtfilt``, ``order``, ``cutoff_hz``) is applied to ``q``, then
    ``qd`` and ``qdd`` are central differences (``numpy.gradient``) of the filtered signal,
    each filtered again. Returns ``(q_f, qd, qdd)``, each (N, n); the first and last few
    samples carry the filter's edge transients (drop them, or excite periodically)."""
    import scipy.signal

    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    if t.ndim != 1 or q.ndim != 2 or q.shape[0] != t.shape[0]:
        raise ValueError(f"t, q: expected shapes (N,) and (N, n), got {t.shape}, {q.shape}")
    dt = np.diff(t)
    if t.size < 16 or np.any(dt <= 0) or np.ptp(dt) > 1e-6 * dt.mean():
        raise ValueError("t: expected at least 16 uniformly spaced, increasing sample times")
    fs = 1.0 / dt.mean()
    if not 0 < cutoff_hz < fs / 2:
        raise ValueError(f"cutoff_hz: expected 0 < cutoff < {fs / 2:g} (Nyquist), "
                         f"got {cutoff_hz}")
    b, a = scipy.signal.butter(order, cutoff_hz, fs=fs)
    qf = scipy.signal.filtfilt(b, a, q, axis=0)
    qd = scipy.signal.filtfilt(b, a, np.gradient(qf, t, axis=0), axis=0)
    qdd = scipy.signal.filtfilt(b, a, np.gradient(qd, t, axis=0), axis=0)
    return qf, qd, qdd


def fourier_trajectory(q0, a, b, base_hz, t):
    """Swevers' finite Fourier series: ``q_j(t) = q0_j + sum_l (a_jl sin(l w t) - b_jl
    cos(l w t)) / (l w)``, ``w = 2 pi base_hz``; ``a``, ``b`` (n, L). Returns (q, qd, qdd),
    each (len(t), n)."""
    q0 = np.asarray(q0, dtype=float)
    a = np.atleast_2d(np.asarray(a, dtype=float))
    b = np.atleast_2d(np.asarray(b, dtype=float))
    t = np.asarray(t, dtype=float)[:, None, None]
    w = 2 * np.pi * base_hz
    lw = w * np.arange(1, a.shape[1] + 1)[None, None, :]
    s, c = np.sin(lw * t), np.cos(lw * t)
    q = q0 + np.sum((a * s - b * c) / lw, axis=-1)
    qd = np.sum(a * c + b * s, axis=-1)
    qdd = np.sum((-a * s + b * c) * lw, axis=-1)
    return q, qd, qdd


# ---------------------------------------------------------------- consistent fit

def parameters_to_pseudo_inertia(p):
    """The 4x4 pseudo-inertia [[Sigma, h], [h', m]] of 10 parameters (Sigma = tr(I)/2 1 - I,
    the second moment of mass about the origin); positive definite iff physically consistent
    (Wensing, Kim & Slotine 2017)."""
    m, h = p[0], p[1:4]
    I = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def _pseudo_to_parameters(J):
    S = J[:3, :3]
    I = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], *J[:3, 3], I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


def log_cholesky_to_parameters(theta):
    """10 log-Cholesky coordinates (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3) to the 10
    parameters: J = U U', U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2],
    [0, 0, e^d3, t3], [0, 0, 0, 1]] (Rucker & Wensing 2022): every theta is consistent."""
    al, d1, d2, d3, s12, s23, s13, t1, t2, t3 = theta
    al, d1, d2, d3 = np.clip([al, d1, d2, d3], -300.0, 300.0)  # trial steps: no overflow
    U = np.exp(al) * np.array([[np.exp(d1), s12, s13, t1], [0.0, np.exp(d2), s23, t2],
                               [0.0, 0.0, np.exp(d3), t3], [0.0, 0.0, 0.0, 1.0]])
    return _pseudo_to_parameters(U @ U.T)


def _parameters_to_log_cholesky(p):
    J = parameters_to_pseudo_inertia(p)
    # J = U U' with U upper triangular: flip, Cholesky, flip back
    P = np.eye(4)[::-1]
    L = np.linalg.cholesky(P @ J @ P)
    U = P @ L @ P
    al = np.log(U[3, 3])
    U = U / U[3, 3]
    return np.array([al, np.log(U[0, 0]), np.log(U[1, 1]), np.log(U[2, 2]), U[0, 1], U[1, 2],
                     U[0, 2], U[0, 3], U[1, 3], U[2, 3]])


def _nearest_consistent(p, eps=1e-6):
    """A consistent parameter vector near p (pseudo-inertia eigenvalues raised to eps m)."""
    J = parameters_to_pseudo_inertia(p)
    w, V = np.linalg.eigh(J)
    floor = eps * max(abs(p[0]), 1e-3)
    return _pseudo_to_parameters((V * np.maximum(w, floor)) @ V.T)


def consistent_fit(robot, q, qd, qdd, tau, prior=None, regularization=1e-5, joint=True,
                   max_nfev=500):
    """A physically consistent model identified from measured ``(q, qd, qdd, tau)`` (N, n).

    Each body's 10 parameters are written in log-Cholesky coordinates (so every iterate has
    positive mass and a positive definite pseudo-inertia) and the joint terms as
    ``exp`` of their logarithm (non-negative); ``scipy.optimize.least_squares``
    (Levenberg-Marquardt) minimises ``|Y pi(theta) - tau|^2 + regularization^2 |theta - theta_prior|^2``
    per sample, the small pull towards the prior (``prior``: a Robot, default ``robot``)
    fixing the directions the torques cannot see. Returns a new :class:`robodyn.Robot` with the
    identified masses, centres of mass, inertias, armature and friction (``.to_urdf()`` writes
    it out)."""
    import scipy.optimize
    from ..model.build import robot as build_robot

    prior = robot if prior is None else prior
    n = len(robot.spec.bodies)  # bodies (= joints of the full model)
    q, qd, qdd, tau = _finite_batch([("q", q, robot.nq), ("qd", qd, robot.nv),
                                            ("qdd", qdd, robot.nv), ("tau", tau, robot.nv)])
    W = full_regressor(robot, q, qd, qdd, joint)
    t = tau.reshape(-1)
    # |W p - t|^2 = |R p - Q't|^2 + const: the fit runs on the (p, p) triangular factor
    Qw, Rw = np.linalg.qr(W)
    b = Qw.T @ t
    p0 = prior.dynamic_parameters().reshape(n, 10)
    x0 = np.concatenate([_parameters_to_log_cholesky(_nearest_consistent(p)) for p in p0])
    if joint:
        x0 = np.concatenate([x0, np.log(np.maximum(prior.joint_parameters(), 1e-6))])
    # a unit step of one coordinate away from the prior costs like a torque error of
    # `regularization` times the RMS torque on every sample, shared over the coordinates
    weight = regularization * np.sqrt(np.mean(t ** 2) * t.size / x0.size)

    def unpack(x):
        pi = np.concatenate([log_cholesky_to_parameters(x[10 * i:10 * i + 10])
                             for i in range(n)])
        pj = np.exp(np.minimum(x[10 * n:], 300.0)) if joint else None
        return (np.concatenate([pi, pj]) if joint else pi), pi, pj

    def residual(x):
        return np.concatenate([Rw @ unpack(x)[0] - b, weight * (x - x0)])

    def jacobian(x):
        # d p / d x: per body by central differences of the 10 -> 10 map, exp for the joints
        D = np.zeros((x.size, x.size))
        h = 1e-7
        for i in range(n):
            xi = x[10 * i:10 * i + 10]
            for k in range(10):
                e = np.zeros(10)
                e[k] = h
                D[10 * i:10 * i + 10, 10 * i + k] = (log_cholesky_to_parameters(xi + e)
                                                     - log_cholesky_to_parameters(xi - e)) / (2 * h)
        if joint:
            j = np.arange(10 * n, x.size)
            D[j, j] = np.exp(np.minimum(x[j], 300.0))
        return np.vstack([Rw @ D, weight * np.eye(x.size)])

    # Levenberg-Marquardt (MINPACK): a small dense problem, no bounds needed
    sol = scipy.optimize.least_squares(residual, x0, jac=jacobian, method="lm",
                                       max_nfev=max_nfev, x_scale="jac")
    _, pi, pj = unpack(sol.x)
    spec = copy.deepcopy(robot.spec)
    for i, b in enumerate(spec.bodies):
        p = pi[10 * i:10 * i + 10]
        m = p[0]
        c = p[1:4] / m
        I = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
        b.mass = float(m)
        b.com = c
        b.inertia = I - m * (c @ c * np.eye(3) - np.outer(c, c))
        if joint:
            b.armature, b.damping, b.friction = (float(pj[i]), float(pj[n + i]),
                                                 float(pj[2 * n + i]))
    spec.name = f"{spec.name}_identified"
    return build_robot(spec)
