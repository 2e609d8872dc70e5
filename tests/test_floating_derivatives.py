"""Derivatives and regressors on a free-floating base (rnea_derivatives.hpp, regressor.hpp).

dq is a tangent vector: the derivative of f(integrate(q, dq)) at dq = 0, one column per entry
of v (base angular, base linear, both in the base frame, then the joints), the convention of
Pinocchio's computeRNEADerivatives / computeABADerivatives with a JointModelFreeFlyer (whose v
is [linear; angular]: compared through reference.pinocchio_models.Coordinates).

Checked against central finite differences through robot.integrate, against Pinocchio in the
same process on seeded random floating trees and on Solo12 / Talos (example-robot-data), and
the regressors against inverse dynamics and M a + C v + g.
"""

import warnings

import numpy as np
import pytest

import robodyn
from _floating import floating_state, floating_tree, robot_data_path


def close(actual, expected, rtol):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def tangent_jacobian(f, robot, q, h=1e-5):
    """(len(f(q)), nv): fourth-order central differences of f along integrate(q, h e_j)."""
    cols = []
    for j in range(robot.nv):
        e = np.zeros(robot.nv)
        e[j] = 1.0
        g = [f(robot.integrate(q, e, s * h)) for s in (-2, -1, 1, 2)]
        cols.append((g[0] - 8 * g[1] + 8 * g[2] - g[3]) / (12 * h))
    return np.array(cols).T


def euclidean_jacobian(f, x, h=1e-5):
    cols = []
    for j in range(len(x)):
        e = np.zeros(len(x))
        e[j] = h
        g = [f(x + s * e) for s in (-2, -1, 1, 2)]
        cols.append((g[0] - 8 * g[1] + 8 * g[2] - g[3]) / (12 * h))
    return np.array(cols).T


def state(robot, rng):
    q, v, a = floating_state(robot, rng)
    v[np.abs(v) < 0.05] = 0.05  # Coulomb friction: away from qd = 0
    return q, v, a


MODELS = [("tree6", 6, "tree"), ("chain4", 4, "chain"), ("tree1", 1, "tree")]


@pytest.mark.parametrize("name,n,kind", MODELS, ids=[m[0] for m in MODELS])
def test_derivatives_vs_finite_differences_through_integrate(name, n, kind, rng):
    # armature, damping and Coulomb friction included (tree1: a base with one joint)
    robot = robodyn.Robot(floating_tree(n, rng, kind=kind))
    for _ in range(2):
        q, v, a = state(robot, rng)
        dq, dv = robot.inverse_dynamics_derivatives(q, v, a)
        assert dq.shape == dv.shape == (robot.nv, robot.nv)
        close(dq, tangent_jacobian(lambda x: robot.inverse_dynamics(x, v, a), robot, q), 1e-8)
        close(dv, euclidean_jacobian(lambda x: robot.inverse_dynamics(q, x, a), v), 1e-8)
        tau = robot.inverse_dynamics(q, v, rng.standard_normal(robot.nv))
        fq, fv, ft = robot.forward_dynamics_derivatives(q, v, tau)
        close(fq, tangent_jacobian(lambda x: robot.forward_dynamics(x, v, tau), robot, q), 1e-8)
        close(fv, euclidean_jacobian(lambda x: robot.forward_dynamics(q, x, tau), v), 1e-8)
        close(ft, euclidean_jacobian(lambda x: robot.forward_dynamics(q, v, x), tau), 1e-8)
        close(ft @ robot.mass_matrix(q), np.eye(robot.nv), 1e-10)


def test_gravity_hessian_is_symmetric_at_rest(rng):
    # at v = 0, a = 0 without joint terms dtau/dq is the tangent Hessian of the potential
    # energy along the base's body-frame translations/rotations; its base-joint block pairs
    # agree with finite differences of gravity_torques
    robot = robodyn.Robot(floating_tree(5, rng, armature=False, friction=False))
    q, _, _ = floating_state(robot, rng)
    z = np.zeros(robot.nv)
    dq, dv = robot.inverse_dynamics_derivatives(q, z, z)
    close(dv, np.zeros_like(dv), 1e-12)
    close(dq, tangent_jacobian(robot.gravity_torques, robot, q), 1e-8)


