"""Force elements (robodyn.model.forces): springs, dampers, actuators and body wrenches against a
two-body system written out by hand in NumPy, energy and power balances, finite differences
and bad input."""

import math
import warnings

import numpy as np
import pytest

import robodyn
from robodyn import BodyForce, Curve, RotationalSpring, Spring
from robodyn.model.spec import Body, ModelSpec

ORIGIN_ROLL = 0.3  # the second joint's frame is turned about x by this at q = 0


def _rot(axis, a):
    """Rotation by a (real or complex: complex-step derivatives) about unit axis x, y or z."""
    c, s = np.cos(a), np.sin(a)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    R = np.eye(3, dtype=complex if np.iscomplexobj(a) else float)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def _two_link(gravity=(0.0, 0.0, -9.81)):
    """Joint 1 about z at the origin; joint 2 about its frame's y at (1, 0, 0), that frame
    rolled by ORIGIN_ROLL about x."""
    T2 = np.eye(4)
    T2[:3, :3] = _rot("x", ORIGIN_ROLL)
    T2[:3, 3] = (1.0, 0.0, 0.0)
    bodies = [
        Body("upper", "j1", -1, "revolute", np.array([0.0, 0.0, 1.0]), np.eye(4), mass=2.0,
             com=np.array([0.5, 0.0, 0.0]), inertia=np.diag([0.01, 0.2, 0.2])),
        Body("lower", "j2", 0, "revolute", np.array([0.0, 1.0, 0.0]), T2, mass=1.0,
             com=np.array([0.4, 0.0, 0.05]), inertia=np.diag([0.02, 0.1, 0.09])),
    ]
    return robodyn.Robot(ModelSpec(bodies, gravity=np.array(gravity, dtype=float),
                                   name="two_link"))


def _poses(q):
    """Hand-written forward kinematics of _two_link: (R1, o1), (R2, o2) in the world."""
    R1 = _rot("z", q[0])
    R2 = R1 @ _rot("x", ORIGIN_ROLL) @ _rot("y", q[1])
    o2 = R1 @ np.array([1.0, 0.0, 0.0])
    return (R1, np.zeros(3)), (R2, o2)


def _world_point(q, link, p):
    R, o = _poses(q)[link]
    return R @ p + o


def _dpoint_dq(q, link, p, h=1e-20):
    """(3, 2) d x / dq of a point by complex steps through the hand-written kinematics."""
    cols = []
    for i in range(2):
        qc = np.array(q, dtype=complex)
        qc[i] += 1j * h
        cols.append(_world_point(qc, link, p).imag / h)
    return np.array(cols).T


SPRING_A = dict(p1=np.array([0.3, 0.1, 0.0]), p2=np.array([0.6, 0.0, 0.1]), k=50.0, c=3.0,
                l0=0.4, F=2.0)
SPRING_B = dict(p1=np.array([0.8, 0.05, 0.0]), world=np.array([0.5, 1.0, 0.5]), k=20.0, c=1.0)
ROT = dict(k=5.0, c=0.5, rest=0.2, N=-0.7)
WRENCH_WORLD = np.array([0.1, 0.2, 0.3, 1.0, -2.0, 0.5])
WRENCH_BODY = np.array([-0.3, 0.1, 0.2, 0.5, 0.4, -1.0])
POINT_BODY = np.array([0.2, 0.0, 0.1])


def _elements():
    return [
        Spring("upper", SPRING_A["p1"], "lower", SPRING_A["p2"], k=SPRING_A["k"],
               c=SPRING_A["c"], rest_length=SPRING_A["l0"], force=SPRING_A["F"]),
        Spring("lower", SPRING_B["p1"], None, SPRING_B["world"], k=SPRING_B["k"],
               c=SPRING_B["c"]),
        RotationalSpring("j2", k=ROT["k"], c=ROT["c"], rest=ROT["rest"], torque=ROT["N"]),
        BodyForce("lower", WRENCH_WORLD, frame="world"),
        BodyForce("upper", WRENCH_BODY, frame="body", point=POINT_BODY),
    ]


