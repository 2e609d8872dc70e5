"""robodyn.from_dh and robodyn.dh.dh_to_spec: the Denavit-Hartenberg front end.

Checks against something independent of robodyn.dh:
- torques recorded from the Robotics Toolbox for its Stanford arm (verbatim Toolbox table);
- closed forms: planar 2R arm with joint offsets, polar R-P arm with a prismatic offset;
- the pure-NumPy reference (its own DH mapping + Featherstone's algorithms) on random tables;
- the DH frame poses against the product of the DH matrices written out here;
- the same physical robot as a standard and as a modified (Craig) table;
- malformed rows raise ValueError naming the row and the field.
"""

import math

import numpy as np
import pytest

import robodyn
from robodyn.io.dh import dh_to_spec
from reference import featherstone as F
from reference import random_models as R

PI = math.pi


def close(a, b, rtol):
    b = np.asarray(b, dtype=float)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b)))))


def rotx(t):
    c, s = math.cos(t), math.sin(t)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def rotz(t):
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def trans(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def inertia_matrix(v):
    v = np.asarray(v, dtype=float)
    if v.shape == (3, 3):
        return v
    ixx, iyy, izz, ixy, iyz, ixz = v
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def pose(robot, q, name):
    return robot.forward_kinematics(q)[robot.link_names.index(name)]


# ---------------------------------------------------------------- Robotics Toolbox cross-check

# roboticstoolbox-python models.DH.Stanford, verbatim (including the COM components -1.054,
# -6.447, 0.566, 1.554 that robodyn's bundled model corrects to metres); Jm with gear ratio 1.
STANFORD_TOOLBOX = [
    dict(theta=0.0, d=0.412, a=0.0, alpha=-PI / 2, mass=9.29, com=[0, 0.0175, -0.1105],
         inertia=[0.276, 0.255, 0.071, 0, 0, 0], armature=0.953),
    dict(theta=0.0, d=0.154, a=0.0, alpha=PI / 2, mass=5.01, com=[0, -1.054, 0],
         inertia=[0.108, 0.018, 0.100, 0, 0, 0], armature=2.193),
    dict(theta=-PI / 2, d=0.0, a=0.0203, alpha=0.0, joint="prismatic", mass=4.25,
         com=[0, 0, -6.447], inertia=[2.51, 2.51, 0.006, 0, 0, 0], armature=0.782),
    dict(theta=0.0, d=0.0, a=0.0, alpha=-PI / 2, mass=1.08, com=[0, 0.092, -0.054],
         inertia=[0.002, 0.001, 0.001, 0, 0, 0], armature=0.106),
    dict(theta=0.0, d=0.0, a=0.0, alpha=PI / 2, mass=0.63, com=[0, 0.566, 0.003],
         inertia=[0.003, 0.0004, 0, 0, 0, 0], armature=0.097),
    dict(theta=0.0, d=0.0, a=0.0, alpha=0.0, mass=0.51, com=[0, 0, 1.554],
         inertia=[0.013, 0.013, 0.0003, 0, 0, 0], armature=0.020),
]

TB_Q = [0.1, 0.2, 0.5, 0.4, 0.5, 0.6]
TB_QD = [0.3, -0.2, 0.1, 0.4, -0.5, 0.6]
TB_QDD = [1.0, -1.0, 0.5, 0.2, -0.3, 0.4]
# recorded from roboticstoolbox-python 1.5.0, rne, gravity (0, 0, -9.81), friction off
TB_TAU_RIGID = [3.782622693e+00, -1.128483198e+02, 6.662205745e+01, -8.956655192e-01,
                -5.837765068e+00, 5.795370715e-04]
TB_TAU_JM = [4.735623e+00, -1.150413e+02, 6.701306e+01, -8.744655e-01, -5.866865e+00,
             8.579537e-03]


def stanford_toolbox(armature):
    return [dict(r, armature=r["armature"] if armature else 0.0) for r in STANFORD_TOOLBOX]


@pytest.mark.parametrize("method", ["rnea", "kane"])
def test_stanford_toolbox_rigid_body(method):
    robot = robodyn.from_dh(stanford_toolbox(False), gravity=(0, 0, -9.81), check_inertia=False)
    tau = robot.inverse_dynamics(TB_Q, TB_QD, TB_QDD, method=method)
    np.testing.assert_allclose(tau, TB_TAU_RIGID, rtol=1e-9, atol=0)


@pytest.mark.parametrize("method", ["rnea", "kane"])
def test_stanford_toolbox_with_rotor_inertia(method):
    robot = robodyn.from_dh(stanford_toolbox(True), gravity=(0, 0, -9.81), check_inertia=False)
    tau = robot.inverse_dynamics(TB_Q, TB_QD, TB_QDD, method=method)
    # the recorded vector has 7 significant digits
    np.testing.assert_allclose(tau, TB_TAU_JM, rtol=1e-6, atol=0)


def test_stanford_toolbox_default_gravity_and_armature_difference():
    rigid = robodyn.from_dh(stanford_toolbox(False), check_inertia=False)
    with_jm = robodyn.from_dh(stanford_toolbox(True), check_inertia=False)
    jm = np.array([r["armature"] for r in STANFORD_TOOLBOX])
    diff = with_jm.inverse_dynamics(TB_Q, TB_QD, TB_QDD) - rigid.inverse_dynamics(
        TB_Q, TB_QD, TB_QDD)
    close(diff, jm * np.array(TB_QDD), 1e-12)


# ---------------------------------------------------------------- closed forms

def test_planar_2r_closed_form_with_offsets(rng):
    # two links in the x0-y0 plane, gravity -y0; COM of link i at lc_i from joint i along the
    # link, i.e. at (lc_i - l_i, 0, 0) in DH frame i; theta and d offsets on both joints
    l1, l2, lc1, lc2, m1, m2, g = 0.7, 0.5, 0.3, 0.2, 3.0, 2.0, 9.81
    th = rng.uniform(-PI, PI, 2)
    I1, I2 = R.random_inertia(m1, rng), R.random_inertia(m2, rng)
    rows = [
        dict(theta=th[0], d=0.3, a=l1, alpha=0.0, mass=m1, com=[lc1 - l1, 0, 0], inertia=I1),
        dict(theta=th[1], d=-0.2, a=l2, alpha=0.0, mass=m2, com=[lc2 - l2, 0, 0], inertia=I2),
    ]
    robot = robodyn.from_dh(rows, gravity=(0, -g, 0))
    iz1, iz2 = I1[2, 2], I2[2, 2]
    for _ in range(5):
        q, qd, qdd = rng.uniform(-PI, PI, 2), rng.standard_normal(2), rng.standard_normal(2)
        t1, t2 = q + th
        c2, s2 = math.cos(t2), math.sin(t2)
        M = np.array([
            [iz1 + iz2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2),
             iz2 + m2 * (lc2**2 + l1 * lc2 * c2)],
            [iz2 + m2 * (lc2**2 + l1 * lc2 * c2), iz2 + m2 * lc2**2],
        ])
        h = m2 * l1 * lc2 * s2
        cor = np.array([-h * (2 * qd[0] * qd[1] + qd[1]**2), h * qd[0]**2])
        grav = np.array([(m1 * lc1 + m2 * l1) * g * math.cos(t1) + m2 * lc2 * g * math.cos(t1 + t2),
                         m2 * lc2 * g * math.cos(t1 + t2)])
        close(robot.mass_matrix(q), M, 1e-12)
        close(robot.inverse_dynamics(q, qd, qdd), M @ qdd + cor + grav, 1e-12)
        close(robot.forward_dynamics(q, qd, M @ qdd + cor + grav), qdd, 1e-10)


