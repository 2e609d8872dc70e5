"""Free-floating base (a free-flyer root joint): robodyn against Pinocchio's JointModelFreeFlyer
in the same process, on seeded random trees and on every floating-base robot of
example-robot-data, and identities between robodyn's own algorithms.

Conventions (docs: README, api.md): q = [base position (3), quaternion x, y, z, w (4),
joints], v = [base angular velocity (3), base linear velocity (3), both in the base frame,
joints]; Pinocchio's free-flyer v is [linear; angular]: every comparison goes through
reference.pinocchio_models.Coordinates (tested below on its own).
"""

import pathlib
import warnings

import numpy as np
import pytest

import robodyn
from reference import random_models as R

Body = R.Body


def close(actual, expected, rtol=1e-9):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def floating_tree(n, rng, *, armature=True, friction=True, frames=2, kind="tree"):
    """A random tree of n joints on a free-flying base body 0 (the base has mass and inertia)."""
    gen = R.random_tree if kind == "tree" else R.random_chain
    spec = gen(n, rng, armature=armature, damping=friction, friction=friction, frames=frames)
    mass = rng.uniform(2.0, 10.0)
    base = Body(name="base_link", joint_name="root_joint", parent=-1, joint_type="floating",
                axis=np.array([0.0, 0.0, 1.0]), origin=np.eye(4), mass=mass,
                com=rng.normal(0.0, 0.1, size=3), inertia=R.random_inertia(mass, rng))
    for b in spec.bodies:
        b.parent += 1
    for f in spec.frames:
        f.parent += 1
    spec.bodies.insert(0, base)
    spec.base_name = "world"
    return spec


def random_quaternion(rng):
    x = rng.standard_normal(4)
    return x / np.linalg.norm(x)


def floating_state(robot, rng, spread=1.0):
    """(q, v, a): base anywhere with a random unit quaternion, joints within +-pi."""
    nq, nv = robot.nq, robot.nv
    q = np.empty(nq)
    q[:3] = rng.normal(0.0, spread, 3)
    q[3:7] = random_quaternion(rng)
    lo, hi = robot.position_limits
    q[7:] = rng.uniform(np.maximum(lo[7:], -np.pi), np.minimum(hi[7:], np.pi))
    return q, rng.standard_normal(nv), rng.standard_normal(nv)


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def quat_matrix(x, y, z, w):
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


# ---------------------------------------------------------------- sizes, boundary

def test_sizes_and_layout(rng):
    spec = floating_tree(5, rng)
    robot = robodyn.Robot(spec)
    assert (robot.nq, robot.nv, robot.n) == (12, 11, 11)
    assert robot.floating_base
    fixed = robodyn.Robot(R.random_chain(3, rng))
    assert (fixed.nq, fixed.nv, fixed.n) == (3, 3, 3) and not fixed.floating_base
    lo, hi = robot.position_limits
    assert lo.shape == hi.shape == (12,) and np.all(np.isinf(lo[:7])) and np.all(lo[7:] > -4)
    assert robot.velocity_limits.shape == robot.effort_limits.shape == (11,)
    q, v, a = floating_state(robot, rng)
    assert robot.inverse_dynamics(q, v, a).shape == (11,)
    assert robot.mass_matrix(q).shape == (11, 11)
    assert robot.jacobian(q, 0).shape == (6, 11)
    assert robot.integrate(q, v, 0.1).shape == (12,)
    assert robot.difference(q, q).shape == (11,)
    assert robot.momentum(q, v).shape == (6,)
    assert robot.center_of_mass(q).shape == (3,)


