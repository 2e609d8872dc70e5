"""Loop constraints, the core: the kinematics (phi, J, gamma) against finite differences, and
constrained forward dynamics against a dense NumPy KKT solve (fixed and floating bases)."""

import numpy as np
import pytest

import robodyn
from reference import fourbars
from reference import random_models as R


def close(actual, expected, rtol=1e-9, atol=None):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale if atol is None else atol)


def pose(R=np.eye(3), p=(0, 0, 0)):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def rotation(rng):
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return Q * np.sign(np.linalg.det(Q))


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def right_jacobian(t):
    """Jr of SO(3) at the rotation vector t: d log(R exp(e)) / de = Jr(log R)^-1."""
    a = np.linalg.norm(t)
    K = skew(t)
    if a < 1e-8:
        return np.eye(3) - K / 2
    return np.eye(3) - (1 - np.cos(a)) / a**2 * K + (a - np.sin(a)) / a**3 * K @ K


def floating_tree(rng, n=6):
    return robodyn.Robot(R.random_floating(n, rng, frames=2))


def random_state(robot, rng):
    q = rng.uniform(-1, 1, robot.nq)
    if robot.floating_base:
        x = rng.standard_normal(4)
        q[3:7] = x / np.linalg.norm(x)
    return q, rng.standard_normal(robot.nv), 5 * rng.standard_normal(robot.nv)


def tangent(robot, q, dq):
    return robot.integrate(q, dq, 1.0)


def random_systems(rng):
    """(name, system) on fixed and floating random trees: loops between two moving bodies, to
    the world, of every kind, frames anywhere."""
    out = []
    for floating in (False, True):
        robot = floating_tree(rng) if floating else robodyn.Robot(R.random_tree(6, rng, frames=2))
        links = robot.link_names
        cs = [robodyn.LoopConstraint(links[-1], links[2], pose(rotation(rng), rng.normal(size=3)),
                                     pose(rotation(rng), rng.normal(size=3)), kind="weld"),
              robodyn.LoopConstraint(links[3], None, pose(rotation(rng), rng.normal(size=3)),
                                     pose(rotation(rng), rng.normal(size=3)), kind="point"),
              robodyn.LoopConstraint(links[1], links[4], pose(rotation(rng), rng.normal(size=3)),
                                     pose(rotation(rng), rng.normal(size=3)), kind="axes",
                                     axes=("rx", "ry", "x", "z"))]
        out.append((("floating" if floating else "fixed"), robodyn.ConstrainedRobot(robot, cs)))
    return out


def dynamic_systems(rng):
    """(name, system) with independent constraint rows: on a fixed chain of 10 joints a weld
    between links 10 and 4 (joints 5-10) and a point of link 3 to the world (joints 1-3); on a
    floating chain of 8 joints a weld of link 8 to the world (the base) and an ("rx", "x",
    "y") selection between links 4 and 1 (joints 2-4)."""
    fixed = robodyn.Robot(R.random_chain(10, rng, frames=0))
    L = fixed.link_names
    floating = robodyn.Robot(R.random_floating(8, rng, kind="chain", frames=0))
    F = floating.link_names
    return [
        ("fixed", robodyn.ConstrainedRobot(fixed, [
            robodyn.LoopConstraint(L[9], L[3], pose(rotation(rng), rng.normal(size=3)),
                                   pose(rotation(rng), rng.normal(size=3)), kind="weld"),
            robodyn.LoopConstraint(L[2], None, pose(rotation(rng), rng.normal(size=3)),
                                   pose(rotation(rng), rng.normal(size=3)))])),
        ("floating", robodyn.ConstrainedRobot(floating, [
            robodyn.LoopConstraint(F[8], None, pose(rotation(rng), rng.normal(size=3)),
                                   pose(rotation(rng), rng.normal(size=3)), kind="weld"),
            robodyn.LoopConstraint(F[4], F[1], pose(rotation(rng), rng.normal(size=3)),
                                   pose(rotation(rng), rng.normal(size=3)), kind="axes",
                                   axes=("rx", "x", "y"))]))]


