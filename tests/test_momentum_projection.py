"""simulate(..., project_momentum=True): the base velocity reset after every step so that a
free-floating robot's total momentum keeps its initial value (robodyn.constraints.momentum)."""

import warnings

import numpy as np
import pytest

import robodyn
from robodyn.constraints.momentum import MomentumProjection


def _satellite():
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    return robot, q0, v0


def test_projection_is_the_kinetic_metric_one_and_moves_only_the_base():
    """M^-1 A_G' has zero joint rows (the base rows of M are the momentum seen from the base),
    so the base-only correction equals the kinetic-energy-metric projection
    dv = M^-1 A' (A M^-1 A')^-1 (h0 - A v), computed here in NumPy."""
    robot, q0, v0 = _satellite()
    rng = np.random.default_rng(35)
    proj = MomentumProjection(robot, q0, v0)
    q = robot.integrate(q0, 0.3 * rng.normal(size=robot.nv))
    v = v0 + 0.2 * rng.normal(size=robot.nv)
    A = np.asarray(robot.centroidal_momentum_matrix(q))
    M = np.asarray(robot.mass_matrix(q))
    MinvAt = np.linalg.solve(M, A.T)
    np.testing.assert_allclose(MinvAt[6:], 0.0, atol=1e-12)
    expected = v + MinvAt @ np.linalg.solve(A @ MinvAt, proj.h0 - A @ v)
    out = v.copy()
    assert proj(q, out) is True
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(out[6:], v[6:])
    np.testing.assert_allclose(A @ out, proj.h0, atol=1e-12)
    T = robot.kinetic_energy
    assert proj.energy_change == pytest.approx(T(q, out) - T(q, v), rel=1e-12)


def test_simulate_keeps_the_momentum_and_reports_the_energy_effect():
    robot, q0, v0 = _satellite()
    def ctrl(t, q, v, ref):
        return np.r_[np.zeros(6), 0.5 * np.sin(3 * t), -0.5]

    runs = {}
    for project in (False, True):
        runs[project] = robodyn.simulate(robot, ctrl, duration=1.0, dt=0.02, q0=q0, qd0=v0,
                                         control_rate=50.0, project_momentum=project)
    free, kept = runs[False], runs[True]
    drift = lambda r: np.abs(r.momentum - r.momentum[0]).max()
    assert drift(free) > 1e-8            # RK4's error at 20 ms with a driven arm
    assert drift(kept) < 1e-12 * max(1.0, np.abs(kept.momentum).max())
    pr = kept.stats["momentum_projection"]
    assert pr["steps"] == 50 and 1e-9 < pr["max_correction"] < 1e-6
    assert abs(pr["energy_change"]) <= pr["energy_change_abs"] < 1e-6 * kept.kinetic.max()
    # the joints follow the same motion to RK4's accuracy
    assert np.abs(kept.q[:, 7:] - free.q[:, 7:]).max() < 1e-5
    assert kept.stats["engine"] == "python"


def test_projection_refuses_what_does_not_conserve_momentum():
    robot, q0, v0 = _satellite()
    with pytest.raises(ValueError, match="fixed base"):
        robodyn.simulate(robodyn.robots.stanford_arm(), duration=0.01, project_momentum=True)
    heavy = robodyn.robots.lynch_satellite()
    heavy.gravity = [0.0, 0.0, -9.81]
    with pytest.raises(ValueError, match="gravity"):
        robodyn.simulate(heavy, duration=0.01, q0=q0, project_momentum=True)
    pushed = robot.with_forces([robodyn.BodyForce(robot.link_names[0], [0, 0, 0, 1.0, 0, 0])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="BodyForce"):
            robodyn.simulate(pushed, duration=0.01, q0=q0, project_momentum=True)
    with pytest.raises(ValueError, match="engine='cpp'"):
        robodyn.simulate(robot, duration=0.01, q0=q0, project_momentum=True, engine="cpp")