def test_boundary_errors(rng):
    robot = robodyn.Robot(floating_tree(3, rng))
    q, v, a = floating_state(robot, rng)
    with pytest.raises(ValueError, match=r"q: expected shape \(10,\)"):
        robot.inverse_dynamics(q[:-1], v, a)
    with pytest.raises(ValueError, match=r"qd: expected shape \(9,\)"):
        robot.inverse_dynamics(q, q, a)
    bad = q.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match="quaternion"):
        robot.mass_matrix(bad)
    with pytest.raises(ValueError, match="row 1"):
        robot.mass_matrix(np.stack([q, bad]))
    zero = q.copy()
    zero[3:7] = 0
    with pytest.raises(ValueError, match="quaternion"):
        robot.forward_dynamics(zero, v, a)
    with pytest.raises(ValueError, match="quaternion"):
        robot.integrate(bad, v, 0.1)
    with pytest.raises(ValueError, match="q1"):
        robot.difference(q, bad)
    # within the tolerance (1e-6): normalised, the same answer as the unit quaternion
    near = q.copy()
    near[3:7] *= 1 + 5e-7
    close(robot.inverse_dynamics(near, v, a), robot.inverse_dynamics(q, v, a), 1e-12)
    close(robot.forward_kinematics(near), robot.forward_kinematics(q), 1e-12)
    for name in ("rnea", "kane", "crba", "aba", "forward_dynamics", "kane_forward", "gravity"):
        assert robot.op_counts(name)["mul"] > 0  # counted (and checked) on the floating model
    with pytest.raises(ValueError, match="dt"):
        robot.integrate(q, v, float("nan"))


def test_spec_errors(rng):
    spec = floating_tree(3, rng)
    spec.bodies[2].joint_type = "floating"
    with pytest.raises(ValueError, match="free-flyer"):
        robodyn.Robot(spec)


# ---------------------------------------------------------------- identities

def test_identities(rng):
    robot = robodyn.Robot(floating_tree(8, rng))
    for _ in range(3):
        q, v, a = floating_state(robot, rng)
        tau = robot.inverse_dynamics(q, v, a)
        M = robot.mass_matrix(q)
        h = robot.bias_torques(q, v)
        spec = robot.spec
        joint_terms = np.zeros(robot.nv)
        joint_terms[6:] = ([b.damping for b in spec.bodies[1:]] * v[6:]
                           + np.array([b.friction for b in spec.bodies[1:]]) * np.sign(v[6:]))
        close(tau, M @ a + h + joint_terms, 1e-10)
        close(M, M.T, 1e-13)
        assert np.linalg.eigvalsh(M).min() > 0
        close(robot.gravity_torques(q), robot.bias_torques(q, np.zeros(robot.nv)), 1e-12)
        for method in ("aba", "crba"):
            close(robot.forward_dynamics(q, v, tau, method=method), a, 1e-9)
        close(robot.kinetic_energy(q, v), 0.5 * v @ M @ v, 1e-11)
        # the base block of M is the whole system's spatial inertia in base axes
        close(M[:6, :6][3:, 3:], sum(robot.masses) * np.eye(3), 1e-12)


def test_coriolis_matrix(rng):
    """C v = bias - gravity, and Mdot - 2C skew-symmetric (Mdot by central differences
    along the motion q(t) = integrate(q, v, t))."""
    robot = robodyn.Robot(floating_tree(7, rng, friction=False))
    for _ in range(3):
        q, v, _ = floating_state(robot, rng)
        C = robot.coriolis_matrix(q, v)
        assert C.shape == (robot.nv, robot.nv)
        close(C @ v, robot.bias_torques(q, v) - robot.gravity_torques(q), 1e-10)
        eps = 1e-6
        Mdot = (robot.mass_matrix(robot.integrate(q, v, eps))
                - robot.mass_matrix(robot.integrate(q, v, -eps))) / (2 * eps)
        S = Mdot - 2 * C
        close(S + S.T, np.zeros_like(S), 1e-7)
    # batches row by row
    Q = np.stack([floating_state(robot, rng)[0] for _ in range(3)])
    V = rng.standard_normal((3, robot.nv))
    Cs = robot.coriolis_matrix(Q, V)
    for k in range(3):
        close(Cs[k], robot.coriolis_matrix(Q[k], V[k]), 1e-14)