def _reference_Q(q, qd):
    """The generalized force by virtual work, Q_i = sum of F . dx/dq_i + M . dtheta/dq_i,
    everything from the hand-written kinematics."""
    Q = np.zeros(2)
    # spring A: tension f pulls x1 toward x2 (force f u on body 1, -f u on body 2)
    J1 = _dpoint_dq(q, 0, SPRING_A["p1"])
    J2 = _dpoint_dq(q, 1, SPRING_A["p2"])
    d = _world_point(q, 1, SPRING_A["p2"]) - _world_point(q, 0, SPRING_A["p1"])
    l = np.linalg.norm(d)
    u = d / l
    ldot = u @ ((J2 - J1) @ qd)
    f = SPRING_A["k"] * (l - SPRING_A["l0"]) + SPRING_A["c"] * ldot + SPRING_A["F"]
    Q += J1.T @ (f * u) + J2.T @ (-f * u)
    # spring B to the world, rest length the distance at q = 0
    l0 = np.linalg.norm(SPRING_B["world"] - _world_point(np.zeros(2), 1, SPRING_B["p1"]))
    Jb = _dpoint_dq(q, 1, SPRING_B["p1"])
    d = SPRING_B["world"] - _world_point(q, 1, SPRING_B["p1"])
    l = np.linalg.norm(d)
    u = d / l
    ldot = u @ (-Jb @ qd)
    f = SPRING_B["k"] * (l - l0) + SPRING_B["c"] * ldot
    Q += Jb.T @ (f * u)
    # the rotational spring opposes joint 2
    Q[1] -= ROT["k"] * (q[1] - ROT["rest"]) + ROT["c"] * qd[1] + ROT["N"]
    # wrenches: force through the point's motion, moment through the body's rotation
    # (angular velocity columns: z for joint 1; the lower body adds its joint axis)
    R1, _ = _poses(q)[0]
    R2, _ = _poses(q)[1]
    w1 = np.array([0.0, 0.0, 1.0])
    w2 = R1 @ _rot("x", ORIGIN_ROLL) @ np.array([0.0, 1.0, 0.0])
    Jw_lower = np.column_stack([w1, w2])
    Jw_upper = np.column_stack([w1, np.zeros(3)])
    Q += _dpoint_dq(q, 1, np.zeros(3)).T @ WRENCH_WORLD[3:] + Jw_lower.T @ WRENCH_WORLD[:3]
    Q += (_dpoint_dq(q, 0, POINT_BODY).T @ (R1 @ WRENCH_BODY[3:])
          + Jw_upper.T @ (R1 @ WRENCH_BODY[:3]))
    return Q


STATES = [(np.array([0.4, -0.9]), np.array([1.3, -0.6])),
          (np.array([-2.0, 2.5]), np.array([-0.2, 3.0])),
          (np.array([0.0, 0.0]), np.array([0.0, 0.0]))]


