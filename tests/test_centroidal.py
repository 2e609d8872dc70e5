"""The centroidal momentum matrix A_G(q) (Orin, Lee & Goswami 2013): h_G = A_G v, the momentum
[angular about the centre of mass; linear] in world axes, for fixed and floating models.

Checked against robodyn's own momentum / centre of mass (A_G v for random v), an independent
pure-NumPy sum over bodies (tests/reference/featherstone.py), the floating base's rows of the
mass matrix moved to the centre of mass, and Pinocchio's computeCentroidalMap and ccrba in the
same process.
"""

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R


def close(actual, expected, rtol=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def model(kind, n, rng):
    """A seeded random fixed-base or floating tree/chain of n joints (mixed revolute and
    prismatic), with its state sampler."""
    if kind.startswith("floating"):
        spec = R.random_floating(n, rng, kind="chain" if kind.endswith("chain") else "tree")
        return spec, lambda: R.random_floating_state(spec, rng)[:2]
    gen = R.random_chain if kind == "chain" else R.random_tree
    spec = gen(n, rng)
    return spec, lambda: R.random_state(spec, rng)[:2]


def about_com(h, c):
    """[angular about the world origin; linear] -> [angular about c; linear]."""
    return np.concatenate([h[:3] - np.cross(c, h[3:]), h[3:]])


KINDS = ["chain", "tree", "floating_chain", "floating_tree"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 5, 14])
def test_times_v_is_the_momentum_about_the_centre_of_mass(kind, n, rng):
    spec, state = model(kind, n, rng)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, _ = state()
        A = robot.centroidal_momentum_matrix(q)
        assert A.shape == (6, robot.nv)
        c = robot.center_of_mass(q)
        for _ in range(3):
            v = rng.standard_normal(robot.nv)
            close(A @ v, about_com(robot.momentum(q, v), c))


@pytest.mark.parametrize("kind", KINDS)
def test_equals_an_independent_numpy_sum_over_bodies(kind, rng):
    """Column j: the bodies' momentum (pure-NumPy reference: each body's I_i v_i in world axes
    about the world origin) for v = e_j, moved to the reference's centre of mass."""
    spec, state = model(kind, 7, rng)
    robot = robodyn.Robot(spec)
    q, _ = state()
    c = F.center_of_mass(spec, q)
    nv = robot.nv
    expected = np.column_stack([about_com(F.momentum(spec, q, np.eye(nv)[j]), c)
                                for j in range(nv)])
    close(robot.centroidal_momentum_matrix(q), expected)


@pytest.mark.parametrize("kind", ["floating_chain", "floating_tree"])
def test_floating_base_rows_of_the_mass_matrix(kind, rng):
    """For a free base, M[:6] v is the whole system's momentum in base axes about the base
    origin; moved to world axes about the centre of mass it is A_G v (Orin et al., sec. IV)."""
    spec, state = model(kind, 9, rng)
    robot = robodyn.Robot(spec)
    q, _ = state()
    T = robot.forward_kinematics(q)[0]  # the base link frame (body 0) = the free-flyer frame
    Rb, pb = T[:3, :3], T[:3, 3]
    c = robot.center_of_mass(q)
    Mb = robot.mass_matrix(q)[:6]
    f = Rb @ Mb[3:]
    expected = np.vstack([Rb @ Mb[:3] + np.cross(pb - c, f.T).T, f])
    close(robot.centroidal_momentum_matrix(q), expected)


def test_linear_rows_are_mass_times_the_com_jacobian(rng):
    """The linear rows: total mass times d(com)/dv, by central differences along integrate."""
    spec, state = model("floating_tree", 6, rng)
    robot = robodyn.Robot(spec)
    q, _ = state()
    A = robot.centroidal_momentum_matrix(q)
    mass = sum(b.mass for b in spec.bodies)
    eps = 1e-6
    for j in range(robot.nv):
        e = np.eye(robot.nv)[j]
        dc = (robot.center_of_mass(robot.integrate(q, e, eps))
              - robot.center_of_mass(robot.integrate(q, e, -eps))) / (2 * eps)
        close(A[3:, j], mass * dc, 1e-7)


