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
import bisect
import math
import os
import signal
import sys
import threading
import time

import numpy as np
import rclpy
import rclpy.logging
import rclpy.task
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from robodyn import control
from robodyn.control import ComputedTorque, Feedforward, PDGravity, trajectories
from robodyn.io import load_urdf, robots

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

# default cap on the points of a reference (parameter max_points), the throttle of rejection
# warnings (s), the longest wait of the main thread in the executor before it looks for a
# signal (s), and the GIL switch interval of a node process (s): the reference worker hands
# the interpreter to the control callback within this time
MAX_POINTS = 100_000
# default of joint_state_margin: how far past a limit a measured joint state may be (a
# fraction of the joint's range, or of its velocity limit)
STATE_MARGIN = 0.1
LOG_THROTTLE = 1.0
SPIN_SLICE = 0.02
SWITCH_INTERVAL = 2e-4
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


class ConfigError(ValueError):
    """A parameter the node cannot start with."""


def load_robot(robot: str = "", robot_description: str = "", xacro_env: bool = False):
    """The robodyn.Robot named by exactly one of ``robot`` (a bundled name or a URDF path) and
    ``robot_description`` (URDF text). Raises ConfigError otherwise. ``xacro_env``: a
    ``.xacro`` path may read environment variables and ROS package paths."""
    robot, text = robot.strip(), robot_description.strip()
    if bool(robot) == bool(text):
        raise ConfigError("set exactly one of the parameters 'robot' (bundled name or URDF "
                          f"path; bundled: {', '.join(robots.available())}) and "
                          "'robot_description' (URDF text), or neither to take the URDF from "
                          "the robot_description topic")
    try:
        if text:
            loaded = load_urdf(text)
        elif robot in robots.available():
            loaded = robots.load(robot)
        elif os.path.isfile(robot):
            loaded = load_urdf(robot, xacro_env=bool(xacro_env)
                                       and robot.endswith(".xacro"))
        else:
            loaded = None
    except Exception as exc:  # any loader error is a configuration error here
        raise ConfigError(f"cannot load the robot: {type(exc).__name__}: {exc}") from None
    if loaded is None:
        raise ConfigError(f"robot: {robot!r} is neither a bundled robot "
                          f"({', '.join(robots.available())}) nor a URDF file")
    if getattr(loaded, "nq", loaded.n) != loaded.n:
        raise ConfigError(f"robot: {loaded.name} has a floating base; the nodes command joint "
                          "torques of fixed-base arms")
    return loaded


def gains(value, n: int, name: str) -> np.ndarray:
    """A gain parameter (a number or n numbers, finite and >= 0) as an (n,) array."""
    if isinstance(value, (bool, str, bytes)):
        raise ConfigError(f"{name}: expected a number or {n} numbers, got {value!r}")
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


def joint_limits(robot):
    """``(lower, upper, velocity)`` (n,) arrays for the reference checks: a joint whose lower
    limit is not below its upper one has no position limit (-inf, inf), and a non-positive or
    infinite velocity limit is no limit (inf)."""
    lower, upper = (np.asarray(x, dtype=np.float64).copy() for x in robot.position_limits)
    free = ~(lower < upper)
    lower[free], upper[free] = -np.inf, np.inf
    vmax = np.asarray(robot.velocity_limits, dtype=np.float64).copy()
    vmax[~(vmax > 0.0) | ~np.isfinite(vmax)] = np.inf
    return lower, upper, vmax


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
        # one view per segment (the call picks one without allocating), made a few thousand
        # at a time: one list() of 100 000 views would hold the interpreter for tens of ms
        self.segments = []
        for a in range(0, len(segments), 4096):
            self.segments.extend(list(segments[a:a + 4096]))
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

    def at(self, t: float) -> np.ndarray:
        """A new (3, n) array (q, qd, qdd) at ``t``: the same value as ``ref(t, out)``, safe to
        call from another thread than the one calling ``ref(t, out)`` (no shared buffer)."""
        out = np.empty((3, self.first.shape[1]))
        knots = self.knots
        if t < knots[0]:
            c, s = self.first, 0.0
        else:
            k = bisect.bisect_right(knots, t) - 1
            c, s = (self.segments[k], t - knots[k]) if k < len(self.segments) else (self.last,
                                                                                     0.0)
        b = np.power(np.array(s), self._E) * self._K
        return np.dot(b, c, out=out)

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
    # quintic Hermite: the end conditions of robodyn.trajectories' quintic, per segment
    c = trajectories.quintic_coefficients(p0, p1, h, v0, v1, A[:-1], A[1:])
    C[:] = np.moveaxis(c, 0, 1)
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


