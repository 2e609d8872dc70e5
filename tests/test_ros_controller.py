"""The ROS 2 controller node in process: reference and parameter checks, the
allocation-free control tick, and commands that overflow.

Shared fixture and helpers: tests/_ros.py (skipped without rclpy).
"""

import pytest

from _ros import (  # noqa: F401  (ros is a fixture)
    _clip,
    _point_msg,
    JointState,
    np,
    Parameter,
    robodyn,
    ros,
    rosnode,
    serialize_message,
    sys,
    threading,
    time,
    trajectories,
)


def _ok(rejected_before, node):
    return node.rejected["reference"] == rejected_before


def test_references_are_checked_against_the_joint_and_velocity_limits():
    robot = robodyn.robots.stanford_arm()
    names = list(robot.joint_names)
    order = rosnode.JointOrder(names)
    limits = rosnode.joint_limits(robot)
    lower, upper, vmax = limits
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(vmax))
    q = np.array([0.3, 0.9, 0.6, -0.4, 0.5, 0.2])

    def ref(times, P, V=None, A=None, start=None):
        return rosnode.parse_trajectory(rosnode.trajectory_message(names, times, P, V, A), order,
                                        start=start)

    # within the limits: accepted, also the thesis-like quintic through many points
    rosnode.check_reference(ref([0.0], [q]), limits, names)
    rosnode.check_reference(ref([0.0, 1.0, 2.0], [q, q + 0.2, q]), limits, names)
    ts = np.linspace(0.0, 2.0, 101)
    Q = q + 0.3 * np.sin(ts)[:, None]
    rosnode.check_reference(ref(ts, Q, 0.3 * np.cos(ts)[:, None] + 0 * Q,
                                -0.3 * np.sin(ts)[:, None] + 0 * Q), limits, names)
    cases = {
        # a point beyond a position limit (the prismatic joint below its 0.3048 m)
        "below its limit 0.3048": ref([0.0], [np.where(np.arange(6) == 2, 0.2, q)]),
        # the poisoned reference of issue 14: finite, absurd positions
        "above its limit": ref([0.0, 1.0], [q, np.full(6, 1e308)]),
        # a velocity beyond the limit at a point
        "velocity 2.5 exceeds its limit 1.5": ref([0.0], [q], [np.where(np.arange(6) == 0, 2.5,
                                                                         0.0)]),
        # linear pieces too fast for the velocity limit (1 rad in 0.1 s)
        "exceeds its limit 1.5": ref([0.0, 0.01], [q, q + 0.2]),
        # a cubic that overshoots the upper limit between two points within the limits
        "above its limit 2.96706": ref([0.0, 2.0], [np.where(np.arange(6) == 0, 2.9, q)] * 2,
                                      [np.where(np.arange(6) == 0, 1.4, 0.0)] * 2),
        # a late first point, reached from the start state too fast
        "interval 0": ref([0.05, 1.0], [q + 0.5] * 2, start=(q, np.zeros(6), np.zeros(6))),
    }
    for want, r in cases.items():
        with pytest.raises(ValueError, match=want.replace(".", r"\.")):
            rosnode.check_reference(r, limits, names)
    # the overshoot is between the points: both points themselves are within the limits
    assert 2.9 < upper[0]


