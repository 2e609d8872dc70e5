"""The ROS 2 nodes (robodyn-ros2, robodyn-ros2-sim) over real ROS 2 transport.

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


# --- pure parts, in process --------------------------------------------------------------------


def test_reference_interpolates_the_points_like_a_trajectory_controller():
    motion = trajectories.thesis_motion()
    ts = np.arange(0.0, 2.0 + 1e-12, 0.02)
    Q, QD, QDD = motion.sample(ts)
    out = np.empty((3, 6))
    for V, A in ((None, None), (QD, None), (QD, QDD)):
        ref = rosnode.reference_from_points(ts, Q, V, A)
        for i in (0, 7, 50, 100):
            # every knot is met exactly, with the derivatives given
            r = ref(ts[i], out)
            np.testing.assert_allclose(r[0], Q[i], rtol=0, atol=1e-12)
            if V is not None:
                np.testing.assert_allclose(r[1], QD[i], rtol=0, atol=1e-9)
            if A is not None:
                np.testing.assert_allclose(r[2], QDD[i], rtol=0, atol=1e-7)
    # quintic through 10 ms samples of the thesis motion: close everywhere, held at the end
    ref = rosnode.reference_from_points(ts, Q, QD, QDD)
    tt = np.linspace(0.0, 2.5, 777)
    want = np.stack(motion.sample(tt), axis=1)
    got = np.array([ref(t, out).copy() for t in tt])
    assert np.abs(got - want).max(axis=(0, 2)).tolist() < [1e-11, 1e-9, 1e-7]
    # linear interpolation between two points, midway
    lin = rosnode.reference_from_points([0.0, 2.0], np.array([[0.0] * 6, [1.0] * 6]))
    np.testing.assert_allclose(lin(1.0, out), [[0.5] * 6, [0.5] * 6, [0.0] * 6])


def test_a_single_point_is_held_and_a_late_first_point_starts_from_the_current_state():
    q, qd, qdd = np.arange(6.0), np.ones(6), -np.ones(6)
    out = np.empty((3, 6))
    held = rosnode.reference_from_points([0.7], q[None], qd[None], qdd[None])
    for t in (-1.0, 0.0, 0.7, 100.0):
        np.testing.assert_array_equal(held(t, out), [q, qd, qdd])
    start = (np.zeros(6), np.zeros(6), np.zeros(6))
    ref = rosnode.reference_from_points([1.0, 2.0], np.array([q, q]), start=start)
    np.testing.assert_allclose(ref(0.0, out)[0], 0.0, atol=0)
    np.testing.assert_allclose(ref(0.5, out)[0], 0.5 * q)
    np.testing.assert_allclose(ref(1.5, out)[0], q)


def test_parse_trajectory_matches_names_in_any_order_and_rejects_bad_messages():
    robot = robodyn.robots.stanford_arm()
    names = robot.joint_names
    order = rosnode.JointOrder(names)
    q = np.linspace(0.1, 0.6, 6)
    perm = [3, 0, 5, 1, 4, 2]
    msg = _point_msg([names[i] for i in perm], q[perm], 2 * q[perm], 3 * q[perm])
    out = np.empty((3, 6))
    np.testing.assert_array_equal(rosnode.parse_trajectory(msg, order)(0.0, out),
                                  [q, 2 * q, 3 * q])
    for what, bad in _malformed_references(list(names)):
        with pytest.raises(ValueError):
            rosnode.parse_trajectory(bad, order)
            pytest.fail(f"accepted a message with {what}")


def test_serialized_references_are_read_like_rclpy_deserializes_them():
    """The node reads a reference's points straight from the serialized message (numpy, no
    Python object per point); against rclpy's deserialization over random messages: 1 to 7
    joints, 1 to 5 points, with and without velocities, accelerations, effort (on all points
    or some: then rclpy reads it), frame ids and names of every length mod 8. Cut messages
    raise ValueError."""
    from rclpy.serialization import deserialize_message

    rng = np.random.default_rng(0)
    for trial in range(200):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        names = [("j" * int(rng.integers(1, 9))) + str(i) for i in range(n)]
        ts = np.cumsum(rng.uniform(0.01, 1.0, m))
        P = rng.normal(size=(m, n))
        V = rng.normal(size=(m, n)) if rng.random() < 0.6 else None
        A = rng.normal(size=(m, n)) if V is not None and rng.random() < 0.5 else None
        msg = rosnode.trajectory_message(names, ts, P, V, A)
        msg.header.frame_id = "f" * int(rng.integers(0, 6))
        effort = rng.random()
        for pt in msg.points:
            if effort < 0.3 or (effort < 0.4 and rng.random() < 0.5):
                pt.effort = [1.0] * n
        order = rosnode.JointOrder(list(rng.permutation(names)))
        data = serialize_message(msg)
        got = rosnode.serialized_trajectory_points(data, order)
        want = rosnode.trajectory_points(deserialize_message(data, JointTrajectory), order)
        for a, b in zip(got, want):
            assert (a is None and b is None) or np.array_equal(a, b), trial
        for cut in (1, 8, len(data) // 2):
            with pytest.raises(ValueError):
                rosnode.serialized_trajectory_points(data[:cut], order)
    # and the checks of trajectory_points apply to it
    names = [f"j{i}" for i in range(3)]
    order = rosnode.JointOrder(names)
    for what, bad in _malformed_references(names):
        with pytest.raises(ValueError):
            rosnode.serialized_trajectory_points(serialize_message(bad), order)
            pytest.fail(f"accepted a message with {what}")
    big = rosnode.trajectory_message(names, np.arange(11) * 0.1, np.zeros((11, 3)))
    with pytest.raises(ValueError, match="11 points, more than the 10"):
        rosnode.serialized_trajectory_points(serialize_message(big), order, max_points=10)


def test_load_robot_takes_a_bundled_name_a_urdf_path_or_urdf_text():
    path = robodyn.robots.urdf_path("intelledex_605")
    for robot in (rosnode.load_robot("intelledex_605"), rosnode.load_robot(str(path)),
                  rosnode.load_robot(robot_description=path.read_text())):
        assert robot.n == 6 and robot.name == "intelledex_605"
    for args in ((), ("intelledex_605", path.read_text()), ("no_such_robot",),
                 ("", "<robot name='broken'>")):
        with pytest.raises(rosnode.ConfigError):
            rosnode.load_robot(*args)
    if "lynch_satellite" in robodyn.robots.available():  # a floating base: not a joint arm
        with pytest.raises(rosnode.ConfigError, match="floating base"):
            rosnode.load_robot("lynch_satellite")
    assert rosnode.gains(2.0, 3, "kp").tolist() == [2.0, 2.0, 2.0]
    for bad in (-1.0, [1.0, 2.0], float("nan"), "x"):
        with pytest.raises(rosnode.ConfigError):
            rosnode.gains(bad, 3, "kp")


def _ok(rejected_before, node):
    return node.rejected["reference"] == rejected_before


def test_references_are_checked_against_the_joint_and_velocity_limits():
    robot = robodyn.robots.stanford_arm()
    names = list(robot.joint_names)
    order = rosnode.JointOrder(names)
    limits = rosnode.joint_limits(robot)
    lower, upper, vmax = limits
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(vmax))
    q = np.array([0.3, 0.9, 0.6, -0.4, 0.5, 0.2])

    def ref(times, P, V=None, A=None, start=None):
        return rosnode.parse_trajectory(rosnode.trajectory_message(names, times, P, V, A), order,
                                        start=start)

    # within the limits: accepted, also the thesis-like quintic through many points
    rosnode.check_reference(ref([0.0], [q]), limits, names)
    rosnode.check_reference(ref([0.0, 1.0, 2.0], [q, q + 0.2, q]), limits, names)
    ts = np.linspace(0.0, 2.0, 101)
    Q = q + 0.3 * np.sin(ts)[:, None]
    rosnode.check_reference(ref(ts, Q, 0.3 * np.cos(ts)[:, None] + 0 * Q,
                                -0.3 * np.sin(ts)[:, None] + 0 * Q), limits, names)
    cases = {
        # a point beyond a position limit (the prismatic joint below its 0.3048 m)
        "below its limit 0.3048": ref([0.0], [np.where(np.arange(6) == 2, 0.2, q)]),
        # the poisoned reference of issue 14: finite, absurd positions
        "above its limit": ref([0.0, 1.0], [q, np.full(6, 1e308)]),
        # a velocity beyond the limit at a point
        "velocity 2.5 exceeds its limit 1.5": ref([0.0], [q], [np.where(np.arange(6) == 0, 2.5,
                                                                         0.0)]),
        # linear pieces too fast for the velocity limit (1 rad in 0.1 s)
        "exceeds its limit 1.5": ref([0.0, 0.01], [q, q + 0.2]),
        # a cubic that overshoots the upper limit between two points within the limits
        "above its limit 2.96706": ref([0.0, 2.0], [np.where(np.arange(6) == 0, 2.9, q)] * 2,
                                      [np.where(np.arange(6) == 0, 1.4, 0.0)] * 2),
        # a late first point, reached from the start state too fast
        "interval 0": ref([0.05, 1.0], [q + 0.5] * 2, start=(q, np.zeros(6), np.zeros(6))),
    }
    for want, r in cases.items():
        with pytest.raises(ValueError, match=want.replace(".", r"\.")):
            rosnode.check_reference(r, limits, names)
    # the overshoot is between the points: both points themselves are within the limits
    assert 2.9 < upper[0]


def test_prepare_reference_rejects_the_poisoned_and_the_oversized_and_the_node_commands_on(ros):
    """Issue 14: a 1e308 reference was accepted and left computed_torque unable to command."""
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value="computed_torque"),
        Parameter("max_points", value=1000), Parameter("joint_state_timeout", value=1e6),
        Parameter("kp", value=50.0), Parameter("kd", value=10.0)])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, m: sent.append(list(m.data))})()
        q = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2])
        node._on_joint_state(JointState(name=names, position=q.tolist(), velocity=[0.0] * 6))
        q_r = q + 0.05
        node._pending = node.prepare_reference(serialize_message(_point_msg(names, q_r)))
        node._tick()

        def law(q_ref):
            v = 50.0 * (q_ref - q) + 10.0 * (0.0 - np.zeros(6))
            return _clip(robot, robot.inverse_dynamics(q, np.zeros(6), v))

        np.testing.assert_allclose(sent[-1], law(q_r), rtol=1e-12, atol=1e-12)
        poisoned = rosnode.trajectory_message(names, [0.0, 0.5], [q_r, np.full(6, 1e308)])
        big = rosnode.trajectory_message(names, np.arange(1001) * 1e-3, np.tile(q_r, (1001, 1)))
        for bad, why in ((poisoned, "above its limit 3.14159"),
                         (big, "1001 points, more than the 1000")):
            with pytest.raises(ValueError, match=why):
                node.prepare_reference(serialize_message(bad))
            node._tick()  # the node keeps commanding the last good reference
            np.testing.assert_allclose(sent[-1], law(q_r), rtol=1e-12, atol=1e-12)
        # a message too large to be max_points points is refused before deserializing
        with pytest.raises(ValueError, match="larger than max_points"):
            node.prepare_reference(b"\0" * (node._max_bytes + 1))
        # the subscription callback only hands the bytes over: the reference is read, checked
        # and interpolated in the worker thread, while the control path keeps commanding
        m = 1000
        ts = np.arange(m) * 1e-3
        slow = q_r + 0.1 * np.sin(ts)[:, None]
        data = serialize_message(rosnode.trajectory_message(names, ts, slow))
        prepared_in = []
        prepare = node.prepare_reference

        def spy(d):
            prepared_in.append(threading.get_ident())
            return prepare(d)

        node.prepare_reference = spy
        before = node._pending
        node._on_reference(data)
        assert threading.get_ident() not in prepared_in
        deadline = time.monotonic() + 30.0
        while node._pending is before and time.monotonic() < deadline:
            node._tick()
            time.sleep(0.001)
        assert node._pending is not before and len(node._pending[0].knots) == m
        assert prepared_in and threading.get_ident() not in prepared_in
        node.prepare_reference = prepare
        # later references start from the last good one, and are taken
        q_r2 = q - 0.05
        node._pending = node.prepare_reference(serialize_message(
            rosnode.trajectory_message(names, [0.5, 0.6], [q_r2, q_r2])))
        node._tick()
        assert np.all(np.isfinite(sent[-1]))
        node._ref_time -= 1.0  # 1 s later: at the new point
        node._tick()
        np.testing.assert_allclose(sent[-1], law(q_r2), rtol=1e-12, atol=1e-12)
    finally:
        node.destroy_node()


def test_parameters_change_the_law_on_the_next_tick_and_bad_values_are_refused(ros):
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value="computed_torque"),
        Parameter("joint_state_timeout", value=1e6)])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, m: sent.append(np.array(m.data))})()
        q, qd = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2]), np.full(6, 0.1)
        q_r = q + np.linspace(-0.04, 0.05, 6)
        node._on_joint_state(JointState(name=names, position=q.tolist(), velocity=qd.tolist()))
        node._pending = node.prepare_reference(_point_msg(names, q_r))
        e, ed = q_r - q, -qd

        def ct(kp, kd):
            return _clip(robot, robot.inverse_dynamics(q, qd, kp * e + kd * ed))

        kp0, kd0 = robodyn.control.COMPUTED_TORQUE_KP, robodyn.control.COMPUTED_TORQUE_KD
        node._tick()
        np.testing.assert_allclose(sent[-1], ct(kp0, kd0), rtol=1e-12)
        kp = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
        assert node.set_parameters([Parameter("kp", value=kp.tolist())])[0].successful
        node._tick()
        np.testing.assert_allclose(sent[-1], ct(kp, kd0), rtol=1e-12)
        # refused, with a reason; the old value stays in force
        for name, value, why in (("kp", -1.0, "non-negative"), ("kd", [1.0, 2.0], "6 of them"),
                                 ("mode", "torque_please", "expected one of"),
                                 ("joint_state_timeout", 0.0, "positive")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and why in result.reason, result.reason
        assert list(node.get_parameter("kp").value) == kp.tolist()
        assert node.get_parameter("mode").value == "computed_torque"
        node._tick()
        np.testing.assert_allclose(sent[-1], ct(kp, kd0), rtol=1e-12)
        # the mode: PD + gravity (gains in torque units), then gravity compensation
        assert node.set_parameters([Parameter("mode", value="pd_gravity"),
                                    Parameter("kd", value=2.0)])[0].successful
        node._tick()
        np.testing.assert_allclose(sent[-1], _clip(robot, kp * e + 2.0 * ed
                                                   + robot.gravity_torques(q)), rtol=1e-12)
        assert node.set_parameters([Parameter("mode", value="gravity_compensation")])[0].successful
        node._tick()
        np.testing.assert_allclose(sent[-1], _clip(robot, robot.gravity_torques(q)), rtol=1e-12)
        # read-only parameters are refused by rclpy itself
        assert not node.set_parameters([Parameter("rate_hz", value=5.0)])[0].successful
    finally:
        node.destroy_node()


class _NoPublish:
    def publish(self, msg):
        pass


def _tick_memory(node, ticks=2000):
    """(growth, transient peak) in bytes over ``ticks`` calls of the node's tick."""
    import itertools
    import tracemalloc

    tracemalloc.start()
    try:
        node._tick()
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in itertools.repeat(None, ticks):
            node._tick()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return current - base, peak - base


