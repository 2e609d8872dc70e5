"""The examples/ gallery, run as users run them (short durations), and the physics each one
shows checked on its results."""

import csv
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import robodyn

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


# a short run of each script (and its options that shorten it more), and the words its
# summary prints
SHORT = {
    "ackermann": ("1", "inner wheel up to"),
    "adaptive_control": ("0.3", "RMS tracking error"),
    "beam_pendulum": ("0.2", "midspan"),
    "five_link_chain": ("0.2", "total energy constant"),
    "spring_mass_damper": ("0.2", "static deflection"),
    "computed_torque_wrong_model": ("0.2", "max tracking error"),
    "dasc_cat_control": ("0.2", "angular momentum"),
    "falling_cat": ("0.2 --steps 800 --frames 4", "turned"),
    "fourbar": ("0.1", "Freudenstein"),
    "intelledex_thesis_motion": ("0.2", "peak torques"),
    "jpl_spacecraft": ("0.2", "Case 2"),
    "lqr_hold": ("0.3", "closed-loop poles"),
    "lynch_fourbar": ("0.2", "eigenvalue sigma^2"),
    "lynch_satellite": ("0.2", "momentum"),
    "slider_crank_3d": ("0.1", "slider against the closed form"),
    "stanford_rest_to_rest": ("0.2", "FD(q, qd, ID(q, qd, qdd))"),
    "triple_pendulum": ("0.2", "46.0, 67.7, 198.6"),
}


def test_every_example_has_a_short_run():
    assert sorted(SHORT) == [p.stem for p in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_runs_from_the_command_line(script, tmp_path):
    """Every example runs as the README says (``--duration``, ``--out-dir DIR``) and writes
    NAME.png and its CSV files into DIR, numbers throughout."""
    options, says = SHORT[script.stem]
    duration, *more = options.split()
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(script), "--duration", duration, "--out-dir",
                           str(out), *more], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert says in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing outside DIR
    pngs, csvs = sorted(out.glob("*.png")), sorted(out.glob("*.csv"))
    assert [p.name for p in pngs] == [f"{script.stem}.png"]
    assert csvs and all(p.name.startswith(script.stem) for p in csvs)
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for path in csvs:
        with open(path) as f:
            rows = list(csv.reader(f))
        assert len(rows) > 2 and all(len(r) == len(rows[0]) for r in rows)
        data = np.asarray(rows[1:], dtype=float)
        assert np.all(np.isfinite(data))
        assert data[-1, 0] >= float(duration) - 0.011  # t runs to the end


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
    # the slowest mode (joints 1 and 3 together, period 2.9 s) decays by about 3x every 4 s:
    # over the last of 20 s every angle stays within 0.01 rad of hanging straight down
    late = load("triple_pendulum").run(duration=20.0, dt=4e-3, out_dir=tmp_path)
    last = late["damped"].t > 17.0
    assert np.max(np.abs(late["damped"].q[last])) < 0.01


def test_triple_pendulum_is_lynchs(tmp_path):
    """Lynch (1988), Table 6.1: the pendulum of his Appendix A linearised about q = 0 has the
    "initial eigenvalues" 46.0, 67.7, 198.6 (10 omega^2, g = 9.81). Here from robodyn's mass
    matrix and the gravity stiffness K = dg/dq by central differences: eig(M^-1 K)."""
    ex = load("triple_pendulum")
    robot = robodyn.load_urdf(ex.pendulum_urdf(), gravity=(0.0, -9.81, 0.0))
    q0, h = np.zeros(3), 1e-6
    K = np.column_stack([(robot.gravity_torques(q0 + h * e) - robot.gravity_torques(q0 - h * e))
                         / (2 * h) for e in np.eye(3)])
    M = robot.mass_matrix(q0)
    lam = np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real)
    np.testing.assert_array_equal(np.round(10 * lam, 1), [46.0, 67.7, 198.6])
    # the joints 1.0 m apart, each mass centre at mid-link: the hanging chain's centre of mass
    # at y = -(0.5 + 1.5 + 2.5) / 3
    np.testing.assert_allclose(robot.center_of_mass(q0), [0.0, -1.5, 0.0], atol=1e-15)
    out = ex.run(duration=0.1, dt=1e-3, out_dir=tmp_path)
    np.testing.assert_allclose(out["eigenvalues"], 10 * lam, rtol=1e-6)


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


def test_computed_torque_exact_model_error_is_the_zero_order_hold(tmp_path):
    """The exact model's 1.2e-4 rad at 1 kHz is the torque held for a period: it shrinks in
    proportion to the period, and with the law evaluated at every integrator stage the exact
    model tracks to rounding."""
    ex = load("computed_torque_wrong_model")
    errors = {rate: ex.run(duration=2.0, dt=1e-3, out_dir=tmp_path, control_rate=rate)
              for rate in (1000.0, 4000.0, "continuous")}
    held = errors[1000.0]["exact_error"]
    assert 1e-4 < held < 1.5e-4
    assert errors[4000.0]["exact_error"] == pytest.approx(held / 4, rel=0.1)
    assert errors["continuous"]["exact_error"] < 1e-10
    # the wrong model's error is its own, whatever the rate
    assert errors["continuous"]["wrong_error"] == pytest.approx(errors[1000.0]["wrong_error"],
                                                                rel=0.01)
