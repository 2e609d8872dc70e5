"""The simulator on a floating robot's configuration manifold (nq = nv + 1).

The plant here is tests/reference/plant.py: the pure-NumPy reference behind the Robot methods
the simulator calls, so the integrators are checked against dynamics that share nothing with
cpp/. What is checked: RK4 is fourth order for the whole state including the base pose (the
error falls ~16x when dt halves; with the tangent-space transport switched off it is second
order, ~4x, so the test can fail), RK45 meets its tolerance, the quaternion stays unit,
the momentum of a free system is constant, the SE(3) transport is the inverse of the
derivative of integrate, wrenches returned by a controller equal the generalized forces they
stand for, and the boundary refuses what it cannot integrate.
"""

import math

import numpy as np
import pytest

import robodyn
from robodyn.model import lie as _lie
from robodyn.sim import loop as S
from reference import featherstone as F
from reference import random_models as R
from reference.plant import ReferencePlant


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.fixture
def free_system(rng):
    """A floating base with a 2-joint chain, gravity on, no joint losses; a tumbling state."""
    spec = R.random_floating(2, rng, "chain", damping=False, friction=False, armature=False)
    q0, v0, _ = R.random_floating_state(spec, rng)
    return ReferencePlant(spec), q0, 1.5 * v0


def state_error(plant, a, b):
    """Distance between two end states: the tangent vector between the configurations
    (difference, so the base pose counts) and the velocity difference."""
    return np.linalg.norm(np.r_[plant.difference(a.q[-1], b.q[-1]), a.qd[-1] - b.qd[-1]])


def passive(plant, q0, v0, dt, integrator="rk4", duration=1.0, **kw):
    return robodyn.simulate(plant, q0=q0, qd0=v0, duration=duration, dt=dt,
                            integrator=integrator, control_rate="continuous", **kw)


# ---------------------------------------------------------------- the transport

