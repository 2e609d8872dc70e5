"""The pure-NumPy reference checked on its own: it is the oracle for everything else.

Checks: identities between its algorithms, finite differences, closed forms (pendulum, planar
2-link arm), SymPy's KanesMethod on a 3-link spatial chain, and Pinocchio if installed.
"""

import numpy as np
import pytest

from reference import featherstone as F
from reference import random_models as R

SIZES = [1, 2, 3, 4, 6, 9, 14, 21, 30]
KINDS = ["chain", "tree"]
JOINTS = ["mixed", "revolute", "prismatic"]


def make(kind, n, rng, joint_types="mixed", **kw):
    gen = R.random_chain if kind == "chain" else R.random_tree
    return gen(n, rng, joint_types, **kw)


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- identities between algorithms

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("joint_types", JOINTS)
def test_aba_inverts_rnea(kind, n, joint_types, rng):
    spec = make(kind, n, rng, joint_types)
    q, qd, qdd = R.random_state(spec, rng)
    tau = F.rnea(spec, q, qd, qdd)
    close(F.aba(spec, q, qd, tau), qdd, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_rnea_is_mass_matrix_plus_bias_plus_friction(kind, n, rng):
    spec = make(kind, n, rng)
    q, qd, qdd = R.random_state(spec, rng)
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    expected = F.crba(spec, q) @ qdd + F.bias(spec, q, qd) + damping * qd + friction * np.sign(qd)
    close(F.rnea(spec, q, qd, qdd), expected)
    close(F.rnea(spec, q, np.zeros(n), np.zeros(n)), F.gravity_torques(spec, q))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_mass_matrix_symmetric_positive_definite(kind, n, rng):
    spec = make(kind, n, rng, armature=False)
    q, _, _ = R.random_state(spec, rng)
    M = F.crba(spec, q)
    close(M, M.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 3, 7, 15, 30])
def test_crba_columns_are_rnea_unit_accelerations(kind, n, rng):
    # M e_j = rnea(q, 0, e_j) with gravity off: an RNEA-only way to get M
    spec = make(kind, n, rng)
    q, _, _ = R.random_state(spec, rng)
    cols = [F.rnea(spec, q, np.zeros(n), e, gravity=np.zeros(3)) for e in np.eye(n)]
    close(F.crba(spec, q), np.array(cols).T)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
def test_aba_solves_the_equations_of_motion(kind, n, rng):
    spec = make(kind, n, rng)
    q, qd, _ = R.random_state(spec, rng)
    tau = rng.standard_normal(n) * 10
    rhs = tau - F.bias(spec, q, qd) - F.friction_torques(spec, qd)
    close(F.aba(spec, q, qd, tau), np.linalg.solve(F.crba(spec, q), rhs), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
def test_coriolis_power_matches_mass_matrix_rate(kind, n, rng):
    # qd' C qd = qd' Mdot qd / 2 for any valid C, Mdot by central differences along qd
    spec = make(kind, n, rng)
    q, qd, _ = R.random_state(spec, rng)
    h = 1e-6
    Mdot = (F.crba(spec, q + h * qd) - F.crba(spec, q - h * qd)) / (2 * h)
    Cqd = F.bias(spec, q, qd) - F.gravity_torques(spec, q)
    assert abs(qd @ Cqd - 0.5 * qd @ Mdot @ qd) < 1e-6 * (1 + abs(qd @ Cqd))


# ---------------------------------------------------------------- kinematics, energy, differences

def com_frames(spec):
    """A copy of spec with one extra frame at each body's COM, aligned with the body."""
    frames = []
    for i, b in enumerate(spec.bodies):
        T = np.eye(4)
        T[:3, 3] = b.com
        frames.append(R.Frame(name=f"com{i}", parent=i, pose=T))
    return R.ModelSpec(bodies=spec.bodies, frames=frames, gravity=spec.gravity)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_kinetic_energy_from_com_velocities(kind, n, rng):
    spec = make(kind, n, rng)
    q, qd, _ = R.random_state(spec, rng)
    s = com_frames(spec)
    poses = F.fk(s, q)
    T = 0.5 * sum(b.armature * x * x for b, x in zip(spec.bodies, qd))
    for i, b in enumerate(spec.bodies):
        w_v = F.jacobian(s, q, n + i) @ qd
        Rw = poses[n + i][:3, :3]
        T += 0.5 * b.mass * w_v[3:] @ w_v[3:] + 0.5 * w_v[:3] @ Rw @ b.inertia @ Rw.T @ w_v[:3]
    M = F.crba(spec, q)
    close(F.kinetic_energy(spec, q, qd), T)
    close(0.5 * qd @ M @ qd, T)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_gravity_torques_are_potential_gradient(kind, n, rng):
    spec = make(kind, n, rng)
    q, _, _ = R.random_state(spec, rng)
    h = 1e-6
    grad = np.array([(F.potential_energy(spec, q + h * e) - F.potential_energy(spec, q - h * e))
                     / (2 * h) for e in np.eye(n)])
    close(F.gravity_torques(spec, q), grad, rtol=1e-6, atol=1e-6)


def rotation_log_rate(Rp, Rm, R0, h):
    """Angular velocity (world axes) from R(q + h), R(q - h): vee of dR/dq R'."""
    W = (Rp - Rm) / (2 * h) @ R0.T
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 5, 11, 30])
def test_jacobian_columns_are_fk_differences(kind, n, rng):
    spec = make(kind, n, rng, frames=3)
    q, _, _ = R.random_state(spec, rng)
    h = 1e-6
    poses = F.fk(spec, q)
    plus = [F.fk(spec, q + h * e) for e in np.eye(n)]
    minus = [F.fk(spec, q - h * e) for e in np.eye(n)]
    for index in range(n + 3):
        J = F.jacobian(spec, q, index)
        for j in range(n):
            Tp, Tm = plus[j][index], minus[j][index]
            w = rotation_log_rate(Tp[:3, :3], Tm[:3, :3], poses[index][:3, :3], h)
            col = np.concatenate([w, (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)])
            close(J[:, j], col, rtol=1e-6, atol=1e-7)


