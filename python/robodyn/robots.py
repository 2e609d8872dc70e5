"""The bundled robot models: the Intelledex 605 and the Stanford arm.

Each is a URDF file shipped with the package (``robodyn/data/urdf/<name>.urdf`` in an
installed wheel, ``robots/urdf/<name>.urdf`` in a source checkout); the header comment of each
file gives the source of every number. ``load(name)`` returns ``robodyn.load_urdf(path)``.

- ``intelledex_605``: six revolute joints, S. Nie's 1988 thesis model (Table 3). The thesis'
  DH frame 0 sits under a z-up ``world`` link (world z = up), so gravity is (0, 0, -9.81).
  Joint limits +-pi are an assumption (the thesis gives none).
- ``stanford_arm``: joints R R P R R R, Paul (1981) / Robotics Toolbox ``models.DH.Stanford``
  with four centre-of-mass components corrected from decimetres to metres, rotor inertias as
  joint armature.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["available", "names", "urdf_path", "load", "resolve", "example_robot_data_urdf",
           "EXAMPLE_ROBOTS", "intelledex_605", "stanford_arm"]

_NAMES = ("intelledex_605", "stanford_arm")

# The Stanford arm's published link-5 inertia (Ixx, Iyy, Izz = 0.003, 0.0004, 0) breaks the
# triangle inequality Ixx <= Iyy + Izz of a physical body; the bundled file keeps it verbatim
# (see its header), so the URDF reader's triangle check is switched off for that file only.
_CHECK_INERTIA = {"intelledex_605": True, "stanford_arm": False}


def available() -> list[str]:
    """Names of the bundled robots, for :func:`load` and the command line."""
    return list(_NAMES)


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


def resolve(name_or_path):
    """A :class:`robodyn.Robot` from a robot name (:func:`names`) or the path of a URDF file.

    The one name resolver of the package: the command line, the benchmark and the examples use
    it. Raises ValueError for an unknown name (listing the known ones, and saying when an
    example-robot-data name needs that package) and FileNotFoundError for a missing file.
    """
    import os

    import robodyn

    text = os.fspath(name_or_path) if isinstance(name_or_path, os.PathLike) else name_or_path
    if not isinstance(text, str):
        raise TypeError(f"robot: expected a name or a path, got {type(name_or_path).__name__}")
    if text in _NAMES:
        return load(text)
    if text in EXAMPLE_ROBOTS:
        path = example_robot_data_urdf(text)
        if path is None:
            raise ValueError(f"robot {text!r} comes from example-robot-data, which is not "
                             f"installed: pip install example-robot-data (or robodyn[peers])")
        return robodyn.load_urdf(str(path))
    looks_like_path = (os.sep in text or text.endswith((".urdf", ".xml"))
                       or os.path.exists(text))
    if looks_like_path:
        if not os.path.isfile(text):
            raise FileNotFoundError(f"no such URDF file: {text}")
        return robodyn.load_urdf(text)
    raise ValueError(f"unknown robot {text!r}: give a robot name ({', '.join(names())}) or "
                     f"the path of a URDF file")


def _search_dirs() -> list[Path]:
    here = Path(__file__).resolve().parent
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


def load(name: str):
    """The bundled robot ``name`` as a :class:`robodyn.Robot` (see :func:`available`).

    The same as ``robodyn.load_urdf(urdf_path(name))``, except that the Stanford arm is read
    without the URDF reader's triangle-inequality check on inertias (its published link-5
    inertia fails it; the model itself still requires positive semi-definite inertias).
    """
    path = urdf_path(name)
    import robodyn

    return robodyn.load_urdf(str(path), check_inertia=_CHECK_INERTIA[name])


def intelledex_605():
    """Intelledex 605 (6R), Nie (1988); gravity (0, 0, -9.81) in the z-up world frame."""
    return load("intelledex_605")


def stanford_arm():
    """Stanford arm (RRPRRR), Paul (1981) via the Robotics Toolbox, COMs in metres."""
    return load("stanford_arm")
