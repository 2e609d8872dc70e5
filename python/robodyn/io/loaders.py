"""The two ways in from a file or a table: :func:`load_urdf` (URDF / xacro text or file) and
:func:`from_dh` (a Denavit-Hartenberg table); robodyn re-exports both."""

from __future__ import annotations

import os

from ..model import Robot
from ..model.build import robot
from .dh import dh_to_spec
from .urdf import MAX_BYTES, URDFFileNotFoundError, load

__all__ = ["load_urdf", "from_dh"]


def load_urdf(path_or_xml_string, gravity=None, armature=None, *, check_inertia=True,
              strict=False, mimic="couple", xacro_args=None, max_bytes=None,
              floating_base=False, xacro_env=False) -> Robot:
    """Load a URDF file (path), a ``.xacro`` file (expanded with ``xacro_args``, needs the
    ``xacro`` extra) or URDF text into a Robot. See docs/urdf.md.

    ``armature``: rotor inertias, a dict joint name -> value or a sequence in joint order
    (overrides the ``<robodyn armature=.../>`` extension element). A non-physical inertia on a
    link that moves loads with one :class:`robodyn.io.urdf.URDFWarning` per file naming the link
    and the violated inequality (links that never move are not checked);
    ``strict=True`` refuses such a file instead, ``check_inertia=False`` checks nothing.
    ``mimic="couple"`` (default): ``<mimic>`` joints follow their leaders and the Robot's
    coordinates are the independent joints (robodyn.coupling); ``"independent"`` loads them
    as independent joints, like Pinocchio's and MuJoCo's loaders. A joint that moves no mass
    (singular mass matrix) loads with a warning (forward dynamics then raises). Every error is a
    ``robodyn.io.urdf.URDFError`` (a ValueError) "<file>: <element>: <reason>".
    ``max_bytes``: the largest file or text read (default 64 MiB, robodyn.io.urdf.MAX_BYTES); a
    path must be a regular file (devices, FIFOs and directories are refused). See
    docs/security.md.
    ``floating_base=True``: the root link moves freely on a free-flyer joint (``robot.nq =
    robot.nv + 1``; q = [base position (3), base quaternion x, y, z, w (4), joints], v = [base
    angular velocity (3), base linear velocity (3), joints], both in the base frame); a URDF
    whose root joint is ``floating`` loads that way without the flag.
    A ``.xacro`` file runs no code and reads no environment variable or ROS package path
    unless ``xacro_env=True`` (docs/security.md).
    A file with ``<loop_joint>`` elements (closed loops, Isaac Sim's convention) loads as a
    :class:`robodyn.ConstrainedRobot` on its tree of ``<joint>``s (docs/constraints.md).
    """
    if isinstance(path_or_xml_string, str) and not path_or_xml_string.lstrip().startswith("<"):
        from .robots import EXAMPLE_ROBOTS, available

        name = path_or_xml_string
        if name in available(floating=True) + list(EXAMPLE_ROBOTS) and \
                not os.path.exists(name):
            call = "load" if name in available(floating=True) else "resolve"
            raise URDFFileNotFoundError(
                f"{name}: no such URDF file; {name!r} is a robot name: use "
                f"robodyn.robots.{call}({name!r})")
    return load(path_or_xml_string, gravity=gravity, armature=armature,
                check_inertia=check_inertia, strict=strict, mimic=mimic, xacro_args=xacro_args,
                max_bytes=MAX_BYTES if max_bytes is None else max_bytes,
                floating_base=floating_base, xacro_env=xacro_env)


def from_dh(rows, convention="standard", gravity=(0.0, 0.0, -9.81), name="dh_robot", *,
            check_inertia=True) -> Robot:
    """Build a Robot from a Denavit-Hartenberg table (``convention`` "standard" or "modified").

    Rows are dicts or tuples (theta, d, a, alpha, joint, mass, com, inertia[, armature]); see
    robodyn.io.dh.dh_to_spec. ``check_inertia=False`` accepts inertias that break the triangle
    inequality (the verbatim Stanford arm of the Robotics Toolbox has one).
    """
    return robot(dh_to_spec(rows, convention=convention, gravity=gravity, name=name,
                            check_inertia=check_inertia))
