"""URDF front end: read a URDF into a :class:`ModelSpec` (urdf_write writes one back).

Only what the dynamics need is read: links' ``<inertial>``, joints' ``<origin>``, ``<axis>``,
``<limit>``, ``<dynamics>``, and robodyn's ``<robodyn armature=.../>`` extension. Geometry,
meshes and ``package://`` URIs are ignored and never fetched. The root link is the fixed base.
Fixed joints are merged into the moving body (or the base) they hang from; each merged link is
kept as a :class:`Frame`. See docs/urdf.md for every rule and choice.

Errors in the input raise :class:`URDFError` (a ``ValueError``) with the message
``"<file or <string>>: <element>: <reason>"``; a missing file raises
:class:`URDFFileNotFoundError`, which is both a ``URDFError`` and a ``FileNotFoundError``.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from ..constraints import ConstrainedRobot, LoopConstraint
from ..model.build import robot as build_robot
from ..model.spec import Body, Frame, ModelSpec, negative_moments
from .sources import read_source
from .urdf_source import (DEFAULT_GRAVITY, MAX_BYTES, URDFError, URDFFileNotFoundError,
                          URDFWarning, parse_xml, source_label)
from .urdf_elements import (INERTIA_ATOL, INERTIA_RTOL, ROOT_JOINT, Reader, inertia_violation,
                            read_inertial, read_joint, warn)
from .urdf_write import matrix_to_rpy, spec_to_urdf
from .loop_urdf import constrained, loop_joints

__all__ = ["URDFError", "URDFFileNotFoundError", "URDFWarning", "parse_urdf", "spec_to_urdf",
           "load", "source_label", "inertia_violation", "MAX_BYTES", "matrix_to_rpy",
           "INERTIA_RTOL", "INERTIA_ATOL", "ROOT_JOINT", "MIMIC_MODES"]

_log = logging.getLogger("robodyn.urdf")

# ---------------------------------------------------------------- the kinematic tree

def _tree(reader, links, joints):
    """Root link and, per link, its child joints in document order; checks the topology."""
    by_child, children = {}, {name: [] for name in links}
    for j in joints:
        if j.parent not in links or j.child not in links:
            for role in ("parent", "child"):
                link = getattr(j, role)
                if link not in links:
                    raise reader.error(f"joint {j.name!r}",
                                       f"{role} link {link!r} is not defined (unknown link)")
        if j.parent == j.child:
            raise reader.error(f"joint {j.name!r}", f"parent and child are the same link "
                               f"{j.child!r} (closed loop / cycle)")
        if j.child in by_child:
            raise reader.error(f"joint {j.name!r}", f"link {j.child!r} has two parents: joints "
                               f"{by_child[j.child].name!r} and {j.name!r}")
        by_child[j.child] = j
        children[j.parent].append(j)
    roots = [name for name in links if name not in by_child]
    if not roots:
        raise reader.error("robot", "no root link: the joints form a closed loop (cycle)")
    if len(roots) > 1:
        shown = ", ".join(repr(r) for r in roots[:5]) + (", ..." if len(roots) > 5 else "")
        raise reader.error("robot", f"several root links ({shown}): "
                           "every link but one must be the child of a joint")
    # with one parent per link and one root, links not reached from the root lie on a loop
    reached, stack = {roots[0]}, [roots[0]]
    while stack:
        for j in children[stack.pop()]:
            reached.add(j.child)
            stack.append(j.child)
    if len(reached) < len(links):
        link = next(name for name in links if name not in reached)
        loop = []
        while link not in loop:
            loop.append(link)
            link = by_child[link].parent
        loop = loop[loop.index(link):]
        raise reader.error("robot", "closed loop (cycle) through links "
                           + " -> ".join(repr(x) for x in loop)
                           + "; close a loop with a <loop_joint> (docs/constraints.md)")
    return roots[0], children


def _combine(parts):
    """(mass, com, inertia about the COM) of rigidly joined parts given in one frame."""
    if len(parts) == 1:
        return parts[0]
    mass = sum(m for m, _, _ in parts)
    com = sum(m * c for m, c, _ in parts) / mass if mass > 0.0 else np.zeros(3)
    inertia = np.zeros((3, 3))
    for m, c, Ic in parts:
        d = c - com
        inertia += Ic + m * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def _build(reader, root_el, check_inertia, mimic, floating_base=False):
    """Parse the document into a ModelSpec (gravity and armature applied by the caller).

    What would be a warning (non-physical inertia on a moving link, mimic joints loaded as
    independent joints) is appended to ``reader.notes`` as (element, reason).
    floating_base: the root link moves on a free-flyer joint (body 0, named ROOT_JOINT); a
    document whose root link's joint is ``floating`` gets the same without the flag."""
    robot_name = reader.name(root_el, "robot")

    links = {}  # name -> inertial tuple or None, in document order
    with np.errstate(all="ignore"):
        for i, el in enumerate(root_el.findall("link")):
            name = reader.name(el, f"link #{i + 1}")
            if name in links:
                raise reader.error(f"link {name!r}", "duplicate link name")
            links[name] = read_inertial(reader, el, name)
    if not links:
        raise reader.error("robot", "no <link> elements")

    joints, names = [], set()
    for i, el in enumerate(root_el.findall("joint")):
        j = read_joint(reader, el, i)
        if j.name in names:
            raise reader.error(f"joint {j.name!r}", "duplicate joint name")
        names.add(j.name)
        joints.append(j)

    root, children = _tree(reader, links, joints)
    floating = [j for j in joints if j.type == "floating"]
    if len(floating) > 1:
        raise reader.error(f"joint {floating[1].name!r}",
                           "only one floating joint is supported (the root joint)")
    if floating and floating[0].parent != root:
        raise reader.error(f"joint {floating[0].name!r}", "a floating joint must have the root "
                           f"link {root!r} as its parent (a free-floating base); its parent is "
                           f"{floating[0].parent!r}")
    base_name = root
    # depth-first from the root, children in document order (a floating joint first):
    # parent index < child index
    bodies, frames, parts = [], {}, []
    # link -> (body index or -1, pose in that body; None for the identity: the link is the
    # body's own frame)
    place = {root: (-1, None)}
    if floating_base and not floating:
        # the root link on a free-flyer joint: body 0, its pose in the world is q[:7]
        name = ROOT_JOINT
        while any(j.name == name for j in joints):
            name = "_" + name
        base_name = "world"
        while base_name in links:
            base_name = "_" + base_name
        bodies.append(Body(name=root, joint_name=name, parent=-1, joint_type="floating",
                           axis=np.array([0.0, 0.0, 1.0]), origin=np.eye(4)))
        parts.append([] if links[root] is None else [links[root][:3]])
        place[root] = (0, None)
    stack = sorted(reversed(children[root]), key=lambda j: j.type == "floating")
    with np.errstate(all="ignore"):
        while stack:
            j = stack.pop()
            parent_body, T_parent = place[j.parent]
            # I @ origin, which for a pose is origin with its -0.0 entries made +0.0
            T = j.origin + 0.0 if T_parent is None else T_parent @ j.origin
            if j.type == "fixed":
                place[j.child] = (parent_body, T)
                frames[j.index] = Frame(name=j.child, parent=parent_body, pose=T)
                inertial = links[j.child]
                if parent_body >= 0 and inertial is not None:
                    m, c, Ic, _ = inertial
                    R = T[:3, :3]
                    parts[parent_body].append((m, R @ c + T[:3, 3], R @ Ic @ R.T))
            else:
                index = len(bodies)
                place[j.child] = (index, None)
                kind = j.type if j.type in ("prismatic", "floating") else "revolute"
                bodies.append(Body(
                    name=j.child, joint_name=j.name, parent=parent_body, joint_type=kind,
                    axis=j.axis, origin=T, armature=j.armature, damping=j.damping,
                    friction=j.friction, lower=j.lower, upper=j.upper,
                    velocity=j.velocity, effort=j.effort))
                parts.append([] if links[j.child] is None else [links[j.child][:3]])
            stack.extend(reversed(children[j.child]))
        for body, body_parts in zip(bodies, parts):
            if body_parts:
                mass, com, inertia = _combine(body_parts)
                body.mass, body.com, body.inertia = float(mass), com, inertia

    if check_inertia:
        _check_inertias(reader, links, place)
    _couple(reader, joints, bodies, mimic)

    # finiteness of everything combined, checked in one vectorised pass (O(n))
    if bodies:
        bad = ~(np.isfinite(np.array([b.origin for b in bodies])).all(axis=(1, 2))
                & np.isfinite(np.array([b.com for b in bodies])).all(axis=1)
                & np.isfinite(np.array([b.inertia for b in bodies])).all(axis=(1, 2))
                & np.isfinite(np.array([b.mass for b in bodies])))
        if bad.any():
            body = bodies[int(np.argmax(bad))]
            raise reader.error(f"link {body.name!r}", "non-finite pose or inertia after "
                               "combining (numbers too large)")
    frames = [frames[k] for k in sorted(frames)]  # in document order of the fixed joints
    for frame in frames:
        if not np.isfinite(frame.pose).all():
            raise reader.error(f"link {frame.name!r}", "non-finite pose (numbers too large)")

    gravity = None
    ext_el = root_el.find("robodyn")
    if ext_el is not None and ext_el.get("gravity") is not None:
        gravity = reader.vector(ext_el, "gravity", "robot <robodyn>", None)
    # closed loops (<loop_joint>, loop_urdf): kept by the reader for load()
    reader.loops = loop_joints(reader, root_el, place, names)
    return ModelSpec(bodies=bodies, frames=frames, name=robot_name, base_name=base_name,
                     gravity=gravity)