@pytest.mark.parametrize("mode", rosnode.MODES)
def test_the_control_tick_allocates_no_arrays(ros, mode):
    """tracemalloc sees numpy's buffers and every Python object: over 2000 ticks nothing stays
    allocated and no transient as large as one (n,) array appears. The same tick with robodyn
    calls that return a new array instead of writing into ``out=`` does show one, so the probe
    can fail. rclpy's publish is stubbed out (its allocations are not the tick's)."""
    robot = robodyn.robots.intelledex_605()
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("mode", value=mode),
        Parameter("joint_state_timeout", value=1e6)])
    try:
        node._pub = _NoPublish()
        motion = trajectories.thesis_motion()
        ts = np.arange(0.0, 2.0 + 1e-12, 0.02)
        Q, QD, QDD = motion.sample(ts)
        node._on_joint_state(JointState(name=robot.joint_names, position=Q[3].tolist(),
                                        velocity=QD[3].tolist()))
        node._pending = node.prepare_reference(
            rosnode.trajectory_message(robot.joint_names, ts, Q, QD, QDD))
        # past 256 calls: the controller's call counter is then an allocated int throughout
        for _ in range(300):
            node._tick()
        assert node.published == 300
        growth, peak = _tick_memory(node)
        assert node.published == 2301
        array_bytes = sys.getsizeof(np.empty(robot.n))  # header and data
        assert growth == 0 and peak < array_bytes, (growth, peak, array_bytes)

        def allocating(fn):
            def call(*args, out):
                np.copyto(out, fn(*args))
                return out
            return call

        for ctrl in (node._law[1], node._gravity):
            if hasattr(ctrl, "_id"):
                ctrl._id = allocating(robot.inverse_dynamics)
            if hasattr(ctrl, "_gravity"):
                ctrl._gravity = allocating(robot.gravity_torques)
        assert _tick_memory(node)[1] >= array_bytes
    finally:
        node.destroy_node()


