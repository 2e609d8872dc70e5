"""Playing a simulation back: live on the local server (a time slider, play, speed, loop) or as
one self-contained HTML file (Viser's client with the recorded scene inside).

The robot is posed by ``forward_kinematics`` at each sample (a floating base moves with its
free-flyer coordinates); the reference ``q_ref``, when the result has one of the robot's size,
is a grey half-transparent ghost; the end-effector path (the origin of the deepest link of the
tree, or ``ee=`` a link name) is a line; loop constraints (``robot=`` a ConstrainedRobot) and
springs move with the robot.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from .live import Viewer, serve
from .scene import RobotScene

__all__ = ["Playback", "show_result", "save_html", "recorded_html"]

SPEEDS = ("0.25", "0.5", "1", "2", "4")
MAX_PATH_POINTS = 1000  # samples of the end-effector line


def _robot_of(result, robot=None):
    """The robot to draw: ``robot`` (a Robot or a ConstrainedRobot) or the result's (the
    constrained system of a constrained run)."""
    if robot is not None:
        return robot
    robot = getattr(result, "system", None) or getattr(result, "robot", None)
    if robot is None:
        raise ValueError("result: it has no robot (a result built by hand): pass robot=")
    return robot


def _end_effector(geometry, robot, ee):
    """The node of link ``ee`` or, by default, of the deepest moving body (the last one of
    equal depth)."""
    if ee is not None:
        if ee not in geometry.names:
            raise ValueError(f"ee: no link {ee!r} (links: {', '.join(geometry.names)})")
        return geometry.names.index(ee)
    parents = [b.parent for b in robot.spec.bodies]
    depth = []
    for p in parents:
        depth.append(0 if p < 0 else depth[p] + 1)
    return int(np.flatnonzero(np.array(depth) == max(depth))[-1])


class _Motion:
    """The poses of a result, computed once: ``T`` (N, nodes, 4, 4) of the robot, ``T_ref`` of
    the reference (or None), ``path`` (k, 3) of the end effector."""

    def __init__(self, result, robot, geometry, ee):
        self.t = np.asarray(result.t, dtype=float)
        q = np.asarray(result.q, dtype=float)
        if q.ndim != 2 or q.shape[1] != robot.nq or q.shape[0] != self.t.shape[0]:
            raise ValueError(f"result: q has shape {q.shape}, expected ({self.t.shape[0]}, "
                             f"{robot.nq})")
        self.q = q
        self.T = geometry.poses(robot, q)
        ref = getattr(result, "q_ref", None)
        self.T_ref = None
        if ref is not None and np.shape(ref) == q.shape and np.all(np.isfinite(ref)):
            self.T_ref = geometry.poses(robot, np.asarray(ref, dtype=float))
        node = _end_effector(geometry, robot, ee)
        step = max(1, self.t.shape[0] // MAX_PATH_POINTS)
        self.path = self.T[::step, node, :3, 3]

    def bounds(self, robot, geometry, result):
        """The box holding the robot at the first, middle and last samples."""
        q = np.asarray(result.q, dtype=float)
        boxes = [geometry.bounds(robot, q[k]) for k in sorted({0, len(q) // 2, len(q) - 1})]
        return (np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0))

    def index(self, t):
        """The sample shown at time ``t`` (the last one at or before it)."""
        return int(np.clip(np.searchsorted(self.t, t, side="right") - 1, 0, len(self.t) - 1))


def _add_motion_scene(viewer, motion, result):
    """The ghost and the end-effector path in ``viewer``'s scene, the camera on the motion."""
    viewer.frame(*motion.bounds(viewer.robot, viewer.geometry, result))
    ghost = None
    if motion.T_ref is not None:
        ghost = RobotScene(viewer.server, viewer.robot, viewer.geometry, prefix="/reference",
                           ghost=True, overlays=False)
        ghost.set_poses(motion.T_ref[0])
    if motion.path.shape[0] > 1:
        seg = np.stack([motion.path[:-1], motion.path[1:]], axis=1)
        viewer.server.scene.add_line_segments("/ee_path", seg, (230, 60, 40),
                                              thickness=viewer.scene.scale / 15)
    return ghost


