"""Floating-base dynamics: sizes and layout, boundary and spec errors, identities, Coriolis,
integrate/difference, momentum, heavy-base limit, batches and out=.

Conventions (docs: README, api.md): q = [base position (3), quaternion x, y, z, w (4),
joints], v = [base angular velocity (3), base linear velocity (3), both in the base frame,
joints].
"""

import numpy as np
import pytest

import robodyn
from reference import random_models as R
from _floating import close, floating_tree, floating_state, quat_matrix


# ---------------------------------------------------------------- sizes, boundary

def test_sizes_and_layout(rng):
    spec = floating_tree(5, rng)
    robot = robodyn.Robot(spec)
    assert (robot.nq, robot.nv, robot.n) == (12, 11, 11)
    assert robot.floating_base
    fixed = robodyn.Robot(R.random_chain(3, rng))
    assert (fixed.nq, fixed.nv, fixed.n) == (3, 3, 3) and not fixed.floating_base
    lo, hi = robot.position_limits
    assert lo.shape == hi.shape == (12,) and np.all(np.isinf(lo[:7])) and np.all(lo[7:] > -4)
    assert robot.velocity_limits.shape == robot.effort_limits.shape == (11,)
    q, v, a = floating_state(robot, rng)
    assert robot.inverse_dynamics(q, v, a).shape == (11,)
    assert robot.mass_matrix(q).shape == (11, 11)
    assert robot.jacobian(q, 0).shape == (6, 11)
    assert robot.integrate(q, v, 0.1).shape == (12,)
    assert robot.difference(q, q).shape == (11,)
    assert robot.momentum(q, v).shape == (6,)
    assert robot.center_of_mass(q).shape == (3,)


def test_boundary_errors(rng):
    robot = robodyn.Robot(floating_tree(3, rng))
    q, v, a = floating_state(robot, rng)
    with pytest.raises(ValueError, match=r"q: expected shape \(10,\)"):
        robot.inverse_dynamics(q[:-1], v, a)
    with pytest.raises(ValueError, match=r"qd: expected shape \(9,\)"):
        robot.inverse_dynamics(q, q, a)
    bad = q.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match="quaternion"):
        robot.mass_matrix(bad)
    with pytest.raises(ValueError, match="row 1"):
        robot.mass_matrix(np.stack([q, bad]))
    zero = q.copy()
    zero[3:7] = 0
    with pytest.raises(ValueError, match="quaternion"):
        robot.forward_dynamics(zero, v, a)
    with pytest.raises(ValueError, match="quaternion"):
        robot.integrate(bad, v, 0.1)
    with pytest.raises(ValueError, match="q1"):
        robot.difference(q, bad)
    # within the tolerance (1e-6): normalised, the same answer as the unit quaternion
    near = q.copy()
    near[3:7] *= 1 + 5e-7
    close(robot.inverse_dynamics(near, v, a), robot.inverse_dynamics(q, v, a), 1e-12)
    close(robot.forward_kinematics(near), robot.forward_kinematics(q), 1e-12)
    for name in ("rnea", "kane", "crba", "aba", "forward_dynamics", "kane_forward", "gravity"):
        assert robot.op_counts(name)["mul"] > 0  # counted (and checked) on the floating model
    with pytest.raises(ValueError, match="dt"):
        robot.integrate(q, v, float("nan"))


def test_spec_errors(rng):
    spec = floating_tree(3, rng)
    spec.bodies[2].joint_type = "floating"
    with pytest.raises(ValueError, match="free-flyer"):
        robodyn.Robot(spec)


# ---------------------------------------------------------------- identities

def test_identities(rng):
    robot = robodyn.Robot(floating_tree(8, rng))
    for _ in range(3):
        q, v, a = floating_state(robot, rng)
        tau = robot.inverse_dynamics(q, v, a)
        M = robot.mass_matrix(q)
        h = robot.bias_torques(q, v)
        spec = robot.spec
        joint_terms = np.zeros(robot.nv)
        joint_terms[6:] = ([b.damping for b in spec.bodies[1:]] * v[6:]
                           + np.array([b.friction for b in spec.bodies[1:]]) * np.sign(v[6:]))
        close(tau, M @ a + h + joint_terms, 1e-10)
        close(M, M.T, 1e-13)
        assert np.linalg.eigvalsh(M).min() > 0
        close(robot.gravity_torques(q), robot.bias_torques(q, np.zeros(robot.nv)), 1e-12)
        for method in ("aba", "crba"):
            close(robot.forward_dynamics(q, v, tau, method=method), a, 1e-9)
        close(robot.kinetic_energy(q, v), 0.5 * v @ M @ v, 1e-11)
        # the base block of M is the whole system's spatial inertia in base axes
        close(M[:6, :6][3:, 3:], sum(robot.masses) * np.eye(3), 1e-12)


