"""Robots pickle as their model description: every kind round-trips with identical dynamics,
specialised robots arrive specialised, and worker processes can receive them."""

import concurrent.futures
import copy
import multiprocessing
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import robodyn
from reference import random_models as rm

DATA = Path(__file__).resolve().parent / "data" / "good_urdf"


def _dh_robot():
    rows = rm.random_dh_chain(5, np.random.default_rng(5), armature=True)
    return robodyn.from_dh(rows, convention="modified", gravity=(0.0, -9.81, 0.0))


def _kinds():
    """(label, builder) of every kind of robot (builders: fixtures are per test)."""
    kinds = [
        ("bundled-stanford", robodyn.robots.stanford_arm),
        ("bundled-intelledex", robodyn.robots.intelledex_605),
        ("urdf-file", lambda: robodyn.load_urdf(str(DATA / "rotated_inertial.urdf"))),
        ("urdf-text", lambda: robodyn.load_urdf(
            robodyn.Robot(rm.random_chain(6, np.random.default_rng(3))).to_urdf())),
        ("urdf-mimic", lambda: robodyn.load_urdf(str(DATA / "gripper.urdf"))),
        ("dh", _dh_robot),
        ("tree", lambda: robodyn.Robot(rm.random_tree(7, np.random.default_rng(8)))),
        ("specialized-bundled", lambda: robodyn.robots.intelledex_605().specialized()),
    ]
    return kinds


def _floating():
    """A free-floating robot, once free-floating systems exist (robot.nq), else None."""
    robot = robodyn.robots.stanford_arm()
    if not hasattr(robot, "nq"):
        return None
    # (the Intelledex with a free base would be singular: its root link has no mass, so turning
    # the base about joint 1's axis against joint 1 moves nothing)
    return robodyn.robots.load("lynch_satellite")


