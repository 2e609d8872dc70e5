"""The examples/ gallery, run as users run them (short durations), and the physics each one
shows checked on its results."""

import csv
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
if not EXAMPLES.is_dir():
    pytest.skip("examples/ is not next to the tests (installed package)", allow_module_level=True)

SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py"))


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_runs_from_the_command_line(script, tmp_path):
    """Every example takes --duration and --out and writes a PNG and a CSV there (--out a
    directory, or for some scripts a file prefix)."""
    proc = subprocess.run([sys.executable, str(script), "--duration", "0.2", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pngs, csvs = list(tmp_path.rglob("*.png")), list(tmp_path.rglob("*.csv"))
    assert pngs and csvs, f"{script.name} wrote {sorted(p.name for p in tmp_path.iterdir())}"
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for path in csvs:
        with open(path) as f:
            rows = list(csv.reader(f))
        assert len(rows) > 2 and all(len(r) == len(rows[0]) for r in rows)
        np.asarray(rows[1:], dtype=float)  # numbers throughout


def test_intelledex_thesis_motion(tmp_path):
    out = load("intelledex_thesis_motion").run(duration=2.0, dt=1e-3, out_dir=tmp_path)
    # the thesis' check: FD under the ID torques returns to (pi/3, ..., pi/3) (RK4, 1 ms:
    # 4e-6 rad, shrinking 16x per halving of the step)
    assert out["final_error"] < 2e-5
    assert out["max_torque"].shape == (6,) and np.all(out["max_torque"] > 0)


def test_triple_pendulum(tmp_path):
    out = load("triple_pendulum").run(duration=3.0, dt=2e-3, out_dir=tmp_path)
    assert out["energy_drift"] < 1e-6 * out["energy_scale"]
    # damped: the energy never rises (beyond rounding) and most of it is gone
    assert out["damped_energy_rise"] < 1e-9 * np.ptp(out["damped"].energy)
    assert out["damped_energy_loss"] > 0.5 * (out["damped"].energy[0]
                                              - out["damped"].potential.min())
    late = load("triple_pendulum").run(duration=12.0, dt=4e-3, out_dir=tmp_path)
    assert np.max(np.abs(late["damped_final_angles"])) < 0.02


def test_stanford_rest_to_rest(tmp_path):
    out = load("stanford_rest_to_rest").run(duration=10.0, dt=2e-3, out_dir=tmp_path)
    assert out["fd_of_id_error"] < 1e-9
    assert out["replay_error_4s"] < 1e-8  # then the open-loop instability takes over
    fractions = out["dynamic_fraction"][~np.isnan(out["dynamic_fraction"])]
    assert len(fractions) == 4 and np.all(fractions < 0.05)  # near-static: gravity's torques
    assert out["no_gravity_joints"] == ["joint1", "joint6"]
    assert out["last_joint_gravity"] < 1e-12


def test_computed_torque_with_a_wrong_model(tmp_path):
    out = load("computed_torque_wrong_model").run(duration=2.0, dt=1e-3, out_dir=tmp_path)
    # exact model: only the 1 kHz zero-order hold's error; wrong model: far larger, bounded
    assert out["exact_error"] < 5e-4
    assert 50 * out["exact_error"] < out["wrong_error"] < 0.1