def test_polar_rp_closed_form_prismatic_offset(rng):
    # joint 1 about the vertical z0; alpha1 = 90 deg lays z1 horizontal; joint 2 slides along
    # z1 (offset d2); link 2's COM at (0, 0, c) in frame 2, so at r = d2 + q2 + c from axis 1
    J, m2, d2, c, th1, th2 = 0.15, 2.5, 0.2, 0.1, 0.3, 0.7
    Ia, Ib, Ic = 0.05, 0.03, 0.04
    g = np.array([1.5, -2.0, -9.81])
    rows = [
        dict(theta=th1, d=0.5, a=0.0, alpha=PI / 2, mass=1.0, com=[0, 0, 0],
             inertia=np.diag([0.1, J, 0.1])),
        dict(theta=th2, d=d2, a=0.0, alpha=0.0, joint="prismatic", mass=m2, com=[0, 0, c],
             inertia=np.diag([Ia, Ib, Ic])),
    ]
    robot = robodyn.from_dh(rows, gravity=g)
    # moment of inertia of link 2 about z0 (= y1 = (sin th2, cos th2, 0) in frame 2)
    J2 = Ia * math.sin(th2) ** 2 + Ib * math.cos(th2) ** 2
    for _ in range(5):
        q, qd, qdd = rng.uniform(-1, 1, 2), rng.standard_normal(2), rng.standard_normal(2)
        r = d2 + q[1] + c
        z1 = np.array([math.sin(q[0] + th1), -math.cos(q[0] + th1), 0.0])
        dz1 = np.array([math.cos(q[0] + th1), math.sin(q[0] + th1), 0.0])
        tau1 = (J + J2 + m2 * r * r) * qdd[0] + 2 * m2 * r * qd[0] * qd[1] - m2 * r * g @ dz1
        tau2 = m2 * qdd[1] - m2 * r * qd[0] ** 2 - m2 * g @ z1
        close(robot.inverse_dynamics(q, qd, qdd), [tau1, tau2], 1e-12)
        close(robot.mass_matrix(q), np.diag([J + J2 + m2 * r * r, m2]), 1e-12)