def test_fk_composes_origins_and_motions(rng):
    spec = R.random_tree(6, rng, frames=4)
    q, _, _ = R.random_state(spec, rng)
    poses = F.fk(spec, q)
    assert len(poses) == 10
    for i, b in enumerate(spec.bodies):
        parent = np.eye(4) if b.parent == -1 else poses[b.parent]
        local = np.linalg.solve(parent, poses[i])
        motion = np.linalg.solve(b.origin, local)
        # the joint motion keeps the axis fixed and moves along or about it only
        close(motion[:3, :3] @ b.axis, b.axis)
        if b.joint_type == "revolute":
            close(motion[:3, 3], np.zeros(3), atol=1e-12)
            close(np.trace(motion[:3, :3]), 1 + 2 * np.cos(q[i]))
        else:
            close(motion[:3, :3], np.eye(3), atol=1e-12)
            close(motion[:3, 3], q[i] * b.axis)


# ---------------------------------------------------------------- closed forms

def planar_body(parent, x_origin, lc, mass, izz, axis=(0.0, 0.0, 1.0)):
    T = np.eye(4)
    T[0, 3] = x_origin
    return R.Body(name=f"l{parent + 2}", joint_name=f"j{parent + 2}", parent=parent,
                  joint_type="revolute", axis=np.array(axis), origin=T, mass=mass,
                  com=np.array([lc, 0.0, 0.0]), inertia=np.diag([0.1, 0.2, izz]))


def test_single_pendulum_closed_form(rng):
    m, l, I, g = 2.3, 0.7, 0.05, 9.81
    body = R.Body(name="bob", joint_name="swing", parent=-1, joint_type="revolute",
                  axis=np.array([1.0, 0.0, 0.0]), origin=np.eye(4), mass=m,
                  com=np.array([0.0, 0.0, -l]), inertia=np.diag([I, 0.3, 0.4]))
    spec = R.ModelSpec(bodies=[body], gravity=np.array([0.0, 0.0, -g]))
    for q, qd, qdd in rng.standard_normal((10, 3)) * 2:
        expected = m * g * l * np.sin(q) + (I + m * l * l) * qdd
        close(F.rnea(spec, [q], [qd], [qdd]), [expected])
        close(F.aba(spec, [q], [qd], [expected]), [qdd])
        close(F.potential_energy(spec, [q]), -m * g * l * np.cos(q))


def test_planar_two_link_closed_form(rng):
    # Spong, Hutchinson & Vidyasagar, "Robot Modeling and Control", sec. 7.4
    m1, m2, l1, lc1, lc2, I1, I2, g = 1.7, 1.1, 0.9, 0.4, 0.35, 0.08, 0.05, 9.81
    spec = R.ModelSpec(bodies=[planar_body(-1, 0.0, lc1, m1, I1), planar_body(0, l1, lc2, m2, I2)],
                       gravity=np.array([0.0, -g, 0.0]))
    for _ in range(10):
        q, qd, qdd = rng.standard_normal((3, 2)) * 2
        c1, c2, s2, c12 = np.cos(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[0] + q[1])
        M = np.array([
            [m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2) + I1 + I2,
             m2 * (lc2**2 + l1 * lc2 * c2) + I2],
            [m2 * (lc2**2 + l1 * lc2 * c2) + I2, m2 * lc2**2 + I2]])
        h = -m2 * l1 * lc2 * s2
        C = np.array([[h * qd[1], h * (qd[0] + qd[1])], [-h * qd[0], 0.0]])
        G = np.array([(m1 * lc1 + m2 * l1) * g * c1 + m2 * lc2 * g * c12, m2 * lc2 * g * c12])
        close(F.crba(spec, q), M)
        close(F.bias(spec, q, qd), C @ qd + G)
        close(F.gravity_torques(spec, q), G)
        close(F.rnea(spec, q, qd, qdd), M @ qdd + C @ qd + G)


