"""Small argument checks of the `robodyn` command line (issues 31 and 32), each run as a user
runs it: the real program in a subprocess (``python -m robodyn.cli`` with this checkout's
package first on PYTHONPATH), checking the exit status and that stderr is one line."""

import os
import pathlib
import subprocess
import sys
import time

import pytest

import robodyn

PYTHONPATH = str(pathlib.Path(robodyn.__file__).resolve().parents[1])


def robodyn_cli(*argv, timeout=120):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [PYTHONPATH] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        MPLBACKEND="Agg")
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "robodyn.cli", *argv], capture_output=True,
                       text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - start


def one_line_error(err, command):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"robodyn {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("delay", ["1000000000000", "2001", "-1"])
def test_simulate_delay_longer_than_the_run_is_a_usage_error(delay):
    # the default intelledex_605 run: 2 s at 1000 Hz, 2000 control periods
    code, out, err, _ = robodyn_cli("simulate", "intelledex_605", "--delay", delay, "--quiet")
    assert code == 2
    line = one_line_error(err, "simulate")
    assert "--delay: expected 0 to 2000 control periods" in line and delay in line


def test_simulate_delay_within_the_run_runs():
    code, out, err, _ = robodyn_cli("simulate", "intelledex_605", "--delay", "3",
                                    "--duration", "0.05", "--quiet")
    assert code == 0, err


@pytest.mark.parametrize("view", [("nan", "inf"), ("10", "nan"), ("1e400", "30")])
def test_show_view_must_be_finite(view, tmp_path):
    code, out, err, _ = robodyn_cli("show", "intelledex_605", "--view", *view,
                                    "-o", str(tmp_path / "x.png"))
    assert code == 2
    assert "--view: expected finite angles" in one_line_error(err, "show")
    assert not (tmp_path / "x.png").exists()


def test_opcount_n_range_is_bounded_and_quick_to_refuse():
    from robodyn.codegen.opcount import max_n

    top = max_n()
    for hi in (top + 1, 10**9):
        code, out, err, took = robodyn_cli("opcount", "--n-range", "1", str(hi))
        assert code == 2
        assert f"HI <= {top}" in one_line_error(err, "opcount")
    assert took < 30.0
    code, out, err, _ = robodyn_cli("opcount", "intelledex_605", "--n-range", "1", "4")
    assert code == 0, err
    assert "Traceback" not in err


def test_info_strict_refuses_a_bundled_robot_that_loads_with_a_warning():
    """Issue 32: `robodyn info jpl_spacecraft --strict` printed the warning and exited 0."""
    code, out, err, _ = robodyn_cli("info", "jpl_spacecraft")
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("robodyn: warning: jpl_spacecraft: ")
    assert "triangle inequality" in lines[0]
    code, out, err, _ = robodyn_cli("info", "jpl_spacecraft", "--strict")
    assert code == 2
    line = one_line_error(err, "info")
    assert "triangle inequality" in line and "strict" in line
    assert out == ""
    # a robot without warnings is unaffected
    code, out, err, _ = robodyn_cli("info", "intelledex_605", "--strict")
    assert code == 0 and err == "", err
