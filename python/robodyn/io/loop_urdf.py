"""URDF ``<loop_joint>`` elements: the closed loops of a mechanism (Isaac Sim's convention).

::

    <loop_joint name="knee_rod" type="spherical">
      <link1 link="rocker" xyz="0.3 0 -0.1" rpy="0 0 0"/>
      <link2 link="base_link" xyz="0.5 0 0" rpy="0 0 0"/>
      <axis xyz="0 0 1"/>                  <!-- type="revolute" only; default 1 0 0 -->
      <robodyn baumgarte="kp kd"/>          <!-- optional: robodyn's Baumgarte gains -->
    </loop_joint>

``type``: ``spherical`` -> a ``point`` constraint, ``fixed`` -> a ``weld``, ``revolute`` -> an
``axes`` constraint with five rows (the relative rotation about ``<axis>`` is free): both
constraint frames are the given poses turned so that their z axis is ``<axis>``. A link on the
fixed base (the root link, or a link welded to it) becomes the world (``None``) with its pose
in the root frame. The ``<joint>`` elements must still form a tree (their cycles are refused);
the loop joints close loops on that tree. :func:`loop_joints` reads them (called by the URDF
parser), :func:`write` adds them to a robot's URDF text (``ConstrainedRobot.to_urdf``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

__all__ = ["TYPES", "loop_joints", "constrained", "write"]

TYPES = ("spherical", "fixed", "revolute")
REVOLUTE_AXES = ("rx", "ry", "x", "y", "z")


def _rpy(roll, pitch, yaw):
    """URDF's fixed-axis rpy: Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = (np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch),
                              np.cos(yaw), np.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _rpy_of(R):
    """(roll, pitch, yaw) of a rotation matrix (the inverse of _rpy)."""
    roll = np.arctan2(R[2, 1], R[2, 2])
    M = R @ _rpy(roll, 0.0, 0.0).T  # Rz(yaw) Ry(pitch)
    return roll, np.arctan2(-M[2, 0], M[2, 2]), np.arctan2(-M[0, 1], M[1, 1])


def _text(values):
    """Numbers as the shortest text that parses back to the same doubles."""
    return " ".join(repr(float(x)) for x in values)


def _align_z(axis):
    """A rotation whose z column is the unit vector ``axis`` (identity for +z)."""
    z = axis / np.linalg.norm(axis)
    if z[2] > 1.0 - 1e-15:
        return np.eye(3)
    # Rodrigues rotation taking e_z to z (for -z: a half turn about x)
    if z[2] < -1.0 + 1e-15:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross([0.0, 0.0, 1.0], z)
    s, c = np.linalg.norm(k), z[2]
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]]) / s
    return np.eye(3) + s * K + (1.0 - c) * K @ K


def loop_joints(reader, root_el, place, joint_names):
    """The document's ``<loop_joint>`` elements as keyword dicts for ``LoopConstraint``.

    ``reader``: robodyn.urdf's attribute reader (errors name the file and the element);
    ``place``: link name -> (body index or -1 for the fixed base, pose in that body or None
    for the identity); ``joint_names``: the ``<joint>`` names (a loop joint may not reuse one).
    """
    out, seen = [], set()
    for i, el in enumerate(root_el.findall("loop_joint")):
        name = reader.name(el, f"loop_joint #{i + 1}")
        where = f"loop_joint {name!r}"
        if name in seen or name in joint_names:
            raise reader.error(where, "duplicate joint name")
        seen.add(name)
        kind = reader.attr(el, "type", where)
        if kind not in TYPES:
            raise reader.error(where, f"type: expected one of {', '.join(TYPES)}, got {kind!r}")
        ends = []
        for tag in ("link1", "link2"):
            found = el.findall(tag)
            if len(found) != 1:
                raise reader.error(where, f"expected one <{tag}> element, found {len(found)}")
            link = reader.attr(found[0], "link", f"{where} <{tag}>")
            if link not in place:
                raise reader.error(f"{where} <{tag}>", f"no link named {link!r}")
            T = np.eye(4)
            T[:3, 3] = reader.vector(found[0], "xyz", f"{where} <{tag}>", (0.0, 0.0, 0.0))
            T[:3, :3] = _rpy(*reader.vector(found[0], "rpy", f"{where} <{tag}>",
                                            (0.0, 0.0, 0.0)))
            body, pose = place[link]
            if body == -1:
                # on the fixed base: the world, the pose in the root frame
                ends.append((None, T if pose is None else pose @ T, link))
            else:
                ends.append((link, T, link))
        if ends[0][0] is None and ends[1][0] is None:
            raise reader.error(where, f"links {ends[0][2]!r} and {ends[1][2]!r} are both on the "
                               "fixed base: the loop joint closes nothing")
        if ends[0][2] == ends[1][2]:
            raise reader.error(where, f"link1 and link2 are the same link {ends[0][2]!r}")
        kw = dict(name=name, body1=ends[0][0], body2=ends[1][0], frame1=ends[0][1],
                  frame2=ends[1][1])
        if kind == "revolute":
            axis_el = el.find("axis")
            axis = (np.array([1.0, 0.0, 0.0]) if axis_el is None else
                    reader.vector(axis_el, "xyz", f"{where} <axis>", (1.0, 0.0, 0.0)))
            if np.linalg.norm(axis) < 1e-12:
                raise reader.error(f"{where} <axis>", "the axis is zero")
            A = np.eye(4)
            A[:3, :3] = _align_z(axis)
            kw.update(kind="axes", axes=REVOLUTE_AXES, frame1=kw["frame1"] @ A,
                      frame2=kw["frame2"] @ A)
        else:
            kw["kind"] = "point" if kind == "spherical" else "weld"
        ext = el.find("robodyn")
        if ext is not None and ext.get("baumgarte") is not None:
            kw["baumgarte"] = _gains(reader, ext, f"{where} <robodyn>")
        out.append(kw)
    return out