def _check_inertias(reader, links, place):
    """The one decision on inertias: a link that moves (it belongs to a moving body) must have
    a physical inertia, else a note; a link that never moves (the root link and links welded
    to it) does not enter fixed-base dynamics and is not checked (said at info level)."""
    still = []
    moving = [name for name, inertial in links.items()
              if inertial is not None and place[name][0] >= 0]
    # principal moments of every moving link in one batched call (O(n), ~10x faster than one
    # call per link on a 10,000-link chain); links that pass inertia_violation's tests here are
    # done, the others get its verdict and message
    passed = set()
    if moving:
        with np.errstate(all="ignore"):
            stack = np.array([links[name][3] for name in moving], dtype=float)
            try:
                moments = np.linalg.eigvalsh(stack)
            except np.linalg.LinAlgError:
                moments = np.full((len(moving), 3), math.nan)
            tol = np.maximum(INERTIA_RTOL * np.abs(moments).max(axis=1), INERTIA_ATOL)
            ok = (np.isfinite(moments).all(axis=1) & (moments[:, 0] >= -tol)
                  & (moments[:, 0] + moments[:, 1] >= moments[:, 2] - tol))
        passed = {name for name, good in zip(moving, ok) if good}
    for name, inertial in links.items():
        if inertial is None:
            continue
        if place[name][0] < 0:
            still.append(name)
            continue
        if name in passed:
            continue
        why = inertia_violation(inertial[3])
        if why == "inertia is too large to analyse":
            raise reader.error(f"link {name!r} <inertial> <inertia>", why)
        if why is not None:
            reader.notes.append((f"link {name!r} <inertial> <inertia>", why))
    if still:
        _log.info("%s: links that never move (%s) are not inertia-checked: their inertia does "
                  "not enter fixed-base dynamics", reader.label, ", ".join(still))


