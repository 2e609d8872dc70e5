"""Force elements on a closed-loop mechanism: ConstrainedRobot.with_forces.

The planar four-bar of tests/_mechanisms.py (x-z plane, joint axes along -y, gravity -z) with
a spring from the coupler's midpoint to a world point. The spring's generalized force is
written out here by virtual work from the four-bar's closed-form kinematics (sharing nothing
with the C++ force set): the constrained forward dynamics with the spring must equal the one
without it, given that force as tau.
"""

import math

import numpy as np
import pytest

import robodyn
from robodyn.constraints import ForcedConstrainedRobot

from _mechanisms import fourbar, fourbar_q

ANCHOR = np.array([0.1, 0.0, 0.5])  # world point of the spring, m
K, REST = 200.0, 0.2                # N/m, m


def spring_system(c=0.0, actuated=()):
    system, g = fourbar(actuated=actuated)
    spring = robodyn.Spring("coupler_link", [g["b"] / 2, 0, 0], None, ANCHOR, k=K, c=c,
                            rest_length=REST)
    return system, system.with_forces([spring]), g


def spring_force_by_hand(q, v, g, c=0.0):
    """Q (3,) of the spring by virtual work: the coupler midpoint p(q) in the x-z plane (a
    positive angle about -y turns x towards z), l = |p - anchor|, Q = -f dl/dq with
    f = k (l - l0) + c l'."""
    a, s = g["a"], g["b"] / 2
    t2, t3 = q[0], q[0] + q[1]
    p = np.array([a * math.cos(t2) + s * math.cos(t3), a * math.sin(t2) + s * math.sin(t3)])
    dp = np.array([[-a * math.sin(t2) - s * math.sin(t3), -s * math.sin(t3), 0.0],
                   [a * math.cos(t2) + s * math.cos(t3), s * math.cos(t3), 0.0]])
    d = p - ANCHOR[[0, 2]]
    length = math.hypot(*d)
    dl = d @ dp / length
    f = K * (length - REST) + c * (dl @ v)
    return -f * dl


def test_with_forces_keeps_the_loops_and_actuators():
    system, forced, _ = spring_system(actuated=("crank",))
    assert isinstance(forced, ForcedConstrainedRobot)
    assert isinstance(forced.robot, robodyn.ForcedRobot)
    assert forced.constraints == system.constraints
    assert forced.actuated == ("crank",)
    assert len(forced.forces) == 1
    more = forced.with_forces([robodyn.RotationalSpring("rocker", k=1.0)])
    assert len(more.forces) == 2 and more.actuated == ("crank",)
    with pytest.raises(ValueError, match="forces\\[0\\]"):
        system.with_forces(["not an element"])
    with pytest.raises(ValueError, match="system"):
        robodyn.constraints.forces.with_forces(system.robot, [])