def test_regressors_on_a_floating_base(rng):
    robot = robodyn.Robot(floating_tree(6, rng))
    pi = robot.dynamic_parameters()
    nb = len(robot.spec.bodies)
    assert pi.shape == (10 * nb,)
    for _ in range(2):
        q, v, a = state(robot, rng)
        Y = robot.regressor(q, v, a)
        assert Y.shape == (robot.nv, 10 * nb)
        tau = robot.inverse_dynamics(q, v, a)
        joint = robot.joint_regressor(q, v, a)
        assert joint.shape == (robot.nv, 3 * nb)
        close(Y @ pi + joint @ robot.joint_parameters(), tau, 1e-10)
        vr, ar = rng.standard_normal((2, robot.nv))
        Ys = robot.slotine_li_regressor(q, v, vr, ar)
        M = robot.mass_matrix(q)
        arm = np.r_[np.zeros(6), robot.joint_parameters()[1:nb]]  # armature per velocity
        close(Ys @ pi, (M - np.diag(arm)) @ ar + robot.coriolis_matrix(q, v) @ vr
              + robot.gravity_torques(q), 1e-10)
        np.testing.assert_allclose(robot.slotine_li_regressor(q, v, v, a), Y, rtol=0,
                                   atol=1e-12 * np.abs(Y).max())


def test_batches_and_out(rng):
    robot = robodyn.Robot(floating_tree(4, rng))
    nv, nb = robot.nv, len(robot.spec.bodies)
    states = [state(robot, rng) for _ in range(5)]
    Q, V, A = (np.array(x) for x in zip(*states))
    bq, bv = robot.inverse_dynamics_derivatives(Q, V, A)
    fq, fv, ft = robot.forward_dynamics_derivatives(Q, V, A)
    Yb = robot.regressor(Q, V, A)
    assert bq.shape == ft.shape == (5, nv, nv) and Yb.shape == (5, nv, 10 * nb)
    for k in range(5):
        one = robot.inverse_dynamics_derivatives(Q[k], V[k], A[k])
        np.testing.assert_array_equal(bq[k], one[0])
        np.testing.assert_array_equal(bv[k], one[1])
        for x, y in zip((fq[k], fv[k], ft[k]), robot.forward_dynamics_derivatives(Q[k], V[k], A[k])):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(Yb[k], robot.regressor(Q[k], V[k], A[k]))
    pair = (np.empty((nv, nv)), np.empty((nv, nv)))
    assert robot.inverse_dynamics_derivatives(Q[0], V[0], A[0], out=pair) is pair
    np.testing.assert_array_equal(pair[0], bq[0])
    triple = tuple(np.empty((nv, nv)) for _ in range(3))
    assert robot.forward_dynamics_derivatives(Q[1], V[1], A[1], out=triple) is triple
    np.testing.assert_array_equal(triple[2], ft[1])
    Y = np.empty((nv, 10 * nb))
    assert robot.regressor(Q[2], V[2], A[2], out=Y) is Y
    np.testing.assert_array_equal(Y, Yb[2])
    # a batch row with a non-unit quaternion is refused, naming the row
    bad = Q.copy()
    bad[3, 3:7] *= 1.1
    with pytest.raises(ValueError, match="quaternion.*row 3"):
        robot.inverse_dynamics_derivatives(bad, V, A)
    with pytest.raises(ValueError, match=r"q: expected shape \(%d,\)" % robot.nq):
        robot.forward_dynamics_derivatives(V[0], V[0], A[0])
    with pytest.raises(ValueError, match="out"):
        robot.regressor(Q[0], V[0], A[0], out=np.empty((nv, 10 * nv)))


def test_op_counts_on_a_floating_base(rng):
    robot = robodyn.Robot(floating_tree(5, rng))
    for name in ("rnea_derivatives", "forward_dynamics_derivatives", "regressor"):
        assert robot.op_counts(name)["mul"] > 0  # counted and checked against the double run


