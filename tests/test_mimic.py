"""Mimic joints as couplings (robodyn.coupling): the reduced system against an independent
G^T M G reduction of the NumPy reference on random trees, against Pinocchio's mimic models
(Panda's fingers) and against a reduction of Pinocchio's full model (Romeo's hands, which
Pinocchio 4.1 cannot load with mimic=True)."""

import math
import warnings

import numpy as np
import pytest

import robodyn
from robodyn import urdf
from _load import DATA, example_robot_data_dir
from reference import featherstone as F
from reference import random_models as RM

GOOD = DATA / "good_urdf"


def close(got, expected, tol=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-300)
    assert float(np.max(np.abs(np.asarray(got) - expected), initial=0.0)) <= tol * scale


def coupled_tree(n, rng, followers=3):
    """A random tree where `followers` bodies mimic earlier or later independent joints; the
    coupling matrix G and offsets b built here, independently of robodyn.coupling."""
    spec = RM.random_tree(n, rng)
    chosen = rng.choice(n, size=followers, replace=False)
    independent = [i for i in range(n) if i not in chosen]
    G = np.zeros((n, len(independent)))
    b = np.zeros(n)
    for k, i in enumerate(independent):
        G[i, k] = 1.0
    for i in chosen:
        k = int(rng.integers(len(independent)))
        m, o = float(rng.uniform(-2, 2)), float(rng.uniform(-0.5, 0.5))
        spec.bodies[i].mimic = (spec.bodies[independent[k]].joint_name, m, o)
        G[i, k], b[i] = m, o
    return spec, G, b


@pytest.mark.parametrize("n, followers", [(3, 1), (6, 2), (12, 5), (20, 8)])
def test_reduced_system_equals_gtmg_reduction(n, followers, rng):
    spec, G, b = coupled_tree(n, rng, followers)
    robot = robodyn.robot(spec)
    assert isinstance(robot, robodyn.Robot) and robot.n == n - followers
    assert robot.joint_names == [x.joint_name for x in spec.bodies if x.mimic is None]
    np.testing.assert_array_equal(robot.coupling[0], G)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, robot.n)
        qd, qdd = rng.standard_normal((2, robot.n))
        qf, qdf, qddf = G @ q + b, G @ qd, G @ qdd
        close(robot.full_configuration(q), qf, 1e-15)
        tau = G.T @ F.rnea(spec, qf, qdf, qddf)
        close(robot.inverse_dynamics(q, qd, qdd), tau)
        close(robot.inverse_dynamics(q, qd, qdd, method="kane"), tau)
        M = G.T @ F.crba(spec, qf) @ G
        close(robot.mass_matrix(q), M)
        close(robot.bias_torques(q, qd), G.T @ F.bias(spec, qf, qdf))
        close(robot.gravity_torques(q), G.T @ F.gravity_torques(spec, qf))
        close(robot.coriolis_matrix(q, qd) @ qd + robot.gravity_torques(q),
              robot.bias_torques(q, qd))
        u = 10 * rng.standard_normal(robot.n)
        expected = np.linalg.solve(M, u - G.T @ F.rnea(spec, qf, qdf, np.zeros(n)))
        for method in ("aba", "crba", "kane"):
            close(robot.forward_dynamics(q, qd, u, method=method), expected)
        close(robot.forward_kinematics(q), np.array(F.fk(spec, qf)))
        for link in (0, n - 1):
            close(robot.jacobian(q, link), F.jacobian(spec, qf, link) @ G)
        close(robot.kinetic_energy(q, qd), F.kinetic_energy(spec, qf, qdf))
        close(robot.kinetic_energy(q, qd), 0.5 * qd @ M @ qd)
        close(robot.potential_energy(q), F.potential_energy(spec, qf))
    # batches and out= give the same numbers
    Q, QD, QDD = rng.standard_normal((3, 4, robot.n))
    batch = robot.inverse_dynamics(Q, QD, QDD)
    out = np.empty(robot.n)
    for k in range(4):
        close(batch[k], robot.inverse_dynamics(Q[k], QD[k], QDD[k], out=out), 1e-14)
    close(robot.mass_matrix(Q)[2], robot.mass_matrix(Q[2]), 1e-14)
    close(robot.forward_dynamics(Q, QD, QDD)[1], robot.forward_dynamics(Q[1], QD[1], QDD[1]))


