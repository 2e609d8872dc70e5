"""Joint limits in the simulator: hard stops by default (both engines, the same to rounding),
or a loud report, or nothing; and what the user sees of them (summary, command line)."""

import shutil
import subprocess
import warnings

import numpy as np
import pytest

import robodyn


@pytest.fixture(scope="module")
def stanford():
    return robodyn.robots.stanford_arm()


def _passive(robot, engine, **kw):
    q0 = np.clip(np.full(robot.n, 0.3), *robot.position_limits)
    return robodyn.simulate(robot, None, None, duration=kw.pop("duration", 1.5), dt=1e-3,
                            q0=q0, engine=engine, **kw)


@pytest.mark.parametrize("engine", ["cpp", "python"])
def test_prismatic_joint_stays_within_its_limits(stanford, engine):
    """robodyn simulate stanford_arm --controller none: the sliding joint falls onto its stop
    (1.27 m travel) and stays there instead of sliding hundreds of metres."""
    lower, upper = stanford.position_limits
    res = _passive(stanford, engine)
    assert res.stats["engine"] == engine
    assert np.all(res.q >= lower - 1e-12) and np.all(res.q <= upper + 1e-12)
    k = 2  # the prismatic joint
    assert stanford.spec.bodies[k].joint_type == "prismatic"
    assert res.limit_hits[k] > 0
    # it rests on a stop: at the bound, not moving outward
    at = np.isclose(res.q[-1, k], [lower[k], upper[k]], rtol=0, atol=1e-12)
    assert at.any()
    assert abs(res.qd[-1, k]) < 1e-6 or (res.qd[-1, k] > 0) == bool(at[0])
    text = res.summary()
    assert "hard stops" in text and "stopped at its limits" in text
    assert "[" + f"{lower[k]:g}, {upper[k]:g}" + "] m" in text


def test_engines_agree_with_stops(stanford):
    a, b = _passive(stanford, "cpp"), _passive(stanford, "python")
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(a.limit_hits, b.limit_hits)
    np.testing.assert_allclose(a.limit_excess, b.limit_excess, rtol=1e-6, atol=1e-12)


def test_report_mode_warns_and_does_not_stop(stanford):
    lower, upper = stanford.position_limits
    with pytest.warns(RuntimeWarning, match="went beyond its limits"):
        res = _passive(stanford, "cpp", joint_limits="report")
    k = 2
    assert res.q[:, k].max() > upper[k] + 0.1 or res.q[:, k].min() < lower[k] - 0.1
    assert res.limit_excess[k] > 0.1
    assert "WARNING: joint limits exceeded and NOT enforced" in res.summary()


def test_ignore_mode_is_silent(stanford):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = _passive(stanford, "cpp", joint_limits="ignore")
    assert not res.limit_hits.any() and "limit" not in res.summary()


def _slider(lower, upper):
    """One prismatic joint along z under gravity -z: a mass dropping onto its lower stop."""
    rows = [dict(theta=0.0, d=0.0, a=0.0, alpha=0.0, joint="prismatic", mass=2.0,
                 com=[0.0, 0.0, 0.0], inertia=np.diag([0.01, 0.01, 0.01]), limits=(lower, upper))]
    return robodyn.from_dh(rows, gravity=(0.0, 0.0, -9.81), name="slider")


@pytest.mark.parametrize("engine", ["cpp", "python"])
def test_restitution(engine):
    robot = _slider(-1.0, 1.0)
    lower, upper = robot.position_limits
    assert (lower[0], upper[0]) == (-1.0, 1.0)
    drop = dict(q0=[0.0], duration=1.2, dt=1e-4, engine=engine)
    # plastic stop (the default): lands after sqrt(2 / 9.81) = 0.45 s and stays on the stop
    dead = robodyn.simulate(robot, None, None, **drop)
    assert dead.q[-1, 0] == -1.0 and dead.qd[-1, 0] == 0.0
    t_land = dead.t[np.argmax(dead.q[:, 0] <= -1.0)]
    assert abs(t_land - np.sqrt(2.0 / 9.81)) < 2e-4
    # elastic: bounces back up to (nearly) where it started, at t = 2 x 0.45 s
    bounce = robodyn.simulate(robot, None, None, restitution=1.0, **drop)
    assert bounce.q[:, 0].min() >= -1.0
    top = bounce.q[bounce.t > t_land + 0.1, 0].max()
    assert abs(top - 0.0) < 0.01  # the projection loses at most |v| dt of height
    assert bounce.limit_hits[0] >= 1