@pytest.mark.parametrize("q, qd", STATES)
def test_generalized_forces_match_virtual_work_by_hand(q, qd):
    robot = _two_link().with_forces(_elements())
    Q = robot.generalized_forces(q, qd)
    ref = _reference_Q(q, qd)
    np.testing.assert_allclose(Q, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_forces_moments_about_the_joints():
    """Q_i = z_i . ((x - o_i) x F) summed over the spring's forces on the bodies joint i
    moves: the spring's moment about each joint axis."""
    q, qd = STATES[0]
    robot = _two_link().with_forces([_elements()[0]])
    x1 = _world_point(q, 0, SPRING_A["p1"])
    x2 = _world_point(q, 1, SPRING_A["p2"])
    J1 = _dpoint_dq(q, 0, SPRING_A["p1"])
    J2 = _dpoint_dq(q, 1, SPRING_A["p2"])
    u = (x2 - x1) / np.linalg.norm(x2 - x1)
    f = (SPRING_A["k"] * (np.linalg.norm(x2 - x1) - SPRING_A["l0"])
         + SPRING_A["c"] * u @ ((J2 - J1) @ qd) + SPRING_A["F"])
    (R1, o1), (R2, o2) = _poses(q)
    z1 = np.array([0.0, 0.0, 1.0])
    z2 = R1 @ _rot("x", ORIGIN_ROLL) @ np.array([0.0, 1.0, 0.0])
    # joint 1 moves both points (the spring is internal to what it moves: zero moment),
    # joint 2 only x2, on which the force is -f u
    expected = np.array([z1 @ (np.cross(x1 - o1, f * u) + np.cross(x2 - o1, -f * u)),
                         z2 @ np.cross(x2 - o2, -f * u)])
    np.testing.assert_allclose(robot.generalized_forces(q, qd), expected, rtol=1e-12,
                               atol=1e-13)
    assert abs(expected[0]) < 1e-12  # an internal force has no moment about a shared axis
    states = robot.element_states(q, qd)
    assert states[0, 2] == pytest.approx(f, rel=1e-13)


def test_forward_and_inverse_dynamics_include_the_elements():
    rigid = _two_link()
    robot = rigid.with_forces(_elements())
    q, qd = STATES[0]
    tau = np.array([0.3, -1.1])
    Q = _reference_Q(q, qd)
    for method in ("aba", "crba", "kane"):
        qdd = robot.forward_dynamics(q, qd, tau, method=method)
        np.testing.assert_allclose(qdd, rigid.forward_dynamics(q, qd, tau + Q), rtol=1e-12)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), tau, rtol=1e-11, atol=1e-12)
    # a batch gives the rows' results
    Qb = robot.generalized_forces(np.stack([s[0] for s in STATES]),
                                  np.stack([s[1] for s in STATES]))
    for row, (qs, qds) in zip(Qb, STATES):
        np.testing.assert_allclose(row, robot.generalized_forces(qs, qds), rtol=1e-14)
    assert robot.forces[0].k == SPRING_A["k"] and len(robot.forces) == 5


def test_potential_energy_includes_the_springs():
    rigid = _two_link()
    robot = rigid.with_forces(_elements())
    q = STATES[1][0]
    lA = np.linalg.norm(_world_point(q, 1, SPRING_A["p2"]) - _world_point(q, 0, SPRING_A["p1"]))
    l0B = np.linalg.norm(SPRING_B["world"] - _world_point(np.zeros(2), 1, SPRING_B["p1"]))
    lB = np.linalg.norm(SPRING_B["world"] - _world_point(q, 1, SPRING_B["p1"]))
    V = (0.5 * SPRING_A["k"] * (lA - SPRING_A["l0"]) ** 2 + 0.5 * SPRING_B["k"] * (lB - l0B) ** 2
         + 0.5 * ROT["k"] * (q[1] - ROT["rest"]) ** 2)
    assert robot.potential_energy(q) == pytest.approx(rigid.potential_energy(q) + V, rel=1e-13)
    np.testing.assert_allclose(robot.rest_lengths, [SPRING_A["l0"], l0B], rtol=1e-14)


def _conservative():
    return _two_link().with_forces([
        Spring("upper", SPRING_A["p1"], "lower", SPRING_A["p2"], k=SPRING_A["k"],
               rest_length=SPRING_A["l0"]),
        Spring("lower", SPRING_B["p1"], None, SPRING_B["world"], k=SPRING_B["k"]),
        RotationalSpring("j2", k=ROT["k"], rest=ROT["rest"],
                         stiffness_curve=Curve([-3.0, 0.0, 0.5, 3.0], [8.0, 5.0, 6.0, 20.0],
                                               kind="cubic")),
    ])


def test_energy_is_conserved_without_damping():
    """Kinetic + gravity + spring energy over 10 s: C++ loop, RK4 at dt = 1e-4 s (3e-13 J
    against 13 J of kinetic energy; the stiffness curve's knots span the motion: crossing
    an end knot, where the held value makes the slope jump, costs RK4 its order, 3e-8 J)."""
    robot = _conservative()
    res = robodyn.simulate(robot, duration=10.0, dt=1e-4, q0=[0.4, -0.9], qd0=[1.0, 2.0],
                           engine="cpp")
    assert res.stats["engine"] == "cpp"
    E = res.energy
    assert np.ptp(res.potential) > 1.0  # the springs and gravity exchange energy
    assert np.max(np.abs(E - E[0])) < 1e-8  # J
    assert np.max(np.abs(E - E[0])) < 1e-11 * np.max(res.kinetic)


