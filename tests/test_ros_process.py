"""The ROS 2 nodes as processes: signals, the robot_description topic, and bad
parameters.

Shared fixture and helpers: tests/_ros.py (skipped without rclpy).
"""

import pytest

from _ros import (  # noqa: F401  (ros is a fixture)
    _clip,
    _matches,
    DurabilityPolicy,
    np,
    QoSProfile,
    re,
    ReliabilityPolicy,
    robodyn,
    ros,
    rosnode,
    signal,
    String,
    subprocess,
    time,
)


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


def test_bad_parameters_exit_with_status_2(ros):
    cases = ((("robot:=intelledex_605", "mode:=torque_please"), "mode: expected one of"),
             (("robot:=intelledex_605", "executor:=fast"), "executor: expected one of"),
             (("robot:=intelledex_605", "kp:=[1.0, 2.0]"), "kp: expected"))
    procs = [ros.start("node", *params) for params, _ in cases]
    for proc, (_, why) in zip(procs, cases):
        assert proc.wait(timeout=30) == 2, ros.output(proc)
        assert why in ros.output(proc)