# ---------------------------------------------------------------- SymPy Kane's method

def axis_frame(axis):
    """A rotation K whose third column is `axis` (so rot(axis, q) K = K Rz(q))."""
    helper = np.eye(3)[np.argmin(np.abs(axis))]
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


@pytest.fixture(scope="module")
def kane_chain():
    """A 3-link spatial chain (revolute, prismatic, revolute; random axes) and its lambdified
    Kane's equations M(q) u' = forcing(q, u).

    Built independently of featherstone.py: each body is described in a frame Z_i = body_i K_i
    whose z axis is the joint axis, so SymPy only sees constant rotations and Rz(q) or Tz(q).
    """
    sp = pytest.importorskip("sympy")
    me = pytest.importorskip("sympy.physics.mechanics")
    spec = R.random_chain(3, np.random.default_rng(7), "revolute", armature=False,
                          damping=False, friction=False)
    spec.bodies[1].joint_type = "prismatic"
    n = len(spec.bodies)
    q = me.dynamicsymbols(f"q0:{n}")
    u = me.dynamicsymbols(f"u0:{n}")
    N, O = me.ReferenceFrame("N"), me.Point("O")
    O.set_vel(N, 0)

    def vec(frame, x):
        return sum((float(c) * e for c, e in zip(x, (frame.x, frame.y, frame.z))), me.Vector(0))

    frames, points, K, rigid, loads = [], [], [], [], []
    for i, b in enumerate(spec.bodies):
        Ki = axis_frame(np.asarray(b.axis, dtype=float))
        Kp = np.eye(3) if b.parent == -1 else K[b.parent]
        Pf = N if b.parent == -1 else frames[b.parent]
        Pp = O if b.parent == -1 else points[b.parent]
        # A: the joint frame at q = 0, fixed in the parent
        A = me.ReferenceFrame(f"A{i}")
        A.orient_explicit(Pf, sp.Matrix((Kp.T @ b.origin[:3, :3] @ Ki).tolist()))
        A.set_ang_vel(Pf, 0)
        offset = vec(Pf, Kp.T @ b.origin[:3, 3])
        if b.joint_type == "revolute":
            Z = me.ReferenceFrame(f"Z{i}")
            Z.orient_axis(A, A.z, q[i])
            Z.set_ang_vel(A, u[i] * A.z)
            J = Pp.locatenew(f"J{i}", offset)
            J.v2pt_theory(Pp, N, Pf)
        else:
            Z = A
            J = Pp.locatenew(f"J{i}", offset + q[i] * A.z)
            J.set_vel(Pf, u[i] * A.z)
            J.v1pt_theory(Pp, N, Pf)
        G = J.locatenew(f"G{i}", vec(Z, Ki.T @ b.com))
        G.v2pt_theory(J, N, Z)
        Ic = Ki.T @ b.inertia @ Ki
        dyadic = me.inertia(Z, Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[1, 2], Ic[2, 0])
        rigid.append(me.RigidBody(f"body{i}", G, Z, float(b.mass), (dyadic, G)))
        loads.append((G, float(b.mass) * vec(N, spec.gravity)))
        frames.append(Z)
        points.append(J)
        K.append(Ki)
    kd = [sp.diff(q[i], me.dynamicsymbols._t) - u[i] for i in range(n)]
    km = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kd)
    km.kanes_equations(rigid, loads)
    M = sp.lambdify([q, u], km.mass_matrix, "numpy", cse=True)
    forcing = sp.lambdify([q, u], km.forcing, "numpy", cse=True)
    return spec, M, forcing


def test_against_sympy_kanes_method(kane_chain, rng):
    spec, M, forcing = kane_chain
    for _ in range(5):
        q, qd, qdd = R.random_state(spec, rng)
        Mk = np.asarray(M(q, qd), dtype=float)
        fk = np.asarray(forcing(q, qd), dtype=float).ravel()
        close(F.crba(spec, q), Mk)
        close(F.rnea(spec, q, qd, qdd), Mk @ qdd - fk)
        close(F.bias(spec, q, qd), -fk)


# ---------------------------------------------------------------- Denavit-Hartenberg

