"""robodyn.simulate on a ConstrainedRobot (robodyn.sim.constrained).

A passive four-bar conserves its energy and stays closed with the projection; without it the
drift is reported; a controller commands the actuated joint only; a floating base welded to the
world stays put; bad options are clear errors.
"""

import numpy as np
import pytest

import robodyn
from robodyn.constraints.inverse import gravity_compensation
from robodyn.sim.constrained import simulate_constrained
from reference import featherstone as F
from reference import random_models as R
import _mechanisms as M


def fourbar(**kw):
    system, g = M.fourbar(**kw)
    return system, g


@pytest.mark.parametrize("duration", [2.0, 10.0])
def test_passive_fourbar_keeps_energy_and_closure(duration):
    # 10 s (the slow tier) is the figure; 2 s runs in the fast tier
    system, g = fourbar(actuated=())
    q0 = M.fourbar_q(0.3, g)
    res = robodyn.simulate(system, duration=duration, dt=1e-3, q0=q0,
                           control_rate="continuous")
    assert res.energy_drift < 1e-6
    assert res.residual.max() < 1e-9
    assert res.velocity_drift.max() < 1e-6
    # the mechanism moved: the crank swept a good angle
    assert np.ptp(res.q[:, 0]) > 1.0
    # without projection (and no Baumgarte terms) the loop drifts open, more than with it
    free = simulate_constrained(system, duration=duration, dt=1e-3, q0=q0, project=False,
                                control_rate="continuous")
    assert free.residual.max() > 10 * res.residual.max()
    assert free.energy_drift < 1e-4
    print(f"passive four-bar {duration:g} s, RK4 1 ms: energy drift {res.energy_drift:.2e}, max |phi| "
          f"{res.residual.max():.2e} with projection; {free.energy_drift:.2e}, "
          f"{free.residual.max():.2e} without")


def test_summary_reports_drift_and_forces():
    system, g = fourbar(actuated=())
    res = robodyn.simulate(system, duration=0.05, dt=1e-3, q0=M.fourbar_q(0.3, g))
    text = res.summary()
    assert "constraints: 1 (2 rows), projection on" in text
    assert "coupler_rocker" in text and "max |lambda|" in text
    assert res.constraint_forces.shape == (res.t.shape[0], 2)
    # the recorded forces are those of the forward dynamics at the recorded state
    k = 17
    qdd, lam = system.forward_dynamics(res.q[k], res.qd[k], res.tau[k])
    np.testing.assert_allclose(res.constraint_forces[k], lam, rtol=1e-12)


def test_baumgarte_terms_reduce_the_drift_without_projection():
    q0 = M.fourbar_q(0.3, M.FOURBAR)
    runs = [simulate_constrained(fourbar(actuated=(), baumgarte=gains)[0], duration=2.0,
                                 dt=5e-3, q0=q0, project=False, control_rate="continuous")
            for gains in ((0.0, 0.0), (100.0, 20.0))]
    assert runs[1].residual.max() < 0.1 * runs[0].residual.max()


def test_controller_commands_the_actuated_joint():
    system, g = fourbar(actuated=("crank",))
    q0 = M.fourbar_q(0.3, g)
    push = lambda t, q, v, ref: np.array([0.5])  # noqa: E731
    res = robodyn.simulate(system, push, duration=0.02, dt=1e-3, q0=q0)
    assert res.tau.shape == (21, 3) and np.all(res.tau[:, 0] == 0.5)
    assert np.all(res.tau[:, 1:] == 0)
    # gravity compensation from the constrained inverse dynamics holds it still
    comp = lambda t, q, v, ref: gravity_compensation(system, q)[0]  # noqa: E731
    res = robodyn.simulate(system, comp, duration=0.2, dt=1e-3, q0=q0,
                           control_rate="continuous")
    assert np.abs(res.q - res.q[0]).max() < 1e-9
    bad = lambda t, q, v, ref: np.array([0.0, 1.0, 0.0])  # noqa: E731
    with pytest.raises(ValueError, match="commands 1 on velocity 1, which no actuator drives"):
        robodyn.simulate(system, bad, duration=0.01, dt=1e-3, q0=q0)
    with pytest.raises(ValueError, match=r"expected the torques of the 1 actuated joints"):
        robodyn.simulate(system, lambda t, q, v, r: np.zeros(2), duration=0.01, q0=q0)


def test_floating_base_welded_to_the_world_stays():
    rng = np.random.default_rng(7)
    spec = R.random_floating(3, rng, "chain", friction=False, damping=False)
    robot = robodyn.Robot(spec)
    q0, _, _ = R.random_floating_state(spec, rng)
    loop = robodyn.LoopConstraint(None, spec.bodies[0].name, frame1=F.fk(spec, q0)[0],
                                  kind="weld")
    system = robodyn.ConstrainedRobot(robot, [loop])
    res = robodyn.simulate(system, duration=0.05, dt=1e-3, q0=q0, control_rate="continuous")
    np.testing.assert_allclose(res.q[:, :3], np.tile(q0[:3], (res.t.shape[0], 1)), atol=1e-10)
    assert res.energy_drift < 1e-6


