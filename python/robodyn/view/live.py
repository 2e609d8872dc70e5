"""The local server: a robot in the browser with joint sliders and overlay toggles.

The server is Viser's, bound to 127.0.0.1 only, on a free port (or the one asked for). Its page
is Viser's client, shipped inside the viser wheel as one HTML file: nothing is fetched from the
network when the page opens.
"""

from __future__ import annotations

import contextlib
import io
import math
import signal
import socket
import threading
import time

import numpy as np

from .elements import ElementsScene, split_system
from .model import RobotGeometry, robot_source
from .scene import RobotScene, neutral_configuration, camera_for

__all__ = ["Viewer", "show", "serve", "start_server", "free_port", "require"]

HOST = "127.0.0.1"
_TOGGLES = (("frames", "Link frames"), ("axes", "Joint axes"), ("com", "Centres of mass"),
            ("inertia", "Inertia boxes"))
_ELEMENT_TOGGLES = (("loops", "Loop constraints"), ("springs", "Force elements"))


def free_port():
    """A TCP port free on 127.0.0.1 now (the system's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def require():
    """Raise ImportError (naming the ``view`` extra) unless viser and trimesh import."""
    try:
        import trimesh  # noqa: F401
        import viser  # noqa: F401
    except ImportError as e:
        raise ImportError(f"the 3-D view needs viser and trimesh ({e}): pip install "
                          "robodyn[view]") from None


def start_server(port=None):
    """A ``viser.ViserServer`` on 127.0.0.1 (``port``, default a free one), its banner
    silenced; ``server.get_port()`` is the port it took."""
    require()
    import viser

    if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                             or not 0 < port < 65536):
        raise ValueError(f"port: expected an integer in 1..65535, got {port!r}")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        server = viser.ViserServer(host=HOST, port=free_port() if port is None else port,
                                   verbose=False)
    server.scene.set_up_direction("+z")
    return server


def _slider_range(j, lo, hi, prismatic):
    """Slider bounds of coordinate j: its limits where finite, else +-pi rad or +-1 m."""
    span = 1.0 if prismatic else math.pi
    a = float(lo[j]) if np.isfinite(lo[j]) else -span
    b = float(hi[j]) if np.isfinite(hi[j]) else span
    return (a, b) if b > a else (a - span, a + span)


class Viewer:
    """A robot on a local Viser server (``url``), posed at ``q``, with a slider per joint (a
    floating base stays where ``q`` puts it) and toggles for the overlays.

    ``robot``: a :class:`robodyn.Robot` (its springs drawn as lines when it has force
    elements) or a :class:`robodyn.ConstrainedRobot` (its loop constraints drawn too; ``q``
    by default the neutral configuration with the loops closed where ``assemble`` can);
    ``self.robot`` is the tree robot, ``self.system`` the constrained one or None.

    ``urdf``: the URDF (or .xacro) whose ``<visual>`` shapes and meshes are drawn (default: the
    file of a bundled or example-robot-data robot of that name; without one the inertia boxes
    stand for the links). ``package_path``: more folders for ``package://`` meshes
    (:mod:`robodyn.view.meshes`). ``sliders=False``: no joint sliders (a playback)."""

    def __init__(self, robot, q=None, *, urdf=None, package_path=(), port=None, xacro_args=None,
                 xacro_env=False, sliders=True, geometry=None):
        robot, self.system = split_system(robot)
        self.robot = robot
        if urdf is None:
            urdf = robot_source(robot.name)
        self.geometry = geometry or RobotGeometry.build(robot, urdf, package_path,
                                                        xacro_args=xacro_args,
                                                        xacro_env=xacro_env)
        self.q = self._start(q)
        self.server = start_server(port)
        self.url = f"http://{HOST}:{self.server.get_port()}/"
        self.scene = RobotScene(self.server, robot, self.geometry)
        self.elements = ElementsScene(self.server, robot, self.system, self.scene.scale)
        self.frame(*self.geometry.bounds(robot, self.q))
        self._toggles()
        self.sliders = self._sliders() if sliders else []
        self.pose(self.q)

    def _start(self, q):
        if q is not None:
            return _configuration(self.robot, q)
        q = neutral_configuration(self.robot)
        if self.system is not None and self.system.rows:
            from ..constraints.assembly import AssemblyError, assemble
            try:
                q = assemble(self.system, q)
            except (AssemblyError, ValueError):
                pass  # drawn open: the lines show the residual
        return q

    def pose(self, q, T=None):
        """Pose the robot, the loop constraints and the springs at ``q`` (``T``: the nodes'
        poses when already computed)."""
        if T is None:
            self.scene.set_q(q)
        else:
            self.scene.set_poses(T)
        self.elements.set_q(q)

    def frame(self, lo, hi):
        """Aim the initial camera at the box [lo, hi] (world axes) and lay the ground grid
        under it."""
        self.camera = camera_for(lo, hi)
        self.server.initial_camera.position, self.server.initial_camera.look_at = self.camera
        self.server.initial_camera.up = (0.0, 0.0, 1.0)
        size = float(2 ** np.ceil(np.log2(max(2.0 * float(np.max(hi - lo)), 1.0))))
        centre = np.round(0.5 * (lo + hi), 1)
        self.server.scene.add_grid("/grid", width=size, height=size, cell_size=size / 16,
                                   position=(centre[0], centre[1], min(0.0, float(lo[2]))))

    def _toggles(self):
        with self.server.gui.add_folder("Show"):
            for kind, label in _TOGGLES:
                box = self.server.gui.add_checkbox(
                    label, initial_value=kind == "inertia" and not any(self.geometry.parts))
                box.on_update(lambda _, kind=kind, box=box: self.scene.show(kind, box.value))
            for kind, label in _ELEMENT_TOGGLES:
                if kind in self.elements.kinds:
                    box = self.server.gui.add_checkbox(label, initial_value=True)
                    box.on_update(lambda _, kind=kind, box=box:
                                  self.elements.show(kind, box.value))

    def _sliders(self):
        robot = self.robot
        names = list(robot.joint_names)
        first = 7 if robot.nq != robot.nv else 0
        names = names[1:] if first else names
        lo, hi = (np.asarray(x, dtype=float) for x in robot.position_limits)
        spec = getattr(robot, "spec", None)
        kinds = {b.joint_name: b.joint_type for b in spec.bodies} if spec is not None else {}
        out = []
        with self.server.gui.add_folder("Joints"):
            for k, name in enumerate(names):
                j = first + k
                a, b = _slider_range(j, lo, hi, kinds.get(name) == "prismatic")
                value = float(np.clip(self.q[j], a, b))
                slider = self.server.gui.add_slider(name, min=a, max=b, step=(b - a) / 1000,
                                                    initial_value=value)
                slider.on_update(lambda _, j=j, s=slider: self.set_joint(j, s.value))
                out.append(slider)
        return out

    def set_joint(self, j, value):
        """Move coordinate ``j`` of q to ``value`` and redraw."""
        self.q = self.q.copy()
        self.q[j] = value
        self.pose(self.q)

    def set_q(self, q):
        """Pose the robot at ``q`` (nq,)."""
        self.q = _configuration(self.robot, q)
        self.pose(self.q)

    def close(self):
        """Stop the server."""
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.server.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _configuration(robot, q):
    q = np.asarray(q, dtype=float).reshape(-1)
    if q.shape[0] != robot.nq or not np.all(np.isfinite(q)):
        raise ValueError(f"q: expected {robot.nq} finite numbers, got shape {q.shape}")
    return q


def serve(viewer, seconds=None, say=None):
    """Keep ``viewer``'s server running until Ctrl-C, SIGTERM or ``seconds`` (if given) pass,
    then stop it; ``say(url)`` is called once it listens. Returns the reason: "interrupted",
    "terminated" or "timeout"."""
    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds >= 0):
        raise ValueError(f"seconds: expected a non-negative number, got {seconds!r}")
    stop = threading.Event()
    reason = ["timeout"]
    previous = None
    if threading.current_thread() is threading.main_thread():
        def on_term(signum, frame):
            reason[0] = "terminated"
            stop.set()
        previous = signal.signal(signal.SIGTERM, on_term)
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        if say is not None:  # inside: a Ctrl-C right after the address is printed stops cleanly
            say(viewer.url)
        while not stop.is_set():
            left = 0.5 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            stop.wait(min(left, 0.5))
    except KeyboardInterrupt:
        reason[0] = "interrupted"
    finally:
        viewer.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return reason[0]


def show(robot, q=None, *, urdf=None, package_path=(), port=None, seconds=None, **kwargs):
    """Show ``robot`` (a Robot or a ConstrainedRobot) at ``q`` in the browser
    (:class:`Viewer`): prints the page's address and serves it until Ctrl-C (or ``seconds``).
    Returns the :func:`serve` reason."""
    viewer = Viewer(robot, q, urdf=urdf, package_path=package_path, port=port, **kwargs)
    return serve(viewer, seconds, say=lambda url: print(f"robodyn view: {url} (Ctrl-C stops)",
                                                        flush=True))