def test_the_simulator_integrates_with_robodyn_simulate_and_rejects_bad_commands(ros):
    robot = robodyn.robots.intelledex_605()
    q0 = np.array([0.1, 1.2, 0.3, -0.4, 0.5, 0.6])
    sim = rosnode_sim.ArmSimulator(context=ros.context, parameter_overrides=[
        Parameter("robot", value="intelledex_605"), Parameter("q0", value=q0.tolist())])
    try:
        # its integrator is robodyn.simulate's step (one implementation of RK4)
        assert isinstance(sim._stepper, robodyn.simulation.FixedStep)
        # a passive fall, 200 RK4 steps of 1 ms, against robodyn.simulate's Python and C++ loops
        sim.advance(0.2)
        assert sim.steps == 200
        for engine, tol in (("python", 1e-13), ("cpp", 1e-11)):
            res = robodyn.simulate(robot, None, duration=0.2, dt=1e-3, integrator="rk4", q0=q0,
                                   engine=engine)
            np.testing.assert_allclose(sim._q, res.q[-1], rtol=0, atol=tol)
            np.testing.assert_allclose(sim._qd, res.qd[-1], rtol=0, atol=tol)
        assert np.abs(sim._q - q0).max() > 1e-2  # it did fall
        # commands: the wrong length or NaN are rejected, the last good one is kept, clipped
        good = Float64MultiArray(data=[1.0, -2.0, 3.0, -400.0, 5.0, 0.5])
        sim._on_command(good)
        applied = _clip(robot, np.array(good.data))
        np.testing.assert_array_equal(sim._tau, applied)
        assert sim.running
        for data in ([1.0] * 5, [1.0] * 7, [1.0, float("nan")] + [0.0] * 4,
                     [float("inf")] + [0.0] * 5):
            sim._on_command(Float64MultiArray(data=data))
        assert sim.rejected == 4
        np.testing.assert_array_equal(sim._tau, applied)
    finally:
        sim.destroy_node()


