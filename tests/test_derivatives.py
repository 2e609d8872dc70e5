"""Analytical derivatives of inverse and forward dynamics (cpp/include/robodyn/algorithms/rnea_derivatives.hpp).

Checked against central finite differences of robodyn's own inverse_dynamics and
forward_dynamics (all joint terms included: armature, damping, Coulomb friction away from
qd = 0) on random chains and trees with mixed revolute/prismatic joints and on the bundled arms,
and against Pinocchio's computeRNEADerivatives / computeABADerivatives in the same process
(test_pinocchio_derivatives below). Batches, out= and linearize are covered too.
"""

import numpy as np
import pytest

import robodyn
from reference import random_models as R


def close(actual, expected, rtol):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def central(f, x, h=1e-6):
    """(len(f(x)), len(x)) central-difference Jacobian."""
    cols = []
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(cols).T


def models():
    rng = np.random.default_rng(7)
    out = [
        ("chain7", robodyn.Robot(R.random_chain(7, rng))),
        ("tree9", robodyn.Robot(R.random_tree(9, rng))),
        ("chain3_revolute_z", robodyn.Robot(R.random_chain(3, rng, "revolute", "z"))),
        ("stanford_arm", robodyn.robots.stanford_arm()),
        ("intelledex_605", robodyn.robots.intelledex_605()),
    ]
    return out


MODELS = models()


def state(robot, rng):
    lo, hi = robot.position_limits
    q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi))
    qd = rng.standard_normal(robot.n)
    qd[np.abs(qd) < 0.05] = 0.05  # Coulomb friction: stay away from qd = 0
    return q, qd, rng.standard_normal(robot.n)


@pytest.mark.parametrize("name,robot", MODELS, ids=[m[0] for m in MODELS])
def test_inverse_dynamics_derivatives_vs_finite_differences(name, robot, rng):
    for _ in range(2):
        q, qd, qdd = state(robot, rng)
        dq, dqd = robot.inverse_dynamics_derivatives(q, qd, qdd)
        assert dq.shape == dqd.shape == (robot.n, robot.n)
        close(dq, central(lambda x: robot.inverse_dynamics(x, qd, qdd), q), 1e-6)
        close(dqd, central(lambda x: robot.inverse_dynamics(q, x, qdd), qd), 1e-6)
        # dtau/dqdd is the mass matrix (armature included)
        close(robot.mass_matrix(q), central(lambda x: robot.inverse_dynamics(q, qd, x), qdd),
              1e-6)


@pytest.mark.parametrize("name,robot", MODELS, ids=[m[0] for m in MODELS])
def test_forward_dynamics_derivatives_vs_finite_differences(name, robot, rng):
    q, qd, _ = state(robot, rng)
    tau = robot.inverse_dynamics(q, qd, rng.standard_normal(robot.n))
    dq, dqd, dtau = robot.forward_dynamics_derivatives(q, qd, tau)
    close(dq, central(lambda x: robot.forward_dynamics(x, qd, tau), q), 1e-6)
    close(dqd, central(lambda x: robot.forward_dynamics(q, x, tau), qd), 1e-6)
    close(dtau, central(lambda x: robot.forward_dynamics(q, qd, x), tau), 1e-6)
    close(dtau @ robot.mass_matrix(q), np.eye(robot.n), 1e-10)


def test_derivatives_no_friction_terms_match_bias_derivative(rng):
    # with qdd = 0 and no joint terms, dtau/dqd = d(C qd)/dqd = C + dC/dqd qd; at qd = 0 it is 0
    spec = R.random_chain(5, rng, armature=False, damping=False, friction=False)
    robot = robodyn.Robot(spec)
    q = rng.uniform(-1, 1, 5)
    dq, dqd = robot.inverse_dynamics_derivatives(q, np.zeros(5), np.zeros(5))
    close(dqd, np.zeros((5, 5)), 1e-12)
    # and dtau/dq is the gravity torques' derivative, symmetric (the Hessian of V)
    close(dq, central(lambda x: robot.gravity_torques(x), q), 1e-6)
    close(dq, dq.T, 1e-10)


