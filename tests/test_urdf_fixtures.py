"""URDF front end: good fixtures, fixed-joint merging, the loader's arguments, round trip."""

import math
import warnings

import numpy as np
import pytest

from reference import featherstone as F
from reference import random_models as RM
from _urdf import BAD, GOOD, close, parse, random_state, rotation_rpy, same_dynamics, urdf


# ---------------------------------------------------------------- good fixtures

def test_gripper_structure():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the mimic joint is a coupling: no warning
        spec = urdf.parse_urdf(GOOD / "gripper.urdf")
    assert [b.mimic for b in spec.bodies] == [None, None, None,
                                              ("left_finger_joint", 1.0, 0.0), None]
    assert spec.name == "gripper_arm" and spec.base_name == "world"
    # depth-first from the root, siblings in document order (right finger is listed first)
    assert [b.joint_name for b in spec.bodies] == [
        "shoulder", "elbow", "wrist", "right_finger_joint", "left_finger_joint"]
    assert [b.name for b in spec.bodies] == [
        "upper_arm", "forearm", "wrist_link", "right_finger", "left_finger"]
    assert [b.parent for b in spec.bodies] == [-1, 0, 1, 2, 2]
    assert [b.joint_type for b in spec.bodies] == [
        "revolute", "revolute", "revolute", "prismatic", "prismatic"]
    # frames: merged links in document order of their fixed joints
    assert [(f.name, f.parent) for f in spec.frames] == [
        ("tcp", 2), ("palm", 2), ("base_link", -1)]
    close(spec.gravity, [0.0, 0.0, -9.81], 0.0)

    shoulder, elbow, wrist, right, left = spec.bodies
    close(right.axis, [0.0, -1.0, 0.0], 0.0)  # written as 0 -2 0: normalised
    assert (shoulder.lower, shoulder.upper, shoulder.effort, shoulder.velocity) == (-3, 3, 150, 1.5)
    assert (wrist.lower, wrist.upper) == (-math.inf, math.inf)  # continuous
    assert (wrist.effort, wrist.velocity) == (10.0, 3.0)
    assert [b.damping for b in spec.bodies] == [0.8, 0.3, 0.05, 0.0, 0.5]
    assert [b.friction for b in spec.bodies] == [1.0, 0.5, 0.02, 0.0, 0.0]
    assert [b.armature for b in spec.bodies] == [0.1, 0.05, 0.01, 0.0, 0.0]

    # the base_link frame and the shoulder origin go through the fixed world joint
    world_to_base = np.eye(4)
    world_to_base[:3, :3] = rotation_rpy(0, 0, 0.2)
    world_to_base[:3, 3] = [0.1, 0.2, 0.3]
    close(spec.frames[2].pose, world_to_base, 1e-15)
    shoulder_origin = np.eye(4)
    shoulder_origin[:3, :3] = rotation_rpy(0, 0, 0.5)
    shoulder_origin[:3, 3] = [0, 0, 0.1]
    close(shoulder.origin, world_to_base @ shoulder_origin, 1e-15)
    # the tcp frame is palm_joint @ tcp_joint in the wrist body
    palm = np.eye(4)
    palm[:3, :3] = rotation_rpy(0, np.pi / 2, 0)
    palm[:3, 3] = [0.05, 0, 0]
    tcp = np.eye(4)
    tcp[:3, :3] = rotation_rpy(0, 0, np.pi / 2)
    tcp[:3, 3] = [0, 0, 0.1]
    close(spec.frames[1].pose, palm, 1e-15)
    close(spec.frames[0].pose, palm @ tcp, 1e-15)
    # the base_link inertia belongs to the fixed base: no body carries its 5 kg
    assert sum(b.mass for b in spec.bodies) == pytest.approx(2.0 + 1.2 + 0.4 + 0.6 + 0.1)


def test_merged_inertia_is_the_sum_of_spatial_inertias():
    spec = parse(GOOD / "gripper.urdf")
    wrist = spec.bodies[2]
    palm_pose = spec.frames[1].pose
    R = rotation_rpy(0.3, -0.2, 0.7)
    palm_Ic = R @ np.array([[0.0009, 0.00005, -0.00002], [0.00005, 0.0007, 0.00001],
                            [-0.00002, 0.00001, 0.0005]]) @ R.T
    own = F.mcI(0.4, np.array([0.02, 0, 0]), np.diag([0.0004, 0.0003, 0.0003]))
    palm_in_palm = F.mcI(0.6, np.array([0.01, 0.002, 0.03]), palm_Ic)
    X = F.pose_to_X(palm_pose)  # wrist coordinates -> palm coordinates
    expected = own + X.T @ palm_in_palm @ X
    close(F.spatial_inertia(wrist), expected, 1e-14)
    assert wrist.mass == pytest.approx(1.0, abs=1e-15)