def test_a_command_that_overflows_is_not_published(ros):
    robot = robodyn.robots.stanford_arm()
    node = rosnode.ControllerNode(context=ros.context, parameter_overrides=[
        Parameter("robot", value="stanford_arm"), Parameter("mode", value="feedforward")])
    sent = []
    try:
        node._pub = type("Pub", (), {"publish": lambda self, msg: sent.append(list(msg.data))})()
        # finite, but its squares overflow (past the reference checks: the tick's own guard)
        huge = np.full(robot.n, 1e200)
        q = np.array([0.3, 0.9, 0.6, -0.4, 0.5, 0.2])
        node._pending = (rosnode.reference_from_points([0.0], q[None], huge[None]), 0.0)
        with np.errstate(invalid="ignore"):  # as robodyn-ros2's main() sets it
            node._tick()
        assert sent == []
        node._pending = node.prepare_reference(_point_msg(robot.joint_names, q, np.ones(robot.n)))
        node._tick()
        assert len(sent) == 1 and np.all(np.isfinite(sent[0]))
    finally:
        node.destroy_node()


# --- nodes over ROS 2 ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", rosnode.EXECUTORS)
def test_the_nodes_run_until_sigint_or_sigterm_and_stop_within_half_a_second(ros, kind):
    """Issue 14: without ``duration`` (as a user starts them) the nodes spun at 100 % CPU under
    the EventsExecutor, published nothing and ignored SIGINT and SIGTERM. Here, with each
    executor, a simulator and a controller run in each of two namespaces, one per signal; each
    pair closes the loop (commands computed from the simulator's joint states), then each
    process gets its signal and must exit with status 0 within 0.5 s."""
    robot = robodyn.robots.intelledex_605()
    cases = [(kind, sig) for sig in (signal.SIGINT, signal.SIGTERM)]
    got = {}
    procs = {}
    for i, (kind, sig) in enumerate(cases):
        ns = f"/x{i}"
        got[i] = []
        ros.listen(commands=True, topic=f"{ns}/{rosnode.COMMANDS}", into=got[i])
        common = ("robot:=intelledex_605", "rate_hz:=50.0", f"executor:={kind}")
        procs[i] = (ros.start("sim", *common, "q0:=[0.0, 1.0, 0.0, 0.0, 0.0, 0.0]",
                              ros_args=("-r", f"__ns:={ns}")),
                    ros.start("node", *common, ros_args=("-r", f"__ns:={ns}")))
    # every pair commands: gravity compensation at the simulator's (held) q0
    g = _clip(robot, robot.gravity_torques(np.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])))

    def all_commanding():
        with ros.lock:
            return all(c and np.allclose(c[-1][1], g, rtol=1e-9, atol=1e-9) for c in got.values())

    assert ros.wait_for(all_commanding, 60.0, every=0.1), "\n".join(
        f"{cases[i]}: {len(got[i])} commands\n" + ros.output(p[1]) for i, p in procs.items())
    time.sleep(0.3)  # a few more ticks, so that a signal lands while callbacks are running
    for i, (kind, sig) in enumerate(cases):
        for proc in procs[i]:
            assert proc.poll() is None, ros.output(proc)
            wall, start = time.time(), time.monotonic()
            proc.send_signal(sig)
            try:
                status = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{kind}, {sig.name}: still running 10 s after the signal\n"
                            + ros.output(proc))
            took = time.monotonic() - start
            log = ros.output(proc)
            assert status == 0, (kind, sig.name, status, log)
            # when the node logged its summary (ROS log stamps are wall-clock), for the report
            found = re.search(r"\[(\d+\.\d+)\] \[[\w.]*robodyn_\w+\]: summary", log)
            summary = float(found.group(1)) - wall if found else None
            assert took < 0.5, (kind, sig.name, f"exited {took:.3f} s after the signal, summary "
                                f"logged after {summary} s", log[-600:])


