"""Kane's method (cpp/include/robodyn/algorithms/kane.hpp): inverse_dynamics(method="kane") and
forward_dynamics(method="kane").

Checked against Newton-Euler (rnea) and the articulated-body algorithm (aba) on random chains
and trees, the bundled robots and the UR5, against the literal O(n^3) transcription of Nie's
published algorithm (robodyn/published/kane_nie.py), and on the thesis' test motion of the
Intelledex 605 (inverse dynamics, then forward integration with those torques).
"""

import numpy as np
import pytest

import robodyn
from robodyn.codegen.published import kane_nie as kn
from reference import random_models as rm

import _load

TOL = 1e-10


def rel_err(a, b):
    """Worst per-state error of a against b, relative to the largest entry of b's state."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    scale = np.max(np.abs(b), axis=1)
    assert np.all(scale > 0)
    return float(np.max(np.max(np.abs(a - b), axis=1) / scale))


def states(spec_or_robot, rng, count):
    """(count, n) batches q, qd, qdd (q within the limits, clipped to +-pi)."""
    spec = spec_or_robot.spec if isinstance(spec_or_robot, robodyn.Robot) else spec_or_robot
    rows = [rm.random_state(spec, rng) for _ in range(count)]
    return tuple(np.ascontiguousarray([r[k] for r in rows]) for k in range(3))


def check_against_rnea_and_aba(robot, rng, count=8):
    """Kane inverse equals RNEA and Kane forward equals ABA (plus FD(ID(qdd)) = qdd)."""
    Q, QD, QDD = states(robot, rng, count)
    QD[0] = 0.0  # at rest: Coulomb friction sign(0) = 0, only gravity (and inertia) remain
    tau_ne = robot.inverse_dynamics(Q, QD, QDD, method="rnea")
    tau_k = robot.inverse_dynamics(Q, QD, QDD, method="kane")
    err_id = rel_err(tau_k, tau_ne)
    assert err_id <= TOL, f"{robot.name}: kane vs rnea {err_id:.2e}"
    tau = tau_ne + rng.standard_normal(tau_ne.shape)
    qdd_aba = robot.forward_dynamics(Q, QD, tau, method="aba")
    qdd_k = robot.forward_dynamics(Q, QD, tau, method="kane")
    err_fd = rel_err(qdd_k, qdd_aba)
    assert err_fd <= TOL, f"{robot.name}: kane_forward vs aba {err_fd:.2e}"
    err_rt = rel_err(robot.forward_dynamics(Q, QD, tau_k, method="kane"), QDD)
    assert err_rt <= TOL, f"{robot.name}: FD(ID(qdd)) vs qdd {err_rt:.2e}"
    # single-state calls give the same numbers as the batch
    one = robot.inverse_dynamics(Q[1], QD[1], QDD[1], method="kane")
    assert np.array_equal(one, tau_k[1])
    return max(err_id, err_fd, err_rt)


# ---------------------------------------------------------------- random models

@pytest.mark.parametrize("joint_types", ["revolute", "prismatic", "mixed"])
def test_random_chains_n_1_to_30(joint_types, rng):
    worst = 0.0
    for n in range(1, 31):
        robot = robodyn.Robot(rm.random_chain(n, rng, joint_types=joint_types))
        worst = max(worst, check_against_rnea_and_aba(robot, rng, count=4))
    assert worst <= TOL


@pytest.mark.parametrize("joint_types", ["revolute", "mixed"])
def test_random_trees(joint_types, rng):
    for n in (1, 2, 3, 5, 8, 13, 21, 30):
        robot = robodyn.Robot(rm.random_tree(n, rng, joint_types=joint_types))
        check_against_rnea_and_aba(robot, rng, count=4)


def test_gravity_is_an_applied_force(rng):
    """Any gravity vector (set after the build), and none, with a z-aligned chain."""
    spec = rm.random_chain(7, rng, joint_types="mixed", axes="z")
    robot = robodyn.Robot(spec)
    Q, QD, QDD = states(spec, rng, 3)
    for g in (rng.standard_normal(3) * 9.81, np.zeros(3), np.array([0.0, 9.81, 0.0])):
        robot.gravity = g
        a = robot.inverse_dynamics(Q, QD, QDD, method="rnea")
        b = robot.inverse_dynamics(Q, QD, QDD, method="kane")
        assert rel_err(b, a) <= TOL
        tau = a + 0.5
        assert rel_err(robot.forward_dynamics(Q, QD, tau, method="kane"),
                       robot.forward_dynamics(Q, QD, tau, method="aba")) <= TOL
    # gravity only: Kane's K' alone, compared with g(q)
    robot.gravity = np.array([0.0, 0.0, -9.81])
    Z = np.zeros_like(Q)
    plain = robodyn.Robot(rm.random_chain(7, np.random.default_rng(5), armature=False,
                                          damping=False, friction=False))
    Qp, _, _ = states(plain, rng, 3)
    assert rel_err(plain.inverse_dynamics(Qp, Z, Z, method="kane"),
                   plain.gravity_torques(Qp)) <= TOL


def test_massless_link_and_zero_com(rng):
    """A body without mass or inertia inside the chain (its mass centre is undefined), and
    bodies whose mass centre is the joint origin."""
    spec = rm.random_chain(5, rng, joint_types="mixed")
    spec.bodies[1].mass = 0.0
    spec.bodies[1].inertia = np.zeros((3, 3))
    spec.bodies[2].com = np.zeros(3)
    spec.bodies[3].com = np.zeros(3)
    check_against_rnea_and_aba(robodyn.Robot(spec), rng)


# ---------------------------------------------------------------- bundled robots, UR5

def _bundled(name):
    try:
        import robodyn.io.robots as robots
        make = getattr(robots, name)
    except (ImportError, AttributeError) as e:
        pytest.skip(f"robodyn.robots.{name} not available yet ({e})")
    return make()


@pytest.mark.parametrize("name", ["intelledex_605", "stanford_arm"])
def test_bundled_robots(name, rng):
    robot = _bundled(name)
    check_against_rnea_and_aba(robot, rng, count=200)


def test_ur5(rng):
    root = _load.example_robot_data_dir()
    if root is None:
        pytest.skip("example-robot-data is not installed")
    robot = robodyn.load_urdf(str(root / "ur_description" / "urdf" / "ur5_robot.urdf"))
    assert robot.n == 6
    check_against_rnea_and_aba(robot, rng, count=200)


# ---------------------------------------------------------------- the published algorithm

@pytest.mark.parametrize("joint_types", ["revolute", "prismatic", "mixed"])
def test_matches_nie_transcription(joint_types, rng):
    """The O(n) recursion equals the literal O(n^3) AUTOSUB of the thesis (serial chains)."""
    for n in range(1, 9):
        spec = rm.random_chain(n, rng, joint_types=joint_types)
        robot = robodyn.Robot(spec)
        chain = kn.chain_from_spec(spec)
        for _ in range(2):
            q, qd, qdd = rm.random_state(spec, rng)
            tau = kn.inverse_dynamics(chain, q, qd, qdd)
            assert rel_err(robot.inverse_dynamics(q, qd, qdd, method="kane"), tau) <= TOL
            tau2 = tau + rng.standard_normal(n)
            assert rel_err(robot.forward_dynamics(q, qd, tau2, method="kane"),
                           kn.forward_dynamics(chain, q, qd, tau2)) <= TOL


@pytest.mark.parametrize("name", ["intelledex_605", "stanford_arm"])
def test_bundled_robots_match_nie_transcription(name, rng):
    robot = _bundled(name)
    chain = kn.chain_from_spec(robot.spec)
    Q, QD, QDD = states(robot, rng, 10)
    ours = robot.inverse_dynamics(Q, QD, QDD, method="kane")
    theirs = np.array([kn.inverse_dynamics(chain, *x) for x in zip(Q, QD, QDD)])
    assert rel_err(ours, theirs) <= TOL
    qdd = robot.forward_dynamics(Q, QD, ours + 1.0, method="kane")
    ref = np.array([kn.forward_dynamics(chain, q, qd, t) for q, qd, t in zip(Q, QD, ours + 1.0)])
    assert rel_err(qdd, ref) <= TOL


# ---------------------------------------------------------------- the thesis' test motion

def test_thesis_motion_intelledex():
    """Nie (1988): inverse dynamics every 1 ms along the 2 s test motion, then the forward
    dynamics integrated (RK4, h = 1 ms) from the same start with those torques returns to
    q(2 s) = (pi/3, ..., pi/3) and follows q(t) all along.

    The torque at the RK4 half-steps is interpolated from the 1 ms samples by the 4-point
    cubic (error O(h^4)). Linear interpolation (error O(h^2), ~1e-5 N m here) is not enough:
    the open-loop arm amplifies torque errors about e^8 per second, and ends 0.3 rad off.
    """
    robot = _bundled("intelledex_605")
    ref = robodyn.trajectories.thesis_motion(2.0)
    h = 1e-3
    Q, QD, QDD = ref.sample(np.arange(2001) * h)
    assert np.allclose(Q[0], [0, np.pi / 2, 0, 0, 0, 0]) and np.allclose(Q[-1], np.pi / 3)
    tau = robot.inverse_dynamics(Q, QD, QDD, method="kane")
    mid = np.empty((2000, 6))
    mid[1:-1] = (-tau[:-3] + 9.0 * tau[1:-2] + 9.0 * tau[2:-1] - tau[3:]) / 16.0
    mid[0] = (5.0 * tau[0] + 15.0 * tau[1] - 5.0 * tau[2] + tau[3]) / 16.0
    mid[-1] = (5.0 * tau[-1] + 15.0 * tau[-2] - 5.0 * tau[-3] + tau[-4]) / 16.0

    acc = np.empty(6)

    def rate(q, qd, t):
        robot.forward_dynamics(q, qd, t, method="kane", out=acc)
        return qd, acc.copy()

    q, qd = Q[0].copy(), QD[0].copy()
    err = np.zeros(2001)
    for i in range(2000):
        k1q, k1v = rate(q, qd, tau[i])
        k2q, k2v = rate(q + 0.5 * h * k1q, qd + 0.5 * h * k1v, mid[i])
        k3q, k3v = rate(q + 0.5 * h * k2q, qd + 0.5 * h * k2v, mid[i])
        k4q, k4v = rate(q + h * k3q, qd + h * k3v, tau[i + 1])
        q = q + h / 6.0 * (k1q + 2.0 * k2q + 2.0 * k3q + k4q)
        qd = qd + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        err[i + 1] = np.max(np.abs(q - Q[i + 1]))
    final = np.max(np.abs(q - np.pi / 3))
    print(f"thesis motion: |q(2 s) - pi/3| = {final:.2e} rad, max |q - q_ref| = "
          f"{err.max():.2e} rad (at t = {err.argmax() * h:.3f} s), |qd(2 s)| = "
          f"{np.max(np.abs(qd)):.2e} rad/s")
    assert final <= 1e-5
    assert err.max() <= 1e-5
    assert np.max(np.abs(qd)) <= 1e-3