def test_vertical_prismatic_weight():
    rows = [dict(theta=0.4, d=0.1, a=0.2, alpha=0.3, joint="prismatic", mass=2.0,
                 com=[0.1, 0.2, 0.3], inertia=np.diag([0.01, 0.02, 0.02]))]
    robot = robodyn.from_dh(rows, gravity=(0, 0, -9.81))
    for q, qdd in [(0.0, 0.0), (0.5, 1.5), (-0.3, -2.0)]:
        close(robot.inverse_dynamics([q], [0.7], [qdd]), [2.0 * (qdd + 9.81)], 1e-13)


# ---------------------------------------------------------------- offsets, forms of a row

def random_table(n, rng, prismatic=0.3):
    rows = R.random_dh_chain(n, rng, armature=True)
    for r in rows:
        if rng.random() < prismatic:
            r["joint"] = "prismatic"
    return rows


def random_state(n, rng):
    return rng.uniform(-PI, PI, n), rng.standard_normal(n), rng.standard_normal(n)


def test_offsets_shift_the_joint_variable(rng):
    rows = random_table(6, rng)
    shifted = []
    zero = []
    for r in rows:
        z = dict(r)
        if r["joint"] == "prismatic":
            z["d"] = 0.0
            shifted.append(r["d"])
        else:
            z["theta"] = 0.0
            shifted.append(r["theta"])
        zero.append(z)
    a, b = robodyn.from_dh(rows), robodyn.from_dh(zero)
    for _ in range(3):
        q, qd, qdd = random_state(6, rng)
        close(a.inverse_dynamics(q, qd, qdd), b.inverse_dynamics(q + shifted, qd, qdd), 1e-10)
        close(a.mass_matrix(q), b.mass_matrix(q + shifted), 1e-10)


