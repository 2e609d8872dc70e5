"""robodyn-ros2-sim: a simulated arm that closes the loop with robodyn-ros2 (docs/ros.md).

    robodyn-ros2-sim --ros-args -p robot:=intelledex_605 -p q0:="[0.0, 1.5708, 0.0, 0.0, 0.0, 0.0]"
    python -m robodyn.ros.sim --ros-args -p robot:=intelledex_605

Subscribes to ``effort_controller/commands`` (std_msgs/Float64MultiArray, one value per joint
in ``robot.joint_names`` order) and, on a steady timer at ``rate_hz``, integrates
``qdd = forward_dynamics(q, qd, tau)`` over the wall-clock time elapsed since the last tick
with the integrator of :func:`robodyn.simulate` (:class:`robodyn.simulation.FixedStep`:
classical Runge-Kutta, steps of at most ``max_step``, the command held constant: a zero-order
hold), then publishes ``joint_states`` (sensor_msgs/JointState: position, velocity, and the
applied effort). The applied torque is the last good command clipped to the effort limits.
With neither ``robot`` nor ``robot_description`` the URDF comes from the
``robot_description`` topic, as for robodyn-ros2.

Until the first command arrives the arm is held at ``q0`` (brakes on) if ``wait_for_command``
is true (the default); otherwise it moves under zero torque. Joint position limits are not
simulated. A command of the wrong length or with non-finite values is rejected with a
throttled warning and the last good command is kept. A gap of more than ``max_gap`` seconds
between ticks (the process was not scheduled) is integrated as ``max_gap`` only. If the state
stops being finite, the arm is stopped (brakes on) at the last finite state, with an error.
"""

from __future__ import annotations

import array
import math
import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robodyn.control import saturate
from robodyn.sim.simulation import FixedStep

from .node import (COMMANDS, EXECUTORS, JOINT_STATES, LATEST_QOS, LOG_THROTTLE, RobotNode,
                   exit_process, run)
from .params import (ConfigError, choice_parameter, descriptor, effort_bounds, number_parameter,
                     priority_parameter)
from .reference import vector

__all__ = ["ArmSimulator", "main", "cli"]

JOINT_STATES_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE)


