"""The per-configuration cache in Data: hit when the values of q repeat, miss otherwise, and
never a stale result.

robot.cache_stats() -> {"hits", "misses"} counts calls of the kinematics update: a miss
recomputes sin/cos and transforms for a new q, a hit reuses them for the same q values.
"""

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R


@pytest.fixture
def model(rng):
    spec = R.random_tree(7, rng, frames=2)
    return spec, robodyn.Robot(spec)


def stats(robot):
    s = robot.cache_stats()
    assert set(s) == {"hits", "misses"}
    return s["hits"], s["misses"]


def test_fresh_robot_has_empty_stats(model):
    _, robot = model
    assert stats(robot) == (0, 0)


def test_same_q_is_a_hit_new_q_is_a_miss(model, rng):
    spec, robot = model
    q, qd, _ = R.random_state(spec, rng)
    robot.mass_matrix(q)
    assert stats(robot) == (0, 1)
    robot.bias_torques(q, qd)
    assert stats(robot) == (1, 1)
    robot.gravity_torques(q)
    assert stats(robot) == (2, 1)
    # a new q: a miss
    robot.mass_matrix(q + 0.25)
    assert stats(robot) == (2, 2)
    robot.mass_matrix(q + 0.25)
    assert stats(robot) == (3, 2)
    # back to the first q: only the last q is kept, so a miss again
    robot.mass_matrix(q)
    assert stats(robot) == (3, 3)


def test_key_is_the_values_not_the_object(model, rng):
    spec, robot = model
    q, qd, qdd = R.random_state(spec, rng)
    robot.inverse_dynamics(q, qd, qdd)
    assert stats(robot) == (0, 1)
    # an equal copy and a list of the same values: hits
    robot.inverse_dynamics(q.copy(), qd, qdd)
    robot.inverse_dynamics(list(q), qd, qdd)
    assert stats(robot) == (2, 1)
    # the same array object with one value changed in place: a miss, and the new values used
    q[3] += 1e-9
    tau = robot.inverse_dynamics(q, qd, qdd)
    assert stats(robot) == (2, 2)
    fresh = robodyn.Robot(spec)
    np.testing.assert_array_equal(tau, fresh.inverse_dynamics(q, qd, qdd))
    # changing only qd or qdd keeps the configuration cache
    robot.inverse_dynamics(q, qd + 1, qdd - 1)
    assert stats(robot) == (3, 2)


def test_velocity_only_changes_are_hits_and_correct(model, rng):
    spec, robot = model
    q, qd, qdd = R.random_state(spec, rng)
    robot.mass_matrix(q)
    for _ in range(3):
        qd, qdd = rng.standard_normal((2, 7))
        np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd),
                                   rtol=1e-10, atol=1e-10)
    assert stats(robot) == (3, 1)


def test_results_after_misses_equal_a_fresh_robot(model, rng):
    """A random interleaving of every algorithm over a small pool of configurations (so that
    hits, misses and partial cache levels all occur) gives exactly what a fresh robot computes
    for each call on its own."""
    spec, robot = model
    n = robot.n
    pool = [R.random_state(spec, rng)[0] for _ in range(3)]
    link_count = len(robot.link_names)
    calls = [
        lambda r, q, qd, x: r.inverse_dynamics(q, qd, x),
        lambda r, q, qd, x: r.inverse_dynamics(q, qd, x, method="kane"),
        lambda r, q, qd, x: r.forward_dynamics(q, qd, x),
        lambda r, q, qd, x: r.forward_dynamics(q, qd, x, method="crba"),
        lambda r, q, qd, x: r.forward_dynamics(q, qd, x, method="kane"),
        lambda r, q, qd, x: r.mass_matrix(q),
        lambda r, q, qd, x: r.bias_torques(q, qd),
        lambda r, q, qd, x: r.gravity_torques(q),
        lambda r, q, qd, x: r.coriolis_matrix(q, qd),
        lambda r, q, qd, x: r.kinetic_energy(q, qd),
        lambda r, q, qd, x: r.potential_energy(q),
        lambda r, q, qd, x: r.forward_kinematics(q),
        lambda r, q, qd, x: r.jacobian(q, int(abs(x[0]) * 100) % link_count),
    ]
    for _ in range(150):
        q = pool[rng.integers(len(pool))]
        qd, x = rng.standard_normal((2, n))
        k = rng.integers(len(calls))
        got = calls[k](robot, q, qd, x)
        expected = calls[k](robodyn.Robot(spec), q, qd, x)
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13, err_msg=f"call {k}")
    hits, misses = stats(robot)
    assert hits > 20 and misses > 20


def test_batch_calls_do_not_poison_the_cache(model, rng):
    spec, robot = model
    q, qd, qdd = R.random_state(spec, rng)
    M = robot.mass_matrix(q)
    Q = np.array([R.random_state(spec, rng)[0] for _ in range(200)])
    for threads in (1, 2):
        old = robodyn.get_num_threads()
        robodyn.set_num_threads(threads)
        try:
            robot.mass_matrix(Q)
            robot.inverse_dynamics(Q, Q, Q)
        finally:
            robodyn.set_num_threads(old)
        np.testing.assert_array_equal(robot.mass_matrix(q), M)
        np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd),
                                   rtol=1e-10, atol=1e-10)


