"""What load_urdf accepts by default, warns about, refuses with strict=True; the one inertia
tolerance shared with the C++ model; limits of 0; exactness of axes and constant rotations;
xacro files; URDF written back loading in Pinocchio and MuJoCo."""

import logging
import math
import pathlib
import warnings

import numpy as np
import pytest

import robodyn
from robodyn import urdf
from robodyn import _core
from _load import DATA
from reference import featherstone as F
from reference import random_models as RM

GOOD = DATA / "good_urdf"
BAD = DATA / "bad_urdf"
HERE = pathlib.Path(__file__).resolve()

LINK = ('<link name="{name}"><inertial><origin xyz="0 0 0.1"/><mass value="{mass}"/>'
        '<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/>'
        '</inertial></link>')


def arm(root=(1, 1, 1), moving=(1, 1, 1), welded=None, limit='effort="10" velocity="2"'):
    """Two links on a revolute joint; the root link's, the moving link's (and a link welded
    to the root's) principal moments as given."""
    parts = ['<robot name="arm">', LINK.format(name="base", mass=1, ixx=root[0], iyy=root[1],
                                               izz=root[2]),
             LINK.format(name="upper", mass=1, ixx=moving[0], iyy=moving[1], izz=moving[2]),
             '<joint name="shoulder" type="revolute"><parent link="base"/>'
             '<child link="upper"/><axis xyz="0 1 0"/>'
             f'<limit lower="-1" upper="1" {limit}/></joint>']
    if welded is not None:
        parts += [LINK.format(name="antenna", mass=0.1, ixx=welded[0], iyy=welded[1],
                              izz=welded[2]),
                  '<joint name="antenna_joint" type="fixed"><parent link="base"/>'
                  '<child link="antenna"/></joint>']
    return "".join(parts) + "</robot>"


TRIANGLE = (0.001, 0.001, 0.004)  # I1 + I2 < I3
INDEFINITE = (-0.01, 0.1, 0.1)


# ---------------------------------------------------------------- what matters

def test_links_that_never_move_are_not_checked(caplog):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.INFO, logger="robodyn.urdf"):
            robot = robodyn.load_urdf(arm(root=INDEFINITE, welded=TRIANGLE), strict=True)
    assert robot.n == 1
    assert "'base'" not in caplog.text or "not inertia-checked" in caplog.text
    assert "base, antenna" in caplog.text and "not inertia-checked" in caplog.text


@pytest.mark.parametrize("moments, inequality", [(TRIANGLE, "I1 + I2 >= I3"),
                                                 (INDEFINITE, "positive semi-definite")])
