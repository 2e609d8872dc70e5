"""URDF front end: bad-input corpus, good fixtures, fixed-joint merging, round trip, and
agreement with Pinocchio on the example-robot-data URDFs (dynamics from the NumPy reference)."""

import math
import socket
import statistics
import time
import warnings

import numpy as np
import pytest

from _load import DATA, example_robot_data_dir, urdf_module
from reference import featherstone as F
from reference import random_models as RM

urdf = urdf_module()
GOOD = DATA / "good_urdf"
BAD = DATA / "bad_urdf"


def parse(source, **kwargs):
    """parse_urdf with the mimic warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return urdf.parse_urdf(source, **kwargs)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def rotation_rpy(roll, pitch, yaw):
    """Rz(yaw) Ry(pitch) Rx(roll) built from Rodrigues rotations (independent of urdf.py)."""
    ex, ey, ez = np.eye(3)
    return F.rot(ez, yaw) @ F.rot(ey, pitch) @ F.rot(ex, roll)


def random_state(n, rng):
    return rng.uniform(-1.5, 1.5, n), rng.standard_normal(n), rng.standard_normal(n)


def same_dynamics(a, b, rng, states=3, tol=1e-10, reordered=False):
    """a and b: same rnea, crba and fk at random states, joints and frames matched by name.

    Unless `reordered`, the joints and frames must also be in the same order.
    """
    names = [x.joint_name for x in a.bodies]
    b_names = [x.joint_name for x in b.bodies]
    assert sorted(names) == sorted(b_names)
    if not reordered:
        assert names == b_names
        assert [f.name for f in a.frames] == [f.name for f in b.frames]
    perm = [b_names.index(name) for name in names]  # b index of each a joint
    b_links = [x.name for x in b.bodies] + [f.name for f in b.frames]
    links = [x.name for x in a.bodies] + [f.name for f in a.frames]
    link_perm = [b_links.index(name) for name in links]
    close(a.gravity, b.gravity, 0.0)
    n = len(names)
    for _ in range(states):
        q, qd, qdd = random_state(n, rng)
        qb, qdb, qddb = np.zeros(n), np.zeros(n), np.zeros(n)
        qb[perm], qdb[perm], qddb[perm] = q, qd, qdd
        close(F.rnea(a, q, qd, qdd), F.rnea(b, qb, qdb, qddb)[perm], tol)
        close(F.crba(a, q), F.crba(b, qb)[np.ix_(perm, perm)], tol)
        poses, b_poses = F.fk(a, q), F.fk(b, qb)
        for k, pose in enumerate(poses):
            close(pose, b_poses[link_perm[k]], tol)


# ---------------------------------------------------------------- bad input corpus

def _expected():
    table = {}
    for line in (BAD / "expected.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, fragment = line.split(": ", 1)
            table[name] = fragment
    return table


EXPECTED = _expected()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file_raises_named_error(name):
    path = BAD / name
    with pytest.raises(ValueError) as info:
        parse(path, strict=True)  # the inertia files load with a warning without strict
    assert isinstance(info.value, urdf.URDFError)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert EXPECTED[name] in message, message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_text_raises_named_error(name):
    with pytest.raises(urdf.URDFError) as info:
        parse((BAD / name).read_bytes(), strict=True)
    message = str(info.value)
    assert message.startswith("<string>: "), message
    assert EXPECTED[name] in message, message


def test_corpus_table_lists_every_file():
    files = {p.name for p in BAD.glob("*.urdf")}
    assert files == set(EXPECTED)
    assert len(files) >= 40


def test_entity_expansion_is_refused_fast():
    levels = "".join(f'<!ENTITY e{k} "{("&e%d;" % (k - 1)) * 10}">' for k in range(1, 40))
    text = f'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e0 "ha">{levels}]><robot name="&e39;"/>'
    start = time.perf_counter()
    with pytest.raises(urdf.URDFError, match="DTD/entities are not allowed"):
        urdf.parse_urdf(text)
    assert time.perf_counter() - start < 0.05


def test_undeclared_entity_is_not_resolved():
    with pytest.raises(urdf.URDFError, match="not well-formed XML: undefined entity"):
        urdf.parse_urdf('<robot name="r"><link name="&passwd;"/></robot>')


def test_missing_file_is_both_value_and_file_not_found_error(tmp_path):
    path = tmp_path / "nope.urdf"
    for source in (path, str(path)):
        with pytest.raises(urdf.URDFFileNotFoundError) as info:
            urdf.parse_urdf(source)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, FileNotFoundError)
        assert str(info.value).startswith(f"{path}: file not found")


def test_directory_is_a_value_error(tmp_path):
    with pytest.raises(urdf.URDFError, match="cannot read the file"):
        urdf.parse_urdf(tmp_path)


def test_wrong_source_type_is_a_type_error():
    with pytest.raises(TypeError):
        urdf.parse_urdf(42)


@pytest.mark.parametrize("text", ["", "   \n"])
def test_empty_string(text):
    with pytest.raises(urdf.URDFError, match="^<string>: empty input"):
        urdf.parse_urdf(text)


# ---------------------------------------------------------------- sources

def test_path_str_text_and_bytes_agree(rng):
    path = GOOD / "rotated_inertial.urdf"
    text = path.read_text()
    specs = [parse(path), parse(str(path)), parse("\n  " + text.split("?>", 1)[1]),
             parse(path.read_bytes())]
    for spec in specs[1:]:
        same_dynamics(specs[0], spec, rng, states=1, tol=0.0)


def test_utf16_file_with_declaration(tmp_path, rng):
    text = (GOOD / "rotated_inertial.urdf").read_text()
    text = text.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    path = tmp_path / "utf16.urdf"
    path.write_bytes(text.encode("utf-16"))
    same_dynamics(parse(path), parse(GOOD / "rotated_inertial.urdf"), rng, states=1, tol=0.0)


def test_utf16_file_cannot_hide_a_dtd(tmp_path):
    path = tmp_path / "hidden.urdf"
    path.write_bytes(('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY x "y">]>'
                      '<robot name="&x;"><link name="a"/></robot>').encode("utf-16"))
    with pytest.raises(urdf.URDFError, match="DTD/entities are not allowed"):
        urdf.parse_urdf(path)


def test_meshes_and_package_uris_are_never_fetched(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the URDF parser opened a socket")
    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    text = (GOOD / "rotated_inertial.urdf").read_text().replace(
        '<link name="body">',
        '<link name="body"><visual><geometry><mesh filename="http://example.com/x.stl"/>'
        '</geometry></visual><collision><geometry><mesh filename="package://p/y.dae"/>'
        '</geometry></collision>')
    assert len(parse(text).bodies) == 1


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
