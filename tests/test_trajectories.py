"""robodyn.trajectories: the thesis profile, quintics, splines, sampled data, limit checks."""

import math

import numpy as np
import pytest

from robodyn import trajectories as tr


def central_difference(ref, t, h=1e-6):
    """(dq/dt, dqd/dt) of ``ref`` at ``t`` by central differences."""
    qp, qdp, _ = ref(t + h)
    qm, qdm, _ = ref(t - h)
    return (qp - qm) / (2 * h), (qdp - qdm) / (2 * h)


class _LimitedRobot:
    """Just what the limit check reads from a robot."""

    def __init__(self, lower, upper):
        self.n = len(lower)
        self.position_limits = (np.asarray(lower, float), np.asarray(upper, float))
        self.joint_names = [f"j{i}" for i in range(self.n)]


# --- the thesis profile -------------------------------------------------------------------


def test_smooth_matches_the_thesis_formula():
    T = 2.0
    q0 = np.array([0.0, math.pi / 2, 0.1])
    q1 = np.array([math.pi / 3, math.pi / 3, -0.4])
    ref = tr.smooth(q0, q1, T)
    for t in (0.0, 0.3, 1.0, 1.7, 2.0):
        s = t - T / (2 * math.pi) * math.sin(2 * math.pi * t / T)
        q, qd, qdd = ref(t)
        np.testing.assert_allclose(q, q0 + (q1 - q0) * s / T, rtol=0, atol=1e-15)
        np.testing.assert_allclose(qd, (q1 - q0) * (1 - math.cos(2 * math.pi * t / T)) / T,
                                   rtol=0, atol=1e-15)
        np.testing.assert_allclose(
            qdd, (q1 - q0) * (2 * math.pi / T) * math.sin(2 * math.pi * t / T) / T,
            rtol=0, atol=1e-14)
    assert ref.duration == T


def test_smooth_derivatives_agree_with_finite_differences():
    ref = tr.smooth([0.2, -1.0], [1.0, 0.5], 1.5)
    for t in np.linspace(0.05, 1.45, 9):
        dq, dqd = central_difference(ref, t)
        q, qd, qdd = ref(t)
        np.testing.assert_allclose(qd, dq, rtol=0, atol=1e-8)
        np.testing.assert_allclose(qdd, dqd, rtol=0, atol=1e-8)
        h = 1e-5
        jerk_fd = (ref(t + h)[2] - ref(t - h)[2]) / (2 * h)
        np.testing.assert_allclose(ref.jerk(t), jerk_fd, rtol=0, atol=1e-6)


def test_smooth_holds_the_end_points_at_rest():
    ref = tr.smooth([0.0, 1.0], [2.0, -1.0], 1.0)
    for t, q in ((-1.0, [0.0, 1.0]), (0.0, [0.0, 1.0]), (1.0, [2.0, -1.0]), (5.0, [2.0, -1.0])):
        qq, qd, qdd = ref(t)
        np.testing.assert_array_equal(qq, q)
        np.testing.assert_array_equal(qd, 0.0)
        np.testing.assert_array_equal(qdd, 0.0)


def test_thesis_and_stanford_motions_start_and_end_as_in_robots_md():
    ref = tr.thesis_motion()
    assert ref.duration == 2.0
    np.testing.assert_allclose(ref(0)[0], [0, math.pi / 2, 0, 0, 0, 0], atol=0)
    np.testing.assert_allclose(ref(2.0)[0], np.full(6, math.pi / 3), rtol=1e-15)
    # q_r = pi s / (3T), q_2 = pi/2 - pi s / (6T) at an interior time
    t, T = 0.7, 2.0
    s = t - T / (2 * math.pi) * math.sin(2 * math.pi * t / T)
    q = ref(t)[0]
    np.testing.assert_allclose(q[[0, 2, 3, 4, 5]], math.pi * s / (3 * T), rtol=1e-14)
    np.testing.assert_allclose(q[1], math.pi / 2 - math.pi * s / (6 * T), rtol=1e-14)
    demo = tr.stanford_demo()
    assert demo.duration == 10.0
    np.testing.assert_allclose(demo(0)[0], [0, math.pi / 2, 0.5, 0, 0, 0])
    p3 = math.pi / 3
    np.testing.assert_allclose(demo(10.0)[0], [p3, p3, 0.6, p3, p3, p3], rtol=1e-15)