def test_fixed_joint_merge_matches_a_locked_prismatic_joint(rng):
    """Merged dynamics equal those of the unmerged robot with the palm on a joint held at 0."""
    text = (GOOD / "gripper.urdf").read_text()
    old = '<joint name="palm_joint" type="fixed">'
    assert old in text
    unlocked = text.replace(old, '<joint name="palm_joint" type="prismatic">'
                            '<axis xyz="0.3 -0.5 0.8"/><limit effort="1" velocity="1"/>')
    merged, full = parse(text), parse(unlocked)
    names = [b.joint_name for b in merged.bodies]
    full_names = [b.joint_name for b in full.bodies]
    assert set(full_names) == set(names) | {"palm_joint"}
    keep = [full_names.index(name) for name in names]
    palm = full_names.index("palm_joint")
    for _ in range(4):
        q, qd, qdd = random_state(len(names), rng)
        qf, qdf, qddf = (np.zeros(len(full_names)) for _ in range(3))
        qf[keep], qdf[keep], qddf[keep] = q, qd, qdd
        close(F.rnea(merged, q, qd, qdd), F.rnea(full, qf, qdf, qddf)[keep])
        close(F.crba(merged, q), F.crba(full, qf)[np.ix_(keep, keep)])
        close(F.kinetic_energy(merged, q, qd), F.kinetic_energy(full, qf, qdf))
        # frames of merged links sit where the unmerged bodies are
        poses, full_poses = F.fk(merged, q), F.fk(full, qf)
        n, nf = len(merged.bodies), len(full.bodies)
        frame_index = {f.name: n + k for k, f in enumerate(merged.frames)}
        full_frame_index = {f.name: nf + k for k, f in enumerate(full.frames)}
        close(poses[frame_index["palm"]], full_poses[palm])
        close(poses[frame_index["tcp"]], full_poses[full_frame_index["tcp"]])


def test_rotated_inertial_origin():
    spec = parse(GOOD / "rotated_inertial.urdf")
    (body,) = spec.bodies
    assert body.joint_type == "prismatic" and body.name == "body"
    R = rotation_rpy(0.4, -0.7, 1.1)
    close(body.com, [0.1, -0.2, 0.3], 0.0)
    close(body.inertia, R @ np.diag([0.05, 0.04, 0.02]) @ R.T, 1e-15)
    assert body.mass == 3.0
    origin = np.eye(4)
    origin[:3, :3] = rotation_rpy(0.1, 0.2, 0.3)
    origin[:3, 3] = [0, 0, 1]
    close(body.origin, origin, 1e-15)


def test_continuous_pendulum_defaults():
    spec = parse(GOOD / "pendulum_continuous.urdf")
    assert [b.name for b in spec.bodies] == ["link1", "hinge", "link2"]
    assert [b.parent for b in spec.bodies] == [-1, 0, 1]
    close(spec.bodies[0].axis, [1.0, 0.0, 0.0], 0.0)  # URDF default axis
    for b in spec.bodies:
        assert b.joint_type == "revolute"
        assert (b.lower, b.upper, b.velocity, b.effort) == (
            -math.inf, math.inf, math.inf, math.inf)
        assert b.armature == b.damping == b.friction == 0.0
    hinge = spec.bodies[1]
    assert hinge.mass == 0.0  # a link without <inertial> is massless
    close(hinge.inertia, np.zeros((3, 3)), 0.0)
    assert spec.frames == []


def test_number_syntax():
    template = ('<robot name="r"><link name="a"/><link name="b"><inertial>'
                '<mass value="{}"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                '</inertial></link><joint name="j" type="continuous"><parent link="a"/>'
                '<child link="b"/></joint></robot>')
    for text, value in [("2", 2.0), (" 2.5 ", 2.5), ("+.5", 0.5), ("5.", 5.0), ("1e-3", 1e-3),
                        ("1E+2", 100.0), ("-0", 0.0)]:
        assert urdf.parse_urdf(template.format(text)).bodies[0].mass == value
    for text in ["1_000", "0x10", "", "1 2", "one", "1e", "--1", "NaN", "Infinity", "inf"]:
        with pytest.raises(urdf.URDFError, match=r"link 'b' <inertial> <mass>: attribute 'value'"):
            urdf.parse_urdf(template.format(text))


