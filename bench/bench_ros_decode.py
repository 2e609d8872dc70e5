"""Reading a serialized trajectory_msgs/JointTrajectory: robodyn's CDR reader against rclpy.

robodyn-ros2 takes its reference as the serialized message (a raw subscription) and reads the
points straight from the bytes with numpy (``robodyn.ros.messages.serialized_trajectory_points``).
The alternative is the ROS libraries: ``rclpy.serialization.deserialize_message`` into the
message class, then ``trajectory_points`` on the message object. Both give the same arrays
(checked here, and in tests/test_ros_reference.py). For references of ``--points`` points of
``--joints`` joints (positions, velocities, accelerations), this process's CPU time per read:
the median of ``--rounds`` rounds (the two readers alternate in each round), and the median of
the per-round ratios rclpy / robodyn (above 1: the CDR reader is faster).

Needs the ``ros`` extra; nothing is sent (no ROS graph, no node).

    python bench/bench_ros_decode.py [--points 10 100 1000 10000 100000] [--joints 6]
                                     [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def cpu_per_call(fn, min_time=0.2):
    """CPU seconds of one call of ``fn()``: calls repeated for at least ``min_time``."""
    calls, start = 0, time.process_time()
    while True:
        fn()
        calls += 1
        spent = time.process_time() - start
        if spent >= min_time:
            return spent / calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, nargs="+", default=[10, 100, 1000, 10000, 100000])
    parser.add_argument("--joints", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    from rclpy.serialization import deserialize_message, serialize_message
    from trajectory_msgs.msg import JointTrajectory

    from robodyn.ros import messages

    n = args.joints
    names = [f"joint_{i}" for i in range(n)]
    order = messages.JointOrder(names)
    rng = np.random.default_rng(0)
    print(f"JointTrajectory, {n} joints (positions, velocities, accelerations); CPU per read, "
          f"medians of {args.rounds} rounds")
    print(f"  {'points':>7} {'bytes':>10} {'CDR reader':>12} {'rclpy':>12} {'rclpy/CDR':>10}")
    for m in args.points:
        P, V, A = (rng.normal(size=(m, n)) for _ in range(3))
        msg = messages.trajectory_message(names, 0.01 * (1 + np.arange(m)), P, V, A)
        data = serialize_message(msg)

        def cdr():
            return messages.serialized_trajectory_points(data, order, max_points=m)

        def ros():
            return messages.trajectory_points(deserialize_message(data, JointTrajectory), order,
                                              max_points=m)

        for a, b in zip(cdr(), ros()):
            assert np.array_equal(a, b)
        budget = 0.05 if m >= 10000 else 0.2
        t_cdr, t_ros = [], []
        for r in range(args.rounds):
            pair = (cdr, ros) if r % 2 == 0 else (ros, cdr)
            times = {f: cpu_per_call(f, budget) for f in pair}
            t_cdr.append(times[cdr])
            t_ros.append(times[ros])
        ratio = statistics.median(b / a for a, b in zip(t_cdr, t_ros))
        print(f"  {m:>7} {len(data):>10} {1e3 * statistics.median(t_cdr):>10.3f}ms "
              f"{1e3 * statistics.median(t_ros):>10.3f}ms {ratio:>10.1f}")


if __name__ == "__main__":
    main()