def _couple(reader, joints, bodies, mimic):
    """Mimic joints: with mimic="couple", body.mimic = (independent leader joint, multiplier,
    offset), chains of mimics composed; with "independent", a note per mimic joint."""
    by_name = {j.name: j for j in joints}
    body_of = {b.joint_name: b for b in bodies}
    for j in joints:
        if j.mimic is None or j.type == "fixed":
            continue
        where = f"joint {j.name!r} <mimic>"
        leader, multiplier, offset = j.mimic
        if mimic == "independent":
            reader.notes.append((where, f"mimics joint {leader!r}: loaded as an independent "
                                 "joint (mimic='independent')"))
            continue
        seen = [j.name]
        while True:
            lj = by_name.get(leader)
            if lj is None or lj.type == "fixed":
                # a file's slip (alex_psyonic_hands names 'index_q1' for 'Left_index_q1'):
                # nothing to follow, so the joint stays independent
                why = "is not defined" if lj is None else "is a fixed joint"
                reader.notes.append((where, f"joint {leader!r} {why}: loaded as an "
                                     "independent joint"))
                lj = None
                break
            if lj.name in seen:
                raise reader.error(where, "mimic joints form a cycle: "
                                   + " -> ".join(repr(x) for x in seen + [lj.name]))
            if lj.mimic is None:
                break
            seen.append(lj.name)
            leader, m2, o2 = lj.mimic  # q_lj = m2 q_leader + o2
            multiplier, offset = multiplier * m2, multiplier * o2 + offset
        if lj is not None:
            body_of[j.name].mimic = (leader, float(multiplier), float(offset))


