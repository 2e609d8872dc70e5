"""The dynamics engine's batches and out=: batch rows equal single calls (on one and two
threads, from two Python threads), against the pure-NumPy reference, in place.
"""

import threading
import time

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R
from _engine import FD_RTOL, batch_calls, close, make


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