def test_tuple_rows_and_six_value_inertia(rng):
    rows = random_table(5, rng)
    six = lambda I: [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[1, 2], I[0, 2]]  # noqa: E731
    tuples = [(r["theta"], r["d"], r["a"], r["alpha"], r["joint"], r["mass"], tuple(r["com"]),
               six(r["inertia"]), r["armature"]) for r in rows]
    a, b = robodyn.from_dh(rows), robodyn.from_dh(tuples)
    q, qd, qdd = random_state(5, rng)
    close(a.inverse_dynamics(q, qd, qdd), b.inverse_dynamics(q, qd, qdd), 1e-13)
    # 8-entry tuples: no armature; default joint type revolute
    short = [t[:8] for t in tuples]
    c = robodyn.from_dh(short)
    assert [bd.armature for bd in c.spec.bodies] == [0.0] * 5
    d = robodyn.from_dh([dict(theta=0, d=0, a=1, alpha=0, mass=1, com=[0, 0, 0],
                              inertia=[1, 1, 1, 0, 0, 0])])
    assert d.spec.bodies[0].joint_type == "revolute"


def test_names_limits_and_joint_terms():
    rows = [
        dict(theta=0, d=0.3, a=0, alpha=PI / 2, mass=1.0, com=[0, 0, 0],
             inertia=[0.1, 0.1, 0.1, 0, 0, 0], limits=(-1.0, 2.0), armature=0.5,
             damping=0.25, friction=0.125, name="upper_arm", joint_name="shoulder"),
        dict(theta=0, d=0, a=0, alpha=0, joint="prismatic", mass=1.0, com=[0, 0, 0],
             inertia=[0.1, 0.1, 0.1, 0, 0, 0],
             limits=dict(lower=0.1, upper=0.9, velocity=0.5, effort=40.0)),
    ]
    robot = robodyn.from_dh(rows)
    assert robot.n == 2
    assert robot.joint_names == ["shoulder", "joint2"]
    assert robot.link_names[:2] == ["upper_arm", "link2"]
    b0, b1 = robot.spec.bodies
    assert (b0.lower, b0.upper, b0.armature, b0.damping, b0.friction) == (-1.0, 2.0, 0.5, 0.25,
                                                                            0.125)
    assert (b0.velocity, b0.effort) == (math.inf, math.inf)
    assert b1.joint_type == "prismatic"
    assert (b1.lower, b1.upper, b1.velocity, b1.effort) == (0.1, 0.9, 0.5, 40.0)
    spec = dh_to_spec(rows, name="arm")
    assert [f.name for f in spec.frames] == ["arm_dh0", "arm_dh1", "arm_dh2", "arm_tool"]


def test_zero_principal_moment_accepted():
    rows = [dict(theta=0, d=0, a=0.5, alpha=0, mass=1.0, com=[-0.25, 0, 0],
                 inertia=[0.0, 0.02, 0.02, 0, 0, 0])]
    robot = robodyn.from_dh(rows, gravity=(0, -9.81, 0))
    close(robot.inverse_dynamics([0.0], [0.0], [1.0]), [0.02 + 0.0625 + 0.25 * 9.81], 1e-13)


# ---------------------------------------------------------------- against the reference

@pytest.mark.parametrize("convention", ["standard", "modified"])
@pytest.mark.parametrize("n", [1, 2, 3, 6, 9])
def test_matches_reference_dh_mapping(n, convention, rng):
    rows = random_table(n, rng)
    g = rng.normal(0.0, 5.0, 3)
    robot = robodyn.from_dh(rows, convention=convention, gravity=g)
    ref = R.dh_to_spec(rows, convention=convention, gravity=g)
    for _ in range(3):
        q, qd, qdd = random_state(n, rng)
        close(robot.inverse_dynamics(q, qd, qdd), F.rnea(ref, q, qd, qdd), 1e-10)
        close(robot.mass_matrix(q), F.crba(ref, q), 1e-10)
        tau = rng.standard_normal(n)
        close(robot.forward_dynamics(q, qd, tau), F.aba(ref, q, qd, tau), 1e-9)


