"""The pure-NumPy reference on free-floating systems (a free-flyer root), checked on its own.

It is the oracle for robodyn's floating base, so it is checked against things it does not
share: identities between its algorithms (FD(ID), ID = M a + h, CRBA columns from RNEA), the
kinematic ODE of a rigid body solved by a fine RK4 (integrate), finite differences along
integrate (Jacobian, centre-of-mass velocity), the base rows of M v (momentum), closed forms
(free fall, torque-free Euler equations), the heavy-base limit (the fixed-base model), the
momentum of a free system staying constant under a NumPy RK4 of its own, and Pinocchio's
free-flyer if installed.
"""

import numpy as np
import pytest

from reference import featherstone as F
from reference import random_models as R

SIZES = [0, 1, 3, 7, 12]
KINDS = ["chain", "tree"]


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def floating(kind, n, rng, **kw):
    return R.random_floating(n, rng, kind, **kw)


def pose(q):
    T = np.eye(4)
    T[:3, :3] = F.quat_to_rot(q[3:7])
    T[:3, 3] = q[:3]
    return T


def same_configuration(q1, q2, tol=1e-10):
    """Equal poses and joints (a quaternion and its negative are the same orientation)."""
    close(pose(q1), pose(q2), atol=tol)
    close(q1[7:], q2[7:], atol=tol)


# ---------------------------------------------------------------- configuration space

def test_layout_and_neutral(rng):
    spec = floating("tree", 5, rng)
    iq, iv, nq, nv = F.layout(spec)
    assert (nq, nv) == (12, 11) and iq[:2] == [0, 7] and iv[:2] == [0, 6]
    q0 = F.neutral(spec)
    close(q0, np.r_[0, 0, 0, 0, 0, 0, 1.0, np.zeros(5)], atol=0)
    close(F.fk(spec, q0)[0], np.eye(4), atol=0)


@pytest.mark.parametrize("n", [0, 4])
def test_integrate_solves_the_kinematic_ode(n, rng):
    # constant body twist: R' = R skew(w), p' = R v; a fine RK4 of that ODE on (R, p)
    spec = floating("chain", n, rng)
    q, v, _ = R.random_floating_state(spec, rng)
    v[:3] *= 1.5
    w, lin = v[:3], v[3:6]

    def f(y):
        Rm = y[:9].reshape(3, 3)
        return np.concatenate([(Rm @ F.skew(w)).ravel(), Rm @ lin])

    y = np.concatenate([F.quat_to_rot(q[3:7]).ravel(), q[:3]])
    steps = 2000
    h = 1.0 / steps
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    q1 = F.integrate(spec, q, v)
    close(F.quat_to_rot(q1[3:7]), y[:9].reshape(3, 3), atol=1e-11)
    close(q1[:3], y[9:], atol=1e-11)
    close(q1[7:], q[7:] + v[6:])
    close(np.linalg.norm(q1[3:7]), 1.0, atol=1e-14)


@pytest.mark.parametrize("scale", [1e-9, 1e-4, 0.3, 2.0, 3.1])
def test_difference_inverts_integrate(scale, rng):
    spec = floating("tree", 3, rng)
    for _ in range(5):
        q, v, _ = R.random_floating_state(spec, rng)
        v[:3] *= scale / np.linalg.norm(v[:3])
        v[3:6] *= scale
        q1 = F.integrate(spec, q, v)
        close(F.difference(spec, q, q1), v, rtol=1e-9, atol=1e-12)
        close(F.difference(spec, q, q), np.zeros(9), atol=1e-15)
        # the other way round, from two unrelated configurations, either quaternion sign
        q2, _, _ = R.random_floating_state(spec, rng)
        q2[3:7] *= -1 if rng.random() < 0.5 else 1
        same_configuration(F.integrate(spec, q, F.difference(spec, q, q2)), q2)


def test_integrate_composes_along_one_twist(rng):
    spec = floating("chain", 2, rng)
    q, v, _ = R.random_floating_state(spec, rng)
    same_configuration(F.integrate(spec, F.integrate(spec, q, v, 0.3), v, 0.7),
                       F.integrate(spec, q, v, 1.0))


# ---------------------------------------------------------------- identities between algorithms

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_aba_inverts_rnea(kind, n, rng):
    spec = floating(kind, n, rng)
    q, v, a = R.random_floating_state(spec, rng)
    tau = F.rnea(spec, q, v, a)
    close(F.aba(spec, q, v, tau), a, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_rnea_is_mass_matrix_plus_bias(kind, n, rng):
    spec = floating(kind, n, rng)
    q, v, a = R.random_floating_state(spec, rng)
    M = F.crba(spec, q)
    close(M, M.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0
    close(F.rnea(spec, q, v, a), M @ a + F.bias(spec, q, v) + F.friction_torques(spec, v))
    nv = M.shape[0]
    cols = [F.rnea(spec, q, np.zeros(nv), e, gravity=np.zeros(3)) for e in np.eye(nv)]
    close(M, np.array(cols).T)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 2, 6])