def test_coupled_robot_pickles(rng):
    import pickle

    spec, _, _ = coupled_tree(6, rng, 2)
    robot = robodyn.robot(spec)
    back = pickle.loads(pickle.dumps(robot))
    assert type(back) is type(robot) and back.joint_names == robot.joint_names
    q, qd, qdd = rng.standard_normal((3, robot.n))
    np.testing.assert_array_equal(back.inverse_dynamics(q, qd, qdd),
                                  robot.inverse_dynamics(q, qd, qdd))


def test_coupled_robot_checks_its_inputs(rng):
    spec, _, _ = coupled_tree(5, rng, 2)
    robot = robodyn.robot(spec)
    with pytest.raises(ValueError, match=r"q: expected shape \(3,\) or \(N, 3\), got \(5,\)"):
        robot.inverse_dynamics(np.zeros(5), np.zeros(5), np.zeros(5))
    with pytest.raises(ValueError, match="qd: contains NaN or inf at index 1 "):
        robot.bias_torques(np.zeros(3), [0, math.nan, 0])
    QD = np.zeros((4, 3))
    QD[2, 0], QD[3, 1] = math.inf, math.nan
    with pytest.raises(ValueError, match="qd: contains NaN or inf at row 2, entry 0 "):
        robot.bias_torques(np.zeros((4, 3)), QD)
    with pytest.raises(ValueError, match="out: expected shape"):
        robot.gravity_torques(np.zeros(3), out=np.zeros(5))
    with pytest.raises(ValueError, match="method"):
        robot.forward_dynamics(np.zeros(3), np.zeros(3), np.zeros(3), method="rnea")
    spec.bodies[0].mimic = ("nope", 1.0, 0.0)
    with pytest.raises(ValueError, match="mimic leader 'nope' is not a joint"):
        robodyn.robot(spec)


def test_gripper_urdf_couples_by_default_and_round_trips(rng):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robot = robodyn.load_urdf(GOOD / "gripper.urdf")
    assert robot.n == 4 and "right_finger_joint" not in robot.joint_names
    assert robot.full_joint_names[3] == "right_finger_joint"
    with pytest.warns(urdf.URDFWarning, match="'right_finger_joint' <mimic>: mimics joint "
                                              "'left_finger_joint'"):
        independent = robodyn.load_urdf(GOOD / "gripper.urdf", mimic="independent")
    assert independent.n == 5
    with pytest.raises(urdf.URDFError, match="right_finger_joint.*strict"):
        robodyn.load_urdf(GOOD / "gripper.urdf", mimic="independent", strict=True)
    back = robodyn.load_urdf(robot.to_urdf())
    assert back.n == 4 and back.joint_names == robot.joint_names
    q, qd, qdd = rng.standard_normal((3, 4))
    close(back.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd), 1e-13)


def test_mimic_problems_name_file_and_joint():
    text = (GOOD / "gripper.urdf").read_text()
    # nothing to follow: a warning, the joint stays independent (strict: refused)
    for leader, why in [("ghost", "joint 'ghost' is not defined"),
                        ("palm_joint", "joint 'palm_joint' is a fixed joint")]:
        bad = text.replace('<mimic joint="left_finger_joint"', f'<mimic joint="{leader}"')
        with pytest.warns(urdf.URDFWarning, match=f"joint 'right_finger_joint' <mimic>: {why}"):
            assert robodyn.load_urdf(bad).n == 5
        with pytest.raises(urdf.URDFError,
                           match=f"^<string>: joint 'right_finger_joint' <mimic>: {why}"):
            robodyn.load_urdf(bad, strict=True)
    bad = text.replace('<mimic joint="left_finger_joint"', '<mimic joint="right_finger_joint"')
    with pytest.raises(urdf.URDFError, match="^<string>: joint 'right_finger_joint' <mimic>: "
                                             "mimic joints form a cycle"):
        robodyn.load_urdf(bad)
    with pytest.raises(ValueError, match="mimic: expected one of"):
        robodyn.load_urdf(text, mimic="yes")