def test_event_trigger_publishes_one_command_per_joint_state(ros):
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    ros.listen(commands=True)
    ctrl = ros.start("node", "robot:=intelledex_605", "trigger:=joint_states")
    q0 = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2])
    assert ros.wait_for(lambda: ros.last_command() is not None, 30.0,
                        lambda: ros.send_state(names, q0, np.zeros(6)), every=0.1), (
        ros.output(ctrl))
    time.sleep(0.3)  # nothing is published between joint states (no timer)
    ros.clear()
    time.sleep(0.3)
    assert ros.commands == []
    rng = np.random.default_rng(3)
    Q = q0 + rng.uniform(-0.3, 0.3, (40, 6))
    for q in Q:
        ros.send_state(names, q, np.zeros(6))
        time.sleep(0.01)
    ros.wait_for(lambda: len(ros.commands) >= len(Q), 5.0)
    time.sleep(0.2)
    with ros.lock:
        seen = np.array([c for _, c in ros.commands])
    # one command per state, each g(q) of its state, in order; the subscription keeps the
    # latest state only (a controller wants the newest), so a state that arrives while the
    # node is not scheduled can be overwritten by the next: allow a few such losses
    want = np.array([_clip(robot, robot.gravity_torques(q)) for q in Q])
    index = []
    for c in seen:
        match = np.flatnonzero(np.all(np.isclose(want, c, rtol=1e-9, atol=1e-9), axis=1))
        assert match.size == 1, (c, want)
        index.append(int(match[0]))
    assert index == sorted(set(index)), index
    assert len(index) >= 0.8 * len(Q), (len(index), len(Q))
    assert ros.stop(ctrl, signal.SIGINT) == 0


