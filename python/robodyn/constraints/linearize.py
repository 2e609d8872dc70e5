"""Linearisation of a constrained system about an equilibrium, in independent coordinates.

At a configuration q* on the constraint manifold (phi(q*) = 0) let Z (nv, f) be an
orthonormal basis of the null space of J(q*) (the tangent of the manifold, f = nv - rank J
free motions) and Y one of its complement, the range of J'. The independent coordinates are
z = Z' (q - q*): near q* each z names one configuration q(z) = q* + Z z + Y d(z) on the
manifold, with velocity v = T(z) z' (J T = 0, Z' T = I), so z' = Z' v and z'' = Z' qdd.

With v = 0 and the applied force f(q) = tau + Q(q, 0) - g(q) balanced by the constraints
(f = J' lam: an equilibrium), the motion near it obeys

    M_z z'' + C_z z' + K_z z = Z' dtau,
    M_z = Z' M Z,   C_z = Z' (dID/dv) Z,   K_z = Z' (dID/dq + G) Z,

where ID is the tree's inverse dynamics (with the force elements, so dID/dq = dg/dq - dQ/dq
and dID/dv = joint damping - dQ/dv at rest) and G = d(J(q)' lam)/dq at fixed lam, the
constraint forces' geometric stiffness (from d(T' J' lam)/dz = 0: the turning of the
constraint directions under the equilibrium forces). K_z is Lynch's (1988, eq. 6.15-6.16)
Q2' K Q2 with that term included; the eigenvalues of M_z^-1 K_z are the squared natural
frequencies. dID/dq and dID/dv come from the C++ derivatives; G from central differences of
J (step 1e-6 rad or m, relative error about 1e-10).

A free-floating tree is not supported (its configuration is not a vector space).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .assembly import RANK_RTOL, AssemblyError, checked_vector

__all__ = ["ConstrainedLinearization", "linearize", "equilibrium", "tangent_bases",
           "EquilibriumError"]

# central-difference step for the geometric stiffness (rad or m)
_STEP = 1e-6


class EquilibriumError(ValueError):
    """The state is not an equilibrium of the constrained system, or none was found."""


@dataclass
class ConstrainedLinearization:
    """The linearised constrained system about ``q`` (see the module docstring).

    ``Z`` (nv, f): the tangent basis; z = Z' (q - q*), z' = Z' v. ``M``, ``C``, ``K`` (f, f):
    reduced mass, damping and stiffness. ``A`` (2f, 2f), ``B`` (2f, nv): d[z; z']/dt =
    A [z; z'] + B dtau. ``lam`` (rows,): the constraint forces holding the equilibrium.
    ``omega_squared`` (f,): the eigenvalues of M^-1 K, ascending (real parts: M is symmetric
    positive definite and K symmetric at an equilibrium, so they are real).
    """

    q: np.ndarray
    Z: np.ndarray
    M: np.ndarray
    C: np.ndarray
    K: np.ndarray
    A: np.ndarray
    B: np.ndarray
    lam: np.ndarray

    @property
    def omega_squared(self) -> np.ndarray:
        return np.sort(np.linalg.eigvals(np.linalg.solve(self.M, self.K)).real)


def tangent_bases(system, q):
    """(Z, Y): orthonormal bases of the null space of J(q) (nv, f) and of its complement,
    the range of J' (nv, rank J), from the SVD of J."""
    nv = system.robot.nv
    if system.rows == 0:
        return np.eye(nv), np.zeros((nv, 0))
    _, s, Vt = np.linalg.svd(np.asarray(system.jacobian(q), dtype=float))
    r = int(np.sum(s > RANK_RTOL * (s[0] if s.size else 0.0)))
    return Vt[r:].T, Vt[:r].T


def _check_fixed_base(system, what):
    if system.robot.floating_base:
        raise ValueError(f"{what}: a constrained system on a free-floating tree is not "
                         "supported (its configuration is not a vector space)")


def _applied(system, q, tau):
    """f(q) = tau - ID(q, 0, 0) (the tree's, force elements included) and its q-derivative
    -(dID/dq), with dID/dv at rest."""
    robot = system.robot
    nv = robot.nv
    zero = np.zeros(nv)
    f = tau - np.asarray(robot.inverse_dynamics(q, zero, zero), dtype=float)
    dq, dv = (np.asarray(x, dtype=float) for x in
              robot.inverse_dynamics_derivatives(q, zero, zero))
    if hasattr(robot, "generalized_force_derivatives"):
        Kq, Kv = robot.generalized_force_derivatives(q, zero)
        dq, dv = dq - Kq, dv - Kv
    return f, dq, dv


def _geometric_stiffness(system, q, lam):
    """G = d(J(q)' lam)/dq at fixed lam, by central differences."""
    nv = system.robot.nv
    G = np.zeros((nv, nv))
    if system.rows == 0:
        return G
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = _STEP
        G[:, k] = (np.asarray(system.jacobian(q + e)).T @ lam
                   - np.asarray(system.jacobian(q - e)).T @ lam) / (2 * _STEP)
    return G


def _tau(system, tau):
    nv = system.robot.nv
    return np.zeros(nv) if tau is None else checked_vector(tau, nv, "tau")


def linearize(system, q, v=None, tau=None, tol=1e-8) -> ConstrainedLinearization:
    """The linearisation of ``system`` about the equilibrium at ``q`` (closed loops: max
    |phi(q)| <= 1e-9) under the constant generalized force ``tau`` (default zero), with
    ``v`` zero (the default; a nonzero v is refused: the formulas hold at rest).

    Raises :class:`EquilibriumError` when ``q`` is not an equilibrium: the applied force's
    tangential part ``|Z' f|`` exceeds ``tol`` times the size of f (find one with
    :func:`equilibrium`)."""
    _check_fixed_base(system, "linearize")
    robot = system.robot
    q = checked_vector(q, robot.nq, "q")
    if v is not None and np.any(checked_vector(v, robot.nv, "v") != 0.0):
        raise ValueError("v: the constrained linearisation is about an equilibrium at rest "
                         "(v = 0)")
    tau = _tau(system, tau)
    if system.rows:
        err = float(np.abs(system.residual(q)).max())
        if err > 1e-9:
            raise AssemblyError(f"linearize: q does not close the loops (max |phi| = "
                                f"{err:.3g}); assemble it first")
    Z, _ = tangent_bases(system, q)
    f, dID_dq, dID_dv = _applied(system, q, tau)
    if system.rows:
        J = np.asarray(system.jacobian(q), dtype=float)
        lam = np.linalg.lstsq(J.T, f, rcond=None)[0]
    else:
        lam = np.zeros(0)
    left = Z.T @ f
    scale = 1.0 + float(np.abs(f).max())
    if np.abs(left).max(initial=0.0) > tol * scale:
        raise EquilibriumError(
            f"linearize: q is not an equilibrium: the applied force along the free motions "
            f"is {np.abs(left).max():.3g} (tol {tol:g} x {scale:.3g}); use "
            "robodyn.constraints.linearize.equilibrium to find one")
    G = _geometric_stiffness(system, q, lam)
    Mq = np.asarray(robot.mass_matrix(q), dtype=float)
    Mz = Z.T @ Mq @ Z
    Cz = Z.T @ dID_dv @ Z
    Kz = Z.T @ (dID_dq + G) @ Z
    n = Z.shape[1]
    A = np.zeros((2 * n, 2 * n))
    A[:n, n:] = np.eye(n)
    A[n:, :n] = -np.linalg.solve(Mz, Kz)
    A[n:, n:] = -np.linalg.solve(Mz, Cz)
    B = np.zeros((2 * n, robot.nv))
    B[n:] = np.linalg.solve(Mz, Z.T)
    return ConstrainedLinearization(q=q, Z=Z, M=Mz, C=Cz, K=Kz, A=A, B=B, lam=lam)


def equilibrium(system, q_guess, tau=None, tol=1e-12, max_iter=50):
    """A configuration q near ``q_guess`` on the constraint manifold where the system rests
    under the constant force ``tau`` (default zero): Newton's method on the tangential force
    Z' f(q) with the reduced stiffness K_z of :func:`linearize`, each step closed by
    ``system.assemble``. Converges to the equilibrium (stable or not) of the basin of
    ``q_guess``; raises :class:`EquilibriumError` after ``max_iter`` iterations."""
    _check_fixed_base(system, "equilibrium")
    tau = _tau(system, tau)
    q = system.assemble(q_guess) if system.rows else checked_vector(q_guess, system.robot.nq,
                                                                    "q_guess")
    for _ in range(int(max_iter)):
        Z, _ = tangent_bases(system, q)
        f, dID_dq, _ = _applied(system, q, tau)
        J = np.asarray(system.jacobian(q), dtype=float) if system.rows else np.zeros((0, q.size))
        lam = np.linalg.lstsq(J.T, f, rcond=None)[0] if system.rows else np.zeros(0)
        F = Z.T @ f
        if np.abs(F).max(initial=0.0) <= tol * (1.0 + float(np.abs(f).max())):
            return q
        K = Z.T @ (dID_dq + _geometric_stiffness(system, q, lam)) @ Z
        q = q + Z @ np.linalg.solve(K, F)
        if system.rows:
            q = system.assemble(q)
    raise EquilibriumError(f"equilibrium: no equilibrium found in {int(max_iter)} Newton "
                           "iterations from q_guess; try another guess")