def test_call_with_out_buffer_and_sample_agree_with_call():
    refs = [tr.smooth([0, 1], [1, 0], 2.0), tr.quintic([0, 1], [1, 0], 2.0),
            tr.waypoints([[0, 0], [1, 2], [0, 1]], [0, 1, 2.5]),
            tr.waypoints([[0, 0], [1, 2], [0, 1]], [0, 1, 2.5], kind="quintic"),
            tr.constant([0.3, 0.4])]
    ts = np.array([-0.5, 0.0, 0.25, 1.0, 1.3, 2.0, 2.5, 3.0])
    for ref in refs:
        Q, QD, QDD = ref.sample(ts)
        buf = np.empty((3, 2))
        for k, t in enumerate(ts):
            q, qd, qdd = ref(t)
            np.testing.assert_allclose([q, qd, qdd], [Q[k], QD[k], QDD[k]], rtol=0,
                                       atol=1e-13)
            qo, qdo, qddo = ref(t, out=buf)
            assert np.shares_memory(qo, buf)
            np.testing.assert_allclose(buf, [Q[k], QD[k], QDD[k]], rtol=0, atol=1e-13)


# --- quintic and waypoints ------------------------------------------------------------------


def test_quintic_meets_its_six_end_conditions():
    q0, q1 = np.array([0.1, -0.3]), np.array([1.2, 0.4])
    v0, v1, a0, a1 = np.array([0.5, 0]), np.array([-0.2, 0.1]), np.array([1.0, 0]), \
        np.array([0, -2.0])
    T = 1.7
    ref = tr.quintic(q0, q1, T, v0, v1, a0, a1)
    q, qd, qdd = ref(0.0)
    np.testing.assert_allclose([q, qd, qdd], [q0, v0, a0], atol=1e-14)
    q, qd, qdd = ref(T)
    np.testing.assert_allclose([q, qd, qdd], [q1, v1, a1], atol=1e-12)
    for t in (0.2, 0.9, 1.5):
        dq, dqd = central_difference(ref, t)
        np.testing.assert_allclose(ref(t)[1], dq, atol=1e-8)
        np.testing.assert_allclose(ref(t)[2], dqd, atol=1e-7)


def test_quintic_rest_to_rest_is_symmetric():
    ref = tr.quintic([0.0], [1.0], 2.0)
    np.testing.assert_allclose(ref(1.0)[0], [0.5], atol=1e-15)  # 10 s^3 - 15 s^4 + 6 s^5
    np.testing.assert_allclose(ref(0.5)[0] + ref(1.5)[0], [1.0], atol=1e-14)


def test_cubic_waypoints_pass_through_points_at_rest_ends_and_are_c2():
    P = np.array([[0.0, 0.0], [1.0, 2.0], [0.5, 0.1], [0.0, -1.0]])
    times = np.array([0.0, 1.0, 2.0, 3.5])
    ref = tr.waypoints(P, times)
    for p, t in zip(P, times):
        np.testing.assert_allclose(ref(t)[0], p, atol=1e-14)
    np.testing.assert_allclose(ref(0.0)[1], 0.0, atol=1e-14)
    np.testing.assert_allclose(ref(3.5)[1], 0.0, atol=1e-14)
    for t in times[1:-1]:  # velocity and acceleration continuous across the interior knots
        eps = 1e-9
        np.testing.assert_allclose(ref(t - eps)[1], ref(t + eps)[1], atol=1e-7)
        np.testing.assert_allclose(ref(t - eps)[2], ref(t + eps)[2], atol=1e-6)


