"""Inverse dynamics with constraints and actuation (robodyn.constraints.inverse).

Checked against the equations themselves (M qdd + h = tau + J' lam, with robodyn's M and h),
the four-bar's gravity compensation by virtual work on its closed-form kinematics, the
minimum-torque property under redundant actuation, and the open tree's inverse dynamics.
"""

import math

import numpy as np
import pytest

import robodyn
from robodyn.constraints import assembly as A
from robodyn.constraints import inverse as I
from reference import featherstone as F
from reference import random_models as R
import _mechanisms as M

G = 9.81


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def balance(system, q, v, qdd, tau, lam):
    """M qdd + h - tau - J' lam (zero when the equations hold)."""
    robot = system.robot
    h = robot.inverse_dynamics(q, v, np.zeros(robot.nv))  # bias forces and joint losses
    return robot.mass_matrix(q) @ qdd + h - tau - system.jacobian(q).T @ lam


def fourbar_motion(system, g, theta2, omega=1.3, alpha=-0.4):
    Q, QD, QDD = A.kinematic_analysis(system, ["crank"], [theta2], [omega], [alpha],
                                      q_guess=M.fourbar_q(theta2, g))
    return Q[0], QD[0], QDD[0]


def virtual_work_torque(theta2, g):
    """dV/dtheta2 of the four-bar's rods (2 kg/m, centres at mid-length) by hand: the
    centres' heights from the closed-form angles, their rates from the velocity loop
    a w2 n(t2) + b w3 n(t3) = c w4 n(t4), n(t) = (-sin t, cos t), with w2 = 1 (Cramer)."""
    a, b, c = g["a"], g["b"], g["c"]
    t3, t4 = M.freudenstein(theta2, a, b, c, g["d"])
    # b w3 n(t3) - c w4 n(t4) = -a n(t2)
    m11, m12, m21, m22 = -b * math.sin(t3), c * math.sin(t4), b * math.cos(t3), -c * math.cos(t4)
    r1, r2 = a * math.sin(theta2), -a * math.cos(theta2)
    det = m11 * m22 - m12 * m21
    w3, w4 = (r1 * m22 - m12 * r2) / det, (m11 * r2 - r1 * m21) / det
    m1, m2, m3 = 2 * a, 2 * b, 2 * c
    dz1 = a / 2 * math.cos(theta2)
    dz2 = a * math.cos(theta2) + b / 2 * math.cos(t3) * w3
    dz3 = c / 2 * math.cos(t4) * w4
    return G * (m1 * dz1 + m2 * dz2 + m3 * dz3)


@pytest.fixture
def fourbar():
    system, g = M.fourbar()
    return system, g


@pytest.mark.parametrize("theta2", [0.0, 0.8, 2.0, 4.0])
def test_fourbar_gravity_compensation_is_the_virtual_work(fourbar, theta2):
    system, g = fourbar
    q = M.fourbar_q(theta2, g)
    tau, lam = I.gravity_compensation(system, q)
    close(tau, [virtual_work_torque(theta2, g), 0.0, 0.0], rtol=1e-10, atol=1e-12)
    close(balance(system, q, np.zeros(3), np.zeros(3), tau, lam), np.zeros(3), atol=1e-12)


@pytest.mark.parametrize("theta2", [0.3, 2.9])
def test_fourbar_inverse_dynamics_balances(fourbar, theta2):
    system, g = fourbar
    q, v, qdd = fourbar_motion(system, g, theta2)
    tau, lam = I.inverse_dynamics(system, q, v, qdd)
    assert tau[1] == 0.0 and tau[2] == 0.0 and lam.shape == (2,)
    close(balance(system, q, v, qdd, tau, lam), np.zeros(3), atol=1e-11)


def test_driving_any_single_joint_gives_the_same_power(fourbar):
    # one free motion: the actuator's power tau . qd is the same whichever joint drives it
    _, g = fourbar
    powers = []
    for joint in ("crank", "coupler", "rocker"):
        system = M.fourbar(actuated=(joint,))[0]
        q, v, qdd = fourbar_motion(system, g, 1.1)
        tau, lam = I.inverse_dynamics(system, q, v, qdd)
        close(balance(system, q, v, qdd, tau, lam), np.zeros(3), atol=1e-11)
        powers.append(tau @ v)
    close(powers, [powers[0]] * 3, rtol=1e-10)


def test_redundant_actuation_gives_the_minimum_torque(fourbar):
    _, g = fourbar
    system = M.fourbar(actuated=("crank", "rocker"))[0]
    q, v, qdd = fourbar_motion(system, g, 0.9)
    tau, lam = I.inverse_dynamics(system, q, v, qdd)
    close(balance(system, q, v, qdd, tau, lam), np.zeros(3), atol=1e-11)
    # other solutions: tau + s t with t a torque that moves nothing (Z' S t = 0); tau is
    # orthogonal to them, so it has the least norm
    Z = np.linalg.svd(system.jacobian(q))[2][2:].T
    S = np.eye(3)[:, [0, 2]]
    t = S @ np.linalg.svd(Z.T @ S)[2][-1]
    assert abs(tau @ t) < 1e-10 * np.linalg.norm(tau)
    assert tau[1] == 0.0


