"""What every command shares: the robot options and loading, vectors from the command line,
numbers and units in tables, and the usage error (exit status 2)."""

from __future__ import annotations

import math
import os
import re
import sys
import warnings

import numpy as np

from ..util.messages import say_warning

class UsageError(Exception):
    """A bad command line detected after parsing (reported with exit status 2)."""


# ---------------------------------------------------------------------------------------------
# shared helpers


def add_robot_options(p):
    """The options of every subcommand that loads a ROBOT: ``--strict``, ``--xacro-arg``,
    ``--xacro-allow-env``."""
    p.add_argument("--strict", action="store_true",
                   help="refuse a URDF that would load with warnings (a non-physical inertia "
                        "on a moving link)")
    p.add_argument("--xacro-arg", action="append", metavar="NAME:=VALUE", dest="xacro_arg",
                   help="an argument of a .xacro ROBOT file (repeatable)")
    p.add_argument("--xacro-allow-env", action="store_true", dest="xacro_env",
                   help="let a .xacro ROBOT file read environment variables ($(env), "
                        "$(optenv)) and ROS package paths ($(find) beyond its own folders)")


def add_floating_option(p):
    """``--floating-base`` (info, id, simulate, codegen, opcount)."""
    p.add_argument("--floating-base", action="store_true", dest="floating_base",
                   help="the URDF's root link moves freely (a free-flyer joint: q = [base "
                        "position, quaternion x y z w, joints], v = [base angular, base "
                        "linear, joints])")


def robot_options(args):
    """load_robot's keyword arguments from the options of :func:`add_robot_options`."""
    xacro_args = None
    for item in getattr(args, "xacro_arg", None) or []:
        name, sep, value = item.partition(":=")
        if not sep or not name.strip():
            raise UsageError(f"--xacro-arg: expected NAME:=VALUE, got {item!r}")
        xacro_args = xacro_args or {}
        xacro_args[name.strip()] = value
    return {"strict": bool(getattr(args, "strict", False)), "xacro_args": xacro_args,
            "xacro_env": bool(getattr(args, "xacro_env", False))}


def load_robot(name_or_path, *, strict=False, xacro_args=None, floating_base=False,
               xacro_env=False, loops=False):
    """A robot by name (:func:`robodyn.robots.resolve`: the bundled robots and, when installed,
    example-robot-data's) or a URDF (or .xacro) file by path; UsageError if there is none.

    Loading warnings are printed once to stderr, one line each (:func:`say_warning`);
    ``strict`` turns them into errors (ValueError). ``loops``: a URDF with ``<loop_joint>``s
    gives its ConstrainedRobot (else it is refused)."""
    from ..io import load_urdf, robots, urdf

    text = str(name_or_path)
    looks_like_path = (os.path.sep in text or text.endswith((".urdf", ".xml", ".xacro"))
                       or os.path.exists(text))
    if looks_like_path:
        if not os.path.isfile(text):
            raise UsageError(f"no such URDF file: {text}")
        if (xacro_args or xacro_env) and not text.endswith(".xacro"):
            flag = "--xacro-arg" if xacro_args else "--xacro-allow-env"
            raise UsageError(f"{flag}: {text} is not a .xacro file")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", urdf.URDFWarning)
            robot = load_urdf(text, strict=strict, xacro_args=xacro_args,
                              floating_base=floating_base, xacro_env=xacro_env)
        for w in caught:
            say_warning(w.message)
        if hasattr(robot, "constraints") and not loops:  # <loop_joint>s: a ConstrainedRobot
            raise UsageError(f"{text}: closes loops with <loop_joint> elements; the command "
                             "line handles trees: use the Python API (docs/constraints.md)")
        return robot
    if xacro_args or xacro_env:
        flag = "--xacro-arg" if xacro_args else "--xacro-allow-env"
        raise UsageError(f"{flag}: {text} is a robot name, not a .xacro file")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            robot = robots.resolve(text, strict=strict)
    except ValueError as exc:
        if "unknown robot" in str(exc) or "not installed" in str(exc):
            raise UsageError(str(exc)) from None
        raise
    for w in caught:
        print(f"robodyn: warning: {w.message}", file=sys.stderr)
    if floating_base and robot.nq == robot.nv:
        raise UsageError(f"--floating-base: the bundled {text} has a fixed base (its root link "
                         "has no mass); give a URDF path")
    return robot


SPLIT = re.compile(r"[,\s]+")


def parse_vector(tokens, n, name):
    """Numbers from ``tokens`` (a list of strings, each comma- and/or space-separated).

    A single number is repeated for all ``n`` joints; otherwise exactly ``n`` are needed.
    """
    if tokens is None:
        return None
    if isinstance(tokens, str):
        tokens = [tokens]
    parts = [p for tok in tokens for p in SPLIT.split(tok.strip()) if p]
    try:
        values = np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise UsageError(f"{name}: expected numbers, got {' '.join(tokens)!r}") from None
    if values.shape[0] == 1 and n > 1:
        values = np.full(n, values[0])
    if values.shape[0] != n:
        raise UsageError(f"{name}: expected {n} values (one per joint), got {values.shape[0]}")
    if not np.all(np.isfinite(values)):
        raise UsageError(f"{name}: values must be finite")
    return values


def fmt(x, width=10):
    if isinstance(x, float) and math.isinf(x):
        return f"{'inf' if x > 0 else '-inf':>{width}}"
    return f"{x:>{width}.4g}"


def clean_zeros(values, rel=1e-12):
    """``values`` with entries below ``rel`` times the largest magnitude (rounding residue of
    an exact zero, e.g. 4.4e-16 from g(q) of a joint gravity cannot turn) set to 0."""
    v = np.array(values, dtype=np.float64)
    scale = float(np.max(np.abs(v))) if v.size else 0.0
    v[np.abs(v) <= rel * max(scale, 1e-300)] = 0.0
    return v + 0.0  # no -0


# units of a joint's position, velocity, acceleration, effort and rotor inertia
UNITS = {
    "revolute": ("rad", "rad/s", "rad/s^2", "N m", "kg m^2"),
    "prismatic": ("m", "m/s", "m/s^2", "N", "kg"),
}


def joint_units(robot):
    """Per joint, the unit tuple of :data:`UNITS` (position, velocity, acceleration, effort,
    rotor inertia)."""
    return [UNITS.get(b.joint_type, UNITS["revolute"]) for b in robot.spec.bodies]
