"""robodyn-ros2's checks of joint states (as references are checked) and trajectory_message's
refusal of times a message cannot hold (issue 31, item 11).

The check functions are tested directly; one in-process ControllerNode (in a private ROS
domain on this machine, the ``ros`` fixture of tests/_ros.py) shows that a 1e308 joint state is
rejected and the command stays the control law at the last good state, computed here from
robot.inverse_dynamics."""

import math

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("sensor_msgs.msg")
pytest.importorskip("trajectory_msgs.msg")

from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import robodyn  # noqa: E402
from robodyn.ros import node as rosnode  # noqa: E402
from _ros import _clip, ros  # noqa: E402,F401  (ros: the private-domain fixture)


def bounds_of(robot, margin=0.1):
    return rosnode.joint_state_bounds(rosnode.joint_limits(robot), margin)


def test_joint_state_check_keeps_the_limits_with_a_margin():
    robot = robodyn.robots.stanford_arm()
    names = robot.joint_names
    lower, upper = robot.position_limits
    vmax = robot.velocity_limits
    b = bounds_of(robot, 0.1)
    q = 0.5 * (lower + upper)
    qd = 0.5 * vmax
    rosnode.check_joint_state(q, qd, b, names)
    rosnode.check_joint_state(q, None, b, names)
    # just inside the margin (a sensor reading a little past the limit) passes, beyond fails
    span = upper - lower
    for j in range(robot.n):
        for side, edge, sign in (("lower", lower, -1.0), ("upper", upper, 1.0)):
            x = q.copy()
            x[j] = edge[j] + sign * 0.09 * span[j]
            rosnode.check_joint_state(x, qd, b, names)
            x[j] = edge[j] + sign * 0.11 * span[j]
            with pytest.raises(ValueError, match=rf"^{names[j]} position .* is outside"):
                rosnode.check_joint_state(x, qd, b, names)
        v = qd.copy()
        v[j] = -1.09 * vmax[j]
        rosnode.check_joint_state(q, v, b, names)
        v[j] = -1.11 * vmax[j]
        with pytest.raises(ValueError, match=rf"^{names[j]} velocity .* exceeds"):
            rosnode.check_joint_state(q, v, b, names)
    for bad in (1e308, -1e308, math.nan, math.inf):
        x = q.copy()
        x[2] = bad
        with pytest.raises(ValueError, match=names[2]):
            rosnode.check_joint_state(x, qd, b, names)
        with pytest.raises(ValueError, match=names[2]):
            rosnode.check_joint_state(q, np.where(np.arange(6) == 2, bad, qd), b, names)


def test_joint_without_limits_accepts_any_finite_state():
    limits = (np.array([-np.inf, -1.0]), np.array([np.inf, 1.0]), np.array([np.inf, 2.0]))
    b = rosnode.joint_state_bounds(limits, 0.1)
    rosnode.check_joint_state(np.array([1e300, 0.0]), np.array([1e300, 0.0]), b, ["a", "b"])
    with pytest.raises(ValueError, match="^a position is not finite"):
        rosnode.check_joint_state(np.array([np.inf, 0.0]), None, b, ["a", "b"])


def test_node_rejects_a_1e308_joint_state_and_keeps_commanding(ros):
    """Issue 31: a joint state of 1e308 was accepted and a full-effort command published."""
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value="pd_gravity"),
        Parameter("joint_state_timeout", value=1e6), Parameter("kp", value=50.0),
        Parameter("kd", value=10.0), Parameter("trigger", value="joint_states")])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, m: sent.append(list(m.data))})()
        q = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2])
        q_r = q + 0.05
        node._pending = node.prepare_reference(rosnode.trajectory_message(names, [0.0], [q_r]))

        def law(q_meas):
            return _clip(robot, 50.0 * (q_r - q_meas) + robot.gravity_torques(q_meas))

        node._on_joint_state(JointState(name=names, position=q.tolist(), velocity=[0.0] * 6))
        assert len(sent) == 1
        np.testing.assert_allclose(sent[-1], law(q), rtol=1e-12, atol=1e-12)
        for bad in ([1e308] * 6, [q[0], q[1], 1e308, q[3], q[4], q[5]]):
            node._on_joint_state(JointState(name=names, position=bad, velocity=[0.0] * 6))
        node._on_joint_state(JointState(name=names, position=q.tolist(), velocity=[1e308] * 6))
        assert node.rejected["joint_states"] == 3
        assert len(sent) == 1  # nothing published for a rejected state
        node._tick()  # the last good state still governs the command: not full effort
        np.testing.assert_allclose(sent[-1], law(q), rtol=1e-12, atol=1e-12)
        lim = robot.effort_limits
        assert np.all(np.abs(sent[-1]) < 0.5 * lim)
    finally:
        node.destroy_node()


@pytest.mark.parametrize("t", [1e300, -1e300, math.inf, math.nan, 2.0**31])
def test_trajectory_message_refuses_a_time_a_duration_cannot_hold(t):
    names = ["a", "b"]
    with pytest.raises(ValueError, match=r"^times: point 1 .*Duration"):
        rosnode.trajectory_message(names, [0.0, t], np.zeros((2, 2)))


def test_trajectory_message_writes_the_times_it_can_hold():
    msg = rosnode.trajectory_message(["a"], [0.0, 1.5, 2.0**31 - 1], np.zeros((3, 1)))
    got = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points]
    assert got == [0.0, 1.5, 2.0**31 - 1]
    with pytest.raises(ValueError, match="^velocities: expected one row per time"):
        rosnode.trajectory_message(["a"], [0.0, 1.0], np.zeros((2, 1)), np.zeros((3, 1)))