def _apply_armature(spec, armature):
    """Override armatures from a dict joint name -> value or a sequence in joint order."""
    if armature is None:
        return
    joints = [i for i, b in enumerate(spec.bodies) if b.joint_type != "floating"]
    n = len(joints)
    if isinstance(armature, dict):
        index = {spec.bodies[i].joint_name: i for i in joints}
        items = []
        for name, value in armature.items():
            if name not in index:
                raise ValueError(f"armature: {name!r} is not a moving joint of the model")
            items.append((index[name], value))
    else:
        try:
            values = np.asarray(armature, dtype=float)
        except (TypeError, ValueError):
            values = None
        if values is None or values.shape != (n,):
            raise ValueError(f"armature: expected a dict or a sequence of {n} values, "
                             f"got {armature!r}")
        items = list(zip(joints, values))
    for i, given in items:
        try:
            value = float(given)
        except (TypeError, ValueError):
            value = math.nan
        if not (math.isfinite(value) and value >= 0.0):
            raise ValueError(f"armature: joint {spec.bodies[i].joint_name!r}: "
                             f"{given!r} is not a finite value >= 0")
        spec.bodies[i].armature = value


MIMIC_MODES = ("couple", "independent")


def parse_urdf(source, gravity=None, armature=None, *, check_inertia=True, strict=False,
               mimic="couple", xacro_args=None, max_bytes=MAX_BYTES,
               floating_base=False, xacro_env=False) -> ModelSpec:
    """Read a URDF into a :class:`ModelSpec`.

    source: XML text (a ``str`` starting with ``<`` after whitespace, or ``bytes``), or a path
        (``pathlib.Path``, any other ``str``); a path ending in ``.xacro`` is expanded first
        (needs the ``xacro`` extra, the ``xacrodoc`` package), with ``xacro_args`` (a dict of
        ``name: value``) as its ``<xacro:arg>`` values. Its ``${...}`` expressions are
        evaluated without running code (robodyn.xacro, docs/security.md); ``xacro_env=True``
        lets it read environment variables and ROS package paths.
    gravity: (3,) in the base frame; default the file's ``<robodyn gravity>`` if present,
        else (0, 0, -9.81).
    armature: rotor inertia per joint, a dict joint name -> value or a sequence in joint
        order; overrides the ``<robodyn armature>`` elements.
    check_inertia: check that every link that moves has a physical inertia (positive
        semi-definite, principal moments obeying I1 + I2 >= I3, tolerance
        ``max(1e-9 * largest moment, 1e-12 kg m^2)``). A violation is a :class:`URDFWarning`
        naming the link and the inequality, and the file loads as written; links that never
        move (the root link, links welded to it) are not checked. False: no check at all.
    strict: every warning (non-physical inertia, mimic joints loaded independently) is a
        :class:`URDFError` instead.
    mimic: ``"couple"`` (default): a ``<mimic>`` joint follows its leader,
        ``q = multiplier * q_leader + offset`` (``Body.mimic``; ``Robot`` then has the
        independent joints as coordinates); ``"independent"``: mimic joints are independent
        joints (what Pinocchio's and MuJoCo's loaders do by default), with a warning.
    max_bytes: the largest input read, in bytes (characters for text); default 64 MiB
        (:data:`MAX_BYTES`). A path must be a regular file (not a device, FIFO or directory).
    floating_base: the root link moves freely: it becomes body 0 on a free-flyer joint named
        ``root_joint`` (q starts with its position and unit quaternion x, y, z, w; v with its
        angular and linear velocity in its own frame). A URDF whose root link is joined to
        its first link by a ``floating`` joint loads the same way without the flag.

    Raises URDFError (a ValueError) naming the file, the element and the reason;
    URDFFileNotFoundError (also a FileNotFoundError) for a missing file. Warnings are said once
    per file, attributed to the caller's line.
    """
    spec, label, notes, _ = _parse(source, gravity, armature, check_inertia, mimic,
                                   xacro_args, max_bytes, floating_base, xacro_env)
    _say(label, notes, strict)
    return spec