def test_cubic_spline_matches_scipy_for_every_end_condition():
    scipy_interp = pytest.importorskip("scipy.interpolate")
    rng = np.random.default_rng(7)
    for m in (4, 5, 12):
        x = np.sort(np.concatenate([[0.0], rng.uniform(0.1, 3.0, m - 1)]))
        Y = rng.normal(size=(m, 3))
        ts = np.linspace(0.0, x[-1], 301)
        for bc, sbc in (("natural", "natural"), ("not-a-knot", "not-a-knot"),
                        ("clamped", "clamped")):
            mine = tr.CubicSpline(Y, x, bc=bc)
            ref = scipy_interp.CubicSpline(x, Y, bc_type=sbc)
            Q, QD, QDD = mine.sample(ts)
            np.testing.assert_allclose(Q, ref(ts), atol=1e-11)
            np.testing.assert_allclose(QD, ref(ts, 1), atol=1e-10)
            np.testing.assert_allclose(QDD, ref(ts, 2), atol=1e-9)


def test_quintic_waypoints_stop_at_every_waypoint():
    P = np.array([[0.0], [1.0], [-0.5]])
    ref = tr.waypoints(P, [0.0, 1.0, 3.0], kind="quintic")
    for p, t in zip(P, [0.0, 1.0, 3.0]):
        q, qd, qdd = ref(t)
        np.testing.assert_allclose(q, p, atol=1e-14)
        np.testing.assert_allclose(qd, 0.0, atol=1e-13)
        np.testing.assert_allclose(qdd, 0.0, atol=1e-12)


# --- sampled data ---------------------------------------------------------------------------


def test_sampled_reproduces_a_cubic_polynomial_and_its_derivatives():
    # a not-a-knot spline through samples of a cubic is that cubic, on uneven samples too
    t = np.array([0.0, 0.13, 0.5, 0.62, 1.1, 1.4, 2.0])
    c = np.array([[0.3, -1.0], [1.0, 0.5], [-2.0, 0.25], [0.7, -0.1]])  # rows: t^0 .. t^3

    def poly(t, d=0):
        t = np.asarray(t, float)[:, None]
        if d == 0:
            return c[0] + c[1] * t + c[2] * t**2 + c[3] * t**3
        if d == 1:
            return c[1] + 2 * c[2] * t + 3 * c[3] * t**2
        return 2 * c[2] + 6 * c[3] * t

    ref = tr.Sampled(t, poly(t))
    ts = np.linspace(0.0, 2.0, 97)
    Q, QD, QDD = ref.sample(ts)
    np.testing.assert_allclose(Q, poly(ts), atol=1e-12)
    np.testing.assert_allclose(QD, poly(ts, 1), atol=1e-11)
    np.testing.assert_allclose(QDD, poly(ts, 2), atol=1e-10)
    assert ref.duration == 2.0


def test_from_csv_with_and_without_header(tmp_path):
    t = np.linspace(0.0, 1.0, 11)
    q = np.stack([np.sin(t), t**2], axis=1)
    plain = tmp_path / "plain.csv"
    np.savetxt(plain, np.column_stack([t, q]), delimiter=",")
    ref = tr.from_csv(plain)
    assert ref.n == 2
    np.testing.assert_allclose(ref.sample(t)[0], q, atol=1e-15)
    # a results file: only the q_* columns are positions (q_ref_*, qd_* and the rest are not)
    named = tmp_path / "named.csv"
    header = "t,q_a,q_b,qd_a,qd_b,q_ref_a,q_ref_b,energy"
    data = np.column_stack([t, q, 2 * q, 3 * q, t])
    np.savetxt(named, data, delimiter=",", header=header, comments="")
    ref = tr.from_csv(named)
    assert ref.n == 2
    np.testing.assert_allclose(ref.sample(t)[0], q, atol=1e-15)
    ref = tr.from_csv(named, columns=["q_ref_b"])
    np.testing.assert_allclose(ref.sample(t)[0][:, 0], 3 * q[:, 1], atol=1e-15)