def test_batch_and_out(rng):
    robot = MODELS[1][1]
    n = robot.n
    Q, QD, QDD = (rng.standard_normal((6, n)) for _ in range(3))
    bq, bqd = robot.inverse_dynamics_derivatives(Q, QD, QDD)
    assert bq.shape == (6, n, n)
    fq, fqd, ft = robot.forward_dynamics_derivatives(Q, QD, QDD)
    assert ft.shape == (6, n, n)
    for k in range(6):
        a, b = robot.inverse_dynamics_derivatives(Q[k], QD[k], QDD[k])
        np.testing.assert_array_equal(bq[k], a)
        np.testing.assert_array_equal(bqd[k], b)
        c = robot.forward_dynamics_derivatives(Q[k], QD[k], QDD[k])
        for x, y in zip((fq[k], fqd[k], ft[k]), c):
            np.testing.assert_array_equal(x, y)
    out = (np.empty((n, n)), np.empty((n, n)))
    res = robot.inverse_dynamics_derivatives(Q[0], QD[0], QDD[0], out=out)
    assert res[0] is out[0] and res[1] is out[1]
    np.testing.assert_array_equal(out[0], bq[0])
    out3 = tuple(np.empty((n, n)) for _ in range(3))
    res = robot.forward_dynamics_derivatives(Q[0], QD[0], QDD[0], out=out3)
    assert all(r is o for r, o in zip(res, out3))
    np.testing.assert_array_equal(out3[2], ft[0])


def test_bad_input(rng):
    robot = MODELS[0][1]
    n = robot.n
    z = np.zeros(n)
    with pytest.raises(ValueError, match="qdd"):
        robot.inverse_dynamics_derivatives(z, z, np.zeros(n + 1))
    with pytest.raises(ValueError, match="tau"):
        robot.forward_dynamics_derivatives(z, z, np.full(n, np.nan))
    with pytest.raises(ValueError, match="out"):
        robot.inverse_dynamics_derivatives(z, z, z, out=np.empty((n, n)))
    with pytest.raises(ValueError, match="out"):
        robot.inverse_dynamics_derivatives(z, z, z, out=(np.empty((n, n)), np.empty((n, 1))))
    with pytest.raises(ValueError, match="out"):
        a = np.empty((n, n))
        robot.inverse_dynamics_derivatives(z, z, z, out=(a, a))
    # outputs that share part of their memory would overwrite each other: refused too
    buf = np.empty((n + 1, n))
    with pytest.raises(ValueError, match="share memory"):
        robot.inverse_dynamics_derivatives(z, z, z, out=(buf[:n], buf[1:]))
    Q = np.zeros((3, n))
    buf = np.empty((4, n, n))
    with pytest.raises(ValueError, match="share memory"):
        robot.inverse_dynamics_derivatives(Q, Q, Q, out=(buf[:3], buf[1:]))
    # apart, the same two views of one buffer are fine
    buf = np.empty((2 * n, n))
    d_q, d_qd = robot.inverse_dynamics_derivatives(z, z, z, out=(buf[:n], buf[n:]))
    want = robot.inverse_dynamics_derivatives(z, z, z)
    assert np.array_equal(d_q, want[0]) and np.array_equal(d_qd, want[1])


def test_linearize(rng):
    robot = robodyn.robots.intelledex_605()
    n = robot.n
    q, qd, _ = state(robot, rng)
    tau = robot.gravity_torques(q)
    A, B = robot.linearize(q, qd, tau)
    assert A.shape == (2 * n, 2 * n) and B.shape == (2 * n, n)

    def f(x, u):
        return np.concatenate([x[n:], robot.forward_dynamics(x[:n], x[n:], u)])

    x = np.concatenate([q, qd])
    close(A, central(lambda y: f(y, tau), x), 1e-6)
    close(B, central(lambda u: f(x, u), tau), 1e-6)
    Ab, Bb = robot.linearize(np.array([q, q]), np.array([qd, qd]), np.array([tau, tau]))
    np.testing.assert_array_equal(Ab[1], A)
    np.testing.assert_array_equal(Bb[0], B)


@pytest.mark.parametrize("algorithm", ["rnea_derivatives", "forward_dynamics_derivatives"])
def test_op_counts_exist_and_grow_quadratically(algorithm):
    # the counting scalar runs the same code (its values are checked against the double ones
    # inside _op_counts); rnea_derivatives is O(n^2): second differences constant for chains
    # of one structure (generic DH rows: the counts fold the model's zeros, so random DH
    # chains with their random zeros would differ body by body)
    from robodyn.codegen.opcount import generic_dh_rows

    counts = []
    for n in (4, 5, 6, 7, 8):
        rows = generic_dh_rows(n, n)
        counts.append(robodyn.from_dh(rows).op_counts(algorithm)["mul"])
    assert all(c > 0 for c in counts)
    d2 = np.diff(counts, 2)
    if algorithm == "rnea_derivatives":
        assert np.all(d2 == d2[0]) and d2[0] > 0


# ---------------------------------------------------------------- Pinocchio

