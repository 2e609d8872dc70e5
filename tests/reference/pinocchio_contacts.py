"""A floating robot standing on its feet, built twice: robodyn's ConstrainedRobot (each foot
welded or pinned to the world where it is at q) and Pinocchio's model with the matching
RigidConstraintModels. Shared by tests/test_constraints_pinocchio.py and
bench/bench_constraints.py."""

import warnings

import numpy as np

import robodyn
from reference.pinocchio_models import Coordinates


def feet_case(pin, path, feet, kind, rng):
    """(robot, system, model, coords, cms, q) at a random q 1 m up; kind "weld" (6-D contacts)
    or "point" (3-D)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = robodyn.load_urdf(path, floating_base=True, check_inertia=False,
                                  mimic="independent")
        model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    kinds = ["floating"] + [b.joint_type for b in robot.spec.bodies[1:]]
    coords = Coordinates(model, robot.joint_names, kinds)
    q = robot.integrate(np.r_[0, 0, 1.0, 0, 0, 0, 1, np.zeros(robot.nv - 6)],
                        0.3 * rng.standard_normal(robot.nv))
    T = robot.forward_kinematics(q)
    system = robodyn.ConstrainedRobot(robot, [
        robodyn.LoopConstraint(f, None, frame2=T[robot.link_names.index(f)], kind=kind)
        for f in feet])
    data = model.createData()
    pin.framesForwardKinematics(model, data, coords.q(q))
    ctype = pin.ContactType.CONTACT_6D if kind == "weld" else pin.ContactType.CONTACT_3D
    cms = []
    for f in feet:
        fid = model.getFrameId(f)
        frame = model.frames[fid]
        cms.append(pin.RigidConstraintModel(ctype, model, frame.parentJoint, frame.placement, 0,
                                            data.oMf[fid], pin.ReferenceFrame.LOCAL))
    return robot, system, model, coords, cms, q
