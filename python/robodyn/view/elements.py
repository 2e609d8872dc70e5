"""Loop constraints and force elements in the scene: where they attach, as points and lines.

- a loop constraint of a :class:`robodyn.ConstrainedRobot`: a small sphere at the world origin
  of its frame 1 and one at its frame 2, joined by a line (its length is the translational
  residual: zero when the loop is closed);
- a translational :class:`robodyn.Spring` of a robot with force elements: a line between its
  two attachment points.

The world positions come from ``robot.forward_kinematics`` (rows in ``robot.link_names``
order) times the attachment poses; a ``None`` body is the world (its pose or point is given in
world coordinates).
"""

from __future__ import annotations

import numpy as np

__all__ = ["split_system", "loop_points", "spring_points", "springs_of", "ElementsScene"]

LOOP_COLOR = (0, 200, 90)      # the loop constraints' spheres and lines (green)
SPRING_COLOR = (230, 200, 0)   # the springs' lines (yellow)


def split_system(obj):
    """``(robot, system)``: the tree robot and the :class:`robodyn.ConstrainedRobot` (None
    for a plain robot)."""
    if hasattr(obj, "constraints") and hasattr(obj, "robot") and hasattr(obj, "residual"):
        return obj.robot, obj
    return obj, None


def _link_poses(robot, Q):
    Q = np.ascontiguousarray(np.atleast_2d(Q), dtype=np.float64)
    fk = np.asarray(robot.forward_kinematics(Q), dtype=np.float64)
    return fk.reshape(Q.shape[0], -1, 4, 4)


def _origin(fk, links, body, pose):
    """(F, 3) world origins of ``pose`` (4, 4) fixed to link ``body`` (name, index or None)."""
    pose = np.asarray(pose, dtype=np.float64)
    if body is None:
        return np.broadcast_to(pose[:3, 3], (fk.shape[0], 3))
    k = links.index(body) if isinstance(body, str) else int(body)
    return fk[:, k, :3, :3] @ pose[:3, 3] + fk[:, k, :3, 3]


def loop_points(system, Q):
    """(F, n, 2, 3): for each configuration of Q (F, nq) or q (nq,) and each of the n loop
    constraints of ``system``, the world origins of frame 1 and frame 2."""
    robot = system.robot
    fk = _link_poses(robot, Q)
    links = list(robot.link_names)
    out = np.zeros((fk.shape[0], len(system.constraints), 2, 3))
    for i, c in enumerate(system.constraints):
        out[:, i, 0] = _origin(fk, links, c.body1, c.frame1)
        out[:, i, 1] = _origin(fk, links, c.body2, c.frame2)
    return out


def springs_of(robot):
    """The translational springs of ``robot`` (its ``forces``; none for a rigid robot)."""
    from ..model.forces.elements import Spring

    return [f for f in getattr(robot, "forces", ()) if isinstance(f, Spring)]


def spring_points(robot, Q):
    """(F, n, 2, 3): for each configuration of Q (F, nq) or q (nq,) and each of the n
    translational springs of ``robot``, the world positions of point 1 and point 2."""
    fk = _link_poses(robot, Q)
    links = list(robot.link_names)
    springs = springs_of(robot)
    out = np.zeros((fk.shape[0], len(springs), 2, 3))
    for i, s in enumerate(springs):
        for j, (body, point) in enumerate(((s.body1, s.point1), (s.body2, s.point2))):
            pose = np.eye(4)
            pose[:3, 3] = point
            out[:, i, j] = _origin(fk, links, body, pose)
    return out


class ElementsScene:
    """The loop constraints of ``system`` (or None) and the springs of ``robot`` in
    ``server``'s scene; ``kinds`` lists what it draws ("loops", "springs"); :meth:`set_q`
    moves them, :meth:`show` toggles one kind."""

    def __init__(self, server, robot, system, scale):
        self.server, self.robot, self.system = server, robot, system
        self.handles = {"loops": [], "springs": []}
        self._spheres = []
        self._lines = {}
        self.has_springs = bool(springs_of(robot))
        scene = server.scene
        if system is not None and system.constraints:
            for i, c in enumerate(system.constraints):
                pair = [scene.add_icosphere(f"/loops/{i}/{j}", radius=scale / 4,
                                            color=LOOP_COLOR) for j in (1, 2)]
                self._spheres.append(pair)
                self.handles["loops"] += pair
            self._lines["loops"] = scene.add_line_segments(
                "/loops/lines", np.zeros((len(system.constraints), 2, 3)), LOOP_COLOR,
                thickness=scale / 10)
            self.handles["loops"].append(self._lines["loops"])
        if self.has_springs:
            n = len(springs_of(robot))
            self._lines["springs"] = scene.add_line_segments(
                "/springs/lines", np.zeros((n, 2, 3)), SPRING_COLOR, thickness=scale / 10)
            self.handles["springs"].append(self._lines["springs"])
        self.kinds = [k for k in ("loops", "springs") if self.handles[k]]

    def set_q(self, q):
        """Move the markers to configuration ``q`` (nq,)."""
        if not self.kinds:
            return
        with self.server.atomic():
            if "loops" in self.kinds:
                P = loop_points(self.system, q)[0]
                for (a, b), p in zip(self._spheres, P):
                    a.position, b.position = p[0], p[1]
                self._lines["loops"].points = P.astype(np.float32)
            if "springs" in self.kinds:
                self._lines["springs"].points = spring_points(self.robot, q)[0].astype(
                    np.float32)

    def show(self, kind, visible):
        """Show or hide the "loops" or the "springs"."""
        for handle in self.handles[kind]:
            handle.visible = bool(visible)