def _stack(rows, n, m, what, optional):
    """(m, n) float64 from m array.array('d') rows (or sequences): all of length n, or, if
    ``optional``, all empty (then None). Raises ValueError naming the first bad point."""
    lengths = [len(r) for r in rows]
    if optional and not any(lengths):
        return None
    for i, k in enumerate(lengths):
        if k != n:
            if optional and i > 0 and not lengths[0]:
                raise ValueError(f"point {i}: {what} given, but not for point 0")
            raise ValueError(f"point {i} {what}: {k} values for {n} joints")
    if all(isinstance(r, array.array) and r.typecode == "d" for r in rows):
        a = np.frombuffer(b"".join(rows), dtype=np.float64).reshape(m, n)
    else:
        try:
            a = np.array([list(r) for r in rows], dtype=np.float64).reshape(m, n)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: expected numbers") from None
    finite = np.isfinite(a)
    if not finite.all():
        i = int(np.argmin(finite.all(axis=1)))
        raise ValueError(f"point {i} {what}: non-finite value (NaN or inf)")
    return a


def trajectory_points(msg, order: JointOrder, max_points: int = MAX_POINTS):
    """``(times, P, V, A)`` of a trajectory_msgs/JointTrajectory in robot joint order (V, A
    None when not given), joints matched by name.

    Raises ValueError naming the problem: bad joint names, no points (or more than
    ``max_points``), a point whose positions, velocities, accelerations or effort have a wrong
    length (velocities and accelerations must be given for all points or none; accelerations
    need velocities), non-finite values, negative or non-increasing times. Vectorised: a
    100 000-point message takes a few tens of milliseconds.
    """
    n = len(order.names)
    order.permutation(msg.joint_names)
    points = msg.points
    m = len(points)
    if m == 0:
        raise ValueError("no points")
    if m > max_points:
        raise ValueError(f"{m} points, more than the {max_points} accepted (max_points)")
    P = _stack([pt.positions for pt in points], n, m, "positions", False)
    V = _stack([pt.velocities for pt in points], n, m, "velocities", True)
    A = _stack([pt.accelerations for pt in points], n, m, "accelerations", True)
    if A is not None and V is None:
        raise ValueError("accelerations without velocities")
    for i, pt in enumerate(points):
        if len(pt.effort) not in (0, n):
            raise ValueError(f"point {i} effort: {len(pt.effort)} values for {n} joints")
    T = np.array([pt.time_from_start.sec for pt in points], dtype=np.float64)
    T += 1e-9 * np.array([pt.time_from_start.nanosec for pt in points], dtype=np.float64)
    return _checked_points(order, msg.joint_names, T, P, V, A)


class _Irregular(Exception):
    """A serialized trajectory the vectorised reader does not take (it is deserialized)."""