def _states(robot, rng, m=4):
    nq = getattr(robot, "nq", robot.n)
    n = robot.n
    q = rng.uniform(-1.0, 1.0, (m, nq))
    if nq != n:  # a unit quaternion for a free base: (x, y, z, w) at 3:7
        quat = rng.standard_normal((m, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return q, rng.standard_normal((m, n)), rng.standard_normal((m, n))


def _dynamics(robot, q, qd, x):
    out = {"id": robot.inverse_dynamics(q, qd, x), "M": robot.mass_matrix(q),
           "h": robot.bias_torques(q, qd), "g": robot.gravity_torques(q),
           "fd": robot.forward_dynamics(q, qd, x), "fk": robot.forward_kinematics(q[0]),
           "ke": robot.kinetic_energy(q, qd)}
    for method in () if getattr(robot, "floating_base", False) else ("kane",):
        out["id_" + method] = robot.inverse_dynamics(q, qd, x, method=method)
    return out


def _assert_same(robot, other, rng):
    assert type(other) is type(robot)
    assert other.n == robot.n and other.name == robot.name
    assert other.joint_names == robot.joint_names and other.link_names == robot.link_names
    np.testing.assert_array_equal(other.gravity, robot.gravity)
    assert other.is_specialized() == robot.is_specialized()
    q, qd, x = _states(robot, rng)
    a, b = _dynamics(robot, q, qd, x), _dynamics(other, q, qd, x)
    for key in a:
        np.testing.assert_allclose(b[key], a[key], rtol=1e-15, atol=1e-15, err_msg=key)
    for algorithm in ("rnea", "crba", "aba"):
        assert other.op_counts(algorithm) == robot.op_counts(algorithm)


@pytest.mark.parametrize("label,build", _kinds(), ids=[k for k, _ in _kinds()])
def test_round_trip_every_kind(label, build, rng):
    robot = build()
    data = pickle.dumps(robot)
    assert len(data) < 20_000  # the description, not the workspace
    again = pickle.loads(data)
    _assert_same(robot, again, rng)
    _assert_same(robot, copy.deepcopy(robot), rng)
    _assert_same(robot, pickle.loads(pickle.dumps(robot, protocol=2)), rng)


def test_round_trip_floating(rng):
    robot = _floating()
    if robot is None:
        pytest.skip("free-floating robots (robot.nq) are not in this build yet")
    again = pickle.loads(pickle.dumps(robot))
    assert again.nq == robot.nq and again.nv == robot.nv
    _assert_same(robot, again, rng)


def test_gravity_travels_and_switches_specialisation_off(rng):
    special = robodyn.robots.stanford_arm().specialized()
    special.gravity = [0.0, 0.0, -1.62]  # generated code has its gravity built in: off
    again = pickle.loads(pickle.dumps(special))
    np.testing.assert_array_equal(again.gravity, [0.0, 0.0, -1.62])
    assert not again.is_specialized()
    _assert_same(special, again, rng)


def test_unpickled_specialised_robot_reuses_the_loaded_kernels(monkeypatch):
    special = robodyn.robots.intelledex_605().specialized()
    from robodyn import codegen
    from robodyn.codegen import kernels as codegen_kernels, compiled as codegen_specialize  # noqa: E402,F401

    def no_generation(*args, **kwargs):
        raise AssertionError("code generated again")

    monkeypatch.setattr(codegen_specialize, "generate", no_generation)
    again = pickle.loads(pickle.dumps(special))
    assert again.is_specialized() and again._kernels() == special._kernels()
    assert again.op_counts("rnea") == special.op_counts("rnea")


def _worker_dynamics(robot, q, qd, x):
    return (os.getpid(), robot.is_specialized(), robot.inverse_dynamics(q, qd, x),
            robot.mass_matrix(q), robot.forward_dynamics(q, qd, x))


@pytest.fixture(scope="module")
def compiled_chain(tmp_path_factory):
    """A random chain specialised by compiling into a fresh cache directory (shared with the
    worker processes through ROBODYN_CACHE_DIR)."""
    cache = tmp_path_factory.mktemp("kernels")
    old = os.environ.get("ROBODYN_CACHE_DIR")
    os.environ["ROBODYN_CACHE_DIR"] = str(cache)
    try:
        robot = robodyn.Robot(rm.random_chain(4, np.random.default_rng(44)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            special = robot.specialized()
        yield special, cache
    finally:
        if old is None:
            os.environ.pop("ROBODYN_CACHE_DIR", None)
        else:
            os.environ["ROBODYN_CACHE_DIR"] = old


def test_process_pool_uses_robots(compiled_chain, rng):
    """multiprocessing (spawn, as Dask and joblib's loky do): each worker unpickles the robots,
    re-specialising from the on-disk kernel cache (nothing compiled again)."""
    special, cache = compiled_chain
    libs = sorted(Path(cache).glob("*.so"))
    robots = [robodyn.robots.stanford_arm(), _dh_robot(), special,
              robodyn.robots.intelledex_605().specialized()]
    jobs = []
    for robot in robots:
        q, qd, x = _states(robot, rng, 3)
        jobs.append((robot, q, qd, x))
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        futures = [pool.submit(_worker_dynamics, *job) for job in jobs * 2]
        results = [f.result(timeout=120) for f in futures]
    for (robot, q, qd, x), (pid, specialised, tau, M, qdd) in zip(jobs * 2, results):
        assert pid != os.getpid()
        assert specialised == robot.is_specialized()
        np.testing.assert_allclose(tau, robot.inverse_dynamics(q, qd, x), rtol=1e-15, atol=1e-15)
        np.testing.assert_allclose(M, robot.mass_matrix(q), rtol=1e-15, atol=1e-15)
        np.testing.assert_allclose(qdd, robot.forward_dynamics(q, qd, x), rtol=1e-15, atol=1e-15)
    if special.is_specialized():  # compiled: the workers found it in the cache
        assert sorted(Path(cache).glob("*.so")) == libs and len(libs) == 1