def test_kinetic_energy_from_com_velocities(kind, n, rng):
    # COM frames on every body; their velocities from the Jacobian; T = sum m v^2/2 + w'Iw/2
    spec = floating(kind, n, rng)
    spec.frames = []
    for i, b in enumerate(spec.bodies):
        T = np.eye(4)
        T[:3, 3] = b.com
        spec.frames.append(R.Frame(name=f"com{i}", parent=i, pose=T))
    q, v, _ = R.random_floating_state(spec, rng)
    poses = F.fk(spec, q)
    nb = len(spec.bodies)
    T = 0.5 * sum(b.armature * x * x for b, x in zip(spec.bodies[1:], v[6:]))
    for i, b in enumerate(spec.bodies):
        wv = F.jacobian(spec, q, nb + i) @ v
        Rw = poses[nb + i][:3, :3]
        T += 0.5 * b.mass * wv[3:] @ wv[3:] + 0.5 * wv[:3] @ Rw @ b.inertia @ Rw.T @ wv[:3]
    close(F.kinetic_energy(spec, q, v), T)
    close(0.5 * v @ F.crba(spec, q) @ v, T)


@pytest.mark.parametrize("kind", KINDS)
def test_jacobian_is_the_derivative_along_integrate(kind, rng):
    spec = floating(kind, 5, rng, frames=2)
    q, _, _ = R.random_floating_state(spec, rng)
    _, _, _, nv = F.layout(spec)
    h = 1e-6
    poses = F.fk(spec, q)
    for j in range(nv):
        e = np.zeros(nv)
        e[j] = h
        Pp, Pm = F.fk(spec, F.integrate(spec, q, e)), F.fk(spec, F.integrate(spec, q, -e))
        for index in range(len(poses)):
            W = (Pp[index][:3, :3] - Pm[index][:3, :3]) / (2 * h) @ poses[index][:3, :3].T
            w = 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
            col = np.concatenate([w, (Pp[index][:3, 3] - Pm[index][:3, 3]) / (2 * h)])
            close(F.jacobian(spec, q, index)[:, j], col, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- momentum and centre of mass

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 3, 8])
def test_momentum_is_the_base_rows_of_M_v(kind, n, rng):
    # rows 0-5 of M v = the composite momentum in base coordinates about the base origin
    spec = floating(kind, n, rng, armature=False)
    q, v, _ = R.random_floating_state(spec, rng)
    hb = (F.crba(spec, q) @ v)[:6]
    Rb, pb = F.quat_to_rot(q[3:7]), q[:3]
    lin = Rb @ hb[3:]
    close(F.momentum(spec, q, v), np.concatenate([Rb @ hb[:3] + np.cross(pb, lin), lin]))


@pytest.mark.parametrize("kind", KINDS)
def test_linear_momentum_is_mass_times_com_velocity(kind, rng):
    spec = floating(kind, 6, rng)
    q, v, _ = R.random_floating_state(spec, rng)
    h = 1e-6
    cdot = (F.center_of_mass(spec, F.integrate(spec, q, v, h))
            - F.center_of_mass(spec, F.integrate(spec, q, v, -h))) / (2 * h)
    mass = sum(b.mass for b in spec.bodies)
    close(F.momentum(spec, q, v)[3:], mass * cdot, rtol=1e-7, atol=1e-7)
    # and the COM is the mass-weighted mean of the body COMs
    poses = F.fk(spec, q)
    c = sum(b.mass * (P[:3, :3] @ b.com + P[:3, 3]) for b, P in zip(spec.bodies, poses)) / mass
    close(F.center_of_mass(spec, q), c)


def rk4(f, y, h, steps):
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@pytest.mark.parametrize("kind", KINDS)
def test_momentum_of_a_free_system_is_conserved(kind, rng):
    # zero gravity, no joint losses: the momentum about a fixed point stays constant. The
    # state is (q, v) in an embedding (quaternion derivative q' = q (x) (w, 0) / 2, renormalised
    # after each step), deliberately not the simulator's tangent-space scheme
    spec = floating(kind, 4, rng, armature=False, damping=False, friction=False)
    spec.gravity = np.zeros(3)
    q, v, _ = R.random_floating_state(spec, rng)
    nq = q.shape[0]

    def f(y):
        qq, vv = y[:nq], y[nq:]
        Rb = F.quat_to_rot(qq[3:7])
        qdot = np.concatenate([Rb @ vv[3:6], 0.5 * F.quat_mul(qq[3:7], np.r_[vv[:3], 0.0]),
                               vv[6:]])
        return np.concatenate([qdot, F.aba(spec, qq, vv, np.zeros(vv.shape[0]))])

    y = np.concatenate([q, v])
    h0 = F.momentum(spec, q, v)
    E0 = F.kinetic_energy(spec, q, v)
    for _ in range(10):
        y = rk4(f, y, 2e-3, 10)
        y[3:7] /= np.linalg.norm(y[3:7])
        close(F.momentum(spec, y[:nq], y[nq:]), h0, rtol=1e-8, atol=1e-8 * np.abs(h0).max())
    close(F.kinetic_energy(spec, y[:nq], y[nq:]), E0, rtol=1e-8)