def _points_from_cdr(data, n, max_points):
    """``(joint_names, T, P, V, A)`` (message order) read straight from a serialized
    JointTrajectory (CDR, the ROS 2 wire format) without building a Python object per point.

    The message is: the encapsulation header (4 bytes), the Header (stamp, frame_id), the joint
    names, then the points, each four float64 sequences (positions, velocities, accelerations,
    effort: a uint32 count, then the values aligned to 8 bytes) and time_from_start (int32 sec,
    uint32 nanosec); alignment counts from the end of the encapsulation header. When every point
    carries the same sequences, a point's layout depends only on its offset modulo 8, so two
    layouts give every point's offset and the values are gathered by numpy. Raises ValueError
    for a message that is malformed or breaks the rules of :func:`trajectory_points`, and
    _Irregular for one it leaves to rclpy (another encoding, or effort on some points only).
    """
    size = len(data)
    if size < 8:
        raise ValueError("truncated message")
    if data[0] != 0 or data[1] not in (0, 1):
        raise _Irregular()
    e = "<" if data[1] == 1 else ">"
    u4 = np.frombuffer(data, dtype=e + "u4", count=size // 4)
    f8 = np.frombuffer(data, dtype=e + "f8", offset=4, count=(size - 4) // 8)

    def align(pos, a):
        return pos + (-(pos - 4)) % a

    def count(pos):
        pos = align(pos, 4)
        if pos + 4 > size:
            raise ValueError("truncated message")
        return int(u4[pos // 4]), pos + 4

    def string(pos):
        k, pos = count(pos)
        if pos + k > size:
            raise ValueError("truncated message")
        return bytes(data[pos:pos + max(k - 1, 0)]).decode("utf-8", "replace"), pos + k

    # header: stamp (8 bytes), frame_id; then the joint names
    pos = align(4, 4) + 8
    _, pos = string(pos)
    k, pos = count(pos)
    if k > 10_000:
        raise ValueError(f"{k} joint names")
    names = []
    for _ in range(k):
        name, pos = string(pos)
        names.append(name)
    m, pos = count(pos)
    if m == 0:
        raise ValueError("no points")
    if m > max_points:
        raise ValueError(f"{m} points, more than the {max_points} accepted (max_points)")

    def layout(pos):
        # (counts of the 4 sequences, offsets of the counts, of the values, of the time,
        # size) of the point at pos, offsets relative to pos
        start, counts, at, values = pos, [], [], []
        for _ in range(4):
            c, p = count(pos)
            at.append(align(pos, 4) - start)
            q = align(p, 8) if c else p
            values.append(q - start)
            counts.append(c)
            pos = q + 8 * c
            if pos > size:
                raise ValueError("truncated message")
        pos = align(pos, 4)
        return counts, at, values, pos - start, pos + 8 - start

    # a point's layout depends on its offset modulo 8: layout 0 (the first point's) and
    # layout 1 (the other parity's, if a point has it); sizes give the sequence of parities
    o0 = align(pos, 4)
    first = layout(o0)
    k = np.arange(m)
    if first[4] % 8 == 0 or m == 1:
        second, lay = first, np.zeros(m, dtype=np.intp)
        offsets = o0 + k * first[4]
    else:
        o1 = o0 + first[4]
        second = layout(o1)
        if second[0] != first[0]:
            raise _Irregular()
        if second[4] % 8:
            # the parity flips at every point: layouts 0, 1, 0, 1, ...
            lay = k % 2
            offsets = o0 + (k // 2) * (first[4] + second[4]) + lay * first[4]
        else:
            # layout 0, then layout 1 for good
            lay = np.minimum(k, 1)
            offsets = o1 + (k - 1) * second[4]
            offsets[0] = o0
    both = (first, second)
    counts = first[0]
    # the counts must be the same at every point (else the layouts do not hold), as far as
    # they lie within the message; regular points running past its end are a truncation
    for j in range(4):
        at = offsets + np.array([both[0][1][j], both[1][1][j]])[lay]
        got = u4[at[at + 4 <= size] // 4]
        if np.any(got != counts[j]):
            raise _Irregular()
    if offsets[-1] + both[lay[-1]][4] > size:
        raise ValueError("truncated message")
    for c, what in zip(counts, ("positions", "velocities", "accelerations", "effort")):
        if c not in ((n,) if what == "positions" else (0, n)):
            raise ValueError(f"point 0 {what}: {c} values for {n} joints")
    arrays = []
    cols = np.arange(n)
    for j in range(3):
        if counts[j] == 0:
            arrays.append(None)
            continue
        rel = np.array([both[0][2][j], both[1][2][j]])[lay]
        arrays.append(f8[((offsets + rel - 4) // 8)[:, None] + cols])
    rel = np.array([both[0][3], both[1][3]])[lay]
    sec = u4[(offsets + rel) // 4].astype(np.uint32).view(np.int32).astype(np.float64)
    nsec = u4[(offsets + rel) // 4 + 1].astype(np.float64)
    return names, sec + 1e-9 * nsec, arrays[0], arrays[1], arrays[2]


def serialized_trajectory_points(data, order: JointOrder, max_points: int = MAX_POINTS):
    """:func:`trajectory_points` of a serialized JointTrajectory (bytes, as a raw
    subscription gives it), read by numpy without a Python object per point (a 100 000-point
    message takes milliseconds, and the interpreter stays free for other threads). A message
    in another encoding or with effort on some points only is deserialized by rclpy instead.
    """
    try:
        names, T, P, V, A = _points_from_cdr(data, len(order.names), max_points)
    except _Irregular:
        try:
            msg = deserialize_message(bytes(data), JointTrajectory)
        except Exception as exc:  # rclpy's RMWError: not a JointTrajectory
            raise ValueError(f"cannot deserialize the message: {exc}") from None
        return trajectory_points(msg, order, max_points)
    return _checked_points(order, names, T, P, V, A)


def _checked_points(order, names, T, P, V, A):
    """The checks of :func:`trajectory_points` on gathered arrays; robot joint order."""
    perm = order.permutation(names)
    if A is not None and V is None:
        raise ValueError("accelerations without velocities")
    for X, what in ((P, "positions"), (V, "velocities"), (A, "accelerations")):
        if X is None:
            continue
        finite = np.isfinite(X)
        if not finite.all():
            i = int(np.argmin(finite.all(axis=1)))
            raise ValueError(f"point {i} {what}: non-finite value (NaN or inf)")
    if T[0] < 0.0 or np.any(np.diff(T) <= 0.0):
        raise ValueError(f"times from start must be >= 0 and increasing, got {T[:5]}...")
    # message order -> robot order
    P = P[:, perm]
    V = None if V is None else V[:, perm]
    A = None if A is None else A[:, perm]
    return T, P, V, A


def parse_trajectory(msg, order: JointOrder, start=None, max_points: int = MAX_POINTS):
    """A Reference from a trajectory_msgs/JointTrajectory (:func:`trajectory_points`, then
    :func:`reference_from_points` with ``start``). Raises ValueError naming the problem."""
    T, P, V, A = trajectory_points(msg, order, max_points)
    return reference_from_points(T, P, V, A, start=start)


# instants per interval at which check_reference samples the interpolation (besides the points)
_CHECK_SAMPLES = 8
_CHECK_CHUNK = 1024  # intervals per numpy call: a few hundred microseconds each


def _limit_check(limits, names):
    """``check(Q, QD, QDD, where)`` raising ValueError (naming ``where(row)`` and the joint)
    unless the (k, n) values are finite, Q within [lower, upper] and |QD| within the velocity
    limit (QD, QDD may be None), with a relative tolerance of 1e-9 for rounding."""
    lower, upper, vmax = limits
    n = lower.shape[0]
    names = [f"joint {j}" for j in range(n)] if names is None else list(names)
    tol_p = 1e-9 * np.maximum(1.0, np.maximum(np.abs(np.where(np.isfinite(lower), lower, 0)),
                                              np.abs(np.where(np.isfinite(upper), upper, 0))))
    lo, hi = lower - tol_p, upper + tol_p
    vlim = vmax * (1.0 + 1e-9) + 1e-12

    def check(Q, QD, QDD, where):
        # Q, QD, QDD: (k, n) values at the instants described by where(i)
        for what, X in (("position", Q), ("velocity", QD), ("acceleration", QDD)):
            if X is None:
                continue
            bad = ~np.isfinite(X)
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise ValueError(f"{where(i)}: {names[j]} {what} is not finite (overflow)")
        for bad, what in ((Q < lo, "below"), (Q > hi, "above")):
            if bad.any():
                i, j = np.argwhere(bad)[0]
                lim = lower[j] if what == "below" else upper[j]
                raise ValueError(f"{where(i)}: {names[j]} position {Q[i, j]:.6g} is {what} its "
                                 f"limit {lim:.6g}")
        if QD is None:
            return
        bad = np.abs(QD) > vlim
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"{where(i)}: {names[j]} velocity {QD[i, j]:.6g} exceeds its "
                             f"limit {vmax[j]:.6g}")

    return check


def check_points(P, V, limits, names=None):
    """Raise ValueError unless the (m, n) positions P are within the joint limits and the
    velocities V (or None) within the velocity limits (:func:`joint_limits`), naming the
    first point and joint that are not."""
    _limit_check(limits, names)(P, V, None, lambda i: f"point {i}")


def check_reference(ref: Reference, limits, names=None):
    """Raise ValueError unless the reference stays within ``limits`` = ``(lower, upper,
    velocity)`` (:func:`joint_limits`): positions within [lower, upper] and ``|qd|`` within the
    velocity limit, and (q, qd, qdd) finite, at every point and at 8 equally spaced instants
    inside every interval (cubic and quintic pieces can overshoot between points). A relative
    tolerance of 1e-9 allows for rounding. ``names`` name the joints in the message."""
    check = _limit_check(limits, names)

    # the held polynomials (before the first and after the last point)
    for label, c in (("start", ref.first), ("end", ref.last)):
        check(c[0:1], c[1:2], 2.0 * c[2:3], lambda i, label=label: f"reference {label}")
    # the intervals, at 0, 1/S, ..., (S-1)/S of each, in chunks (bounded memory)
    segs = ref.segments
    if not segs:
        return
    knots = np.asarray(ref.knots)
    frac = np.arange(_CHECK_SAMPLES) / _CHECK_SAMPLES
    i6 = np.arange(6)
    for a in range(0, len(segs), _CHECK_CHUNK):
        C = np.asarray(segs[a:a + _CHECK_CHUNK])  # (k, 6, n)
        h = np.diff(knots[a:a + C.shape[0] + 1])
        s = h[:, None] * frac[None, :]  # (k, S)
        S = s[:, :, None]
        # basis rows of q, qd, qdd at s: (k, S, 6)
        Bq = S ** i6
        Bd = i6 * S ** np.maximum(i6 - 1, 0)
        Bdd = i6 * np.maximum(i6 - 1, 0) * S ** np.maximum(i6 - 2, 0)
        with np.errstate(over="ignore", invalid="ignore"):
            vals = [np.matmul(B, C).reshape(-1, C.shape[2]) for B in (Bq, Bd, Bdd)]

        def where(i, a=a):
            k = a + i // _CHECK_SAMPLES
            f = (i % _CHECK_SAMPLES) / _CHECK_SAMPLES
            return (f"t = {knots[k] + f * (knots[k + 1] - knots[k]):.6g} s (interval {k}"
                    f"{'' if f else ', at its start'})")

        check(*vals, where)


def joint_state_bounds(limits, margin):
    """``(lower, upper, velocity)`` a measured joint state must keep: the joint limits
    (:func:`joint_limits`) widened by ``margin`` times each joint's range on either side, and
    the velocity limits times ``1 + margin`` (a sensor reads a little past a limit; a joint
    without a limit keeps none)."""
    lower, upper, vmax = limits
    span = np.where(np.isfinite(upper - lower), upper - lower, 0.0)
    return lower - margin * span, upper + margin * span, vmax * (1.0 + margin)


def check_joint_state(q, qd, bounds, names):
    """Raise ValueError unless the (n,) positions ``q`` (and velocities ``qd``, or None), in
    robot joint order, are finite and within ``bounds`` (:func:`joint_state_bounds`), naming
    the first joint that is not."""
    lower, upper, vmax = bounds
    for what, x in (("position", q), ("velocity", qd)):
        if x is not None and not np.all(np.isfinite(x)):
            j = int(np.argmax(~np.isfinite(x)))
            raise ValueError(f"{names[j]} {what} is not finite")
    bad = (q < lower) | (q > upper)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"{names[j]} position {q[j]:.6g} is outside [{lower[j]:.6g}, "
                         f"{upper[j]:.6g}] (its limits and the joint_state_margin)")
    if qd is not None:
        bad = np.abs(qd) > vmax
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(f"{names[j]} velocity {qd[j]:.6g} exceeds {vmax[j]:.6g} (its "
                             "limit and the joint_state_margin)")


# the range of a builtin_interfaces/Duration (int32 seconds), in s
_DURATION_RANGE = (-float(2**31), float(2**31 - 1))


def trajectory_message(joint_names, times, positions, velocities=None, accelerations=None):
    """A trajectory_msgs/JointTrajectory with points at ``times`` (s, from the moment it
    arrives) and (m, n) ``positions`` (``velocities``, ``accelerations`` optional), columns in
    ``joint_names`` order: what robodyn-ros2 takes on ``robodyn/reference``.

    The message is written as given (robodyn-ros2 checks what arrives: names, lengths, values,
    times, limits); ValueError if it cannot be written: a time that is not finite or outside a
    Duration's range (about +-68 years), or not one row of each array per time."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectoryPoint

    T = np.atleast_1d(np.asarray(times, dtype=np.float64))
    if T.ndim != 1:
        raise ValueError(f"times: expected a sequence of times, got shape {T.shape}")
    lo, hi = _DURATION_RANGE
    bad = ~(np.isfinite(T) & (T >= lo) & (T <= hi))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"times: point {i} is at {T[i]!r} s, which a Duration cannot hold "
                         f"(finite, within [{lo:.0f}, {hi:.0f}] s)")
    rows = []
    for what, x in (("positions", positions), ("velocities", velocities),
                    ("accelerations", accelerations)):
        a = None if x is None else np.atleast_2d(np.asarray(x, dtype=np.float64))
        if a is not None and (a.ndim != 2 or a.shape[0] != T.size):
            raise ValueError(f"{what}: expected one row per time ({T.size}), got shape "
                             f"{a.shape}")
        rows.append(a)
    P, V, A = rows
    msg = JointTrajectory()
    msg.joint_names = list(joint_names)
    for i, t in enumerate(T):
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


def descriptor(text, dynamic=False, read_only=True):
    return ParameterDescriptor(description=text, read_only=read_only, dynamic_typing=dynamic)


def declare_robot_parameters(node: Node):
    """Declare ``robot`` and ``robot_description``; the robot they name, or None if both are
    empty (the URDF then comes from the robot_description topic). Raises ConfigError."""
    node.declare_parameter("robot", "", descriptor(
        "bundled robot name (intelledex_605, stanford_arm) or URDF path"))
    node.declare_parameter("robot_description", "", descriptor(
        "URDF text; with neither parameter, the URDF comes from the robot_description topic"))
    node.declare_parameter("xacro_allow_env", False, descriptor(
        "let a .xacro robot file read environment variables and ROS package paths"))
    name = node.get_parameter("robot").value
    text = node.get_parameter("robot_description").value
    allow_env = node.get_parameter("xacro_allow_env").value
    for key, value in (("robot", name), ("robot_description", text)):
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
    if not isinstance(allow_env, bool):
        raise ConfigError(f"xacro_allow_env: expected true or false, got {allow_env!r}")
    if not name.strip() and not text.strip():
        return None
    return load_robot(name, text, allow_env)


def check_number(name, value, *, positive=False):
    """A float parameter value (an integer is accepted); ConfigError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name}: expected a number, got {value!r}")
    if value < 0.0 or (positive and value == 0.0):
        raise ConfigError(f"{name}: expected a {'positive' if positive else 'non-negative'} "
                          f"number, got {value!r}")
    return float(value)


def number_parameter(node: Node, name: str, default: float, text: str, *, positive=False,
                     read_only=True):
    """Declare a float parameter that also accepts an integer; return it checked."""
    node.declare_parameter(name, default, descriptor(text, dynamic=True, read_only=read_only))
    return check_number(name, node.get_parameter(name).value, positive=positive)


def choice_parameter(node: Node, name: str, default: str, choices, text: str, *,
                     read_only=True):
    """Declare a string parameter with a fixed set of values; return it checked."""
    node.declare_parameter(name, default, descriptor(f"{text}: {' | '.join(choices)}",
                                                      read_only=read_only))
    value = node.get_parameter(name).value
    if value not in choices:
        raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def priority_parameter(node: Node) -> int:
    """Declare ``realtime_priority`` (0: normal scheduling; 1-99: SCHED_FIFO at that priority
    for the thread that spins the executor, set by :func:`run`); return it checked."""
    node.declare_parameter("realtime_priority", 0, descriptor(
        "0: normal scheduling; 1-99: SCHED_FIFO priority of the executor thread (needs root, "
        "CAP_SYS_NICE or an rtprio limit)"))
    value = node.get_parameter("realtime_priority").value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 99:
        raise ConfigError(f"realtime_priority: expected an integer in 0..99, got {value!r}")
    return value


def effort_bounds(robot):
    """The (n,) torque bounds of the robot's effort limits as the controllers take them
    (:func:`control.effort_bounds`), or None if no joint has a limit."""
    lim = control.effort_bounds(robot.effort_limits, robot.n)
    return lim if np.any(np.isfinite(lim)) else None


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
        _normal_scheduling()
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


# --- process entry point --------------------------------------------------------------------


def _executor(context=None, kind="events"):
    """The executor ``kind`` (EXECUTORS); "events" is rclpy's C++ EventsExecutor where
    available (lower overhead, steadier timers), else the SingleThreadedExecutor."""
    if kind == "multi_threaded":
        return MultiThreadedExecutor(num_threads=2, context=context)
    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            pass
        else:
            return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


def _set_priority(node):
    """SCHED_FIFO at ``realtime_priority`` for every thread of the process but the reference
    worker (the executor's, the middleware's; threads started later inherit it), if the node
    asks for it: the control and transport callbacks then preempt the normal processes of a
    loaded machine, as ros2_control's controller manager does for its update thread."""
    prio = getattr(node, "realtime_priority", 0)
    if not prio:
        return
    skip = getattr(node, "worker_tid", None)
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
        for tid in tids:
            if tid != skip:
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(prio))
    except (OSError, AttributeError, ValueError) as exc:
        node.get_logger().warning(f"realtime_priority {prio}: cannot set SCHED_FIFO ({exc}); "
                                  "running with normal scheduling")
    else:
        node.get_logger().info(f"SCHED_FIFO priority {prio} for {len(tids) - (skip in tids)} "
                               "threads (executor, middleware)")


WORKER_NICE = 10


def _normal_scheduling():
    """This thread back to SCHED_OTHER, at nice WORKER_NICE (the reference worker: when it
    competes for a CPU with the control callbacks, they get the larger share)."""
    try:
        if os.sched_getscheduler(0) != os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        # Linux: the nice value of one thread, named by its id
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid),
                                                 WORKER_NICE))
    except (OSError, AttributeError):
        pass


USAGE = """usage: {prog} --ros-args [-p robot:=NAME_OR_URDF_PATH] [-p NAME:=VALUE ...]

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
    # SIGINT / SIGTERM complete `stop`. The main thread spins in slices of SPIN_SLICE seconds
    # and runs the Python handler between two slices: rclpy's own handlers would shut the
    # context down under a running callback, and EventsExecutor.spin_until_future_complete
    # without a timeout never returns to the interpreter (it busy-waits at 100 % CPU).
    stop = rclpy.task.Future()

    def request_stop(signum, frame):
        if not stop.done():
            stop.set_result(0)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    # the tick's finiteness check computes tau . 0, NaN by design for a bad command
    np.seterr(invalid="ignore")
    # the reference worker gives the interpreter back to the control callback this often
    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    try:
        try:
            node = node_factory()
        except ConfigError as exc:
            rclpy.logging.get_logger(prog).error(str(exc))
            return 2
        node.stop = stop
        _set_priority(node)
        executor = _executor(kind=node.executor_kind)
        executor.add_node(node)
        end = time.monotonic() + node.duration if node.duration > 0.0 else math.inf
        while not stop.done():
            left = end - time.monotonic()
            if left <= 0.0:
                break
            executor.spin_until_future_complete(stop, timeout_sec=min(SPIN_SLICE, left))
        node.get_logger().info(node.summary())
        return node.exit_status
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        sys.setswitchinterval(switch)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(args=None):
    """robodyn-ros2 in this process: run the node, return the exit status."""
    return run(ControllerNode, args, prog="robodyn-ros2",
               params="robot | robot_description (neither: the robot_description topic), mode "
                      f"({', '.join(MODES)}), trigger ({', '.join(TRIGGERS)}), rate_hz, kp, kd, "
                      "joint_state_timeout, max_points, executor "
                      f"({', '.join(EXECUTORS)}), realtime_priority, duration")


def exit_process(status):
    """End a node process with ``status`` once :func:`run` has shut ROS down: flush Python's
    streams and leave without the interpreter's finalization, which takes 0.3-0.4 s here (the
    middleware's static destructors) and would hold up the stop after SIGINT / SIGTERM."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def cli():
    """The ``robodyn-ros2`` console script."""
    exit_process(main())


if __name__ == "__main__":
    cli()
