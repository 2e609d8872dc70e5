"""The dynamics engine against the pure-NumPy reference, and identities between its algorithms.

Reference: tests/reference/featherstone.py (written from Featherstone 2008, shares no code with
cpp/) on seeded random trees and chains from tests/reference/random_models.py, n = 1..30,
mixed revolute/prismatic joints on random axes, with armature, viscous and Coulomb friction and
extra fixed frames. Agreement is to 1e-10 relative to the size of the quantity.
"""

import itertools
import threading
import time

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R

SIZES = [1, 2, 3, 4, 6, 9, 14, 21, 30]
KINDS = ["chain", "tree"]
FRAMES = 3
RTOL = 1e-10


def make(kind, n, rng, joint_types="mixed", **kw):
    gen = R.random_chain if kind == "chain" else R.random_tree
    return gen(n, rng, joint_types, **kw)


def close(actual, expected, rtol=RTOL):
    """Equal to rtol relative to the largest entry of `expected` (at least 1)."""
    expected = np.asarray(expected, dtype=float)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


@pytest.fixture(scope="module")
def models():
    """(kind, n) -> (spec, robot, three states), shared by the agreement tests."""
    cache = {}
    rng = np.random.default_rng(20240611)
    for kind in KINDS:
        for n in SIZES:
            spec = make(kind, n, rng, frames=FRAMES)
            states = [R.random_state(spec, rng) + (10 * rng.standard_normal(n),)
                      for _ in range(3)]
            cache[kind, n] = spec, robodyn.Robot(spec), states
    return cache


# ---------------------------------------------------------------- agreement with the reference

def _jacobians_by_index(robot, spec, q):
    count = len(spec.bodies) + len(spec.frames)  # robot.n is nv: larger with a free-flyer
    assert len(robot.link_names) == count
    return (np.array([robot.jacobian(q, i) for i in range(count)]),
            np.array([F.jacobian(spec, q, i) for i in range(count)]))


def _jacobians_by_name(robot, spec, q):
    names = robot.link_names
    assert names == [b.name for b in spec.bodies] + [f.name for f in spec.frames]
    return (np.array([robot.jacobian(q, name) for name in names]),
            np.array([F.jacobian(spec, q, i) for i in range(len(names))]))


QUANTITIES = {
    "rnea": lambda r, s, q, qd, qdd, tau: (r.inverse_dynamics(q, qd, qdd),
                                           F.rnea(s, q, qd, qdd)),
    "rnea_default_method": lambda r, s, q, qd, qdd, tau: (
        r.inverse_dynamics(q, qd, qdd, method="rnea"), F.rnea(s, q, qd, qdd)),
    "kane": lambda r, s, q, qd, qdd, tau: (r.inverse_dynamics(q, qd, qdd, method="kane"),
                                           F.rnea(s, q, qd, qdd)),
    "mass_matrix": lambda r, s, q, qd, qdd, tau: (r.mass_matrix(q), F.crba(s, q)),
    "bias_torques": lambda r, s, q, qd, qdd, tau: (r.bias_torques(q, qd), F.bias(s, q, qd)),
    "gravity_torques": lambda r, s, q, qd, qdd, tau: (r.gravity_torques(q),
                                                      F.gravity_torques(s, q)),
    "fd_aba": lambda r, s, q, qd, qdd, tau: (r.forward_dynamics(q, qd, tau),
                                             F.aba(s, q, qd, tau)),
    "fd_crba": lambda r, s, q, qd, qdd, tau: (r.forward_dynamics(q, qd, tau, method="crba"),
                                              F.aba(s, q, qd, tau)),
    "fd_kane": lambda r, s, q, qd, qdd, tau: (r.forward_dynamics(q, qd, tau, method="kane"),
                                              F.aba(s, q, qd, tau)),
    "forward_kinematics": lambda r, s, q, qd, qdd, tau: (r.forward_kinematics(q),
                                                         np.array(F.fk(s, q))),
    "jacobian_by_index": lambda r, s, q, qd, qdd, tau: _jacobians_by_index(r, s, q),
    "jacobian_by_name": lambda r, s, q, qd, qdd, tau: _jacobians_by_name(r, s, q),
    "kinetic_energy": lambda r, s, q, qd, qdd, tau: (r.kinetic_energy(q, qd),
                                                     F.kinetic_energy(s, q, qd)),
    "potential_energy": lambda r, s, q, qd, qdd, tau: (r.potential_energy(q),
                                                       F.potential_energy(s, q)),
}
# forward dynamics goes through a solve; it is held to the same tolerance
FD_RTOL = RTOL