def test_inertia_tolerance_and_degenerate_bodies():
    template = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
                '<inertia ixx="{}" ixy="0" ixz="0" iyy="{}" iyz="0" izz="{}"/></inertial>'
                '</link><joint name="j" type="continuous"><parent link="a"/><child link="b"/>'
                '</joint></robot>')
    ok = [(0, 0, 0), (0, 1, 1), (1, 1, 2), (1, 1, 2 + 1e-10), (0.5, 1.5, 2), (-1e-12, 1, 1),
          (-5e-19, 0, 0), (0, 0, 5e-19)]  # the last two: below the 1e-18 absolute floor
    for moments in ok:
        urdf.parse_urdf(template.format(*moments))
    ok += [(-1e-17, 0, 0), (0, 0, 9e-13)]  # below the 1e-12 kg m^2 absolute floor
    for moments in ok:
        urdf.parse_urdf(template.format(*moments), strict=True)
    for moments in [(1, 1, 2 + 1e-8), (1, 1, 3), (-1e-8, 1, 1), (0, 0, 1), (-2e-12, 0, 0)]:
        with pytest.raises(urdf.URDFError, match="link 'b' <inertial> <inertia>"):
            urdf.parse_urdf(template.format(*moments), strict=True)
        with pytest.warns(urdf.URDFWarning, match="link 'b' <inertial> <inertia>"):
            urdf.parse_urdf(template.format(*moments))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            urdf.parse_urdf(template.format(*moments), check_inertia=False)


def test_lenient_inertia_switch():
    with pytest.raises(urdf.URDFError):
        urdf.parse_urdf(BAD / "bad_inertia_triangle.urdf", strict=True)
    with pytest.warns(urdf.URDFWarning, match="triangle"):
        urdf.parse_urdf(BAD / "bad_inertia_triangle.urdf")
    spec = urdf.parse_urdf(BAD / "bad_inertia_triangle.urdf", check_inertia=False)
    close(np.diag(spec.bodies[1].inertia), [0.001, 0.001, 0.004], 0.0)
    with pytest.raises(urdf.URDFError, match="negative mass"):
        urdf.parse_urdf(BAD / "negative_mass.urdf", check_inertia=False)


# ---------------------------------------------------------------- arguments

def test_armature_argument():
    path = GOOD / "gripper.urdf"
    spec = parse(path, armature={"elbow": 0.7, "left_finger_joint": 0.2})
    assert [b.armature for b in spec.bodies] == [0.1, 0.7, 0.01, 0.0, 0.2]
    spec = parse(path, armature=[1, 2, 3, 4, 5])
    assert [b.armature for b in spec.bodies] == [1, 2, 3, 4, 5]
    spec = parse(path, armature=np.zeros(5))
    assert [b.armature for b in spec.bodies] == [0.0] * 5
    for bad, match in [({"palm_joint": 1.0}, "'palm_joint' is not a moving joint"),
                       ({"nope": 1.0}, "'nope' is not a moving joint"),
                       ([1, 2], r"sequence of 5 values"),
                       ("heavy", r"sequence of 5 values"),
                       ({"elbow": "heavy"}, "joint 'elbow': 'heavy' is not"),
                       ({"elbow": -1.0}, "joint 'elbow'.*>= 0"),
                       ([0, 0, math.nan, 0, 0], "joint 'wrist'.*>= 0")]:
        with pytest.raises(ValueError, match=match):
            parse(path, armature=bad)


def test_gravity_argument_and_extension():
    path = GOOD / "rotated_inertial.urdf"
    close(parse(path).gravity, [0, 0, -9.81], 0.0)
    close(parse(path, gravity=(0, -9.8, 0)).gravity, [0, -9.8, 0], 0.0)
    text = path.read_text().replace('<robot name="rotated_inertial">',
                                    '<robot name="rotated_inertial"><robodyn gravity="1 2 3"/>')
    close(parse(text).gravity, [1, 2, 3], 0.0)
    close(parse(text, gravity=[0, 0, -1]).gravity, [0, 0, -1], 0.0)
    for bad in [(0, 0), (0, 0, math.inf), "down"]:
        with pytest.raises(ValueError, match="gravity"):
            parse(path, gravity=bad)


