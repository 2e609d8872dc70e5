"""A robot in a Viser scene: one frame node per link, its shapes as children, and the overlays
(link frames, joint axes, centres of mass, inertia boxes) that the GUI's toggles show."""

from __future__ import annotations

import numpy as np

__all__ = ["RobotScene", "wxyz", "camera_for"]

_AXIS_COLOR = (220, 0, 220)
_COM_COLOR = (20, 90, 230)
_BOX_COLOR = (240, 150, 20)


def wxyz(R):
    """Quaternions (..., 4) w, x, y, z of rotation matrices (..., 3, 3)."""
    import viser.transforms as vtf

    return np.asarray(vtf.SO3.from_matrix(np.asarray(R, dtype=np.float64)).wxyz)


def _rgb(rgba):
    return tuple(int(round(255 * c)) for c in rgba[:3])


def camera_for(lo, hi):
    """``(position, look_at)`` of a camera that frames the box [lo, hi] (z up), seen from the
    front-right and above, at 1.7 times the box's half diagonal."""
    centre = 0.5 * (lo + hi)
    radius = max(0.5 * float(np.linalg.norm(hi - lo)), 0.1)
    direction = np.array([1.0, -0.8, 0.6])
    return centre + 1.7 * radius * direction / np.linalg.norm(direction), centre


class RobotScene:
    """The nodes of ``geometry`` (:class:`robodyn.view.model.RobotGeometry`) under ``prefix``
    in ``server``'s scene. ``ghost``: every shape half transparent and grey (a reference)."""

    def __init__(self, server, robot, geometry, prefix="/robot", ghost=False, overlays=True):
        self.server, self.robot, self.geo = server, robot, geometry
        scene = server.scene
        self.frames = []
        self._last = None
        self.overlays = {"frames": [], "axes": [], "com": [], "inertia": []}
        opacity = 0.35 if ghost else None
        self.scale = scale = self._scale()
        for k, name in enumerate(geometry.names):
            frame = scene.add_frame(f"{prefix}/{k}_{_safe(name)}", show_axes=False,
                                    axes_length=scale, axes_radius=scale / 20)
            self.frames.append(frame)
            for j, p in enumerate(geometry.parts[k]):
                self._part(f"{frame.name}/v{j}", p, ghost, opacity)
        if not overlays:
            return
        has_shapes = any(geometry.parts)
        for i in range(len(geometry.mass)):
            base = self.frames[i].name
            self.overlays["frames"].append(scene.add_frame(
                f"{base}/frame", axes_length=scale, axes_radius=scale / 25, visible=False))
            axis = geometry.axes[i]
            if np.any(axis):
                seg = np.array([[-axis, axis]]) * 1.5 * scale
                self.overlays["axes"].append(scene.add_line_segments(
                    f"{base}/axis", seg, _AXIS_COLOR, thickness=scale / 12, visible=False))
            if geometry.mass[i] > 0:
                self.overlays["com"].append(scene.add_icosphere(
                    f"{base}/com", radius=scale / 6, color=_COM_COLOR,
                    position=geometry.com[i], visible=False))
                if np.any(geometry.box[i] > 0):
                    self.overlays["inertia"].append(scene.add_box(
                        f"{base}/inertia", color=_BOX_COLOR,
                        dimensions=tuple(np.maximum(geometry.box[i], 1e-4)),
                        opacity=None if not has_shapes else 0.5,
                        wxyz=wxyz(geometry.box_R[i]), position=geometry.com[i],
                        visible=not has_shapes))

    def _scale(self):
        """A length for the overlays: a tenth of the robot's size at its zero pose."""
        q = neutral_configuration(self.robot)
        lo, hi = self.geo.bounds(self.robot, q)
        return max(0.1 * float(np.max(hi - lo)), 0.02)

    def _part(self, name, p, ghost, opacity):
        scene = self.server.scene
        color = (150, 150, 160) if ghost else _rgb(p.rgba)
        if p.rgba[3] < 1.0 and opacity is None:
            opacity = float(p.rgba[3])
        pose = {"wxyz": wxyz(p.origin[:3, :3]), "position": p.origin[:3, 3]}
        if p.kind == "box":
            scene.add_box(name, color=color, dimensions=p.dims, opacity=opacity, **pose)
        elif p.kind == "cylinder":
            scene.add_cylinder(name, radius=p.dims[0], height=p.dims[1], color=color,
                               opacity=opacity, **pose)
        elif p.kind == "sphere":
            scene.add_icosphere(name, radius=p.dims[0], color=color, opacity=opacity, **pose)
        else:
            scene.add_mesh_simple(name, p.vertices, p.faces, color=color, opacity=opacity,
                                  **pose)

    def show(self, kind, visible):
        """Show or hide one overlay: "frames", "axes", "com" or "inertia"."""
        for handle in self.overlays[kind]:
            handle.visible = bool(visible)

    def set_poses(self, T):
        """Pose every node: ``T`` (nodes, 4, 4) world poses (only the nodes that moved since
        the last call are sent)."""
        q = wxyz(T[:, :3, :3])
        moved = np.ones(len(self.frames), dtype=bool) if self._last is None else \
            np.any(np.abs(T - self._last) > 1e-12, axis=(1, 2))
        with self.server.atomic():
            for k in np.flatnonzero(moved):
                self.frames[k].wxyz = q[k]
                self.frames[k].position = T[k, :3, 3]
        self._last = np.array(T, copy=True)

    def set_q(self, q):
        """Pose the robot at configuration ``q`` (nq,)."""
        self.set_poses(self.geo.poses(self.robot, q)[0])


def _safe(name):
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)


def neutral_configuration(robot):
    """The configuration the viewer starts from: zeros clipped into the joint limits (a
    floating base at the origin, identity orientation)."""
    q = np.zeros(robot.nq)
    lo, hi = (np.asarray(x, dtype=float) for x in robot.position_limits)
    q = np.clip(q, np.where(np.isfinite(lo), lo, -np.inf), np.where(np.isfinite(hi), hi, np.inf))
    if robot.nq != robot.nv:
        q[:7] = [0, 0, 0, 0, 0, 0, 1]
    return q