def test_damper_dissipates_c_ldot_squared():
    """E(T) - E(0) = -integral c l'^2 dt (one damper, springs conservative)."""
    from scipy.integrate import simpson

    c = 3.0
    robot = _two_link().with_forces([
        Spring("upper", SPRING_A["p1"], "lower", SPRING_A["p2"], k=SPRING_A["k"], c=c,
               rest_length=SPRING_A["l0"]),
        RotationalSpring("j2", k=ROT["k"], rest=ROT["rest"]),
    ])
    res = robodyn.simulate(robot, duration=2.0, dt=1e-4, q0=[0.4, -0.9], qd0=[1.0, 2.0])
    ldot = np.array([robot.element_states(q, qd)[0, 1] for q, qd in zip(res.q, res.qd)])
    power = np.array([robot.element_states(q, qd)[0, 4] for q, qd in zip(res.q, res.qd)])
    lA = np.array([robot.element_states(q, qd)[0, 0] for q, qd in zip(res.q, res.qd)])
    # the rate agrees with the length's own time derivative
    np.testing.assert_allclose(np.gradient(lA, res.t)[5:-5], ldot[5:-5], rtol=1e-4, atol=1e-6)
    dissipated = simpson(c * ldot ** 2, x=res.t)
    assert dissipated > 0.1
    assert res.energy[-1] - res.energy[0] == pytest.approx(-dissipated, rel=1e-8)
    # the element's power is -f l' (spring and damper); its damper part is -c l'^2
    f = np.array([robot.element_states(q, qd)[0, 2] for q, qd in zip(res.q, res.qd)])
    np.testing.assert_allclose(power, -f * ldot, rtol=1e-12, atol=1e-12)


def test_engines_agree():
    robot = _two_link().with_forces(_elements())
    runs = [robodyn.simulate(robot, duration=0.5, dt=1e-3, q0=[0.4, -0.9], engine=e)
            for e in ("cpp", "python")]
    assert [r.stats["engine"] for r in runs] == ["cpp", "python"]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=1e-12, atol=1e-12)


def test_callable_actuator_runs_in_python_with_stage_times():
    """A mass on a slide, spring k to the world and F(t) = A sin(w t): the forced
    oscillator's closed form, through the Python loop (RK4)."""
    m, k, A, w = 2.0, 50.0, 3.0, 2.0
    spec = ModelSpec([Body("cart", "slide", -1, "prismatic", np.array([1.0, 0.0, 0.0]),
                           np.eye(4), mass=m, inertia=np.eye(3) * 1e-3)],
                     gravity=np.zeros(3), name="cart")
    # the spring pulls the cart toward x = 0 from a far point on -x (force -k x to first
    # order is exact here: a spring along the slide), the actuator pushes with A sin(w t)
    robot = robodyn.Robot(spec).with_forces([
        Spring("cart", None, None, [-10.0, 0.0, 0.0], k=k, rest_length=10.0,
               force=lambda l, ldot, t: -A * math.sin(w * t)),
    ])
    assert robot.force_callables
    res = robodyn.simulate(robot, duration=2.0, dt=1e-3)
    assert res.stats["engine"] == "python"
    wn = math.sqrt(k / m)
    t = res.t
    x = A / m / (wn ** 2 - w ** 2) * (np.sin(w * t) - w / wn * np.sin(wn * t))
    np.testing.assert_allclose(res.q[:, 0], x, atol=1e-8)
    with pytest.raises(ValueError, match="callables"):
        robodyn.simulate(robot, duration=0.1, engine="cpp")