def test_loop_constraint_validation(rng):
    robot = robodyn.load_urdf(fourbars.PLANAR)
    c = robodyn.LoopConstraint("coupler", "rocker", kind="axes", axes=("y", "x", "rz"))
    assert c.rows == (2, 3, 4) and c.axes == ("rz", "x", "y") and c.size == 3
    assert robodyn.LoopConstraint("coupler", None).rows == (3, 4, 5)
    assert robodyn.LoopConstraint(None, "coupler", kind="weld").rows == tuple(range(6))
    bad = [
        (dict(body1="coupler", body2="coupler"), "both link 'coupler'"),
        (dict(body1=None, body2=None), "both the world"),
        (dict(body1="coupler", body2=None, kind="ball"), "kind"),
        (dict(body1="coupler", body2=None, kind="axes"), "axes"),
        (dict(body1="coupler", body2=None, kind="axes", axes=("x", "w")), "unknown axis 'w'"),
        (dict(body1="coupler", body2=None, kind="axes", axes=("x", "x")), "repeated"),
        (dict(body1="coupler", body2=None, axes=("x",)), "only kind='axes'"),
        (dict(body1="coupler", body2=None, frame1=np.eye(3)), "frame1: expected a 4x4"),
        (dict(body1="coupler", body2=None, frame2=2 * np.eye(4)), "frame2: the last row"),
        (dict(body1="coupler", body2=None, frame1=pose(np.diag([1, 1, -1]))), "proper rotation"),
        (dict(body1="coupler", body2=None, frame1=pose(p=(np.nan, 0, 0))), "non-finite"),
        (dict(body1="coupler", body2=None, baumgarte=(-1, 0)), "baumgarte"),
        (dict(body1=3, body2=None), "body1: expected a link name"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ValueError, match=message):
            robodyn.LoopConstraint(**kwargs)
    with pytest.raises(ValueError, match="constraint 'point:rod-world': body1: no link named 'rod'"):
        robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint("rod", None)])
    with pytest.raises(ValueError, match="actuated: no joint named 'x'"):
        robodyn.ConstrainedRobot(robot, [], actuated=["x"])
    with pytest.raises(ValueError, match="repeated"):
        robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint("crank", None, name="a"),
                                         robodyn.LoopConstraint("rocker", None, name="a")])


def test_sizes_and_actuation(rng):
    robot = floating_tree(rng)
    system = robodyn.ConstrainedRobot(robot, [
        robodyn.LoopConstraint(robot.link_names[2], None, kind="weld"),
        robodyn.LoopConstraint(robot.link_names[3], robot.link_names[1])])
    assert system.rows == 9 and system.row_slices == (slice(0, 6), slice(6, 9))
    assert system.actuated == tuple(robot.joint_names[1:])
    np.testing.assert_array_equal(system.actuated_dofs, np.arange(6, robot.nv))
    q, v, tau = random_state(robot, rng)
    assert system.residual(q).shape == (9,)
    assert system.jacobian(q).shape == (9, robot.nv)
    assert set(system.split(system.residual(q))) == {c.name for c in system.constraints}