def _gains(reader, el, where):
    """(kp, kd) of a <robodyn baumgarte="kp kd"/> element."""
    tokens = el.get("baumgarte").split()
    if len(tokens) != 2:
        raise reader.error(where, f"attribute 'baumgarte' must hold 2 numbers (kp kd), got "
                           f"{el.get('baumgarte')!r}")
    values = [reader._to_float(t, "baumgarte", where, False) for t in tokens]
    if min(values) < 0:
        raise reader.error(where, f"attribute 'baumgarte': gains must be >= 0, got {values}")
    return tuple(values)


def constrained(robot, loops, make, error):
    """``make(robot, loops)`` (robodyn.load_urdf's: the ConstrainedRobot of the tree and the
    loop joints' keywords); a ValueError it raises becomes ``error(message)``."""
    try:
        return make(robot, loops)
    except ValueError as e:
        raise error(str(e)) from None


def _element(parent, tag, link, T):
    ET.SubElement(parent, tag, link=link, xyz=_text(T[:3, 3]), rpy=_text(_rpy_of(T[:3, :3])))


def write(system) -> str:
    """URDF text of a ConstrainedRobot: its robot's ``to_urdf`` and one ``<loop_joint>`` per
    constraint (point: spherical, weld: fixed, axes rx ry x y z: revolute about z of the
    frames; non-zero Baumgarte gains as ``<robodyn baumgarte>``). Raises ValueError for a
    constraint URDF cannot describe (other axes; the world of a floating-base robot) and for
    a constraint whose name is taken by a joint."""
    robot = system.robot
    root = ET.fromstring(robot.to_urdf())
    base = robot.spec.base_name
    joints = set(robot.joint_names) | {el.get("name") for el in root.findall("joint")}
    for c in system.constraints:
        where = f"to_urdf: constraint {c.name!r}"
        if c.kind == "point":
            kind = "spherical"
        elif c.kind == "weld":
            kind = "fixed"
        elif tuple(c.axes) == REVOLUTE_AXES:
            kind = "revolute"
        else:
            raise ValueError(f"{where}: axes {tuple(c.axes)} have no URDF loop_joint type "
                             "(spherical, fixed, or revolute: rx ry x y z)")
        if c.name in joints:
            raise ValueError(f"{where}: the name is also a joint's; rename the constraint")
        if robot.floating_base and None in (c.body1, c.body2):
            raise ValueError(f"{where}: a floating-base URDF has no link for the world")
        el = ET.SubElement(root, "loop_joint", name=c.name, type=kind)
        _element(el, "link1", base if c.body1 is None else c.body1, np.asarray(c.frame1))
        _element(el, "link2", base if c.body2 is None else c.body2, np.asarray(c.frame2))
        if kind == "revolute":
            ET.SubElement(el, "axis", xyz="0 0 1")
        if any(g != 0.0 for g in c.baumgarte):
            ET.SubElement(el, "robodyn", baumgarte=_text(c.baumgarte))
    ET.indent(root, space="  ")
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