def test_non_physical_moving_link_warns_once_naming_file_link_inequality(moments, inequality,
                                                                         tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(arm(moving=moments))
    with pytest.warns(urdf.URDFWarning) as record:
        robot = robodyn.load_urdf(path)
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith(f"{path}: ")
    assert "link 'upper' <inertial> <inertia>" in message and inequality in message
    assert record[0].filename == str(HERE)  # attributed to the caller, not to robodyn
    assert robot.n == 1
    with pytest.raises(urdf.URDFError) as info:
        robodyn.load_urdf(path, strict=True)
    assert str(info.value).startswith(f"{path}: link 'upper' <inertial> <inertia>: ")
    assert inequality in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robodyn.load_urdf(path, check_inertia=False)


def test_many_problems_are_one_warning(tmp_path):
    links = "".join(LINK.format(name=f"l{k}", mass=1, ixx=TRIANGLE[0], iyy=TRIANGLE[1],
                                izz=TRIANGLE[2]) for k in range(22))
    joints = "".join(f'<joint name="j{k}" type="continuous"><parent link="{"base" if k == 0 else f"l{k - 1}"}"/>'
                     f'<child link="l{k}"/><axis xyz="0 0 1"/></joint>' for k in range(22))
    text = f'<robot name="r"><link name="base"/>{links}{joints}</robot>'
    with pytest.warns(urdf.URDFWarning) as record:
        robodyn.load_urdf(text)
    assert len(record) == 1
    assert "22 warnings" in str(record[0].message)
    with pytest.raises(urdf.URDFError, match=r"link 'l0'.*and 21 more problems"):
        robodyn.load_urdf(text, strict=True)


def test_one_inertia_tolerance_in_parser_and_model():
    assert urdf.INERTIA_RTOL == _core.INERTIA_RTOL
    assert urdf.INERTIA_ATOL == _core.INERTIA_ATOL
    # just inside / just outside the tolerance: the parser and the model agree
    rng = np.random.default_rng(3)
    for scale in (1.0, 1e-6, 1e-12):
        tol = max(urdf.INERTIA_RTOL * 2 * scale, urdf.INERTIA_ATOL)
        for excess, ok in ((0.5 * tol, True), (2.0 * tol, False)):
            moments = (scale, scale, 2 * scale + excess)
            spec = RM.random_chain(1, rng)
            spec.bodies[0].inertia = np.diag(moments)
            assert (urdf.inertia_violation(np.diag(moments)) is None) == ok
            if ok:
                robodyn.Robot(spec)
            else:
                with pytest.raises(ValueError, match="triangle"):
                    robodyn.Robot(spec)
    # the documented example: a 1e-20 off-diagonal in a zero inertia loads in both layers
    text = arm(moving=(0, 0, 0)).replace('ixy="0"', 'ixy="1e-20"', 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robot = robodyn.load_urdf(text.replace('<mass value="1"/>', '<mass value="1"/>'))
    assert robot.n == 1


def test_limit_zero_means_not_given():
    for limit in ('effort="0" velocity="0"', 'effort="0" velocity="3"'):
        robot = robodyn.load_urdf(arm(limit=limit))
        assert robot.effort_limits[0] == math.inf
    assert robodyn.load_urdf(arm(limit='effort="0" velocity="0"')).velocity_limits[0] == math.inf
    spec = RM.random_chain(2, np.random.default_rng(1))
    spec.bodies[0].velocity = 0.0
    spec.bodies[1].effort = 0.0
    robot = robodyn.Robot(spec)  # the C++ model: 0 is "not given" too
    assert robot.velocity_limits[0] == math.inf and robot.effort_limits[1] == math.inf
    spec.bodies[1].effort = -1.0
    with pytest.raises(ValueError, match="effort"):
        robodyn.Robot(spec)


def test_joint_that_moves_no_mass_warns_and_model_errors_name_the_file(tmp_path):
    # a joint that moves no mass (Romeo's hands): loads with a warning, forward dynamics
    # raises; with strict the C++ model's refusal names the file
    path = tmp_path / "massless.urdf"
    path.write_text('<robot name="r"><link name="a"/><link name="b"/><joint name="j" '
                    'type="continuous"><parent link="a"/><child link="b"/></joint></robot>')
    with pytest.warns(urdf.URDFWarning, match="model: the mass matrix is singular") as record:
        robot = robodyn.load_urdf(path)
    assert len(record) == 1 and record[0].filename == str(HERE)
    np.testing.assert_array_equal(robot.inverse_dynamics([0.3], [1.0], [2.0]), [0.0])
    with pytest.raises(ValueError, match="forward dynamics failed"):
        robot.forward_dynamics([0.3], [1.0], [2.0])
    with pytest.raises(urdf.URDFError, match=rf"^{path}: model: the mass matrix is singular"):
        robodyn.load_urdf(path, strict=True)


# ---------------------------------------------------------------- exactness

def tilted_arm(tilt):
    """A 3-joint arm whose axes are tilted by `tilt` rad off the coordinate axes."""
    rng = np.random.default_rng(11)
    spec = RM.random_chain(3, rng, joint_types="revolute")
    axes = [np.array([0.0, -math.cos(tilt), -math.sin(tilt)]),
            np.array([math.sin(tilt), 0.0, math.cos(tilt)]),
            np.array([math.cos(tilt), math.sin(tilt), 0.0])]
    for body, axis in zip(spec.bodies, axes):
        body.axis = axis
        body.origin[:3, :3] = np.eye(3)
    return spec


@pytest.mark.parametrize("tilt", [1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15])
def test_axis_tilts_keep_their_effect(tilt, rng):
    # tilts of 1e-10 rad and more are kept to rounding; smaller ones may be snapped with the
    # constant rotations (at most 1e-12 rad per link): results within 1e-10 relative
    tol = 1e-14 if tilt >= 1e-10 else 1e-10
    spec = tilted_arm(tilt)
    robot = robodyn.Robot(spec)
    straight = tilted_arm(0.0)
    for _ in range(3):
        q, qd, qdd = RM.random_state(spec, rng)
        # poses against a Rodrigues rotation about the tilted axis, in NumPy
        T = np.eye(4)
        for i, body in enumerate(spec.bodies):
            J = np.eye(4)
            J[:3, :3] = F.rot(body.axis / np.linalg.norm(body.axis), q[i])
            T = T @ body.origin @ J
            np.testing.assert_allclose(robot.forward_kinematics(q)[i], T, rtol=0, atol=tol)
        scale = np.abs(F.rnea(spec, q, qd, qdd)).max()
        tau = robot.inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(tau, F.rnea(spec, q, qd, qdd), rtol=0,
                                   atol=max(100 * tol, 1e-12) * scale)
        if tilt >= 1e-10:  # the tilt is visible above rounding: it was kept
            moved = np.abs(robot.forward_kinematics(q)
                           - robodyn.Robot(straight).forward_kinematics(q)).max()
            assert moved > 0.1 * tilt


def near_permutation_chain(eps, n, rng):
    """A chain whose constant rotations are signed permutations turned by eps rad."""
    spec = RM.random_chain(n, rng, joint_types="revolute", axes="z")
    perms = [np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]),
             np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]),
             np.array([[0, 0, 1.0], [0, 1, 0], [-1, 0, 0]])]
    for i, body in enumerate(spec.bodies):
        tilt = F.rot(RM.random_unit(rng), eps)
        body.origin[:3, :3] = perms[i % 3] @ tilt
    return spec


