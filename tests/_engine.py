"""Shared helpers of the engine tests (test_engine_*.py): random chains and trees, the
relative comparison, the cached models of the agreement tests, the batch calls.
"""

import numpy as np
import pytest

import robodyn
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


# forward dynamics goes through a solve; it is held to the same tolerance
FD_RTOL = RTOL


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