def test_gravity_change_is_seen_at_a_cached_q(model, rng):
    spec, robot = model
    q, _, _ = R.random_state(spec, rng)
    g0 = robot.gravity_torques(q)
    V0 = robot.potential_energy(q)
    robot.gravity = [0.0, 0.0, -2 * 9.81]
    np.testing.assert_allclose(robot.gravity_torques(q), 2 * g0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(robot.potential_energy(q), 2 * V0, rtol=1e-12, atol=1e-12)
    h, m = stats(robot)
    assert h >= 2 and m == 1


def test_robots_do_not_share_a_cache(rng):
    spec = R.random_chain(4, rng)
    a, b = robodyn.Robot(spec), robodyn.Robot(spec)
    q = np.zeros(4)
    a.mass_matrix(q)
    b.mass_matrix(q)
    assert stats(a) == (0, 1) and stats(b) == (0, 1)


def test_sin_cos_of_the_joint_angles_match_libm():
    """The cache's sin/cos (kinematics.hpp: reduction by pi/2 and polynomial kernels for
    |q| <= 1e5, libm beyond) agree with NumPy's to a few ulp everywhere, exactly at 0 and
    around the multiples of pi/2, and at the fallback's edge."""
    robot = robodyn.from_dh([dict(theta=0.0, d=0.0, a=0.0, alpha=0.0, mass=1.0,
                                  com=[0.1, 0.0, 0.0], inertia=np.eye(3) * 0.01)])
    rng = np.random.default_rng(11)
    k = np.arange(-2000, 2001)
    qs = np.concatenate([rng.uniform(-10, 10, 3000), rng.uniform(-1e5, 1e5, 3000),
                         k * np.pi / 2, np.nextafter(k * np.pi / 2, np.inf),
                         [0.0, -0.0, 1e-300, 1e5, -1e5, np.nextafter(1e5, np.inf), 3e7, -1e12]])
    T = robot.forward_kinematics(qs[:, None])  # (N, frames, 4, 4)
    c, s = T[:, 0, 0, 0], T[:, 0, 1, 0]
    # 4 ulp of 1, absolute: sin and cos are within [-1, 1]
    np.testing.assert_allclose(c, np.cos(qs), rtol=0, atol=4 * 2.0 ** -53)
    np.testing.assert_allclose(s, np.sin(qs), rtol=0, atol=4 * 2.0 ** -53)
    assert c[qs.size - 8] == 1.0 and s[qs.size - 8] == 0.0


def _star_urdf(count):
    """count revolute joints about z, each on the base link at its origin: link k's pose is
    Rz(q_k), so forward_kinematics shows each joint's cos and sin."""
    links = ['<link name="base"/>']
    for k in range(count):
        links.append(f'<link name="l{k}"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>'
                     f'<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
                     f'</inertial></link>'
                     f'<joint name="j{k}" type="continuous"><parent link="base"/>'
                     f'<child link="l{k}"/><axis xyz="0 0 1"/></joint>')
    return f'<robot name="star">{"".join(links)}</robot>'


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("count", [2, 3])
def test_sin_cos_of_every_lane_match_libm(count, floating):
    """The double cache computes the angles' sin/cos two at a time (SSE2), padded to an even
    count (on a floating base, from the first joint after the free-flyer's body): every joint
    (both lanes, an odd count's last one) agrees with libm to a few ulp, and a row with one
    angle outside the kernels' range (|q| > 1e5, redone by libm) leaves the others right."""
    robot = robodyn.load_urdf(_star_urdf(count), floating_base=floating)
    first = 1 if floating else 0  # the base link is the free-flyer's body
    assert robot.link_names[first:first + count] == [f"l{k}" for k in range(count)]
    rng = np.random.default_rng(12)
    k = np.arange(-600, 600)
    qs = np.concatenate([rng.uniform(-10, 10, 3000), rng.uniform(-1e5, 1e5, 600),
                         k * np.pi / 2, np.nextafter(k * np.pi / 2, -np.inf),
                         [0.0, -0.0, 1e-300, 1e5, -1e5, np.nextafter(1e5, np.inf), 3e7, -1e12]])
    qs = np.concatenate([qs, np.zeros(-qs.size % count)])
    Q = rng.permutation(qs).reshape(-1, count)
    base = np.tile([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], (Q.shape[0], 1))  # at the origin
    T = robot.forward_kinematics(np.hstack([base, Q]) if floating else Q)  # (N, frames, 4, 4)
    c, s = T[:, first:first + count, 0, 0], T[:, first:first + count, 1, 0]
    np.testing.assert_allclose(c, np.cos(Q), rtol=0, atol=4 * 2.0 ** -53)
    np.testing.assert_allclose(s, np.sin(Q), rtol=0, atol=4 * 2.0 ** -53)