def test_bad_options():
    system, g = fourbar()
    q0 = M.fourbar_q(0.3, g)
    with pytest.raises(ValueError, match="integrator: expected one of rk4, euler"):
        robodyn.simulate(system, integrator="rk45", q0=q0)
    with pytest.raises(ValueError, match="engine: a constrained system is simulated by the "
                       "Python loop"):
        robodyn.simulate(system, engine="cpp", q0=q0)
    with pytest.raises(ValueError, match="duration"):
        robodyn.simulate(system, duration=-1.0, q0=q0)


def test_computed_torque_tracks_a_kinematic_analysis():
    # the crank driven at 2 rad/s through the constrained inverse dynamics; started 0.05 rad
    # behind and at rest, the error follows the PD loop's
    from robodyn.constraints.assembly import kinematic_analysis
    from robodyn.constraints.inverse import ComputedTorque

    system, g = fourbar(actuated=("crank",))

    def reference(t):
        Q, QD, QDD = kinematic_analysis(system, ["crank"], [0.3 + 2.0 * t], [2.0], [0.0],
                                        q_guess=M.fourbar_q(0.3 + 2.0 * t, g))
        return Q[0], QD[0], QDD[0]

    ctrl = ComputedTorque(system, kp=100.0, kd=20.0)
    res = robodyn.simulate(system, ctrl, reference, duration=0.15, dt=1e-3,
                           q0=M.fourbar_q(0.25, g), control_rate="continuous")
    err = np.array([reference(t)[0][0] for t in res.t]) - res.q[:, 0]
    assert abs(err[0]) > 0.04
    # critically damped (kp = 100, kd = 20), from rest (de/dt = 2 rad/s at t = 0):
    # e(t) = (e0 + (de0 + 10 e0) t) exp(-10 t)
    expect = (err[0] + (2.0 + 10 * err[0]) * res.t) * np.exp(-10 * res.t)
    np.testing.assert_allclose(err, expect, atol=1e-6)


def test_redundant_revolute_loop_joint_simulates_with_proximal_iterations():
    # the four-bar closed by a URDF revolute loop joint (5 rows, 3 of them zero in the plane)
    # moves like the one closed by the planar pin (2 rows); mu = 0 refuses the redundancy
    g = M.FOURBAR
    text = M.fourbar_urdf(g["a"], g["b"], g["c"], g["d"]).replace(
        "</robot>", f'<loop_joint name="knee" type="revolute"><link1 link="rocker_link" '
        f'xyz="{g["c"]} 0 0"/><link2 link="coupler_link" xyz="{g["b"]} 0 0"/>'
        '<axis xyz="0 -1 0"/></loop_joint></robot>')
    revolute = robodyn.load_urdf(text)
    planar, _ = fourbar(actuated=())
    q0 = M.fourbar_q(0.3, g)
    with pytest.raises(ValueError, match="rank deficient"):
        robodyn.simulate(revolute, duration=0.01, q0=q0)
    a = simulate_constrained(revolute, duration=0.5, dt=1e-3, q0=q0, mu=1e-8,
                             control_rate="continuous")
    b = robodyn.simulate(planar, duration=0.5, dt=1e-3, q0=q0, control_rate="continuous")
    np.testing.assert_allclose(a.q, b.q, atol=1e-9)
    assert a.residual.max() < 1e-9


def test_floating_chain_on_a_pinned_foot_keeps_energy():
    # a floating chain whose last link's point is pinned to the world (a foot on the ground),
    # falling about it under gravity: energy and contact kept on the SE(3) manifold
    rng = np.random.default_rng(11)
    spec = R.random_floating(3, rng, "chain", friction=False, damping=False, armature=False)
    robot = robodyn.Robot(spec)
    q0, _, _ = R.random_floating_state(spec, rng)
    foot = np.eye(4)
    foot[:3, 3] = [0.0, 0.0, -0.1]
    world = F.fk(spec, q0)[3] @ foot
    loop = robodyn.LoopConstraint(None, spec.bodies[3].name, frame1=world, frame2=foot,
                                  kind="point", name="foot")
    system = robodyn.ConstrainedRobot(robot, [loop])
    res = robodyn.simulate(system, duration=0.5, dt=1e-3, q0=q0, control_rate="continuous")
    assert res.energy_drift < 1e-6
    assert res.residual.max() < 1e-9
    # it moved: the base fell by a good distance about the pinned foot
    assert np.linalg.norm(res.q[-1, :3] - res.q[0, :3]) > 0.05