def test_from_csv_rejects_bad_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        tr.from_csv(empty)
    bad = tmp_path / "bad.csv"
    bad.write_text("t,q\n0,1\n1,abc\n")
    with pytest.raises(ValueError, match="non-numeric"):
        tr.from_csv(bad)
    back = tmp_path / "back.csv"
    back.write_text("0,1\n1,2\n0.5,3\n")
    with pytest.raises(ValueError, match="increasing"):
        tr.from_csv(back)


# --- limits and validation ------------------------------------------------------------------


def test_out_of_limit_references_are_refused_with_the_joint_named():
    robot = _LimitedRobot([-1.0, -1.0], [1.0, 1.0])
    tr.smooth([0.0, 0.0], [1.0, -1.0], 1.0, robot=robot)  # ends exactly on the limits: fine
    with pytest.raises(ValueError, match=r"joint 'j1'.*1\.2"):
        tr.smooth([0.0, 0.0], [0.5, 1.2], 1.0, robot=robot)
    with pytest.raises(ValueError, match="position limits"):
        tr.quintic([0.0, 0.0], [0.5, -1.5], 1.0, limits=([-1, -1], [1, 1]))
    with pytest.raises(ValueError, match="position limits"):
        tr.thesis_motion(limits=(-np.ones(6), np.ones(6)))  # q2 starts at pi/2
    with pytest.raises(ValueError, match="robot"):
        tr.smooth([0.0], [0.5], 1.0, robot=robot)  # 1 joint against a 2-joint robot


def test_limits_are_checked_between_knots_where_a_spline_overshoots():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    q = np.array([[0.0], [0.0], [1.0], [1.0], [1.0]])
    free = tr.Sampled(t, q)
    peak = float(np.max(free.sample(np.linspace(0, 4, 4001))[0]))
    assert peak > 1.0 + 1e-3  # the spline overshoots between the samples...
    with pytest.raises(ValueError, match="position limits"):  # ...and that is caught
        tr.Sampled(t, q, limits=([-1.0], [1.0]))
    tr.Sampled(t, q, limits=([-1.0], [peak + 1e-6]))


@pytest.mark.parametrize("make", [
    lambda: tr.smooth([0.0], [1.0], 0.0),
    lambda: tr.smooth([0.0], [1.0], -1.0),
    lambda: tr.smooth([0.0], [1.0], float("nan")),
    lambda: tr.smooth([0.0, float("nan")], [1.0, 1.0], 1.0),
    lambda: tr.smooth([0.0, 1.0], [1.0, 1.0, 2.0], 1.0),
    lambda: tr.quintic([0.0], [1.0], 1.0, qd0=[1.0, 2.0]),
    lambda: tr.waypoints([[0.0], [1.0]], [0.0, 0.0]),
    lambda: tr.waypoints([[0.0], [1.0]], [0.0, 1.0, 2.0]),
    lambda: tr.waypoints([[0.0], [1.0]], [0.0, 1.0], kind="linear"),
    lambda: tr.waypoints([[0.0]], [0.0]),
    lambda: tr.Sampled([0.0, 1.0], [[0.0], [float("inf")]]),
    lambda: tr.CubicSpline([[0.0], [1.0], [2.0]], [0, 1, 2], bc="periodic"),
    lambda: tr.smooth([0.0], [1.0], 1.0, limits=([1.0], [-1.0])),
    lambda: tr.smooth([0.0], [1.0], 1.0, limits=([-1.0, -1.0, -1.0], [1.0, 1.0, 1.0])),
    lambda: tr.smooth([0.0], [1.0], 1.0, limits=[-1.0]),
])
def test_bad_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_scalar_end_points_broadcast():
    ref = tr.smooth(0.0, [1.0, 2.0, 3.0], 1.0)
    assert ref.n == 3
    np.testing.assert_allclose(ref(1.0)[0], [1.0, 2.0, 3.0])