@pytest.mark.parametrize("quantity", sorted(QUANTITIES))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_agrees_with_reference(models, kind, n, quantity):
    spec, robot, states = models[kind, n]
    for q, qd, qdd, tau in states:
        actual, expected = QUANTITIES[quantity](robot, spec, q, qd, qdd, tau)
        close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


@pytest.mark.parametrize("joint_types", ["revolute", "prismatic"])
@pytest.mark.parametrize("kind", KINDS)
def test_single_joint_type_and_z_axes(kind, joint_types, rng):
    # all-revolute / all-prismatic models, and axes exactly along z (the special-cased paths)
    for axes in ("random", "z"):
        spec = make(kind, 7, rng, joint_types, axes=axes, frames=2)
        robot = robodyn.Robot(spec)
        for _ in range(2):
            q, qd, qdd = R.random_state(spec, rng)
            tau = 10 * rng.standard_normal(7)
            for quantity, fn in QUANTITIES.items():
                actual, expected = fn(robot, spec, q, qd, qdd, tau)
                close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


def test_axis_aligned_origins(rng):
    # origins that are signed permutations and axes along +-x, +-y, +-z
    spec = R.random_tree(9, rng, frames=2)
    perms = [np.eye(3), np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]),
             np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0.0]])]
    for i, b in enumerate(spec.bodies):
        b.origin[:3, :3] = perms[i % 3]
        if i % 2:
            b.origin[:3, 3] = [0.0, 0.0, 0.2]
        b.axis = np.roll([0.0, 0.0, -1.0 if i % 4 == 1 else 1.0], i)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        tau = 10 * rng.standard_normal(9)
        for quantity, fn in QUANTITIES.items():
            actual, expected = fn(robot, spec, q, qd, qdd, tau)
            close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


def proper_signed_permutations():
    """The 24 signed permutation matrices with determinant +1 (the rotations that map the
    coordinate axes onto coordinate axes)."""
    out = []
    for p in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            P = np.zeros((3, 3))
            P[range(3), p] = signs
            if np.linalg.det(P) > 0:
                out.append(P)
    assert len(out) == 24 and len({P.tobytes() for P in out}) == 24
    return out


AXES = {f"{s}{c}": (1.0 if s == "+" else -1.0) * np.eye(3)[k]
        for k, c in enumerate("xyz") for s in "+-"}


