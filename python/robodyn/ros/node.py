"""robodyn-ros2: a joint-torque controller node on robodyn's dynamics (see docs/ros.md).

    robodyn-ros2 --ros-args -p robot:=intelledex_605 -p mode:=computed_torque -p rate_hz:=500.0
    python -m robodyn.ros.node --ros-args -p robot:=stanford_arm

Subscribes to ``joint_states`` (sensor_msgs/JointState) and ``robodyn/reference``
(trajectory_msgs/JointTrajectory), publishes ``effort_controller/commands``
(std_msgs/Float64MultiArray, one torque or force per joint in ``robot.joint_names`` order) on a
steady (wall-clock) timer at ``rate_hz``. Names are relative, so they resolve to
``/joint_states``, ... in the root namespace and follow a ``__ns`` remap.

Modes, with ``(q, qd)`` the last good joint state and ``(q_r, qd_r, qdd_r)`` the reference now:

- ``feedforward``:          ``tau = inverse_dynamics(q_r, qd_r, qdd_r)``
- ``computed_torque``:      ``tau = inverse_dynamics(q, qd, qdd_r + kp (q_r - q) + kd (qd_r - qd))``
- ``gravity_compensation``: ``tau = gravity_torques(q)``

``tau`` is clipped to ``+-robot.effort_limits`` (a non-positive or infinite limit is no limit).
A message with unknown, missing or duplicate joint names, wrong lengths or non-finite values is
rejected with a throttled warning and the last good input is kept. In the feedback modes a joint
state older than ``joint_state_timeout`` gives gravity compensation at the last good ``q`` (in
``computed_torque`` also while no reference has arrived), logged on every switch. Nothing is
published until the inputs the mode needs have arrived. SIGINT and SIGTERM stop the node
cleanly (exit status 0).

The tick allocates no arrays: the reference is one (3, 6) x (6, n) product into a preallocated
buffer, then one robodyn call writes straight into the outgoing message's buffer, the clip to the
effort limits and a finiteness check, one publish.
"""

from __future__ import annotations

import array
import bisect
import math
import os
import signal
import sys
import time

import numpy as np
import rclpy
import rclpy.logging
import rclpy.task
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

import robodyn

__all__ = ["ControllerNode", "ConfigError", "JointOrder", "Reference", "load_robot",
           "reference_from_points", "segment_coefficients", "parse_trajectory",
           "trajectory_message", "run", "main", "MODES", "JOINT_STATES", "REFERENCE", "COMMANDS"]

MODES = ("feedforward", "computed_torque", "gravity_compensation")
JOINT_STATES = "joint_states"
REFERENCE = "robodyn/reference"
COMMANDS = "effort_controller/commands"

# largest trajectory accepted (points), and the throttle of rejection warnings (s)
MAX_POINTS = 100_000
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


class ConfigError(ValueError):
    """A parameter the node cannot start with."""


def load_robot(robot: str = "", robot_description: str = ""):
    """The robodyn.Robot named by exactly one of ``robot`` (a bundled name or a URDF path) and
    ``robot_description`` (URDF text). Raises ConfigError otherwise."""
    robot, text = robot.strip(), robot_description.strip()
    if bool(robot) == bool(text):
        raise ConfigError("set exactly one of the parameters 'robot' (bundled name or URDF "
                          f"path; bundled: {', '.join(robodyn.robots.available())}) and "
                          "'robot_description' (URDF text)")
    try:
        if text:
            return robodyn.load_urdf(text)
        if robot in robodyn.robots.available():
            return robodyn.robots.load(robot)
        if os.path.isfile(robot):
            return robodyn.load_urdf(robot)
    except Exception as exc:  # any loader error is a configuration error here
        raise ConfigError(f"cannot load the robot: {type(exc).__name__}: {exc}") from None
    raise ConfigError(f"robot: {robot!r} is neither a bundled robot "
                      f"({', '.join(robodyn.robots.available())}) nor a URDF file")


def gains(value, n: int, name: str) -> np.ndarray:
    """A gain parameter (a number or n numbers, finite and >= 0) as an (n,) array."""
    try:
        g = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a number or {n} numbers, got {value!r}") from None
    if g.ndim == 0:
        g = np.full(n, float(g))
    if g.shape != (n,) or not np.all(np.isfinite(g)) or np.any(g < 0.0):
        raise ConfigError(f"{name}: expected a finite, non-negative number or {n} of them, "
                          f"got {value!r}")
    return g