@pytest.mark.parametrize("eps", [2e-10, 1e-10, 5e-11, 1e-11, 1e-12, 1e-13])
def test_rotation_snapping_changes_results_by_less_than_1e_10(eps, rng):
    n = 12
    spec = near_permutation_chain(eps, n, rng)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, qdd = RM.random_state(spec, rng)
        checks = [(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd)),
                  (robot.mass_matrix(q), F.crba(spec, q)),
                  (robot.forward_kinematics(q)[:n], np.array(F.fk(spec, q))[:n]),
                  (robot.forward_dynamics(q, qd, qdd), F.aba(spec, q, qd, qdd))]
        for got, expected in checks:
            scale = np.abs(expected).max()
            assert np.abs(got - expected).max() <= 1e-10 * scale


# ---------------------------------------------------------------- writing back

def test_written_urdf_has_no_infinite_numbers_and_round_trips(rng):
    spec = RM.random_chain(3, rng)
    spec.bodies[1].joint_type = "prismatic"
    for b in spec.bodies:
        b.lower, b.upper, b.velocity, b.effort = -math.inf, math.inf, math.inf, math.inf
    text = urdf.spec_to_urdf(spec)
    assert "inf" not in text.replace("<inertia", "").replace("inertial", "")
    back = urdf.parse_urdf(text)
    for a, b in zip(spec.bodies, back.bodies):
        assert (a.lower, a.upper, a.velocity, a.effort) == (b.lower, b.upper, b.velocity,
                                                            b.effort)


def _mujoco_model(text, tmp_path):
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "written.urdf"
    path.write_text(text)
    m = mujoco.MjModel.from_xml_path(str(path))
    D = mujoco.mjtDisableBit
    m.opt.disableflags |= int(D.mjDSBL_CONSTRAINT | D.mjDSBL_CONTACT | D.mjDSBL_LIMIT
                              | D.mjDSBL_FRICTIONLOSS | D.mjDSBL_DAMPER)
    return mujoco, m


@pytest.mark.parametrize("kind", ["dh", "tree"])
def test_written_urdf_loads_in_pinocchio_and_mujoco_with_the_same_dynamics(kind, rng,
                                                                           tmp_path):
    pin = pytest.importorskip("pinocchio")
    if kind == "dh":  # a DH robot without limits: continuous and unlimited prismatic joints
        rows = RM.random_dh_chain(5, rng, armature=False)
        rows[2]["joint"] = "prismatic"
        robot = robodyn.from_dh(rows)
    else:
        spec = RM.random_tree(7, rng, armature=False, damping=False, friction=False)
        for b in spec.bodies:
            b.lower, b.upper, b.velocity, b.effort = -math.inf, math.inf, math.inf, math.inf
        robot = robodyn.Robot(spec)
    text = robot.to_urdf()
    assert 'lower="-inf"' not in text and '"inf"' not in text
    path = tmp_path / "written.urdf"
    path.write_text(text)
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    joints = [model.joints[model.getJointId(name)] for name in robot.joint_names]
    mujoco, m = _mujoco_model(text, tmp_path)
    d = mujoco.MjData(m)
    mj_names = [m.joint(j).name for j in range(m.njnt)]
    mj = [mj_names.index(name) for name in robot.joint_names]
    iq, ivm = [m.jnt_qposadr[j] for j in mj], [m.jnt_dofadr[j] for j in mj]
    m.opt.gravity[:] = robot.gravity
    spec = robot.spec
    joint_terms = lambda qd: (np.array([b.damping for b in spec.bodies]) * qd
                              + np.array([b.friction for b in spec.bodies]) * np.sign(qd))
    for _ in range(3):
        q = rng.uniform(-1, 1, robot.n)
        qd, qdd = rng.standard_normal((2, robot.n))
        tau = robot.inverse_dynamics(q, qd, qdd) - joint_terms(qd)
        pq = np.zeros(model.nq)
        for j, x in zip(joints, q):
            if j.nq == 2:
                pq[j.idx_q:j.idx_q + 2] = math.cos(x), math.sin(x)
            else:
                pq[j.idx_q] = x
        iv = [j.idx_v for j in joints]
        pv, pa = np.zeros(model.nv), np.zeros(model.nv)
        pv[iv], pa[iv] = qd, qdd
        scale = np.abs(tau).max()
        assert np.abs(pin.rnea(model, data, pq, pv, pa)[iv] - tau).max() <= 1e-9 * scale
        d.qpos[iq], d.qvel[ivm], d.qacc[ivm] = q, qd, qdd
        mujoco.mj_inverse(m, d)
        assert np.abs(d.qfrc_inverse[ivm] - tau).max() <= 1e-9 * scale


