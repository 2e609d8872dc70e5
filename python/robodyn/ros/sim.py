"""robodyn-ros2-sim: a simulated arm that closes the loop with robodyn-ros2 (docs/ros.md).

    robodyn-ros2-sim --ros-args -p robot:=intelledex_605 -p q0:="[0.0, 1.5708, 0.0, 0.0, 0.0, 0.0]"
    python -m robodyn.ros.sim --ros-args -p robot:=intelledex_605

Subscribes to ``effort_controller/commands`` (std_msgs/Float64MultiArray, one value per joint
in ``robot.joint_names`` order) and, on a steady timer at ``rate_hz``, integrates
``qdd = forward_dynamics(q, qd, tau)`` over the wall-clock time elapsed since the last tick
(classical Runge-Kutta, steps of at most ``max_step``, the command held constant: a zero-order
hold), then publishes ``joint_states`` (sensor_msgs/JointState: position, velocity, and the
applied effort). The applied torque is the last good command clipped to the effort limits.

Until the first command arrives the arm is held at ``q0`` (brakes on) if ``wait_for_command``
is true (the default); otherwise it moves under zero torque. Joint position limits are not
simulated. A command of the wrong length or with non-finite values is rejected with a
throttled warning and the last good command is kept. A gap of more than ``max_gap`` seconds
between ticks (the process was not scheduled) is integrated as ``max_gap`` only.
"""

from __future__ import annotations

import array
import math
import sys
import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from .node import (COMMANDS, JOINT_STATES, LATEST_QOS, LOG_THROTTLE, ConfigError, _descriptor,
                   declare_robot_parameters, effort_bounds, number_parameter, run, vector)

__all__ = ["ArmSimulator", "main"]

JOINT_STATES_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE)