@pytest.mark.parametrize("convention", ["standard", "modified"])
def test_dh_frame_poses(convention, rng):
    n = 7
    rows = random_table(n, rng, prismatic=0.4)
    robot = robodyn.from_dh(rows, convention=convention, name="arm")
    for _ in range(3):
        q = rng.uniform(-PI, PI, n)
        T = np.eye(4)
        close(pose(robot, q, "arm_dh0"), T, 1e-13)
        for i, r in enumerate(rows):
            th, d = r["theta"], r["d"]
            if r["joint"] == "prismatic":
                d += q[i]
            else:
                th += q[i]
            if convention == "standard":
                A = rotz(th) @ trans(0, 0, d) @ trans(r["a"], 0, 0) @ rotx(r["alpha"])
            else:
                A = rotx(r["alpha"]) @ trans(r["a"], 0, 0) @ rotz(th) @ trans(0, 0, d)
            T = T @ A
            close(pose(robot, q, f"arm_dh{i + 1}"), T, 1e-12)
        close(pose(robot, q, "arm_tool"), T, 1e-12)


# ---------------------------------------------------------------- standard vs modified

def to_modified(rows):
    """The same robot as a modified-DH table: modified frame i = standard frame i-1 moved by
    Rz(theta_i + q_i) Tz(d_i); COM and inertia carried from standard frame i by
    Tx(a_i) Rx(alpha_i); the last standard frame is the tool pose Tx(a_n) Rx(alpha_n)."""
    out, a_prev, alpha_prev = [], 0.0, 0.0
    for r in rows:
        C = trans(r["a"], 0, 0) @ rotx(r["alpha"])
        Rc = C[:3, :3]
        m = dict(r, a=a_prev, alpha=alpha_prev,
                 com=Rc @ np.asarray(r["com"], dtype=float) + C[:3, 3],
                 inertia=Rc @ inertia_matrix(r["inertia"]) @ Rc.T)
        a_prev, alpha_prev = r["a"], r["alpha"]
        out.append(m)
    return out, trans(a_prev, 0, 0) @ rotx(alpha_prev)


INTELLEDEX_DH = [
    dict(theta=0, d=0, a=0.0, alpha=PI / 2, mass=18.1440, com=[0, -0.1397, 0.1588],
         inertia=[0.1800, 0.0450, 0.1350, 0, 0, 0]),
    dict(theta=0, d=0, a=0.0, alpha=-PI / 2, mass=12.2472, com=[0, -0.0127, 0],
         inertia=[0.0300, 0.0300, 0.0232, 0, 0, 0]),
    dict(theta=0, d=0, a=0.2794, alpha=0.0, mass=8.6184, com=[-0.1794, 0, 0],
         inertia=[0.1041, 0.1041, 0.0260, 0, 0, 0]),
    dict(theta=0, d=0, a=0.3226, alpha=0.0, mass=4.9896, com=[-0.1956, 0, 0],
         inertia=[0.0605, 0.0605, 0.0260, 0, 0, 0]),
    dict(theta=0, d=0, a=0.0, alpha=-PI / 2, mass=1.3608, com=[0, 0, 0],
         inertia=[0.0048, 0.0048, 0.0035, 0, 0, 0]),
    dict(theta=0, d=0, a=0.0, alpha=0.0, mass=0.9072, com=[0, 0, 0],
         inertia=[0.0040, 0.0040, 0.0030, 0, 0, 0]),
]