def test_dh_standard_frames_are_the_product_of_A_matrices(rng):
    rows = R.random_dh_chain(6, rng)
    spec = R.dh_to_spec(rows, "standard")
    q = rng.uniform(-np.pi, np.pi, 6)
    poses = F.fk(spec, q)
    T = np.eye(4)
    for i, r in enumerate(rows):
        T = T @ R.dh_standard(r["theta"] + q[i], r["d"], r["a"], r["alpha"])
        close(poses[6 + i], T, atol=1e-12)
        # COM given in DH frame i lands at the same world point
        com_world = T[:3, :3] @ r["com"] + T[:3, 3]
        close(poses[i][:3, :3] @ spec.bodies[i].com + poses[i][:3, 3], com_world, atol=1e-12)


def test_dh_modified_frames_are_the_product_of_A_matrices(rng):
    rows = R.random_dh_chain(5, rng)
    spec = R.dh_to_spec(rows, "modified")
    q = rng.uniform(-np.pi, np.pi, 5)
    poses = F.fk(spec, q)
    T = np.eye(4)
    for i, r in enumerate(rows):
        T = T @ R.dh_modified(r["alpha"], r["a"], r["theta"] + q[i], r["d"])
        close(poses[i], T, atol=1e-12)
        close(poses[5 + i], T, atol=1e-12)


def test_dh_standard_and_modified_give_the_same_dynamics(rng):
    # Craig row i takes alpha, a from standard row i - 1; link frames differ by Tx(a) Rx(alpha)
    std = R.random_dh_chain(6, rng, armature=True)
    mod, prev = [], dict(alpha=0.0, a=0.0)
    for r in std:
        A = R.dh_standard(0.0, 0.0, r["a"], r["alpha"])
        I = A[:3, :3] @ r["inertia"] @ A[:3, :3].T
        mod.append(dict(r, alpha=prev["alpha"], a=prev["a"], com=A[:3, :3] @ r["com"] + A[:3, 3],
                        inertia=[I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[1, 2], I[0, 2]]))
        prev = r
    s1, s2 = R.dh_to_spec(std, "standard"), R.dh_to_spec(mod, "modified")
    for _ in range(3):
        q, qd, qdd = R.random_state(s1, rng)
        close(F.rnea(s1, q, qd, qdd), F.rnea(s2, q, qd, qdd))
        close(F.crba(s1, q), F.crba(s2, q))
        close(F.potential_energy(s1, q), F.potential_energy(s2, q))


# ---------------------------------------------------------------- the generators themselves

@pytest.mark.parametrize("kind", KINDS)
def test_random_models_are_valid_and_seeded(kind):
    a = make(kind, 20, np.random.default_rng(3), frames=2)
    b = make(kind, 20, np.random.default_rng(3), frames=2)
    for i, (x, y) in enumerate(zip(a.bodies, b.bodies)):
        assert x.parent == y.parent and -1 <= x.parent < i
        close(x.origin, y.origin, rtol=0, atol=0)
        close(np.linalg.norm(x.axis), 1.0)
        close(x.origin[:3, :3] @ x.origin[:3, :3].T, np.eye(3), atol=1e-12)
        assert 0.5 <= x.mass <= 5.0
        J = np.linalg.eigvalsh(x.inertia)
        assert J.min() > 0 and J[0] + J[1] > J[2]
    if kind == "chain":
        assert [x.parent for x in a.bodies] == list(range(-1, 19))


# ---------------------------------------------------------------- Pinocchio, if installed

from reference.pinocchio_models import depth_first_order, pinocchio_model  # noqa: E402


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
def test_against_pinocchio(kind, n, rng):
    pin = pytest.importorskip("pinocchio")
    spec = make(kind, n, rng, damping=False, friction=False)
    o = depth_first_order(spec)
    model = pinocchio_model(pin, spec, o)
    data = model.createData()
    q, qd, qdd = R.random_state(spec, rng)
    close(pin.rnea(model, data, q[o], qd[o], qdd[o]), F.rnea(spec, q, qd, qdd)[o],
          rtol=1e-9, atol=1e-9)
    M = pin.crba(model, data, q[o])
    M = np.triu(M) + np.triu(M, 1).T
    close(M, F.crba(spec, q)[np.ix_(o, o)])
    tau = rng.standard_normal(n) * 10
    close(pin.aba(model, data, q[o], qd[o], tau[o]), F.aba(spec, q, qd, tau)[o],
          rtol=1e-9, atol=1e-9)
    pin.computeJointJacobians(model, data, q[o])
    poses = F.fk(spec, q)
    for k, i in enumerate(o):
        close(data.oMi[k + 1].homogeneous, poses[i], atol=1e-12)
        Jp = np.asarray(pin.getJointJacobian(model, data, k + 1, pin.LOCAL_WORLD_ALIGNED))
        Jp = Jp.reshape(6, n)
        # Pinocchio is [linear; angular]
        close(np.vstack([Jp[3:], Jp[:3]]), F.jacobian(spec, q, i)[:, o], atol=1e-12)