class Playback:
    """A result on the local server (:class:`robodyn.view.live.Viewer`'s scene and toggles)
    with a time slider, a play checkbox, a speed and a loop checkbox. ``robot``: the robot
    drawn (default the result's); a :class:`robodyn.ConstrainedRobot` draws its loop
    constraints too (a constrained run's result holds the tree robot only)."""

    def __init__(self, result, *, robot=None, ee=None, **viewer_args):
        self.viewer = Viewer(_robot_of(result, robot), np.asarray(result.q)[0], sliders=False,
                             **viewer_args)
        self.motion = _Motion(result, self.viewer.robot, self.viewer.geometry, ee)
        self.ghost = _add_motion_scene(self.viewer, self.motion, result)
        gui = self.viewer.server.gui
        t = self.motion.t
        with gui.add_folder("Playback"):
            self.time = gui.add_slider("time (s)", min=float(t[0]), max=float(max(t[-1], t[0] +
                                       1e-9)), step=max(float(t[-1] - t[0]) / 1000, 1e-6),
                                       initial_value=float(t[0]))
            self.playing = gui.add_checkbox("play", initial_value=True)
            self.speed = gui.add_dropdown("speed", SPEEDS, initial_value="1")
            self.loop = gui.add_checkbox("loop", initial_value=True)
        self.time.on_update(lambda _: self.show_time(self.time.value))
        self.url = self.viewer.url
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def show_time(self, t):
        """Pose the robot (and the ghost) at the sample of time ``t``."""
        k = self.motion.index(t)
        self.viewer.pose(self.motion.q[k], self.motion.T[k])
        if self.ghost is not None:
            self.ghost.set_poses(self.motion.T_ref[k])

    def _run(self):
        t0, t1 = float(self.motion.t[0]), float(self.motion.t[-1])
        last = time.monotonic()
        while not self._stop.wait(1 / 30):
            now = time.monotonic()
            if self.playing.value and t1 > t0:
                t = self.time.value + (now - last) * float(self.speed.value)
                if t > t1:
                    t = t0 if self.loop.value else t1
                    if not self.loop.value:
                        self.playing.value = False
                self.time.value = t
            last = now

    def close(self):
        """Stop the playback thread and the server."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.viewer.close()


def show_result(result, *, seconds=None, **kwargs):
    """Play ``result`` back in the browser (:class:`Playback`) until Ctrl-C (or ``seconds``).
    Returns the :func:`robodyn.view.live.serve` reason."""
    playback = Playback(result, **kwargs)
    return serve(playback, seconds, say=lambda url: print(f"robodyn view: {url} (Ctrl-C stops)",
                                                        flush=True))


def recorded_html(result, *, robot=None, ee=None, fps=30.0, **viewer_args):
    """The text of the self-contained HTML page of ``result`` (:func:`save_html`)."""
    if not (isinstance(fps, (int, float)) and 0 < fps <= 240):
        raise ValueError(f"fps: expected a number in (0, 240], got {fps!r}")
    viewer = Viewer(_robot_of(result, robot), np.asarray(result.q)[0], sliders=False,
                    **viewer_args)
    try:
        motion = _Motion(result, viewer.robot, viewer.geometry, ee)
        ghost = _add_motion_scene(viewer, motion, result)
        viewer.pose(motion.q[0], motion.T[0])
        recorder = viewer.server.get_scene_serializer()
        t0, t1 = float(motion.t[0]), float(motion.t[-1])
        frames = max(1, int(np.floor((t1 - t0) * fps)) + 1)
        shown = None
        for f in range(frames):
            k = motion.index(t0 + f / fps)
            if k != shown:
                viewer.pose(motion.q[k], motion.T[k])
                if ghost is not None:
                    ghost.set_poses(motion.T_ref[k])
                shown = k
            recorder.insert_sleep(1.0 / fps)
        return recorder.as_html()
    finally:
        viewer.close()


def save_html(result, path, **kwargs):
    """Write ``result``'s playback to ``path``: one HTML file holding Viser's client, the
    scene, the meshes and the motion sampled at ``fps`` frames per simulated second (default
    30), fetching nothing when opened (offline, from a file). It plays in a loop, with a time
    slider, pause and a speed. Returns the path."""
    html = recorded_html(result, **kwargs)
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