@pytest.mark.parametrize("which", [0, 1])
def test_jacobian_is_the_rate_of_the_residual(which, rng):
    """Central differences of phi along each tangent direction (on the manifold for a floating
    base): the linear rows equal J, the angular rows Jr(phi_ang)^-1 J."""
    name, system = random_systems(rng)[which]
    robot = system.robot
    h = 1e-6
    for _ in range(3):
        q = random_state(robot, rng)[0]
        J = system.jacobian(q)
        phi = system.residual(q)
        D = np.empty_like(J)
        for k in range(robot.nv):
            e = np.zeros(robot.nv)
            e[k] = h
            D[:, k] = (system.residual(tangent(robot, q, e)) -
                       system.residual(tangent(robot, q, -e))) / (2 * h)
        for c, s in zip(system.constraints, system.row_slices):
            rows = np.array(c.rows)
            full = np.zeros((6, robot.nv))
            full[rows] = D[s]
            ang = [k for k, r in enumerate(c.rows) if r < 3]
            lin = [k for k, r in enumerate(c.rows) if r >= 3]
            close(J[s][lin], D[s][lin], 1e-7)
            if ang:
                # the angular rows of phi are a rotation vector: J_ang = Jr(phi) dphi/dq
                t = np.zeros(3)
                t[rows[ang]] = phi[s][ang]
                if c.kind == "weld":
                    close(J[s][ang], right_jacobian(t) @ D[s][ang], 1e-7)
                else:
                    # a selection of the angular rows: the full rotation vector is needed
                    assert c.kind == "axes"


def test_jacobian_at_a_closed_loop_is_the_rate_of_the_residual(rng):
    """A weld closed at q (frame 2 placed at frame 1's pose): J = dphi/dq on every row."""
    robot = floating_tree(rng)
    q = random_state(robot, rng)[0]
    T = robot.forward_kinematics(q)
    i, j = 4, 2
    T1 = pose(rotation(rng), rng.normal(size=3))
    Tw = T[i] @ T1
    system = robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(
        robot.link_names[i], robot.link_names[j], T1, np.linalg.solve(T[j], Tw), kind="weld")])
    assert np.abs(system.residual(q)).max() < 1e-12
    h = 1e-6
    D = np.empty((6, robot.nv))
    for k in range(robot.nv):
        e = np.zeros(robot.nv)
        e[k] = h
        D[:, k] = (system.residual(tangent(robot, q, e)) -
                   system.residual(tangent(robot, q, -e))) / (2 * h)
    close(system.jacobian(q), D, 1e-7)


@pytest.mark.parametrize("which", [0, 1])
def test_bias_acceleration_is_the_rate_of_jv(which, rng):
    """gamma = d(J v)/dt along the motion with qdd = 0 (q(t) = integrate(q, v t): the base's
    body twist constant)."""
    name, system = random_systems(rng)[which]
    robot = system.robot
    h = 1e-6
    for _ in range(3):
        q, v, _ = random_state(robot, rng)
        jv = lambda t: system.jacobian(robot.integrate(q, v, t)) @ v  # noqa: E731
        close(system.bias_acceleration(q, v), (jv(h) - jv(-h)) / (2 * h), 1e-7)


def kkt(system, q, v, tau):
    """Dense NumPy solve of [M -J'; J 0] [qdd; lam] = [tau - h; rhs]."""
    robot = system.robot
    M = robot.mass_matrix(q)
    rhs_free = M @ robot.forward_dynamics(q, v, tau)          # tau - h (damping, friction too)
    J = system.jacobian(q)
    gamma = system.bias_acceleration(q, v)
    kp = np.concatenate([[c.baumgarte[0]] * c.size for c in system.constraints])
    kd = np.concatenate([[c.baumgarte[1]] * c.size for c in system.constraints])
    b = -gamma - kd * (J @ v) - kp * system.residual(q)
    m = system.rows
    K = np.block([[M, -J.T], [J, np.zeros((m, m))]])
    x = np.linalg.solve(K, np.concatenate([rhs_free, b]))
    return x[:robot.nv], x[robot.nv:], b


