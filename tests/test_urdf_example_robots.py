"""URDF front end: agreement with Pinocchio on the example-robot-data URDFs (dynamics from
the NumPy reference)."""

import math
import statistics
import time
import warnings

import numpy as np
import pytest

from _load import example_robot_data_dir
from reference import featherstone as F
from _urdf import GOOD, close, parse, random_state, same_dynamics, urdf


# ---------------------------------------------------------------- example-robot-data vs Pinocchio

ROBOTS = [
    "ur_description/urdf/ur5_robot.urdf",
    "panda_description/urdf/panda.urdf",
    "kinova_description/robots/kinova.urdf",
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "solo_description/robots/solo12.urdf",
    "baxter_description/urdf/baxter.urdf",
    "talos_data/robots/talos_reduced.urdf",
    "tiago_pro_description/robots/tiago_pro.urdf",
    "romeo_description/urdf/romeo.urdf",
    "z1_description/urdf/z1.urdf",
]
NON_PHYSICAL = [  # shipped with inertias of moving links that break the triangle inequality
    "pr2_description/urdf/pr2.urdf",
    "allegro_hand_description/urdf/allegro_right_hand.urdf",
]
NON_PHYSICAL_STILL = [  # only on links that never move (the root link, parts welded to it)
    "tiago_description/robots/tiago_no_hand.urdf",
    "anymal_b_simple_description/robots/anymal.urdf",
    "go1_description/urdf/go1.urdf",
]


def robots_dir():
    path = example_robot_data_dir()
    if path is None:
        pytest.skip("example-robot-data is not installed")
    return path


def compare_with_pinocchio(path, spec, rng, states=3):
    """rnea, crba and link-frame poses against Pinocchio, matched by joint/link name."""
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    names = [b.joint_name for b in spec.bodies]
    assert sorted(names) == sorted(model.names[1:])
    joints = [model.joints[model.getJointId(name)] for name in names]
    v_index = [j.idx_v for j in joints]
    armature = np.array([b.armature for b in spec.bodies])
    n = len(names)
    for _ in range(states):
        q, qd, qdd = random_state(n, rng)
        pq, pv, pa = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        for i, j in enumerate(joints):
            if j.nq == 2:  # continuous joint: (cos, sin)
                pq[j.idx_q:j.idx_q + 2] = np.cos(q[i]), np.sin(q[i])
            else:
                pq[j.idx_q] = q[i]
        pv[v_index], pa[v_index] = qd, qdd
        tau = F.rnea(spec, q, qd, qdd) - F.friction_torques(spec, qd) - armature * qdd
        close(tau, pin.rnea(model, data, pq, pv, pa)[v_index], 1e-9)
        pin.crba(model, data, pq)
        M = np.triu(data.M) + np.triu(data.M, 1).T
        close(F.crba(spec, q) - np.diag(armature), M[np.ix_(v_index, v_index)], 1e-9)
        pin.framesForwardKinematics(model, data, pq)
        poses = F.fk(spec, q)
        links = [b.name for b in spec.bodies] + [f.name for f in spec.frames]
        for link, pose in zip(links, poses):
            frame_id = model.getFrameId(link, pin.FrameType.BODY)
            close(pose, data.oMf[frame_id].homogeneous, 1e-9)


@pytest.mark.parametrize("name", ["gripper.urdf", "pendulum_continuous.urdf",
                                  "rotated_inertial.urdf"])
def test_fixtures_agree_with_pinocchio(name, rng):
    compare_with_pinocchio(GOOD / name, parse(GOOD / name), rng)


@pytest.mark.parametrize("robot", ROBOTS)
def test_example_robot_data_agrees_with_pinocchio(robot, rng):
    path = robots_dir() / robot
    spec = parse(path)
    assert len(spec.bodies) > 0
    assert all(b.parent < i for i, b in enumerate(spec.bodies))
    compare_with_pinocchio(path, spec, rng)


def test_example_robots_cover_fixed_joints_branches_and_continuous():
    root = robots_dir()
    specs = [parse(root / robot) for robot in ROBOTS]
    assert any(spec.frames for spec in specs)
    assert any(len({b.parent for b in spec.bodies}) < len(spec.bodies) for spec in specs)
    assert any(b.upper == math.inf and b.joint_type == "revolute"
               for spec in specs for b in spec.bodies)


@pytest.mark.parametrize("robot", NON_PHYSICAL)
def test_non_physical_example_inertias(robot, rng):
    path = robots_dir() / robot
    with pytest.raises(urdf.URDFError, match="<inertial> <inertia>"):
        parse(path, strict=True)
    with pytest.warns(urdf.URDFWarning, match="<inertial> <inertia>"):
        urdf.parse_urdf(path)
    compare_with_pinocchio(path, parse(path, check_inertia=False), rng, states=1)


@pytest.mark.parametrize("robot", NON_PHYSICAL_STILL)
def test_non_physical_inertia_that_never_moves_is_not_checked(robot, rng):
    path = robots_dir() / robot
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = urdf.parse_urdf(path, strict=True)
    # the file does have a non-physical inertia, on a link that never moves
    import xml.etree.ElementTree as ET

    bad = []
    for link in ET.parse(path).getroot().iter("link"):
        el = link.find("inertial/inertia")
        if el is not None:
            v = {k: float(el.get(k)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
            inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                                [v["ixz"], v["iyz"], v["izz"]]])
            if urdf.inertia_violation(inertia) is not None:
                bad.append(link.get("name"))
    moving = {b.name for b in spec.bodies}
    assert bad and not moving.intersection(bad)
    compare_with_pinocchio(path, spec, rng, states=1)


@pytest.mark.parametrize("robot", ["panda_description/urdf/panda.urdf",
                                   "talos_data/robots/talos_reduced.urdf"])
def test_example_robot_round_trip(robot, rng):
    spec = parse(robots_dir() / robot)
    same_dynamics(spec, urdf.parse_urdf(urdf.spec_to_urdf(spec)), rng, states=2)


def test_panda_loads_fast():
    path = robots_dir() / "panda_description/urdf/panda.urdf"
    times = []
    for _ in range(7):
        start = time.perf_counter()
        parse(path)
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.05
