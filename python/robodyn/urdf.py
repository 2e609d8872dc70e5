"""URDF front end: read a URDF into a :class:`ModelSpec` and write one back.

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

import codecs
import importlib
import logging
import math
import os
import re
import sys
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from robodyn import safe_io
from robodyn._spec import Body, Frame, ModelSpec, negative_moments
from robodyn.loop_urdf import constrained, loop_joints

__all__ = ["URDFError", "URDFFileNotFoundError", "URDFWarning", "parse_urdf", "spec_to_urdf"]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
MAX_BYTES = 64 * 1024 * 1024  # default size limit of a URDF (file or text): 64 MiB
# The one inertia tolerance, shared with the C++ model (cpp/include/robodyn/model.hpp,
# kInertiaRtol / kInertiaAtol; a test checks they agree): a principal moment may be below 0, and
# I1 + I2 below I3, by max(INERTIA_RTOL * largest |principal moment|, INERTIA_ATOL).
INERTIA_RTOL = 1e-9
INERTIA_ATOL = 1e-12  # kg m^2: exporter noise (a 1 g part of 1 mm already has ~1e-10)

_log = logging.getLogger("robodyn.urdf")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

_MOVING = ("revolute", "continuous", "prismatic")
_UNSUPPORTED = ("planar",)
ROOT_JOINT = "root_joint"  # name of the free-flyer joint that floating_base=True adds
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER = re.compile(_NUM)
# the fast paths of _Reader.number / vector: an attribute that is exactly one / three such
# numbers (surrounded and separated by whitespace as str.strip / str.split see it: \s is
# the same set) and finite reads in one match; anything else takes the per-token path,
# which accepts nothing more and gives the messages
_ONE_NUMBER = re.compile(rf"\s*({_NUM})\s*")
_THREE_NUMBERS = re.compile(rf"\s*({_NUM})\s+({_NUM})\s+({_NUM})\s*")
# several one-number attributes of an element joined by "," (which no number or whitespace
# contains, so the k - 1 commas of a match are the joins): one match reads them all
_JOINED = {k: re.compile(",".join([rf"\s*({_NUM})\s*"] * k)) for k in (2, 6)}
_INFINITY = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_DTD = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_DECLARED_ENCODING = re.compile(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)


class URDFError(ValueError):
    """A URDF that cannot be loaded; the message names the file, the element and the reason."""


class URDFFileNotFoundError(URDFError, FileNotFoundError):
    """The URDF path does not exist (catchable as ValueError or FileNotFoundError)."""


class URDFWarning(UserWarning):
    """A URDF that loads, with something its user should know (a non-physical inertia on a
    moving link, mimic joints loaded as independent joints). Said once per file;
    ``strict=True`` makes it a :class:`URDFError`."""


def _caller_stacklevel():
    """The stacklevel of warnings.warn (called from _warn) that names the first frame outside
    the robodyn package: the user's line that loaded the robot."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep) and "importlib" not in filename:
            return level
        frame, level = frame.f_back, level + 1
    return level


def _warn(message):
    warnings.warn(message, URDFWarning, stacklevel=_caller_stacklevel())


# ---------------------------------------------------------------- reading the document

def _read_source(source, xacro_args=None, max_bytes=MAX_BYTES, xacro_env=False):
    """(text, label) of a path, an XML string or XML bytes, at most ``max_bytes`` long; a
    ``.xacro`` path is expanded (the expansion is held to the same limit).

    A path must name a regular file: devices (/dev/zero), FIFOs, sockets and directories are
    refused before anything is read (opened non-blocking, so a FIFO cannot stall the call)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes: expected a positive int, got {max_bytes!r}")
    if _is_xacro(source):
        text, label = _expand_xacro(os.fspath(source), xacro_args, xacro_env, max_bytes)
        if len(text) > max_bytes:
            raise URDFError(f"{label}: the expanded xacro has {len(text)} characters, over the "
                            f"limit of {max_bytes} (max_bytes=)")
        return text, label
    if xacro_args is not None:
        raise ValueError("xacro_args: given for a source that is not a .xacro file")
    if xacro_env:
        raise ValueError("xacro_env: given for a source that is not a .xacro file")
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > max_bytes:
            raise URDFError(f"<string>: {len(data)} bytes exceed the limit of {max_bytes} "
                            "(max_bytes=)")
        return _decode(data, "<string>"), "<string>"
    if isinstance(source, str) and source.lstrip().startswith("<"):
        if len(source) > max_bytes:
            raise URDFError(f"<string>: {len(source)} characters exceed the limit of "
                            f"{max_bytes} (max_bytes=)")
        return source, "<string>"
    if isinstance(source, str) and not source.strip():
        raise URDFError("<string>: empty input")
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"parse_urdf expects a path or an XML string, not {type(source).__name__}")
    path = os.fspath(source)
    label = os.fsdecode(path)
    try:
        data = safe_io.read_bytes(path, max_bytes, error=URDFError,
                                  hint=" (pass max_bytes= to load a larger file)",
                                  not_regular="; a URDF is read from a regular file or given "
                                              "as text")
    except FileNotFoundError:
        raise URDFFileNotFoundError(
            f"{label}: file not found (a str is read as XML text only if it starts with '<')"
        ) from None
    return _decode(data, label), label


def source_label(source):
    """The file label of error messages: the path as given, or "<string>" for XML text."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<string>"
    if isinstance(source, str) and (source.lstrip().startswith("<") or not source.strip()):
        return "<string>"
    try:
        return os.fsdecode(os.fspath(source))
    except TypeError:
        return "<string>"


