"""robodyn-ros2: a joint-torque controller node on robodyn's dynamics (see docs/ros.md).

    robodyn-ros2 --ros-args -p robot:=intelledex_605 -p mode:=computed_torque -p rate_hz:=500.0
    robodyn-ros2 --ros-args -p mode:=computed_torque -p trigger:=joint_states   # URDF from topic
    python -m robodyn.ros.node --ros-args -p robot:=stanford_arm

Subscribes to ``joint_states`` (sensor_msgs/JointState) and ``robodyn/reference``
(trajectory_msgs/JointTrajectory), publishes ``effort_controller/commands``
(std_msgs/Float64MultiArray, one torque or force per joint in ``robot.joint_names`` order),
either on a steady (wall-clock) timer at ``rate_hz`` (``trigger:=timer``) or once per arriving
joint state (``trigger:=joint_states``). Names are relative, so they resolve to
``/joint_states``, ... in the root namespace and follow a ``__ns`` remap. With neither
``robot`` nor ``robot_description`` set, the URDF is taken from the ``robot_description``
topic (std_msgs/String, transient local, as robot_state_publisher offers it).

Modes, with ``(q, qd)`` the last good joint state and ``(q_r, qd_r, qdd_r)`` the reference now;
each is one controller of :mod:`robodyn.control`, called through ``Controller.step``:

- ``feedforward``:          ``Feedforward``: ``tau = inverse_dynamics(q_r, qd_r, qdd_r)``
- ``computed_torque``:      ``ComputedTorque``:
  ``tau = inverse_dynamics(q, qd, qdd_r + kp (q_r - q) + kd (qd_r - qd))``
- ``pd_gravity``:           ``PDGravity``: ``tau = kp (q_r - q) + kd (qd_r - qd) + g(q)``
- ``gravity_compensation``: ``PDGravity`` with zero gains: ``tau = g(q)``

``tau`` is clipped to ``+-robot.effort_limits`` (a non-positive or infinite limit is no limit).
``mode``, ``kp``, ``kd`` and ``joint_state_timeout`` can be set while the node runs (checked;
a refused value keeps the old one and says why); the next tick uses them.

A joint state with unknown, missing or duplicate joint names, wrong lengths, non-finite
values, or positions or velocities past the joint limits by more than ``joint_state_margin``
(a fraction of the joint's range or velocity limit, default 0.1) is rejected with a throttled
warning and the last good one is kept. A reference is
handed to a worker thread that deserializes it, checks it (names, lengths, finiteness, times,
at most ``max_points`` points, positions within the joint limits and velocities within the
velocity limits at the points and along the interpolation) and prepares the interpolating
polynomials; the control tick only swaps in the prepared object. A rejected reference leaves
the previous one in force. In the feedback modes a joint state older than
``joint_state_timeout`` gives gravity compensation at the last good ``q`` (in the modes that
track a reference also while no reference has arrived), logged on every switch. Nothing is
published until the inputs the mode needs have arrived. SIGINT and SIGTERM stop the node
cleanly (exit status 0) with any executor (``executor`` parameter).

The tick allocates no arrays: the reference is one (3, 6) x (6, n) product into a preallocated
buffer, then the controller's step writes straight into the outgoing message's buffer, a
finiteness check, one publish.
"""

from __future__ import annotations

import array
import math
import threading
import time

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from robodyn import control
from robodyn.control import ComputedTorque, Feedforward, PDGravity

from .checks import (check_joint_state, check_points, check_reference, joint_limits,
                     joint_state_bounds)
from .messages import (MAX_POINTS, parse_trajectory, serialized_trajectory_points,
                       trajectory_message, trajectory_points)
from .params import (ConfigError, check_number, choice_parameter, declare_robot_parameters,
                     descriptor, load_robot, number_parameter, priority_parameter)
from .process import exit_process, normal_scheduling, run
from .reference import (JointOrder, Reference, gains, reference_from_points, segment_coefficients,
                        vector)

