"""Constrained forward dynamics against Pinocchio's constraintDynamics with
RigidConstraintModel (peers tier): four-bars (spatial; planar with proximal iterations on both
sides), Talos with both feet welded to the ground, Solo12 on four point feet.

The states are consistent (every loop closed, v in the null space of J): there the constraint
Jacobian and drift of any formulation agree (Pinocchio's 3-D contact drops the turning of
frame 1 off the constraint manifold; robodyn's J is the rate of phi)."""


import numpy as np
import pytest

import robodyn
from reference import fourbars

pin = pytest.importorskip("pinocchio")


def pose(p=(0, 0, 0)):
    T = np.eye(4)
    T[:3, 3] = p
    return T


def close(actual, expected, rtol=1e-9):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def se3(T):
    return pin.SE3(np.array(T[:3, :3]), np.array(T[:3, 3]))


def joint_terms(robot, v):
    """Joint damping and friction robodyn puts in h (Pinocchio has neither)."""
    damping, friction = [], []
    for b in robot.spec.bodies:
        n = 6 if b.joint_type == "floating" else 1
        damping += [0.0 if n == 6 else b.damping] * n
        friction += [0.0 if n == 6 else b.friction] * n
    return np.array(damping) * v + np.array(friction) * np.sign(v)


def assemble(system, q, hold=(0,), iters=40):
    free = [k for k in range(system.robot.nv) if k not in hold]
    for _ in range(iters):
        phi = system.residual(q)
        if np.abs(phi).max() < 1e-14:
            break
        dq = np.zeros(system.robot.nv)
        dq[free] = -np.linalg.lstsq(system.jacobian(q)[:, free], phi, rcond=None)[0]
        q = system.robot.integrate(q, dq, 1.0)
    assert np.abs(system.residual(q)).max() < 1e-12
    return q


def consistent_velocity(system, q, rng):
    J = system.jacobian(q)
    v = rng.standard_normal(system.robot.nv)
    return v - np.linalg.pinv(J) @ (J @ v)


def pin_lambda_to_rows(lam, kinds):
    """Pinocchio's stacked multipliers ([linear; angular] for 6-D) in robodyn's rows."""
    out, k = [], 0
    for kind in kinds:
        if kind == "weld":
            out += list(lam[k + 3:k + 6]) + list(lam[k:k + 3])
            k += 6
        else:
            out += list(lam[k:k + 3])
            k += 3
    return np.array(out)


def pin_solve(model, cms, q, v, tau, mu=0.0, iters=1, tol=1e-14):
    data = model.createData()
    cms = pin.StdVec_RigidConstraintModel(cms)
    cds = pin.StdVec_RigidConstraintData([cm.createData() for cm in cms])
    pin.initConstraintDynamics(model, data, cms, cds)
    settings = pin.ProximalSettings(tol, mu, iters)
    ddq = pin.constraintDynamics(model, data, q, v, tau, cms, cds, settings)
    return np.array(ddq), np.array(data.lambda_c)


def fourbar_case(urdf, loop_args, rng):
    robot = robodyn.load_urdf(urdf)
    system = robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(*loop_args[:2],
                                              loop_args[2], loop_args[3], kind="point")])
    q = assemble(system, rng.uniform(-0.5, 0.5, robot.nv))
    v = consistent_velocity(system, q, rng)
    tau = rng.standard_normal(robot.nv)
    model = pin.buildModelFromXML(urdf)
    assert list(model.names)[1:] == robot.joint_names
    j1, j2 = (model.getJointId(robot.joint_names[robot.link_names.index(b)])
              for b in loop_args[:2])
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model, j1, se3(loop_args[2]), j2,
                                  se3(loop_args[3]), pin.ReferenceFrame.LOCAL)
    return robot, system, model, [cm], q, v, tau


def test_spatial_fourbar(rng):
    robot, system, model, cms, q, v, tau = fourbar_case(
        fourbars.SPATIAL, ("coupler", "rocker", pose((0.6, 0, 0)), pose((0, 0, 0.3))), rng)
    ddq, lam = pin_solve(model, cms, q, v, tau)
    qdd_r, lam_r = system.forward_dynamics(q, v, tau + joint_terms(robot, v))
    close(qdd_r, ddq)
    close(lam_r, lam)


def test_planar_fourbar_proximal(rng):
    """The point constraint of a planar loop has a zero row (z): both libraries run proximal
    iterations (mu > 0); qdd agrees and the forces on the range of J (J' lam)."""
    robot, system, model, cms, q, v, tau = fourbar_case(
        fourbars.PLANAR, ("coupler", "rocker", pose((0.5, 0, 0)), pose((0.4, 0, 0))), rng)
    ddq, lam = pin_solve(model, cms, q, v, tau, mu=1e-6, iters=200, tol=1e-13)
    qdd_r, lam_r = system.forward_dynamics(q, v, tau + joint_terms(robot, v), mu=1e-6,
                                           max_iter=200, tol=1e-13)
    close(qdd_r, ddq)
    J = system.jacobian(q)
    close(J.T @ lam_r, J.T @ lam)
    close(lam_r, lam)  # both converge to the minimum-norm forces


# ---------------------------------------------------------------- floating robots

def erd_path(relative):
    from _load import example_robot_data_dir

    root = example_robot_data_dir()
    if root is None or not (root / relative).is_file():
        pytest.skip("example-robot-data (or this robot in it) is not installed")
    return str(root / relative)


def floating_case(relative, feet, kind, rng):
    from reference.pinocchio_contacts import feet_case

    robot, system, model, coords, cms, q = feet_case(pin, erd_path(relative), feet, kind, rng)
    v = consistent_velocity(system, q, rng)
    tau = 5 * rng.standard_normal(robot.nv)
    tau[:6] = 0
    return robot, system, model, coords, cms, q, v, tau


@pytest.mark.parametrize("case", [
    ("talos_data/robots/talos_reduced.urdf", ("left_sole_link", "right_sole_link"), "weld"),
    ("solo_description/robots/solo12.urdf", ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
     "point")], ids=["talos_both_feet_welded", "solo12_four_point_feet"])
def test_legged_robots(case, rng):
    relative, feet, kind = case
    robot, system, model, coords, cms, q, v, tau = floating_case(relative, feet, kind, rng)
    for _ in range(2):
        ddq, lam = pin_solve(model, cms, coords.q(q), coords.v(v), coords.v(tau))
        qdd_r, lam_r = system.forward_dynamics(q, v, tau + joint_terms(robot, v))
        close(qdd_r, coords.v_back(ddq))
        close(lam_r, pin_lambda_to_rows(lam, [kind] * len(feet)))
        v = consistent_velocity(system, q, rng)