def test_prepare_reference_rejects_the_poisoned_and_the_oversized_and_the_node_commands_on(ros):
    """Issue 14: a 1e308 reference was accepted and left computed_torque unable to command."""
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value="computed_torque"),
        Parameter("max_points", value=1000), Parameter("joint_state_timeout", value=1e6),
        Parameter("kp", value=50.0), Parameter("kd", value=10.0)])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, m: sent.append(list(m.data))})()
        q = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2])
        node._on_joint_state(JointState(name=names, position=q.tolist(), velocity=[0.0] * 6))
        q_r = q + 0.05
        node._pending = node.prepare_reference(serialize_message(_point_msg(names, q_r)))
        node._tick()

        def law(q_ref):
            v = 50.0 * (q_ref - q) + 10.0 * (0.0 - np.zeros(6))
            return _clip(robot, robot.inverse_dynamics(q, np.zeros(6), v))

        np.testing.assert_allclose(sent[-1], law(q_r), rtol=1e-12, atol=1e-12)
        poisoned = rosnode.trajectory_message(names, [0.0, 0.5], [q_r, np.full(6, 1e308)])
        big = rosnode.trajectory_message(names, np.arange(1001) * 1e-3, np.tile(q_r, (1001, 1)))
        for bad, why in ((poisoned, "above its limit 3.14159"),
                         (big, "1001 points, more than the 1000")):
            with pytest.raises(ValueError, match=why):
                node.prepare_reference(serialize_message(bad))
            node._tick()  # the node keeps commanding the last good reference
            np.testing.assert_allclose(sent[-1], law(q_r), rtol=1e-12, atol=1e-12)
        # a message too large to be max_points points is refused before deserializing
        with pytest.raises(ValueError, match="larger than max_points"):
            node.prepare_reference(b"\0" * (node._max_bytes + 1))
        # the subscription callback only hands the bytes over: the reference is read, checked
        # and interpolated in the worker thread, while the control path keeps commanding
        m = 1000
        ts = np.arange(m) * 1e-3
        slow = q_r + 0.1 * np.sin(ts)[:, None]
        data = serialize_message(rosnode.trajectory_message(names, ts, slow))
        prepared_in = []
        prepare = node.prepare_reference

        def spy(d):
            prepared_in.append(threading.get_ident())
            return prepare(d)

        node.prepare_reference = spy
        before = node._pending
        node._on_reference(data)
        assert threading.get_ident() not in prepared_in
        deadline = time.monotonic() + 30.0
        while node._pending is before and time.monotonic() < deadline:
            node._tick()
            time.sleep(0.001)
        assert node._pending is not before and len(node._pending[0].knots) == m
        assert prepared_in and threading.get_ident() not in prepared_in
        node.prepare_reference = prepare
        # later references start from the last good one, and are taken
        q_r2 = q - 0.05
        node._pending = node.prepare_reference(serialize_message(
            rosnode.trajectory_message(names, [0.5, 0.6], [q_r2, q_r2])))
        node._tick()
        assert np.all(np.isfinite(sent[-1]))
        node._ref_time -= 1.0  # 1 s later: at the new point
        node._tick()
        np.testing.assert_allclose(sent[-1], law(q_r2), rtol=1e-12, atol=1e-12)
    finally:
        node.destroy_node()