def permutation_trees(axis, rng):
    """Four trees (two on a fixed base, two floating) whose 48 bodies after the first take
    each of the 24 proper signed permutations as their origin's rotation, once on a revolute
    joint and once on a prismatic one, every joint about `axis`; offsets with every zero
    pattern. The first body (about `axis`, origin without rotation) hangs on the base or the
    free-flyer; the others form a binary tree below it (parent (k - 1) // 2 among them:
    branches, so each subtree's columns are several runs), half of the revolute joints
    without armature (the aba's kZ2 transport).

    The bodies' link kinds are not visible from Python. In build_model (model.cpp), body i's
    constant rotation is Rc = Ra_p' origin_R Ra_i with Ra the frame taking z onto the joint
    axis, a signed permutation for an axis along +-x, +-y, +-z (axis_frame); the turn psi that
    re-aims a frame is skipped when the child's Rc is already a signed permutation, and the
    angle offset qoff is taken only out of a general Rc. So every body below the first has
    Rc = Ra' P Ra (Ra the same for the body and its parent): the 24 P give the 24 signed
    permutations as Rc, for each joint type, classified Permutation: LinkKind RevPerm or
    PrisPerm. cpp/tests/test_link.cpp builds the same construction and asserts exactly that
    (m.link, m.Rc, m.qoff) before checking every Xup operation on it."""
    perms = proper_signed_permutations()
    trees = []
    for t in range(4):
        bodies = []
        floating = t % 2 == 1
        if floating:
            mass = rng.uniform(2.0, 10.0)
            bodies.append(R.Body(name="base", joint_name="root_joint", parent=-1,
                                 joint_type="floating", axis=np.array([0.0, 0.0, 1.0]),
                                 origin=np.eye(4), mass=mass, com=rng.normal(0.0, 0.1, 3),
                                 inertia=R.random_inertia(mass, rng)))
        first = len(bodies)
        for k in range(-1, 12):  # k = -1: the first body
            g = 12 * t + k  # 0..47 over the four trees
            jtype = "revolute" if k < 0 or g % 2 == 0 else "prismatic"
            origin = np.eye(4)
            if k >= 0:
                origin[:3, :3] = perms[g // 2]
            zeros = (g // 2 + 3 * (g % 2)) % 8  # bit c: component c of the offset is 0
            origin[:3, 3] = [0.0 if zeros >> c & 1 else rng.uniform(-0.4, 0.4) for c in range(3)]
            mass = rng.uniform(0.5, 5.0)
            lim = np.pi if jtype == "revolute" else 0.5
            bodies.append(R.Body(
                name=f"link{len(bodies)}", joint_name=f"joint{len(bodies)}",
                parent=first - 1 if k < 0 else first + (0 if k == 0 else 1 + (k - 1) // 2),
                joint_type=jtype, axis=AXES[axis].copy(), origin=origin, mass=mass,
                com=rng.normal(0.0, 0.1, 3), inertia=R.random_inertia(mass, rng),
                armature=0.0 if jtype == "revolute" and g % 4 == 0 else rng.uniform(0.01, 0.1),
                damping=rng.uniform(0.01, 0.5), friction=rng.uniform(0.01, 0.5),
                lower=-lim, upper=lim))
        pose = np.eye(4)
        pose[:3, :3] = perms[5 * t + 3]
        pose[:3, 3] = [0.1, 0.0, -0.2]
        frames = [R.Frame(name="tool", parent=len(bodies) - 1, pose=pose)]
        trees.append(R.ModelSpec(bodies=bodies, frames=frames, name=f"perm_{axis}_{t}"))
    return trees


def permutation_states(spec, rng, count):
    """`count` random (q, qd, qdd, tau) of a permutation tree (floating or not)."""
    floating = spec.bodies[0].joint_type == "floating"
    out = []
    for _ in range(count):
        q, qd, qdd = (R.random_floating_state if floating else R.random_state)(spec, rng)
        out.append((q, qd, qdd, 10 * rng.standard_normal(len(qd))))
    return out


@pytest.mark.parametrize("axis", sorted(AXES))
def test_every_signed_permutation_origin_on_every_axis(axis, rng):
    # every quantity against the reference on trees whose constant rotations are the 24
    # signed permutations, revolute and prismatic, on joints about +-x, +-y, +-z
    # (permutation_trees): a relabelling or sign of any one of them that goes wrong in one
    # algorithm fails here
    for spec in permutation_trees(axis, rng):
        robot = robodyn.Robot(spec)
        for q, qd, qdd, tau in permutation_states(spec, rng, 2):
            for quantity, fn in QUANTITIES.items():
                actual, expected = fn(robot, spec, q, qd, qdd, tau)
                close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


@pytest.mark.parametrize("floating", [False, True])
def test_signed_permutation_trees_mass_matrix_symmetric_and_batches(floating, rng):
    # the permutation trees' mass matrix exactly symmetric, single and batch; batch rows
    # (17: the two-row sweep and an odd last row) equal single calls
    for axis in sorted(AXES):
        for spec in permutation_trees(axis, rng)[int(floating)::2]:
            _check_symmetry_and_batches(spec, rng)


def _check_symmetry_and_batches(spec, rng):
    robot = robodyn.Robot(spec)
    states = permutation_states(spec, rng, 17)
    Q, QD, QDD, TAU = (np.array(x) for x in zip(*states))
    M = robot.mass_matrix(Q)
    assert np.array_equal(M, np.swapaxes(M, 1, 2)), spec.name
    for k in range(len(Q)):
        Mk = robot.mass_matrix(Q[k])
        assert np.array_equal(Mk, Mk.T), spec.name
    for name, (batch, singles) in batch_calls(robot, Q, QD, QDD, TAU).items():
        close(batch, np.array(singles), 1e-13)


def test_jacobian_negative_index_and_name_agree(models):
    spec, robot, states = models["tree", 9]
    q = states[0][0]
    count = len(robot.link_names)
    for i, name in enumerate(robot.link_names):
        J = robot.jacobian(q, i)
        np.testing.assert_array_equal(robot.jacobian(q, name), J)
        np.testing.assert_array_equal(robot.jacobian(q, i - count), J)
        np.testing.assert_array_equal(robot.jacobian(q, link=name), J)


def test_frame_on_the_base(rng):
    spec = R.random_tree(5, rng, frames=2)
    spec.frames[1].parent = -1
    robot = robodyn.Robot(spec)
    q = R.random_state(spec, rng)[0]
    T = robot.forward_kinematics(q)
    close(T[-1], spec.frames[1].pose, 1e-14)
    close(robot.forward_kinematics(q + 1)[-1], spec.frames[1].pose, 1e-14)
    assert np.all(robot.jacobian(q, "frame2") == 0)
    assert np.all(robot.jacobian(q, -1) == 0)


def test_energies_are_python_floats(models):
    spec, robot, states = models["chain", 3]
    q, qd, _, _ = states[0]
    assert type(robot.kinetic_energy(q, qd)) is float
    assert type(robot.potential_energy(q)) is float


# ---------------------------------------------------------------- batches and out=

def batch_calls(robot, Q, QD, QDD, TAU):
    """name -> (batch result, list of single results)."""
    rows = range(len(Q))
    link = robot.link_names[-1]
    calls = {
        "rnea": (lambda *x: robot.inverse_dynamics(*x), (Q, QD, QDD)),
        "kane": (lambda *x: robot.inverse_dynamics(*x, method="kane"), (Q, QD, QDD)),
        "fd_aba": (lambda *x: robot.forward_dynamics(*x), (Q, QD, TAU)),
        "fd_crba": (lambda *x: robot.forward_dynamics(*x, method="crba"), (Q, QD, TAU)),
        "fd_kane": (lambda *x: robot.forward_dynamics(*x, method="kane"), (Q, QD, TAU)),
        "mass_matrix": (robot.mass_matrix, (Q,)),
        "bias_torques": (robot.bias_torques, (Q, QD)),
        "gravity_torques": (robot.gravity_torques, (Q,)),
        "coriolis_matrix": (robot.coriolis_matrix, (Q, QD)),
        "kinetic_energy": (robot.kinetic_energy, (Q, QD)),
        "potential_energy": (robot.potential_energy, (Q,)),
        "forward_kinematics": (robot.forward_kinematics, (Q,)),
        "jacobian": (lambda q: robot.jacobian(q, link), (Q,)),
    }
    return {name: (fn(*args), [fn(*(a[k] for a in args)) for k in rows])
            for name, (fn, args) in calls.items()}


@pytest.fixture
def two_threads():
    old = robodyn.get_num_threads()
    robodyn.set_num_threads(2)
    try:
        assert robodyn.get_num_threads() == 2
        yield
    finally:
        robodyn.set_num_threads(old)
    assert robodyn.get_num_threads() == old


def _check_batches(robot, spec, rng, N):
    n = robot.n
    Q = np.array([R.random_state(spec, rng)[0] for _ in range(N)])
    QD, QDD, TAU = rng.standard_normal((3, N, n))
    for name, (batch, singles) in batch_calls(robot, Q, QD, QDD, TAU).items():
        singles = np.array(singles)
        assert isinstance(batch, np.ndarray) and batch.dtype == np.float64, name
        assert batch.shape == singles.shape == (N,) + np.shape(singles[0]), name
        assert batch.flags.c_contiguous, name
        close(batch, singles, 1e-13)


@pytest.mark.parametrize("kind, n", [("chain", 1), ("tree", 7), ("chain", 30)])
def test_batch_rows_equal_single_calls(kind, n, rng):
    spec = make(kind, n, rng, frames=2)
    robot = robodyn.Robot(spec)
    for N in (1, 5):
        _check_batches(robot, spec, rng, N)


@pytest.mark.parametrize("kind, n", [("tree", 7), ("chain", 12)])
def test_batch_rows_equal_single_calls_two_threads(kind, n, rng, two_threads):
    spec = make(kind, n, rng, frames=1)
    robot = robodyn.Robot(spec)
    _check_batches(robot, spec, rng, 300)  # >= 64 rows per thread: both threads work


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_rows_of_the_two_lane_sweep_equal_single_calls_bit_for_bit(floating, threads,
                                                                         rng):
    """A batch of inverse dynamics, bias or gravity torques of at least 16 rows runs two rows
    per sweep (the D2 scalar of simd.hpp: each lane the double steps of its row; an odd last
    row in both lanes), a smaller one row by row: every row equals the single call bit for
    bit. Mixed joints, armature, damping and Coulomb friction (zero and non-zero qd, the sign
    taken per lane), a free base, a joint angle beyond the sin/cos kernels' range (|q| > 1e5:
    libm in that lane only), odd and even row counts, one and two threads (runs of >= 64
    rows)."""
    spec = R.random_floating(9, rng) if floating else R.random_tree(9, rng)
    robot = robodyn.Robot(spec)
    state = R.random_floating_state if floating else R.random_state
    # the q index of a revolute joint (a free base takes q[0:7] for body 0)
    body = next(k for k, b in enumerate(spec.bodies) if b.joint_type == "revolute")
    big = body + 6 if floating else body
    old = robodyn.get_num_threads()
    robodyn.set_num_threads(threads)
    try:
        for N in (2, 7, 16, 17, 301):
            Q, QD, QDD = (np.array(x) for x in zip(*(state(spec, rng) for _ in range(N))))
            QD[::3, -1] = 0.0  # friction's sign(0) in some lanes
            Q[N // 2, big] = 3.0e5 + 0.25
            batches = {"id": robot.inverse_dynamics(Q, QD, QDD),
                       "bias": robot.bias_torques(Q, QD), "gravity": robot.gravity_torques(Q)}
            for k in range(N):
                singles = {"id": robot.inverse_dynamics(Q[k], QD[k], QDD[k]),
                           "bias": robot.bias_torques(Q[k], QD[k]),
                           "gravity": robot.gravity_torques(Q[k])}
                for name, single in singles.items():
                    assert np.array_equal(batches[name][k], single), (name, N, k)
    finally:
        robodyn.set_num_threads(old)


@pytest.mark.parametrize("floating", [False, True])
def test_forward_dynamics_batch_rows_do_not_depend_on_the_thread_split(floating, rng):
    """Batch forward dynamics (ABA) on two lanes agrees with single calls to ~1e-15, not bit
    for bit (Eigen vectorises some of double's 6x6 products, in another order). Every row of a
    batch of >= 16 rows goes through the two-lane sweep (an odd last row in both lanes), so a
    row's bits depend neither on the number of threads nor on the row's position."""
    spec = R.random_floating(9, rng) if floating else R.random_tree(9, rng)
    robot = robodyn.Robot(spec)
    state = R.random_floating_state if floating else R.random_state
    N = 131
    Q, QD, _ = (np.array(x) for x in zip(*(state(spec, rng) for _ in range(N))))
    TAU = rng.standard_normal(QD.shape)
    old = robodyn.get_num_threads()
    results = {}
    try:
        for threads in (1, 2):
            robodyn.set_num_threads(threads)
            results[threads] = robot.forward_dynamics(Q, QD, TAU)
    finally:
        robodyn.set_num_threads(old)
    assert np.array_equal(results[1], results[2])
    # state 0 in lane 0, in lane 1, and as the lone last row of an odd batch
    for rows in (np.r_[0, np.arange(1, 20)], np.r_[5, 0, np.arange(6, 24)],
                 np.r_[np.arange(1, 21), 0]):
        batch = robot.forward_dynamics(Q[rows], QD[rows], TAU[rows])
        k = int(np.flatnonzero(rows == 0)[0])
        assert np.array_equal(batch[k], results[1][0]), rows
    for k in range(0, N, 13):
        close(results[1][k], robot.forward_dynamics(Q[k], QD[k], TAU[k]), FD_RTOL)


def test_batch_against_reference(rng, two_threads):
    spec = R.random_tree(6, rng)
    robot = robodyn.Robot(spec)
    N = 200
    Q = np.array([R.random_state(spec, rng)[0] for _ in range(N)])
    QD, QDD = rng.standard_normal((2, N, 6))
    tau = robot.inverse_dynamics(Q, QD, QDD)
    close(tau, np.array([F.rnea(spec, *x) for x in zip(Q, QD, QDD)]))
    close(robot.forward_dynamics(Q, QD, tau), QDD, FD_RTOL)


def test_batch_and_single_calls_from_two_python_threads(rng):
    spec = R.random_chain(12, rng)
    robot = robodyn.Robot(spec)
    Q = rng.uniform(-np.pi / 2, np.pi / 2, (20000, 12))
    QD = rng.standard_normal(Q.shape)
    batch_expected = robot.inverse_dynamics(Q, QD, QD)
    q, qd, qdd = R.random_state(spec, rng)
    expected = robot.inverse_dynamics(q, qd, qdd)
    wrong = []
    done = threading.Event()

    def singles():
        while not done.is_set():
            if not np.array_equal(robot.inverse_dynamics(q, qd, qdd), expected):
                wrong.append("single")
                return

    assert robodyn.get_num_threads() == 1
    worker = threading.Thread(target=singles)
    worker.start()
    try:
        deadline = time.monotonic() + 3.0
        while not wrong and time.monotonic() < deadline:
            if not np.array_equal(robot.inverse_dynamics(Q, QD, QD), batch_expected):
                wrong.append("batch")
    finally:
        done.set()
        worker.join()
    assert not wrong, f"corrupted {wrong} results"


def test_empty_batch(rng):
    robot = robodyn.Robot(R.random_chain(3, rng))
    Z = np.zeros((0, 3))
    assert robot.inverse_dynamics(Z, Z, Z).shape == (0, 3)
    assert robot.mass_matrix(Z).shape == (0, 3, 3)
    assert robot.kinetic_energy(Z, Z).shape == (0,)


def test_set_num_threads_rejects_zero():
    old = robodyn.get_num_threads()
    with pytest.raises(ValueError, match="threads"):
        robodyn.set_num_threads(0)
    assert robodyn.get_num_threads() == old


OUT_CALLS = {
    "rnea": lambda r, q, qd, qdd, tau, **kw: r.inverse_dynamics(q, qd, qdd, **kw),
    "kane": lambda r, q, qd, qdd, tau, **kw: r.inverse_dynamics(q, qd, qdd, method="kane", **kw),
    "fd_aba": lambda r, q, qd, qdd, tau, **kw: r.forward_dynamics(q, qd, tau, **kw),
    "fd_crba": lambda r, q, qd, qdd, tau, **kw: r.forward_dynamics(q, qd, tau, method="crba",
                                                                   **kw),
    "fd_kane": lambda r, q, qd, qdd, tau, **kw: r.forward_dynamics(q, qd, tau, method="kane",
                                                                   **kw),
    "mass_matrix": lambda r, q, qd, qdd, tau, **kw: r.mass_matrix(q, **kw),
    "bias_torques": lambda r, q, qd, qdd, tau, **kw: r.bias_torques(q, qd, **kw),
    "gravity_torques": lambda r, q, qd, qdd, tau, **kw: r.gravity_torques(q, **kw),
    "coriolis_matrix": lambda r, q, qd, qdd, tau, **kw: r.coriolis_matrix(q, qd, **kw),
    "forward_kinematics": lambda r, q, qd, qdd, tau, **kw: r.forward_kinematics(q, **kw),
    "jacobian": lambda r, q, qd, qdd, tau, **kw: r.jacobian(q, 2, **kw),
}


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_is_written_in_place_and_returned(name, rng):
    spec = R.random_tree(5, rng, frames=1)
    robot = robodyn.Robot(spec)
    q, qd, qdd = R.random_state(spec, rng)
    tau = rng.standard_normal(5)
    call = OUT_CALLS[name]
    expected = call(robot, q, qd, qdd, tau)
    out = np.full(expected.shape, np.nan)
    assert call(robot, q, qd, qdd, tau, out=out) is out
    np.testing.assert_array_equal(out, expected)
    # and again at another state, in the same buffer
    q2 = q + 0.3
    assert call(robot, q2, qd, qdd, tau, out=out) is out
    np.testing.assert_array_equal(out, call(robot, q2, qd, qdd, tau))
    # out=None is the default
    np.testing.assert_array_equal(call(robot, q2, qd, qdd, tau, out=None), out)


# ---------------------------------------------------------------- identities

IDENTITY_CASES = [(kind, n) for kind in KINDS for n in (1, 2, 5, 12, 30)]


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_forward_dynamics_inverts_inverse_dynamics(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        for id_method in ("rnea", "kane"):
            tau = robot.inverse_dynamics(q, qd, qdd, method=id_method)
            for fd_method in ("aba", "crba", "kane"):
                close(robot.forward_dynamics(q, qd, tau, method=fd_method), qdd, FD_RTOL)


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_inverse_dynamics_is_mass_matrix_bias_and_friction(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    assert damping.min() > 0 and friction.min() > 0
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        expected = (robot.mass_matrix(q) @ qdd + robot.bias_torques(q, qd) + damping * qd
                    + friction * np.sign(qd))
        close(robot.inverse_dynamics(q, qd, qdd), expected)
        close(robot.inverse_dynamics(q, qd, qdd, method="kane"), expected)
        # at rest: gravity only (Coulomb friction is zero at qd = 0)
        zero = np.zeros(n)
        close(robot.inverse_dynamics(q, zero, zero), robot.gravity_torques(q))


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_mass_matrix_symmetric_positive_definite(kind, n, rng):
    for armature in (False, True):
        spec = make(kind, n, rng, armature=armature)
        robot = robodyn.Robot(spec)
        for _ in range(3):
            q, _, _ = R.random_state(spec, rng)
            M = robot.mass_matrix(q)
            np.testing.assert_array_equal(M, M.T)
            assert np.linalg.eigvalsh(M).min() > 0
            # columns are unit-acceleration torques without gravity and velocity
            g = robot.gravity_torques(q)
            zero = np.zeros(n)
            cols = np.array([robot.inverse_dynamics(q, zero, e) - g for e in np.eye(n)]).T
            close(M, cols)


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_kinetic_energy_is_quadratic_form(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, _ = R.random_state(spec, rng)
        close(robot.kinetic_energy(q, qd), 0.5 * qd @ robot.mass_matrix(q) @ qd)


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_coriolis_matrix(kind, n, rng):
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    h = 1e-6
    for _ in range(2):
        q, qd, _ = R.random_state(spec, rng)
        C = robot.coriolis_matrix(q, qd)
        # C qd = bias - gravity
        close(C @ qd, robot.bias_torques(q, qd) - robot.gravity_torques(q))
        # Mdot - 2C skew-symmetric, Mdot by central differences along q + t qd
        Mdot = (robot.mass_matrix(q + h * qd) - robot.mass_matrix(q - h * qd)) / (2 * h)
        N = Mdot - 2 * C
        scale = max(1.0, np.abs(Mdot).max(), np.abs(C).max())
        np.testing.assert_allclose(N + N.T, 0, atol=1e-6 * scale)
        # C is linear in qd
        qd2 = rng.standard_normal(n)
        close(robot.coriolis_matrix(q, qd + 2 * qd2), C + 2 * robot.coriolis_matrix(q, qd2))


@pytest.mark.parametrize("kind, n", IDENTITY_CASES)
def test_gravity_torques_are_potential_gradient(kind, n, rng):
    # tau = ... + g(q) with g = +dV/dq (V = potential_energy), as in the reference
    spec = make(kind, n, rng)
    robot = robodyn.Robot(spec)
    h = 1e-6
    for _ in range(2):
        q, _, _ = R.random_state(spec, rng)
        grad = np.array([(robot.potential_energy(q + h * e) - robot.potential_energy(q - h * e))
                         / (2 * h) for e in np.eye(n)])
        g = robot.gravity_torques(q)
        np.testing.assert_allclose(g, grad, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(g).max()))
        # and the reference agrees on the sign convention
        close(g, F.gravity_torques(spec, q))


def rotation_rate(Rp, Rm, R0, h):
    """Angular velocity (base axes) from R(q + h), R(q - h): vee of dR/dq R'."""
    W = (Rp - Rm) / (2 * h) @ R0.T
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


@pytest.mark.parametrize("kind, n", [("chain", 1), ("chain", 6), ("tree", 6), ("tree", 15)])
def test_jacobian_columns_are_fk_differences(kind, n, rng):
    spec = make(kind, n, rng, frames=3)
    robot = robodyn.Robot(spec)
    h = 1e-6
    q, _, _ = R.random_state(spec, rng)
    T0 = robot.forward_kinematics(q)
    plus = [robot.forward_kinematics(q + h * e) for e in np.eye(n)]
    minus = [robot.forward_kinematics(q - h * e) for e in np.eye(n)]
    for link in range(len(robot.link_names)):
        J = robot.jacobian(q, link)
        for j in range(n):
            Tp, Tm = plus[j][link], minus[j][link]
            w = rotation_rate(Tp[:3, :3], Tm[:3, :3], T0[link][:3, :3], h)
            v = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
            np.testing.assert_allclose(J[:3, j], w, atol=1e-7)
            np.testing.assert_allclose(J[3:, j], v, atol=1e-7)


def test_forward_kinematics_poses_are_rigid(models):
    spec, robot, states = models["tree", 14]
    T = robot.forward_kinematics(states[0][0])
    assert T.shape == (14 + FRAMES, 4, 4)
    Rs = T[:, :3, :3]
    close(Rs @ Rs.transpose(0, 2, 1), np.broadcast_to(np.eye(3), Rs.shape), 1e-12)
    np.testing.assert_array_equal(T[:, 3], np.broadcast_to([0.0, 0.0, 0.0, 1.0], (len(T), 4)))


# ---------------------------------------------------------------- gravity

def test_gravity_is_assignable(rng):
    spec = R.random_tree(8, rng, frames=1)
    robot = robodyn.Robot(spec)
    np.testing.assert_array_equal(robot.gravity, spec.gravity)
    q, qd, qdd = R.random_state(spec, rng)
    tau = 5 * rng.standard_normal(8)
    before = robot.gravity_torques(q)
    g = np.array([1.5, -2.0, -3.0])
    robot.gravity = g
    np.testing.assert_array_equal(robot.gravity, g)
    np.testing.assert_array_equal(robot.spec.gravity, g)
    assert np.abs(robot.gravity_torques(q) - before).max() > 1e-3
    close(robot.gravity_torques(q), F.gravity_torques(spec, q, gravity=g))
    close(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd, gravity=g))
    close(robot.inverse_dynamics(q, qd, qdd, method="kane"), F.rnea(spec, q, qd, qdd, gravity=g))
    close(robot.bias_torques(q, qd), F.bias(spec, q, qd, gravity=g))
    close(robot.potential_energy(q), F.potential_energy(spec, q, gravity=g))
    for method in ("aba", "crba", "kane"):
        close(robot.forward_dynamics(q, qd, tau, method=method), F.aba(spec, q, qd, tau, gravity=g),
              FD_RTOL)
    # a list is accepted too; the gravity terms scale with it
    robot.gravity = [0.0, 0.0, -9.81]
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])
    close(robot.gravity_torques(q), before)
    robot.gravity = (0, 0, -19.62)
    close(robot.gravity_torques(q), 2 * before)


def test_zero_gravity(rng):
    spec = R.random_tree(8, rng)
    robot = robodyn.Robot(spec)
    robot.gravity = np.zeros(3)
    q, qd, qdd = R.random_state(spec, rng)
    assert np.all(robot.gravity_torques(q) == 0)
    assert robot.potential_energy(q) == 0
    close(robot.bias_torques(q, qd), robot.coriolis_matrix(q, qd) @ qd)
    Q = np.array([q, q + 1])
    assert np.all(robot.gravity_torques(Q) == 0)
    close(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd, gravity=np.zeros(3)))


@pytest.mark.parametrize("bad", [[0.0, 0.0, np.nan], [np.inf, 0.0, 0.0], [0.0, -np.inf, 0.0]])
def test_non_finite_gravity_rejected(bad, rng):
    robot = robodyn.Robot(R.random_chain(3, rng))
    with pytest.raises(ValueError, match="gravity"):
        robot.gravity = bad
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])