def _is_xacro(source):
    return (isinstance(source, (str, os.PathLike)) and not isinstance(source, bytes)
            and not (isinstance(source, str) and source.lstrip().startswith("<"))
            and os.fsdecode(os.fspath(source)).endswith(".xacro"))


def _expand_xacro(path, xacro_args, xacro_env=False, max_bytes=MAX_BYTES):
    """URDF text of a xacro file with ``xacro_args`` (name -> value) as the values of its
    ``<xacro:arg>`` elements: robodyn.xacro.expand (no code runs, bounded). That module
    builds on this one, so it is imported here by name, when a .xacro is first read."""
    expand = importlib.import_module("robodyn.xacro").expand
    return expand(path, xacro_args, allow_env=bool(xacro_env), max_bytes=max_bytes)


def _decode(data, label):
    """Bytes to text: a BOM, else the XML declaration's encoding, else UTF-8."""
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            break
    else:
        declared = _DECLARED_ENCODING.match(data)
        if declared:
            encoding = declared.group(1).decode("ascii")
    try:
        return data.decode(encoding)
    except LookupError:
        raise URDFError(f"{label}: unknown encoding {encoding!r}") from None
    except UnicodeError as e:
        where = f" (byte {e.start})" if isinstance(e, UnicodeDecodeError) else ""
        raise URDFError(f"{label}: not valid {encoding} text{where}") from None


