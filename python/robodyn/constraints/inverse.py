"""Inverse dynamics of a constrained, possibly under- or redundantly actuated mechanism.

Given q, v and a desired qdd consistent with the constraints (J qdd + gamma = 0), find the
actuator torques tau (nonzero only on the actuated joints, selected by S) and the constraint
forces lam with

    M qdd + h = S' tau_a + J' lam.

With Z a basis of the null space of J (the mechanism's free motions, f = nv - rank J of them),
Z' J' = 0 removes lam: (S Z)' tau_a = Z' (M qdd + h). The torques are the minimum-norm
solution of that (f, k) system (exact and unique when the actuators drive every free motion
once: rank (S Z) = k = f; minimum torque when redundantly actuated, k > rank); lam is then the
minimum-norm solution of J' lam = M qdd + h - S' tau_a. When the actuators do not reach every
free motion (rank (S Z) < f) only some motions can be produced; any other raises
:class:`ActuationError` naming the number of undriven motions and the generalised force left.
"""

from __future__ import annotations

import numpy as np

from .assembly import RANK_RTOL, checked_vector

__all__ = ["ActuationError", "inverse_dynamics", "gravity_compensation", "ComputedTorque"]

# relative tolerance of the consistency checks (J qdd + gamma, the force balance)
CONSISTENCY_RTOL = 1e-8


class ActuationError(ValueError):
    """The desired motion cannot be produced by the actuated joints (or violates the loops)."""


def _rank(s):
    return int(np.sum(s > RANK_RTOL * (s[0] if s.size else 0.0)))


def _nullspace(J, nv):
    """(nv, f) orthonormal basis of the null space of J (m, nv)."""
    if J.shape[0] == 0:
        return np.eye(nv)
    _, s, Vt = np.linalg.svd(J)
    return Vt[_rank(s):].T


def inverse_dynamics(system, q, v, qdd, check=True):
    """``(tau, lam)``: the generalised actuator forces (nv,), zero on the joints that are not
    in ``system.actuated_dofs``, and the constraint forces (m,) per constraint in order (each
    the wrench on body 1 in frame 1's axes, the constraint's rows), with
    ``M qdd + h = tau + J' lam`` (h includes joint damping and friction).

    ``check``: refuse a ``qdd`` that violates the constraints (``|J qdd + gamma|`` above
    1e-8 of its terms' size). Raises :class:`ActuationError` when the actuators cannot produce
    the motion (underactuated, and qdd outside what they can drive), naming how many free
    motions no actuator drives and the force left over.
    """
    robot = system.robot
    nv = robot.nv
    q = checked_vector(q, robot.nq, "q")
    v = checked_vector(v, nv, "v")
    qdd = checked_vector(qdd, nv, "qdd")
    # b = M qdd + h, with the joint losses
    b = np.asarray(robot.inverse_dynamics(q, v, qdd), dtype=float)
    if system.rows:
        J = np.asarray(system.jacobian(q), dtype=float)
        if check:
            gamma = np.asarray(system.bias_acceleration(q, v), dtype=float)
            acc = J @ qdd + gamma
            scale = 1.0 + float(np.abs(J @ qdd).max() + np.abs(gamma).max())
            if np.abs(acc).max() > CONSISTENCY_RTOL * scale:
                k = int(np.argmax(np.abs(acc)))
                raise ActuationError(
                    f"inverse_dynamics: qdd violates the constraints: max |J qdd + gamma| = "
                    f"{np.abs(acc).max():.3g} (row {k}); pass an acceleration the loops allow "
                    "(e.g. from kinematic_analysis)")
    else:
        J = np.zeros((0, nv))
    S = np.zeros((nv, len(system.actuated_dofs)))
    S[system.actuated_dofs, np.arange(len(system.actuated_dofs))] = 1.0
    Z = _nullspace(J, nv)
    A = Z.T @ S
    rhs = Z.T @ b
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    r = _rank(s)
    # minimum-norm tau_a on the range of A
    tau_a = Vt[:r].T @ ((U[:, :r].T @ rhs) / s[:r])
    tau = S @ tau_a
    # constraint forces: minimum-norm solution of J' lam = b - tau
    rest = b - tau
    lam = np.linalg.lstsq(J.T, rest, rcond=None)[0] if J.shape[0] else np.zeros(0)
    left = rest - J.T @ lam
    scale = 1.0 + float(np.abs(b).max())
    if np.abs(left).max() > CONSISTENCY_RTOL * scale:
        joints = list(robot.joint_names)
        worst = int(np.argmax(np.abs(left)))
        raise ActuationError(
            f"inverse_dynamics: the actuated joints ({', '.join(system.actuated) or 'none'}) "
            f"cannot produce this motion: they drive {r} of the mechanism's {Z.shape[1]} free "
            f"motions ({Z.shape[1] - r} undriven); a generalised force of "
            f"{np.abs(left).max():.3g} is left unbalanced (largest on velocity {worst}"
            + (f", joint {joints[_joint_of(robot, worst)]!r})" if joints else ")"))
    return tau, lam


