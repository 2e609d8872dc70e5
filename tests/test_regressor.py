"""The joint-torque regressor (cpp/include/robodyn/algorithms/regressor.hpp) and dynamic_parameters().

tau = Y @ dynamic_parameters() + joint_regressor @ joint_parameters() reproduces
inverse_dynamics to 1e-10 on random chains and trees (mixed joints, arbitrary link frames,
extra frames) and the bundled arms; the Slotine-Li form gives M a + C(q, qd) v + g (C the
coriolis_matrix) and equals the plain regressor at v = qd; the columns equal Pinocchio's
computeJointTorqueRegressor on random models and the example-robot-data UR5 and Panda.
"""

import warnings

import numpy as np
import pytest

import robodyn
from reference import random_models as R


def close(actual, expected, rtol=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def robots():
    rng = np.random.default_rng(11)
    return [
        ("chain6", robodyn.Robot(R.random_chain(6, rng, frames=2))),
        ("tree10", robodyn.Robot(R.random_tree(10, rng))),
        ("stanford_arm", robodyn.robots.stanford_arm()),
        ("intelledex_605", robodyn.robots.intelledex_605()),
        ("dh_modified", robodyn.from_dh(R.random_dh_chain(5, rng), convention="modified")),
    ]


ROBOTS = robots()
IDS = [r[0] for r in ROBOTS]


@pytest.mark.parametrize("name,robot", ROBOTS, ids=IDS)
def test_regressor_reproduces_inverse_dynamics(name, robot, rng):
    n = robot.n
    pi = robot.dynamic_parameters()
    assert pi.shape == (10 * n,)
    close(pi[0::10], robot.masses, 1e-15)
    for _ in range(3):
        q, qd, qdd = R.random_state(robot.spec, rng)
        Y = robot.regressor(q, qd, qdd)
        assert Y.shape == (n, 10 * n)
        Yj = robot.joint_regressor(q, qd, qdd)
        tau = robot.inverse_dynamics(q, qd, qdd)
        close(Y @ pi + Yj @ robot.joint_parameters(), tau)
        # rigid-body part alone: M qdd + C qd + g with the armature taken out
        arm = robot.joint_parameters()[:n]
        close(Y @ pi, robot.mass_matrix(q) @ qdd - arm * qdd + robot.bias_torques(q, qd))


@pytest.mark.parametrize("name,robot", ROBOTS, ids=IDS)
def test_slotine_li_regressor(name, robot, rng):
    n = robot.n
    pi = robot.dynamic_parameters()
    arm = robot.joint_parameters()[:n]
    for _ in range(2):
        q, qd, _ = R.random_state(robot.spec, rng)
        v, a = rng.standard_normal((2, n))
        Y = robot.slotine_li_regressor(q, qd, v, a)
        expected = ((robot.mass_matrix(q) - np.diag(arm)) @ a + robot.coriolis_matrix(q, qd) @ v
                    + robot.gravity_torques(q))
        close(Y @ pi, expected)
        close(robot.slotine_li_regressor(q, qd, qd, a), robot.regressor(q, qd, a))


def test_batch_out_and_errors(rng):
    robot = ROBOTS[1][1]
    n = robot.n
    Q, QD, QDD = rng.standard_normal((3, 5, n))
    Y = robot.regressor(Q, QD, QDD)
    assert Y.shape == (5, n, 10 * n)
    for k in range(5):
        np.testing.assert_array_equal(Y[k], robot.regressor(Q[k], QD[k], QDD[k]))
    Yj = robot.joint_regressor(Q, QD, QDD)
    assert Yj.shape == (5, n, 3 * n)
    close(Yj[2], robot.joint_regressor(Q[2], QD[2], QDD[2]))
    out = np.empty((n, 10 * n))
    assert robot.regressor(Q[0], QD[0], QDD[0], out=out) is out
    Ys = robot.slotine_li_regressor(Q, QD, QDD, QD)
    assert Ys.shape == (5, n, 10 * n)
    with pytest.raises(ValueError, match="qd"):
        robot.regressor(Q[0], QD[0, :-1], QDD[0])
    with pytest.raises(ValueError, match="a"):
        robot.slotine_li_regressor(Q[0], QD[0], QD[0], np.full(n, np.inf))
    with pytest.raises(ValueError, match="qdd"):
        robot.joint_regressor(Q[0], QD[0], np.zeros(n + 2))


def test_regressor_op_counts_quadratic():
    # chains of one structure (generic DH rows): the counts fold the model's zeros
    from robodyn.codegen.opcount import generic_dh_rows

    counts = [robodyn.from_dh(generic_dh_rows(n, n)).op_counts("regressor")["mul"]
              for n in (3, 4, 5, 6, 7)]
    d2 = np.diff(counts, 2)
    assert np.all(d2 == d2[0]) and d2[0] > 0


# ---------------------------------------------------------------- Pinocchio

def test_pinocchio_regressor_random(rng):
    pin = pytest.importorskip("pinocchio")
    from reference.pinocchio_models import depth_first_order, pinocchio_model

    for spec in (R.random_chain(6, rng), R.random_tree(9, rng)):
        robot = robodyn.Robot(spec)
        o = depth_first_order(spec)
        model = pinocchio_model(pin, spec, o)
        data = model.createData()
        cols = np.concatenate([np.arange(10 * i, 10 * i + 10) for i in o])
        # the same parameters (Pinocchio's own, per joint in its order)
        close(robot.dynamic_parameters()[cols],
              np.concatenate([model.inertias[k + 1].toDynamicParameters()
                              for k in range(robot.n)]))
        for _ in range(2):
            q, qd, qdd = R.random_state(spec, rng)
            Yp = pin.computeJointTorqueRegressor(model, data, q[o], qd[o], qdd[o])
            close(robot.regressor(q, qd, qdd)[np.ix_(o, cols)], Yp)


def test_pinocchio_regressor_example_robot_data(rng):
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import URDFS, urdf_path

    for name in sorted(URDFS):
        path = urdf_path(name)
        model = pin.buildModelFromUrdf(str(path))
        data = model.createData()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            robot = robodyn.load_urdf(str(path), mimic="independent")
        jid = [model.getJointId(j) for j in robot.joint_names]
        iv = np.array([model.joints[j].idx_v for j in jid])
        cols = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in jid])
        close(robot.dynamic_parameters(),
              np.concatenate([model.inertias[j].toDynamicParameters() for j in jid]))
        lo, hi = robot.position_limits
        for _ in range(2):
            q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi))
            qd, qdd = rng.standard_normal((2, robot.n))
            pq, pv, pa = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
            pq[iv], pv[iv], pa[iv] = q, qd, qdd
            Yp = pin.computeJointTorqueRegressor(model, data, pq, pv, pa)
            close(robot.regressor(q, qd, qdd), Yp[np.ix_(iv, cols)])


def test_coupled_joints(rng):
    # with a follower joint the regressor has the full model's columns, G^T-reduced rows
    spec = R.random_chain(5, rng)
    spec.bodies[3].mimic = (spec.bodies[1].joint_name, 0.7, 0.2)
    robot = robodyn.robot(spec)
    n = robot.n
    q, qd, qdd = R.random_state(spec, rng)
    q, qd, qdd = q[:n], qd[:n], qdd[:n]
    Y = robot.regressor(q, qd, qdd)
    assert Y.shape == (n, 50)
    tau = Y @ robot.dynamic_parameters() + robot.joint_regressor(q, qd, qdd) @ \
        robot.joint_parameters()
    close(tau, robot.inverse_dynamics(q, qd, qdd))
    v, a = rng.standard_normal((2, n))
    arm = robot.joint_regressor(q, qd, a)[:, :5] @ robot.joint_parameters()[:5]
    expected = (robot.mass_matrix(q) @ a - arm + robot.coriolis_matrix(q, qd) @ v
                + robot.gravity_torques(q))
    close(robot.slotine_li_regressor(q, qd, v, a) @ robot.dynamic_parameters(), expected)
