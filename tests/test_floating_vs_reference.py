"""robodyn's free-floating base against the pure-NumPy reference (tests/reference, which shares
no code with cpp/ and is checked on its own in test_reference_floating.py), on seeded random
trees and chains on a free-flyer root: every quantity, 1e-10 relative."""

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R

CASES = [("chain", 1), ("chain", 6), ("tree", 4), ("tree", 12)]


def close(actual, expected, rtol=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def same_pose(q1, q2):
    close(F.quat_to_rot(q1[3:7]), F.quat_to_rot(q2[3:7]))
    close(q1[:3], q2[:3])
    close(q1[7:], q2[7:])


@pytest.mark.parametrize("kind,n", CASES)
def test_every_quantity_against_the_reference(kind, n, rng):
    spec = R.random_floating(n, rng, kind, frames=2)
    robot = robodyn.Robot(spec)
    spec = robot.spec  # what the robot was built from, body 0 the free-flyer
    assert spec.bodies[0].joint_type == "floating"
    assert (robot.nq, robot.nv) == (n + 7, n + 6)
    for _ in range(3):
        q, v, a = R.random_floating_state(spec, rng)
        tau = F.rnea(spec, q, v, a)
        close(robot.inverse_dynamics(q, v, a), tau)
        close(robot.mass_matrix(q), F.crba(spec, q))
        close(robot.bias_torques(q, v), F.bias(spec, q, v))
        close(robot.gravity_torques(q), F.gravity_torques(spec, q))
        close(robot.forward_dynamics(q, v, tau), a, 1e-8)
        close(robot.forward_dynamics(q, v, tau, method="crba"), a, 1e-8)
        close(robot.kinetic_energy(q, v), F.kinetic_energy(spec, q, v))
        close(robot.potential_energy(q), F.potential_energy(spec, q))
        close(robot.momentum(q, v), F.momentum(spec, q, v))
        close(robot.center_of_mass(q), F.center_of_mass(spec, q))
        poses = F.fk(spec, q)
        T = np.asarray(robot.forward_kinematics(q))
        for k, name in enumerate(robot.link_names[:len(spec.bodies)]):
            i = [b.name for b in spec.bodies].index(name)
            close(T[k], poses[i])
            close(robot.jacobian(q, name), F.jacobian(spec, q, i))
        dv = rng.standard_normal(robot.nv)
        same_pose(robot.integrate(q, dv, 0.7), F.integrate(spec, q, dv, 0.7))
        q1, _, _ = R.random_floating_state(spec, rng)
        close(robot.difference(q, q1), F.difference(spec, q, q1), 1e-9)


def test_a_free_system_simulated_by_robodyn_keeps_its_momentum(rng):
    spec = R.random_floating(5, rng, "tree", armature=False, damping=False, friction=False)
    spec.gravity = np.zeros(3)
    robot = robodyn.Robot(spec)
    q0, v0, _ = R.random_floating_state(robot.spec, rng)
    res = robodyn.simulate(robot, q0=q0, qd0=v0, duration=1.0, dt=1e-3,
                           control_rate="continuous")
    assert res.stats["engine"] == "python"
    scale = np.abs(res.momentum[0]).max()
    close(res.momentum[0], F.momentum(robot.spec, q0, v0))
    assert max(res.momentum_drift) < 1e-11 * scale
    # and the reference plant agrees with robodyn's run to the integration error
    from reference.plant import ReferencePlant

    ref = robodyn.simulate(ReferencePlant(robot.spec), q0=q0, qd0=v0, duration=0.1, dt=1e-2,
                           control_rate="continuous")
    close(ref.q[-1, 7:], res.q[100, 7:], 1e-6)


def test_the_cpp_loop_refuses_a_floating_robot(rng):
    robot = robodyn.Robot(R.random_floating(2, rng, "chain"))
    q0, v0, _ = R.random_floating_state(robot.spec, rng)
    with pytest.raises(ValueError, match="floating-base robot"):
        robodyn.simulate(robot, q0=q0, qd0=v0, duration=0.01, engine="cpp")
    assert robodyn.simulate(robot, q0=q0, qd0=v0, duration=0.01).stats["engine"] == "python"
