"""The closed-loop examples (examples/fourbar.py, slider_crank_3d.py, ackermann.py): the figures
each one shows, checked on short runs of their run() functions."""

import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from _examples import load_example as load


def test_fourbar(tmp_path):
    ex = load("fourbar")
    out = ex.run(duration=0.3, dt=2e-3, out_dir=tmp_path)
    # the crank driven at pi rad/s: the rocker follows Freudenstein's closed form, the coupler
    # curve closes after one turn (2 s)
    assert out["rocker_error"] < 1e-9
    assert out["coupler_curve_closure"] < 1e-9
    assert out["kinematic_residual"] < 1e-12
    kin = out["kinematics"]
    assert kin["t"][-1] == pytest.approx(2.0)
    # the closed form differentiated in time: the rocker's rate
    h = 1e-6
    theta2 = kin["q"][::125, 0]
    rate = (ex.freudenstein(theta2 + math.pi * h)[1] - ex.freudenstein(theta2 - math.pi * h)[1])
    np.testing.assert_allclose(kin["qd"][::125, 2], ex.wrap(rate) / (2 * h), rtol=1e-6,
                               atol=1e-6)
    # dynamics from rest: energy and closure kept
    assert out["energy_drift"] < 1e-6
    assert out["max_residual"] < 1e-9
    assert (tmp_path / "fourbar.png").stat().st_size > 10000
    rows = np.loadtxt(tmp_path / "fourbar.csv", delimiter=",", skiprows=1)
    assert rows.shape == (1001, 13)
    np.testing.assert_allclose(ex.wrap(rows[:, 3] - rows[:, 4]), 0, atol=1e-9)
    assert np.loadtxt(tmp_path / "fourbar_dynamic.csv", delimiter=",", skiprows=1).shape == \
        (151, 13)


def test_slider_crank_3d(tmp_path):
    ex = load("slider_crank_3d")
    out = ex.run(duration=0.5, dt=1e-3, out_dir=tmp_path)
    assert out["slider_error"] < 1e-9
    assert out["max_residual"] < 1e-9
    assert out["energy_balance"] < 1e-6
    assert out["final_speed"] > 0.5
    rows = np.loadtxt(tmp_path / "slider_crank_3d.csv", delimiter=",", skiprows=1)
    assert rows.shape == (501, 12)
    assert (tmp_path / "slider_crank_3d.png").stat().st_size > 10000


def test_ackermann(tmp_path):
    ex = load("ackermann")
    out = ex.run(duration=4.0, dt=0.02, out_dir=tmp_path)
    # the inner wheel turns more at every rack position off centre, in both directions
    assert out["inner_minus_outer_min"] > 0
    assert out["max_inner_deg"] > out["max_outer_deg"] > 15
    assert out["max_residual"] < 1e-12
    # close to the ideal condition: exactly so to first order near the centre, within a few
    # degrees at full lock
    assert out["ackermann_error_deg"] < 3.0
    small = out["outer"] < math.radians(3)
    assert np.degrees(np.abs(out["inner"] - out["ideal_inner"])[small]).max() < 0.05
    # both directions are mirror images
    x, left, right = out["rack"], out["left"], out["right"]
    k = np.argmax(x)
    j = np.argmin(x)
    assert x[k] == pytest.approx(-x[j])
    assert left[k] == pytest.approx(-right[j], abs=1e-9)
    assert (tmp_path / "ackermann.png").stat().st_size > 10000