@pytest.mark.parametrize("bad", [[0.0, 1.0], np.zeros((2, 3)), np.zeros((1, 3)), "down", None])
def test_bad_gravity_shape_rejected(bad, rng):
    robot = robodyn.Robot(R.random_chain(3, rng))
    with pytest.raises(ValueError, match="gravity"):
        robot.gravity = bad
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])


def test_non_finite_gravity_in_spec_rejected(rng):
    spec = R.random_chain(3, rng)
    spec.gravity = np.array([0.0, np.nan, -9.81])
    with pytest.raises(ValueError, match="gravity"):
        robodyn.Robot(spec)


# ---------------------------------------------------------------- from_dh against the reference

def dh_rows(n, rng, prismatic=(), armature=True):
    rows = R.random_dh_chain(n, rng, armature=armature)
    for i in prismatic:
        rows[i]["joint"] = "prismatic"
    return rows


DH_CASES = [
    ("standard", 1, ()), ("standard", 6, ()), ("standard", 6, (1, 4)), ("standard", 9, (0, 8)),
    ("modified", 1, (0,)), ("modified", 6, ()), ("modified", 6, (2, 3)), ("modified", 9, (5,)),
]


@pytest.mark.parametrize("convention, n, prismatic", DH_CASES)
def test_from_dh_matches_reference_dh_to_spec(convention, n, prismatic, rng):
    rows = dh_rows(n, rng, prismatic)
    assert all(r["theta"] != 0 and r["d"] != 0 for r in rows)  # joint offsets present
    robot = robodyn.from_dh(rows, convention=convention)
    spec = R.dh_to_spec(rows, convention)
    ref = robodyn.Robot(spec)
    assert robot.n == n
    names = robot.link_names
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        tau = 10 * rng.standard_normal(n)
        close(robot.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd))
        close(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd))
        close(robot.mass_matrix(q), ref.mass_matrix(q))
        close(robot.gravity_torques(q), ref.gravity_torques(q))
        close(robot.forward_dynamics(q, qd, tau), ref.forward_dynamics(q, qd, tau), FD_RTOL)
        close(robot.kinetic_energy(q, qd), ref.kinetic_energy(q, qd))
        close(robot.potential_energy(q), ref.potential_energy(q))
        # the DH frames: robodyn names them <robot>_dh<i>, the reference dh<i> (fk index n+i-1)
        fk, fk_ref = robot.forward_kinematics(q), ref.forward_kinematics(q)
        for i in range(1, n + 1):
            k = names.index(f"dh_robot_dh{i}")
            close(fk[k], fk_ref[n + i - 1], 1e-12)
            close(robot.jacobian(q, f"dh_robot_dh{i}"), ref.jacobian(q, f"dh{i}"))


def test_from_dh_armature_on_the_mass_matrix_diagonal(rng):
    rows = dh_rows(5, rng, prismatic=(2,))
    bare = [{k: v for k, v in r.items() if k != "armature"} for r in rows]
    q = rng.uniform(-np.pi, np.pi, 5)
    M = robodyn.from_dh(rows).mass_matrix(q)
    M0 = robodyn.from_dh(bare).mass_matrix(q)
    close(M - M0, np.diag([r["armature"] for r in rows]))
