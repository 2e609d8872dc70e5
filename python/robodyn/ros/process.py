"""The process of a node: its executor, real-time priority and scheduling, and :func:`run`
(rclpy initialised, the node spun until SIGINT or SIGTERM, a clean shutdown)."""

from __future__ import annotations

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
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args

from .params import ConfigError

# the longest wait of the main thread in the executor before it looks for a signal (s), and
# the GIL switch interval of a node process (s): the reference worker hands the interpreter
# to the control callback within this time
SPIN_SLICE = 0.02
SWITCH_INTERVAL = 2e-4

def make_executor(context=None, kind="events"):
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


def set_priority(node):
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


def normal_scheduling():
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
        set_priority(node)
        executor = make_executor(kind=node.executor_kind)
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
