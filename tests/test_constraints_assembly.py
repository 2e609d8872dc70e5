"""Assembly, velocity projection and kinematic analysis (robodyn.constraints.assembly).

Checked against the four-bar's closed form (Freudenstein's equation), finite differences of the
analysed motion, and the defining equations (phi = 0, J v = 0, J qdd + gamma = 0).
"""

import math

import numpy as np
import pytest

import robodyn
from robodyn.constraints import assembly as A
from reference import featherstone as F
from reference import random_models as R
import _mechanisms as M


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.fixture
def fourbar():
    system, g = M.fourbar()
    return system, g


def welded_floating(rng):
    """A floating chain of 6 joints whose last link is welded to the world where it is."""
    spec = R.random_floating(6, rng, "chain", friction=False)
    robot = robodyn.Robot(spec)
    q, _, _ = R.random_floating_state(spec, rng)
    T = F.fk(spec, q)[6]
    loop = robodyn.LoopConstraint(None, spec.bodies[6].name, frame1=T, kind="weld")
    return robodyn.ConstrainedRobot(robot, [loop]), q


@pytest.mark.parametrize("theta2", [0.0, 0.7, 2.5, -2.0])
def test_assemble_holds_the_crank_and_finds_freudenstein(fourbar, theta2):
    system, g = fourbar
    exact = M.fourbar_q(theta2, g)
    q = A.assemble(system, exact + [0.0, 0.15, -0.1], hold=["crank"])
    assert q[0] == theta2
    close(q, exact, atol=1e-11)
    assert np.abs(system.residual(q)).max() <= 1e-12


def test_assemble_moves_the_free_joints_least(fourbar):
    # from a closed configuration nothing moves; with nothing held, a small error is removed
    # by a step nearly orthogonal to the mechanism's motion
    system, g = fourbar
    exact = M.fourbar_q(1.0, g)
    close(A.assemble(system, exact), exact, atol=1e-15)
    dq = 1e-6 * np.array([1.0, -2.0, 0.5])
    q = A.assemble(system, exact + dq)
    Z = np.linalg.svd(system.jacobian(exact))[2][2:].T
    assert abs(float(Z[:, 0] @ (q - exact - dq))) < 1e-11


def test_assemble_floating_base(rng):
    system, q0 = welded_floating(rng)
    _, v, _ = R.random_floating_state(system.robot.spec, rng)
    guess = system.robot.integrate(q0, 0.05 * v)
    q = A.assemble(system, guess, tol=1e-12)
    assert np.abs(system.residual(q)).max() <= 1e-12


def test_assemble_reports_a_loop_that_cannot_close():
    # a crank longer than the other links can reach at theta2 = 0 (non-Grashof)
    system, g = M.fourbar(a=0.6, b=0.2, c=0.2, d=0.45)
    system = system
    with pytest.raises(A.AssemblyError, match=r"max \|phi\| = .*'coupler_rocker' row 'x'.*"
                       r"crank held"):
        A.assemble(system, [0.0, 0.1, 0.2], hold=["crank"], max_iter=30)


def test_assemble_bad_arguments(fourbar):
    system, _ = fourbar
    with pytest.raises(ValueError, match="q_guess: expected shape"):
        A.assemble(system, [0.0, 1.0])
    with pytest.raises(ValueError, match="hold: no joint named 'knee'"):
        A.assemble(system, [0.0, 0, 0], hold=["knee"])
    with pytest.raises(ValueError, match="hold: expected a sequence"):
        A.assemble(system, [0.0, 0, 0], hold="crank")
    with pytest.raises(ValueError, match="q_guess: has non-finite"):
        A.assemble(system, [np.nan, 0, 0])


