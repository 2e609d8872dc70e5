"""What the command line says besides its results: warnings one line each naming the user's
file (no Python paths or source lines), --quiet, the robots --help lists, link names in
errors, and the free-floating summary's momentum balance."""

import re

import numpy as np
import pytest

from _cli import HOPPER_URDF, run_cli, stderr_lines

import robodyn

# a two-link arm whose moving links both break the triangle inequality of a rigid body
_LINK = ('<link name="{name}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" '
         'iyy="1" iyz="0" izz="3"/></inertial></link>')
_ARM = ('<robot name="arm"><link name="base"/>' + _LINK.format(name="upper")
        + _LINK.format(name="lower")
        + '<joint name="shoulder" type="continuous"><parent link="base"/><child link="upper"/>'
          '<axis xyz="0 0 1"/></joint>'
          '<joint name="elbow" type="continuous"><parent link="upper"/><child link="lower"/>'
          '<origin xyz="0.5 0 0"/><axis xyz="0 1 0"/></joint></robot>')

_PYTHON_NOISE = re.compile(r"\.py:\d+|UserWarning|URDFWarning|warnings\.warn|Traceback")

def test_urdf_warnings_are_one_line_each_naming_the_file(tmp_path):
    """Each problem of the user's URDF is one stderr line `robodyn: warning: FILE: WHERE: WHY`;
    no Python file path, warning class or source line."""
    path = tmp_path / "arm.urdf"
    path.write_text(_ARM)
    proc = run_cli("info", path)
    assert proc.returncode == 0, proc.stderr
    lines = stderr_lines(proc)
    assert len(lines) == 2, proc.stderr
    for link, line in zip(("upper", "lower"), lines):
        assert line.startswith(f"robodyn: warning: {path}: link '{link}' <inertial> <inertia>: ")
        assert "I1 + I2 >= I3" in line
    assert not _PYTHON_NOISE.search(proc.stderr)

def test_python_warnings_are_one_line(tmp_path):
    """A warning raised with warnings.warn inside a subcommand (the bundled JPL spacecraft's
    inertia note) is one `robodyn: warning:` line, not Python's two-line report with a path."""
    proc = run_cli("info", "jpl_spacecraft")
    assert proc.returncode == 0, proc.stderr
    lines = stderr_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("robodyn: warning: jpl_spacecraft: ")
    assert not _PYTHON_NOISE.search(proc.stderr)

def test_warning_lines_split_a_urdf_warning():
    from robodyn.cli import warning_lines

    message = ("a/b.urdf: loaded with 2 warnings (strict=True or --strict refuses):\n"
               "  link 'x' <inertial>: bad\n  joint 'j': odd")
    assert warning_lines(message) == ["a/b.urdf: link 'x' <inertial>: bad",
                                      "a/b.urdf: joint 'j': odd"]
    assert warning_lines("one\n two") == ["one; two"]

def test_quiet_hides_wrote_file(tmp_path):
    """--quiet: no summary, no progress and no `wrote FILE` (simulate with --csv and --plot)."""
    pytest.importorskip("matplotlib")
    csv, png = tmp_path / "run.csv", tmp_path / "run.png"
    loud = run_cli("simulate", "intelledex_605", "--duration", "0.05", "--csv", csv)
    assert loud.returncode == 0 and f"wrote {csv}" in loud.stdout
    proc = run_cli("simulate", "intelledex_605", "--duration", "0.05", "--csv", csv,
                   "--plot", png, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert csv.stat().st_size > 0 and png.stat().st_size > 0

def test_help_lists_every_bundled_robot():
    proc = run_cli("--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for name in robodyn.robots.available(floating=True):
        assert name in text, name
    assert len(robodyn.robots.available(floating=True)) == 5

def test_a_wrong_link_name_lists_the_links():
    robot = robodyn.robots.stanford_arm()
    with pytest.raises(ValueError) as info:
        robot.jacobian(np.zeros(robot.n), "no_such_link")
    message = str(info.value)
    assert "no link named 'no_such_link'" in message
    for name in robot.link_names:
        assert name in message


# ---------------------------------------------------------------------------------------------
# the free-floating summary: momentum change against the external impulse


@pytest.fixture
def hopper(tmp_path):
    path = tmp_path / "hopper.urdf"
    path.write_text(HOPPER_URDF)
    return path, robodyn.load_urdf(str(path), floating_base=True)


def _start(robot):
    q0 = np.zeros(robot.nq)
    q0[6] = 1.0
    return q0, np.r_[0.3, -0.2, 0.5, 0.1, 0.0, 0.4, 0.5]

def test_gravity_is_an_impulse_not_a_drift(hopper):
    """Falling for T = 1 s: the linear momentum changes by m g T (4 kg x 9.81 m/s^2 x 1 s,
    computed here from the masses), which the summary reports as the external impulse; the
    drift, what the impulse does not explain, is at the integrator's error; the summary says
    there is no ground."""
    _, robot = hopper
    q0, v0 = _start(robot)
    res = robodyn.simulate(robot, None, q0=q0, qd0=v0, duration=1.0, dt=0.001)
    m_g_T = 4.0 * np.asarray(robot.gravity) * 1.0
    np.testing.assert_allclose(res.external_impulse[-1, 3:], m_g_T, rtol=1e-12, atol=1e-12)
    change = res.momentum[-1] - res.momentum[0]
    np.testing.assert_allclose(change[3:], m_g_T, rtol=1e-8, atol=1e-8 * 39.24)
    ang, lin = res.momentum_drift
    assert lin < 1e-9 * 39.24 and ang < 1e-8 * np.abs(change[:3]).max()
    text = res.summary()
    assert "external impulse (gravity): angular" in text and "linear (0, 0, -39.24) N s" in text
    assert re.search(r"momentum drift \(change minus impulse.*linear \d\.\d+e-(1\d|0[89]) N s",
                     text)
    assert "no ground contact model" in text

def test_a_wrench_is_an_impulse_too(hopper):
    """A constant force and moment on the leg (a controller's wrench, in the leg's frame):
    the momentum changes by their impulse (through the base block of tau), not a drift."""
    _, robot = hopper
    q0, v0 = _start(robot)
    robot_free = robot
    w = np.array([0.2, -0.1, 0.3, 1.0, 2.0, -0.5])

    def push(t, q, v, ref):
        return np.zeros(robot.nv), {"leg": w}

    res = robodyn.simulate(robot_free, push, q0=q0, qd0=v0, duration=0.5, dt=0.001,
                           control_rate=1000.0)
    change = res.momentum[-1] - res.momentum[0]
    assert np.abs(change - res.external_impulse[-1]).max() < 1e-6 * np.abs(change).max()
    assert max(res.momentum_drift) < 1e-6 * np.abs(change).max()
    assert "gravity and wrenches on the robot" in res.summary()

def test_a_free_seed_system_reports_its_drift():
    """Without gravity or wrenches (Lynch's satellite) the summary's drift is the change."""
    proc = run_cli("simulate", "lynch_satellite", "--duration", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert "momentum drift (no external force" in proc.stdout
    assert "no ground contact model" not in proc.stdout