def _parse(source, gravity, armature, check_inertia, mimic, xacro_args, max_bytes=MAX_BYTES,
           floating_base=False, xacro_env=False):
    """(spec, label, notes, loops): parse_urdf without saying its warnings, and the
    <loop_joint>s as LoopConstraint keywords."""
    if mimic not in MIMIC_MODES:
        raise ValueError(f"mimic: expected one of {', '.join(map(repr, MIMIC_MODES))}, "
                         f"got {mimic!r}")
    text, label = read_source(source, xacro_args, max_bytes, xacro_env)
    reader = Reader(label)
    spec = _build(reader, parse_xml(text, label), check_inertia, mimic, bool(floating_base))
    inertia_ok = not any("<inertial>" in where for where, _ in reader.notes)
    # the model re-checks its merged bodies with the same tolerance only if every part passed
    spec.check_inertia = bool(check_inertia) and inertia_ok
    # a file with a negative principal moment on a moving body loads as written (warned
    # above, or check_inertia=False); a model built from any other spec refuses one
    if not inertia_ok or not check_inertia:
        spec.accept_indefinite_inertia = bool(spec.bodies) and bool(
            negative_moments([b.inertia for b in spec.bodies])[0].any())
    if gravity is not None:
        spec.gravity = _vector3(gravity, "gravity")
    elif spec.gravity is None:
        spec.gravity = np.array(DEFAULT_GRAVITY)
    _apply_armature(spec, armature)
    return spec, label, reader.notes, reader.loops


def _say(label, notes, strict):
    """All notes of one file as one URDFWarning, or with strict the first as a URDFError."""
    if not notes:
        return
    if strict:
        where, why = notes[0]
        more = len(notes) - 1
        raise URDFError(f"{label}: {where}: {why} (strict"
                        + (f"; and {more} more problem{'s' if more > 1 else ''})" if more
                           else ")"))
    shown = "\n".join(f"  {where}: {why}" for where, why in notes)
    warn(f"{label}: loaded with {len(notes)} warning{'s' if len(notes) > 1 else ''} "
          f"(strict=True or --strict refuses):\n{shown}")


SINGULAR = ("the mass matrix is singular: a joint moves no mass or inertia (inverse dynamics "
            "and kinematics work, forward dynamics raises)")


def load(source, gravity=None, armature=None, *, check_inertia=True, strict=False,
         mimic="couple", xacro_args=None, max_bytes=MAX_BYTES, floating_base=False,
         robot_class=None, xacro_env=False):
    """robodyn.load_urdf: parse_urdf, then the Robot (built by ``robot_class``, default
    robodyn.robot: a CoupledRobot when the file has coupled joints); a singular mass matrix (a joint that moves no mass,
    e.g. Romeo's massless hands) is one more warning, said with the file's others; errors of
    the C++ model are URDFErrors naming the file. A file with <loop_joint>s gives a
    robodyn.ConstrainedRobot on its tree (docs/constraints.md)."""
    Robot = build_robot if robot_class is None else robot_class
    spec, label, notes, loops = _parse(source, gravity, armature, check_inertia, mimic,
                                       xacro_args, max_bytes, floating_base, xacro_env)
    if strict:
        _say(label, notes, True)
    if not spec.bodies:
        raise URDFError(f"{label}: robot: no moving joint: with its root link fixed the model "
                        "has no degrees of freedom (a single rigid body)")
    try:
        robot = Robot(spec)
    except ValueError as e:
        if "mass matrix is singular" not in str(e) or strict:
            raise URDFError(f"{label}: {e}") from None
        notes.append(("model", SINGULAR))
        spec.check_mass_matrix = False
        try:
            robot = Robot(spec)
        except ValueError as e2:
            raise URDFError(f"{label}: {e2}") from None
    _say(label, notes, strict)
    if not loops:
        return robot
    return constrained(robot, loops, _with_loops, lambda m: URDFError(f"{label}: {m}"))


def _with_loops(robot, loops):
    """The ConstrainedRobot of a URDF's tree and its <loop_joint>s (LoopConstraint keywords)."""
    return ConstrainedRobot(robot, [LoopConstraint(**kw) for kw in loops])



def _vector3(value, what):
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected 3 finite numbers, got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: expected 3 finite numbers, got {value!r}")
    return v.copy()
