"""The bundled robot models: the Intelledex 605 and the Stanford arm, and the free-floating
systems of the seed documents (Lynch's satellite, JPL's five-body spacecraft, DASC's cat).

Each is a URDF file shipped with the package (``robodyn/data/urdf/<name>.urdf`` in an
installed wheel, ``robots/urdf/<name>.urdf`` in a source checkout); the header comment of each
file gives the source of every number. ``load(name)`` returns ``robodyn.load_urdf(path)``.

- ``intelledex_605``: six revolute joints, S. Nie's 1988 thesis model (Table 3). The thesis'
  DH frame 0 sits under a z-up ``world`` link (world z = up), so gravity is (0, 0, -9.81).
  Joint limits +-pi are an assumption (the thesis gives none).
- ``stanford_arm``: joints R R P R R R, Paul (1981) / Robotics Toolbox ``models.DH.Stanford``
  with four centre-of-mass components corrected from decimetres to metres, rotor inertias as
  joint armature.

Free-floating (loaded with ``floating_base=True``: the root link is the floating body, q and v
as in ``Robot.integrate``; no gravity; :func:`initial_state` gives each document's initial
state):

- ``lynch_satellite``: Lynch (1988), 8 DOF: a base and two one-link arms hinged about its z
  axis.
- ``jpl_spacecraft``: JPL TR 32-1592, 10 DOF: bus, hub, TV platform, massless gimbal, boom.
  The bus inertia as printed breaks the triangle inequality; it is kept, loaded without the
  triangle check, and a ``UserWarning`` says so.
- ``dasc_cat``: DASC's falling cat, 16 DOF, nine bodies (universal joints as two revolute
  joints through a massless link); q = 0 is the deck's (upside-down) initial shape.
"""

from __future__ import annotations

from pathlib import Path

import math
import warnings

from .urdf import load as load_urdf_file

__all__ = ["available", "names", "urdf_path", "load", "resolve", "example_robot_data_urdf",
           "EXAMPLE_ROBOTS", "initial_state", "intelledex_605", "stanford_arm",
           "lynch_satellite", "jpl_spacecraft", "dasc_cat"]

_NAMES = ("intelledex_605", "stanford_arm", "lynch_satellite", "jpl_spacecraft", "dasc_cat")
_FLOATING = ("lynch_satellite", "jpl_spacecraft", "dasc_cat")

# The Stanford arm's published link-5 inertia (Ixx, Iyy, Izz = 0.003, 0.0004, 0) breaks the
# triangle inequality Ixx <= Iyy + Izz of a physical body; the bundled file keeps it verbatim
# (see its header), so the URDF reader's triangle check is switched off for that file only.
# JPL's bus inertia I0 as printed does too (principal moments 113.6 + 307.5 < 449.9).
_CHECK_INERTIA = {"intelledex_605": True, "stanford_arm": False, "lynch_satellite": True,
                  "jpl_spacecraft": False, "dasc_cat": True}
_WARNINGS = {
    "jpl_spacecraft": "jpl_spacecraft: the bus inertia I0 of JPL TR 32-1592, kept as printed, "
                      "breaks the triangle inequality of a rigid body (principal moments about "
                      "113.6, 307.5, 449.9 kg m^2: 113.6 + 307.5 < 449.9); loaded without the "
                      "triangle check",
}


def available(floating: bool = False) -> list[str]:
    """Names of the bundled fixed-base robots, for :func:`load` and the command line; with
    ``floating=True`` the free-floating seed systems too (every name :func:`load` takes)."""
    return [n for n in _NAMES if floating or n not in _FLOATING]


# robots of the example-robot-data package (the `peers` extra) usable by name when installed:
# name -> URDF path inside its model directory
EXAMPLE_ROBOTS = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
}


def example_robot_data_urdf(name: str) -> Path | None:
    """Path of an example-robot-data URDF (a key of :data:`EXAMPLE_ROBOTS`), or None if the
    package is not installed."""
    rel = EXAMPLE_ROBOTS[name]
    roots = []
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            dist = distribution("example-robot-data")
            roots.append(Path(dist.locate_file(
                "cmeel.prefix/share/example-robot-data/robots")))
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover - Python < 3.8
        pass
    for root in roots:
        if (root / rel).is_file():
            return root / rel
    try:  # a source install of example-robot-data: ask the package (imports Pinocchio)
        import example_robot_data.robots_loader as loader

        path = Path(loader.EXAMPLE_ROBOT_DATA_MODEL_DIR) / rel
        return path if path.is_file() else None
    except Exception:  # not installed, or its imports fail: not available
        return None


def names() -> list[str]:
    """Every robot name :func:`resolve` (and the command line) accepts: the bundled robots, then
    the example-robot-data ones that are installed."""
    return list(_NAMES) + [k for k in EXAMPLE_ROBOTS if example_robot_data_urdf(k) is not None]