def test_integrate_difference(rng):
    robot = robodyn.Robot(floating_tree(4, rng))
    for _ in range(5):
        q0, v, _ = floating_state(robot, rng)
        q1, _, _ = floating_state(robot, rng)
        d = robot.difference(q0, q1)
        q2 = robot.integrate(q0, d)
        close(q2[:3], q1[:3], 1e-10)
        assert min(np.abs(q2[3:7] - q1[3:7]).max(), np.abs(q2[3:7] + q1[3:7]).max()) < 1e-10
        close(q2[7:], q1[7:], 1e-12)
        close(robot.difference(q0, robot.integrate(q0, 0.3 * v)), 0.3 * v, 1e-10)
        assert abs(np.linalg.norm(robot.integrate(q0, v, 7.0)[3:7]) - 1) < 1e-14
        close(robot.difference(q0, q0), np.zeros(robot.nv), 1e-15)
    # small steps: the base moves with its body twist (first order, base axes)
    q0, v, _ = floating_state(robot, rng)
    dt = 1e-6
    q1 = robot.integrate(q0, v, dt)
    Rm = quat_matrix(*q0[3:7])
    close((q1[:3] - q0[:3]) / dt, Rm @ v[3:6], 1e-5)
    # batches: one row per state
    Q = np.stack([floating_state(robot, rng)[0] for _ in range(4)])
    V = rng.standard_normal((4, robot.nv))
    out = np.empty((4, robot.nq))
    robot.integrate(Q, V, 0.5, out=out)
    for k in range(4):
        close(out[k], robot.integrate(Q[k], V[k], 0.5), 1e-15)


def test_momentum_and_com(rng):
    """momentum = sum over bodies of (m c_dot, sum c x m c_dot + R I_c w), computed here from
    the Jacobians of the bodies' centres of mass; COM from forward kinematics."""
    spec = floating_tree(6, rng, frames=0)
    robot = robodyn.Robot(spec)
    q, v, _ = floating_state(robot, rng)
    T = robot.forward_kinematics(q)
    masses = np.array([b.mass for b in spec.bodies])
    L, P, mc = np.zeros(3), np.zeros(3), np.zeros(3)
    for k, b in enumerate(spec.bodies):
        R_, p = T[k][:3, :3], T[k][:3, 3]
        c = p + R_ @ b.com
        J = robot.jacobian(q, k)
        w = J[:3] @ v
        cdot = J[3:] @ v + np.cross(w, R_ @ b.com)
        P += b.mass * cdot
        L += np.cross(c, b.mass * cdot) + R_ @ b.inertia @ R_.T @ w
        mc += b.mass * c
    close(robot.momentum(q, v), np.concatenate([L, P]), 1e-10)
    close(robot.center_of_mass(q), mc / masses.sum(), 1e-12)
    # linear momentum = total mass x COM velocity
    eps = 1e-6
    cdot = (robot.center_of_mass(robot.integrate(q, v, eps))
            - robot.center_of_mass(robot.integrate(q, v, -eps))) / (2 * eps)
    close(robot.momentum(q, v)[3:], masses.sum() * cdot, 1e-7)


def test_momentum_conserved_free_fall(rng):
    """No gravity, no friction, no joint torque: the momentum is constant along a trajectory
    (RK4 on the manifold with integrate; the tolerance is the integrator's error)."""
    spec = floating_tree(5, rng, friction=False, frames=0)
    spec.gravity = np.zeros(3)
    robot = robodyn.Robot(spec)
    q, v, _ = floating_state(robot, rng, spread=0.3)
    h0 = robot.momentum(q, v)
    tau = np.zeros(robot.nv)
    dt = 1e-3

    def f(q, v):
        return robot.forward_dynamics(q, v, tau)

    for _ in range(200):
        # RK4 with the stage configurations on the manifold (Munthe-Kaas to 2nd order is
        # enough for this check: the momentum is a function of (q, v) conserved exactly)
        k1v, k1q = f(q, v), v
        q2 = robot.integrate(q, k1q, dt / 2)
        v2 = v + dt / 2 * k1v
        k2v, k2q = f(q2, v2), v2
        q3 = robot.integrate(q, k2q, dt / 2)
        v3 = v + dt / 2 * k2v
        k3v, k3q = f(q3, v3), v3
        q4 = robot.integrate(q, k3q, dt)
        v4 = v + dt * k3v
        k4v, k4q = f(q4, v4), v4
        q = robot.integrate(q, (k1q + 2 * k2q + 2 * k3q + k4q) / 6, dt)
        v = v + dt * (k1v + 2 * k2v + 2 * k3v + k4v) / 6
    drift = np.abs(robot.momentum(q, v) - h0).max() / np.abs(h0).max()
    assert drift < 1e-6, drift


