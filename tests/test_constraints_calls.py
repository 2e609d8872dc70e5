"""ConstrainedRobot.forward_dynamics through its fast-call entry (constraints_bindings.cpp):
positional and keyword arguments give the same numbers, bad arguments the errors pybind11's
conversion gives (TypeError), and the C++ object of each system is the one called (several
systems alive at once, one deleted and another made)."""

import gc

import numpy as np
import pytest

import robodyn
from reference import random_models as R


def pose(p):
    T = np.eye(4)
    T[:3, 3] = p
    return T


def system_and_state(rng, n=5):
    robot = robodyn.Robot(R.random_floating(n, rng, kind="chain", frames=0))
    links = robot.link_names
    system = robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(
        links[-1], None, pose(rng.normal(size=3)), pose(rng.normal(size=3)), kind="weld")])
    q = rng.uniform(-1, 1, robot.nq)
    q[3:7] /= np.linalg.norm(q[3:7])
    return system, q, rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)


def test_positional_and_keyword_arguments_agree(rng):
    system, q, v, tau = system_and_state(rng)
    qdd, lam = system.forward_dynamics(q, v, tau)
    for args, kwargs in [((q, v, tau, 0.0, 1, 1e-12), {}),
                         ((q,), dict(v=v, tau=tau)),
                         ((), dict(tau=tau, q=q, v=v, mu=0, max_iter=np.int64(1))),
                         ((q, v, tau), dict(out=None, tol=1e-12))]:
        a, b = system.forward_dynamics(*args, **kwargs)
        np.testing.assert_array_equal(a, qdd)
        np.testing.assert_array_equal(b, lam)
    # the same call as the documented method's
    a, b = robodyn.ConstrainedRobot.forward_dynamics(system, q, v, tau)
    np.testing.assert_array_equal(a, qdd)
    # out= as a list of two arrays: written in place, returned as a tuple of them
    out = [np.empty(system.robot.nv), np.empty(system.rows)]
    res = system.forward_dynamics(q, v, tau, out=out)
    assert isinstance(res, tuple) and res[0] is out[0] and res[1] is out[1]
    np.testing.assert_array_equal(out[1], lam)


def test_bad_arguments(rng):
    system, q, v, tau = system_and_state(rng)
    fd = system.forward_dynamics
    with pytest.raises(TypeError, match="missing required argument 'tau'"):
        fd(q, v)
    with pytest.raises(TypeError, match="unexpected keyword argument 'qd'"):
        fd(q, v, tau, qd=v)
    with pytest.raises(TypeError, match="multiple values for 'v'"):
        fd(q, v, tau, v=v)
    with pytest.raises(TypeError, match="at most 7"):
        fd(q, v, tau, 0.0, 1, 1e-12, None, None)
    with pytest.raises(TypeError, match="max_iter"):
        fd(q, v, tau, max_iter=2.0)
    with pytest.raises(TypeError):
        fd(q, v, tau, mu="x")
    with pytest.raises(ValueError, match="tol"):
        fd(q, v, tau, tol=float("nan"))
    with pytest.raises(ValueError, match="out: expected a tuple of 2 arrays"):
        fd(q, v, tau, out=(np.empty(system.robot.nv),))


def test_each_system_runs_its_own_constraints(rng):
    (s1, q1, v1, t1), (s2, q2, v2, t2) = system_and_state(rng, 5), system_and_state(rng, 6)
    r1, r2 = s1.forward_dynamics(q1, v1, t1), s2.forward_dynamics(q2, v2, t2)
    assert r1[0].shape == (s1.robot.nv,) and r2[0].shape == (s2.robot.nv,)
    np.testing.assert_array_equal(s1.forward_dynamics(q1, v1, t1)[0], r1[0])
    # a system deleted and another made (its memory may be reused): the new one is called
    del s1
    gc.collect()
    s3, q3, v3, t3 = system_and_state(rng, 4)
    a, lam = s3.forward_dynamics(q3, v3, t3)
    assert a.shape == (s3.robot.nv,) and lam.shape == (6,)
    # J qdd + gamma = 0: the constraint of s3, not of another system
    J, gamma = s3.jacobian(q3), s3.bias_acceleration(q3, v3)
    assert np.abs(J @ a + gamma).max() < 1e-9 * max(1.0, np.abs(gamma).max())
    np.testing.assert_array_equal(s2.forward_dynamics(q2, v2, t2)[1], r2[1])


@pytest.mark.allocations
def test_with_out_allocates_nothing(rng):
    """With out= a single state allocates nothing the tracemalloc probe of test_noalloc.py sees
    (no growth, no transient peak over 1000 calls); without it the probe sees the results."""
    from test_noalloc import THRESHOLD, traced

    system, q, v, tau = system_and_state(rng)
    fd = system.forward_dynamics
    out = (np.empty(system.robot.nv), np.empty(system.rows))
    assert fd(q, v, tau, out=out) is out
    np.testing.assert_array_equal(out[0], fd(q, v, tau)[0])
    growth, peak = traced(lambda: fd(q, v, tau, out=out))
    assert growth <= 0 and peak < THRESHOLD, (growth, peak)
    growth, peak = traced(lambda: fd(q, v, tau), repeats=10)
    assert peak >= out[0].nbytes, peak
