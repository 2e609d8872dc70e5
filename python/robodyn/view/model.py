"""What the viewer draws of a robot, gathered once: independent of the browser library.

Every URDF link is a node posed by ``robot.forward_kinematics`` (a moving body's pose, a merged
link's :class:`robodyn.Frame` pose, or the fixed base at the identity); each node carries its
visuals (meshes read by :mod:`robodyn.view.meshes`, primitive shapes, a box for a missing
mesh). Each moving body also has its joint axis (in its own frame), its centre of mass and its
inertia box: the box of uniform density with the body's mass and principal moments,
``a = sqrt(6 (I2 + I3 - I1) / m)`` along the principal axis of ``I1`` and so on.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from .meshes import MESH_MAX_BYTES, MeshWarning, load_mesh, resolve
from .visuals import DEFAULT_RGBA, read_visuals

__all__ = ["Part", "RobotGeometry", "inertia_box", "robot_source"]

MISSING_BOX = 0.05  # edge (m) of the box drawn for a missing mesh


@dataclass
class Part:
    """One shape on a link node: ``kind`` "box" (``dims`` edges), "cylinder" (``dims`` =
    radius, length), "sphere" (``dims`` = radius) or "mesh" (``vertices`` (k, 3) already
    scaled, ``faces`` (m, 3));
    ``origin`` (4, 4) in the node's frame; ``rgba`` in [0, 1]."""

    kind: str
    origin: np.ndarray
    rgba: tuple
    dims: tuple = ()
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None

    def points(self):
        """(k, 3) points bounding the part in the node frame (mesh vertices or box corners)."""
        if self.kind == "mesh":
            local = self.vertices
        else:
            if self.kind == "box":
                half = np.asarray(self.dims, dtype=float) / 2
            elif self.kind == "cylinder":
                half = np.array([self.dims[0], self.dims[0], self.dims[1] / 2])
            else:
                half = np.full(3, self.dims[0])
            local = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1)
                              for sz in (-1, 1)]) * half
        return local @ self.origin[:3, :3].T + self.origin[:3, 3]


def inertia_box(mass, inertia):
    """``(dims (3,), R (3, 3))``: the edges of the uniform-density box with ``mass`` and the
    rotational inertia ``inertia`` (about the centre of mass), along its principal axes
    (columns of R). An edge that would be imaginary (a non-physical inertia) is zero."""
    moments, R = np.linalg.eigh(0.5 * (inertia + inertia.T))
    if mass <= 0.0:
        return np.zeros(3), R
    I1, I2, I3 = moments
    sq = np.array([I2 + I3 - I1, I1 + I3 - I2, I1 + I2 - I3]) * 6.0 / mass
    if np.linalg.det(R) < 0:
        R[:, 2] = -R[:, 2]
    return np.sqrt(np.clip(sq, 0.0, None)), R


def _mesh_rgba(mesh):
    """The main colour a mesh file gives itself (a COLLADA or OBJ material), or None."""
    visual = mesh.visual
    color = None
    if getattr(visual, "kind", None) in ("face", "vertex"):
        color = visual.main_color
    elif getattr(visual, "material", None) is not None:
        color = getattr(visual.material, "main_color", None)
    if color is None:
        return None
    rgba = tuple(float(c) / 255.0 for c in np.asarray(color).reshape(-1)[:4])
    return rgba if len(rgba) == 4 else None


def robot_source(name_or_path):
    """The URDF (or .xacro) path of a robot name (:func:`robodyn.robots.names`) or a path;
    None for a name without a file."""
    from ..io import robots

    text = os.fspath(name_or_path)
    if os.path.isfile(text):
        return text
    try:
        if text in robots.available(floating=True):
            return str(robots.urdf_path(text))
        if text in robots.EXAMPLE_ROBOTS:
            path = robots.example_robot_data_urdf(text)
            return None if path is None else str(path)
    except (ValueError, FileNotFoundError):
        return None
    return None