class JointOrder:
    """Maps the joint names of a message onto the robot's joint order.

    ``permutation(names)`` gives ``perm`` with robot joint ``j`` at message index ``perm[j]``,
    so ``values[perm]`` is in robot order. Raises ValueError for duplicate, unknown or missing
    names. The last mapping is cached: a stream of messages with the same names costs one
    tuple comparison.
    """

    def __init__(self, joint_names):
        self.names = list(joint_names)
        self._index = {name: j for j, name in enumerate(self.names)}
        self._key = None
        self._perm = None

    def permutation(self, names) -> np.ndarray:
        key = tuple(names)
        if key == self._key:
            return self._perm
        if len(set(key)) != len(key):
            dup = sorted({x for x in key if key.count(x) > 1})
            raise ValueError(f"duplicate joint names {dup}")
        unknown = [x for x in key if x not in self._index]
        if unknown:
            raise ValueError(f"unknown joint names {unknown} (the robot has {self.names})")
        missing = [x for x in self.names if x not in key]
        if missing:
            raise ValueError(f"missing joint names {missing}")
        perm = np.empty(len(self.names), dtype=np.intp)
        for i, name in enumerate(key):
            perm[self._index[name]] = i
        self._key, self._perm = key, perm
        return perm


def vector(values, n: int, what: str) -> np.ndarray:
    """``values`` (an array.array of doubles or a sequence) as n finite float64 numbers.

    A view, not a copy, for an array.array('d') (what rclpy gives for float64[] fields).
    """
    if len(values) != n:
        raise ValueError(f"{what}: {len(values)} values for {n} joints")
    if isinstance(values, array.array) and values.typecode == "d":
        a = np.frombuffer(values, dtype=np.float64)
    else:
        try:
            a = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: expected numbers") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: non-finite value (NaN or inf)")
    return a


class Reference:
    """A joint reference ``ref(t, out)`` -> ``out`` = rows (q, qd, qdd), piecewise polynomial.

    ``knots`` are m increasing times (s); ``segments`` is a list of m - 1 (6, n) coefficient
    arrays, segment k being ``q(t) = sum_i c[i] s^i`` with ``s = t - knots[k]`` on
    ``[knots[k], knots[k+1])``. Before ``knots[0]`` the (6, n) polynomial ``first`` and after
    ``knots[-1]`` the polynomial ``last`` are evaluated at s = 0 (held: ``c[0]`` is q,
    ``c[1]`` qd and ``2 c[2]`` qdd).

    A call does one bisection, the (3, 6) basis at s (two ufuncs) and one (3, 6) x (6, n)
    product into ``out`` (a C-contiguous (3, n) float64 buffer); it allocates no arrays.
    """

    def __init__(self, knots, segments, first, last):
        self.knots = [float(t) for t in knots]
        self.segments = list(segments)
        self.first = first
        self.last = last
        if len(self.segments) != len(self.knots) - 1:
            raise ValueError("Reference: need one segment between consecutive knots")
        self.duration = self.knots[-1]
        # basis row r = d^r/ds^r of (1, s, ..., s^5) = K[r, i] s^E[r, i]: falling factorials K
        # (zero for i < r) and exponents E = max(i - r, 0); b is the (3, 6) basis at s
        i = np.arange(6)
        self._E = np.maximum(i - np.arange(3)[:, None], 0).astype(np.float64)
        self._K = np.array([[math.perm(k, r) for k in i] for r in range(3)], dtype=np.float64)
        self._basis = np.zeros((3, 6))
        self._s = np.zeros(())  # s as a 0-d array: no scalar conversion in the call

    def __call__(self, t: float, out: np.ndarray) -> np.ndarray:
        knots = self.knots
        # pick the polynomial and the local time
        if t < knots[0]:
            c, s = self.first, 0.0
        else:
            k = bisect.bisect_right(knots, t) - 1
            if k < len(self.segments):
                c, s = self.segments[k], t - knots[k]
            else:
                c, s = self.last, 0.0
        # basis rows at s, then (q, qd, qdd) = basis @ c
        b = self._basis
        self._s[()] = s
        np.power(self._s, self._E, out=b)
        np.multiply(b, self._K, out=b)
        np.dot(b, c, out=out)
        return out


def _held(q, qd=None, qdd=None) -> np.ndarray:
    """(6, n) polynomial whose value at s = 0 is (q, qd, qdd) (missing ones zero)."""
    c = np.zeros((6, len(q)))
    c[0] = q
    if qd is not None:
        c[1] = qd
    if qdd is not None:
        c[2] = 0.5 * np.asarray(qdd)
    return c