def test_the_urdf_comes_from_the_robot_description_topic(ros):
    """Neither node has a robot parameter: both take the URDF that a robot_state_publisher-like
    publisher offers on /robot_description (transient local: published before they start)."""
    robot = robodyn.robots.intelledex_605()
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = ros.node.create_publisher(String, "robot_description", qos)
    pub.publish(String(data=robodyn.robots.urdf_path("intelledex_605").read_text()))
    ros.listen(commands=True, states=True)
    q0 = np.array([0.1, 0.8, 0.5, 0.2, -0.3, 0.4])
    sim = ros.start("sim", f"q0:={q0.tolist()}", "rate_hz:=200.0")
    ctrl = ros.start("node", "rate_hz:=200.0")
    g = _clip(robot, robot.gravity_torques(q0))
    assert ros.wait_for(_matches(ros, g), 40.0, every=0.1), (ros.output(sim) + ros.output(ctrl))
    with ros.lock:
        assert ros.states and ros.states[-1][1] == list(robot.joint_names)
    assert ros.stop(ctrl) == 0 and ros.stop(sim) == 0
    assert "waiting for the URDF on /robot_description" in ros.output(ctrl)


def test_feedforward_commands_are_inverse_dynamics_and_survive_bad_references(ros):
    robot = robodyn.robots.stanford_arm()
    names = list(robot.joint_names)
    ros.listen(commands=True)
    ctrl = ros.start("node", "robot:=stanford_arm", "mode:=feedforward", "rate_hz:=200.0",
                     "max_points:=500")
    rng = np.random.default_rng(7)
    perm = rng.permutation(robot.n)
    shuffled = [names[i] for i in perm]

    def expect(q, qd, qdd):
        return _clip(robot, robot.inverse_dynamics(q, qd, qdd))

    # a reference point, names shuffled: the command is inverse dynamics in joint order
    q = np.array([0.3, 0.9, 0.6, -0.4, 0.5, 0.2])
    qd, qdd = rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 6)
    good = _point_msg(shuffled, q[perm], qd[perm], qdd[perm])
    want = expect(q, qd, qdd)
    assert ros.wait_for(_matches(ros, want), 20.0, lambda: ros.ref_pub.publish(good)), (
        f"no command equal to inverse_dynamics: last {ros.last_command()}, want {want}\n"
        + ros.output(ctrl))
    assert np.all(np.abs(want) < robot.effort_limits)  # unclipped, so the check is exact ID

    # malformed references are rejected, the node keeps commanding the last good one (paced:
    # the reference queue keeps the last 10)
    for what, bad in _malformed_references(names) * 2:
        ros.ref_pub.publish(bad)
        time.sleep(0.01)
    time.sleep(0.2)
    ros.clear()
    assert ros.wait_for(lambda: len(ros.commands) >= 20, 5.0)
    assert ctrl.poll() is None, ros.output(ctrl)
    with ros.lock:
        seen = np.array([c for _, c in ros.commands])
    np.testing.assert_allclose(seen, np.broadcast_to(want, seen.shape), rtol=1e-9, atol=1e-9)

    # the poisoned reference of issue 14 (finite positions of 1e308) and one over max_points
    # are rejected too: the commands stay those of the last good reference
    poisoned = rosnode.trajectory_message(names, [0.0, 0.5], [q, np.full(6, 1e308)])
    big = rosnode.trajectory_message(names, np.arange(501) * 1e-3, np.tile(q, (501, 1)))
    for bad in (poisoned, big):
        ros.ref_pub.publish(bad)
        time.sleep(0.05)
    ros.clear()
    assert ros.wait_for(lambda: len(ros.commands) >= 20, 5.0)
    with ros.lock:
        seen = np.array([c for _, c in ros.commands])
    np.testing.assert_allclose(seen, np.broadcast_to(want, seen.shape), rtol=1e-9, atol=1e-9)

    # it is still listening: a new point with a large acceleration, clipped at the limits
    qdd2 = np.array([40.0, -40.0, 30.0, 20.0, -20.0, 20.0])
    want2 = expect(q, qd, qdd2)
    assert np.any(np.abs(robot.inverse_dynamics(q, qd, qdd2)) > robot.effort_limits)
    fast = _point_msg(names, q, qd, qdd2)
    assert ros.wait_for(_matches(ros, want2), 10.0, lambda: ros.ref_pub.publish(fast)), (
        f"last {ros.last_command()}, want {want2}")
    assert ros.stop(ctrl) == 0
    log = ros.output(ctrl)
    assert "rejected a reference trajectory" in log
    found = re.search(r"rejected joint_states=(\d+) reference=(\d+)", log)
    assert found and int(found.group(2)) >= len(_malformed_references(names)) + 2, log


