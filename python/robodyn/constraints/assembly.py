"""Configurations and velocities that satisfy the loop constraints, and kinematic analysis.

- :func:`assemble`: a configuration near a guess with every loop closed (phi(q) = 0), chosen
  joints held at their values: damped Gauss-Newton (Levenberg-Marquardt) with the minimum-norm
  step on the free joints.
- :func:`project_velocity`: the smallest change of the free joints' velocities that makes the
  constraint velocity J v zero.
- :func:`kinematic_analysis`: driving constraints: the driven (actuated) joints follow given
  q(t), qd(t), qdd(t); the passive joints' positions, velocities and accelerations follow from
  phi = 0, J v = 0 and J qdd + gamma = 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["AssemblyError", "assemble", "project_velocity", "kinematic_analysis",
           "joint_indices"]

# singular values below this fraction of the largest count as zero (rank decisions)
RANK_RTOL = 1e-10


class AssemblyError(ValueError):
    """The loops could not be closed, or the driven joints do not determine the others."""


def joint_indices(robot, names, what="hold"):
    """(q indices, v indices) of the named joints (a free-flyer root: 7 and 6 entries)."""
    if isinstance(names, str):
        raise ValueError(f"{what}: expected a sequence of joint names, got a str")
    joints = list(robot.joint_names)
    qw, vw = [1] * len(joints), [1] * len(joints)
    if robot.floating_base:
        qw[0], vw[0] = 7, 6
    q0 = np.concatenate(([0], np.cumsum(qw)))
    v0 = np.concatenate(([0], np.cumsum(vw)))
    iq, iv = [], []
    for name in names:
        if name not in joints:
            raise ValueError(f"{what}: no joint named {name!r}; the joints: {', '.join(joints)}")
        k = joints.index(name)
        iq.extend(range(q0[k], q0[k + 1]))
        iv.extend(range(v0[k], v0[k + 1]))
    if len(set(iv)) != len(iv):
        raise ValueError(f"{what}: a joint is named twice")
    return np.array(iq, dtype=np.intp), np.array(iv, dtype=np.intp)


def checked_vector(x, n, what):
    x = np.array(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{what}: expected shape ({n},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: has non-finite entries")
    return x


def _free(system, hold):
    nv = system.robot.nv
    if isinstance(hold, (tuple, list)) and not hold:
        return np.arange(nv)
    held = joint_indices(system.robot, hold)[1]
    return np.setdiff1d(np.arange(nv), held)


def _damped_step(J, r, damping):
    """Minimum-norm dx solving J dx = -r, damped: -V diag(s / (s^2 + damping)) U' r."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    keep = s > RANK_RTOL * (s[0] if s.size else 0.0)
    gain = np.zeros_like(s)
    gain[keep] = s[keep] / (s[keep] ** 2 + damping)
    return -Vt.T @ (gain * (U.T @ r))


def _worst(system, phi):
    """'constraint NAME row AXIS' of the largest |phi| entry."""
    k = int(np.argmax(np.abs(phi)))
    for c, sl in zip(system.constraints, system.row_slices):
        if sl.start <= k < sl.stop:
            return f"constraint {c.name!r} row {c.axes[k - sl.start]!r} ({phi[k]:+.3g})"
    return f"row {k}"


def assemble(system, q_guess, hold=(), tol=1e-12, max_iter=50):
    """A configuration q near ``q_guess`` with every loop closed: max |phi(q)| <= ``tol``.

    The joints named in ``hold`` keep their values from ``q_guess``; the others move by
    Levenberg-Marquardt steps on phi (the minimum-norm, damped Gauss-Newton step, damping
    |phi|^2, halved after a step that reduces |phi| and raised tenfold after one that does not),
    composed with the robot's ``integrate`` (a free-flyer moves on SE(3)). From a guess near a
    closed configuration it converges quadratically (a handful of iterations). Raises
    :class:`AssemblyError` naming the residual and the worst row when ``max_iter`` iterations
    do not close the loops (a loop that cannot close with these joints held, or a guess too
    far away).
    """
    robot = system.robot
    q = checked_vector(q_guess, robot.nq, "q_guess")
    if not (tol > 0 and np.isfinite(tol)):
        raise ValueError(f"tol: expected a positive number, got {tol!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter: expected a positive integer, got {max_iter!r}")
    free = _free(system, hold)
    if system.rows == 0:
        return q
    phi = system.residual(q)
    err = float(np.abs(phi).max())
    damping = float(phi @ phi)
    for _ in range(int(max_iter) if free.size else 0):
        if err <= tol:
            return q
        J = system.jacobian(q)[:, free]
        dv = np.zeros(robot.nv)
        dv[free] = _damped_step(J, phi, damping)
        trial = robot.integrate(q, dv)
        phi_t = system.residual(trial)
        err_t = float(np.abs(phi_t).max())
        if err_t < err:
            q, phi, err = trial, phi_t, err_t
            damping = min(0.5 * damping, float(phi @ phi))
        else:
            damping = 10.0 * damping + 1e-12
    if err <= tol:
        return q
    raise AssemblyError(
        f"assemble: the loops did not close in {int(max_iter)} iterations: max |phi| = "
        f"{err:.3g} > tol = {tol:.3g}, largest at {_worst(system, phi)}"
        + (f" with {', '.join(hold)} held" if len(hold) else "")
        + "; try another q_guess or hold fewer joints")