def _state(value, n, name):
    """An (n,) initial state parameter: [], [0.0] or 0 mean zeros."""
    try:
        x = np.asarray(list(value), dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected {n} numbers, got {value!r}") from None
    if x.size == 0 or (x.size == 1 and x[0] == 0.0):
        x = np.zeros(n)
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ConfigError(f"{name}: expected {n} finite numbers, got {value!r}")
    return x


class ArmSimulator(RobotNode):
    """The robodyn-ros2-sim node (parameters and behaviour: module docstring, docs/ros.md)."""

    def __init__(self, **kwargs):
        super().__init__("robodyn_sim", **kwargs)
        self.rate_hz = number_parameter(self, "rate_hz", 1000.0,
                                        "integration and joint-state rate (Hz)", positive=True)
        self.max_step = number_parameter(self, "max_step", 1e-3,
                                         "longest Runge-Kutta step (s)", positive=True)
        self.max_gap = number_parameter(self, "max_gap", 0.05,
                                        "longest wall-clock gap integrated at once (s)",
                                        positive=True)
        self.duration = number_parameter(self, "duration", 0.0,
                                         "stop after this many seconds (0: run until signalled)")
        self.executor_kind = choice_parameter(self, "executor", "events", EXECUTORS,
                                              "the rclpy executor")
        self.realtime_priority = priority_parameter(self)
        self.declare_parameter("wait_for_command", True, descriptor(
            "hold the arm at q0 until the first command arrives"))
        self.wait = self.get_parameter("wait_for_command").value
        if not isinstance(self.wait, bool):
            raise ConfigError(f"wait_for_command: expected true or false, got {self.wait!r}")
        for name in ("q0", "qd0"):
            self.declare_parameter(name, [0.0], descriptor(
                f"initial joint {'positions' if name == 'q0' else 'velocities'} (n numbers; "
                "[0.0] or []: zeros)", dynamic=True))
        self.steps = 0
        self.rejected = 0
        self._acquire_robot()

    def configure(self, robot):
        n = self.n = robot.n
        q0 = _state(self.get_parameter("q0").value, n, "q0")
        qd0 = _state(self.get_parameter("qd0").value, n, "qd0")
        # the integrator of robodyn.simulate; it owns the state (q, qd) and the applied torque
        self._stepper = FixedStep(robot, "rk4", "aba")
        self._step = self._stepper.step
        self._q, self._qd, self._tau = self._stepper.q, self._stepper.qd, self._stepper.tau
        self._q[:] = q0
        self._qd[:] = qd0
        self._good = np.concatenate([q0, qd0])  # the last finite state
        self._bounds = effort_bounds(robot)

        # the outgoing message; its buffers are copied from the state every tick
        msg = self._msg = JointState()
        msg.name = list(robot.joint_names)
        msg.position = array.array("d", q0.tobytes())
        msg.velocity = array.array("d", qd0.tobytes())
        msg.effort = array.array("d", bytes(8 * n))
        self._pos = np.frombuffer(msg.position, dtype=np.float64)
        self._vel = np.frombuffer(msg.velocity, dtype=np.float64)
        self._eff = np.frombuffer(msg.effort, dtype=np.float64)

        self.robot = robot
        self.running = not self.wait
        self._clock = self.get_clock()
        self.create_subscription(Float64MultiArray, COMMANDS, self._on_command, LATEST_QOS)
        self._pub = self.create_publisher(JointState, JOINT_STATES, JOINT_STATES_QOS)
        self._last = time.monotonic()
        self._timer = self.create_timer(1.0 / self.rate_hz, self._tick,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"simulating {robot.name} ({n} joints) at {self.rate_hz:g} Hz from q0={q0.tolist()}"
            + ("; held until the first command" if self.wait else ""))

    def _on_command(self, msg: Float64MultiArray):
        if self.robot is None:
            return
        try:
            tau = vector(msg.data, self.n, "command")
        except Exception as exc:  # whatever is wrong with a message, the node carries on
            self.rejected += 1
            self.get_logger().warning(f"rejected a command ({exc}); keeping the last good one",
                                      throttle_duration_sec=LOG_THROTTLE)
            return
        self._tau[:] = tau
        if self._bounds is not None:
            saturate(self._tau, self._bounds)  # the controllers' clip (control.hpp)
        if not self.running:
            self.get_logger().info("first command: the arm is released")
            self.running = True
            self._last = time.monotonic()

    def advance(self, dt):
        """Integrate ``dt`` seconds in equal steps of at most ``max_step`` (robodyn.simulate's
        RK4 step under the held torque)."""
        steps = max(1, math.ceil(dt / self.max_step - 1e-9))
        h = dt / steps
        step = self._step
        for _ in range(steps):
            step(h)
        self.steps += steps
        y = self._stepper.y
        if np.isfinite(y).all():
            self._good[:] = y
        else:
            y[:] = self._good
            self._qd.fill(0.0)
            self.running = False
            self.get_logger().error("the simulation diverged (non-finite state): the arm is "
                                    "stopped at the last finite state until the next command")

    def _tick(self):
        now = time.monotonic()
        if self.running:
            # integrate the elapsed wall-clock time (at most max_gap)
            self.advance(min(now - self._last, self.max_gap))
        self._last = now
        np.copyto(self._pos, self._q)
        np.copyto(self._vel, self._qd)
        np.copyto(self._eff, self._tau)
        self._msg.header.stamp = self._clock.now().to_msg()
        try:
            self._pub.publish(self._msg)
        except Exception as exc:  # a middleware error must not stop the simulation
            self.get_logger().error(f"publishing the joint states failed: {exc}",
                                    throttle_duration_sec=LOG_THROTTLE)

    def summary(self) -> str:
        q = [] if self.robot is None else np.round(self._q, 6).tolist()
        return f"summary: steps={self.steps} rejected commands={self.rejected} q={q}"


def main(args=None):
    return run(ArmSimulator, args, prog="robodyn-ros2-sim",
               params="robot | robot_description (neither: the robot_description topic), "
                      "rate_hz, q0, qd0, max_step, max_gap, wait_for_command, executor "
                      f"({', '.join(EXECUTORS)}), realtime_priority, duration")


def cli():
    """The ``robodyn-ros2-sim`` console script."""
    exit_process(main())


if __name__ == "__main__":
    cli()