def test_computed_torque_law_stale_fallback_and_malformed_joint_states(ros):
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    kp = np.array([100.0, 120.0, 140.0, 160.0, 180.0, 200.0])
    kd = 25.0
    gains = {"kp": kp}
    ros.listen(commands=True)
    ctrl = ros.start("node", "robot:=intelledex_605", "mode:=computed_torque",
                     "rate_hz:=200.0", f"kp:={kp.tolist()}", f"kd:={kd}",
                     "joint_state_timeout:=1.0")
    rng = np.random.default_rng(11)
    perm = rng.permutation(robot.n)
    q = np.array([0.2, 1.2, -0.3, 0.4, 0.1, -0.2])
    qd = np.array([0.1, -0.2, 0.3, 0.0, 0.2, -0.1])
    q_r = q + rng.uniform(-0.05, 0.05, 6)
    qd_r, qdd_r = rng.uniform(-0.5, 0.5, 6), rng.uniform(-1, 1, 6)
    last_good = [0.0]

    def send_state():
        ros.send_state([names[i] for i in perm], q[perm], qd[perm])
        last_good[0] = time.monotonic()

    def expect():
        v = qdd_r + gains["kp"] * (q_r - q) + kd * (qd_r - qd)
        return _clip(robot, robot.inverse_dynamics(q, qd, v))

    # before any reference: gravity compensation at the measured q
    gravity = _clip(robot, robot.gravity_torques(q))
    assert ros.wait_for(_matches(ros, gravity), 20.0, send_state), (
        f"last {ros.last_command()}, want g(q) {gravity}\n" + ros.output(ctrl))
    # with a reference point: the computed-torque law
    ref = _point_msg(names, q_r, qd_r, qdd_r)

    def send_both():
        send_state()
        ros.ref_pub.publish(ref)

    assert ros.wait_for(_matches(ros, expect()), 10.0, send_both), (
        f"last {ros.last_command()}, want {expect()}")

    # malformed joint states (with other values, so that taking one would show) are rejected:
    # the law stays at the last good state
    qb, vb = q + 0.3, qd - 0.2
    bad = [(names[:-1] + ["nobody"], qb, vb), (names[:-1], qb[:-1], vb[:-1]),
           (names[:-1] + names[:1], qb, vb), (names, qb[:-1], vb), (names, qb, vb[:-2]),
           (names, np.where(np.arange(6) == 1, np.nan, qb), vb),
           (names, qb, np.where(np.arange(6) == 4, -np.inf, vb)), (names, qb, [])]
    for nm, qq, vv in bad * 2:  # paced: the joint-state queue keeps the last one
        ros.send_state(nm, qq, vv)
        time.sleep(0.01)
    time.sleep(0.05)
    ros.clear()
    assert ros.wait_for(lambda: len(ros.commands) >= 10, 5.0)
    with ros.lock:
        seen = np.array([c for _, c in ros.commands])
    assert time.monotonic() - last_good[0] < 0.9, "too slow to test before the timeout"
    np.testing.assert_allclose(seen, np.broadcast_to(expect(), seen.shape), rtol=1e-9,
                               atol=1e-9)

    # no more joint states: after the timeout, gravity compensation at the last good q
    assert ros.wait_for(_matches(ros, gravity), 5.0), f"last {ros.last_command()}"
    assert time.monotonic() - last_good[0] > 0.9
    # and back to computed torque when they resume
    assert ros.wait_for(_matches(ros, expect()), 5.0, send_state)
    assert ctrl.poll() is None

    # gains set through the parameter service while it runs: refused with a reason (the old
    # ones kept), then accepted and in force from the next tick on
    results = ros.set_parameters("robodyn_controller", kp=-5.0)
    assert not results[0].successful and "non-negative" in results[0].reason
    ros.clear()
    assert ros.wait_for(lambda: len(ros.commands) >= 5, 5.0, send_state)
    with ros.lock:
        seen = np.array([c for _, c in ros.commands])
    np.testing.assert_allclose(seen, np.broadcast_to(expect(), seen.shape), rtol=1e-9, atol=1e-9)
    kp = np.array([50.0, 60.0, 70.0, 80.0, 90.0, 100.0])
    old = expect()
    gains["kp"] = kp
    assert not np.allclose(old, expect())
    send_state()
    results = ros.set_parameters("robodyn_controller", kp=kp.tolist())
    answered = time.monotonic()
    assert results[0].successful, results[0].reason
    want = expect()
    # a command still in flight at the answer may carry the old gains; none after one period
    assert ros.wait_for(lambda: any(t > answered + 0.02 for t, _ in ros.commands), 5.0,
                        send_state, every=0.005)
    with ros.lock:
        after = np.array([c for t, c in ros.commands if t > answered + 0.02])
    np.testing.assert_allclose(after, np.broadcast_to(want, after.shape), rtol=1e-9, atol=1e-9)
    assert ros.stop(ctrl, signal.SIGINT) == 0
    log = ros.output(ctrl)
    assert "rejected a joint_states message" in log
    found = re.search(r"rejected joint_states=(\d+)", log)
    assert found and int(found.group(1)) >= len(bad), log
    assert "gravity compensation at the last good position" in log
    assert "computed_torque resumed" in log