def test_pinocchio_derivatives(rng):
    pin = pytest.importorskip("pinocchio")
    from reference.pinocchio_models import depth_first_order, pinocchio_model

    specs = [R.random_chain(6, rng, damping=False, friction=False),
             R.random_tree(10, rng, damping=False, friction=False),
             R.random_chain(4, rng, "revolute", damping=False, friction=False)]
    for spec in specs:
        robot = robodyn.Robot(spec)
        o = depth_first_order(spec)
        model = pinocchio_model(pin, spec, o)
        data = model.createData()
        ix = np.ix_(o, o)
        for _ in range(2):
            q, qd, qdd = R.random_state(spec, rng)
            pdq, pdqd, _ = pin.computeRNEADerivatives(model, data, q[o], qd[o], qdd[o])
            dq, dqd = robot.inverse_dynamics_derivatives(q, qd, qdd)
            close(dq[ix], pdq, 1e-9)
            close(dqd[ix], pdqd, 1e-9)
            tau = 5 * rng.standard_normal(robot.n)
            pin.computeABADerivatives(model, data, q[o], qd[o], tau[o])
            fq, fqd, ft = robot.forward_dynamics_derivatives(q, qd, tau)
            close(fq[ix], data.ddq_dq, 1e-9)
            close(fqd[ix], data.ddq_dv, 1e-9)
            Minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
            close(ft[ix], Minv, 1e-9)


def test_pinocchio_derivatives_example_robot_data(rng):
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import URDFS, urdf_path
    import warnings

    for name in sorted(URDFS):
        path = urdf_path(name)
        model = pin.buildModelFromUrdf(str(path))
        data = model.createData()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            robot = robodyn.load_urdf(str(path), mimic="independent")
        spec = robot.spec
        for b in spec.bodies:
            b.damping = b.friction = 0.0
        robot = robodyn.Robot(spec)
        iv = np.array([model.joints[model.getJointId(j)].idx_v for j in robot.joint_names])
        lo, hi = robot.position_limits
        q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi))
        qd, qdd = rng.standard_normal((2, robot.n))
        pq, pv, pa = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        pq[iv], pv[iv], pa[iv] = q, qd, qdd
        ix = np.ix_(iv, iv)
        pdq, pdqd, _ = pin.computeRNEADerivatives(model, data, pq, pv, pa)
        dq, dqd = robot.inverse_dynamics_derivatives(q, qd, qdd)
        close(dq, pdq[ix], 1e-9)
        close(dqd, pdqd[ix], 1e-9)
        pin.computeABADerivatives(model, data, pq, pv, pa)
        fq, fqd, ft = robot.forward_dynamics_derivatives(q, qd, qdd)
        close(fq, data.ddq_dq[ix], 1e-9)
        close(fqd, data.ddq_dv[ix], 1e-9)


def test_coupled_joints(rng):
    # a follower joint (URDF mimic): the reduced derivatives against finite differences
    spec = R.random_chain(5, rng)
    spec.bodies[3].mimic = (spec.bodies[1].joint_name, 0.7, 0.2)
    robot = robodyn.robot(spec)
    assert robot.n == 4
    q, qd, qdd = state(robot, rng)
    dq, dqd = robot.inverse_dynamics_derivatives(q, qd, qdd)
    close(dq, central(lambda x: robot.inverse_dynamics(x, qd, qdd), q), 1e-6)
    close(dqd, central(lambda x: robot.inverse_dynamics(q, x, qdd), qd), 1e-6)
    tau = robot.inverse_dynamics(q, qd, qdd)
    fq, fqd, ft = robot.forward_dynamics_derivatives(q, qd, tau)
    close(fq, central(lambda x: robot.forward_dynamics(x, qd, tau), q), 1e-6)
    close(fqd, central(lambda x: robot.forward_dynamics(q, x, tau), qd), 1e-6)
    close(ft @ robot.mass_matrix(q), np.eye(4), 1e-10)
    out = (np.empty((4, 4)), np.empty((4, 4)))
    assert robot.inverse_dynamics_derivatives(q, qd, qdd, out=out) is out
    A, B = robot.linearize(q, qd, tau)
    assert A.shape == (8, 8) and B.shape == (8, 4)


def test_out_overlapping_an_input_is_computed_through_a_temporary(rng):
    robot = MODELS[0][1]
    n = robot.n
    q, qd, qdd = state(robot, rng)
    expected = robot.inverse_dynamics_derivatives(q, qd, qdd)
    buf = np.zeros(n * n)
    buf[:n] = q
    out = (buf.reshape(n, n), np.empty((n, n)))  # the first output holds q
    got = robot.inverse_dynamics_derivatives(buf[:n], qd, qdd, out=out)
    assert got is out
    np.testing.assert_array_equal(out[0], expected[0])
    np.testing.assert_array_equal(out[1], expected[1])
