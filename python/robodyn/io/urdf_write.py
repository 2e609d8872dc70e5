"""Writing a URDF: :func:`spec_to_urdf`, the text whose parse gives the same dynamics."""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET

import numpy as np

from .urdf_source import DEFAULT_GRAVITY

__all__ = ["spec_to_urdf", "rpy_to_matrix", "matrix_to_rpy"]


def rpy_to_matrix(roll, pitch, yaw):
    """URDF fixed-axis rpy: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_to_rpy(R):
    """Inverse of rpy_to_matrix; accurate near gimbal lock (pitch = +-pi/2)."""
    roll = math.atan2(R[2, 1], R[2, 2])
    M = R @ rpy_to_matrix(roll, 0.0, 0.0).T  # = Rz(yaw) Ry(pitch)
    yaw = math.atan2(-M[0, 1], M[1, 1])
    pitch = math.atan2(-M[2, 0], M[2, 2])
    return roll, pitch, yaw




def _num(x):
    """Shortest text that parses back to the same double."""
    return repr(float(x))


def _limit(x):
    """A position limit: no limit (+-inf) as the largest finite double, which every URDF
    parser reads (Pinocchio refuses "inf") and parse_urdf reads back as +-inf."""
    return _num(math.copysign(sys.float_info.max, x)) if math.isinf(x) else _num(x)


def _rate_limit(x):
    """A velocity or effort limit: none (inf) as 0, URDF's "not given"."""
    return "0" if math.isinf(x) else _num(x)


def _vec(v):
    return " ".join(_num(x) for x in v)


def _origin(parent, T):
    ET.SubElement(parent, "origin", xyz=_vec(T[:3, 3]), rpy=_vec(matrix_to_rpy(T[:3, :3])))


def spec_to_urdf(spec) -> str:
    """URDF text whose parse_urdf gives the same dynamics and frames as ``spec``.

    Bodies become moving joints (revolute with infinite limits as ``continuous``); frames
    become massless links on fixed joints named ``<frame>_joint``; non-zero armatures are
    written as ``<robodyn armature=.../>``, a non-default gravity as a ``<robodyn gravity>``
    child of ``<robot>``, coupled joints as ``<mimic>``. The file loads in Pinocchio and
    MuJoCo: no position limit is written as the largest finite double, no velocity or effort
    limit as 0 (URDF's "not given"); parse_urdf reads both back as inf.
    """
    _check_spec(spec)
    robot = ET.Element("robot", name=str(spec.name))
    gravity = np.asarray(spec.gravity, dtype=float)
    if not np.array_equal(gravity, DEFAULT_GRAVITY):
        ET.SubElement(robot, "robodyn", gravity=_vec(gravity))
    ET.SubElement(robot, "link", name=spec.base_name)
    link_of = [b.name for b in spec.bodies]

    for body in spec.bodies:
        link = ET.SubElement(robot, "link", name=body.name)
        inertia = np.asarray(body.inertia, dtype=float)
        if body.mass != 0.0 or np.any(inertia != 0.0):
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "origin", xyz=_vec(body.com), rpy="0 0 0")
            ET.SubElement(inertial, "mass", value=_num(body.mass))
            ET.SubElement(inertial, "inertia", ixx=_num(inertia[0, 0]), ixy=_num(inertia[0, 1]),
                          ixz=_num(inertia[0, 2]), iyy=_num(inertia[1, 1]),
                          iyz=_num(inertia[1, 2]), izz=_num(inertia[2, 2]))
        continuous = (body.joint_type == "revolute" and body.lower == -math.inf
                      and body.upper == math.inf)
        jtype = "continuous" if continuous else body.joint_type
        joint = ET.SubElement(robot, "joint", name=body.joint_name, type=jtype)
        ET.SubElement(joint, "parent",
                      link=spec.base_name if body.parent < 0 else link_of[body.parent])
        ET.SubElement(joint, "child", link=body.name)
        _origin(joint, np.asarray(body.origin, dtype=float))
        if body.joint_type == "floating":
            continue
        ET.SubElement(joint, "axis", xyz=_vec(body.axis))
        if not continuous or body.effort != math.inf or body.velocity != math.inf:
            limit = ET.SubElement(joint, "limit")
            if not continuous:
                limit.set("lower", _limit(body.lower))
                limit.set("upper", _limit(body.upper))
            limit.set("effort", _rate_limit(body.effort))
            limit.set("velocity", _rate_limit(body.velocity))
        if body.damping != 0.0 or body.friction != 0.0:
            ET.SubElement(joint, "dynamics", damping=_num(body.damping),
                          friction=_num(body.friction))
        if getattr(body, "mimic", None) is not None:
            leader, multiplier, offset = body.mimic
            ET.SubElement(joint, "mimic", joint=str(leader), multiplier=_num(multiplier),
                          offset=_num(offset))
        if body.armature != 0.0:
            ET.SubElement(joint, "robodyn", armature=_num(body.armature))

    joint_names = {b.joint_name for b in spec.bodies}
    for frame in spec.frames:
        ET.SubElement(robot, "link", name=frame.name)
        name = f"{frame.name}_joint"
        k = 1
        while name in joint_names:
            k += 1
            name = f"{frame.name}_joint{k}"
        joint_names.add(name)
        joint = ET.SubElement(robot, "joint", name=name, type="fixed")
        ET.SubElement(joint, "parent",
                      link=spec.base_name if frame.parent < 0 else link_of[frame.parent])
        ET.SubElement(joint, "child", link=frame.name)
        _origin(joint, np.asarray(frame.pose, dtype=float))

    ET.indent(robot, space="  ")
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _check_spec(spec):
    """What spec_to_urdf needs to write a faithful URDF; raises ValueError otherwise."""
    names = [spec.base_name] + [b.name for b in spec.bodies] + [f.name for f in spec.frames]
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"spec_to_urdf: link/frame name {name!r} is used twice")
        seen.add(name)
    joint_names = [b.joint_name for b in spec.bodies]
    if len(set(joint_names)) != len(joint_names):
        raise ValueError("spec_to_urdf: joint names are not unique")
    for i, body in enumerate(spec.bodies):
        where = f"spec_to_urdf: body {i} ({body.name!r})"
        if not -1 <= body.parent < i:
            raise ValueError(f"{where}: parent {body.parent} is not in [-1, {i})")
        if body.joint_type not in ("revolute", "prismatic", "floating"):
            raise ValueError(f"{where}: joint type {body.joint_type!r}")
        if body.joint_type == "floating" and (i != 0 or body.parent != -1):
            raise ValueError(f"{where}: a floating joint must be body 0's, on the base")
        values = (body.origin, body.axis, body.com, body.inertia, body.mass, body.armature,
                  body.damping, body.friction)
        if not all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values):
            raise ValueError(f"{where}: non-finite value")
        if any(math.isnan(x) for x in (body.lower, body.upper, body.velocity, body.effort)):
            raise ValueError(f"{where}: NaN limit")
        inertia = np.asarray(body.inertia, dtype=float)
        if not np.allclose(inertia, inertia.T, rtol=0.0,
                           atol=1e-12 * max(float(np.max(np.abs(inertia))), 1e-300)):
            raise ValueError(f"{where}: inertia is not symmetric")
    for frame in spec.frames:
        if not -1 <= frame.parent < len(spec.bodies):
            raise ValueError(f"spec_to_urdf: frame {frame.name!r}: parent {frame.parent}")
        if not np.all(np.isfinite(np.asarray(frame.pose, dtype=float))):
            raise ValueError(f"spec_to_urdf: frame {frame.name!r}: non-finite pose")
