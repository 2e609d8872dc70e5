"""The control laws of the ROS 2 node over real transport: the event trigger,
feedforward, and computed torque.

Shared fixture and helpers: tests/_ros.py (skipped without rclpy).
"""

import pytest

from _ros import (  # noqa: F401  (ros is a fixture)
    _clip,
    _malformed_references,
    _matches,
    _point_msg,
    np,
    re,
    robodyn,
    ros,
    rosnode,
    signal,
    time,
)


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