@pytest.mark.parametrize("which", [0, 1])
def test_forward_dynamics_equals_a_dense_kkt_solve(which, rng):
    name, system = dynamic_systems(rng)[which]
    robot = system.robot
    for _ in range(3):
        q, v, tau = random_state(robot, rng)
        qdd, lam = system.forward_dynamics(q, v, tau)
        qdd_ref, lam_ref, _ = kkt(system, q, v, tau)
        close(qdd, qdd_ref, 1e-9)
        close(lam, lam_ref, 1e-9)
        # the constraint acceleration vanishes
        J = system.jacobian(q)
        gamma = system.bias_acceleration(q, v)
        close(J @ qdd + gamma, np.zeros(system.rows), atol=1e-10 * max(1, np.abs(gamma).max()))
        # the equations of motion with the constraint forces
        close(robot.mass_matrix(q) @ qdd + robot.inverse_dynamics(q, v, np.zeros(robot.nv)),
              tau + J.T @ lam, 1e-9)
        Minv = np.linalg.inv(robot.mass_matrix(q))
        close(system.operational_space_inverse_inertia(q), J @ Minv @ J.T, 1e-9)


@pytest.mark.parametrize("which", [0, 1])
def test_iterations_and_error_of_the_last_call(which, rng):
    """The core's iterations and error after forward_dynamics: one proximal step (mu > 0,
    max_iter = 1) leaves (A + mu I) lam = r, so A lam - r = -mu lam and the error is
    mu max |lam|; mu = 0 solves once and its error (computed on request from the Schur
    complement's lower triangle) is at round-off, not the step's before it."""
    name, system = dynamic_systems(rng)[which]
    core = system._core
    q, v, tau = random_state(system.robot, rng)
    mu = 0.5
    lam = system.forward_dynamics(q, v, tau, mu=mu, max_iter=1)[1]
    assert core.iterations == 1
    close(core.error, mu * np.abs(lam).max(), 1e-9)
    qdd, lam = system.forward_dynamics(q, v, tau)
    assert core.iterations == 1
    J, gamma = system.jacobian(q), system.bias_acceleration(q, v)
    scale = max(1.0, np.abs(gamma).max(), np.abs(J @ qdd).max())
    assert core.error < 1e-10 * scale
    # converged proximal iterations agree with the direct solve
    qdd2, lam2 = system.forward_dynamics(q, v, tau, mu=1e-3, max_iter=200, tol=1e-12)
    assert 1 < core.iterations < 200 and core.error < 1e-12
    close(lam2, lam)
    close(qdd2, qdd)


def test_forward_dynamics_on_two_branches_equals_a_dense_kkt_solve(rng):
    """Loops to the world from two branches of a floating tree (their supports share the base
    and no joint), one of linear rows only, one of angular rows only with Baumgarte gains:
    M's packed factor, the Schur complement over the shared coordinates and the rows of each
    kind against a dense KKT solve."""
    robot = robodyn.Robot(R.random_floating(8, rng, kind="tree", frames=0))
    links, parents = robot.link_names, robot.parents

    def chain(i):
        out = []
        while i >= 0:
            out.append(i)
            i = parents[i]
        return out

    a = len(links) - 1
    b = max((i for i in range(1, len(links)) if not set(chain(i)[:-1]) & set(chain(a)[:-1])),
            key=lambda i: len(chain(i)), default=None)
    assert b is not None and len(chain(a)) > 1 and len(chain(b)) > 1  # two branches on the base
    system = robodyn.ConstrainedRobot(robot, [
        robodyn.LoopConstraint(links[a], None, pose(rotation(rng), rng.normal(size=3)),
                               pose(rotation(rng), rng.normal(size=3)), kind="point"),
        robodyn.LoopConstraint(links[b], None, pose(rotation(rng), rng.normal(size=3)),
                               pose(rotation(rng), rng.normal(size=3)), kind="axes",
                               axes=("rx", "rz"), baumgarte=(10.0, 3.0))])
    for _ in range(3):
        q, v, tau = random_state(robot, rng)
        qdd, lam = system.forward_dynamics(q, v, tau)
        qdd_ref, lam_ref, b_ref = kkt(system, q, v, tau)
        close(qdd, qdd_ref, 1e-9)
        close(lam, lam_ref, 1e-9)
        close(system.jacobian(q) @ qdd, b_ref, 1e-9)


