"""Reference trajectories of the ROS 2 controller node: interpolation, parsing,
serialized messages, and loading the robot.

Shared fixture and helpers: tests/_ros.py (skipped without rclpy).
"""

import pytest

from _ros import (  # noqa: F401  (ros is a fixture)
    _malformed_references,
    _point_msg,
    JointTrajectory,
    np,
    robodyn,
    rosnode,
    serialize_message,
    trajectories,
)


def test_reference_interpolates_the_points_like_a_trajectory_controller():
    motion = trajectories.thesis_motion()
    ts = np.arange(0.0, 2.0 + 1e-12, 0.02)
    Q, QD, QDD = motion.sample(ts)
    out = np.empty((3, 6))
    for V, A in ((None, None), (QD, None), (QD, QDD)):
        ref = rosnode.reference_from_points(ts, Q, V, A)
        for i in (0, 7, 50, 100):
            # every knot is met exactly, with the derivatives given
            r = ref(ts[i], out)
            np.testing.assert_allclose(r[0], Q[i], rtol=0, atol=1e-12)
            if V is not None:
                np.testing.assert_allclose(r[1], QD[i], rtol=0, atol=1e-9)
            if A is not None:
                np.testing.assert_allclose(r[2], QDD[i], rtol=0, atol=1e-7)
    # quintic through 10 ms samples of the thesis motion: close everywhere, held at the end
    ref = rosnode.reference_from_points(ts, Q, QD, QDD)
    tt = np.linspace(0.0, 2.5, 777)
    want = np.stack(motion.sample(tt), axis=1)
    got = np.array([ref(t, out).copy() for t in tt])
    assert np.abs(got - want).max(axis=(0, 2)).tolist() < [1e-11, 1e-9, 1e-7]
    # linear interpolation between two points, midway
    lin = rosnode.reference_from_points([0.0, 2.0], np.array([[0.0] * 6, [1.0] * 6]))
    np.testing.assert_allclose(lin(1.0, out), [[0.5] * 6, [0.5] * 6, [0.0] * 6])


def test_a_single_point_is_held_and_a_late_first_point_starts_from_the_current_state():
    q, qd, qdd = np.arange(6.0), np.ones(6), -np.ones(6)
    out = np.empty((3, 6))
    held = rosnode.reference_from_points([0.7], q[None], qd[None], qdd[None])
    for t in (-1.0, 0.0, 0.7, 100.0):
        np.testing.assert_array_equal(held(t, out), [q, qd, qdd])
    start = (np.zeros(6), np.zeros(6), np.zeros(6))
    ref = rosnode.reference_from_points([1.0, 2.0], np.array([q, q]), start=start)
    np.testing.assert_allclose(ref(0.0, out)[0], 0.0, atol=0)
    np.testing.assert_allclose(ref(0.5, out)[0], 0.5 * q)
    np.testing.assert_allclose(ref(1.5, out)[0], q)


def test_parse_trajectory_matches_names_in_any_order_and_rejects_bad_messages():
    robot = robodyn.robots.stanford_arm()
    names = robot.joint_names
    order = rosnode.JointOrder(names)
    q = np.linspace(0.1, 0.6, 6)
    perm = [3, 0, 5, 1, 4, 2]
    msg = _point_msg([names[i] for i in perm], q[perm], 2 * q[perm], 3 * q[perm])
    out = np.empty((3, 6))
    np.testing.assert_array_equal(rosnode.parse_trajectory(msg, order)(0.0, out),
                                  [q, 2 * q, 3 * q])
    for what, bad in _malformed_references(list(names)):
        with pytest.raises(ValueError):
            rosnode.parse_trajectory(bad, order)
            pytest.fail(f"accepted a message with {what}")


def test_serialized_references_are_read_like_rclpy_deserializes_them():
    """The node reads a reference's points straight from the serialized message (numpy, no
    Python object per point); against rclpy's deserialization over random messages: 1 to 7
    joints, 1 to 5 points, with and without velocities, accelerations, effort (on all points
    or some: then rclpy reads it), frame ids and names of every length mod 8. Cut messages
    raise ValueError."""
    from rclpy.serialization import deserialize_message

    rng = np.random.default_rng(0)
    for trial in range(200):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        names = [("j" * int(rng.integers(1, 9))) + str(i) for i in range(n)]
        ts = np.cumsum(rng.uniform(0.01, 1.0, m))
        P = rng.normal(size=(m, n))
        V = rng.normal(size=(m, n)) if rng.random() < 0.6 else None
        A = rng.normal(size=(m, n)) if V is not None and rng.random() < 0.5 else None
        msg = rosnode.trajectory_message(names, ts, P, V, A)
        msg.header.frame_id = "f" * int(rng.integers(0, 6))
        effort = rng.random()
        for pt in msg.points:
            if effort < 0.3 or (effort < 0.4 and rng.random() < 0.5):
                pt.effort = [1.0] * n
        order = rosnode.JointOrder(list(rng.permutation(names)))
        data = serialize_message(msg)
        got = rosnode.serialized_trajectory_points(data, order)
        want = rosnode.trajectory_points(deserialize_message(data, JointTrajectory), order)
        for a, b in zip(got, want):
            assert (a is None and b is None) or np.array_equal(a, b), trial
        for cut in (1, 8, len(data) // 2):
            with pytest.raises(ValueError):
                rosnode.serialized_trajectory_points(data[:cut], order)
    # and the checks of trajectory_points apply to it
    names = [f"j{i}" for i in range(3)]
    order = rosnode.JointOrder(names)
    for what, bad in _malformed_references(names):
        with pytest.raises(ValueError):
            rosnode.serialized_trajectory_points(serialize_message(bad), order)
            pytest.fail(f"accepted a message with {what}")
    big = rosnode.trajectory_message(names, np.arange(11) * 0.1, np.zeros((11, 3)))
    with pytest.raises(ValueError, match="11 points, more than the 10"):
        rosnode.serialized_trajectory_points(serialize_message(big), order, max_points=10)


def test_load_robot_takes_a_bundled_name_a_urdf_path_or_urdf_text():
    path = robodyn.robots.urdf_path("intelledex_605")
    for robot in (rosnode.load_robot("intelledex_605"), rosnode.load_robot(str(path)),
                  rosnode.load_robot(robot_description=path.read_text())):
        assert robot.n == 6 and robot.name == "intelledex_605"
    for args in ((), ("intelledex_605", path.read_text()), ("no_such_robot",),
                 ("", "<robot name='broken'>")):
        with pytest.raises(rosnode.ConfigError):
            rosnode.load_robot(*args)
    if "lynch_satellite" in robodyn.robots.available():  # a floating base: not a joint arm
        with pytest.raises(rosnode.ConfigError, match="floating base"):
            rosnode.load_robot("lynch_satellite")
    assert rosnode.gains(2.0, 3, "kp").tolist() == [2.0, 2.0, 2.0]
    for bad in (-1.0, [1.0, 2.0], float("nan"), "x"):
        with pytest.raises(rosnode.ConfigError):
            rosnode.gains(bad, 3, "kp")