def test_heavy_base_limit(rng):
    """A very heavy base: the joint block of M tends to the fixed-base mass matrix."""
    spec = floating_tree(6, rng, frames=0)
    fixed_spec = R.ModelSpec(bodies=[], gravity=spec.gravity)
    import copy
    fixed_spec.bodies = copy.deepcopy(spec.bodies[1:])
    for b in fixed_spec.bodies:
        b.parent -= 1  # the base's children onto the fixed base
    fixed = robodyn.Robot(fixed_spec)
    spec.bodies[0].mass = 1e12
    spec.bodies[0].inertia = 1e12 * np.eye(3)
    spec.bodies[0].com = np.zeros(3)
    robot = robodyn.Robot(spec)
    qj = R.random_state(fixed_spec, rng)[0]
    q = np.concatenate([[0.1, -0.2, 0.3], [0, 0, 0, 1.0], qj])
    M = robot.mass_matrix(q)
    close(M[6:, 6:], fixed.mass_matrix(qj), 1e-10)
    # forward dynamics: the heavy base falls freely (its acceleration is gravity) and the
    # joints move as on a fixed base without gravity (the free fall cancels it)
    tau = np.concatenate([np.zeros(6), rng.standard_normal(len(qj))])
    vj = rng.standard_normal(len(qj))
    v = np.concatenate([np.zeros(6), vj])
    qdd = robot.forward_dynamics(q, v, tau)
    close(qdd[:6], np.concatenate([np.zeros(3), spec.gravity]), 1e-9)
    fixed_spec.gravity = np.zeros(3)
    weightless = robodyn.Robot(fixed_spec)
    close(qdd[6:], weightless.forward_dynamics(qj, vj, tau[6:]), 1e-6)