# ---------------------------------------------------------------- round trip

def ancestors(spec, i):
    """i, its parent, ..., -1 (the base)."""
    yield i
    while i != -1:
        i = spec.bodies[i].parent
        yield i


def is_depth_first(spec):
    """Bodies in depth-first preorder: each body hangs from the previous one or an ancestor."""
    return all(spec.bodies[i + 1].parent in set(ancestors(spec, i))
               for i in range(len(spec.bodies) - 1))


def test_is_depth_first_can_fail(rng):
    spec = RM.random_chain(3, rng)
    assert is_depth_first(spec)
    spec.bodies[1].parent, spec.bodies[2].parent = -1, 0  # 0 <- base, 1 <- base, 2 <- 0
    assert not is_depth_first(spec)


@pytest.mark.parametrize("n", [1, 2, 5, 9, 16])
def test_round_trip_random_tree(n, rng):
    spec = RM.random_tree(n, rng, frames=3)
    text = urdf.spec_to_urdf(spec)
    back = urdf.parse_urdf(text)
    assert back.base_name == spec.base_name and back.name == spec.name
    assert is_depth_first(back)
    # a spec not in depth-first order comes back reordered, with the same dynamics
    same_dynamics(spec, back, rng, reordered=not is_depth_first(spec))
    index = {b.name: i for i, b in enumerate(back.bodies)}
    for a in spec.bodies:
        b = back.bodies[index[a.name]]
        assert a.joint_name == b.joint_name and a.joint_type == b.joint_type
        parent = a.parent if a.parent == -1 else spec.bodies[a.parent].name
        assert parent == (b.parent if b.parent == -1 else back.bodies[b.parent].name)
        for key in ("armature", "damping", "friction", "lower", "upper", "velocity", "effort",
                    "mass"):
            assert getattr(a, key) == getattr(b, key), key
        close(a.axis, b.axis, 1e-15)
        close(a.com, b.com, 0.0)
        close(a.inertia, b.inertia, 0.0)
        close(a.origin, b.origin, 1e-14)
    assert [f.name for f in spec.frames] == [f.name for f in back.frames]
    for a, b in zip(spec.frames, back.frames):
        close(a.pose, b.pose, 1e-14)
    # and a second round trip is exact in order
    same_dynamics(back, urdf.parse_urdf(urdf.spec_to_urdf(back)), rng, states=1)


def test_round_trip_gripper_and_gravity(rng):
    spec = parse(GOOD / "gripper.urdf")
    spec.gravity = np.array([0.5, -1.0, -9.0])
    back = urdf.parse_urdf(urdf.spec_to_urdf(spec))
    same_dynamics(spec, back, rng)
    assert [(b.lower, b.upper) for b in back.bodies] == [(b.lower, b.upper) for b in spec.bodies]
    assert [b.mimic for b in back.bodies] == [b.mimic for b in spec.bodies]


def test_round_trip_unlimited_joints_and_gimbal_lock(rng):
    spec = RM.random_chain(3, rng, joint_types="revolute")
    spec.bodies[1].joint_type = "prismatic"
    for b in spec.bodies:
        b.lower, b.upper, b.velocity, b.effort = -math.inf, math.inf, math.inf, math.inf
    spec.bodies[2].effort = 12.0
    for sign in (1.0, -1.0):  # pitch of exactly +-pi/2
        spec.bodies[0].origin[:3, :3] = rotation_rpy(0.3, sign * np.pi / 2, -1.2)
        text = urdf.spec_to_urdf(spec)
        assert text.count('type="continuous"') == 2
        back = urdf.parse_urdf(text)
        same_dynamics(spec, back, rng)
        for a, b in zip(spec.bodies, back.bodies):
            assert (a.lower, a.upper, a.velocity, a.effort) == (
                b.lower, b.upper, b.velocity, b.effort)
        close(back.bodies[0].origin, spec.bodies[0].origin, 1e-15)


def test_spec_to_urdf_rejects_inconsistent_specs(rng):
    spec = RM.random_chain(2, rng)
    spec.frames.append(RM.Frame(name="link1", parent=0, pose=np.eye(4)))
    with pytest.raises(ValueError, match="'link1' is used twice"):
        urdf.spec_to_urdf(spec)
    spec = RM.random_chain(2, rng)
    spec.bodies[1].mass = math.nan
    with pytest.raises(ValueError, match="non-finite"):
        urdf.spec_to_urdf(spec)