def _state_parameter(node, name, n, text):
    """An (n,) initial state parameter: [] means zeros."""
    node.declare_parameter(name, [0.0] * n, _descriptor(text, dynamic=True))
    value = node.get_parameter(name).value
    try:
        x = np.asarray(list(value), dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected {n} numbers, got {value!r}") from None
    if x.size == 0:
        x = np.zeros(n)
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ConfigError(f"{name}: expected {n} finite numbers, got {value!r}")
    return x


class ArmSimulator(Node):
    """The robodyn-ros2-sim node (parameters and behaviour: module docstring, docs/ros.md)."""

    def __init__(self, **kwargs):
        super().__init__("robodyn_sim", **kwargs)
        robot = self.robot = declare_robot_parameters(self)
        n = self.n = robot.n
        self.rate_hz = number_parameter(self, "rate_hz", 1000.0,
                                        "integration and joint-state rate (Hz)", positive=True)
        self.max_step = number_parameter(self, "max_step", 1e-3,
                                         "longest Runge-Kutta step (s)", positive=True)
        self.max_gap = number_parameter(self, "max_gap", 0.05,
                                        "longest wall-clock gap integrated at once (s)",
                                        positive=True)
        self.duration = number_parameter(self, "duration", 0.0,
                                         "stop after this many seconds (0: run until signalled)")
        self.declare_parameter("wait_for_command", True, _descriptor(
            "hold the arm at q0 until the first command arrives"))
        wait = self.get_parameter("wait_for_command").value
        if not isinstance(wait, bool):
            raise ConfigError(f"wait_for_command: expected true or false, got {wait!r}")
        q0 = _state_parameter(self, "q0", n, "initial joint positions")
        qd0 = _state_parameter(self, "qd0", n, "initial joint velocities")

        # the outgoing message owns the state: q, qd, tau are views of its buffers
        msg = self._msg = JointState()
        msg.name = list(robot.joint_names)
        msg.position = array.array("d", q0.tobytes())
        msg.velocity = array.array("d", qd0.tobytes())
        msg.effort = array.array("d", bytes(8 * n))
        self._q = np.frombuffer(msg.position, dtype=np.float64)
        self._qd = np.frombuffer(msg.velocity, dtype=np.float64)
        self._tau = np.frombuffer(msg.effort, dtype=np.float64)
        self._bounds = effort_bounds(robot)

        # Runge-Kutta workspace: stage state (qs, qds), the four stage accelerations (4, n),
        # the weighted sums of stage velocities and accelerations
        self._qs = np.zeros(n)
        self._qds = np.zeros(n)
        self._k = np.zeros((4, n))
        self._dq = np.zeros(n)
        self._dqd = np.zeros(n)
        self._fd = robot.forward_dynamics

        self.running = not wait
        self.steps = 0
        self.rejected = 0
        self._clock = self.get_clock()
        self.create_subscription(Float64MultiArray, COMMANDS, self._on_command, LATEST_QOS)
        self._pub = self.create_publisher(JointState, JOINT_STATES, JOINT_STATES_QOS)
        self._last = time.monotonic()
        self._timer = self.create_timer(1.0 / self.rate_hz, self._tick,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"simulating {robot.name} ({n} joints) at {self.rate_hz:g} Hz from q0={q0.tolist()}"
            + ("; held until the first command" if wait else ""))

    def _on_command(self, msg: Float64MultiArray):
        try:
            tau = vector(msg.data, self.n, "command")
        except Exception as exc:  # whatever is wrong with a message, the node carries on
            self.rejected += 1
            self.get_logger().warning(f"rejected a command ({exc}); keeping the last good one",
                                      throttle_duration_sec=LOG_THROTTLE)
            return
        self._tau[:] = tau
        if self._bounds is not None:
            np.maximum(self._tau, self._bounds[0], out=self._tau)
            np.minimum(self._tau, self._bounds[1], out=self._tau)
        if not self.running:
            self.get_logger().info("first command: the arm is released")
            self.running = True
            self._last = time.monotonic()

    def _rk4(self, h):
        """One classical Runge-Kutta step of length h under the held torque."""
        q, qd, qs, qds, a = self._q, self._qd, self._qs, self._qds, self._k
        dq, dqd, tau, fd = self._dq, self._dqd, self._tau, self._fd
        # stage 1 at (q, qd)
        fd(q, qd, tau, out=a[0])
        np.copyto(dq, qd)
        np.copyto(dqd, a[0])
        # stages 2 and 3 at the midpoint, stage 4 at the end; weights 1 2 2 1
        vel = qd
        for i, (c, w) in enumerate(((0.5 * h, 2.0), (0.5 * h, 2.0), (h, 1.0))):
            np.multiply(vel, c, out=qs)
            qs += q
            np.multiply(a[i], c, out=qds)
            qds += qd
            fd(qs, qds, tau, out=a[i + 1])
            dq += w * qds
            dqd += w * a[i + 1]
            vel = qds
        q += (h / 6.0) * dq
        qd += (h / 6.0) * dqd

    def _tick(self):
        now = time.monotonic()
        if self.running:
            # integrate the elapsed wall-clock time in equal steps <= max_step
            dt = min(now - self._last, self.max_gap)
            steps = max(1, math.ceil(dt / self.max_step - 1e-9))
            h = dt / steps
            for _ in range(steps):
                self._rk4(h)
            self.steps += steps
        self._last = now
        self._msg.header.stamp = self._clock.now().to_msg()
        try:
            self._pub.publish(self._msg)
        except Exception as exc:  # a middleware error must not stop the simulation
            self.get_logger().error(f"publishing the joint states failed: {exc}",
                                    throttle_duration_sec=LOG_THROTTLE)

    def summary(self) -> str:
        return (f"summary: steps={self.steps} rejected commands={self.rejected} "
                f"q={np.round(self._q, 6).tolist()}")


def main(args=None):
    return run(ArmSimulator, args, prog="robodyn-ros2-sim",
               params="robot | robot_description, rate_hz, q0, qd0, max_step, max_gap, "
                      "wait_for_command, duration")


if __name__ == "__main__":
    sys.exit(main())