def _parse_xml(text, label):
    """The root element, refusing DTDs and entities before expat sees the text."""
    if not text.strip():
        raise URDFError(f"{label}: empty input")
    if _DTD.search(text):
        raise URDFError(f"{label}: DTD/entities are not allowed (<!DOCTYPE or <!ENTITY found)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise URDFError(f"{label}: invalid character at position {e.start}") from None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise URDFError(f"{label}: not well-formed XML: {e}") from None
    if root.tag != "robot":
        raise URDFError(f"{label}: the root element is <{root.tag}>, expected <robot>")
    return root


# ---------------------------------------------------------------- attributes and numbers

class _Reader:
    """Attribute access that reports errors as '<label>: <where>: <reason>'."""

    def __init__(self, label):
        self.label = label
        self.notes = []  # (element, reason): warnings, or refusals when strict
        self.rotations = {}  # rpy attribute text -> its rotation matrix (read once per text)

    def error(self, where, reason):
        return URDFError(f"{self.label}: {where}: {reason}")

    def attr(self, el, name, where):
        """A required attribute's text."""
        value = el.get(name)
        if value is None:
            raise self.error(where, f"missing required attribute {name!r}")
        return value

    def name(self, el, where):
        value = self.attr(el, "name", where)
        if not value.strip():
            raise self.error(where, "attribute 'name' is empty")
        return value

    def number(self, el, name, where, default=None, allow_inf=False):
        """A float attribute, required unless a default is given; finite unless allow_inf."""
        text = el.get(name)
        if text is None:
            if default is None:
                raise self.error(where, f"missing required attribute {name!r}")
            return float(default)
        match = _ONE_NUMBER.fullmatch(text)
        if match is not None:
            value = float(match[1])
            if value - value == 0.0:  # finite (inf - inf is nan)
                return value
        return self._to_float(text.strip(), name, where, allow_inf)

    def numbers(self, el, names, where, default=None, allow_inf=False):
        """[number(el, name, ...) for name in names] (2 or 6 names), in one regex match when
        every attribute is present and a plain finite number; otherwise name by name."""
        texts = [el.get(name) for name in names]
        if None not in texts:
            match = _JOINED[len(names)].fullmatch(",".join(texts))
            if match is not None:
                values = [float(x) for x in match.groups()]
                if 0.0 * sum(values) == 0.0:  # all finite (an inf or overflow gives nan)
                    return values
        return [self.number(el, name, where, default, allow_inf) for name in names]

    def vector(self, el, name, where, default):
        """Three finite floats separated by whitespace, as a (3,) array."""
        text = el.get(name)
        if text is None:
            return np.array(default, dtype=float)
        return np.array(self.triple(text, name, where))

    def triple(self, text, name, where):
        """The three finite floats of an attribute's text, as a tuple."""
        match = _THREE_NUMBERS.fullmatch(text)
        if match is not None:
            x, y, z = float(match[1]), float(match[2]), float(match[3])
            if (x - x) + (y - y) + (z - z) == 0.0:  # all finite
                return x, y, z
        tokens = text.split()
        if len(tokens) != 3:
            raise self.error(where, f"attribute {name!r} must hold 3 numbers, got {text!r}")
        return tuple(self._to_float(t, name, where, False) for t in tokens)

    def _to_float(self, token, name, where, allow_inf):
        if allow_inf and token.lower() in _INFINITY:
            return _INFINITY[token.lower()]
        if _NUMBER.fullmatch(token) is None:
            if token.lower().lstrip("+-") in ("nan", "inf", "infinity"):
                raise self.error(where, f"attribute {name!r}: {token!r} is not finite")
            raise self.error(where, f"attribute {name!r}: {token!r} is not a number")
        value = float(token)
        if not math.isfinite(value):
            raise self.error(where, f"attribute {name!r}: {token!r} is not finite")
        return value


def _rpy_to_matrix(roll, pitch, yaw):
    """URDF fixed-axis rpy: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _matrix_to_rpy(R):
    """Inverse of _rpy_to_matrix; accurate near gimbal lock (pitch = +-pi/2)."""
    roll = math.atan2(R[2, 1], R[2, 2])
    M = R @ _rpy_to_matrix(roll, 0.0, 0.0).T  # = Rz(yaw) Ry(pitch)
    yaw = math.atan2(-M[0, 1], M[1, 1])
    pitch = math.atan2(-M[2, 0], M[2, 2])
    return roll, pitch, yaw


_EYE4 = np.eye(4)
_ROT0 = _rpy_to_matrix(0.0, 0.0, 0.0)  # what an absent rpy gives (with -0.0 at [2, 0])


def _pose(reader, el, where):
    """4x4 pose of an <origin> element (identity when absent)."""
    T = _EYE4.copy()
    if el is None:
        return T
    where = f"{where} <origin>"
    if el.get("xyz") is not None:
        T[:3, 3] = reader.vector(el, "xyz", where, None)
    T[:3, :3] = _rotation(reader, el, where)
    return T


def _rotation(reader, el, where):
    """The rotation of an <origin>'s rpy (of (0, 0, 0) when absent), computed once per text
    (the caller copies it)."""
    rpy = el.get("rpy")
    R = reader.rotations.get(rpy)
    if R is None:
        R = _rpy_to_matrix(*reader.vector(el, "rpy", where, (0.0, 0.0, 0.0)))
        reader.rotations[rpy] = R
    return R


# ---------------------------------------------------------------- links and joints

def _inertial(reader, link_el, name):
    """(mass, com, inertia about the COM in the link frame, inertia as written) or None
    without <inertial>. (Called under np.errstate(all="ignore"): an overflowing product is
    caught by the finiteness check of the combined bodies.)"""
    el = link_el.find("inertial")
    if el is None:
        return None
    where = f"link {name!r} <inertial>"
    origin = el.find("origin")
    if origin is None or origin.get("xyz") is None:
        com = np.zeros(3)
    else:
        com = reader.vector(origin, "xyz", f"{where} <origin>", None)
    R = _rotation(reader, origin, f"{where} <origin>") if origin is not None else _ROT0
    mass_el = el.find("mass")
    if mass_el is None:
        raise reader.error(where, "missing <mass>")
    mass = reader.number(mass_el, "value", f"{where} <mass>")
    if mass < 0.0:
        raise reader.error(f"{where} <mass>", f"negative mass {mass!r}")
    inertia_el = el.find("inertia")
    if inertia_el is None:
        raise reader.error(where, "missing <inertia>")
    w = f"{where} <inertia>"
    ixx, ixy, ixz, iyy, iyz, izz = reader.numbers(inertia_el, _INERTIA_KEYS, w)
    written = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return mass, com, R @ written @ R.T, written


_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def inertia_violation(inertia):
    """None for a physical rotational inertia (symmetric positive semi-definite, principal
    moments I1 <= I2 <= I3 with I1 + I2 >= I3), else the violated inequality as text. The
    tolerance is ``max(INERTIA_RTOL * largest |moment|, INERTIA_ATOL)``, the C++ model's."""
    with np.errstate(all="ignore"):
        try:
            moments = np.linalg.eigvalsh(np.asarray(inertia, dtype=float))
        except np.linalg.LinAlgError:
            moments = np.full(3, math.nan)
    if not np.all(np.isfinite(moments)):
        return "inertia is too large to analyse"
    tol = max(INERTIA_RTOL * float(np.max(np.abs(moments))), INERTIA_ATOL)
    if moments[0] < -tol:
        return (f"inertia is not positive semi-definite: principal moment I1 = "
                f"{moments[0]:.6g} < 0 (principal moments {_fmt(moments)})")
    if moments[0] + moments[1] < moments[2] - tol:
        return ("principal moments violate the triangle inequality I1 + I2 >= I3: "
                f"{moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g} "
                f"(principal moments {_fmt(moments)})")
    return None


def _fmt(values):
    return "(" + ", ".join(f"{v:.6g}" for v in values) + ")"


class _Joint:
    __slots__ = ("index", "name", "type", "parent", "child", "origin", "axis", "lower", "upper",
                 "velocity", "effort", "damping", "friction", "armature", "mimic")


def _joint(reader, el, index):
    """Parse one <joint>; moving-joint details are read only for moving joints."""
    j = _Joint()
    j.index = index
    j.mimic = None
    j.name = reader.name(el, f"joint #{index + 1}")
    where = f"joint {j.name!r}"
    j.type = reader.attr(el, "type", where)
    if j.type in _UNSUPPORTED:
        raise reader.error(where, f"{j.type} joints are not supported "
                           "(robodyn models 1-dof joints and a floating root joint)")
    if j.type not in _MOVING and j.type not in ("fixed", "floating"):
        raise reader.error(where, f"unknown joint type {j.type!r} "
                           "(expected revolute, continuous, prismatic, fixed or floating)")
    parent_el, child_el = el.find("parent"), el.find("child")
    j.parent = parent_el.get("link") if parent_el is not None else None
    j.child = child_el.get("link") if child_el is not None else None
    if j.parent is None or j.child is None:  # say which, as the attribute reader does
        for role in ("parent", "child"):
            role_el = el.find(role)
            if role_el is None:
                raise reader.error(where, f"missing <{role}>")
            reader.attr(role_el, "link", f"{where} <{role}>")
    j.origin = _pose(reader, el.find("origin"), where)
    if j.type == "fixed":
        return j
    if j.type == "floating":
        # a free-flyer: no axis, limits, friction or rotor
        j.axis = np.array([0.0, 0.0, 1.0])
        j.lower, j.upper, j.velocity, j.effort = -math.inf, math.inf, math.inf, math.inf
        j.damping = j.friction = j.armature = 0.0
        return j

    axis_el = el.find("axis")
    x, y, z = 1.0, 0.0, 0.0  # the URDF default
    if axis_el is not None:
        text = axis_el.get("xyz")
        if text is None:
            raise reader.error(f"{where} <axis>", "missing required attribute 'xyz'")
        x, y, z = reader.triple(text, "xyz", f"{where} <axis>")
    scale = max(abs(x), abs(y), abs(z))
    if scale == 0.0:
        raise reader.error(f"{where} <axis>", "the axis is zero")
    axis = np.array((x / scale, y / scale, z / scale))
    if (x == 0.0) + (y == 0.0) + (z == 0.0) == 2:  # along a frame axis: already unit
        j.axis = axis
    else:
        j.axis = axis / math.sqrt(float(axis @ axis))

    limit_el = el.find("limit")
    j.lower, j.upper, j.velocity, j.effort = -math.inf, math.inf, math.inf, math.inf
    if limit_el is None and j.type != "continuous":
        raise reader.error(where, f"missing <limit> (required for {j.type} joints)")
    if limit_el is not None:
        w = f"{where} <limit>"
        j.effort, j.velocity = reader.numbers(limit_el, ("effort", "velocity"), w,
                                              allow_inf=True)
        for key in ("effort", "velocity"):
            if getattr(j, key) < 0.0:
                raise reader.error(w, f"attribute {key!r} is negative")
            if getattr(j, key) == 0.0:  # 0: not given (exporters write it for "unknown")
                setattr(j, key, math.inf)
        if j.type != "continuous":
            j.lower, j.upper = reader.numbers(limit_el, ("lower", "upper"), w, default=0.0,
                                              allow_inf=True)
            # the largest finite double is "no limit" (what spec_to_urdf writes for +-inf)
            if j.lower == -sys.float_info.max:
                j.lower = -math.inf
            if j.upper == sys.float_info.max:
                j.upper = math.inf
            if j.lower > j.upper:
                raise reader.error(w, f"lower {j.lower!r} > upper {j.upper!r}")

    dyn_el = el.find("dynamics")
    j.damping = j.friction = 0.0
    if dyn_el is not None:
        w = f"{where} <dynamics>"
        j.damping = reader.number(dyn_el, "damping", w, default=0.0)
        j.friction = reader.number(dyn_el, "friction", w, default=0.0)
        for key in ("damping", "friction"):
            if getattr(j, key) < 0.0:
                raise reader.error(w, f"attribute {key!r} is negative")

    ext_el = el.find("robodyn")
    j.armature = 0.0
    if ext_el is not None:
        j.armature = reader.number(ext_el, "armature", f"{where} <robodyn>", default=0.0)
        if j.armature < 0.0:
            raise reader.error(f"{where} <robodyn>", "attribute 'armature' is negative")

    mimic_el = el.find("mimic")
    if mimic_el is not None:
        w = f"{where} <mimic>"
        leader = reader.attr(mimic_el, "joint", w)
        j.mimic = (leader, reader.number(mimic_el, "multiplier", w, default=1.0),
                   reader.number(mimic_el, "offset", w, default=0.0))
    return j


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
            links[name] = _inertial(reader, el, name)
    if not links:
        raise reader.error("robot", "no <link> elements")

    joints, names = [], set()
    for i, el in enumerate(root_el.findall("joint")):
        j = _joint(reader, el, i)
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
    # closed loops (<loop_joint>, robodyn.loop_urdf): kept by the reader for load()
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
    text, label = _read_source(source, xacro_args, max_bytes, xacro_env)
    reader = _Reader(label)
    spec = _build(reader, _parse_xml(text, label), check_inertia, mimic, bool(floating_base))
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
    _warn(f"{label}: loaded with {len(notes)} warning{'s' if len(notes) > 1 else ''} "
          f"(strict=True or --strict refuses):\n{shown}")


SINGULAR = ("the mass matrix is singular: a joint moves no mass or inertia (inverse dynamics "
            "and kinematics work, forward dynamics raises)")


def load(source, gravity=None, armature=None, *, check_inertia=True, strict=False,
         mimic="couple", xacro_args=None, max_bytes=MAX_BYTES, floating_base=False,
         robot_class=None, xacro_env=False, constrained_class=None):
    """robodyn.load_urdf: parse_urdf, then the Robot (of ``robot_class``, robodyn.Robot: passed
    in, as robot.py imports this module), or with <loop_joint>s ``constrained_class(robot,
    loops)`` (robodyn.load_urdf's ConstrainedRobot, passed in likewise); a singular mass matrix (a joint that moves no mass,
    e.g. Romeo's massless hands) is one more warning, said with the file's others; errors of
    the C++ model are URDFErrors naming the file."""
    Robot = robot_class
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
    if constrained_class is None:
        raise URDFError(f"{label}: has <loop_joint> elements: load it with robodyn.load_urdf")
    return constrained(robot, loops, constrained_class, lambda m: URDFError(f"{label}: {m}"))


def _vector3(value, what):
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected 3 finite numbers, got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: expected 3 finite numbers, got {value!r}")
    return v.copy()


# ---------------------------------------------------------------- writing

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
    ET.SubElement(parent, "origin", xyz=_vec(T[:3, 3]), rpy=_vec(_matrix_to_rpy(T[:3, :3])))


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
