"""The `robodyn` command line, run in-process through main(argv) (and once as a process)."""

import io
import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest

import robodyn
from robodyn.cli import commands as cli
from robodyn.cli import simulate as cli_simulate


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_lists_joints_masses_and_limits(capsys):
    code, out, err = run(capsys, "info", "intelledex_605")
    assert code == 0, err
    robot = robodyn.robots.intelledex_605()
    for name in robot.joint_names:
        assert name in out
    assert "18.14" in out  # link 1 mass, Nie's Table 3
    assert "3.142" in out  # the +-pi limits
    code, out, _ = run(capsys, "info", "stanford_arm", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["n"] == 6
    assert [j["type"] for j in data["joints"]][2] == "prismatic"
    assert data["joints"][2]["lower"] == pytest.approx(0.3048)
    assert data["joints"][0]["mass"] == pytest.approx(9.29)


def test_info_reads_a_urdf_path(capsys):
    path = robodyn.robots.urdf_path("intelledex_605")
    code, out, err = run(capsys, "info", str(path))
    assert code == 0, err
    assert "intelledex_605" in out


def test_id_matches_the_library_with_either_separator(capsys):
    robot = robodyn.robots.stanford_arm()
    q = [0.1, 0.2, 0.5, 0.4, 0.5, 0.6]
    qd = [0.3, -0.2, 0.1, 0.4, -0.5, 0.6]
    qdd = [1.0, -1.0, 0.5, 0.2, -0.3, 0.4]
    expected = robot.inverse_dynamics(np.array(q), np.array(qd), np.array(qdd))
    code, out, err = run(capsys, "id", "stanford_arm", "--q", ",".join(map(str, q)),
                         "--qd", *map(str, qd), f"--qdd={','.join(map(str, qdd))}", "--json")
    assert code == 0, err
    np.testing.assert_allclose(json.loads(out)["tau"], expected, rtol=1e-14, atol=0)
    code, out, err = run(capsys, "id", "stanford_arm", "--q", "0.1, 0.2, 0.5", "0.4 0.5 0.6",
                         "--qd", *map(str, qd), "--qdd", *map(str, qdd))
    assert code == 0, err
    assert f"{expected[1]:.9g}" in out


def test_id_defaults_to_zero_velocity_and_acceleration(capsys):
    robot = robodyn.robots.intelledex_605()
    code, out, _ = run(capsys, "id", "intelledex_605", "--q", "0.3", "--json")
    assert code == 0
    q = np.full(6, 0.3)
    np.testing.assert_allclose(json.loads(out)["tau"], robot.gravity_torques(q), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["id", "intelledex_605", "--q", "1", "2"], "expected 6 values"),
    (["id", "intelledex_605", "--qd", "a,b"], "expected numbers"),
    (["id", "intelledex_605", "--q", "nan"], "finite"),
    (["simulate", "intelledex_605", "--controller", "pid"], "invalid choice"),
    (["simulate", "intelledex_605", "--dt", "-1"], "positive"),
    (["simulate", "intelledex_605", "--control-rate", "often"], "continuous"),
    (["simulate", "intelledex_605", "--integrator", "leapfrog"], "invalid choice"),
    (["simulate", "intelledex_605", "--kp", "1", "2", "3"], "expected 6 values"),
    (["simulate"], "required"),
    (["frobnicate"], "invalid choice"),
    ([], "required"),
])
def test_bad_arguments_exit_2_with_a_message(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_unknown_robot_and_missing_file_are_clear_errors(capsys):
    code, _, err = run(capsys, "info", "puma_560")
    assert code == 2
    assert "unknown robot 'puma_560'" in err and "intelledex_605" in err
    code, _, err = run(capsys, "simulate", "/no/such/robot.urdf")
    assert code == 2
    assert "no such URDF file" in err


def test_simulate_writes_csv_and_plot(capsys, tmp_path):
    csv = tmp_path / "run.csv"
    png = tmp_path / "run.png"
    argv = ["simulate", "intelledex_605", "--duration", "0.3", "--csv", str(csv)]
    have_mpl = True
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        have_mpl = False
    if have_mpl:
        argv += ["--plot", str(png)]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "real-time factor" in out and "max tracking error" in out
    header = csv.read_text().splitlines()[0].split(",")
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert data.shape == (301, len(header))
    if have_mpl:
        assert png.read_bytes()[:4] == b"\x89PNG"


def test_plot_without_matplotlib_fails_before_the_run(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code, out, err = run(capsys, "simulate", "intelledex_605", "--plot", str(tmp_path / "x.png"))
    assert code == 1
    assert "pip install robodyn[plot]" in err
    assert "real-time factor" not in out


def test_simulate_stanford_arm_with_no_options_is_quick(capsys):
    start = time.perf_counter()
    code, out, err = run(capsys, "simulate", "stanford_arm")
    elapsed = time.perf_counter() - start
    assert code == 0, err
    assert "stanford_arm" in out
    # the default reference is robots.md's demo motion (T = 10 s) tracked by computed torque
    line = next(s for s in out.splitlines() if s.startswith("max tracking error"))
    assert float(line.split()[3]) < 1e-3
    assert "simulated 10 s" in out
    assert elapsed < 20.0


@pytest.mark.parametrize("controller", ["computed-torque", "pd-gravity", "feedforward", "none"])
def test_every_controller_runs(capsys, controller):
    code, out, err = run(capsys, "simulate", "intelledex_605", "--duration", "0.2",
                         "--controller", controller, "--quiet")
    assert code == 0, err
    assert out == ""


def test_simulate_options_reach_the_simulation(capsys, tmp_path):
    csv = tmp_path / "run.csv"
    code, out, err = run(capsys, "simulate", "intelledex_605", "--duration", "0.1",
                         "--integrator", "rk45", "--control-rate", "continuous",
                         "--model-error", "0.1", "--csv", str(csv))
    assert code == 0, err
    assert "rk45" in out and "continuous" in out
    code, out, err = run(capsys, "simulate", "intelledex_605", "--duration", "0.1",
                         "--noise-std", "1e-4", "--delay", "1", "--seed", "3")
    assert code == 0, err
    code, out, err = run(capsys, "simulate", "intelledex_605", "--duration", "0.1",
                         "--noise-std", "1e-4", "--control-rate", "continuous")
    assert code == 2 and "per control period" in err
    code, out, err = run(capsys, "simulate", "intelledex_605", "--duration", "0.1",
                         "--dt", "5e-4", "--control-rate", "500", "--kp", "100", "--kd", "20")
    assert code == 0, err
    assert "500 Hz" in out and "200 steps" in out


def test_simulate_with_a_csv_reference(capsys, tmp_path):
    t = np.linspace(0.0, 0.5, 51)
    q = np.column_stack([0.2 * t] * 6) + np.array([0, math.pi / 2, 0, 0, 0, 0])
    ref = tmp_path / "ref.csv"
    np.savetxt(ref, np.column_stack([t, q]), delimiter=",")
    code, out, err = run(capsys, "simulate", "intelledex_605", "--reference", str(ref))
    assert code == 0, err
    assert "simulated 0.5 s" in out


def test_default_reference_for_another_robot_moves_0_3_rad_within_limits(capsys, tmp_path):
    rows = [dict(theta=0.0, d=0.0, a=0.5, alpha=0.0, mass=1.0, com=(-0.25, 0, 0),
                 inertia=(0.01, 0.02, 0.02, 0, 0, 0), limits=(-0.1, 0.2)),
            dict(theta=0.0, d=0.0, a=0.4, alpha=0.0, mass=0.5, com=(-0.2, 0, 0),
                 inertia=(0.01, 0.01, 0.01, 0, 0, 0))]
    robot = robodyn.from_dh(rows, name="two_link")
    ref = cli.default_reference(robot)
    np.testing.assert_allclose(ref(0.0)[0], [0.0, 0.0])
    np.testing.assert_allclose(ref(ref.duration)[0], [-0.1, 0.3])  # +0.3 would leave [-.1, .2]
    path = tmp_path / "two_link.urdf"
    path.write_text(robot.to_urdf())
    code, out, err = run(capsys, "simulate", str(path), "--duration", "0.5")
    assert code == 0, err
    assert "two_link" in out


def test_dispatch_table_accepts_new_subcommands(capsys):
    assert set(cli.COMMANDS) >= {"info", "id", "simulate"}
    for add_arguments, run_fn in cli.COMMANDS.values():
        assert callable(add_arguments) and callable(run_fn)

    def add(p):
        p.add_argument("word")

    def hello(args):
        """say hello"""
        print(f"hello {args.word}")
        return 3

    cli.register("hello", add, hello)
    try:
        code, out, _ = run(capsys, "hello", "world")
        assert code == 3 and out == "hello world\n"
    finally:
        del cli.COMMANDS["hello"]


def test_progress_bar_draws_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    bar = cli_simulate.Progress(stream, mininterval=0.0)  # (tqdm: on a terminal at once)
    bar(0.5, 2.0)
    bar(2.0, 2.0)
    bar.close()
    text = stream.getvalue()
    assert " 25%" in text and "100%" in text and "t = 2.000 / 2 s" in text
    quiet = io.StringIO()  # not a terminal and fast (under a second): nothing drawn
    bar = cli_simulate.Progress(quiet, mininterval=0.0)
    bar(1.0, 2.0)
    bar.close()
    assert quiet.getvalue() == ""


def test_module_runs_as_a_program():
    proc = subprocess.run([sys.executable, "-m", "robodyn.cli", "info", "intelledex_605"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "joint6" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "robodyn.cli", "info", "nope"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "unknown robot" in proc.stderr


def test_bench_command_runs_on_a_bundled_robot(capsys):
    from robodyn.cli import commands as cli

    assert cli.main(["bench", "stanford_arm", "--peers", "none", "--rounds", "3", "--batch", "16",
                     "--quantities", "id"]) == 0
    assert "stanford_arm" in capsys.readouterr().out


def test_bench_runs_code_from_the_current_folder_only_if_it_is_the_users_checkout(tmp_path):
    """`robodyn bench` of an installed package imports bench/peers.py from the current folder
    only when that folder is a robodyn checkout whose bench files only the user can write."""
    import os

    from robodyn.cli.commands import _own_checkout

    (tmp_path / "bench").mkdir()
    peers = tmp_path / "bench" / "peers.py"
    peers.write_text("raise SystemExit('must not run')\n")
    assert not _own_checkout(tmp_path)  # no pyproject.toml
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
    assert not _own_checkout(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "robodyn"\n')
    os.chmod(tmp_path / "bench", 0o755)
    os.chmod(peers, 0o644)
    assert _own_checkout(tmp_path)
    os.chmod(peers, 0o664)  # writable by the group
    assert not _own_checkout(tmp_path)
    os.chmod(peers, 0o644)
    os.chmod(tmp_path / "bench", 0o777)
    assert not _own_checkout(tmp_path)