def test_linearize_on_a_floating_base(rng):
    """A, B against the deviation dynamics x = (dq, dv): q = integrate(q0(t), dq), v = v0 + dv,
    with d(dq)/dt from difference() along one short step of both motions."""
    robot = robodyn.Robot(floating_tree(3, rng, friction=False))
    nv = robot.nv
    q0, v0, _ = floating_state(robot, rng)
    tau = rng.standard_normal(nv)
    A, B = robot.linearize(q0, v0, tau)
    assert A.shape == (2 * nv, 2 * nv) and B.shape == (2 * nv, nv)

    def rate(x, h=1e-4):
        # d(dq)/dt by a central step of the kinematics (v constant over +-h)
        dq, dv = x[:nv], x[nv:]
        q, v = robot.integrate(q0, dq, 1.0), v0 + dv
        step = [robot.difference(robot.integrate(q0, v0, s * h), robot.integrate(q, v, s * h))
                for s in (-1, 1)]
        return (step[1] - step[0]) / (2 * h)

    Aq = euclidean_jacobian(rate, np.zeros(2 * nv), h=1e-4)
    close(A[:nv], Aq, 1e-6)
    assert np.abs(A[:6, :6]).max() > 0.1  # the -ad(v) block is exercised
    # the lower half is forward_dynamics_derivatives
    fq, fv, ft = robot.forward_dynamics_derivatives(q0, v0, tau)
    np.testing.assert_array_equal(A[nv:], np.hstack([fq, fv]))
    np.testing.assert_array_equal(B[nv:], ft)
    Ab, _ = robot.linearize(np.array([q0, q0]), np.array([v0, v0]), np.array([tau, tau]))
    np.testing.assert_array_equal(Ab[1], A)


# ---------------------------------------------------------------- Pinocchio

def _pin():
    return pytest.importorskip("pinocchio")


def compare_derivatives(pin, robot, model, coords, rng, states=2, rtol=1e-9):
    data = model.createData()
    for _ in range(states):
        q, v, a = floating_state(robot, rng)
        pdq, pdv, _ = pin.computeRNEADerivatives(model, data, coords.q(q), coords.v(v),
                                                 coords.v(a))
        dq, dv = robot.inverse_dynamics_derivatives(q, v, a)
        close(dq, coords.vv_back(pdq), rtol)
        close(dv, coords.vv_back(pdv), rtol)
        tau = robot.inverse_dynamics(q, v, rng.standard_normal(robot.nv))
        pin.computeABADerivatives(model, data, coords.q(q), coords.v(v), coords.v(tau))
        fq, fv, ft = robot.forward_dynamics_derivatives(q, v, tau)
        close(fq, coords.vv_back(data.ddq_dq), rtol)
        close(fv, coords.vv_back(data.ddq_dv), rtol)
        Minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
        close(ft, coords.vv_back(Minv), rtol)
        Yp = pin.computeJointTorqueRegressor(model, data, coords.q(q), coords.v(v), coords.v(a))
        # Pinocchio's column block of joint id k is body k - 1; robodyn's in body order
        cols = np.concatenate([np.arange(10) + 10 * (model.getJointId(j) - 1)
                               for j in robot.joint_names])
        close(robot.regressor(q, v, a), Yp[coords.vinv][:, cols], rtol)


def test_pinocchio_random_floating_trees(rng):
    pin = _pin()
    from reference.pinocchio_models import (Coordinates, depth_first_order,
                                            floating_pinocchio_model)

    for n, kind in ((7, "tree"), (4, "chain")):
        spec = floating_tree(n, rng, friction=False, frames=0, kind=kind)
        robot = robodyn.Robot(spec)
        order = depth_first_order(spec)
        model = floating_pinocchio_model(pin, spec, order)
        names = [spec.bodies[i].joint_name for i in range(len(spec.bodies))]
        kinds = [spec.bodies[i].joint_type for i in range(len(spec.bodies))]
        coords = Coordinates(model, names, kinds)
        compare_derivatives(pin, robot, model, coords, rng)


@pytest.mark.parametrize("name", ["solo12", "talos"])
def test_pinocchio_example_robot_data(name, rng):
    pin = _pin()
    from reference.pinocchio_models import Coordinates

    path = robot_data_path(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        robot = robodyn.load_urdf(str(path), floating_base=True, check_inertia=False,
                                  mimic="independent")
    # Pinocchio's RNEA has no joint damping or friction (Talos' URDF has damping)
    spec = robot.spec
    for b in spec.bodies:
        b.damping = b.friction = 0.0
    robot = robodyn.Robot(spec)
    kinds = ["floating"] + [b.joint_type for b in robot.spec.bodies[1:]]
    coords = Coordinates(model, robot.joint_names, kinds)
    compare_derivatives(pin, robot, model, coords, rng)
