"""Shared helpers of the floating-base tests (test_floating_*.py): random floating trees and
states, quaternion and skew matrices; the floating-base robots of example-robot-data.
"""

import numpy as np
import pytest

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
