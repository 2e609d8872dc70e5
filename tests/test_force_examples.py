"""The seed systems with force elements (examples/spring_mass_damper.py, five_link_chain.py,
beam_pendulum.py): the figures the Matlab toolbox thesis quotes, checked on the examples'
results."""

import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from _examples import load_example as load


def test_spring_mass_damper(tmp_path):
    ex = load("spring_mass_damper")
    out = ex.run(duration=2.0, dt=1e-4, out_dir=tmp_path)
    assert out["engine"] == "cpp"
    # 5 lbf on 50 lbf/ft: 0.1 ft static, 0.2 ft peak, w = sqrt(g / 0.1 ft)
    assert out["static_deflection_ft"] == pytest.approx(0.1, rel=1e-12)
    assert out["period"] == pytest.approx(2 * math.pi / math.sqrt(9.80665 / 0.03048), rel=1e-12)
    assert out["peak_ft"] == pytest.approx(0.2, abs=1e-6)
    assert out["error_ft"] < 1e-6
    assert out["damped_error_ft"] < 1e-6
    assert out["energy_drift"] < 1e-8 * out["energy_scale"]
    # with the damper it settles at -mg/k
    late = ex.run(duration=10.0, dt=2e-4, out_dir=tmp_path)
    assert late["damped_final_ft"] == pytest.approx(-0.1, abs=1e-3)
    assert late["error_ft"] < 1e-6


def test_five_link_chain_against_a_hand_written_lagrangian(tmp_path):
    """The initial accelerations from rest, horizontal: M(0) qdd = -g(0) with M and g from the
    links' mass centres written out by hand (complex-step Jacobians), and energy constant."""
    ex = load("five_link_chain")
    out = ex.run(duration=1.0, dt=5e-4, out_dir=tmp_path)
    assert out["energy_drift"] < 1e-8 * out["energy_scale"]
    n, L, m = 5, 1.0, 1.0

    def coms(q):
        # a turn about +y by the sum of the joint angles takes x toward -z
        phi = np.cumsum(q)
        tips = np.cumsum(np.stack([L * np.cos(phi), -L * np.sin(phi)]), axis=1)
        starts = tips - np.stack([L * np.cos(phi), -L * np.sin(phi)])
        return starts + 0.5 * np.stack([L * np.cos(phi), -L * np.sin(phi)])  # (2, n): x, z

    q = np.zeros(n)
    J = np.zeros((n, 2, n))
    for j in range(n):
        qc = q.astype(complex)
        qc[j] += 1e-20j
        J[:, :, j] = coms(qc).imag.T / 1e-20
    Iyy = m * L ** 2 / 12
    W = np.tril(np.ones((n, n)))  # link k turns with joints 0..k
    M = m * np.einsum("kai,kaj->ij", J, J) + Iyy * W.T @ W
    g = m * 9.81 * J[:, 1, :].sum(axis=0)  # dV/dq with V = sum m g z
    np.testing.assert_allclose(out["initial_qdd"], np.linalg.solve(M, -g), rtol=1e-11)


def test_beam_pendulum(tmp_path):
    ex = load("beam_pendulum")
    out = ex.run(duration=2.0, dt=5e-4, out_dir=tmp_path)
    assert out["engine"] == "cpp"
    assert out["k"] == pytest.approx(192 * 210e9 * 1e-6 / 3.8 ** 3, rel=1e-12)
    # "about .1 meters" at the bottom of the swing; quasi-statically 3 m g / k = 0.14 m
    assert 0.08 < out["max_deflection"] < 0.2
    assert out["energy_drift"] < 1e-8 * out["energy_scale"]


def test_dasc_cat_structure_and_momentum(tmp_path):
    """DASC's cat with its ten spring-damper-actuators and the two-stage controller: the
    dependent actuators follow S4 by the ratio, the bang-bang actuator is at its amplitude, the
    PD ones within their U max, and without the projection the angular momentum, zero in exact
    arithmetic, drifts only by RK4's error (dt^4: about 16x less per halving of the step)."""
    ex = load("dasc_cat_control")
    coarse = ex.run(duration=0.3, dt=1e-3, out_dir=tmp_path, project_momentum=False)
    fine = ex.run(duration=0.3, dt=5e-4, out_dir=tmp_path, project_momentum=False)
    log = coarse["log"]
    u = dict(zip(ex.INDEPENDENT + ex.DEPENDENT, log[:, 6:13].T))
    for joint in ex.DEPENDENT:
        np.testing.assert_allclose(u[joint], ex.RATIO * u["torso_twist"], rtol=1e-15)
    assert np.all(log[:, 1] == 1)  # stage 1 throughout (the turn is not reached: see the doc)
    assert np.max(np.abs(log[:, 6:9])) == pytest.approx(ex.BOUND)
    for k, joint in enumerate(ex.INDEPENDENT):
        # each actuator is at its amplitude (largest error) or within its PD bound
        mag = np.abs(log[:, 6 + k])
        assert np.all((np.abs(mag - ex.BOUND) < 1e-12) | (mag <= ex.U_MAX[joint] + 1e-12))
    assert 8 < coarse["max_angular_momentum"] / fine["max_angular_momentum"] < 40
    assert coarse["max_angular_momentum"] > 1e-7  # the drift the projection removes
    assert len(coarse["result"].t) == 301


def test_dasc_cat_momentum_below_1e9_at_1ms(tmp_path):
    """The deck's 0.9003 s at its 1 ms RK4 with the momentum projection: the total angular
    (and linear) momentum stays below 1e-9 throughout; the projection's kinetic energy change
    is far below the motion's (1e-9 of the largest kinetic energy)."""
    out = load("dasc_cat_control").run(duration=0.9003, dt=1e-3, out_dir=tmp_path)
    assert out["max_angular_momentum"] < 1e-9
    assert np.abs(out["result"].momentum).max() < 1e-9
    pr = out["projection"]
    assert pr["steps"] == out["steps"] == 901
    assert 1e-7 < pr["max_correction"] < 1e-4  # RK4's error, removed
    assert pr["energy_change_abs"] < 1e-9 * out["max_kinetic"]


def test_dasc_cat_projection_keeps_rk4_accuracy(tmp_path):
    """Against a 0.1 ms run without projection (momentum drift below 1e-9 there): the
    projected 1 ms run ends no farther from it than the unprojected 1 ms run."""
    ex = load("dasc_cat_control")
    ref = ex.run(duration=0.9003, dt=1e-4, out_dir=tmp_path, project_momentum=False)
    assert ref["max_angular_momentum"] < 1e-9
    errors = []
    for project in (True, False):
        out = ex.run(duration=0.9003, dt=1e-3, out_dir=tmp_path, project_momentum=project)
        errors.append(np.abs(out["result"].q[-1] - ref["result"].q[-1]).max())
    assert errors[0] < 2e-4
    assert errors[0] <= 1.01 * errors[1]
