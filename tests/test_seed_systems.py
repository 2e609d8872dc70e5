"""The seed documents' free-floating systems as bundled models: the files, their data, and
robodyn's dynamics of them against the pure-NumPy reference."""

import importlib.util
import math
import pathlib
import warnings

import numpy as np
import pytest

import robodyn
from reference import featherstone as F

SEEDS = ("lynch_satellite", "jpl_spacecraft", "dasc_cat")
SIZES = {"lynch_satellite": (9, 8), "jpl_spacecraft": (11, 10), "dasc_cat": (17, 16)}
SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "robots" / "make_urdf.py"


def make_urdf():
    if not SCRIPT.is_file():
        pytest.skip("not a source checkout")
    loader = importlib.util.spec_from_file_location("make_urdf", SCRIPT)
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    return mod


def load(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return robodyn.robots.load(name)


def test_checked_in_urdfs_match_generator():
    mod = make_urdf()
    for make in mod.FLOATING:
        system = make()
        path = SCRIPT.parent / "urdf" / f"{system['name']}.urdf"
        assert path.read_text() == mod.build_tree(system), f"rerun robots/make_urdf.py ({path})"


def test_cat_deck_is_consistent_to_its_rounding():
    # each joint's point as given in body i and in body j, and its revolute axis, agree in the
    # deck's initial configuration (5-digit data)
    for name, distance, angle in make_urdf().cat_joint_residuals():
        assert distance < 1e-5, name
        assert angle < 1e-12, name


@pytest.mark.parametrize("name", SEEDS)
def test_bundled_seed_system_loads_floating(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = robodyn.robots.load(name)
    assert (robot.nq, robot.nv) == SIZES[name]
    assert robot.spec.bodies[0].joint_type == "floating"
    np.testing.assert_array_equal(robot.gravity, np.zeros(3))
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    if name == "jpl_spacecraft":
        assert any("triangle inequality" in m and "I0" in m for m in messages)
    else:
        assert not messages
    assert name in robodyn.robots.available(floating=True)
    assert name not in robodyn.robots.available()


def test_jpl_bus_inertia_is_kept_as_printed():
    spec = load("jpl_spacecraft").spec
    bus = spec.bodies[0]
    np.testing.assert_allclose(bus.inertia, [[115, -14, 14], [-14, 316, -34.6],
                                             [14, -34.6, 440]], rtol=0, atol=1e-12)
    J = np.linalg.eigvalsh(bus.inertia)
    np.testing.assert_allclose(J, [113.6, 307.5, 449.9], atol=0.1)
    assert J[0] + J[1] < J[2]
    assert bus.mass == 410.0 and sum(b.mass for b in spec.bodies) == pytest.approx(485.0)


def test_initial_states():
    robot = load("lynch_satellite")
    q, v = robodyn.robots.initial_state("lynch_satellite", robot)
    joints = robot.joint_names[-2:]
    assert q[7 + joints.index("q2")] == -math.pi / 3 and q[7 + joints.index("q3")] == math.pi / 3
    np.testing.assert_array_equal(v, [0, 2.0, 0, 0, 0, 0, 0, 0])
    robot = load("dasc_cat")
    q, v = robodyn.robots.initial_state("dasc_cat", robot)
    # the deck's initial COM positions: the front torso at (0.2, 0, 0.6), the head at
    # (0.06975, 0, 0.70389), the tail at (0.50490, 0, 0.78177), to the deck's rounding
    poses = np.asarray(robot.forward_kinematics(q))
    links = list(robot.link_names)
    coms = {b.name: np.asarray(b.com) for b in robot.spec.bodies}
    for name, x, z in (("front_torso", 0.2, 0.6), ("head", 0.06975, 0.70389),
                       ("tail", 0.50490, 0.78177), ("hind_limbs", 0.33911, 0.78311)):
        T = poses[links.index(name)]
        np.testing.assert_allclose(T[:3, :3] @ coms[name] + T[:3, 3], [x, 0.0, z], atol=2e-5)
    assert not v.any()
    with pytest.raises(ValueError, match="not one of"):
        robodyn.robots.initial_state("stanford_arm")


@pytest.mark.parametrize("name", SEEDS)
def test_dynamics_against_the_reference(name, rng):
    robot = load(name)
    spec = robot.spec
    for _ in range(3):
        q, _ = robodyn.robots.initial_state(name, robot)
        q[:3] = rng.standard_normal(3)
        quat = rng.standard_normal(4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[7:] = rng.uniform(-np.pi, np.pi, robot.nv - 6)
        v, a = rng.standard_normal((2, robot.nv))
        tau = F.rnea(spec, q, v, a)
        np.testing.assert_allclose(robot.inverse_dynamics(q, v, a), tau, rtol=1e-10,
                                   atol=1e-10 * np.abs(tau).max())
        M = F.crba(spec, q)
        np.testing.assert_allclose(robot.mass_matrix(q), M, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(robot.forward_dynamics(q, v, tau), a, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(robot.momentum(q, v), F.momentum(spec, q, v), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(robot.center_of_mass(q), F.center_of_mass(spec, q),
                                   rtol=1e-12, atol=1e-12)
        dq = 0.3 * rng.standard_normal(robot.nv)
        q1 = robot.integrate(q, dq, 1.0)
        ref = F.integrate(spec, q, dq)
        np.testing.assert_allclose(q1[:3], ref[:3], atol=1e-12)
        np.testing.assert_allclose(F.quat_to_rot(q1[3:7]), F.quat_to_rot(ref[3:7]), atol=1e-12)
        np.testing.assert_allclose(q1[7:], ref[7:], atol=1e-12)
        np.testing.assert_allclose(robot.difference(q, q1), dq, rtol=1e-9, atol=1e-12)