def test_chained_mimics_compose():
    text = (GOOD / "gripper.urdf").read_text().replace(
        '<dynamics damping="0.5"/>',
        '<dynamics damping="0.5"/><mimic joint="wrist" multiplier="0.5" offset="0.01"/>')
    spec = urdf.parse_urdf(text)
    by_name = {b.joint_name: b for b in spec.bodies}
    assert by_name["left_finger_joint"].mimic == ("wrist", 0.5, 0.01)
    assert by_name["right_finger_joint"].mimic == ("wrist", 0.5, 0.01)
    assert robodyn.robot(spec).n == 3


def test_simulation_of_a_coupled_robot_conserves_energy(rng):
    spec, _, _ = coupled_tree(6, rng, 2)
    for body in spec.bodies:
        body.damping = body.friction = 0.0
    robot = robodyn.robot(spec)
    q0 = rng.uniform(-1, 1, robot.n)
    # the free dynamics: no hard stops at the joint limits (they dissipate energy)
    res = robodyn.simulate(robot, controller=None, duration=0.3, dt=1e-4, q0=q0,
                           joint_limits="ignore")
    assert res.stats["engine"] == "python" and res.q.shape[1] == robot.n
    energy = [robot.kinetic_energy(q, qd) + robot.potential_energy(q)
              for q, qd in zip(res.q, res.qd)]
    assert abs(energy[-1] - energy[0]) <= 1e-7 * max(1.0, abs(energy[0]))
    assert np.abs(res.q[-1] - q0).max() > 1e-3  # it moved


def test_op_counts_and_specialized_code_cover_the_coupling(rng):
    spec, _, _ = coupled_tree(5, rng, 2)
    robot = robodyn.robot(spec)
    full = robot.full_robot()
    for algorithm in ("rnea", "crba", "aba", "gravity"):
        counts, bare = robot.op_counts(algorithm), full.op_counts(algorithm)
        assert counts["mul"] + counts["add"] > 0
        if algorithm in ("rnea", "crba", "gravity"):
            assert counts["add"] > bare["add"]  # the folding of the followers
    special = robot.specialized()  # generated code of the full model, wrapped
    assert special.is_specialized() and special.n == robot.n
    q, qd, qdd = rng.standard_normal((3, robot.n))
    close(special.inverse_dynamics(q, qd, qdd), robot.inverse_dynamics(q, qd, qdd), 1e-10)
    close(special.mass_matrix(q), robot.mass_matrix(q), 1e-10)
    close(special.forward_dynamics(q, qd, qdd), robot.forward_dynamics(q, qd, qdd), 1e-9)


# ---------------------------------------------------------------- Pinocchio

def _robots_dir():
    root = example_robot_data_dir()
    if root is None:
        pytest.skip("example-robot-data is not installed")
    return root


def _pin_q(model, joints, q):
    pq = np.zeros(model.nq)
    for j, x in zip(joints, q):
        if j.nq == 2:
            pq[j.idx_q:j.idx_q + 2] = math.cos(x), math.sin(x)
        else:
            pq[j.idx_q] = x
    return pq