@dataclass
class RobotGeometry:
    """The nodes of a robot and what each carries (module documentation).

    ``names[k]`` the URDF link of node k, ``index[k]`` its row in the poses
    ``forward_kinematics`` returns (-1: the fixed base); ``parts[k]`` its shapes; ``bodies``
    the node of each moving body; ``axes`` (n, 3) joint axes (zero for the free-flyer),
    ``com`` (n, 3), ``mass`` (n,), ``box`` (n, 3) inertia box edges, ``box_R`` (n, 3, 3)."""

    names: list
    index: np.ndarray
    parts: list
    axes: np.ndarray
    com: np.ndarray
    mass: np.ndarray
    box: np.ndarray
    box_R: np.ndarray
    floating: bool
    source: str | None = None
    warnings: list = field(default_factory=list)

    @classmethod
    def build(cls, robot, source=None, package_path=(), xacro_args=None, xacro_env=False,
              max_mesh_bytes=MESH_MAX_BYTES):
        """Gather the geometry of ``robot`` with the visuals of the URDF ``source`` (a path;
        None: the inertia boxes stand for the links). Missing meshes are
        :class:`robodyn.view.meshes.MeshWarning` (also kept in ``warnings``); refused ones
        raise :class:`robodyn.view.meshes.MeshError`."""
        spec = robot.spec
        n = len(spec.bodies)
        names = [b.name for b in spec.bodies] + [f.name for f in spec.frames]
        index = list(range(len(names)))
        floating = bool(spec.bodies) and spec.bodies[0].joint_type == "floating"
        if not floating and spec.base_name not in names:
            names.append(spec.base_name)
            index.append(-1)
        axes = np.array([np.zeros(3) if b.joint_type == "floating" else
                         np.asarray(b.axis, dtype=float) for b in spec.bodies]).reshape(n, 3)
        com = np.array([np.asarray(b.com, dtype=float) for b in spec.bodies]).reshape(n, 3)
        mass = np.array([float(b.mass) for b in spec.bodies])
        boxes = [inertia_box(b.mass, np.asarray(b.inertia, dtype=float)) for b in spec.bodies]
        geo = cls(names=names, index=np.array(index), parts=[[] for _ in names], axes=axes,
                  com=com, mass=mass, box=np.array([d for d, _ in boxes]).reshape(n, 3),
                  box_R=np.array([R for _, R in boxes]).reshape(n, 3, 3), floating=floating,
                  source=None if source is None else os.fspath(source))
        if source is not None:
            geo._read(source, package_path, xacro_args, xacro_env, max_mesh_bytes)
        return geo

    def _read(self, source, package_path, xacro_args, xacro_env, max_mesh_bytes):
        visuals = read_visuals(source, xacro_args=xacro_args, xacro_env=xacro_env)
        base_dir = os.path.dirname(os.path.abspath(os.fspath(source)))
        node = {name: k for k, name in enumerate(self.names)}
        cache = {}
        for link, items in visuals.items():
            if link not in node:
                continue
            for v in items:
                rgba = v.rgba or DEFAULT_RGBA
                if v.kind != "mesh":
                    dims = {"box": tuple(v.size), "cylinder": (v.radius, v.length),
                            "sphere": (v.radius,)}[v.kind]
                    self.parts[node[link]].append(Part(v.kind, v.origin, rgba, dims))
                    continue
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", MeshWarning)
                    path = resolve(v.filename, base_dir, package_path)
                for w in caught:
                    self.warnings.append(str(w.message))
                    warnings.warn(w.message, MeshWarning, stacklevel=3)
                if path is None:
                    self.parts[node[link]].append(Part("box", v.origin, rgba,
                                                       (MISSING_BOX,) * 3))
                    continue
                key = (os.path.realpath(path), tuple(v.scale))
                if key not in cache:
                    mesh = load_mesh(path, max_mesh_bytes).copy()
                    mesh.apply_scale(v.scale)
                    cache[key] = mesh
                mesh = cache[key]
                if v.rgba is None:
                    rgba = _mesh_rgba(mesh) or rgba
                self.parts[node[link]].append(Part(
                    "mesh", v.origin, rgba, vertices=np.asarray(mesh.vertices, dtype=np.float32),
                    faces=np.asarray(mesh.faces, dtype=np.uint32)))

    def poses(self, robot, Q):
        """(F, nodes, 4, 4) world poses of the nodes for each configuration in Q (F, nq)."""
        Q = np.ascontiguousarray(np.atleast_2d(Q), dtype=np.float64)
        fk = np.asarray(robot.forward_kinematics(Q), dtype=np.float64).reshape(
            Q.shape[0], -1, 4, 4)
        out = np.broadcast_to(np.eye(4), (Q.shape[0], len(self.names), 4, 4)).copy()
        moving = self.index >= 0
        out[:, moving] = fk[:, self.index[moving]]
        return out

    def bounds(self, robot, q):
        """``(lo, hi)``: the world-axis bounding box of the robot at ``q`` (its shapes, or its
        body origins and inertia boxes when it has none)."""
        T = self.poses(robot, q)[0]
        pts = [T[:, :3, 3]]
        for k, parts in enumerate(self.parts):
            for p in parts:
                local = p.points()
                pts.append(local @ T[k, :3, :3].T + T[k, :3, 3])
        for i in range(len(self.mass)):
            half = self.box[i] / 2
            corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1)
                                for sz in (-1, 1)]) * half
            local = corners @ self.box_R[i].T + self.com[i]
            pts.append(local @ T[i, :3, :3].T + T[i, :3, 3])
        pts = np.vstack(pts)
        return pts.min(axis=0), pts.max(axis=0)