# ---------------------------------------------------------------- closed forms and limits

def test_single_free_body(rng):
    spec = R.random_floating(0, rng)
    body = spec.bodies[0]
    body.com = np.zeros(3)
    q, v, _ = R.random_floating_state(spec, rng)
    Rb = F.quat_to_rot(q[3:7])
    # at rest: falls with gravity (in body axes), no angular acceleration
    close(F.aba(spec, q, np.zeros(6), np.zeros(6)), np.r_[0, 0, 0, Rb.T @ spec.gravity])
    # torque-free spinning about the COM: Euler's equations; the origin's acceleration in the
    # body frame is the derivative of R' v_b: g_b - w x v_b
    spec.gravity = np.zeros(3)
    I, w, vb = body.inertia, v[:3], v[3:]
    expected = np.r_[np.linalg.solve(I, -np.cross(w, I @ w)), -np.cross(w, vb)]
    close(F.aba(spec, q, v, np.zeros(6)), expected)
    # a wrench [moment; force] in body axes on a body at rest
    wrench = rng.standard_normal(6)
    close(F.aba(spec, q, np.zeros(6), wrench),
          np.r_[np.linalg.solve(I, wrench[:3]), wrench[3:] / body.mass])


@pytest.mark.parametrize("kind", KINDS)
def test_heavy_base_limit_is_the_fixed_base_model(kind, rng):
    # the joint accelerations of a floating system whose base is 1e9 times heavier tend to
    # those of the fixed-base model with the base held at its pose (without gravity: under
    # gravity the heavy system falls freely and its joints feel none)
    n = 6
    spec = floating(kind, n, rng, base_mass=1e9)
    q, v, _ = R.random_floating_state(spec, rng)
    v[:6] = 0.0
    tau = np.concatenate([np.zeros(6), rng.standard_normal(n)])
    fixed = R.ModelSpec(bodies=[R.Body(**{**b.__dict__, "parent": b.parent - 1})
                                for b in spec.bodies[1:]],
                        gravity=F.quat_to_rot(q[3:7]).T @ spec.gravity)
    qdd_fixed = F.aba(fixed, q[7:], v[6:], tau[6:], gravity=np.zeros(3))
    qdd = F.aba(spec, q, v, tau, gravity=np.zeros(3))
    close(qdd[6:], qdd_fixed, rtol=1e-6, atol=1e-6)
    assert np.abs(qdd[:6]).max() < 1e-6 * np.abs(qdd_fixed).max()
    close(F.crba(spec, q)[6:, 6:], F.crba(fixed, q[7:]))
    # inverse dynamics with the base at rest equals the fixed model's exactly (gravity in
    # base axes)
    a = np.concatenate([np.zeros(6), rng.standard_normal(n)])
    close(F.rnea(spec, q, v, a)[6:], F.rnea(fixed, q[7:], v[6:], a[6:]))


# ---------------------------------------------------------------- Pinocchio, if installed

from reference.pinocchio_models import depth_first_order  # noqa: E402
from reference.pinocchio_models import floating_pinocchio_model as pinocchio_free_flyer  # noqa: E402,E501


def _lin_first(x):
    return np.concatenate([x[3:6], x[:3], x[6:]])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 3, 9])
def test_against_pinocchio_free_flyer(kind, n, rng):
    pin = pytest.importorskip("pinocchio")
    spec = floating(kind, n, rng, damping=False, friction=False)
    o = depth_first_order(spec)
    model = pinocchio_free_flyer(pin, spec, o)
    data = model.createData()
    jo = o[1:] - 1  # joint order of the bodies after the base
    q, v, a = R.random_floating_state(spec, rng)
    qp = np.concatenate([q[:7], q[7:][jo]])

    def to_pin(x):
        return _lin_first(np.concatenate([x[:6], x[6:][jo]]))

    tau = F.rnea(spec, q, v, a)
    close(pin.rnea(model, data, qp, to_pin(v), to_pin(a)), to_pin(tau), rtol=1e-9, atol=1e-9)
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    P = np.array([to_pin(c) for c in np.eye(6 + n)]).T  # to_pin as a matrix
    close(M, P @ F.crba(spec, q) @ P.T)
    close(pin.aba(model, data, qp, to_pin(v), to_pin(tau)), to_pin(a), rtol=1e-9, atol=1e-9)
    close(pin.centerOfMass(model, data, qp), F.center_of_mass(spec, q))
    pin.computeCentroidalMomentum(model, data, qp, to_pin(v))
    hg = data.hg  # about the COM, world axes
    c = F.center_of_mass(spec, q)
    h = F.momentum(spec, q, v)
    close(np.asarray(hg.linear), h[3:])
    close(np.asarray(hg.angular), h[:3] - np.cross(c, h[3:]))
    dq = rng.standard_normal(6 + n)
    qi = pin.integrate(model, qp, to_pin(dq))
    mine = F.integrate(spec, q, dq)
    same_configuration(np.concatenate([qi[:7], qi[7:][np.argsort(jo)]]), mine)
    close(pin.difference(model, qp, qi), to_pin(dq), rtol=1e-9, atol=1e-12)