def test_batches_out_and_errors(rng):
    spec, state = model("floating_tree", 5, rng)
    robot = robodyn.Robot(spec)
    Q = np.array([state()[0] for _ in range(4)])
    As = robot.centroidal_momentum_matrix(Q)
    assert As.shape == (4, 6, robot.nv)
    for k in range(4):
        close(As[k], robot.centroidal_momentum_matrix(Q[k]), 1e-15)
    out = np.empty((6, robot.nv))
    res = robot.centroidal_momentum_matrix(Q[0], out=out)
    assert res is out or np.shares_memory(res, out)
    close(out, As[0], 1e-15)
    with pytest.raises(ValueError, match="q"):
        robot.centroidal_momentum_matrix(Q[0][:-1])
    bad = Q[0].copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="q"):
        robot.centroidal_momentum_matrix(bad)
    with pytest.raises(ValueError, match="out"):
        robot.centroidal_momentum_matrix(Q[0], out=np.empty((robot.nv, 6)))


def test_no_mass_is_a_clear_error():
    spec = R.random_chain(2, np.random.default_rng(1))
    for b in spec.bodies:
        b.mass, b.inertia = 0.0, np.zeros((3, 3))
        b.armature = 0.1  # a regular mass matrix all the same
    robot = robodyn.Robot(spec)
    with pytest.raises(ValueError, match="no mass"):
        robot.centroidal_momentum_matrix(np.zeros(2))


def test_coupled_robot_is_the_full_matrix_times_the_coupling():
    """A mimic joint: A_G = A_G_full(q_full) G, and A_G v the momentum about the COM."""
    urdf = """<robot name="pair">
      <link name="base"/>
      <link name="a"><inertial><origin xyz="0.1 0 0.2"/><mass value="1.5"/>
        <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
      <link name="b"><inertial><origin xyz="0 0.2 0"/><mass value="0.7"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/>
        <mimic joint="j1" multiplier="-2" offset="0.3"/></joint>
    </robot>"""
    robot = robodyn.load_urdf(urdf)
    full = robot.full_robot()
    q, v = np.array([0.4]), np.array([1.3])
    qf, vf = np.array([0.4, -0.5]), np.array([1.3, -2.6])
    A = robot.centroidal_momentum_matrix(q)
    assert A.shape == (6, 1)
    close(A, full.centroidal_momentum_matrix(qf) @ np.array([[1.0], [-2.0]]), 1e-14)
    close(A @ v, about_com(full.momentum(qf, vf), full.center_of_mass(qf)), 1e-12)
    assert robot.centroidal_momentum_matrix(np.array([[0.4], [0.1]])).shape == (2, 6, 1)


# ---------------------------------------------------------------- against Pinocchio

@pytest.mark.parametrize("kind", KINDS)
def test_against_pinocchio(kind, rng):
    """pin.computeCentroidalMap and pin.ccrba (rows [linear; angular], Pinocchio's v order)."""
    pin = pytest.importorskip("pinocchio")
    from reference.pinocchio_models import Coordinates, depth_first_order, floating_pinocchio_model

    spec, state = model(kind, 10, rng)
    robot = robodyn.Robot(spec)
    order = depth_first_order(spec)
    pmodel = floating_pinocchio_model(pin, spec, order)
    coords = Coordinates(pmodel, [b.joint_name for b in spec.bodies],
                         [b.joint_type for b in spec.bodies])
    data = pmodel.createData()
    for _ in range(3):
        q, v = state()
        pq = coords.q(q)
        A = robot.centroidal_momentum_matrix(q)
        close(A, coords.jacobian_back(pin.computeCentroidalMap(pmodel, data, pq)))
        Ag = pin.ccrba(pmodel, data, pq, coords.v(v))
        close(A, coords.jacobian_back(Ag))
        close(A @ v, np.concatenate([data.hg.angular, data.hg.linear]))


def test_solo12_against_pinocchio(rng):
    """A legged robot from example-robot-data with its free-flyer base."""
    pin = pytest.importorskip("pinocchio")
    from _load import example_robot_data_dir
    from reference.pinocchio_models import Coordinates

    root = example_robot_data_dir()
    path = None if root is None else root / "solo_description" / "robots" / "solo12.urdf"
    if path is None or not path.is_file():
        pytest.skip("example-robot-data is not installed")
    pmodel = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    robot = robodyn.load_urdf(str(path), floating_base=True)
    kinds = ["floating"] + [b.joint_type for b in robot.spec.bodies[1:]]
    coords = Coordinates(pmodel, robot.joint_names, kinds)
    data = pmodel.createData()
    for _ in range(3):
        q = np.concatenate([rng.standard_normal(3), R.random_quaternion(rng),
                            rng.uniform(-np.pi, np.pi, robot.nv - 6)])
        close(robot.centroidal_momentum_matrix(q),
              coords.jacobian_back(pin.computeCentroidalMap(pmodel, data, coords.q(q))))