def test_bad_options():
    robot = _slider(-1.0, 1.0)
    with pytest.raises(ValueError, match="joint_limits"):
        robodyn.simulate(robot, joint_limits="clamp")
    with pytest.raises(ValueError, match="restitution"):
        robodyn.simulate(robot, restitution=1.5)


def test_command_line_reports_the_stop():
    exe = shutil.which("robodyn")
    if exe is None:
        pytest.skip("the robodyn console script is not on PATH")
    proc = subprocess.run([exe, "simulate", "stanford_arm", "--controller", "none",
                           "--duration", "3"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "joint limits (hard stops, restitution 0)" in proc.stdout
    assert "stopped at its limits" in proc.stdout


# ---------------------------------------------------------------- free-floating robots

FLOATING_URDF = """<robot name="limited">
  <link name="body"><inertial><mass value="5"/>
    <inertia ixx="0.2" ixy="0" ixz="0" iyy="0.3" iyz="0" izz="0.25"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.3 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <link name="hand"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.005"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="body"/><child link="arm"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-0.5" upper="0.5" effort="10" velocity="10"/></joint>
  <joint name="wrist" type="revolute"><parent link="arm"/><child link="hand"/>
    <origin xyz="0.6 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/></joint>
  <robodyn gravity="0 0 0"/>
</robot>"""


@pytest.fixture(scope="module")
def floating():
    """A free-flying body with a two-joint arm whose shoulder (+-0.5 rad) is driven into its
    stop by the initial velocity; no gravity, no losses: a free system."""
    robot = robodyn.load_urdf(FLOATING_URDF, floating_base=True)
    q0 = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    v0 = np.r_[0.1, -0.2, 0.3, 0.05, 0.0, 0.0, 2.0, -1.5]
    return robot, q0, v0


def _free(robot, q0, v0, **kw):
    return robodyn.simulate(robot, q0=q0, qd0=v0, duration=kw.pop("duration", 1.0),
                            dt=1e-3, control_rate="continuous", **kw)


@pytest.mark.parametrize("integrator", ["rk4", "euler", "rk45"])
def test_floating_robot_joint_stops(floating, integrator):
    """The joints of a floating robot stop at their limits like a fixed robot's, in every
    manifold integrator; the result reports them in the layout of qd (the base's six
    entries unbounded, never hit) and the summary names the joint."""
    robot, q0, v0 = floating
    free = _free(robot, q0, v0, joint_limits="ignore")
    assert free.q[:, 7].max() > 1.0  # unlimited, the shoulder swings far past its stop
    res = _free(robot, q0, v0, integrator=integrator)
    assert res.q[:, 7].max() <= 0.5 and res.q[:, 7].min() >= -0.5
    assert res.q[:, 8].max() <= 1.0 and res.q[:, 8].min() >= -1.0
    assert res.limit_hits.shape == (8,) and res.limit_hits[6] >= 1
    assert not res.limit_hits[:6].any() and 0.0 < res.limit_excess[6] < 0.1
    lower, upper = res.position_limits
    assert lower.shape == upper.shape == (8,)
    assert np.all(np.isinf(lower[:6])) and (lower[6], upper[6]) == (-0.5, 0.5)
    text = res.summary()
    assert "joint shoulder stopped at its limits [-0.5, 0.5] rad" in text
    # stopped dead: right after the hit the shoulder is at its limit, not moving outward
    k = int(np.argmax(res.q[:, 7] >= 0.5))
    assert res.q[k, 7] == 0.5 and res.qd[k, 6] <= 1e-12


def test_floating_stop_keeps_the_momentum(floating, monkeypatch):
    """The stop is an internal impulse (M dv = E lam): the base takes the reaction, and the
    base's velocity takes up what moving the joint back onto its limit changed, so the total
    momentum of the free system stays to rounding; an elastic stop also keeps the kinetic
    energy (to the overshoot's effect). Without the reaction (only the joint's velocity
    zeroed, the fixed-base rule) the momentum jumps by about 1 N m s."""
    robot, q0, v0 = floating
    res = _free(robot, q0, v0)
    h0 = np.abs(res.momentum[0]).max()
    ang, lin = res.momentum_drift
    assert max(ang, lin) < 1e-11 * h0
    elastic = _free(robot, q0, v0, restitution=1.0, duration=2.0)
    assert elastic.limit_hits[6] >= 2
    assert max(elastic.momentum_drift) < 1e-11 * h0
    assert abs(elastic.kinetic[-1] - elastic.kinetic[0]) < 1e-3 * elastic.kinetic[0]
    # the plastic stop takes the shoulder's relative motion's energy away
    assert res.kinetic[-1] < 0.95 * res.kinetic[0]
    # the fixed-base rule on the joints alone (no reaction) would not keep it
    from robodyn.sim import limits as S

    monkeypatch.setattr(S.FloatingLimits, "__call__",
                        lambda self, q, v: S.JointLimits.__call__(self, q[7:], v[6:]))
    assert max(_free(robot, q0, v0).momentum_drift) > 0.1 * h0


def test_floating_report_mode_warns_and_does_not_stop(floating):
    robot, q0, v0 = floating
    with pytest.warns(RuntimeWarning, match="joint shoulder went beyond its limits"):
        res = _free(robot, q0, v0, joint_limits="report", integrator="rk45")
    assert res.q[:, 7].max() > 1.0 and res.limit_excess[6] > 0.5
    assert max(res.momentum_drift) < 1e-9


def _stops_as_written(limits, q, v):
    """The floating stop rule written plainly (with fresh arrays), as it was before its
    buffers were preallocated: the oracle of the buffered version."""
    qj, vj = q[7:], v[6:]
    if not ((qj > limits.upper).any() or (qj < limits.lower).any()):
        return False
    if not limits.stops:
        robodyn.sim.limits.JointLimits.__call__(limits, qj, vj)
        return False
    robot = limits.robot
    h0 = np.asarray(robot.momentum(q, v))
    before = vj.copy()
    robodyn.sim.limits.JointLimits.__call__(limits, qj, vj)
    idx = np.flatnonzero(vj != before)
    if idx.size:
        wanted = vj[idx] - before[idx]
        vj[idx] = before[idx]
        idx = idx + 6
        MinvE = np.linalg.solve(robot.mass_matrix(q), np.eye(v.shape[0])[:, idx])
        v += MinvE @ np.linalg.solve(MinvE[idx], wanted)
    A = np.array(robot.centroidal_momentum_matrix(q)[:, :6])
    c = np.asarray(robot.center_of_mass(q))
    A[:3] += np.cross(c, A[3:].T).T
    v[:6] += np.linalg.solve(A, h0 - np.asarray(robot.momentum(q, v)))
    return True


@pytest.mark.parametrize("mode, restitution", [("stop", 0.0), ("stop", 0.6), ("report", 0.0)])
def test_floating_stops_equal_the_plain_rule(floating, mode, restitution):
    """The buffered stop layer computes what the plain rule computes on states within,
    beyond one and beyond both limits, moving outward or inward: the positions and the
    record (hits, excess) to the bit, the velocities to rounding (the layer solves its systems
    with _core._solve, which allocates nothing, where the rule calls LAPACK through
    np.linalg.solve); and across whole simulations in every manifold integrator."""
    from robodyn.sim import limits as S

    robot, q0, v0 = floating
    rng = np.random.default_rng(11)
    fast = S.joint_limits(robot, mode, restitution, floating=True)
    plain = S.joint_limits(robot, mode, restitution, floating=True)
    q, v = q0.copy(), v0.copy()  # the loop's arrays: the same objects at every call
    changed = 0
    for trial in range(60):
        base = rng.normal(size=7)
        base[3:7] /= np.linalg.norm(base[3:7])
        joints = rng.uniform(-1.3, 1.3, 2) * (trial % 3 != 0)
        q[:] = np.r_[base, joints]
        v[:] = rng.normal(size=8)
        q2, v2 = q.copy(), v.copy()
        r1, r2 = fast(q, v), _stops_as_written(plain, q2, v2)
        assert r1 == r2
        changed += r1
        assert q.tobytes() == q2.tobytes()
        np.testing.assert_allclose(v, v2, rtol=0, atol=1e-13 * np.abs(v2).max())
        if not r1:
            assert v.tobytes() == v2.tobytes()
    assert fast.hits.tobytes() == plain.hits.tobytes()
    assert fast.excess.tobytes() == plain.excess.tobytes()
    assert (changed > 10) == (mode == "stop") and plain.hits.sum() > 10
    if mode != "stop":
        return
    for integrator in ("rk4", "euler", "rk45"):
        res = _free(robot, q0, v0, integrator=integrator, restitution=restitution, duration=0.5)
        saved = S.FloatingLimits.__call__
        try:
            S.FloatingLimits.__call__ = _stops_as_written
            ref = _free(robot, q0, v0, integrator=integrator, restitution=restitution,
                        duration=0.5)
        finally:
            S.FloatingLimits.__call__ = saved
        assert res.limit_hits[6] >= 1
        assert res.limit_hits.tobytes() == ref.limit_hits.tobytes()
        np.testing.assert_allclose(res.q, ref.q, rtol=0, atol=1e-11)
        np.testing.assert_allclose(res.qd, ref.qd, rtol=0, atol=1e-11 * np.abs(ref.qd).max())


@pytest.mark.allocations
def test_floating_stop_layer_allocates_nothing(floating):
    """A step that ends with every joint within its limits (almost every step) and a step
    that stops a joint (the impulse and the momentum's correction: two solves through
    _core._solve) allocate nothing in the stop layer (tracemalloc sees numpy's buffers and
    every Python object: the measure of tests/test_noalloc.py); the probe does see what the
    plain rule allocates at a stop (its index arrays and np.linalg.solve: 3.7 kB a step in
    the stop layer before it was buffered)."""
    import itertools
    import tracemalloc

    from robodyn.sim import limits as S

    robot, q0, v0 = floating
    limits = S.joint_limits(robot, "stop", 0.0, floating=True)
    q, v = q0.copy(), v0.copy()
    q[7:] = (0.2, 0.1)
    inside, outside = q.copy(), q.copy()
    outside[7] = 0.5004  # beyond the shoulder's stop, moving outward (v0[6] = 2)
    copyto = np.copyto

    def peak(state, repeats, layer=limits):
        def call():
            copyto(q, state)
            copyto(v, v0)
            layer(q, v)
        for _ in range(3):
            call()
        tracemalloc.start()
        try:
            call()
            base, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            for _ in itertools.repeat(None, repeats):
                call()
            return tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()

    hits = limits.hits[0]
    assert peak(inside, 1000) < 256 and limits.hits[0] == hits
    assert peak(outside, 1000) < 256 and limits.hits[0] == hits + 1004
    # the state was stopped (and is the rule's): the probe ran the stop
    copyto(q, outside)
    copyto(v, v0)
    q2, v2 = q.copy(), v.copy()
    assert limits(q, v) and _stops_as_written(limits, q2, v2)
    assert q[7] == 0.5 and abs(v[6]) < 1e-12 and np.allclose(v, v2, rtol=0, atol=1e-13)
    plain = S.joint_limits(robot, "stop", 0.0, floating=True)
    assert peak(outside, 10, lambda q, v: _stops_as_written(plain, q, v)) > 1000
