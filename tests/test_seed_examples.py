"""The seed examples in examples/, run briefly: each writes its PNG and CSV, and shows what the
seed document reports (short durations keep CI fast; the full runs are in docs/floating.md)."""

import importlib.util
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import robodyn

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"

pytest.importorskip("matplotlib")


def example(name):
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        pytest.skip("not a source checkout")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lynch_satellite(tmp_path):
    out = example("lynch_satellite").run(duration=1.5, dt=1e-3, out_dir=tmp_path)
    assert (tmp_path / "lynch_satellite.png").stat().st_size > 10_000
    res = out["result"]
    data = np.loadtxt(tmp_path / "lynch_satellite.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(data[:, 1:1 + res.q.shape[1]], res.q)
    # momentum about the origin and about another fixed point: constant
    assert out["momentum_drift"] < 1e-12 * out["momentum"]
    assert out["momentum_drift_about_P"] < 1e-11 * out["momentum"]
    # the arms swing out past -+pi/2 (the oscillation's midpoint), mirror images of each other
    lo, hi = out["q2_range"]
    assert lo < -math.pi / 2 < hi and hi == pytest.approx(-math.pi / 3)
    assert out["symmetry"] < 1e-12
    # the base's spin slows as the arms swing out; it stays about y
    assert out["wy_range"][0] < 1.9 and out["wy_range"][1] == pytest.approx(2.0)
    assert out["w_off_axis"] < 1e-12


def test_lynch_satellite_momentum_is_the_initial_one():
    # independent of the simulation: the base spins at 2 rad/s about y with the arms at
    # -+pi/3; the arms' COMs at (+-(0.1 + 0.1 sin 60 deg), 0.1 cos 60 deg, 0) from the base COM
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    h = robot.momentum(q0, v0)
    c = robot.center_of_mass(q0)
    x = 0.1 + 0.1 * math.sin(math.pi / 3)
    y = 0.1 * math.cos(math.pi / 3)
    np.testing.assert_allclose(c, [0.0, 2 * 10 * y / 40, 0.0], atol=1e-15)
    # about the world origin (= the base COM here): Iyy of base + arms (z offsets are zero)
    # (an arm's Iyy in base axes: Ixx sin^2 q + Iyy cos^2 q = 0.04 * 3/4 + 0.02 / 4)
    Iyy = 0.125 + 2 * (0.04 * 0.75 + 0.02 * 0.25 + 10 * x * x)
    np.testing.assert_allclose(h, [0.0, 2.0 * Iyy, 0.0, 0.0, 0.0, 0.0], atol=1e-14)


def test_jpl_spacecraft(tmp_path):
    out = example("jpl_spacecraft").run(duration=5.0, dt=1e-3, out_dir=tmp_path)
    for name in ("jpl_spacecraft.png", "jpl_spacecraft_case1.csv",
                 "jpl_spacecraft_case1_nojets.csv", "jpl_spacecraft_case2.csv"):
        assert (tmp_path / name).stat().st_size > 10_000
    # the report: the jets begin pulsing on axis 2 at about t = 4.6 s, the others later
    first = out["first_firing"]
    assert 2 in first and 4.4 < first[2][0] < 4.8
    assert 1 not in first and 3 not in first
    assert out["max_sensor_angle_case1"] < 0.005
    # without jets the system is free: its angular momentum stays zero
    assert out["momentum_drift_nojets"][0] < 1e-9
    # Case 2 (its first 5 s here): no jet fires
    assert out["firings_case2"] == 0
    # the rates "after the manoeuvre" are those after the platform stops at 50 s: a 5 s run
    # has none (the report: once it stops, the average rates are zero)
    assert np.isnan(out["rate_mean_after"]).all() and np.isnan(out["rate_amplitude_after"]).all()
    assert np.all(np.abs(out["rate_mean_during"]) > 0)


def test_falling_cat(tmp_path):
    out = example("falling_cat").run(duration=0.5, steps=4000, frames=5, out_dir=tmp_path)
    for name in ("falling_cat.png", "falling_cat.csv", "falling_cat.gif"):
        assert (tmp_path / name).stat().st_size > 5_000
    from PIL import Image

    with Image.open(tmp_path / "falling_cat.gif") as gif:
        assert gif.n_frames == 5
    assert out["roll_deg"] >= 150.0
    assert out["axis_from_x_deg"] < 15.0  # about its long axis
    assert out["max_angular_momentum"] < 1e-9
    assert out["final_shape_error"] < 1e-6 and out["final_speed"] < 1e-3


def test_example_command_line(tmp_path):
    # the way a user runs one: a script with --duration
    proc = subprocess.run([sys.executable, str(EXAMPLES / "lynch_satellite.py"), "--duration",
                           "0.2", "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "momentum" in proc.stdout
    assert (tmp_path / "lynch_satellite.csv").is_file()