def resolve(name_or_path, *, strict=False):
    """A :class:`robodyn.Robot` from a robot name (:func:`names`) or the path of a URDF file.

    The one name resolver of the package: the command line, the benchmark and the examples use
    it. Raises ValueError for an unknown name (listing the known ones, and saying when an
    example-robot-data name needs that package) and FileNotFoundError for a missing file.
    ``strict=True`` refuses, with a ValueError, a robot that would load with a warning.
    """
    import os

    text = os.fspath(name_or_path) if isinstance(name_or_path, os.PathLike) else name_or_path
    if not isinstance(text, str):
        raise TypeError(f"robot: expected a name or a path, got {type(name_or_path).__name__}")
    if text in _NAMES:
        return load(text, strict=strict)
    if text in EXAMPLE_ROBOTS:
        path = example_robot_data_urdf(text)
        if path is None:
            raise ValueError(f"robot {text!r} comes from example-robot-data, which is not "
                             f"installed: pip install example-robot-data (or robodyn[peers])")
        return load_urdf_file(str(path), strict=strict)
    looks_like_path = (os.sep in text or text.endswith((".urdf", ".xml"))
                       or os.path.exists(text))
    if looks_like_path:
        if not os.path.isfile(text):
            raise FileNotFoundError(f"no such URDF file: {text}")
        return load_urdf_file(text, strict=strict)
    raise ValueError(f"unknown robot {text!r}: give a robot name ({', '.join(names())}) or "
                     f"the path of a URDF file")


def _search_dirs() -> list[Path]:
    here = Path(__file__).resolve().parents[1]  # python/robodyn
    # installed wheel first, then the source checkout (python/robodyn -> repo root)
    return [here / "data" / "urdf", here.parents[1] / "robots" / "urdf"]


def urdf_path(name: str) -> Path:
    """Path of the bundled URDF file of robot ``name``.

    Raises ValueError for an unknown name (listing the available ones) and FileNotFoundError
    if the package was installed without its data files.
    """
    if name not in _NAMES:
        raise ValueError(f"unknown robot {name!r}; available: {', '.join(_NAMES)}")
    dirs = _search_dirs()
    for folder in dirs:
        path = folder / f"{name}.urdf"
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{name}.urdf not found in {' or '.join(str(d) for d in dirs)}")


def load(name: str, *, strict: bool = False):
    """The bundled robot ``name`` as a :class:`robodyn.Robot` (see :func:`available`).

    The same as ``robodyn.load_urdf(urdf_path(name))``, except that the Stanford arm is read
    without the URDF reader's triangle-inequality check on inertias (its published link-5
    inertia fails it; the model itself still requires positive semi-definite inertias).
    A robot kept as published with a known defect (jpl_spacecraft's bus inertia) loads with a
    warning saying so; ``strict=True`` refuses it with that text as a ValueError.
    """
    path = urdf_path(name)
    if name in _WARNINGS:
        if strict:
            raise ValueError(f"{_WARNINGS[name]} (refused: strict)")
        warnings.warn(_WARNINGS[name], UserWarning, stacklevel=2)
    if name in _FLOATING:
        return load_urdf_file(str(path), check_inertia=_CHECK_INERTIA[name],
                              floating_base=True, strict=strict)
    return load_urdf_file(str(path), check_inertia=_CHECK_INERTIA[name], strict=strict)


def initial_state(name: str, robot=None):
    """``(q, v)``: the initial state a seed document gives for a bundled floating system.

    - ``lynch_satellite``: arms at q2 = -pi/3, q3 = +pi/3, the base turning at 2.0 rad/s
      about its y axis, everything else at rest;
    - ``jpl_spacecraft``: platform hinges gamma1 = 218 deg, gamma2 = -30 deg (Case 1 and 2),
      everything else zero;
    - ``dasc_cat``: the deck's configuration (all joints 0; the front torso's COM at
      (0.2, 0, 0.6) m, turned 0.401425728 rad about y), at rest.

    ``robot`` (default ``load(name)``) fixes the order of the joints in q and v.
    """
    import numpy as np

    if name not in _FLOATING:
        raise ValueError(f"initial_state: {name!r} is not one of {', '.join(_FLOATING)}")
    if robot is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            robot = load(name)
    joints = list(robot.joint_names)[-(robot.nv - 6):]
    q, v = np.zeros(robot.nq), np.zeros(robot.nv)
    q[6] = 1.0

    def put(joint, value):
        q[7 + joints.index(joint)] = value

    if name == "lynch_satellite":
        put("q2", -math.pi / 3)
        put("q3", math.pi / 3)
        v[1] = 2.0
    elif name == "jpl_spacecraft":
        put("hinge1", math.radians(218.0))
        put("hinge2", math.radians(-30.0))
    else:
        phi = 0.401425728
        q[:3] = (0.2, 0.0, 0.6)
        q[3:7] = (0.0, math.sin(phi / 2), 0.0, math.cos(phi / 2))
    return q, v


def intelledex_605():
    """Intelledex 605 (6R), Nie (1988); gravity (0, 0, -9.81) in the z-up world frame."""
    return load("intelledex_605")


def stanford_arm():
    """Stanford arm (RRPRRR), Paul (1981) via the Robotics Toolbox, COMs in metres."""
    return load("stanford_arm")


def lynch_satellite():
    """Lynch's 8-DOF satellite (floating base and two arms), zero gravity."""
    return load("lynch_satellite")


def jpl_spacecraft():
    """JPL's five-body spacecraft (floating bus), zero gravity; warns about the bus inertia."""
    return load("jpl_spacecraft")


def dasc_cat():
    """DASC's 16-DOF falling cat (floating front torso), zero gravity."""
    return load("dasc_cat")