# ---------------------------------------------------------------- xacro

XACRO = DATA / "xacro" / "arm.urdf.xacro"


def test_xacro_file_with_arguments():
    pytest.importorskip("xacrodoc")
    spec = urdf.parse_urdf(XACRO, xacro_args={"length": 0.4, "tool_mass": "0.5"})
    assert spec.name == "xacro_arm" and [b.name for b in spec.bodies] == ["link1", "link2",
                                                                          "link3"]
    assert spec.bodies[2].mass == 0.5
    np.testing.assert_allclose(spec.bodies[1].origin[:3, 3], [0, 0, 0.4], rtol=0, atol=1e-15)
    np.testing.assert_allclose(spec.bodies[1].inertia[0, 0], 1.5 * 0.4 ** 2 / 12, rtol=1e-15)
    default = robodyn.load_urdf(XACRO)  # the defaults of the <xacro:arg> elements
    assert default.spec.bodies[2].mass == 0.2
    np.testing.assert_allclose(default.spec.bodies[2].origin[:3, 3], [0, 0, 0.3], atol=1e-15)


def test_xacro_errors(tmp_path):
    pytest.importorskip("xacrodoc")
    bad = tmp_path / "bad.urdf.xacro"
    bad.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                   '<xacro:undefined_macro/></robot>')
    with pytest.raises(urdf.URDFError, match=rf"^{bad}: xacro: "):
        robodyn.load_urdf(bad)
    with pytest.raises(urdf.URDFFileNotFoundError):
        robodyn.load_urdf(tmp_path / "missing.urdf.xacro")
    with pytest.raises(ValueError, match="xacro_args: given for a source that is not"):
        robodyn.load_urdf(GOOD / "gripper.urdf", xacro_args={"a": 1})
    with pytest.raises(TypeError, match="xacro_args"):
        robodyn.load_urdf(XACRO, xacro_args=["length:=1"])


# ---------------------------------------------------------------- command line

def run_cli(*argv):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "robodyn.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=120)


def test_cli_strict_and_xacro_arguments(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(arm(moving=TRIANGLE))
    res = run_cli("info", path, "--json")
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("robodyn: warning:") == 1 and "I1 + I2 >= I3" in res.stderr
    res = run_cli("id", path, "--strict")
    assert res.returncode == 2
    assert f"{path}: link 'upper' <inertial> <inertia>: principal moments" in res.stderr
    for command in ("info", "id", "simulate", "opcount", "codegen", "bench"):
        res = run_cli(command, "--help")
        assert "--strict" in res.stdout and "--xacro-arg" in res.stdout, command
    if pytest.importorskip("xacrodoc"):
        res = run_cli("info", XACRO, "--json", "--xacro-arg", "tool_mass:=0.75",
                      "--xacro-arg", "length:=0.5")
        assert res.returncode == 0, res.stderr
        import json

        info = json.loads(res.stdout)
        assert info["joints"][2]["mass"] == 0.75
        res = run_cli("info", XACRO, "--xacro-arg", "tool_mass=0.75")
        assert res.returncode == 2 and "NAME:=VALUE" in res.stderr


@pytest.mark.parametrize("attribute", ["effort", "velocity"])
@pytest.mark.parametrize("token", ["nan", "NaN", "-nan"])
def test_nan_rate_limit_is_refused_naming_the_file_and_element(tmp_path, attribute, token):
    """A NaN effort (or velocity) limit is refused, never read as "no limit": from a URDF
    (the file, the joint's <limit> and the attribute named), from a spec (the body and the
    limit named) and as a controller's effort_limits (robodyn.control.effort_bounds)."""
    other = "velocity" if attribute == "effort" else "effort"
    path = tmp_path / "nan_limit.urdf"
    path.write_text(arm(limit=f'{attribute}="{token}" {other}="2"'))
    with pytest.raises(ValueError) as info:
        robodyn.load_urdf(path)
    text = str(info.value)
    assert "nan_limit.urdf" in text and "shoulder" in text and "<limit>" in text
    assert attribute in text and "finite" in text
    spec = RM.random_chain(2, np.random.default_rng(1))
    setattr(spec.bodies[1], attribute, math.nan)
    with pytest.raises(ValueError, match=rf"body 1.*{attribute}.*NaN|body 1.*NaN.*{attribute}"):
        robodyn.Robot(spec)