def test_panda_fingers_against_pinocchio_mimic(rng):
    pin = pytest.importorskip("pinocchio")
    path = _robots_dir() / "panda_description/urdf/panda.urdf"
    robot = robodyn.load_urdf(path)
    model = pin.buildModelFromUrdf(str(path), mimic=True)
    data = model.createData()
    assert robot.n == model.nv == 8
    joints = [model.joints[model.getJointId(name)] for name in robot.joint_names]
    iv = np.array([j.idx_v for j in joints])
    frame_ids = [model.getFrameId(link, pin.FrameType.BODY) for link in robot.link_names]
    lo, hi = robot.position_limits
    G, _ = robot.coupling
    spec = robot.spec  # Pinocchio's rnea and aba have no joint damping or Coulomb friction
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    for _ in range(4):
        q = rng.uniform(lo, hi)
        qd, qdd = rng.standard_normal((2, robot.n))
        joint_terms = G.T @ (damping * (G @ qd) + friction * np.sign(G @ qd))
        pq, pv, pa = _pin_q(model, joints, q), np.zeros(8), np.zeros(8)
        pv[iv], pa[iv] = qd, qdd
        close(robot.inverse_dynamics(q, qd, qdd) - joint_terms,
              pin.rnea(model, data, pq, pv, pa)[iv], 1e-9)
        M = pin.crba(model, data, pq)
        M = np.triu(M) + np.triu(M, 1).T
        close(robot.mass_matrix(q), M[np.ix_(iv, iv)], 1e-9)
        # Pinocchio 4.1's aba does not take mimic joints: its own M and bias, solved
        tau = rng.standard_normal(8)
        pt = np.zeros(8)
        pt[iv] = tau
        bias = pin.rnea(model, data, pq, pv, np.zeros(8))
        expected = np.linalg.solve(M, pt - bias)[iv]
        close(robot.forward_dynamics(q, qd, tau + joint_terms), expected, 1e-9)
        pin.framesForwardKinematics(model, data, pq)
        T = robot.forward_kinematics(q)
        for k, fid in enumerate(frame_ids):
            if fid < len(model.frames):
                close(T[k], data.oMf[fid].homogeneous, 1e-9)


def test_romeo_hands_against_reduced_pinocchio(rng):
    """Romeo's 22 finger and thumb joints mimic its 2 hand joints (leaders after their followers in the
    tree: Pinocchio's mimic=True refuses the file), so: G^T (Pinocchio's full model) G."""
    pin = pytest.importorskip("pinocchio")
    path = _robots_dir() / "romeo_description/urdf/romeo.urdf"
    robot = robodyn.load_urdf(path)
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    full_names = robot.full_joint_names
    assert model.nv == len(full_names) and robot.n == model.nv - 22
    joints = [model.joints[model.getJointId(name)] for name in full_names]
    iv = np.array([j.idx_v for j in joints])
    G, b = robot.coupling
    for _ in range(3):
        q = rng.uniform(-1, 1, robot.n)
        qd, qdd = rng.standard_normal((2, robot.n))
        qf, qdf, qddf = G @ q + b, G @ qd, G @ qdd
        pq, pv, pa = _pin_q(model, joints, qf), np.zeros(model.nv), np.zeros(model.nv)
        pv[iv], pa[iv] = qdf, qddf
        spec = robot.spec
        joint_terms = G.T @ (np.array([b.damping for b in spec.bodies]) * qdf
                             + np.array([b.friction for b in spec.bodies]) * np.sign(qdf))
        close(robot.inverse_dynamics(q, qd, qdd) - joint_terms,
              G.T @ pin.rnea(model, data, pq, pv, pa)[iv], 1e-9)
        M = pin.crba(model, data, pq)
        M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(iv, iv)]
        close(robot.mass_matrix(q), G.T @ M @ G, 1e-9)
        pin.framesForwardKinematics(model, data, pq)
        T = robot.forward_kinematics(q)
        for k, link in enumerate(robot.link_names):
            close(T[k], data.oMf[model.getFrameId(link, pin.FrameType.BODY)].homogeneous, 1e-9)


def test_every_state_method_of_the_core_is_wrapped():
    """An algorithm added to the C++ core must get its coupling in robodyn/coupling.py (a
    CoupledRobot would otherwise hand reduced states to the full model)."""
    from robodyn._core import RobotCore
    from robodyn.model.coupling import CoupledRobot

    public = [k for k in dir(RobotCore)
              if not k.startswith("_") and callable(getattr(RobotCore, k))]
    assert "inverse_dynamics" in public and "jacobian" in public
    assert [k for k in public if k not in CoupledRobot.__dict__] == []
