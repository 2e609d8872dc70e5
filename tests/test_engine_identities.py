"""Identities between the dynamics engine's algorithms, and gravity.

FD(ID(qdd)) = qdd, ID = M qdd + h + friction, M symmetric positive definite, kinetic energy =
qd'M qd / 2, the Coriolis matrix, gravity torques as the potential's gradient, Jacobian columns
as finite differences of forward kinematics.
"""

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R
from _engine import FD_RTOL, FRAMES, KINDS, close, make, models  # noqa: F401  (a fixture)


# ---------------------------------------------------------------- identities

IDENTITY_CASES = [(kind, n) for kind in KINDS for n in (1, 2, 5, 12, 30)]


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_forward_dynamics_inverts_inverse_dynamics(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        for id_method in ("rnea", "kane"):
            tau = robot.inverse_dynamics(q, qd, qdd, method=id_method)
            for fd_method in ("aba", "crba", "kane"):
                close(robot.forward_dynamics(q, qd, tau, method=fd_method), qdd, FD_RTOL)


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_inverse_dynamics_is_mass_matrix_bias_and_friction(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    assert damping.min() > 0 and friction.min() > 0
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        expected = (robot.mass_matrix(q) @ qdd + robot.bias_torques(q, qd) + damping * qd
                    + friction * np.sign(qd))
        close(robot.inverse_dynamics(q, qd, qdd), expected)
        close(robot.inverse_dynamics(q, qd, qdd, method="kane"), expected)
        # at rest: gravity only (Coulomb friction is zero at qd = 0)
        zero = np.zeros(n)
        close(robot.inverse_dynamics(q, zero, zero), robot.gravity_torques(q))


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_mass_matrix_symmetric_positive_definite(kind, n, rng):
    for armature in (False, True):
        spec = make(kind, n, rng, armature=armature)
        robot = robodyn.Robot(spec)
        for _ in range(3):
            q, _, _ = R.random_state(spec, rng)
            M = robot.mass_matrix(q)
            np.testing.assert_array_equal(M, M.T)
            assert np.linalg.eigvalsh(M).min() > 0
            # columns are unit-acceleration torques without gravity and velocity
            g = robot.gravity_torques(q)
            zero = np.zeros(n)
            cols = np.array([robot.inverse_dynamics(q, zero, e) - g for e in np.eye(n)]).T
            close(M, cols)


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_kinetic_energy_is_quadratic_form(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, _ = R.random_state(spec, rng)
        close(robot.kinetic_energy(q, qd), 0.5 * qd @ robot.mass_matrix(q) @ qd)


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_coriolis_matrix(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    h = 1e-6
    for _ in range(2):
        q, qd, _ = R.random_state(spec, rng)
        C = robot.coriolis_matrix(q, qd)
        # C qd = bias - gravity
        close(C @ qd, robot.bias_torques(q, qd) - robot.gravity_torques(q))
        # Mdot - 2C skew-symmetric, Mdot by central differences along q + t qd
        Mdot = (robot.mass_matrix(q + h * qd) - robot.mass_matrix(q - h * qd)) / (2 * h)
        N = Mdot - 2 * C
        scale = max(1.0, np.abs(Mdot).max(), np.abs(C).max())
        np.testing.assert_allclose(N + N.T, 0, atol=1e-6 * scale)
        # C is linear in qd
        qd2 = rng.standard_normal(n)
        close(robot.coriolis_matrix(q, qd + 2 * qd2), C + 2 * robot.coriolis_matrix(q, qd2))


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_gravity_torques_are_potential_gradient(kind, n, rng):
    # tau = ... + g(q) with g = +dV/dq (V = potential_energy), as in the reference
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    h = 1e-6
    for _ in range(2):
        q, _, _ = R.random_state(spec, rng)
        grad = np.array([(robot.potential_energy(q + h * e) - robot.potential_energy(q - h * e))
                         / (2 * h) for e in np.eye(n)])
        g = robot.gravity_torques(q)
        np.testing.assert_allclose(g, grad, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(g).max()))
        # and the reference agrees on the sign convention
        close(g, F.gravity_torques(spec, q))


def rotation_rate(Rp, Rm, R0, h):
    """Angular velocity (base axes) from R(q + h), R(q - h): vee of dR/dq R'."""
    W = (Rp - Rm) / (2 * h) @ R0.T
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


@pytest.mark.parametrize("kind, n", [("chain", 1), ("chain", 6), ("tree", 6), ("tree", 15)])
def test_jacobian_columns_are_fk_differences(kind, n, rng):
    spec = make(kind, n, rng, frames=3)
    robot = robodyn.Robot(spec)
    h = 1e-6
    q, _, _ = R.random_state(spec, rng)
    T0 = robot.forward_kinematics(q)
    plus = [robot.forward_kinematics(q + h * e) for e in np.eye(n)]
    minus = [robot.forward_kinematics(q - h * e) for e in np.eye(n)]
    for link in range(len(robot.link_names)):
        J = robot.jacobian(q, link)
        for j in range(n):
            Tp, Tm = plus[j][link], minus[j][link]
            w = rotation_rate(Tp[:3, :3], Tm[:3, :3], T0[link][:3, :3], h)
            v = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
            np.testing.assert_allclose(J[:3, j], w, atol=1e-7)
            np.testing.assert_allclose(J[3:, j], v, atol=1e-7)


def test_forward_kinematics_poses_are_rigid(models):
    spec, robot, states = models["tree", 14]
    T = robot.forward_kinematics(states[0][0])
    assert T.shape == (14 + FRAMES, 4, 4)
    Rs = T[:, :3, :3]
    close(Rs @ Rs.transpose(0, 2, 1), np.broadcast_to(np.eye(3), Rs.shape), 1e-12)
    np.testing.assert_array_equal(T[:, 3], np.broadcast_to([0.0, 0.0, 0.0, 1.0], (len(T), 4)))


# ---------------------------------------------------------------- gravity

def test_gravity_is_assignable(rng):
    spec = R.random_tree(8, rng, frames=1)
    robot = robodyn.Robot(spec)
    np.testing.assert_array_equal(robot.gravity, spec.gravity)
    q, qd, qdd = R.random_state(spec, rng)
    tau = 5 * rng.standard_normal(8)
    before = robot.gravity_torques(q)
    g = np.array([1.5, -2.0, -3.0])
    robot.gravity = g
    np.testing.assert_array_equal(robot.gravity, g)
    np.testing.assert_array_equal(robot.spec.gravity, g)
    assert np.abs(robot.gravity_torques(q) - before).max() > 1e-3
    close(robot.gravity_torques(q), F.gravity_torques(spec, q, gravity=g))
    close(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd, gravity=g))
    close(robot.inverse_dynamics(q, qd, qdd, method="kane"), F.rnea(spec, q, qd, qdd, gravity=g))
    close(robot.bias_torques(q, qd), F.bias(spec, q, qd, gravity=g))
    close(robot.potential_energy(q), F.potential_energy(spec, q, gravity=g))
    for method in ("aba", "crba", "kane"):
        close(robot.forward_dynamics(q, qd, tau, method=method), F.aba(spec, q, qd, tau, gravity=g),
              FD_RTOL)
    # a list is accepted too; the gravity terms scale with it
    robot.gravity = [0.0, 0.0, -9.81]
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])
    close(robot.gravity_torques(q), before)
    robot.gravity = (0, 0, -19.62)
    close(robot.gravity_torques(q), 2 * before)


