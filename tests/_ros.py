"""Shared fixture and helpers of the ROS 2 node tests (tests/test_ros_*.py).

Every node runs as its own process, started as a user starts it: the console script
(``robodyn-ros2``, ``robodyn-ros2-sim``) with ``--ros-args``, no ``duration``, stopped by a
signal to its pid; this test process is the peer (its own rclpy context). Each test picks a
random private ROS_DOMAIN_ID in 100..230 and keeps discovery on this machine
(ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST); every wait here is bounded in time, and every
process started is stopped by pid at the end of its test (SIGTERM, then SIGKILL after 10 s;
the kernel kills it too if this process dies: PR_SET_PDEATHSIG). Skipped when rclpy is not
installed (the ``ros`` extra).
"""

import ctypes
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("sensor_msgs.msg")
pytest.importorskip("trajectory_msgs.msg")

import rclpy.task  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

import robodyn  # noqa: E402
from robodyn import trajectories  # noqa: E402
from robodyn.ros import node as rosnode  # noqa: E402
from robodyn.ros import sim as rosnode_sim  # noqa: E402
from robodyn.ros import process as rosnode_process  # noqa: E402

# the longest the peer's executor spins (s); the tests end much earlier
PEER_LIMIT = 120.0
_executor = rosnode_process.make_executor  # the nodes' default executor (rclpy's EventsExecutor)
SCRIPTS = {"node": "robodyn-ros2", "sim": "robodyn-ros2-sim"}


def _script(name):
    """The console script installed next to this interpreter (or on PATH)."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(path):
        return path
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"console script {name} not installed")
    return found


def _die_with_parent():
    """In the child before exec: SIGKILL when the test process dies (Linux prctl)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _clip(robot, tau):
    lim = np.asarray(robot.effort_limits, dtype=float)
    lim = np.where((lim > 0) & np.isfinite(lim), lim, np.inf)
    return np.clip(tau, -lim, lim)