def test_curves_against_scipy():
    from scipy.integrate import quad
    from scipy.interpolate import CubicSpline

    x, y = [-1.0, -0.2, 0.3, 1.0, 1.5], [4.0, 1.0, 1.5, 6.0, 9.0]
    spec = ModelSpec([Body("wheel", "axle", -1, "revolute", np.array([0.0, 0.0, 1.0]),
                           np.eye(4), mass=1.0, inertia=np.eye(3) * 0.1)],
                     gravity=np.zeros(3), name="wheel")
    for kind, ref in (("cubic", CubicSpline(x, y, bc_type="natural")),
                      ("linear", lambda s: np.interp(s, x, y))):
        robot = robodyn.Robot(spec).with_forces([
            RotationalSpring("axle", stiffness_curve=Curve(x, y, kind=kind),
                             damping_curve=Curve(x, y, kind=kind))])
        for s in (-1.7, -0.9, -0.2, 0.05, 0.7, 1.2, 2.5):
            k = float(ref(min(max(s, x[0]), x[-1])))
            n = -robot.generalized_forces([s], [0.25])[0]
            assert n == pytest.approx(k * s + k * 0.25, rel=1e-12)
            V = quad(lambda u: float(ref(min(max(u, x[0]), x[-1]))) * u, 0.0, s,
                     points=[p for p in x if min(0, s) < p < max(0, s)], epsabs=1e-14)[0]
            assert robot.potential_energy([s]) == pytest.approx(V, rel=1e-11, abs=1e-14)