def test_zero_gravity(rng):
    spec = R.random_tree(8, rng)
    robot = robodyn.Robot(spec)
    robot.gravity = np.zeros(3)
    q, qd, qdd = R.random_state(spec, rng)
    assert np.all(robot.gravity_torques(q) == 0)
    assert robot.potential_energy(q) == 0
    close(robot.bias_torques(q, qd), robot.coriolis_matrix(q, qd) @ qd)
    Q = np.array([q, q + 1])
    assert np.all(robot.gravity_torques(Q) == 0)
    close(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd, gravity=np.zeros(3)))


@pytest.mark.parametrize("bad", [[0.0, 0.0, np.nan], [np.inf, 0.0, 0.0], [0.0, -np.inf, 0.0]])
def test_non_finite_gravity_rejected(bad, rng):
    robot = robodyn.Robot(R.random_chain(3, rng))
    with pytest.raises(ValueError, match="gravity"):
        robot.gravity = bad
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])


@pytest.mark.parametrize("bad", [[0.0, 1.0], np.zeros((2, 3)), np.zeros((1, 3)), "down", None])
def test_bad_gravity_shape_rejected(bad, rng):
    robot = robodyn.Robot(R.random_chain(3, rng))
    with pytest.raises(ValueError, match="gravity"):
        robot.gravity = bad
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])


def test_non_finite_gravity_in_spec_rejected(rng):
    spec = R.random_chain(3, rng)
    spec.gravity = np.array([0.0, np.nan, -9.81])
    with pytest.raises(ValueError, match="gravity"):
        robodyn.Robot(spec)
