"""The elements of a URDF read one by one: attributes and numbers (:class:`Reader`, with the
messages '<file>: <where>: <reason>'), poses, ``<inertial>`` and its physical checks, and
``<joint>``; robodyn.io.urdf assembles them into a tree."""

from __future__ import annotations

import math
import os
import re
import sys
import warnings

import numpy as np

from .urdf_source import URDFError, URDFWarning
from .urdf_write import rpy_to_matrix

__all__ = ["Reader", "read_inertial", "inertia_violation", "read_joint", "warn", "ROOT_JOINT",
           "INERTIA_RTOL", "INERTIA_ATOL", "Joint", "pose"]

# The one inertia tolerance, shared with the C++ model (cpp/include/robodyn/model/model.hpp,
# kInertiaRtol / kInertiaAtol; a test checks they agree): a principal moment may be below 0, and
# I1 + I2 below I3, by max(INERTIA_RTOL * largest |principal moment|, INERTIA_ATOL).
INERTIA_RTOL = 1e-9
INERTIA_ATOL = 1e-12  # kg m^2: exporter noise (a 1 g part of 1 mm already has ~1e-10)

# the robodyn package: warnings name the first frame outside it
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_MOVING = ("revolute", "continuous", "prismatic")
_UNSUPPORTED = ("planar",)
ROOT_JOINT = "root_joint"  # name of the free-flyer joint that floating_base=True adds
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER = re.compile(_NUM)
# the fast paths of Reader.number / vector: an attribute that is exactly one / three such
# numbers (surrounded and separated by whitespace as str.strip / str.split see it: \s is
# the same set) and finite reads in one match; anything else takes the per-token path,
# which accepts nothing more and gives the messages
_ONE_NUMBER = re.compile(rf"\s*({_NUM})\s*")
_THREE_NUMBERS = re.compile(rf"\s*({_NUM})\s+({_NUM})\s+({_NUM})\s*")
# several one-number attributes of an element joined by "," (which no number or whitespace
# contains, so the k - 1 commas of a match are the joins): one match reads them all
_JOINED = {k: re.compile(",".join([rf"\s*({_NUM})\s*"] * k)) for k in (2, 6)}
_INFINITY = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf}


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


def warn(message):
    warnings.warn(message, URDFWarning, stacklevel=_caller_stacklevel())



class Reader:
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

_EYE4 = np.eye(4)
_ROT0 = rpy_to_matrix(0.0, 0.0, 0.0)  # what an absent rpy gives (with -0.0 at [2, 0])


def pose(reader, el, where):
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
        R = rpy_to_matrix(*reader.vector(el, "rpy", where, (0.0, 0.0, 0.0)))
        reader.rotations[rpy] = R
    return R


# ---------------------------------------------------------------- links and joints

def read_inertial(reader, link_el, name):
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


class Joint:
    __slots__ = ("index", "name", "type", "parent", "child", "origin", "axis", "lower", "upper",
                 "velocity", "effort", "damping", "friction", "armature", "mimic")


def read_joint(reader, el, index):
    """Parse one <joint>; moving-joint details are read only for moving joints."""
    j = Joint()
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
    j.origin = pose(reader, el.find("origin"), where)
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