@pytest.mark.parametrize("table", ["random", "stanford_toolbox", "intelledex"])
def test_standard_and_modified_same_robot(table, rng):
    if table == "random":
        rows = random_table(7, rng, prismatic=0.4)
    elif table == "stanford_toolbox":
        rows = stanford_toolbox(True)
    else:
        rows = INTELLEDEX_DH
    n = len(rows)
    g = (0.3, 9.81, -1.2)
    mod, tool = to_modified(rows)
    strict = table != "stanford_toolbox"  # its published link-5 inertia is non-physical
    std = robodyn.Robot(dh_to_spec(rows, gravity=g, name="arm", check_inertia=strict))
    md = robodyn.Robot(dh_to_spec(mod, convention="modified", gravity=g, name="arm", tool=tool,
                                  check_inertia=strict))
    for _ in range(4):
        q, qd, qdd = random_state(n, rng)
        close(md.inverse_dynamics(q, qd, qdd), std.inverse_dynamics(q, qd, qdd), 1e-10)
        close(md.mass_matrix(q), std.mass_matrix(q), 1e-10)
        tau = rng.standard_normal(n)
        close(md.forward_dynamics(q, qd, tau), std.forward_dynamics(q, qd, tau), 1e-9)
        close(pose(md, q, "arm_tool"), pose(std, q, "arm_tool"), 1e-12)


# ---------------------------------------------------------------- malformed rows

def good_row():
    return dict(theta=0.1, d=0.2, a=0.3, alpha=0.4, mass=1.0, com=[0.0, 0.0, 0.1],
                inertia=[0.01, 0.01, 0.01, 0, 0, 0])


BAD = [
    (lambda r: r.pop("a"), r"row 1\b.*'a'.*missing"),
    (lambda r: r.pop("inertia"), r"row 1\b.*'inertia'.*missing"),
    (lambda r: r.update(mass=-1.0), r"row 1\b.*'mass'"),
    (lambda r: r.update(mass="heavy"), r"row 1\b.*'mass'"),
    (lambda r: r.update(d=float("nan")), r"row 1\b.*'d'"),
    (lambda r: r.update(com=[0.0, 0.1]), r"row 1\b.*'com'.*\(3,\)"),
    (lambda r: r.update(inertia=np.eye(2)), r"row 1\b.*'inertia'.*shape"),
    (lambda r: r.update(inertia=[1, 1, 1, 0, 0]), r"row 1\b.*'inertia'.*shape"),
    (lambda r: r.update(inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]),
     r"row 1\b.*'inertia'.*symmetric"),
    (lambda r: r.update(inertia=[-0.01, 0.01, 0.01, 0, 0, 0]),
     r"row 1\b.*'inertia'.*semidefinite"),
    (lambda r: r.update(joint="spherical"), r"row 1\b.*'joint'.*spherical"),
    (lambda r: r.update(qlim=(0, 1)), r"row 1\b.*'qlim'"),
    (lambda r: r.update(limits=(1.0, -1.0)), r"row 1\b.*'limits'"),
    (lambda r: r.update(limits=dict(lower=0, upper=1, speed=2)), r"row 1\b.*'limits'"),
    (lambda r: r.update(armature=-0.1), r"row 1\b.*'armature'"),
]


@pytest.mark.parametrize("mutate, match", BAD)
def test_bad_row_raises_value_error(mutate, match):
    row = good_row()
    mutate(row)
    rows = [good_row(), row, good_row()]
    with pytest.raises(ValueError, match=match):
        dh_to_spec(rows)
    with pytest.raises(ValueError, match=match):
        robodyn.from_dh(rows)


def test_bad_tables_raise_value_error():
    with pytest.raises(ValueError, match="row 0.*8 or 9"):
        dh_to_spec([(0, 0, 0, 0, "revolute", 1.0, (0, 0, 0))])
    with pytest.raises(ValueError, match="row 1.*dict or a tuple"):
        dh_to_spec([good_row(), 3.0])
    with pytest.raises(ValueError, match="empty"):
        robodyn.from_dh([])
    with pytest.raises(ValueError, match="convention"):
        robodyn.from_dh([good_row()], convention="craig")
    with pytest.raises(ValueError, match="gravity"):
        dh_to_spec([good_row()], gravity=(0, -9.81))
    with pytest.raises(ValueError, match="duplicate"):
        dh_to_spec([dict(good_row(), name="l"), dict(good_row(), name="l")])
    with pytest.raises(ValueError, match="tool"):
        dh_to_spec([good_row()], tool=np.ones((4, 4)))