@pytest.mark.parametrize("which", [0, 1])
def test_baumgarte_terms(which, rng):
    name, plain = dynamic_systems(rng)[which]
    robot = plain.robot
    gains = [(30.0, 4.0), (0.0, 7.0)]
    system = robodyn.ConstrainedRobot(robot, [
        robodyn.LoopConstraint(c.body1, c.body2, c.frame1, c.frame2, kind=c.kind,
                               axes=c.axes if c.kind == "axes" else None, baumgarte=g)
        for c, g in zip(plain.constraints, gains)])
    q, v, tau = random_state(robot, rng)
    qdd, lam = system.forward_dynamics(q, v, tau)
    qdd_ref, lam_ref, b = kkt(system, q, v, tau)
    close(qdd, qdd_ref, 1e-9)
    close(lam, lam_ref, 1e-9)
    close(system.jacobian(q) @ qdd, b, 1e-9)


def test_wrench_on_body1_in_frame1_axes(rng):
    """lam of a weld to the world is the wrench on body 1 about frame 1's origin, frame 1 axes:
    J' lam equals the generalised force of that wrench (the link Jacobian's transpose)."""
    robot = floating_tree(rng)
    q, v, tau = random_state(robot, rng)
    i = 3
    T = robot.forward_kinematics(q)[i]
    system = robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(
        robot.link_names[i], None, frame2=T, kind="weld")])
    lam = system.forward_dynamics(q, v, tau)[1]
    Jw = robot.jacobian(q, i)                      # world axes, at the frame origin
    Rw = T[:3, :3]
    wrench_world = np.concatenate([Rw @ lam[:3], Rw @ lam[3:]])
    close(system.jacobian(q).T @ lam, Jw.T @ wrench_world, 1e-9)


def planar_point_system():
    robot = robodyn.load_urdf(fourbars.PLANAR)
    loop = robodyn.LoopConstraint("coupler", "rocker", pose(p=(0.5, 0, 0)), pose(p=(0.4, 0, 0)),
                                  kind="point", name="rod")
    return robodyn.ConstrainedRobot(robot, [loop])


def assemble(system, q, hold=(0,), iters=30):
    """Gauss-Newton on phi with the joints in `hold` fixed (a test helper)."""
    free = [k for k in range(system.robot.nv) if k not in hold]
    for _ in range(iters):
        phi = system.residual(q)
        if np.abs(phi).max() < 1e-14:
            break
        J = system.jacobian(q)[:, free]
        dq = np.zeros(system.robot.nv)
        dq[free] = -np.linalg.lstsq(J, phi, rcond=None)[0]
        q = system.robot.integrate(q, dq, 1.0)
    assert np.abs(system.residual(q)).max() < 1e-12
    return q


def test_redundant_constraint_minimum_norm_forces(rng):
    """The planar four-bar closed by a point (3 rows, the z row dependent on the others):
    mu = 0 is refused naming the constraint; mu > 0 gives the minimum-norm forces."""
    system = planar_point_system()
    q = assemble(system, np.array([0.7, 1.0, 1.5]))
    J = system.jacobian(q)
    v = np.linalg.svd(J)[2][-1] * 2.0   # a velocity the loop allows
    tau = np.array([1.0, -0.5, 0.3])
    with pytest.raises(ValueError, match="constraint 'rod': its row 'z' depends on the rows "
                                         "before it.*mu > 0"):
        system.forward_dynamics(q, v, tau)
    qdd, lam = system.forward_dynamics(q, v, tau, mu=1e-6, max_iter=100, tol=1e-13)
    robot = system.robot
    M = robot.mass_matrix(q)
    gamma = system.bias_acceleration(q, v)
    Minv = np.linalg.inv(M)
    A = J @ Minv @ J.T
    free = robot.forward_dynamics(q, v, tau)
    lam_ref = np.linalg.lstsq(A, -gamma - J @ free, rcond=None)[0]   # minimum norm
    close(lam, lam_ref, 1e-9)
    close(qdd, free + Minv @ J.T @ lam_ref, 1e-9)
    assert abs(lam[2]) < 1e-12 * np.abs(lam).max()
    close(J @ qdd + gamma, np.zeros(3), atol=1e-10)