def segment_coefficients(times, P, V=None, A=None) -> np.ndarray:
    """(m - 1, 6, n) coefficients of the polynomials through points P (m, n) at ``times``.

    Positions only: linear; with velocities V: cubic Hermite; with accelerations A too:
    quintic Hermite (position, velocity and acceleration continuous at every point). This is
    the interpolation of ros2_control's joint_trajectory_controller.
    """
    T = np.asarray(times, dtype=np.float64)
    h = np.diff(T)[:, None]
    p0, p1 = P[:-1], P[1:]
    dp = p1 - p0
    C = np.zeros((len(T) - 1, 6, P.shape[1]))
    C[:, 0] = p0
    if V is None:
        C[:, 1] = dp / h
        return C
    v0, v1 = V[:-1], V[1:]
    C[:, 1] = v0
    if A is None:
        C[:, 2] = (3.0 * dp / h - 2.0 * v0 - v1) / h
        C[:, 3] = (-2.0 * dp / h + v0 + v1) / h**2
        return C
    a0, a1 = A[:-1], A[1:]
    C[:, 2] = 0.5 * a0
    C[:, 3] = (20.0 * dp - (8.0 * v1 + 12.0 * v0) * h - (3.0 * a0 - a1) * h**2) / (2.0 * h**3)
    C[:, 4] = (-30.0 * dp + (14.0 * v1 + 16.0 * v0) * h + (3.0 * a0 - 2.0 * a1) * h**2) / (
        2.0 * h**4)
    C[:, 5] = (12.0 * dp - 6.0 * (v1 + v0) * h - (a0 - a1) * h**2) / (2.0 * h**5)
    return C


def reference_from_points(times, P, V=None, A=None, start=None) -> Reference:
    """The Reference through points P (m, n) (V, A optional (m, n)) at ``times`` (m,).

    One point is held as given (velocity and acceleration zero if omitted). Several points
    are interpolated (:func:`segment_coefficients`); if the first time is positive and
    ``start`` = (q, qd, qdd) is given, the reference starts there at t = 0, otherwise the
    first position is held until the first time. After the last time its position is held
    at rest.
    """
    T = np.asarray(times, dtype=np.float64)
    if len(T) == 1:
        held = _held(P[0], None if V is None else V[0], None if A is None else A[0])
        return Reference(T, [], held, held)
    if T[0] > 0.0 and start is not None:
        q0, qd0, qdd0 = start
        T = np.concatenate(([0.0], T))
        P = np.vstack((q0, P))
        V = None if V is None else np.vstack((qd0, V))
        A = None if A is None else np.vstack((qdd0, A))
    C = segment_coefficients(T, P, V, A)
    if not np.all(np.isfinite(C)):
        raise ValueError("points too close in time (the interpolating polynomial overflows)")
    return Reference(T, C, _held(P[0]), _held(P[-1]))


def _seconds(duration) -> float:
    return duration.sec + 1e-9 * duration.nanosec


def parse_trajectory(msg, order: JointOrder, start=None) -> Reference:
    """A Reference from a trajectory_msgs/JointTrajectory, joints matched by name.

    Raises ValueError naming the problem: bad joint names, no points (or more than
    MAX_POINTS), a point whose positions, velocities, accelerations or effort have a wrong
    length (velocities and accelerations must be given for all points or none; accelerations
    need velocities), non-finite values, negative or non-increasing times.
    """
    n = len(order.names)
    perm = order.permutation(msg.joint_names)
    points = msg.points
    m = len(points)
    if m == 0:
        raise ValueError("no points")
    if m > MAX_POINTS:
        raise ValueError(f"{m} points, more than the {MAX_POINTS} accepted")
    has_v = len(points[0].velocities) > 0
    has_a = len(points[0].accelerations) > 0
    if has_a and not has_v:
        raise ValueError("accelerations without velocities")
    T = np.empty(m)
    P = np.empty((m, n))
    V = np.empty((m, n)) if has_v else None
    A = np.empty((m, n)) if has_a else None
    # gather the points, checking lengths and values
    for i, pt in enumerate(points):
        P[i] = vector(pt.positions, n, f"point {i} positions")
        if has_v:
            V[i] = vector(pt.velocities, n, f"point {i} velocities")
        elif len(pt.velocities):
            raise ValueError(f"point {i}: velocities given, but not for point 0")
        if has_a:
            A[i] = vector(pt.accelerations, n, f"point {i} accelerations")
        elif len(pt.accelerations):
            raise ValueError(f"point {i}: accelerations given, but not for point 0")
        if len(pt.effort) not in (0, n):
            raise ValueError(f"point {i} effort: {len(pt.effort)} values for {n} joints")
        T[i] = _seconds(pt.time_from_start)
    if T[0] < 0.0 or np.any(np.diff(T) <= 0.0):
        raise ValueError(f"times from start must be >= 0 and increasing, got {T[:5]}...")
    # message order -> robot order
    P = P[:, perm]
    V = None if V is None else V[:, perm]
    A = None if A is None else A[:, perm]
    return reference_from_points(T, P, V, A, start=start)