def test_underactuation_is_refused_with_the_deficiency(fourbar):
    _, g = fourbar
    system = M.fourbar(actuated=())[0]
    with pytest.raises(I.ActuationError, match=r"drive 0 of the mechanism's 1 free motions "
                       r"\(1 undriven\)"):
        I.gravity_compensation(system, M.fourbar_q(0.5, g))


def test_qdd_that_breaks_the_loop_is_refused(fourbar):
    system, g = fourbar
    q = M.fourbar_q(0.5, g)
    with pytest.raises(I.ActuationError, match="qdd violates the constraints"):
        I.inverse_dynamics(system, q, np.zeros(3), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="qdd: expected shape"):
        I.inverse_dynamics(system, q, np.zeros(3), [1.0, 0.0])


def test_without_constraints_it_is_the_tree_inverse_dynamics(rng):
    spec = R.random_tree(5, rng)
    robot = robodyn.Robot(spec)
    system = robodyn.ConstrainedRobot(robot, [])
    q, v, a = R.random_state(spec, rng)
    tau, lam = I.inverse_dynamics(system, q, v, a)
    close(tau, robot.inverse_dynamics(q, v, a))
    assert lam.shape == (0,)


def test_floating_base_welded_foot(rng):
    # a floating chain of 6 joints with its last link welded to the world: 6 free motions,
    # 6 actuated joints, the base unactuated
    spec = R.random_floating(6, rng, "chain", friction=False)
    robot = robodyn.Robot(spec)
    q, _, _ = R.random_floating_state(spec, rng)
    loop = robodyn.LoopConstraint(None, spec.bodies[6].name, frame1=F.fk(spec, q)[6],
                                  kind="weld")
    system = robodyn.ConstrainedRobot(robot, [loop])
    J = system.jacobian(q)
    Z = np.linalg.svd(J)[2][6:].T
    v = Z @ rng.standard_normal(6)
    qdd = Z @ rng.standard_normal(6) - np.linalg.pinv(J) @ system.bias_acceleration(q, v)
    tau, lam = I.inverse_dynamics(system, q, v, qdd)
    close(tau[:6], np.zeros(6), atol=0)
    close(balance(system, q, v, qdd, tau, lam), np.zeros(12), atol=1e-9)


@pytest.mark.parametrize("theta2", [0.4, 2.2])
def test_fourbar_loop_force_is_the_free_body_balance(fourbar, theta2):
    # at rest, the rocker and the coupler are each in moment balance about their own
    # (unactuated) joints under gravity and the loop force: lam on the rocker at its tip
    # (frame 1's x and z axes), minus lam on the coupler at the same point
    system, g = fourbar
    q = M.fourbar_q(theta2, g)
    _, lam = I.gravity_compensation(system, q)
    poses = system.robot.forward_kinematics(q)
    gvec = np.array([0.0, 0.0, -G])
    R4, O4 = poses[2][:3, :3], poses[2][:3, 3]
    R3, B = poses[1][:3, :3], poses[1][:3, 3]
    P = O4 + R4 @ [g["c"], 0, 0]
    c4, c3 = O4 + R4 @ [g["c"] / 2, 0, 0], B + R3 @ [g["b"] / 2, 0, 0]
    m4, m3 = 2 * g["c"], 2 * g["b"]
    # moments (y components) as a linear function of (lam_x, lam_z): columns R4 e_x, R4 e_z
    A = np.array([[np.cross(P - O4, R4[:, k])[1] for k in (0, 2)],
                  [np.cross(P - B, -R4[:, k])[1] for k in (0, 2)]])
    b = -np.array([np.cross(c4 - O4, m4 * gvec)[1], np.cross(c3 - B, m3 * gvec)[1]])
    close(lam, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("theta2", [0.3, 2.9])
def test_round_trip_with_constrained_forward_dynamics(fourbar, theta2):
    # the torques of inverse dynamics, fed to the constrained forward dynamics, give back the
    # desired acceleration and the same loop force
    system, g = fourbar
    q, v, qdd = fourbar_motion(system, g, theta2)
    tau, lam = I.inverse_dynamics(system, q, v, qdd)
    qdd2, lam2 = system.forward_dynamics(q, v, tau)
    close(qdd2, qdd, rtol=1e-10, atol=1e-10)
    close(lam2, lam, rtol=1e-10, atol=1e-10)


def test_round_trip_floating_base(rng):
    spec = R.random_floating(6, rng, "chain", friction=False)
    robot = robodyn.Robot(spec)
    q, _, _ = R.random_floating_state(spec, rng)
    loop = robodyn.LoopConstraint(None, spec.bodies[6].name, frame1=F.fk(spec, q)[6],
                                  kind="weld")
    system = robodyn.ConstrainedRobot(robot, [loop])
    J = system.jacobian(q)
    Z = np.linalg.svd(J)[2][6:].T
    v = Z @ rng.standard_normal(6)
    qdd = Z @ rng.standard_normal(6) - np.linalg.pinv(J) @ system.bias_acceleration(q, v)
    tau, lam = I.inverse_dynamics(system, q, v, qdd)
    qdd2, lam2 = system.forward_dynamics(q, v, tau)
    close(qdd2, qdd, rtol=1e-9, atol=1e-9)
    close(lam2, lam, rtol=1e-9, atol=1e-9)