def project_velocity(system, q, v, hold=()):
    """The velocity nearest ``v`` (Euclidean norm of the change on the free joints) with
    J(q) v = 0; the joints named in ``hold`` keep their velocities. Raises
    :class:`AssemblyError` when the free joints cannot cancel J v (the held joints' velocities
    break the loops), naming the remaining constraint velocity."""
    robot = system.robot
    q = checked_vector(q, robot.nq, "q")
    v = checked_vector(v, robot.nv, "v")
    if system.rows == 0:
        return v
    free = _free(system, hold)
    J = system.jacobian(q)
    out = v.copy()
    out[free] += _damped_step(J[:, free], J @ v, 0.0)
    left = J @ out
    scale = max(1.0, float(np.abs(J).max() * np.abs(v).max()))
    if np.abs(left).max() > 1e-9 * scale:
        raise AssemblyError(
            f"project_velocity: the free joints cannot cancel the constraint velocity: "
            f"max |J v| = {np.abs(left).max():.3g} left, largest at {_worst(system, left)}")
    return out


def _series(x, k, what):
    x = np.array(x, dtype=float)
    if x.ndim == 0:
        x = x.reshape(1, 1)
    elif x.ndim == 1:
        x = x.reshape(-1, 1) if k == 1 else x.reshape(1, -1)
    if x.ndim != 2 or x.shape[1] != k:
        raise ValueError(f"{what}: expected shape (N, {k}) (one row per sample), got "
                         f"{np.shape(x)}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: has non-finite entries")
    return x


def kinematic_analysis(system, driven, q_driven, qd_driven, qdd_driven, q_guess, tol=1e-12):
    """Positions, velocities and accelerations of every joint when the ``driven`` joints
    (names, k of them) follow the given motion.

    ``q_driven``, ``qd_driven``, ``qdd_driven``: (N, k) arrays, one row per sample (a (k,)
    vector is one sample; for k = 1 an (N,) array is N samples). ``q_guess``: a configuration
    near the first sample's (the branch of the mechanism to follow); each later sample starts
    from the previous solution. Returns ``(q, qd, qdd)`` of shapes (N, nq), (N, nv), (N, nv):
    at each sample the loops are closed (max |phi| <= ``tol``, :func:`assemble` with the
    driven joints held), J qd = 0 and J qdd + gamma = 0 with the driven joints' qd, qdd as
    given. Raises :class:`AssemblyError` if the driven joints do not determine the passive
    ones (J restricted to the passive joints has lower rank than their number: the
    mechanism keeps free motion) or at a sample where the loops cannot close.
    """
    robot = system.robot
    iq, iv = joint_indices(robot, driven, "driven")
    k = iv.size
    if robot.floating_base and 0 in iv:
        raise ValueError("driven: the free-flyer base cannot be a driven joint")
    qs = _series(q_driven, k, "q_driven")
    qds = _series(qd_driven, k, "qd_driven")
    qdds = _series(qdd_driven, k, "qdd_driven")
    if not qs.shape == qds.shape == qdds.shape:
        raise ValueError(f"q_driven, qd_driven, qdd_driven: expected the same shape, got "
                         f"{qs.shape}, {qds.shape}, {qdds.shape}")
    q = checked_vector(q_guess, robot.nq, "q_guess")
    passive = np.setdiff1d(np.arange(robot.nv), iv)
    n = qs.shape[0]
    Q, QD, QDD = np.zeros((n, robot.nq)), np.zeros((n, robot.nv)), np.zeros((n, robot.nv))
    for t in range(n):
        q = q.copy()
        q[iq] = qs[t]
        q = assemble(system, q, hold=driven, tol=tol)
        J = system.jacobian(q)
        Jp = J[:, passive]
        s = np.linalg.svd(Jp, compute_uv=False)
        rank = int(np.sum(s > RANK_RTOL * (s[0] if s.size else 0.0)))
        if rank < passive.size:
            raise AssemblyError(
                f"kinematic_analysis: the driven joints {', '.join(driven)} do not determine "
                f"the passive joints at sample {t}: J on the {passive.size} passive velocities "
                f"has rank {rank} ({passive.size - rank} free motion(s) left)")
        qd = np.zeros(robot.nv)
        qd[iv] = qds[t]
        qd[passive] = np.linalg.lstsq(Jp, -J[:, iv] @ qds[t], rcond=None)[0]
        qdd = np.zeros(robot.nv)
        qdd[iv] = qdds[t]
        rhs = -system.bias_acceleration(q, qd) - J[:, iv] @ qdds[t]
        qdd[passive] = np.linalg.lstsq(Jp, rhs, rcond=None)[0]
        Q[t], QD[t], QDD[t] = q, qd, qdd
    return Q, QD, QDD