def test_parameters_change_the_law_on_the_next_tick_and_bad_values_are_refused(ros):
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value="computed_torque"),
        Parameter("joint_state_timeout", value=1e6)])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, m: sent.append(np.array(m.data))})()
        q, qd = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2]), np.full(6, 0.1)
        q_r = q + np.linspace(-0.04, 0.05, 6)
        node._on_joint_state(JointState(name=names, position=q.tolist(), velocity=qd.tolist()))
        node._pending = node.prepare_reference(_point_msg(names, q_r))
        e, ed = q_r - q, -qd

        def ct(kp, kd):
            return _clip(robot, robot.inverse_dynamics(q, qd, kp * e + kd * ed))

        kp0, kd0 = robodyn.control.COMPUTED_TORQUE_KP, robodyn.control.COMPUTED_TORQUE_KD
        node._tick()
        np.testing.assert_allclose(sent[-1], ct(kp0, kd0), rtol=1e-12)
        kp = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
        assert node.set_parameters([Parameter("kp", value=kp.tolist())])[0].successful
        node._tick()
        np.testing.assert_allclose(sent[-1], ct(kp, kd0), rtol=1e-12)
        # refused, with a reason; the old value stays in force
        for name, value, why in (("kp", -1.0, "non-negative"), ("kd", [1.0, 2.0], "6 of them"),
                                 ("mode", "torque_please", "expected one of"),
                                 ("joint_state_timeout", 0.0, "positive")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and why in result.reason, result.reason
        assert list(node.get_parameter("kp").value) == kp.tolist()
        assert node.get_parameter("mode").value == "computed_torque"
        node._tick()
        np.testing.assert_allclose(sent[-1], ct(kp, kd0), rtol=1e-12)
        # the mode: PD + gravity (gains in torque units), then gravity compensation
        assert node.set_parameters([Parameter("mode", value="pd_gravity"),
                                    Parameter("kd", value=2.0)])[0].successful
        node._tick()
        np.testing.assert_allclose(sent[-1], _clip(robot, kp * e + 2.0 * ed
                                                   + robot.gravity_torques(q)), rtol=1e-12)
        assert node.set_parameters([Parameter("mode", value="gravity_compensation")])[0].successful
        node._tick()
        np.testing.assert_allclose(sent[-1], _clip(robot, robot.gravity_torques(q)), rtol=1e-12)
        # read-only parameters are refused by rclpy itself
        assert not node.set_parameters([Parameter("rate_hz", value=5.0)])[0].successful
    finally:
        node.destroy_node()


class _NoPublish:
    def publish(self, msg):
        pass


def _tick_memory(node, ticks=2000):
    """(growth, transient peak) in bytes over ``ticks`` calls of the node's tick."""
    import itertools
    import tracemalloc

    tracemalloc.start()
    try:
        node._tick()
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in itertools.repeat(None, ticks):
            node._tick()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return current - base, peak - base


@pytest.mark.parametrize("mode", rosnode.MODES)
def test_the_control_tick_allocates_no_arrays(ros, mode):
    """tracemalloc sees numpy's buffers and every Python object: over 2000 ticks nothing stays
    allocated and no transient as large as one (n,) array appears. The same tick with robodyn
    calls that return a new array instead of writing into ``out=`` does show one, so the probe
    can fail. rclpy's publish is stubbed out (its allocations are not the tick's)."""
    robot = robodyn.robots.intelledex_605()
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value=mode),
        Parameter("joint_state_timeout", value=1e6)])
    try:
        node._pub = _NoPublish()
        motion = trajectories.thesis_motion()
        ts = np.arange(0.0, 2.0 + 1e-12, 0.02)
        Q, QD, QDD = motion.sample(ts)
        node._on_joint_state(JointState(name=robot.joint_names, position=Q[3].tolist(),
                                        velocity=QD[3].tolist()))
        node._pending = node.prepare_reference(
            rosnode.trajectory_message(robot.joint_names, ts, Q, QD, QDD))
        # past 256 calls: the controller's call counter is then an allocated int throughout
        for _ in range(300):
            node._tick()
        assert node.published == 300
        growth, peak = _tick_memory(node)
        assert node.published == 2301
        array_bytes = sys.getsizeof(np.empty(robot.n))  # header and data
        assert growth == 0 and peak < array_bytes, (growth, peak, array_bytes)

        def allocating(fn):
            def call(*args, out):
                np.copyto(out, fn(*args))
                return out
            return call

        for ctrl in (node._law[1], node._gravity):
            if hasattr(ctrl, "_id"):
                ctrl._id = allocating(robot.inverse_dynamics)
            if hasattr(ctrl, "_gravity"):
                ctrl._gravity = allocating(robot.gravity_torques)
        assert _tick_memory(node)[1] >= array_bytes
    finally:
        node.destroy_node()


def test_a_command_that_overflows_is_not_published(ros):
    robot = robodyn.robots.stanford_arm()
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="stanford_arm"), Parameter("mode", value="feedforward")])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, msg: sent.append(list(msg.data))})()
        # finite, but its squares overflow (past the reference checks: the tick's own guard)
        huge = np.full(robot.n, 1e200)
        q = np.array([0.3, 0.9, 0.6, -0.4, 0.5, 0.2])
        node._pending = (rosnode.reference_from_points([0.0], q[None], huge[None]), 0.0)
        with np.errstate(invalid="ignore"):  # as robodyn-ros2's main() sets it
            node._tick()
        assert sent == []
        node._pending = node.prepare_reference(_point_msg(robot.joint_names, q, np.ones(robot.n)))
        node._tick()
        assert len(sent) == 1 and np.all(np.isfinite(sent[0]))
    finally:
        node.destroy_node()
