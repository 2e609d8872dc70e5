"""`robodyn show`: the robot drawn at a configuration, free-floating robots included (the
seed systems, a URDF with --floating-base), run as a user runs it."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("PIL")

from _cli import HOPPER_URDF, colour_pixels, image_rgb, run_cli, stderr_lines  # noqa: E402

import robodyn  # noqa: E402

LINK = (64, 64, 64)   # the links' colour ("0.25" grey)
JOINT_AXIS = (191, 0, 191)  # magenta

@pytest.mark.parametrize("name", ["lynch_satellite", "jpl_spacecraft", "dasc_cat"])
def test_show_draws_a_seed_system(tmp_path, name):
    """Each floating seed system is drawn at its document's initial state: exit 0, a PNG with
    the links and joint axes on it, "wrote FILE" on stdout and nothing else said but the one
    known warning line of jpl_spacecraft."""
    out = tmp_path / f"{name}.png"
    proc = run_cli("show", name, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}"
    for line in stderr_lines(proc):
        assert line.startswith("robodyn: warning: jpl_spacecraft: "), line
    rgb = image_rgb(out)
    assert rgb.shape[0] > 300 and rgb.shape[1] > 300
    assert colour_pixels(rgb, LINK, tol=12) > 150       # the links are there
    assert colour_pixels(rgb, JOINT_AXIS, tol=40) > 40  # so are the joint axes

def test_show_floating_takes_the_full_configuration(tmp_path):
    """--q of a floating robot is nq numbers (base position, quaternion x y z w, joints): a
    moved base draws a different picture; the joints' count alone (or one number) is a
    one-line usage error (exit 2) that says how many numbers it needs; so is a non-unit
    quaternion."""
    robot = robodyn.robots.lynch_satellite()
    assert (robot.nq, robot.nv) == (9, 8)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert run_cli("show", "lynch_satellite", "--q", "0 0 0 0 0 0 1 0.5 -0.5",
                   "-o", a).returncode == 0
    assert run_cli("show", "lynch_satellite", "--q", "0 0 0 0 0 0.3826834 0.9238795 1.2 -0.3",
                   "-o", b).returncode == 0
    assert np.mean(np.any(image_rgb(a) != image_rgb(b), axis=-1)) > 0.005
    for q in ("0.5 -0.5", "0.5"):  # the joints alone; one number is not repeated either
        bad = run_cli("show", "lynch_satellite", "--q", q, "-o", tmp_path / "c.png")
        assert bad.returncode == 2
        assert stderr_lines(bad) == [
            "robodyn show: error: --q: lynch_satellite has a free-floating base: expected 9 "
            "numbers (base position 3, quaternion x y z w 4, joints 2), got "
            f"{len(q.split())}"]
    bad = run_cli("show", "lynch_satellite", "--q", "0 0 0 0 0 0 2 0 0", "-o",
                  tmp_path / "d.png")
    assert bad.returncode == 2 and len(stderr_lines(bad)) == 1
    assert "quaternion" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "c.png").exists() and not (tmp_path / "d.png").exists()

def test_show_floating_base_option_on_a_urdf(tmp_path):
    """`show URDF --floating-base` draws the root link as a floating base (nq = nv + 1); a
    bundled fixed-base robot with --floating-base is a usage error."""
    urdf = tmp_path / "hopper.urdf"
    urdf.write_text(HOPPER_URDF)
    out = tmp_path / "hopper.png"
    proc = run_cli("show", urdf, "--floating-base", "--q", "0.5 0 1 0 0 0 1 0.4", "-o", out)
    assert proc.returncode == 0, proc.stderr
    rgb = image_rgb(out)
    assert colour_pixels(rgb, LINK, tol=12) > 100
    fixed = run_cli("show", "stanford_arm", "--floating-base", "-o", tmp_path / "x.png")
    assert fixed.returncode == 2 and "fixed base" in fixed.stderr

def test_show_quiet_says_nothing(tmp_path):
    out = tmp_path / "arm.png"
    proc = run_cli("show", "stanford_arm", "--quiet", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert out.stat().st_size > 0

def test_draw_robot_frames_follow_forward_kinematics():
    """The drawn joints are the origins forward_kinematics gives (an independent path: the
    artist's data against the robot's poses), the floating base's square at the base
    origin, and no line from the world origin to a floating base."""
    from robodyn.sim.plotting import draw_robot

    robot = robodyn.robots.lynch_satellite()
    q, _ = robodyn.robots.initial_state("lynch_satellite", robot)
    q = q.copy()
    q[:3] = (2.0, -1.0, 0.5)
    fig = draw_robot(robot, q)
    ax = fig.axes[0]
    poses = np.asarray(robot.forward_kinematics(q))
    lines = {ln.get_label(): ln for ln in ax.lines}
    joints = np.array(lines["joints"].get_data_3d()).T
    np.testing.assert_allclose(joints, poses[1:3, :3, 3], rtol=1e-12, atol=1e-12)
    base = np.array(lines["floating base"].get_data_3d()).T
    np.testing.assert_allclose(base[0], q[:3], rtol=1e-12)
    links = np.array(lines["links"].get_data_3d()).T
    links = links[~np.isnan(links).any(axis=1)]
    assert not np.any(np.all(np.abs(links) < 1e-9, axis=1))  # nothing at the world origin
    assert "base at (2, -1, 0.5) m" in ax.get_title()