def test_coriolis_matrix(rng):
    """C v = bias - gravity, and Mdot - 2C skew-symmetric (Mdot by central differences
    along the motion q(t) = integrate(q, v, t))."""
    robot = robodyn.Robot(floating_tree(7, rng, friction=False))
    for _ in range(3):
        q, v, _ = floating_state(robot, rng)
        C = robot.coriolis_matrix(q, v)
        assert C.shape == (robot.nv, robot.nv)
        close(C @ v, robot.bias_torques(q, v) - robot.gravity_torques(q), 1e-10)
        eps = 1e-6
        Mdot = (robot.mass_matrix(robot.integrate(q, v, eps))
                - robot.mass_matrix(robot.integrate(q, v, -eps))) / (2 * eps)
        S = Mdot - 2 * C
        close(S + S.T, np.zeros_like(S), 1e-7)
    # batches row by row
    Q = np.stack([floating_state(robot, rng)[0] for _ in range(3)])
    V = rng.standard_normal((3, robot.nv))
    Cs = robot.coriolis_matrix(Q, V)
    for k in range(3):
        close(Cs[k], robot.coriolis_matrix(Q[k], V[k]), 1e-14)


def test_integrate_difference(rng):
    robot = robodyn.Robot(floating_tree(4, rng))
    for _ in range(5):
        q0, v, _ = floating_state(robot, rng)
        q1, _, _ = floating_state(robot, rng)
        d = robot.difference(q0, q1)
        q2 = robot.integrate(q0, d)
        close(q2[:3], q1[:3], 1e-10)
        assert min(np.abs(q2[3:7] - q1[3:7]).max(), np.abs(q2[3:7] + q1[3:7]).max()) < 1e-10
        close(q2[7:], q1[7:], 1e-12)
        close(robot.difference(q0, robot.integrate(q0, 0.3 * v)), 0.3 * v, 1e-10)
        assert abs(np.linalg.norm(robot.integrate(q0, v, 7.0)[3:7]) - 1) < 1e-14
        close(robot.difference(q0, q0), np.zeros(robot.nv), 1e-15)
    # small steps: the base moves with its body twist (first order, base axes)
    q0, v, _ = floating_state(robot, rng)
    dt = 1e-6
    q1 = robot.integrate(q0, v, dt)
    Rm = quat_matrix(*q0[3:7])
    close((q1[:3] - q0[:3]) / dt, Rm @ v[3:6], 1e-5)
    # batches: one row per state
    Q = np.stack([floating_state(robot, rng)[0] for _ in range(4)])
    V = rng.standard_normal((4, robot.nv))
    out = np.empty((4, robot.nq))
    robot.integrate(Q, V, 0.5, out=out)
    for k in range(4):
        close(out[k], robot.integrate(Q[k], V[k], 0.5), 1e-15)


def test_momentum_and_com(rng):
    """momentum = sum over bodies of (m c_dot, sum c x m c_dot + R I_c w), computed here from
    the Jacobians of the bodies' centres of mass; COM from forward kinematics."""
    spec = floating_tree(6, rng, frames=0)
    robot = robodyn.Robot(spec)
    q, v, _ = floating_state(robot, rng)
    T = robot.forward_kinematics(q)
    masses = np.array([b.mass for b in spec.bodies])
    L, P, mc = np.zeros(3), np.zeros(3), np.zeros(3)
    for k, b in enumerate(spec.bodies):
        R_, p = T[k][:3, :3], T[k][:3, 3]
        c = p + R_ @ b.com
        J = robot.jacobian(q, k)
        w = J[:3] @ v
        cdot = J[3:] @ v + np.cross(w, R_ @ b.com)
        P += b.mass * cdot
        L += np.cross(c, b.mass * cdot) + R_ @ b.inertia @ R_.T @ w
        mc += b.mass * c
    close(robot.momentum(q, v), np.concatenate([L, P]), 1e-10)
    close(robot.center_of_mass(q), mc / masses.sum(), 1e-12)
    # linear momentum = total mass x COM velocity
    eps = 1e-6
    cdot = (robot.center_of_mass(robot.integrate(q, v, eps))
            - robot.center_of_mass(robot.integrate(q, v, -eps))) / (2 * eps)
    close(robot.momentum(q, v)[3:], masses.sum() * cdot, 1e-7)


