"""Animations: `SimulationResult.animate` and `robodyn simulate --animate`, fixed and floating
robots, and the GIF writer under them (frames written as they are drawn)."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("PIL")

from _cli import HOPPER_URDF, colour_pixels, gif_frames, run_cli, stderr_lines  # noqa: E402

import robodyn  # noqa: E402
from robodyn.sim._gif import GifWriter, frame_delay_ms  # noqa: E402

LINK = (64, 64, 64)


def _changed(a, b):
    """Fraction of the pixels that differ between two frames."""
    return float(np.mean(np.any(a != b, axis=-1)))


def test_animate_a_floating_seed_system(tmp_path):
    """res.animate of a floating result (Lynch's satellite, its initial tumble) writes a GIF
    whose frames show the robot (its links' grey) and move: consecutive frames differ, the
    last from the first by more."""
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    res = robodyn.simulate(robot, None, q0=q0, qd0=v0, duration=1.0, dt=0.01)
    path = res.animate(tmp_path / "sat.gif", fps=10)
    frames = gif_frames(path)
    assert len(frames) == 11  # 1 s at 10 frames per second, both ends
    for frame in frames:
        assert colour_pixels(frame, LINK, tol=12) > 100
    assert all(_changed(a, b) > 1e-3 for a, b in zip(frames, frames[1:]))
    assert _changed(frames[0], frames[-1]) > 5e-3


def test_animate_a_floating_robot_under_gravity(tmp_path):
    """A floating URDF robot falling under gravity (no ground): the drawing follows it down
    (the frames differ) and the GIF is complete."""
    urdf = tmp_path / "hopper.urdf"
    urdf.write_text(HOPPER_URDF)
    robot = robodyn.load_urdf(str(urdf), floating_base=True)
    q0 = np.zeros(robot.nq)
    q0[6] = 1.0
    res = robodyn.simulate(robot, None, q0=q0, qd0=np.r_[0, 0, 0, 0, 0, 0, 2.0],
                           duration=0.5, dt=0.01)
    frames = gif_frames(res.animate(tmp_path / "fall.gif", fps=8))
    assert len(frames) == 5 and _changed(frames[0], frames[-1]) > 5e-3


def test_simulate_floating_animate_from_the_command_line(tmp_path):
    """`robodyn simulate lynch_satellite --animate sat.gif` writes the GIF and says so; with
    --quiet it says nothing at all on stdout."""
    gif = tmp_path / "sat.gif"
    proc = run_cli("simulate", "lynch_satellite", "--duration", "0.5", "--animate", gif,
                   "--fps", "10")
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {gif}" in proc.stdout.splitlines()
    frames = gif_frames(gif)
    assert len(frames) == 6 and _changed(frames[0], frames[-1]) > 5e-3
    quiet = tmp_path / "quiet.gif"
    proc = run_cli("simulate", "lynch_satellite", "--duration", "0.5", "--animate", quiet,
                   "--fps", "10", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and stderr_lines(proc) == []
    assert len(gif_frames(quiet)) == 6


def test_gif_writer_frames_read_back_as_drawn(tmp_path, rng):
    """The writer's frames, decoded by pillow's reader (an independent decoder), are the frames
    given: exactly, for frames in a few colours (one palette, no dithering), including a
    repeated frame and a frame that differs in one corner; the delay is fps's."""
    from PIL import Image

    colours = np.array([[255, 255, 255], [64, 64, 64], [255, 0, 0], [0, 128, 0], [0, 0, 255]],
                       dtype=np.uint8)
    frames = [colours[rng.integers(0, 5, size=(60, 80))] for _ in range(3)]
    frames.append(frames[-1].copy())       # a repeated frame
    last = frames[-1].copy()
    last[55:, 70:] = colours[2]            # a change in one corner only
    frames.append(last)
    path = tmp_path / "w.gif"
    with GifWriter(path, fps=25) as gif:
        for f in frames:
            gif.add(f)
    assert gif.frames == 5
    back = gif_frames(path)
    assert len(back) == 5
    for f, b in zip(frames, back):
        np.testing.assert_array_equal(b, f)
    with Image.open(path) as im:
        assert im.info["duration"] == 40 and im.info.get("loop") == 0
    assert frame_delay_ms(25) == 40 and frame_delay_ms(200) == 20 and frame_delay_ms(30) == 30


def test_gif_writer_removes_a_partial_file(tmp_path):
    path = tmp_path / "broken.gif"
    with pytest.raises(ValueError, match="size"):
        with GifWriter(path, fps=10) as gif:
            gif.add(np.zeros((10, 10, 3), dtype=np.uint8))
            gif.add(np.zeros((12, 10, 3), dtype=np.uint8))
    assert not path.exists()


def test_animate_draws_each_frame_once(tmp_path, monkeypatch):
    """The figure is drawn in full once (axes, panes, legend); each frame redraws only the
    moving artists over that background (blitting)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    robot = robodyn.robots.stanford_arm()
    ref = robodyn.trajectories.stanford_demo(0.4, robot=robot)
    res = robodyn.simulate(robot, robodyn.control.ComputedTorque(robot), ref, duration=0.4)
    draws = []
    original = FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw",
                        lambda self, *a, **k: (draws.append(1), original(self, *a, **k))[1])
    frames = gif_frames(res.animate(tmp_path / "arm.gif", fps=20))
    assert len(frames) == 9 and len(draws) == 1
    assert _changed(frames[0], frames[-1]) > 5e-3