def _joint_of(robot, dof):
    """Index of the joint that owns velocity entry ``dof``."""
    if robot.floating_base:
        return 0 if dof < 6 else dof - 5
    return dof


def gravity_compensation(system, q):
    """``(tau, lam)`` holding the mechanism at rest at q: inverse dynamics with v = qdd = 0."""
    nv = system.robot.nv
    return inverse_dynamics(system, q, np.zeros(nv), np.zeros(nv))


class ComputedTorque:
    """Computed torque through the constrained inverse dynamics: a controller
    ``ctrl(t, q, v, ref) -> tau`` for :func:`robodyn.simulate` on a ConstrainedRobot.

    ``ref = (q_ref, qd_ref, qdd_ref)`` of the whole robot (e.g. from
    :func:`~robodyn.constraints.assembly.kinematic_analysis`); only the actuated joints' entries
    are servoed: ``a = qdd_ref + kd (qd_ref - v) + kp (q_ref - q)`` on them. The acceleration
    commanded is the one the constraints allow that is nearest ``a`` on the actuated joints
    (qdd = -J^+ gamma + Z y, y the least-squares fit of S' Z y to the rest), and the torques
    are :func:`inverse_dynamics` of it. ``kp``, ``kd``: scalars or one gain per actuated joint.
    """

    def __init__(self, system, kp=100.0, kd=20.0):
        from .assembly import joint_indices

        self.system = system
        self.iq, self.iv = joint_indices(system.robot, system.actuated, "actuated")
        k = self.iv.size
        self.kp = np.broadcast_to(np.asarray(kp, dtype=float), (k,)).copy()
        self.kd = np.broadcast_to(np.asarray(kd, dtype=float), (k,)).copy()
        if not (np.all(np.isfinite(self.kp)) and np.all(np.isfinite(self.kd))):
            raise ValueError("kp, kd: expected finite gains")

    def __call__(self, t, q, v, ref):
        system, robot = self.system, self.system.robot
        q_ref, qd_ref, qdd_ref = (np.asarray(x, dtype=float) for x in ref)
        iq, iv = self.iq, self.iv
        a = qdd_ref[iv] + self.kd * (qd_ref[iv] - v[iv]) + self.kp * (q_ref[iq] - q[iq])
        nv = robot.nv
        if system.rows:
            J = np.asarray(system.jacobian(q), dtype=float)
            base = -np.linalg.pinv(J) @ np.asarray(system.bias_acceleration(q, v), dtype=float)
            Z = _nullspace(J, nv)
        else:
            base, Z = np.zeros(nv), np.eye(nv)
        y = np.linalg.lstsq(Z[iv], a - base[iv], rcond=None)[0]
        return inverse_dynamics(system, q, v, base + Z @ y, check=False)[0]