def test_project_velocity(fourbar, rng):
    system, g = fourbar
    q = M.fourbar_q(0.4, g)
    v = rng.standard_normal(3)
    J = system.jacobian(q)
    w = A.project_velocity(system, q, v)
    close(J @ w, np.zeros(2), atol=1e-12)
    # minimum norm: the change is in the range of J'
    Z = np.linalg.svd(J)[2][2:].T
    close(Z.T @ (w - v), np.zeros(1), atol=1e-12)
    # a held crank keeps its velocity; the others follow it
    w = A.project_velocity(system, q, v, hold=["crank"])
    assert w[0] == v[0]
    close(J @ w, np.zeros(2), atol=1e-12)
    # an admissible velocity is kept
    close(A.project_velocity(system, q, w), w, atol=1e-14)


def test_project_velocity_refuses_held_joints_that_break_the_loop(fourbar):
    system, g = fourbar
    q = M.fourbar_q(0.4, g)
    with pytest.raises(A.AssemblyError, match="cannot cancel"):
        A.project_velocity(system, q, [1.0, 0.0, 0.0], hold=["crank", "rocker"])


def test_kinematic_analysis_against_the_closed_form(fourbar):
    system, g = fourbar
    t = np.linspace(0.0, 2.0, 201)
    w = math.pi
    theta = 0.3 + w * t
    Q, QD, QDD = A.kinematic_analysis(system, ["crank"], theta, np.full_like(t, w),
                                      np.zeros_like(t), q_guess=M.fourbar_q(0.3, g))
    exact = np.array([M.fourbar_q(x, g) for x in theta])
    close(np.angle(np.exp(1j * (Q - exact))), np.zeros_like(Q), atol=1e-9)
    # velocities and accelerations: central differences of the closed form in time
    h = 1e-4
    plus = np.array([M.fourbar_q(x + w * h, g) for x in theta])
    minus = np.array([M.fourbar_q(x - w * h, g) for x in theta])
    wrap = lambda x: np.angle(np.exp(1j * x))  # noqa: E731
    close(QD, wrap(plus - minus) / (2 * h), rtol=1e-6, atol=1e-6)
    close(QDD, (wrap(plus - exact) - wrap(exact - minus)) / h**2, rtol=1e-4, atol=1e-4)
    for q, qd, qdd in zip(Q[::20], QD[::20], QDD[::20]):
        close(system.jacobian(q) @ qd, np.zeros(2), atol=1e-12)
        close(system.jacobian(q) @ qdd + system.bias_acceleration(q, qd), np.zeros(2),
              atol=1e-10)


def test_kinematic_analysis_refuses_undriven_motion(fourbar):
    system, g = fourbar
    with pytest.raises(A.AssemblyError, match="do not determine the passive joints.*1 free"):
        A.kinematic_analysis(system, [], np.zeros((1, 0)), np.zeros((1, 0)),
                             np.zeros((1, 0)), q_guess=M.fourbar_q(0.0, g))
    with pytest.raises(ValueError, match="qd_driven: expected shape"):
        A.kinematic_analysis(system, ["crank"], [0.0, 0.1], np.zeros((2, 2)), [0.0, 0.0],
                             q_guess=M.fourbar_q(0.0, g))


def test_methods_of_the_system(fourbar):
    system, g = fourbar
    exact = M.fourbar_q(0.7, g)
    guess = exact + [0.0, 0.1, -0.1]
    np.testing.assert_array_equal(system.assemble(guess, hold=["crank"]),
                                  A.assemble(system, guess, hold=["crank"]))
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(system.project_velocity(exact, v),
                                  A.project_velocity(system, exact, v))
    Q, QD, QDD = system.kinematic_analysis(["crank"], [0.7], [1.0], [0.0], q_guess=exact)
    close(Q[0], exact, atol=1e-12)
    tau, lam = system.inverse_dynamics(exact, np.zeros(3), np.zeros(3))
    close(tau, system.gravity_compensation(exact)[0], atol=0)
    with pytest.raises(ValueError, match=r"axes \('x', 'z'\) have no URDF loop_joint type"):
        system.to_urdf()