__all__ = ["ControllerNode", "RobotNode", "ConfigError", "JointOrder", "Reference",
           "load_robot", "reference_from_points", "segment_coefficients", "parse_trajectory",
           "trajectory_points", "serialized_trajectory_points", "check_points",
           "check_reference", "joint_limits", "joint_state_bounds", "check_joint_state",
           "trajectory_message", "run", "main", "cli",
           "exit_process", "MODES", "TRIGGERS", "EXECUTORS", "JOINT_STATES", "REFERENCE",
           "COMMANDS", "ROBOT_DESCRIPTION"]

MODES = ("feedforward", "computed_torque", "pd_gravity", "gravity_compensation")
TRIGGERS = ("timer", "joint_states")
EXECUTORS = ("events", "single_threaded", "multi_threaded")
JOINT_STATES = "joint_states"
REFERENCE = "robodyn/reference"
COMMANDS = "effort_controller/commands"
ROBOT_DESCRIPTION = "robot_description"
_FEEDFORWARD, _COMPUTED_TORQUE, _PD_GRAVITY, _GRAVITY = range(4)

# the throttle of rejection warnings (s), the longest wait of the main thread in the executor
# before it looks for a signal (s), and the GIL switch interval of a node process (s): the
# reference worker hands the interpreter to the control callback within this time
# default of joint_state_margin: how far past a limit a measured joint state may be (a
# fraction of the joint's range, or of its velocity limit)
STATE_MARGIN = 0.1
LOG_THROTTLE = 1.0
# ring of per-tick compute times kept for the shutdown summary (a power of two)
_STATS = 1 << 16

# latest-value topics: keep one message; best effort also accepts reliable publishers
LATEST_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.BEST_EFFORT)
# references and commands must not be lost silently
REFERENCE_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                           reliability=ReliabilityPolicy.RELIABLE)
COMMAND_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE)
# the URDF as robot_state_publisher offers it: the last one, kept for late joiners
DESCRIPTION_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)




class RobotNode(Node):
    """A node whose robot comes from the ``robot`` / ``robot_description`` parameters or, with
    neither, from the ``robot_description`` topic: ``configure(robot)`` runs once it is known.

    ``stop`` (a Future, set by :func:`run`) is completed with an exit status when the node
    cannot go on (a URDF from the topic that its parameters do not fit)."""

    stop = None
    exit_status = 0

    def _acquire_robot(self):
        self.robot = None
        robot = declare_robot_parameters(self)
        if robot is not None:
            self.configure(robot)
            return
        self._description_sub = self.create_subscription(
            String, ROBOT_DESCRIPTION, self._on_description, DESCRIPTION_QOS)
        self.get_logger().info(
            f"no robot parameter: waiting for the URDF on "
            f"{self.resolve_topic_name(ROBOT_DESCRIPTION)}")

    def _on_description(self, msg):
        if self.robot is not None:
            self.get_logger().warning(
                "a new robot_description arrived; the node keeps the robot it started with "
                "(restart it to change the model)", throttle_duration_sec=LOG_THROTTLE)
            return
        try:
            robot = load_robot(robot_description=msg.data)
        except ConfigError as exc:
            self.get_logger().error(f"robot_description topic: {exc}; waiting for another")
            return
        try:
            self.configure(robot)
        except ConfigError as exc:
            self.get_logger().error(str(exc))
            self.exit_status = 2
            if self.stop is not None and not self.stop.done():
                self.stop.set_result(2)

    def configure(self, robot):
        raise NotImplementedError