class Ros:
    """A private ROS 2 domain: this process's peer node, and the node processes started in it.

    The caller has put ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (read by rcl at
    init) and ROS_LOG_DIR in this process's environment; the nodes inherit it.
    """

    def __init__(self, tmp_path):
        self.domain = int(os.environ["ROS_DOMAIN_ID"])
        assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
        self.tmp = tmp_path
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.procs = []
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("robodyn_test_peer", context=self.context)
        self.commands = []      # (receive time, (n,) array)
        self.states = []        # (header stamp, names, position, velocity)
        self.lock = threading.Lock()
        self.state_pub = self.node.create_publisher(JointState, rosnode.JOINT_STATES, 10)
        self.ref_pub = self.node.create_publisher(JointTrajectory, rosnode.REFERENCE, 10)
        self.executor = _executor(self.context)
        self.executor.add_node(self.node)
        self._stop = rclpy.task.Future()
        self._thread = threading.Thread(target=self.executor.spin_until_future_complete,
                                        args=(self._stop,), kwargs={"timeout_sec": PEER_LIMIT},
                                        daemon=True)
        self._thread.start()

    def listen(self, commands=False, states=False, topic=rosnode.COMMANDS, into=None):
        """Record the commands (and / or the joint states) the nodes publish."""
        if commands:
            into = self.commands if into is None else into

            def on_command(msg):
                with self.lock:
                    into.append((time.monotonic(), np.array(msg.data)))

            self.node.create_subscription(Float64MultiArray, topic, on_command, 10)
        if states:
            self.node.create_subscription(JointState, rosnode.JOINT_STATES, self._on_state, 10)

    def _on_state(self, msg):
        with self.lock:
            self.states.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                                list(msg.name), np.array(msg.position), np.array(msg.velocity)))

    def start(self, module, *params, ros_args=()):
        """Start the console script of ``module`` (node, sim) with ``--ros-args -p ...``."""
        args = [_script(SCRIPTS[module]), "--ros-args", *ros_args]
        for p in params:
            args += ["-p", p]
        path = self.tmp / f"{module}-{len(self.procs)}.log"
        with open(path, "ab") as log:  # append mode: the child always writes at the end
            proc = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        proc.log_path = path
        self.procs.append(proc)
        return proc

    @staticmethod
    def output(proc):
        return proc.log_path.read_text(errors="replace")

    def stop(self, proc, sig=signal.SIGTERM):
        """Signal a process started here; returns its exit status (killed after 10 s)."""
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        return proc.returncode

    def close(self):
        for proc in self.procs:
            self.stop(proc)
        self._stop.set_result(True)
        self.executor.wake()
        self._thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    # --- peer helpers ---

    def send_state(self, names, q, qd):
        msg = JointState()
        msg.name = list(names)
        msg.position = [float(x) for x in q]
        msg.velocity = [float(x) for x in qd]
        self.state_pub.publish(msg)

    def clear(self):
        with self.lock:
            self.commands.clear()
            self.states.clear()

    def last_command(self):
        with self.lock:
            return self.commands[-1][1] if self.commands else None

    def wait_for(self, predicate, timeout, action=None, every=0.02):
        """Call ``action`` every ``every`` s until ``predicate()`` holds; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if action is not None:
                action()
            if predicate():
                return True
            time.sleep(every)
        return False

    def set_parameters(self, node_name, **values):
        """Set parameters of a running node through its parameter service; the results."""
        from rclpy.parameter_client import AsyncParameterClient

        client = AsyncParameterClient(self.node, node_name)
        assert client.wait_for_services(timeout_sec=20.0), f"no parameter service {node_name}"
        future = client.set_parameters([Parameter(k, value=v) for k, v in values.items()])
        assert self.wait_for(future.done, 10.0), "no answer from the parameter service"
        return future.result().results


@pytest.fixture
def ros(tmp_path, monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", str(random.SystemRandom().randint(100, 230)))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_STATIC_PEERS", "")
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    r = Ros(tmp_path)
    yield r
    r.close()


def _matches(ros, expected, tol=1e-9):
    def check():
        c = ros.last_command()
        return c is not None and c.shape == expected.shape and np.allclose(c, expected, rtol=tol,
                                                                             atol=tol)
    return check


def _point_msg(names, q, qd=None, qdd=None):
    return rosnode.trajectory_message(names, [0.0], [q], None if qd is None else [qd],
                                      None if qdd is None else [qdd])


def _malformed_references(names):
    """(what, message) pairs robodyn-ros2 must reject."""
    n = len(names)
    good = np.linspace(0.1, 0.6, n)
    bad = []

    def msg(nm, P, V=None, A=None, times=None):
        times = [0.0] if times is None else times
        return rosnode.trajectory_message(nm, times, P, V, A)

    bad.append(("unknown name", msg(names[:-1] + ["elbow_of_nobody"], [good])))
    bad.append(("missing name", msg(names[:-1], [good[:-1]])))
    bad.append(("duplicate name", msg(names[:-1] + names[:1], [good])))
    bad.append(("short positions", msg(names, [good[:-1]])))
    bad.append(("long velocities", msg(names, [good], [np.zeros(n + 1)])))
    bad.append(("NaN position", msg(names, [np.where(np.arange(n) == 2, np.nan, good)])))
    bad.append(("inf acceleration", msg(names, [good], [good], [np.full(n, np.inf)])))
    bad.append(("times not increasing", msg(names, [good, good], times=[0.5, 0.5])))
    bad.append(("negative time", msg(names, [good, good], times=[-1.0, 0.5])))
    bad.append(("accelerations without velocities", msg(names, [good], None, [good])))
    empty = JointTrajectory()
    empty.joint_names = list(names)
    bad.append(("no points", empty))
    ragged = msg(names, [good, good], times=[0.0, 1.0])
    ragged.points[1].velocities = [0.0] * n
    bad.append(("velocities on some points only", ragged))
    return bad