@pytest.mark.parametrize("angle", [0.0, 1e-6, 0.05, 0.0999, 0.1001, 0.7, 2.0, 3.0])
def test_right_jacobian_inverse_inverts_the_derivative_of_integrate(angle, rng):
    # Jr(xi) d = difference(integrate(q, xi), integrate(q, xi + d)) for small d
    spec = R.random_floating(0, rng)
    q, _, _ = R.random_floating_state(spec, rng)
    xi = rng.standard_normal(6)
    xi[:3] *= angle / np.linalg.norm(xi[:3])
    q1 = F.integrate(spec, q, xi)
    h = 1e-6
    Jr = np.array([(F.difference(spec, q1, F.integrate(spec, q, xi + h * e))
                    - F.difference(spec, q1, F.integrate(spec, q, xi - h * e))) / (2 * h)
                   for e in np.eye(6)]).T
    close(_lie.se3_right_jacobian_inv(xi) @ Jr, np.eye(6), rtol=0, atol=2e-9)
    # the simulator's version applies it to a vector (a series below 0.2 rad)
    v = rng.standard_normal(6)
    close(_lie.se3_dexpinv(xi, v, np.empty(6)), _lie.se3_right_jacobian_inv(xi) @ v,
          rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------- order of accuracy

def rk4_error_ratios(plant, q0, v0):
    ref = passive(plant, q0, v0, 1.0, "rk45", rtol=1e-13, atol=1e-13)
    errs = [state_error(plant, passive(plant, q0, v0, dt), ref) for dt in (0.1, 0.05, 0.025)]
    return np.array(errs[:-1]) / np.array(errs[1:])


def test_rk4_is_fourth_order_for_the_base_pose_too(free_system):
    ratios = rk4_error_ratios(*free_system)
    assert np.all((ratios > 13) & (ratios < 20)), ratios


def test_rk4_without_the_transport_is_second_order(free_system, monkeypatch):
    # the stage slope v_s instead of Jr(theta_s)^-1 v_s: what the test above guards against
    def identity(xi, v, out):
        out[:6] = v[:6]
        return out

    monkeypatch.setattr(S, "se3_dexpinv", identity)
    ratios = rk4_error_ratios(*free_system)
    assert np.all((ratios > 3) & (ratios < 5)), ratios


def test_rk45_meets_its_tolerance_and_keeps_the_quaternion_unit(free_system):
    plant, q0, v0 = free_system
    ref = passive(plant, q0, v0, 1.0, "rk45", rtol=1e-13, atol=1e-13)
    res = passive(plant, q0, v0, 0.1, "rk45", rtol=1e-9, atol=1e-9)
    assert 1e-12 < state_error(plant, res, ref) < 1e-7
    assert res.stats["rejected"] >= 0 and res.stats["steps"] > 10
    for r in (ref, res):
        close(np.linalg.norm(r.q[:, 3:7], axis=1), 1.0, atol=1e-15)


def test_semi_implicit_euler_is_first_order(free_system):
    plant, q0, v0 = free_system
    ref = passive(plant, q0, v0, 0.01, "rk4")
    errs = [state_error(plant, passive(plant, q0, v0, dt, "euler"), ref)
            for dt in (0.01, 0.005)]
    assert 1.6 < errs[0] / errs[1] < 2.4


# ---------------------------------------------------------------- momentum

def test_momentum_of_a_free_system_stays_constant(rng):
    spec = R.random_floating(3, rng, "tree", damping=False, friction=False, armature=False)
    spec.gravity = np.zeros(3)
    plant = ReferencePlant(spec)
    q0, v0, _ = R.random_floating_state(spec, rng)
    res = passive(plant, q0, v0, 0.01)
    assert res.momentum.shape == (101, 6)
    close(res.momentum[0], F.momentum(spec, q0, v0))
    # constant to the integration error, which falls as dt^4
    ang, lin = res.momentum_drift
    scale = np.abs(res.momentum[0]).max()
    assert ang < 1e-8 * scale and lin < 1e-8 * scale
    finer = passive(plant, q0, v0, 0.005)
    assert max(finer.momentum_drift) < max(ang, lin) / 8
    close(res.kinetic, res.kinetic[0], rtol=1e-8)
    assert "momentum drift" in res.summary()


def test_gravity_changes_linear_momentum_by_m_g_t(rng):
    spec = R.random_floating(2, rng, "chain", damping=False, friction=False, armature=False)
    plant = ReferencePlant(spec)
    q0, v0, _ = R.random_floating_state(spec, rng)
    res = passive(plant, q0, v0, 0.01, duration=0.5)
    mass = sum(b.mass for b in spec.bodies)
    close(res.momentum[:, 3:] - res.momentum[0, 3:], np.outer(res.t, mass * spec.gravity),
          rtol=1e-7, atol=1e-7)


# ---------------------------------------------------------------- wrenches from a controller

def test_a_wrench_on_the_root_is_the_base_block_of_tau(free_system, rng):
    plant, q0, v0 = free_system
    w = rng.standard_normal(6)
    tau = np.r_[w, 0.3, -0.2]

    def with_wrench(t, q, v, ref):
        return np.r_[np.zeros(6), 0.3, -0.2], {plant.link_names[0]: w}

    a = robodyn.simulate(plant, controller=with_wrench, q0=q0, qd0=v0, duration=0.2, dt=0.01,
                         control_rate=100.0)
    b = robodyn.simulate(plant, controller=lambda t, q, v, ref: tau, q0=q0, qd0=v0,
                         duration=0.2, dt=0.01, control_rate=100.0)
    close(a.q, b.q, rtol=0, atol=1e-14)
    close(a.tau, np.tile(tau, (a.t.shape[0], 1)), rtol=0, atol=0)


def test_a_wrench_on_a_link_is_J_transpose_w_in_the_link_frame(free_system, rng):
    plant, q0, v0 = free_system
    link = plant.link_names[2]
    w = rng.standard_normal(6)
    seen = []

    def with_wrench(t, q, v, ref):
        seen.append(q.copy())
        return np.zeros(8), {link: w}

    res = robodyn.simulate(plant, controller=with_wrench, q0=q0, qd0=v0, duration=0.05,
                           dt=0.01, control_rate=100.0)
    # independently: the link's body Jacobian from finite differences of its pose along
    # integrate, J_body^T w, at every control instant
    spec = plant.spec
    for k, q in enumerate(seen):
        P0 = F.fk(spec, q)[2]
        Jb = np.zeros((6, 8))
        h = 1e-6
        for j in range(8):
            e = np.zeros(8)
            e[j] = h
            dP = (F.fk(spec, F.integrate(spec, q, e))[2]
                  - F.fk(spec, F.integrate(spec, q, -e))[2]) / (2 * h)
            W = P0[:3, :3].T @ dP[:3, :3]
            Jb[:, j] = np.r_[W[2, 1], W[0, 2], W[1, 0], P0[:3, :3].T @ dP[:3, 3]]
        close(res.tau[k], Jb.T @ w, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- the boundary

def test_boundary_errors(free_system):
    plant, q0, v0 = free_system
    bad = q0.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match="quaternion"):
        robodyn.simulate(plant, q0=bad, qd0=v0, duration=0.01)
    with pytest.raises(ValueError, match=r"q0: expected shape \(9,\)"):
        robodyn.simulate(plant, q0=q0[:8], qd0=v0, duration=0.01)
    with pytest.raises(ValueError, match=r"qd0: expected shape \(8,\)"):
        robodyn.simulate(plant, q0=q0, qd0=q0, duration=0.01)
    with pytest.raises(ValueError, match="not one of the robot's links"):
        robodyn.simulate(plant, controller=lambda t, q, v, r: (np.zeros(8), {"nope": np.ones(6)}),
                         q0=q0, qd0=v0, duration=0.01)
    with pytest.raises(ValueError, match="6 finite numbers"):
        robodyn.simulate(plant, controller=lambda t, q, v, r: (np.zeros(8),
                                                               {"base": [1.0, math.nan]}),
                         q0=q0, qd0=v0, duration=0.01)


def test_nearly_unit_quaternion_is_normalised(free_system):
    plant, q0, v0 = free_system
    q = q0.copy()
    q[3:7] *= 1 + 1e-8
    res = robodyn.simulate(plant, q0=q, qd0=v0, duration=0.01, dt=0.01)
    close(res.q[0, 3:7], q0[3:7], rtol=0, atol=1e-15)


def test_result_names_and_csv(free_system, tmp_path):
    plant, q0, v0 = free_system
    res = passive(plant, q0, v0, 0.05, duration=0.1)
    assert res.q.shape == (3, 9) and res.qd.shape == (3, 8) and res.tau.shape == (3, 8)
    assert res.floating and res.n == 8
    assert res.q_names[:7] == ["base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz",
                               "base_qw"]
    assert res.joint_names[:6] == ["base_wx", "base_wy", "base_wz", "base_vx", "base_vy",
                                   "base_vz"]
    path = res.to_csv(tmp_path / "run.csv")
    header = open(path).readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    assert header[1:10] == ["q_" + n for n in res.q_names]
    at = header.index("momentum_ax")
    assert header[at:at + 6] == ["momentum_ax", "momentum_ay", "momentum_az", "momentum_lx",
                                 "momentum_ly", "momentum_lz"]
    close(data[:, 1:10], res.q, rtol=0, atol=0)
    close(data[:, at:at + 6], res.momentum, rtol=0, atol=0)


def test_plot_names_the_base_coordinates_and_draws_them(tmp_path):
    """res.plot on a floating robot: the base's 7 configuration coordinates in two rows (its
    position in m beside the force on it; its quaternion beside the moment on it), then each
    joint with its own q and tau columns, and a momentum row (before: one row per entry of
    qd, each drawing the q column of the same index)."""
    pytest.importorskip("matplotlib")
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    tau = np.r_[0.1, 0.2, 0.3, 1.0, 2.0, 3.0, 0.5, -0.5]  # a wrench on the base, joint torques
    res = robodyn.simulate(robot, lambda t, q, v, ref: tau, q0=q0, qd0=v0, duration=0.2,
                           dt=1e-3)
    path = tmp_path / "floating.png"
    fig = res.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = fig.axes
    rows = 2 + (robot.nv - 6)
    labels = [axes[3 * r].get_ylabel() for r in range(rows)]
    assert labels == ["base position\n(m)", "base orientation\n(quaternion)"] + [
        f"{name}\n(rad)" for name in res.joint_names[6:]]
    efforts = [axes[3 * r + 2].get_ylabel() for r in range(rows)]
    assert efforts[:2] == ["force (N)", "moment (N m)"]
    # the lines are the right columns of q and tau
    for r, (qc, tc) in enumerate([((0, 1, 2), (3, 4, 5)), ((3, 4, 5, 6), (0, 1, 2))]
                                 + [((7 + k,), (6 + k,)) for k in range(robot.nv - 6)]):
        lines = [ln for ln in axes[3 * r].get_lines() if ln.get_linestyle() == "-"]
        assert len(lines) == len(qc)
        for k, c in enumerate(qc):
            np.testing.assert_array_equal(lines[k].get_ydata(), res.q[:, c])
        steps = axes[3 * r + 2].get_lines()
        for k, c in enumerate(tc):
            np.testing.assert_array_equal(steps[k].get_ydata(), res.tau[:, c])
    assert [[x for x in ax.get_legend_handles_labels()[1] if x != "reference"]
            for ax in axes[:6:3]] == [["x", "y", "z"], ["qx", "qy", "qz", "qw"]]
    assert axes[-1].get_ylabel() == "momentum change"


def test_actuator_work_of_a_floating_robot_is_the_energy_change():
    """No gravity, no friction: the energy changes by the work of the base wrench (along the
    base's twist, difference(q_k, q_k+1)) and of the joint torques."""
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    assert not np.any(robot.gravity)
    tau = np.r_[0.1, 0.2, 0.3, 1.0, 2.0, 3.0, 0.5, -0.5]
    res = robodyn.simulate(robot, lambda t, q, v, ref: tau, q0=q0, qd0=v0, duration=0.5,
                           dt=1e-3)
    work = res.actuator_work()
    change = res.energy - res.energy[0]
    assert abs(work[-1]) > 0.1
    np.testing.assert_allclose(work, change, rtol=0, atol=1e-6 * abs(work[-1]))
    # a result built by hand (no robot): the base's work by the trapezoidal rule on qd
    res.robot = None
    np.testing.assert_allclose(res.actuator_work(), change, rtol=0, atol=1e-4 * abs(work[-1]))
