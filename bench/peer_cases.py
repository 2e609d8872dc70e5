"""The robots of the benchmark of peers (bench/peers.py): one URDF text per robot that every
library reads, the DH tables of the bundled robots, random states."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
import pathlib
import warnings
import xml.etree.ElementTree as ET

import numpy as np

QUANTITIES = ("id", "M", "fd", "g")
QUANTITY_NAMES = {"id": "inverse dynamics", "M": "mass matrix", "fd": "forward dynamics",
                  "g": "gravity torques"}
PEERS = ("pinocchio", "mujoco", "rtb")

# example-robot-data URDFs usable as ROBOT names (robodyn.robots, the one name resolver)
from robodyn.io.robots import EXAMPLE_ROBOTS, example_robot_data_urdf  # noqa: E402


class BenchError(RuntimeError):
    """A result that disagrees with robodyn's, or a model that cannot be built."""


# ---------------------------------------------------------------------------------------------
# models


@dataclasses.dataclass
class Case:
    """One robot: the robodyn Robot, the URDF text every library reads, and optionally a DH
    table for the Robotics Toolbox (rows of dicts theta, d, a, alpha, joint, mass, com,
    inertia, armature; ``dh_gravity`` is gravity in DH frame 0)."""

    name: str
    robot: object
    urdf: str
    dh: list | None = None
    dh_gravity: tuple | None = None
    notes: list = dataclasses.field(default_factory=list)

    @property
    def n(self):
        return self.robot.n


def strip_urdf(text):
    """The URDF reduced to what the rigid-body dynamics needs (see the module docstring)."""
    root = ET.fromstring(text)
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for joint in root.iter("joint"):
        for tag in ("dynamics", "mimic", "safety_controller", "calibration"):
            for e in joint.findall(tag):
                joint.remove(e)
        lim = joint.find("limit")
        for key in ("effort", "velocity") if lim is not None else ():
            try:
                ok = math.isfinite(float(lim.get(key, "0")))
            except ValueError:
                ok = False
            if not ok:
                lim.set(key, "1000")  # urdfdom (Pinocchio, MuJoCo) rejects inf
        if joint.get("type") == "continuous":
            joint.set("type", "revolute")
            lim = joint.find("limit")
            if lim is None:
                lim = ET.SubElement(joint, "limit")
            lim.set("lower", "-1000")
            lim.set("upper", "1000")
            lim.set("effort", lim.get("effort", "1000"))
            lim.set("velocity", lim.get("velocity", "1000"))
    for tag in ("transmission", "gazebo", "mujoco"):
        for e in root.findall(tag):
            root.remove(e)
    return ET.tostring(root, encoding="unicode")


def _make_urdf_tables():
    """robots/make_urdf.py of the source tree (the bundled robots' DH tables), or None."""
    here = pathlib.Path(__file__).resolve()
    for path in (here.parents[2] / "robots" / "make_urdf.py",):
        if path.is_file():
            spec = importlib.util.spec_from_file_location("_robodyn_make_urdf", path)
            mod = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(mod)
            except Exception:
                return None
            return mod
    return None


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y),
                              math.sin(y))
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _bundled_dh(name, gravity):
    """DH rows and gravity in DH frame 0 of a bundled robot, from robots/make_urdf.py."""
    mod = _make_urdf_tables()
    table = getattr(mod, name.upper(), None) if mod else None
    if table is None:
        return None, None
    rows = []
    for r in table["rows"]:
        typ, theta, d, a, alpha, mass, com, inertia, *_rest = r
        rows.append(dict(theta=theta, d=d, a=a, alpha=alpha, joint=typ, mass=mass,
                         com=np.array(com, dtype=float), inertia=np.diag(inertia),
                         armature=float(r[12]) if len(r) > 12 else 0.0))
    R0 = _rpy_matrix(table.get("base_rpy") or (0.0, 0.0, 0.0))
    return rows, tuple(R0.T @ np.asarray(gravity, dtype=float))


def load_case(name, strict=False, xacro_args=None, xacro_env=False):
    """A Case from a bundled robot name, ``ur5`` / ``panda`` (example-robot-data) or a URDF
    (or .xacro) path. Raises BenchError with the reason when the robot is not available.
    Mimic joints load as independent joints (as the peers load them); ``strict`` refuses a
    file that would load with warnings."""
    import robodyn
    from robodyn.io.sources import expand_xacro

    text = str(name)
    dh = dh_gravity = None
    if text in EXAMPLE_ROBOTS:
        path = example_robot_data_urdf(text)
        if path is None:
            raise BenchError(f"{text}: example-robot-data is not installed")
        source = path.read_text()
    elif text in robodyn.robots.available():
        source = robodyn.robots.urdf_path(text).read_text()
    else:
        path = pathlib.Path(text)
        if not path.is_file():
            raise BenchError(f"unknown robot {text!r}: give a robot name "
                             f"({', '.join(robodyn.robots.names())}) or a URDF file path")
        if text.endswith(".xacro"):
            source, _ = expand_xacro(text, xacro_args, xacro_env)
        else:
            from robodyn import safe_io

            source = safe_io.read_text(path)  # (a regular file, at most 64 MiB)
        text = path.stem
    urdf = strip_urdf(source)
    if strict:
        robodyn.load_urdf(urdf, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = robodyn.load_urdf(urdf, check_inertia=False, mimic="independent")
    if text in robodyn.robots.available():
        dh, dh_gravity = _bundled_dh(text, robot.gravity)
    return Case(text, robot, urdf, dh, dh_gravity)


def case_from_dh(rows, name, gravity=(0.0, 0.0, -9.81)):
    """A Case from standard-DH rows (robodyn.from_dh), read back through its URDF so that
    every library reads the same file. Rows without ``limits`` get +-pi."""
    import robodyn

    rows = [dict(r) for r in rows]
    for r in rows:
        r.setdefault("limits", (-math.pi, math.pi) if r.get("joint", "revolute") == "revolute"
                     else (-1.0, 1.0))
    urdf = strip_urdf(robodyn.from_dh(rows, gravity=gravity, name=name).to_urdf())
    robot = robodyn.load_urdf(urdf, check_inertia=False)
    return Case(name, robot, urdf, rows, tuple(gravity))


def random_states(robot, count, rng):
    """(q, qd, qdd, tau) arrays of shape (count, n): q uniform in the limits (at most +-pi),
    qd, qdd standard normal, tau = inverse_dynamics(q, qd, qdd)."""
    lo, hi = robot.position_limits
    lo, hi = np.maximum(lo, -np.pi), np.minimum(hi, np.pi)
    n = robot.n
    Q = np.ascontiguousarray(rng.uniform(lo, hi, (count, n)))
    QD = np.ascontiguousarray(rng.standard_normal((count, n)))
    QDD = np.ascontiguousarray(rng.standard_normal((count, n)))
    TAU = np.ascontiguousarray(robot.inverse_dynamics(Q, QD, QDD))
    return Q, QD, QDD, TAU
