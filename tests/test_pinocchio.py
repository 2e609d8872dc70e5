"""robodyn against Pinocchio, in the same process: rnea, crba and aba with armature.

Models: random DH chains (robodyn.from_dh, and the same kinematics built joint by joint in
Pinocchio from the reference dh_to_spec), random trees in depth-first order (Pinocchio needs
every subtree contiguous in its joint order) and the UR5 and Panda URDFs of
example-robot-data, loaded by robodyn.load_urdf and pin.buildModelFromUrdf, joints matched by
name. Pinocchio's rnea / crba / aba include armature but not joint damping or Coulomb
friction, which are added or removed on the robodyn side.
"""

import pathlib
import warnings

import numpy as np
import pytest

import robodyn
from _load import example_robot_data_dir
from reference import random_models as R

pin = pytest.importorskip("pinocchio")

from reference import pinocchio_models  # noqa: E402
from reference.pinocchio_models import depth_first_order  # noqa: E402


def close(actual, expected, rtol=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def pinocchio_model(spec, order):
    return pinocchio_models.pinocchio_model(pin, spec, order)


def full(M):
    """Pinocchio's crba fills the upper triangle."""
    return np.triu(M) + np.triu(M, 1).T


def compare(robot, spec, model, order, rng, states=3):
    """rnea, crba, aba of robot (robodyn order) against model (Pinocchio order `order`)."""
    data = model.createData()
    o = order
    n = robot.n
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    assert model.nq == model.nv == n
    assert np.max(model.armature) > 0
    for _ in range(states):
        q, qd, qdd = R.random_state(spec, rng)
        joint_terms = damping * qd + friction * np.sign(qd)
        tau = robot.inverse_dynamics(q, qd, qdd) - joint_terms
        close(tau[o], pin.rnea(model, data, q[o], qd[o], qdd[o]))
        tau_kane = robot.inverse_dynamics(q, qd, qdd, method="kane") - joint_terms
        close(tau_kane[o], pin.rnea(model, data, q[o], qd[o], qdd[o]))
        close(robot.mass_matrix(q)[np.ix_(o, o)], full(pin.crba(model, data, q[o])))
        close(robot.gravity_torques(q)[o], pin.computeGeneralizedGravity(model, data, q[o]))
        close(robot.bias_torques(q, qd)[o], pin.nle(model, data, q[o], qd[o]))
        u = 10 * rng.standard_normal(n)
        expected = pin.aba(model, data, q[o], qd[o], u[o])
        for method in ("aba", "crba", "kane"):
            close(robot.forward_dynamics(q, qd, u + joint_terms, method=method)[o], expected)


@pytest.mark.parametrize("convention", ["standard", "modified"])
@pytest.mark.parametrize("n", [1, 3, 6, 10])
def test_random_dh_chains(convention, n, rng):
    rows = R.random_dh_chain(n, rng, armature=True)
    for i in range(0, n, 3):
        rows[i]["joint"] = "prismatic" if i % 2 else "revolute"
    if n > 2:
        rows[1]["joint"] = "prismatic"
    robot = robodyn.from_dh(rows, convention=convention)
    spec = R.dh_to_spec(rows, convention)
    order = np.arange(n)
    compare(robot, spec, pinocchio_model(spec, order), order, rng)


@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("n", [1, 2, 5, 12, 30])
def test_random_models(kind, n, rng):
    gen = R.random_chain if kind == "chain" else R.random_tree
    spec = gen(n, rng)
    robot = robodyn.Robot(spec)
    order = depth_first_order(spec)
    if kind == "tree" and n >= 12:
        assert not np.array_equal(order, np.arange(n))  # the reordering is exercised
    compare(robot, spec, pinocchio_model(spec, order), order, rng)


# ---------------------------------------------------------------- example-robot-data URDFs

URDFS = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
}


def urdf_path(name):
    root = example_robot_data_dir()
    if root is None:
        try:
            root = pathlib.Path(pin.getModelPath(URDFS[name])) / "example-robot-data" / "robots"
        except Exception:
            root = None
    if root is None or not (root / URDFS[name]).is_file():
        pytest.skip("example-robot-data is not installed")
    return root / URDFS[name]


@pytest.mark.parametrize("with_armature", [False, True])
@pytest.mark.parametrize("name", sorted(URDFS))
def test_example_robot_data(name, with_armature, rng):
    path = urdf_path(name)
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    names = list(model.names)[1:]
    armature = None
    if with_armature:
        armature = {j: float(a) for j, a in zip(names, rng.uniform(0.01, 0.5, len(names)))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Panda's mimic finger joint
        robot = robodyn.load_urdf(str(path), armature=armature, mimic="independent")
    assert sorted(robot.joint_names) == sorted(names)
    joints = [model.joints[model.getJointId(j)] for j in robot.joint_names]
    assert all(j.nq == 1 and j.nv == 1 for j in joints)
    iq = np.array([j.idx_q for j in joints])
    iv = np.array([j.idx_v for j in joints])
    if with_armature:
        model.armature = np.zeros(model.nv)
        model.armature[iv] = [armature[j] for j in robot.joint_names]
    spec = robot.spec
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    n = robot.n
    lo, hi = robot.position_limits
    for _ in range(4):
        q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi))
        qd, qdd = rng.standard_normal((2, n))
        pq, pv, pa = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        pq[iq], pv[iv], pa[iv] = q, qd, qdd
        joint_terms = damping * qd + friction * np.sign(qd)
        expected = pin.rnea(model, data, pq, pv, pa)[iv]
        close(robot.inverse_dynamics(q, qd, qdd) - joint_terms, expected)
        close(robot.inverse_dynamics(q, qd, qdd, method="kane") - joint_terms, expected)
        M = full(pin.crba(model, data, pq))
        close(robot.mass_matrix(q), M[np.ix_(iv, iv)])
        close(robot.gravity_torques(q), pin.computeGeneralizedGravity(model, data, pq)[iv])
        tau = 10 * rng.standard_normal(n)
        pt = np.zeros(model.nv)
        pt[iv] = tau
        expected = pin.aba(model, data, pq, pv, pt)[iv]
        for method in ("aba", "crba", "kane"):
            close(robot.forward_dynamics(q, qd, tau + joint_terms, method=method), expected)
        # link poses by name
        pin.framesForwardKinematics(model, data, pq)
        T = robot.forward_kinematics(q)
        matched = [k for k, link in enumerate(robot.link_names) if model.existFrame(link)]
        assert len(matched) >= n
        for k in matched:
            close(T[k], data.oMf[model.getFrameId(robot.link_names[k])].homogeneous)


@pytest.mark.parametrize("n", [3, 6, 9])
def test_jacobian_is_pinocchios_local_world_aligned_with_rows_swapped(n, rng):
    """robot.jacobian's docstring: [angular; linear] rows of the link frame's origin velocity
    in base axes, i.e. Pinocchio's LOCAL_WORLD_ALIGNED joint Jacobian with its [linear;
    angular] rows swapped."""
    spec = R.random_tree(n, rng)
    robot = robodyn.Robot(spec)
    order = depth_first_order(spec)
    model = pinocchio_model(spec, order)
    data = model.createData()
    q = rng.uniform(-1.0, 1.0, n)
    qp = q[order]
    pin.computeJointJacobians(model, data, qp)
    pin.updateFramePlacements(model, data)
    for i in range(n):
        J = robot.jacobian(q, i)
        Jp = pin.getJointJacobian(model, data, int(np.flatnonzero(order == i)[0]) + 1,
                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        expected = np.zeros((6, n))
        expected[:, order] = np.vstack([Jp[3:], Jp[:3]])
        close(J, expected)