def test_forward_dynamics_derivatives_by_finite_differences():
    robot = _two_link().with_forces(_elements()[:2] + [
        RotationalSpring("j1", c=0.4, stiffness_curve=Curve([-1.0, 0.0, 1.0], [3.0, 1.0, 4.0],
                                                             kind="cubic"),
                         damping_curve=Curve([-1.0, 1.0], [0.2, 0.9])),
        BodyForce("lower", WRENCH_WORLD, frame="world", point=[0.1, 0.2, 0.0]),
        BodyForce("lower", WRENCH_BODY, frame="body"),
        BodyForce("upper", WRENCH_BODY, frame="body", point=POINT_BODY),
    ])
    q, qd = STATES[0]
    tau = np.array([0.2, 0.1])
    dq, dqd, Minv = robot.forward_dynamics_derivatives(q, qd, tau)
    h = 1e-6
    for i in range(2):
        e = np.zeros(2)
        e[i] = h
        fq = (robot.forward_dynamics(q + e, qd, tau) - robot.forward_dynamics(q - e, qd, tau))
        fv = (robot.forward_dynamics(q, qd + e, tau) - robot.forward_dynamics(q, qd - e, tau))
        np.testing.assert_allclose(dq[:, i], fq / (2 * h), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(dqd[:, i], fv / (2 * h), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(Minv, np.linalg.inv(robot.mass_matrix(q)), rtol=1e-12)
    A, B = robot.linearize(q, qd, tau)
    np.testing.assert_allclose(A[2:, :2], dq, rtol=1e-14)


def test_floating_base_derivatives_and_momentum():
    """Internal elements on the free-floating cat keep its momentum; their derivatives (by
    central differences on the manifold) match forward-dynamics differences."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cat = robodyn.robots.load("dasc_cat")
    robot = cat.with_forces([
        RotationalSpring("neck_bend_1", k=0.05, c=0.01, rest=0.1),
        Spring("front_torso", [0.1, 0.0, 0.05], "rear_torso", [0.0, 0.0, 0.05], k=40.0, c=1.0),
    ])
    q0, v0 = robodyn.robots.initial_state("dasc_cat", robot)
    rng = np.random.default_rng(3)
    q0[7:] = rng.uniform(-0.3, 0.3, robot.nq - 7)
    v0 = rng.uniform(-0.5, 0.5, robot.nv)
    res = robodyn.simulate(robot, duration=0.3, dt=1e-3, q0=q0, qd0=v0)
    drift = np.abs(res.momentum - res.momentum[0]).max()
    assert drift < 1e-9
    dq, dqd, _ = robot.forward_dynamics_derivatives(q0, v0, np.zeros(robot.nv))
    h = 1e-6
    e = np.zeros(robot.nv)
    e[9] = h
    fd = (robot.forward_dynamics(q0, v0 + e, np.zeros(robot.nv))
          - robot.forward_dynamics(q0, v0 - e, np.zeros(robot.nv))) / (2 * h)
    np.testing.assert_allclose(dqd[:, 9], fd, rtol=1e-6, atol=1e-7)


def test_coincident_points_give_no_nan():
    spec = ModelSpec([Body("cart", "slide", -1, "prismatic", np.array([1.0, 0.0, 0.0]),
                           np.eye(4), mass=1.0, inertia=np.eye(3) * 1e-3)],
                     gravity=np.zeros(3), name="cart")
    robot = robodyn.Robot(spec).with_forces([
        Spring("cart", None, None, [0.0, 0.0, 0.0], k=10.0, c=2.0, rest_length=0.5)])
    # at rest on the anchor: no direction, no force
    assert np.all(robot.generalized_forces([0.0], [0.0]) == 0.0)
    # moving off it: the direction of the motion, l' = |v| (the points separating)
    Q = robot.generalized_forces([0.0], [3.0])
    assert Q[0] == pytest.approx(-(10.0 * (0.0 - 0.5) + 2.0 * 3.0))
    st = robot.element_states([0.0], [-3.0])
    assert st[0, 0] == 0.0 and st[0, 1] == 3.0
    res = robodyn.simulate(robot, duration=0.5, dt=1e-3, q0=[0.0])
    assert np.all(np.isfinite(res.q))


def test_bad_input_is_a_clear_error():
    robot = _two_link()
    with pytest.raises(ValueError, match="body1: no link 'nope'"):
        robot.with_forces([Spring("nope", None, None, [0, 0, 0], k=1.0)])
    with pytest.raises(ValueError, match="joint: no joint 'j9'"):
        robot.with_forces([RotationalSpring("j9", k=1.0)])
    with pytest.raises(ValueError, match="link index 7 out of range"):
        robot.with_forces([BodyForce(7, np.zeros(6))])
    with pytest.raises(ValueError, match="k: must be >= 0"):
        Spring("upper", None, None, [0, 0, 0], k=-1.0)
    with pytest.raises(ValueError, match="c: must be finite"):
        RotationalSpring("j1", c=float("nan"))
    with pytest.raises(ValueError, match="point1: expected 3 finite"):
        Spring("upper", [0, np.inf, 0], None, [0, 0, 0])
    with pytest.raises(ValueError, match="strictly increasing"):
        Curve([0.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="values must be >= 0"):
        RotationalSpring("j1", stiffness_curve=Curve([0.0, 1.0], [1.0, -2.0]))
    with pytest.raises(ValueError, match="Curve kind"):
        Curve([0.0, 1.0], [1.0, 2.0], kind="akima")
    with pytest.raises(ValueError, match="wrench: expected 6 finite"):
        BodyForce("upper", [1.0, 2.0])
    with pytest.raises(ValueError, match="frame: expected one of world, body"):
        BodyForce("upper", np.zeros(6), frame="link")
    with pytest.raises(ValueError, match="forces\\[0\\]: expected a robodyn.Spring"):
        robot.with_forces(["spring"])
    with pytest.raises(ValueError, match="free-floating base"):
        robodyn.robots.load("dasc_cat").with_forces([RotationalSpring("root_joint", k=1.0)])
    forced = robot.with_forces([Spring("upper", None, None, [0, 1, 0], k=1.0)])
    with pytest.raises(ValueError, match="tau: expected shape"):
        forced.forward_dynamics([0.0, 0.0], [0.0, 0.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="q"):
        forced.forward_dynamics([0.0, np.nan], [0.0, 0.0], [1.0, 2.0])
    bad = robot.with_forces([Spring("upper", None, None, [0, 1, 0],
                                    force=lambda l, ld, t: float("nan"))])
    with pytest.raises(ValueError, match="non-finite"):
        bad.generalized_forces([0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="callables"):
        bad.forward_dynamics_derivatives([0.0, 0.0], [0.0, 0.0], [0.0, 0.0])


def test_with_forces_accumulates_and_pickles():
    import pickle

    robot = _two_link().with_forces(_elements()[:2]).with_forces(_elements()[2])
    assert len(robot.forces) == 3
    back = pickle.loads(pickle.dumps(robot))
    q, qd = STATES[0]
    np.testing.assert_array_equal(back.generalized_forces(q, qd), robot.generalized_forces(q, qd))
    assert "3 force elements" in repr(back)


def test_computed_torque_with_a_forced_model_in_both_engines():
    """ComputedTorque whose model is the ForcedRobot compensates the elements (its inverse
    dynamics is ID - Q): both loops track the reference as with the rigid robot, and agree."""
    from robodyn.control import ComputedTorque
    from robodyn.control.trajectories import smooth

    robot = _two_link().with_forces(_elements())
    ref = smooth(np.array([0.4, -0.9]), np.array([1.0, 0.2]), 1.0)
    runs = [robodyn.simulate(robot, ComputedTorque(robot), ref, duration=1.0, dt=1e-3,
                             control_rate="continuous", engine=e) for e in ("cpp", "python")]
    assert [r.stats["engine"] for r in runs] == ["cpp", "python"]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=1e-11, atol=1e-12)
    assert np.max(runs[0].max_error) < 1e-8
    # the rigid model as controller leaves the elements uncompensated: it does not track
    off = robodyn.simulate(robot, ComputedTorque(_two_link()), ref, duration=1.0, dt=1e-3,
                           control_rate="continuous")
    assert np.max(off.max_error) > 100 * np.max(runs[0].max_error)


def test_specialized_forced_robot_keeps_its_elements():
    import pickle

    robot = robodyn.robots.stanford_arm().with_forces([
        Spring("link2", [0.0, 0.1, 0.0], None, [0.0, 0.3, 0.0], k=400.0, c=5.0),
        RotationalSpring("joint1", k=3.0, c=0.5)])
    special = robot.specialized()
    assert special.is_specialized() and len(special.forces) == 2
    q, qd, tau = np.full(6, 0.3), np.full(6, 0.1), np.zeros(6)
    np.testing.assert_allclose(special.forward_dynamics(q, qd, tau),
                               robot.forward_dynamics(q, qd, tau), rtol=1e-10, atol=1e-12)
    back = pickle.loads(pickle.dumps(special))
    assert back.is_specialized() and len(back.forces) == 2
    runs = [robodyn.simulate(r, duration=0.2, engine="cpp") for r in (robot, special)]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=1e-9, atol=1e-12)


def test_campaign_runs_keep_the_elements(tmp_path):
    """A campaign of a ForcedRobot (serial): its perturbed plants keep the elements; a run's
    tracking error equals a direct simulation's."""
    pytest.importorskip("pyarrow")
    from robodyn.campaign import Campaign
    from robodyn.control.trajectories import smooth

    robot = _two_link().with_forces(_elements())
    q0, q1 = np.array([0.4, -0.9]), np.array([1.0, 0.2])
    c = Campaign(robot, controller={"type": "none"}, simulation={"duration": 0.3},
                 reference={"q0": q0.tolist(), "q1": q1.tolist(), "T": 0.3},
                 grid={"model.mass_scale": [1.0, 1.2]}, samples=1, seed=1)
    table = c.run(tmp_path / "out", "serial", progress=False).table.to_pydict()
    for row, scale in enumerate((1.0, 1.2)):
        spec = robot.spec
        for b in spec.bodies:
            b.mass *= scale
        plant = robodyn.Robot(spec).with_forces(_elements())
        ref = smooth(q0, q1, 0.3)
        res = robodyn.simulate(plant, None, ref, duration=0.3, q0=q0)
        err = np.max(np.abs(res.q_ref - res.q))
        assert table["max_tracking_error"][row] == pytest.approx(err, rel=1e-12)