class ControllerNode(RobotNode):
    """The robodyn-ros2 node (parameters and behaviour: module docstring and docs/ros.md)."""

    def __init__(self, **kwargs):
        super().__init__("robodyn_controller", **kwargs)
        self.rate_hz = number_parameter(self, "rate_hz", 1000.0,
                                        "command rate of the timer trigger (Hz)", positive=True)
        self.trigger = choice_parameter(self, "trigger", "timer", TRIGGERS,
                                        "when to compute a command")
        self.executor_kind = choice_parameter(self, "executor", "events", EXECUTORS,
                                              "the rclpy executor")
        self.realtime_priority = priority_parameter(self)
        self.mode = choice_parameter(self, "mode", "gravity_compensation", MODES,
                                     "control law", read_only=False)
        for name, default in (("kp", control.COMPUTED_TORQUE_KP),
                              ("kd", control.COMPUTED_TORQUE_KD)):
            self.declare_parameter(name, default, descriptor(
                f"gain {name}: a number or one per joint (computed_torque: 1/s^2 for kp, 1/s "
                "for kd; pd_gravity: N m/rad and N m s/rad)", dynamic=True, read_only=False))
        self.timeout = number_parameter(
            self, "joint_state_timeout", 0.1,
            "joint states older than this (s) are stale: gravity compensation", positive=True,
            read_only=False)
        self.state_margin = number_parameter(
            self, "joint_state_margin", STATE_MARGIN,
            "a joint state may pass a position limit by this fraction of the joint's range, "
            "and a velocity limit by this fraction of it; beyond: rejected")
        self.declare_parameter("max_points", MAX_POINTS, descriptor(
            "largest reference accepted (points)"))
        self.max_points = self.get_parameter("max_points").value
        if isinstance(self.max_points, bool) or not isinstance(self.max_points, int) or (
                self.max_points < 1):
            raise ConfigError(f"max_points: expected a positive integer, got "
                              f"{self.max_points!r}")
        self.duration = number_parameter(self, "duration", 0.0,
                                         "stop after this many seconds (0: run until signalled)")
        # statistics: rejected messages (and superseded references); compute and publish time
        # (s) of the last _STATS published ticks in rings whose next slot is looked up in a
        # list of existing int objects (a counter would allocate a new int every tick)
        self.rejected = {"joint_states": 0, "reference": 0}
        self.superseded = 0
        self._compute = np.zeros(_STATS)
        self._publish = np.zeros(_STATS)
        self._stamp = np.zeros(_STATS)
        self._next_slot = list(range(1, _STATS)) + [0]
        self._slot = _STATS - 1
        self._wraps = 0
        self._worker = None
        self._timer = None
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._acquire_robot()

    def configure(self, robot):
        """Buffers, controllers, topics, the timer and the reference worker for ``robot``."""
        n = robot.n
        kp = gains(self.get_parameter("kp").value, n, "kp")
        kd = gains(self.get_parameter("kd").value, n, "kd")
        self.n = n
        self.order = JointOrder(robot.joint_names)
        self.limits = joint_limits(robot)
        self._state_bounds = joint_state_bounds(self.limits, self.state_margin)
        # the bound on a serialized reference (CDR: per point four float64 sequences and a
        # duration, plus names and header), checked before deserializing it
        self._max_bytes = self.max_points * (48 + 32 * n) + (1 << 20)

        # workspace, (n,) unless stated: last good joint state q, qd; reference buffer (3, n)
        # with rows q_r, qd_r, qdd_r; zeros; a 0-d result for the finiteness check
        self._q = np.zeros(n)
        self._qd = np.zeros(n)
        self._q_in = np.zeros(n)  # an arriving joint state in robot order, before its checks
        self._qd_in = np.zeros(n)
        self._refbuf = np.zeros((3, n))
        self._q_r, self._qd_r, self._qdd_r = self._refbuf
        self._zeros = np.zeros(n)
        self._dot = np.zeros(())

        # the outgoing message owns the command buffer; tau is a view of it
        self._msg = Float64MultiArray()
        self._msg.data = array.array("d", bytes(8 * n))
        self._tau = np.frombuffer(self._msg.data, dtype=np.float64)

        # input state; the reference the worker prepared last (_pending, (Reference, t0)) and
        # the one the tick took over (_active): the tick only compares and swaps
        self._state_time = -math.inf
        self._have_state = False
        self._ref = None
        self._ref_time = 0.0
        self._pending = None
        self._active = None
        self._fallback = None  # why a tracking mode is in gravity compensation, or None

        # the control laws: (mode code, controller) swapped whole on a parameter change, and
        # gravity compensation for the fallback
        self.robot = robot
        self._gravity = PDGravity(robot, 0.0, 0.0)
        self._law = self._make_law(self.mode, kp, kd)
        self.kp, self.kd = kp, kd

        # the reference worker: the subscription hands over the serialized message only
        self._slot_cv = threading.Condition()
        self._ref_slot = None
        self._closing = False
        self._worker_ready = threading.Event()
        self._worker = threading.Thread(target=self._reference_worker, daemon=True,
                                        name="robodyn-reference")
        self._worker.start()
        self._worker_ready.wait(timeout=5.0)

        # topics and the trigger
        self.create_subscription(JointState, JOINT_STATES, self._on_joint_state, LATEST_QOS)
        self.create_subscription(JointTrajectory, REFERENCE, self._on_reference, REFERENCE_QOS,
                                 raw=True)
        self._pub = self.create_publisher(Float64MultiArray, COMMANDS, COMMAND_QOS)
        self._timer = None
        if self.trigger == "timer":
            self._timer = self.create_timer(1.0 / self.rate_hz, self._tick,
                                            clock=Clock(clock_type=ClockType.STEADY_TIME))
        waiting = "a reference" if self.mode == "feedforward" else "joint states"
        when = (f"{self.rate_hz:g} Hz" if self.trigger == "timer"
                else "a command per joint state")
        self.get_logger().info(
            f"{robot.name} ({n} joints {robot.joint_names}), mode {self.mode}, {when}; "
            f"waiting for {waiting}")

    def _make_law(self, mode, kp, kd):
        robot = self.robot
        if mode == "computed_torque":
            ctrl = ComputedTorque(robot, kp, kd)
        elif mode == "pd_gravity":
            ctrl = PDGravity(robot, kp, kd)
        elif mode == "feedforward":
            ctrl = Feedforward(robot)
        else:
            ctrl = self._gravity
        return MODES.index(mode), ctrl

    # --- parameters while running ----------------------------------------------------------

    def _on_set_parameters(self, params):
        """Check mode, kp, kd, joint_state_timeout together; apply them all or none."""
        new = {p.name: p.value for p in params}
        try:
            mode = new.get("mode", self.mode)
            if mode not in MODES:
                raise ConfigError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
            timeout = check_number("joint_state_timeout",
                                   new.get("joint_state_timeout", self.timeout), positive=True)
            if self.robot is None:
                for name in ("kp", "kd"):
                    if name in new:
                        g = new[name]
                        gains(g, 1 if np.ndim(g) == 0 else len(g), name)
                law = None
            else:
                kp = gains(new["kp"], self.n, "kp") if "kp" in new else self.kp
                kd = gains(new["kd"], self.n, "kd") if "kd" in new else self.kd
                law = self._make_law(mode, kp, kd) if (
                    {"mode", "kp", "kd"} & new.keys()) else None
        except (ConfigError, TypeError, ValueError) as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        # apply: the tick reads self._law once per call, so it sees the old or the new law whole
        self.timeout = timeout
        if law is not None:
            self.kp, self.kd = kp, kd
            self._law = law
        if mode != self.mode:
            self.get_logger().info(f"mode {self.mode} -> {mode}")
            self.mode = mode
        return SetParametersResult(successful=True)

    # --- inputs -------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState):
        if self.robot is None:
            return
        n = self.n
        try:
            perm = self.order.permutation(msg.name)
            q = vector(msg.position, n, "position")
            if len(msg.velocity) == 0 and self._law[0] in (_COMPUTED_TORQUE, _PD_GRAVITY):
                raise ValueError(f"no velocities ({self.mode} needs them)")
            qd = vector(msg.velocity, n, "velocity") if len(msg.velocity) else None
            if len(msg.effort) not in (0, n):
                raise ValueError(f"effort: {len(msg.effort)} values for {n} joints")
            np.take(q, perm, out=self._q_in)
            if qd is None:
                self._qd_in.fill(0.0)
            else:
                np.take(qd, perm, out=self._qd_in)
            check_joint_state(self._q_in, self._qd_in, self._state_bounds, self.order.names)
        except Exception as exc:  # whatever is wrong with a message, the node carries on
            self.rejected["joint_states"] += 1
            self.get_logger().warning(
                f"rejected a joint_states message ({exc}); keeping the last good state",
                throttle_duration_sec=LOG_THROTTLE)
            return
        # accept: store in robot order
        self._q[:] = self._q_in
        self._qd[:] = self._qd_in
        self._state_time = time.monotonic()
        self._have_state = True
        if self._timer is None:
            self._tick()

    def _on_reference(self, data: bytes):
        """Hand the serialized reference to the worker (a newer one replaces a waiting one)."""
        with self._slot_cv:
            if self._ref_slot is not None:
                self.superseded += 1
            self._ref_slot = data
            self._slot_cv.notify()

    def _reference_worker(self):
        self.worker_tid = threading.get_native_id()
        self._worker_ready.set()
        normal_scheduling()
        while True:
            with self._slot_cv:
                while self._ref_slot is None and not self._closing:
                    self._slot_cv.wait()
                if self._closing:
                    return
                data, self._ref_slot = self._ref_slot, None
            try:
                self._pending = self.prepare_reference(data)
            except Exception as exc:  # whatever is wrong with a message, the node carries on
                self.rejected["reference"] += 1
                self.get_logger().warning(
                    f"rejected a reference trajectory ({exc}); keeping the last good reference",
                    throttle_duration_sec=LOG_THROTTLE)

    def prepare_reference(self, data):
        """``(Reference, t0)`` from a serialized JointTrajectory (bytes) or a message: size
        cap, deserialization, checks, interpolation set-up. Raises ValueError. The
        reference's time 0 is ``t0`` (monotonic), taken once the points are read."""
        if isinstance(data, (bytes, bytearray)):
            if len(data) > self._max_bytes:
                raise ValueError(f"a {len(data)}-byte message, larger than max_points = "
                                 f"{self.max_points} points can be")
            T, P, V, A = serialized_trajectory_points(data, self.order, self.max_points)
        else:
            T, P, V, A = trajectory_points(data, self.order, self.max_points)
        check_points(P, V, self.limits, self.order.names)
        t0 = time.monotonic()
        ref = reference_from_points(T, P, V, A, start=self._start_state(t0))
        check_reference(ref, self.limits, self.order.names)
        self.get_logger().debug(f"new reference: {len(ref.knots)} points, {ref.duration:g} s")
        return ref, t0

    def _start_state(self, now):
        """Where a trajectory whose first point is later than t = 0 starts: the latest good
        reference, else the measured position at rest, else None (the first point held)."""
        pending = self._pending
        if pending is not None:
            ref, t0 = pending
            return ref.at(now - t0)
        if self._have_state:
            return self._q.copy(), np.zeros(self.n), np.zeros(self.n)
        return None

    # --- the control tick ---------------------------------------------------------------

    def _tick(self):
        start = time.monotonic()
        pending = self._pending
        if pending is not self._active:
            self._active = pending
            self._ref, self._ref_time = pending
        mode, ctrl = self._law
        tau = self._tau
        try:
            if mode == _FEEDFORWARD:
                # inverse dynamics along the reference
                if self._ref is None:
                    return
                self._ref(start - self._ref_time, self._refbuf)
                ctrl.step(start, self._q_r, self._qd_r, self._q_r, self._qd_r, self._qdd_r, tau)
            else:
                if not self._have_state:
                    return
                if start - self._state_time > self.timeout:
                    fallback = "joint states stale"
                elif mode != _GRAVITY and self._ref is None:
                    fallback = "no reference yet"
                else:
                    fallback = None
                if fallback != self._fallback:
                    self._log_switch(fallback)
                if mode != _GRAVITY and fallback is None:
                    # the feedback law about the reference now
                    self._ref(start - self._ref_time, self._refbuf)
                    ctrl.step(start, self._q, self._qd, self._q_r, self._qd_r, self._qdd_r, tau)
                else:
                    self._gravity.step(start, self._q, self._qd, self._q, self._zeros,
                                       self._zeros, tau)
            # never publish NaN or inf (huge but finite inputs can overflow): tau . 0 is NaN
            # iff an entry is NaN or inf (one call, into a 0-d buffer)
            np.dot(tau, self._zeros, out=self._dot)
            if not math.isfinite(self._dot):
                raise ValueError(f"non-finite torque {tau.tolist()}")
        except ValueError as exc:
            self.get_logger().error(f"no command this tick: {exc}",
                                    throttle_duration_sec=LOG_THROTTLE)
            return
        computed = time.monotonic()
        try:
            self._pub.publish(self._msg)
        except Exception as exc:  # a middleware error must not stop the control loop
            self.get_logger().error(f"publishing the command failed: {exc}",
                                    throttle_duration_sec=LOG_THROTTLE)
            return
        slot = self._slot = self._next_slot[self._slot]
        if slot == 0:
            self._wraps += 1
        self._compute[slot] = computed - start
        self._publish[slot] = time.monotonic() - computed
        self._stamp[slot] = start

    def _log_switch(self, fallback):
        if fallback is None:
            self.get_logger().info(f"{self.mode} resumed" if self._law[0] != _GRAVITY
                                   else "joint states fresh again")
        elif fallback == "joint states stale":
            self.get_logger().warning(
                f"no joint state for more than {self.timeout:g} s: gravity compensation at the "
                "last good position")
        else:
            self.get_logger().info(f"{fallback}: gravity compensation")
        self._fallback = fallback

    @property
    def published(self) -> int:
        """Commands published so far."""
        return (self._wraps - 1) * _STATS + self._slot + 1 if self._wraps else 0

    def summary(self) -> str:
        """One line: commands published, compute and publish time per tick (us, over the last
        65536 ticks), rejected messages."""
        k = min(self.published, _STATS)

        def pct(x):
            if not k:
                return "p50=nan p99=nan max=nan"
            us = 1e6 * x[:k]
            return (f"p50={np.percentile(us, 50):.1f} p99={np.percentile(us, 99):.1f} "
                    f"max={us.max():.1f}")

        timing = ""
        if self._timer is not None and k > 1:
            # ticks that published over the last k, against the periods of that span
            stamps = np.sort(self._stamp[:k])
            periods = np.diff(stamps) * 1e3
            span = (stamps[-1] - stamps[0]) * self.rate_hz + 1.0
            timing = (f" periods_ms p50={np.percentile(periods, 50):.3f} "
                      f"p99={np.percentile(periods, 99):.3f} max={periods.max():.3f} "
                      f"delivered={100.0 * k / span:.2f}%")
        return (f"summary: published={self.published}{timing} compute_us {pct(self._compute)} "
                f"publish_us {pct(self._publish)} rejected joint_states="
                f"{self.rejected['joint_states']} reference={self.rejected['reference']} "
                f"superseded references={self.superseded}")

    def destroy_node(self):
        if self._worker is not None:
            with self._slot_cv:
                self._closing = True
                self._slot_cv.notify()
            self._worker.join(timeout=2.0)
        return super().destroy_node()


def main(args=None):
    """robodyn-ros2 in this process: run the node, return the exit status."""
    return run(ControllerNode, args, prog="robodyn-ros2",
               params="robot | robot_description (neither: the robot_description topic), mode "
                      f"({', '.join(MODES)}), trigger ({', '.join(TRIGGERS)}), rate_hz, kp, kd, "
                      "joint_state_timeout, max_points, executor "
                      f"({', '.join(EXECUTORS)}), realtime_priority, duration")


def cli():
    """The ``robodyn-ros2`` console script."""
    exit_process(main())


if __name__ == "__main__":
    cli()

