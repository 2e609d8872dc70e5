"""A 3-D view of a robot in the browser (the ``view`` extra: Viser, trimesh, pycollada).

- :func:`show` / ``Robot.show(q)`` / ``robodyn view ROBOT``: the robot on a local server bound to
  127.0.0.1, its URDF's meshes and shapes posed by ``forward_kinematics``, with joint sliders
  and toggles for link frames, joint axes, centres of mass and inertia boxes (a
  ``ConstrainedRobot``'s loop constraints and a robot's springs too: :mod:`.elements`);
- :func:`show_result` / ``SimulationResult.show()`` / ``robodyn simulate ... --view``: a
  playback with a time slider, play, speed and loop, the reference as a ghost, the
  end-effector path as a line;
- :func:`save_html` / ``SimulationResult.save_html(path)`` / ``robodyn simulate ... --html``:
  the same playback as one self-contained HTML file.

See docs/view.md.
"""

from __future__ import annotations

from .live import Viewer, serve, show
from .meshes import MeshError, MeshWarning, load_mesh, resolve, search_path
from .model import RobotGeometry, inertia_box
from .playback import Playback, save_html, show_result
from .visuals import Visual, read_visuals

__all__ = ["Viewer", "Playback", "show", "show_result", "save_html", "serve", "MeshError",
           "MeshWarning", "load_mesh", "resolve", "search_path", "RobotGeometry", "inertia_box",
           "Visual", "read_visuals"]
