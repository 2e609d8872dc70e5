"""Floating-base models against Pinocchio (JointModelFreeFlyer, in the same process) on seeded
random trees and on every floating-base robot of example-robot-data.

Conventions (docs: README, api.md): q = [base position (3), quaternion x, y, z, w (4),
joints], v = [base angular velocity (3), base linear velocity (3), both in the base frame,
joints]; Pinocchio's free-flyer v is [linear; angular]: every comparison goes through
reference.pinocchio_models.Coordinates (tested below on its own).
"""

import warnings

import numpy as np
import pytest

import robodyn
from _floating import (FLOATING_ROBOTS, close, floating_state, floating_tree,
                       random_quaternion, robot_data_path)


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