def test_momentum_conserved_free_fall(rng):
    """No gravity, no friction, no joint torque: the momentum is constant along a trajectory
    (RK4 on the manifold with integrate; the tolerance is the integrator's error)."""
    spec = floating_tree(5, rng, friction=False, frames=0)
    spec.gravity = np.zeros(3)
    robot = robodyn.Robot(spec)
    q, v, _ = floating_state(robot, rng, spread=0.3)
    h0 = robot.momentum(q, v)
    tau = np.zeros(robot.nv)
    dt = 1e-3

    def f(q, v):
        return robot.forward_dynamics(q, v, tau)

    for _ in range(200):
        # RK4 with the stage configurations on the manifold (Munthe-Kaas to 2nd order is
        # enough for this check: the momentum is a function of (q, v) conserved exactly)
        k1v, k1q = f(q, v), v
        q2 = robot.integrate(q, k1q, dt / 2)
        v2 = v + dt / 2 * k1v
        k2v, k2q = f(q2, v2), v2
        q3 = robot.integrate(q, k2q, dt / 2)
        v3 = v + dt / 2 * k2v
        k3v, k3q = f(q3, v3), v3
        q4 = robot.integrate(q, k3q, dt)
        v4 = v + dt * k3v
        k4v, k4q = f(q4, v4), v4
        q = robot.integrate(q, (k1q + 2 * k2q + 2 * k3q + k4q) / 6, dt)
        v = v + dt * (k1v + 2 * k2v + 2 * k3v + k4v) / 6
    drift = np.abs(robot.momentum(q, v) - h0).max() / np.abs(h0).max()
    assert drift < 1e-6, drift


def test_heavy_base_limit(rng):
    """A very heavy base: the joint block of M tends to the fixed-base mass matrix."""
    spec = floating_tree(6, rng, frames=0)
    fixed_spec = R.ModelSpec(bodies=[], gravity=spec.gravity)
    import copy
    fixed_spec.bodies = copy.deepcopy(spec.bodies[1:])
    for b in fixed_spec.bodies:
        b.parent -= 1  # the base's children onto the fixed base
    fixed = robodyn.Robot(fixed_spec)
    spec.bodies[0].mass = 1e12
    spec.bodies[0].inertia = 1e12 * np.eye(3)
    spec.bodies[0].com = np.zeros(3)
    robot = robodyn.Robot(spec)
    qj = R.random_state(fixed_spec, rng)[0]
    q = np.concatenate([[0.1, -0.2, 0.3], [0, 0, 0, 1.0], qj])
    M = robot.mass_matrix(q)
    close(M[6:, 6:], fixed.mass_matrix(qj), 1e-10)
    # forward dynamics: the heavy base falls freely (its acceleration is gravity) and the
    # joints move as on a fixed base without gravity (the free fall cancels it)
    tau = np.concatenate([np.zeros(6), rng.standard_normal(len(qj))])
    vj = rng.standard_normal(len(qj))
    v = np.concatenate([np.zeros(6), vj])
    qdd = robot.forward_dynamics(q, v, tau)
    close(qdd[:6], np.concatenate([np.zeros(3), spec.gravity]), 1e-9)
    fixed_spec.gravity = np.zeros(3)
    weightless = robodyn.Robot(fixed_spec)
    close(qdd[6:], weightless.forward_dynamics(qj, vj, tau[6:]), 1e-6)


def test_batches_and_out(rng):
    robot = robodyn.Robot(floating_tree(5, rng))
    states = [floating_state(robot, rng) for _ in range(6)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    taus = robot.inverse_dynamics(Q, V, A)
    Ms = robot.mass_matrix(Q)
    qdds = robot.forward_dynamics(Q, V, taus)
    hs = robot.momentum(Q, V)
    for k in range(6):
        close(taus[k], robot.inverse_dynamics(Q[k], V[k], A[k]), 1e-14)
        close(Ms[k], robot.mass_matrix(Q[k]), 1e-14)
        close(qdds[k], A[k], 1e-9)
        close(hs[k], robot.momentum(Q[k], V[k]), 1e-14)
    out = np.empty(robot.nv)
    assert robot.inverse_dynamics(Q[0], V[0], A[0], out=out) is out
    close(out, taus[0], 1e-14)
    robodyn.set_num_threads(2)
    try:
        Q2 = np.repeat(Q, 40, axis=0)
        V2, A2 = np.repeat(V, 40, axis=0), np.repeat(A, 40, axis=0)
        close(robot.forward_dynamics(Q2, V2, robot.inverse_dynamics(Q2, V2, A2)), A2, 1e-9)
    finally:
        robodyn.set_num_threads(1)