def test_closed_loop_with_the_simulated_arm_tracks_the_thesis_motion(ros):
    robot = robodyn.robots.intelledex_605()
    names = list(robot.joint_names)
    motion = trajectories.thesis_motion()
    q0 = motion(0.0)[0]
    ros.listen(states=True)
    sim = ros.start("sim", "robot:=intelledex_605", f"q0:={q0.tolist()}", "rate_hz:=1000.0")
    ctrl = ros.start("node", "robot:=intelledex_605", "mode:=computed_torque", "rate_hz:=1000.0",
                     "kp:=400.0", "kd:=40.0")
    # wait until the controller commands (it has the simulator's joint states)
    assert ros.wait_for(lambda: "no reference yet" in ros.output(ctrl), 30.0), (
        ros.output(sim) + ros.output(ctrl))
    assert ros.wait_for(lambda: len(ros.states) > 10, 10.0), ros.output(sim)
    # the seed motion, sampled every 20 ms with velocities and accelerations
    ts = np.arange(0.0, motion.duration + 1e-12, 0.02)
    Q, QD, QDD = motion.sample(ts)
    # the reference is sent once: wait until the controller's subscription is matched
    assert ros.wait_for(lambda: ros.ref_pub.get_subscription_count() > 0, 10.0)
    time.sleep(0.2)
    ros.clear()
    sent = time.time()  # the simulator stamps its joint states with the system clock
    ros.ref_pub.publish(rosnode.trajectory_message(names, ts, Q, QD, QDD))
    time.sleep(motion.duration + 1.0)
    with ros.lock:
        states = list(ros.states)
    assert ros.stop(ctrl) == 0 and ros.stop(sim, signal.SIGINT) == 0
    t = np.array([s[0] for s in states]) - sent
    assert [s[1] for s in states[:1]] == [names]
    q = np.array([s[2] for s in states])
    # the controller's reference starts (its time 0) when it has read the message, which is
    # the delivery latency after `sent`: the error is measured against the reference as the
    # controller ran it, shifted by that latency, fitted to 1 ms within 0-0.25 s. (Measured
    # from `sent`, |qd_ref| times the latency counted as tracking error: tens of ms of latency
    # at load 25 made it fail once, while the loop tracked as well as ever.)
    moving = t <= motion.duration
    shifts = np.arange(0.0, 0.25, 0.001)
    worst = [np.abs(q[moving] - motion.sample(t[moving] - d)[0]).max() for d in shifts]
    latency = shifts[int(np.argmin(worst))]
    err = np.abs(q - motion.sample(t - latency)[0]).max(axis=1)
    moving = t - latency <= motion.duration
    final = t - latency > motion.duration + 0.5
    print(f"\nclosed loop, Intelledex 605 thesis motion over ROS 2: {len(t)} joint states, "
          f"reference started {1e3 * latency:.0f} ms after it was sent, "
          f"max |q - q_ref| {err[moving].max():.2e} rad while moving "
          f"({np.abs(q - motion.sample(t)[0]).max(axis=1)[t <= motion.duration].max():.2e} "
          f"against the reference from the send), {err[final].max():.2e} rad 0.5 s after "
          f"the end")
    # (the longest gap between joint states: the machine's share in the error, if it fails)
    gap = f"longest gap between joint states {1e3 * np.diff(t).max():.0f} ms"
    assert latency < 0.2, (latency, gap)  # not at the edge of the fitted range: it did start
    assert moving.sum() > 500 and final.sum() > 50, (moving.sum(), final.sum(), gap)
    assert err[moving].max() < 0.08, (err[moving].max(), gap)
    assert err[final].max() < 2e-3, (err[final].max(), gap)
    np.testing.assert_allclose(q[-1], np.full(6, math.pi / 3), atol=2e-3)


def test_bad_parameters_exit_with_status_2(ros):
    cases = ((("robot:=intelledex_605", "mode:=torque_please"), "mode: expected one of"),
             (("robot:=intelledex_605", "executor:=fast"), "executor: expected one of"),
             (("robot:=intelledex_605", "kp:=[1.0, 2.0]"), "kp: expected"))
    procs = [ros.start("node", *params) for params, _ in cases]
    for proc, (_, why) in zip(procs, cases):
        assert proc.wait(timeout=30) == 2, ros.output(proc)
        assert why in ros.output(proc)