def trajectory_message(joint_names, times, positions, velocities=None, accelerations=None):
    """A trajectory_msgs/JointTrajectory with points at ``times`` (s, from the moment it
    arrives) and (m, n) ``positions`` (``velocities``, ``accelerations`` optional), columns in
    ``joint_names`` order: what robodyn-ros2 takes on ``robodyn/reference``."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectoryPoint

    P = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    V = None if velocities is None else np.atleast_2d(np.asarray(velocities, dtype=np.float64))
    A = None if accelerations is None else np.atleast_2d(
        np.asarray(accelerations, dtype=np.float64))
    msg = JointTrajectory()
    msg.joint_names = list(joint_names)
    for i, t in enumerate(np.atleast_1d(np.asarray(times, dtype=np.float64))):
        pt = JointTrajectoryPoint()
        pt.positions = array.array("d", P[i].tobytes())
        if V is not None:
            pt.velocities = array.array("d", V[i].tobytes())
        if A is not None:
            pt.accelerations = array.array("d", A[i].tobytes())
        ns = int(round(float(t) * 1e9))
        pt.time_from_start = Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
        msg.points.append(pt)
    return msg


def _descriptor(text, dynamic=False):
    return ParameterDescriptor(description=text, read_only=True, dynamic_typing=dynamic)


def declare_robot_parameters(node: Node) -> "robodyn.Robot":
    """Declare ``robot`` and ``robot_description`` and load the robot they name."""
    node.declare_parameter("robot", "", _descriptor(
        "bundled robot name (intelledex_605, stanford_arm) or URDF path"))
    node.declare_parameter("robot_description", "", _descriptor("URDF text"))
    return load_robot(node.get_parameter("robot").value,
                      node.get_parameter("robot_description").value)


def number_parameter(node: Node, name: str, default: float, text: str, *, positive=False):
    """Declare a float parameter that also accepts an integer; return it checked."""
    node.declare_parameter(name, default, _descriptor(text, dynamic=True))
    value = node.get_parameter(name).value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name}: expected a number, got {value!r}")
    if value < 0.0 or (positive and value == 0.0):
        raise ConfigError(f"{name}: expected a {'positive' if positive else 'non-negative'} "
                          f"number, got {value!r}")
    return float(value)


def effort_bounds(robot):
    """(-limit, +limit) arrays for the clip, or None if no joint has a limit."""
    lim = np.asarray(robot.effort_limits, dtype=np.float64).copy()
    lim[~(lim > 0.0) | ~np.isfinite(lim)] = np.inf
    if not np.any(np.isfinite(lim)):
        return None
    return -lim, lim


class ControllerNode(Node):
    """The robodyn-ros2 node (parameters and behaviour: module docstring and docs/ros.md)."""

    def __init__(self, **kwargs):
        super().__init__("robodyn_controller", **kwargs)
        robot = self.robot = declare_robot_parameters(self)
        n = self.n = robot.n
        self.rate_hz = number_parameter(self, "rate_hz", 1000.0, "command rate (Hz)",
                                        positive=True)
        self.declare_parameter("mode", "gravity_compensation", _descriptor(
            "feedforward | computed_torque | gravity_compensation"))
        self.mode = self.get_parameter("mode").value
        if self.mode not in MODES:
            raise ConfigError(f"mode: expected one of {', '.join(MODES)}, got {self.mode!r}")
        for name, default in (("kp", robodyn.control.COMPUTED_TORQUE_KP),
                              ("kd", robodyn.control.COMPUTED_TORQUE_KD)):
            self.declare_parameter(name, default, _descriptor(
                f"computed-torque gain {name} (1/s^2 for kp, 1/s for kd): a number or one "
                "per joint", dynamic=True))
        self.kp = gains(self.get_parameter("kp").value, n, "kp")
        self.kd = gains(self.get_parameter("kd").value, n, "kd")
        self.timeout = number_parameter(
            self, "joint_state_timeout", 0.1,
            "joint states older than this (s) are stale: gravity compensation", positive=True)
        self.duration = number_parameter(self, "duration", 0.0,
                                         "stop after this many seconds (0: run until signalled)")
        self.order = JointOrder(robot.joint_names)

        # workspace, (n,) unless stated: last good joint state q, qd; reference buffer (3, n)
        # with rows q_r, qd_r, qdd_r (and one for where a new reference starts); commanded
        # acceleration and its kd term; zeros and a 0-d result for the finiteness check
        self._q = np.zeros(n)
        self._qd = np.zeros(n)
        self._refbuf = np.zeros((3, n))
        self._q_r, self._qd_r, self._qdd_r = self._refbuf
        self._startbuf = np.zeros((3, n))
        self._acc = np.zeros(n)
        self._tmp = np.zeros(n)
        self._zeros = np.zeros(n)
        self._dot = np.zeros(())
        self._bounds = effort_bounds(robot)
        self._id = robot.inverse_dynamics
        self._gravity = robot.gravity_torques

        # the outgoing message owns the command buffer; tau is a view of it
        self._msg = Float64MultiArray()
        self._msg.data = array.array("d", bytes(8 * n))
        self._tau = np.frombuffer(self._msg.data, dtype=np.float64)

        # input state
        self._state_time = -math.inf
        self._have_state = False
        self._ref = None
        self._ref_time = 0.0
        self._fallback = None  # why computed_torque is in gravity compensation, or None

        # statistics: rejected messages; compute time (s) of the last _STATS published ticks
        # in a ring whose next slot is looked up in a list of existing int objects (a counter
        # would allocate a new int every tick), _wraps counting the passes over slot 0
        self.rejected = {"joint_states": 0, "reference": 0}
        self._compute = np.zeros(_STATS)
        self._publish = np.zeros(_STATS)
        self._next_slot = list(range(1, _STATS)) + [0]
        self._slot = _STATS - 1
        self._wraps = 0

        # topics and the timer
        feedback = self.mode != "feedforward"
        if feedback:
            self.create_subscription(JointState, JOINT_STATES, self._on_joint_state,
                                     LATEST_QOS)
        if self.mode != "gravity_compensation":
            self.create_subscription(JointTrajectory, REFERENCE, self._on_reference,
                                     REFERENCE_QOS)
        self._pub = self.create_publisher(Float64MultiArray, COMMANDS, COMMAND_QOS)
        self._timer = self.create_timer(1.0 / self.rate_hz, self._tick,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._mode_code = MODES.index(self.mode)
        waiting = {"feedforward": "a reference", "computed_torque": "joint states",
                   "gravity_compensation": "joint states"}[self.mode]
        self.get_logger().info(
            f"{robot.name} ({n} joints {robot.joint_names}), mode {self.mode}, "
            f"{self.rate_hz:g} Hz; waiting for {waiting}")

    # --- inputs -------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState):
        n = self.n
        try:
            perm = self.order.permutation(msg.name)
            q = vector(msg.position, n, "position")
            if len(msg.velocity) == 0 and self._mode_code == 1:
                raise ValueError("no velocities (computed_torque needs them)")
            qd = vector(msg.velocity, n, "velocity") if len(msg.velocity) else None
            if len(msg.effort) not in (0, n):
                raise ValueError(f"effort: {len(msg.effort)} values for {n} joints")
        except Exception as exc:  # whatever is wrong with a message, the node carries on
            self.rejected["joint_states"] += 1
            self.get_logger().warning(
                f"rejected a joint_states message ({exc}); keeping the last good state",
                throttle_duration_sec=LOG_THROTTLE)
            return
        # accept: store in robot order
        np.take(q, perm, out=self._q)
        if qd is None:
            self._qd.fill(0.0)
        else:
            np.take(qd, perm, out=self._qd)
        self._state_time = time.monotonic()
        self._have_state = True

    def _on_reference(self, msg: JointTrajectory):
        now = time.monotonic()
        try:
            ref = parse_trajectory(msg, self.order, start=self._start_state(now))
        except Exception as exc:  # whatever is wrong with a message, the node carries on
            self.rejected["reference"] += 1
            self.get_logger().warning(
                f"rejected a reference trajectory ({exc}); keeping the last good reference",
                throttle_duration_sec=LOG_THROTTLE)
            return
        self._ref, self._ref_time = ref, now
        self.get_logger().debug(f"new reference: {len(ref.knots)} points, {ref.duration:g} s")

    def _start_state(self, now):
        """Where a trajectory whose first point is later than t = 0 starts: the current
        reference, else the measured position at rest, else None."""
        if self._ref is not None:
            return self._ref(now - self._ref_time, self._startbuf)
        if self._have_state:
            return self._q, np.zeros(self.n), np.zeros(self.n)
        return None

    # --- the control tick ---------------------------------------------------------------

    def _tick(self):
        start = time.monotonic()
        tau = self._tau
        mode = self._mode_code
        try:
            if mode == 0:
                # feedforward: inverse dynamics along the reference
                if self._ref is None:
                    return
                self._ref(start - self._ref_time, self._refbuf)
                self._id(self._q_r, self._qd_r, self._qdd_r, out=tau)
            else:
                if not self._have_state:
                    return
                if start - self._state_time > self.timeout:
                    fallback = "joint states stale"
                elif mode == 1 and self._ref is None:
                    fallback = "no reference yet"
                else:
                    fallback = None
                if fallback != self._fallback:
                    self._log_switch(fallback)
                if mode == 1 and fallback is None:
                    # computed torque: qdd_r + kp (q_r - q) + kd (qd_r - qd), one ID call
                    self._ref(start - self._ref_time, self._refbuf)
                    acc, tmp = self._acc, self._tmp
                    np.subtract(self._q_r, self._q, out=acc)
                    np.multiply(acc, self.kp, out=acc)
                    np.subtract(self._qd_r, self._qd, out=tmp)
                    np.multiply(tmp, self.kd, out=tmp)
                    np.add(acc, tmp, out=acc)
                    np.add(acc, self._qdd_r, out=acc)
                    self._id(self._q, self._qd, acc, out=tau)
                else:
                    self._gravity(self._q, out=tau)
            # saturate; never publish NaN or inf (huge but finite inputs can overflow)
            if self._bounds is not None:
                np.maximum(tau, self._bounds[0], out=tau)
                np.minimum(tau, self._bounds[1], out=tau)
            # tau . 0 is NaN iff an entry is NaN or inf (one call, into a 0-d buffer)
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

    def _log_switch(self, fallback):
        if fallback is None:
            self.get_logger().info("computed torque resumed" if self._mode_code == 1
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

        return (f"summary: published={self.published} compute_us {pct(self._compute)} "
                f"publish_us {pct(self._publish)} rejected joint_states="
                f"{self.rejected['joint_states']} reference={self.rejected['reference']}")


# --- process entry point --------------------------------------------------------------------


def _executor(context=None):
    """rclpy's C++ EventsExecutor where available (lower overhead, steadier timers)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