@pytest.mark.parametrize("c", [0.0, 3.0])
def test_constrained_fd_with_spring_is_fd_with_its_generalized_force(c):
    system, forced, g = spring_system(c=c)
    rng = np.random.default_rng(35)
    for theta in (0.3, 1.4, 2.9, -2.0):
        q = fourbar_q(theta, g)
        v = system.project_velocity(q, np.array([rng.normal(), 0.0, 0.0]))
        tau = np.zeros(3)
        Q = spring_force_by_hand(q, v, g, c)
        np.testing.assert_allclose(forced.generalized_forces(q, v), Q, rtol=1e-12, atol=1e-12)
        qdd_f, lam_f = forced.forward_dynamics(q, v, tau)
        qdd_r, lam_r = system.forward_dynamics(q, v, tau + Q)
        np.testing.assert_allclose(qdd_f, qdd_r, rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(lam_f, lam_r, rtol=1e-12, atol=1e-11)
        # and the spring changes the motion (the comparison can fail)
        assert np.abs(qdd_f - system.forward_dynamics(q, v, tau)[0]).max() > 1e-2


def test_constrained_inverse_dynamics_includes_the_spring():
    """The crank torque that, with the spring, gives the forward dynamics' qdd is zero when
    the forward dynamics ran with zero torque; without the spring in the model it is not."""
    system, forced, g = spring_system(actuated=("crank",))
    q = fourbar_q(0.8, g)
    v = system.project_velocity(q, np.array([1.5, 0.0, 0.0]))
    tau = np.array([0.7, 0.0, 0.0])
    qdd, lam = forced.forward_dynamics(q, v, tau)
    tau_id, lam_id = forced.inverse_dynamics(q, v, qdd)
    np.testing.assert_allclose(tau_id, tau, atol=1e-10)
    np.testing.assert_allclose(lam_id, lam, rtol=1e-9, atol=1e-9)
    Q = spring_force_by_hand(q, v, g)
    rigid = system.inverse_dynamics(q, v, qdd)[0]
    assert abs(rigid[0] - tau[0]) > 1e-2
    # rigid model: the crank also supplies the spring's share along the free motion
    Z = np.linalg.svd(system.jacobian(q))[2][-1]
    np.testing.assert_allclose(Z @ rigid, Z @ (tau + Q), atol=1e-10)


def test_energies_include_the_spring():
    _, forced, g = spring_system()
    q = fourbar_q(1.1, g)
    v = forced.project_velocity(q, np.array([2.0, 0.0, 0.0]))
    gravity = robodyn.load_urdf(forced.robot.to_urdf()).potential_energy(q)
    length = np.linalg.norm(forced.robot.element_states(q, v)[0, 0])
    assert forced.potential_energy(q) == pytest.approx(
        gravity + K * (length - REST) ** 2 / 2, rel=1e-12)
    assert forced.energy(q, v) == pytest.approx(
        forced.kinetic_energy(q, v) + forced.potential_energy(q), rel=1e-15)


def _run(forced, g, dt, duration=2.0):
    q0 = fourbar_q(0.6, g)
    return robodyn.simulate(forced, duration=duration, dt=dt, q0=q0,
                            qd0=forced.project_velocity(q0, np.array([3.0, 0.0, 0.0])))


def test_spring_fourbar_energy_conserved_to_rk4_accuracy():
    """Kinetic + gravity + spring energy over 2 s of the undamped four-bar: constant to RK4's
    error, which falls as dt^4 (halving dt: about 16x)."""
    _, forced, g = spring_system()
    coarse, fine = _run(forced, g, 1e-3), _run(forced, g, 5e-4)
    scale = coarse.kinetic.max()
    assert scale > 1.0 and np.ptp(coarse.potential) > 1.0  # the spring and gravity work
    drift = [np.abs(r.energy - r.energy[0]).max() for r in (coarse, fine)]
    assert drift[0] < 1e-8 * scale
    assert 8.0 < drift[0] / drift[1] < 32.0


def test_damper_loss_is_its_dissipated_work():
    """With c > 0: the energy falls, and its loss equals the integral of c l'^2 (trapezoid
    rule on the 0.5 ms samples; RK4's own error is far smaller)."""
    c = 3.0
    _, forced, g = spring_system(c=c)
    res = _run(forced, g, 5e-4, duration=1.0)
    states = np.array([forced.robot.element_states(q, v)[0] for q, v in zip(res.q, res.qd)])
    power = c * states[:, 1] ** 2
    work = np.concatenate(([0.0], np.cumsum(np.diff(res.t) * (power[1:] + power[:-1]) / 2)))
    loss = res.energy[0] - res.energy
    assert loss[-1] > 0.1
    np.testing.assert_allclose(loss, work, atol=2e-6 * loss[-1])
    assert np.diff(res.energy).max() <= 1e-12
    # the damper's power is the element's reported power
    np.testing.assert_allclose(states[:, 4], -states[:, 2] * states[:, 1], rtol=1e-12)


def test_actuator_callable_sees_the_stage_time():
    """A Spring whose actuator force is a callable of t: the constrained forward dynamics
    evaluates it at the given t, and the simulation passes each RK4 stage's time (the run
    equals one with the force given to the crank as a torque by hand)."""
    system, g = fourbar(actuated=("crank",))
    seen = []

    def push(length, rate, t):
        seen.append(t)
        return 2.0 * math.sin(3.0 * t)

    spring = robodyn.Spring("coupler_link", [g["b"] / 2, 0, 0], None, ANCHOR, force=push)
    forced = system.with_forces([spring])
    q = fourbar_q(0.5, g)
    v = np.zeros(3)
    a0 = forced.forward_dynamics(q, v, np.zeros(3), t=0.0)[0]
    a1 = forced.forward_dynamics(q, v, np.zeros(3), t=0.5)[0]
    np.testing.assert_allclose(a0, system.forward_dynamics(q, v, np.zeros(3))[0], atol=1e-13)
    assert np.abs(a1 - a0).max() > 1e-2
    with pytest.raises(ValueError, match="tau: expected shape"):
        forced.forward_dynamics(q, v, np.zeros(2))
    seen.clear()
    res = robodyn.simulate(forced, duration=0.01, dt=1e-3, q0=q)
    assert len(res.t) == 11
    np.testing.assert_allclose(sorted(set(np.round(seen, 12))),
                               np.round(np.arange(0, 21) * 5e-4, 12))
