"""``trajectory_msgs/JointTrajectory`` in and out: the points of a message (or of its serialized
bytes, decoded directly), checked, and a message built from arrays."""

from __future__ import annotations

import array

import numpy as np
from rclpy.serialization import deserialize_message
from trajectory_msgs.msg import JointTrajectory

from .reference import JointOrder, reference_from_points

# default cap on the points of a reference (the nodes' parameter max_points)
MAX_POINTS = 100_000


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


# Why a reader of its own rather than rclpy's deserialize_message and the message class:
# measured by bench/bench_ros_decode.py (6 joints with positions, velocities and
# accelerations, CPU per read, medians of 5 rounds, same process, a loaded 2-core machine):
#   points        10      100     1000    10000    100000
#   this reader   0.26 ms 0.37 ms 0.59 ms 3.1 ms   30 ms
#   rclpy + trajectory_points
#                 0.42 ms 2.6 ms  21 ms   174 ms   2052 ms   (1.5x to 61x slower)
# rclpy builds a Python object per point and holds the GIL meanwhile, which would stall the
# node's control tick for seconds on a legal 100 000-point reference. Messages this reader
# does not take (_Irregular) go to rclpy.
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