USAGE = """usage: {prog} --ros-args -p robot:=NAME_OR_URDF_PATH [-p NAME:=VALUE ...]

parameters: {params}
See docs/ros.md."""


def run(node_factory, args=None, prog="robodyn-ros2", params=""):
    """Run one node until SIGINT / SIGTERM (or its ``duration``); return the exit status.

    0 after a clean stop, 2 for bad arguments or parameters (logged).
    """
    argv = list(sys.argv if args is None else args)
    plain = remove_ros_args(argv)[1:]
    if "-h" in plain or "--help" in plain:
        print(USAGE.format(prog=prog, params=params))
        return 0
    if plain:
        print(f"{prog}: unexpected arguments {plain}; parameters go after --ros-args "
              f"(-p name:=value)", file=sys.stderr)
        return 2
    # SIGINT / SIGTERM complete `stop`, which ends the spin between two callbacks (rclpy's own
    # handlers would shut the context down under a running callback)
    stop = rclpy.task.Future()

    def request_stop(signum, frame):
        if not stop.done():
            stop.set_result(signum)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    # the tick's finiteness check computes tau . 0, NaN by design for a bad command
    np.seterr(invalid="ignore")
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    try:
        try:
            node = node_factory()
        except ConfigError as exc:
            rclpy.logging.get_logger(prog).error(str(exc))
            return 2
        executor = _executor()
        executor.add_node(node)
        executor.spin_until_future_complete(
            stop, timeout_sec=node.duration if node.duration > 0.0 else None)
        node.get_logger().info(node.summary())
        return 0
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(args=None):
    return run(ControllerNode, args, prog="robodyn-ros2",
               params="robot | robot_description, mode (feedforward, computed_torque, "
                      "gravity_compensation), rate_hz, kp, kd, joint_state_timeout, duration")


if __name__ == "__main__":
    sys.exit(main())