def test_batches_and_out(rng):
    robot = robodyn.Robot(floating_tree(5, rng))
    states = [floating_state(robot, rng) for _ in range(6)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    taus = robot.inverse_dynamics(Q, V, A)
    Ms = robot.mass_matrix(Q)
    qdds = robot.forward_dynamics(Q, V, taus)
    hs = robot.momentum(Q, V)
    for k in range(6):
        close(taus[k], robot.inverse_dynamics(Q[k], V[k], A[k]), 1e-14)
        close(Ms[k], robot.mass_matrix(Q[k]), 1e-14)
        close(qdds[k], A[k], 1e-9)
        close(hs[k], robot.momentum(Q[k], V[k]), 1e-14)
    out = np.empty(robot.nv)
    assert robot.inverse_dynamics(Q[0], V[0], A[0], out=out) is out
    close(out, taus[0], 1e-14)
    robodyn.set_num_threads(2)
    try:
        Q2 = np.repeat(Q, 40, axis=0)
        V2, A2 = np.repeat(V, 40, axis=0), np.repeat(A, 40, axis=0)
        close(robot.forward_dynamics(Q2, V2, robot.inverse_dynamics(Q2, V2, A2)), A2, 1e-9)
    finally:
        robodyn.set_num_threads(1)


# ---------------------------------------------------------------- URDF

URDF = """<robot name="hopper">
  <link name="world"/>
  <link name="body"><inertial><origin xyz="0.01 0 0.02"/><mass value="3"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>
  <link name="leg"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.001"/></inertial></link>
  <link name="foot"/>
  <joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>
  <joint name="hip" type="revolute"><parent link="body"/><child link="leg"/>
    <origin xyz="0 0.1 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
  <joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/></joint>
</robot>"""


def test_urdf_floating_root_joint_and_flag(rng):
    a = robodyn.load_urdf(URDF)
    assert (a.nq, a.nv) == (8, 7) and a.joint_names == ["free", "hip"]
    fixed_text = URDF.replace('<link name="world"/>', "").replace(
        '<joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>',
        "")
    b = robodyn.load_urdf(fixed_text, floating_base=True)
    assert (b.nq, b.nv) == (8, 7) and b.joint_names == ["root_joint", "hip"]
    c = robodyn.load_urdf(fixed_text)
    assert (c.nq, c.nv) == (1, 1)
    q, v, acc = floating_state(a, rng)
    close(a.inverse_dynamics(q, v, acc), b.inverse_dynamics(q, v, acc), 1e-13)
    # the round trip through to_urdf keeps the free base
    d = robodyn.load_urdf(b.to_urdf())
    assert (d.nq, d.nv) == (8, 7)
    close(d.inverse_dynamics(q, v, acc), b.inverse_dynamics(q, v, acc), 1e-12)
    close(d.forward_kinematics(q), b.forward_kinematics(q), 1e-12)
    # floating_base=True on a file with a floating root joint: the same model
    e = robodyn.load_urdf(URDF, floating_base=True)
    close(e.mass_matrix(q), a.mass_matrix(q), 1e-14)
    # the base link's frame moves with q
    T = b.forward_kinematics(q)
    close(T[b.link_names.index("body")][:3, 3], q[:3], 1e-14)
    close(T[b.link_names.index("body")][:3, :3], quat_matrix(*q[3:7]), 1e-14)


def test_urdf_floating_errors():
    from robodyn.io.urdf import URDFError

    nested = URDF.replace('<joint name="hip" type="revolute"', '<joint name="hip" type="floating"')
    nested = nested.replace('name="free" type="floating"', 'name="free" type="fixed"')
    with pytest.raises(URDFError, match="floating joint must have the root link"):
        robodyn.load_urdf(nested)
    twice = URDF.replace('<joint name="hip" type="revolute"', '<joint name="hip" type="floating"')
    with pytest.raises(URDFError, match="only one floating joint"):
        robodyn.load_urdf(twice)
    # a mimic coupling on a free base: refused with the way out (independent joints)
    mimic = URDF.replace('<link name="foot"/>', '''<link name="foot"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>''')
    mimic = mimic.replace('''<joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/></joint>''', '''<joint name="ankle" type="revolute"><parent link="leg"/>
    <child link="foot"/><origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/><mimic joint="hip"/></joint>''')
    with pytest.raises(NotImplementedError, match="mimic='independent'"):
        robodyn.load_urdf(mimic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert robodyn.load_urdf(mimic, mimic="independent").nv == 8


# ---------------------------------------------------------------- against Pinocchio

def _pin():
    return pytest.importorskip("pinocchio")


def compare_with_pinocchio(pin, robot, model, coords, rng, states=3, rtol_frames=1e-9):
    data = model.createData()
    bare = pin.Model(model)
    bare.armature = np.zeros(model.nv)
    spec = robot.spec
    nv = robot.nv
    damping = np.zeros(nv)
    friction = np.zeros(nv)
    k = 0
    for b in spec.bodies:
        if b.joint_type == "floating":
            k += 6
            continue
        damping[k], friction[k] = b.damping, b.friction
        k += 1
    worst = {}

    def check(name, actual, expected, rtol=1e-9):
        expected = np.asarray(expected, dtype=float)
        scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
        err = float(np.abs(np.asarray(actual) - expected).max(initial=0.0)) / scale
        worst[name] = max(worst.get(name, 0.0), err)
        close(actual, expected, rtol)

    for _ in range(states):
        q, v, a = floating_state(robot, rng)
        pq, pv, pa = coords.q(q), coords.v(v), coords.v(a)
        jt = damping * v + friction * np.sign(v)
        check("rnea", robot.inverse_dynamics(q, v, a) - jt,
              coords.v_back(pin.rnea(model, data, pq, pv, pa)))
        M = pin.crba(model, data, pq)
        M = np.triu(M) + np.triu(M, 1).T
        check("crba", robot.mass_matrix(q), coords.vv_back(M))
        check("bias", robot.bias_torques(q, v), coords.v_back(pin.nle(model, data, pq, pv)))
        check("gravity", robot.gravity_torques(q),
              coords.v_back(pin.computeGeneralizedGravity(model, data, pq)))
        # Pinocchio's C (Christoffel-consistent, Mdot - 2C skew) is the same matrix
        check("coriolis", robot.coriolis_matrix(q, v),
              coords.vv_back(pin.computeCoriolisMatrix(model, data, pq, pv)))
        tau = 10 * rng.standard_normal(nv)
        expected = coords.v_back(pin.aba(model, data, pq, pv, coords.v(tau)))
        for method in ("aba", "crba"):
            check("fd_" + method, robot.forward_dynamics(q, v, tau + jt, method=method),
                  expected)
        # Pinocchio's kinetic energy takes a part of the armature in: compare the bodies' only
        armature = np.asarray(robot._model_arrays()["armature"])
        check("kinetic", robot.kinetic_energy(q, v) - 0.5 * (armature * v * v).sum(),
              pin.computeKineticEnergy(bare, bare.createData(), pq, pv))
        check("potential", robot.potential_energy(q), pin.computePotentialEnergy(model, data, pq))
        check("com", robot.center_of_mass(q), pin.centerOfMass(model, data, pq))
        hg = pin.computeCentroidalMomentum(model, data, pq, pv)
        c = data.com[0]
        check("momentum", robot.momentum(q, v),
              np.concatenate([hg.angular + np.cross(c, hg.linear), hg.linear]))
        # frames and Jacobians by link name
        pin.framesForwardKinematics(model, data, pq)
        pin.computeJointJacobians(model, data, pq)
        T = robot.forward_kinematics(q)
        for k_, link in enumerate(robot.link_names):
            if not model.existFrame(link, pin.FrameType.BODY):
                continue
            fid = model.getFrameId(link, pin.FrameType.BODY)
            check("fk", T[k_], data.oMf[fid].homogeneous, rtol_frames)
            J = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            check("jacobian", robot.jacobian(q, k_), coords.jacobian_back(J), rtol_frames)
        # configuration space
        q1 = floating_state(robot, rng)[0]
        pq1 = coords.q(q1)
        check("difference", coords.wrap(robot.difference(q, q1)),
              coords.v_back(pin.difference(model, pq, pq1)))
        qi = robot.integrate(q, v, 0.7)
        pqi = pin.integrate(model, pq, 0.7 * pv)
        if pqi[model.joints[1].idx_q + 6] * qi[6] < 0:  # the same rotation, other sign
            pqi[model.joints[1].idx_q + 3:model.joints[1].idx_q + 7] *= -1
        check("integrate", coords.q(qi), pqi)
    return worst


@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("n", [0, 1, 4, 12, 25])
def test_random_floating_vs_pinocchio(kind, n, rng):
    pin = _pin()
    from reference.pinocchio_models import Coordinates, depth_first_order, floating_pinocchio_model

    spec = floating_tree(n, rng, kind=kind, frames=3)
    robot = robodyn.Robot(spec)
    order = depth_first_order(spec)
    model = floating_pinocchio_model(pin, spec, order)
    for f in spec.frames:
        parent_joint = 0 if f.parent < 0 else int(np.where(order == f.parent)[0][0]) + 1
        model.addFrame(pin.Frame(f.name, parent_joint, 0,
                                 pin.SE3(f.pose[:3, :3], f.pose[:3, 3]),
                                 pin.FrameType.OP_FRAME))
    for i in order:
        b = spec.bodies[i]
        jid = model.getJointId(b.joint_name)
        model.addFrame(pin.Frame(b.name, jid, 0, pin.SE3.Identity(), pin.FrameType.BODY))
    coords = Coordinates(model, [b.joint_name for b in spec.bodies],
                         [b.joint_type for b in spec.bodies])
    compare_with_pinocchio(pin, robot, model, coords, rng)


def test_coordinates_helper(rng):
    """The reordering helper on its own: Pinocchio's free-flyer velocity is [linear; angular]
    in the base frame, checked through Pinocchio's own frame velocity of the base."""
    pin = _pin()
    from reference.pinocchio_models import Coordinates, floating_pinocchio_model

    spec = floating_tree(2, rng, kind="chain", frames=0)
    model = floating_pinocchio_model(pin, spec, np.arange(3))
    coords = Coordinates(model, [b.joint_name for b in spec.bodies],
                         [b.joint_type for b in spec.bodies])
    v = np.arange(1.0, 9.0)  # robodyn: angular (1, 2, 3), linear (4, 5, 6), joints 7, 8
    pv = coords.v(v)
    np.testing.assert_array_equal(pv, [4, 5, 6, 1, 2, 3, 7, 8])
    np.testing.assert_array_equal(coords.v_back(pv), v)
    data = model.createData()
    q = np.concatenate([[0.1, 0.2, 0.3], random_quaternion(rng), [0.4, -0.5]])
    pin.forwardKinematics(model, data, coords.q(q), pv)
    np.testing.assert_allclose(data.v[1].angular, v[:3])
    np.testing.assert_allclose(data.v[1].linear, v[3:6])
    M = np.arange(64.0).reshape(8, 8)
    np.testing.assert_array_equal(coords.vv_back(M[np.ix_(coords.vmap, coords.vmap)]), M)


# ---------------------------------------------------------------- example-robot-data

# The robots that example_robot_data.robots_loader builds with a free-flyer
# (``free_flyer = True``), by URDF path under its ``robots`` directory. The pip wheel ships the
# files without the loader module, so the list is written out here; a file missing from the
# installed version is skipped.
FLOATING_ROBOTS = {
    "a1": "a1_description/urdf/a1.urdf",
    "alexander": "alexander_description/urdf/alexander_v1.lowerBodyOnly.urdf",
    "anymal": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "anymal_kinova": "anymal_b_simple_description/robots/anymal-kinova.urdf",
    "b1": "b1_description/urdf/b1.urdf",
    "b1_z1": "b1_description/urdf/b1-z1.urdf",
    "bolt": "bolt_description/robots/bolt.urdf",
    "borinot": "borinot_description/urdf/borinot_flying_arm_2.urdf",
    "centauro": "centauro_description/urdf/centauro.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "g1_with_hands": "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "hector": "hector_description/robots/quadrotor_base.urdf",
    "hextilt": "hextilt_description/urdf/hextilt_flying_arm_5.urdf",
    "human": "human_description/robots/human.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "icub": "icub_description/robots/icub.urdf",
    "icub_reduced": "icub_description/robots/icub_reduced.urdf",
    "iris": "iris_description/robots/iris_simple.urdf",
    "laikago": "laikago_description/urdf/laikago.urdf",
    "pr2": "pr2_description/urdf/pr2.urdf",
    "quadruped": "quadruped_description/urdf/quadruped.urdf",
    "romeo": "romeo_description/urdf/romeo.urdf",
    "simple_humanoid": "simple_humanoid_description/urdf/simple_humanoid.urdf",
    "simple_humanoid_classical": "simple_humanoid_description/urdf/simple_humanoid_classical.urdf",
    "so100": "so_arm_description/urdf/so100.urdf",
    "so101": "so_arm_description/urdf/so101.urdf",
    "solo8": "solo_description/robots/solo.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_box": "talos_data/robots/talos_reduced_box.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "talos_full_box": "talos_data/robots/talos_full_v2_box.urdf",
}


def robot_data_path(name):
    from _load import example_robot_data_dir

    root = example_robot_data_dir()
    if root is None or not (root / FLOATING_ROBOTS[name]).is_file():
        pytest.skip("example-robot-data (or this robot in it) is not installed")
    return root / FLOATING_ROBOTS[name]


@pytest.mark.parametrize("name", sorted(FLOATING_ROBOTS))
def test_example_robot_data_floating(name, rng):
    pin = _pin()
    from reference.pinocchio_models import Coordinates

    path = robot_data_path(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mimic joints load as independent joints
        model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        armature = None
        if name == "romeo":
            # its 24 finger joints move no mass: M is singular (a warning, forward dynamics
            # would raise); with a rotor inertia on those joints it is regular and both agree
            spec = robodyn.urdf.parse_urdf(str(path), floating_base=True, check_inertia=False,
                                           mimic="independent")
            moved = [b.mass for b in spec.bodies]
            for i in reversed(range(1, len(spec.bodies))):
                moved[spec.bodies[i].parent] += moved[i]
            armature = {b.joint_name: 0.01 for b, m in zip(spec.bodies[1:], moved[1:]) if m == 0}
            assert len(armature) == 24
            for j, a in armature.items():
                model.armature[model.joints[model.getJointId(j)].idx_v] = a
        robot = robodyn.load_urdf(str(path), floating_base=True, check_inertia=False,
                                  armature=armature, mimic="independent")
    assert robot.nv == model.nv and robot.joint_names[0] == "root_joint"
    kinds = ["floating"] + [b.joint_type for b in robot.spec.bodies[1:]]
    coords = Coordinates(model, robot.joint_names, kinds)
    # Romeo's thumb axes are written to 6 digits (norm 1 - 2.2e-7): robodyn makes every axis
    # unit, Pinocchio rotates the thumbs (massless) by the written length: their frames differ
    compare_with_pinocchio(pin, robot, model, coords, rng, states=2,
                           rtol_frames=1e-6 if name == "romeo" else 1e-9)


def test_coupled_robot_sizes_and_configuration_space(rng):
    """A robot with a mimic coupling (no free base): nq = nv = n, the independent joints, and
    momentum / centre of mass at the expanded state."""
    fixed = URDF.replace('name="free" type="floating"', 'name="free" type="fixed"')
    mimic = fixed.replace('<link name="foot"/>', '''<link name="foot"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>''')
    mimic = mimic.replace('''<joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/></joint>''', '''<joint name="ankle" type="revolute"><parent link="leg"/>
    <child link="foot"/><origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/>
    <mimic joint="hip" multiplier="2" offset="0.1"/></joint>''')
    robot = robodyn.load_urdf(mimic)
    full = robot.full_robot()
    assert (robot.nq, robot.nv, robot.n) == (1, 1, 1) and (full.nq, full.nv) == (2, 2)
    q, v = np.array([0.3]), np.array([-0.7])
    close(robot.integrate(q, v, 0.5), q + 0.5 * v, 1e-15)
    close(robot.difference(q, q + 0.2), [0.2], 1e-15)
    qf, vf = np.array([0.3, 0.7]), np.array([-0.7, -1.4])
    close(robot.momentum(q, v), full.momentum(qf, vf), 1e-14)
    close(robot.center_of_mass(q), full.center_of_mass(qf), 1e-14)


# ---------------------------------------------------------------- command line

def test_cli_floating(tmp_path, capsys):
    """robodyn info / id / simulate on a free-floating robot (a bundled one, and a URDF with
    --floating-base), through the installed console script's entry point main(argv)."""
    import json
    import subprocess
    import sys

    from robodyn.cli import main

    path = tmp_path / "hopper.urdf"
    path.write_text(URDF.replace('<link name="world"/>', "").replace(
        '<joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>',
        ""))
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["floating_base"] is False
    assert main(["info", str(path), "--floating-base", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["nq"], info["nv"], info["floating_base"]) == (8, 7, True)
    q = "0.1 0.2 0.3 0 0 0 1 0.4"
    assert main(["id", str(path), "--floating-base", "--q", q, "--qd", "0", "--qdd", "0",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    robot = robodyn.load_urdf(str(path), floating_base=True)
    qv = np.array([float(x) for x in q.split()])
    close(out["tau"], robot.gravity_torques(qv), 1e-12)
    assert len(out["q"]) == 8 and len(out["tau"]) == 7
    assert main(["id", str(path), "--floating-base", "--q", "1 2 3 4 5 6 7 8"]) != 0
    assert "quaternion" in capsys.readouterr().err
    # a passive simulation of the bundled satellite from its initial state (as a process)
    proc = subprocess.run([sys.executable, "-m", "robodyn.cli", "simulate", "lynch_satellite",
                           "--duration", "0.2", "--controller", "none"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "momentum drift" in proc.stdout and "passive" in proc.stderr
    assert main(["simulate", "lynch_satellite", "--controller", "pd-gravity"]) != 0
