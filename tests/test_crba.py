"""The composite-rigid-body mass matrix (cpp/include/robodyn/algorithms/crba.hpp) on the cases its one loop
must get right: subtrees whose columns are not consecutive (the runs of Model::subtree_runs),
zeros between branches after the workspace held other numbers, a free-flyer's 6 x 6 block, and
forward dynamics reading only the lower triangle. Against the pure-NumPy reference
(tests/reference/featherstone.py) and identities; 1e-10 relative.
"""

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R

RTOL = 1e-10


def _close(actual, expected):
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale)


def _with_parents(parents, rng):
    """A random tree with the given parents (-1: the base), joints mixed."""
    spec = R.random_tree(len(parents), rng)
    for body, p in zip(spec.bodies, parents):
        body.parent = p
    return spec


# parents[i] < i, but subtrees out of depth-first order: body 1's subtree is {1, 3, 5, 6}, body
# 0's {0, 2, 4}; each subtree's columns come in several runs
INTERLEAVED = [-1, -1, 0, 1, 2, 3, 3, 0]


def test_subtrees_out_of_depth_first_order(rng):
    spec = _with_parents(INTERLEAVED, rng)
    robot = robodyn.Robot(spec)
    for _ in range(5):
        q, _, _ = R.random_state(spec, rng)
        M = robot.mass_matrix(q)
        _close(M, F.crba(spec, q))
        assert np.array_equal(M, M.T)
        # bodies on different branches do not couple: exact zeros
        assert M[0, 1] == 0.0 and M[2, 3] == 0.0 and M[4, 5] == 0.0 and M[1, 7] == 0.0


def test_zeros_between_branches_survive_forward_dynamics(rng):
    """Forward dynamics by Cholesky overwrites the workspace's lower triangle with the factor;
    the next mass matrix at the same q (cache hit) still has its exact zeros and values."""
    spec = _with_parents(INTERLEAVED, rng)
    robot = robodyn.Robot(spec)
    q, qd, _ = R.random_state(spec, rng)
    fresh = robodyn.Robot(spec).mass_matrix(q)
    tau = rng.standard_normal(len(q))
    qdd = robot.forward_dynamics(q, qd, tau, method="crba")
    assert np.array_equal(robot.mass_matrix(q), fresh)
    _close(qdd, robot.forward_dynamics(q, qd, tau, method="aba"))


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_forward_dynamics_inverts_inverse_dynamics(kind, rng):
    gen = R.random_chain if kind == "chain" else R.random_tree
    spec = gen(12, rng)
    robot = robodyn.Robot(spec)
    q, qd, qdd = R.random_state(spec, rng)
    tau = robot.inverse_dynamics(q, qd, qdd)
    _close(robot.forward_dynamics(q, qd, tau, method="crba"), qdd)


def test_free_flyer(rng):
    """A free-floating tree: the base's 6 x 6 block and its coupling to every joint, against the
    reference; symmetric positive definite."""
    spec = R.random_floating(6, rng)
    robot = robodyn.Robot(spec)
    q, _, _ = R.random_floating_state(spec, rng)
    M = robot.mass_matrix(q)
    assert M.shape == (robot.nv, robot.nv) and np.array_equal(M, M.T)
    _close(M, F.crba(spec, q))
    assert np.all(np.linalg.eigvalsh(M) > 0)


@pytest.mark.parametrize("kind", ["interleaved", "floating"])
def test_every_entry_of_out_is_written(kind, rng):
    """The sweep zeroes H once and then stores each entry of the lower triangle and its mirror:
    an out= buffer full of NaN (one state, and a batch) comes back with no entry left unwritten,
    equal bit for bit to the plain call, with exact zeros between branches."""
    if kind == "floating":
        spec = R.random_floating(6, rng, kind="tree")
        states = [R.random_floating_state(spec, rng)[0] for _ in range(3)]
    else:
        spec = _with_parents(INTERLEAVED, rng)
        states = [R.random_state(spec, rng)[0] for _ in range(3)]
    robot = robodyn.Robot(spec)
    nv = robot.nv
    for q in states:
        out = np.full((nv, nv), np.nan)
        assert robot.mass_matrix(q, out=out) is out
        assert not np.isnan(out).any()
        assert np.array_equal(out, robot.mass_matrix(q)) and np.array_equal(out, out.T)
        _close(out, F.crba(spec, q))
        if kind == "interleaved":
            assert out[0, 1] == 0.0 and out[2, 3] == 0.0 and out[1, 7] == 0.0
    Q = np.stack(states)
    batch = np.full((len(states), nv, nv), np.nan)
    robot.mass_matrix(Q, out=batch)
    assert not np.isnan(batch).any()
    for q, M in zip(states, batch):
        assert np.array_equal(M, robot.mass_matrix(q))