def test_batches_and_out(rng):
    name, system = dynamic_systems(rng)[1]
    robot = system.robot
    states = [random_state(robot, rng) for _ in range(4)]
    Q, V, T = (np.array(x) for x in zip(*states))
    qdd, lam = system.forward_dynamics(Q, V, T)
    assert qdd.shape == (4, robot.nv) and lam.shape == (4, system.rows)
    for k in range(4):
        a, b = system.forward_dynamics(Q[k], V[k], T[k])
        np.testing.assert_array_equal(qdd[k], a)
        np.testing.assert_array_equal(lam[k], b)
    out = (np.empty((4, robot.nv)), np.empty((4, system.rows)))
    res = system.forward_dynamics(Q, V, T, out=out)
    assert res[0] is out[0] and res[1] is out[1]
    np.testing.assert_array_equal(out[0], qdd)
    J = system.jacobian(Q)
    assert J.shape == (4, system.rows, robot.nv)
    np.testing.assert_array_equal(J[2], system.jacobian(Q[2]))
    g = np.empty((4, system.rows))
    assert system.bias_acceleration(Q, V, out=g) is g
    np.testing.assert_array_equal(system.residual(Q)[1], system.residual(Q[1]))
    np.testing.assert_array_equal(system.operational_space_inverse_inertia(Q)[3],
                                  system.operational_space_inverse_inertia(Q[3]))


def test_boundary_errors(rng):
    name, system = random_systems(rng)[1]
    robot = system.robot
    q, v, tau = random_state(robot, rng)
    with pytest.raises(ValueError, match="q: expected shape"):
        system.jacobian(q[:-1])
    with pytest.raises(ValueError, match="v: contains NaN"):
        system.forward_dynamics(q, np.full(robot.nv, np.nan), tau)
    with pytest.raises(ValueError, match="base quaternion"):
        system.residual(np.r_[q[:3], 2 * q[3:7], q[7:]])
    with pytest.raises(ValueError, match="mixed"):
        system.forward_dynamics(q, v[None], tau)
    with pytest.raises(ValueError, match="mu"):
        system.forward_dynamics(q, v, tau, mu=-1)
    with pytest.raises(ValueError, match="max_iter"):
        system.forward_dynamics(q, v, tau, max_iter=0)
    with pytest.raises(ValueError, match="out"):
        system.forward_dynamics(q, v, tau, out=np.empty(robot.nv))
    with pytest.raises(ValueError, match="out: expected shape"):
        system.residual(q, out=np.empty(system.rows + 1))
    # two links merged into one body through a fixed joint: nothing to constrain
    spec = R.random_tree(3, rng, frames=2)
    spec.frames[0].parent = 1
    r2 = robodyn.Robot(spec)
    with pytest.raises(ValueError, match="same rigid body"):
        robodyn.ConstrainedRobot(r2, [robodyn.LoopConstraint(spec.frames[0].name,
                                                             spec.bodies[1].name)])


def test_gravity_change_is_seen(rng):
    robot = robodyn.load_urdf(fourbars.PLANAR)
    system = robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(
        "coupler", "rocker", pose(p=(0.5, 0, 0)), pose(p=(0.4, 0, 0)), kind="axes",
        axes=("x", "y"))])
    q = assemble(system, np.array([0.7, 1.0, 1.5]))
    a0 = system.forward_dynamics(q, np.zeros(3), np.zeros(3))[0]
    robot.gravity = (0.0, -9.81, 0.0)
    a1 = system.forward_dynamics(q, np.zeros(3), np.zeros(3))[0]
    assert np.abs(a0).max() < 1e-12 < np.abs(a1).max()
