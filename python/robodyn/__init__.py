"""robodyn: dynamics of serial robot manipulators (Newton-Euler and Kane) with a C++ core."""

from __future__ import annotations

from ._core import get_num_threads, set_num_threads
from ._spec import Body, Frame, ModelSpec
from .robot import Robot
from .constraints import ConstrainedRobot, LoopConstraint
from . import coupling as _coupling  # noqa: F401,E402 (registers CoupledRobot with Robot)
from .simulation import SimulationResult, simulate
from .forces import BodyForce, Curve, RotationalSpring, Spring  # noqa: E402

__version__ = "0.1.0"


def load_urdf(path_or_xml_string, gravity=None, armature=None, *, check_inertia=True,
              strict=False, mimic="couple", xacro_args=None, max_bytes=None,
              floating_base=False, xacro_env=False) -> Robot:
    """Load a URDF file (path), a ``.xacro`` file (expanded with ``xacro_args``, needs the
    ``xacro`` extra) or URDF text into a Robot. See docs/urdf.md.

    ``armature``: rotor inertias, a dict joint name -> value or a sequence in joint order
    (overrides the ``<robodyn armature=.../>`` extension element). A non-physical inertia on a
    link that moves loads with one :class:`robodyn.urdf.URDFWarning` per file naming the link
    and the violated inequality (links that never move are not checked);
    ``strict=True`` refuses such a file instead, ``check_inertia=False`` checks nothing.
    ``mimic="couple"`` (default): ``<mimic>`` joints follow their leaders and the Robot's
    coordinates are the independent joints (robodyn.coupling); ``"independent"`` loads them
    as independent joints, like Pinocchio's and MuJoCo's loaders. A joint that moves no mass
    (singular mass matrix) loads with a warning (forward dynamics then raises). Every error is a
    ``robodyn.urdf.URDFError`` (a ValueError) "<file>: <element>: <reason>".
    ``max_bytes``: the largest file or text read (default 64 MiB, robodyn.urdf.MAX_BYTES); a
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
    from .urdf import MAX_BYTES, URDFFileNotFoundError, load

    if isinstance(path_or_xml_string, str) and not path_or_xml_string.lstrip().startswith("<"):
        import os

        from . import robots

        name = path_or_xml_string
        if name in robots.available(floating=True) + list(robots.EXAMPLE_ROBOTS) and \
                not os.path.exists(name):
            call = "load" if name in robots.available(floating=True) else "resolve"
            raise URDFFileNotFoundError(
                f"{name}: no such URDF file; {name!r} is a robot name: use "
                f"robodyn.robots.{call}({name!r})")
    return load(path_or_xml_string, gravity=gravity, armature=armature,
                check_inertia=check_inertia, strict=strict, mimic=mimic, xacro_args=xacro_args,
                robot_class=Robot, max_bytes=MAX_BYTES if max_bytes is None else max_bytes,
                floating_base=floating_base, xacro_env=xacro_env,
                constrained_class=_with_loops)


def _with_loops(robot, loops):
    """The ConstrainedRobot of a URDF's tree and its <loop_joint>s (LoopConstraint keywords)."""
    return ConstrainedRobot(robot, [LoopConstraint(**kw) for kw in loops])


def from_dh(rows, convention="standard", gravity=(0.0, 0.0, -9.81), name="dh_robot", *,
            check_inertia=True) -> Robot:
    """Build a Robot from a Denavit-Hartenberg table (``convention`` "standard" or "modified").

    Rows are dicts or tuples (theta, d, a, alpha, joint, mass, com, inertia[, armature]); see
    robodyn.dh.dh_to_spec. ``check_inertia=False`` accepts inertias that break the triangle
    inequality (the verbatim Stanford arm of the Robotics Toolbox has one).
    """
    from .dh import dh_to_spec

    return Robot(dh_to_spec(rows, convention=convention, gravity=gravity, name=name,
                            check_inertia=check_inertia))


def dataset(robot, n, quantities=("q", "qd", "qdd", "tau"), sampler="uniform", chunk=100_000,
            path=None, **options):
    """A chunked dataset of dynamics quantities through dask.array, written to Parquet or Zarr
    when ``path`` is given; see robodyn.datasets.dataset (needs the ``campaign`` extra)."""
    from .datasets import dataset as _dataset

    return _dataset(robot, n, quantities, sampler, chunk, path, **options)


def __getattr__(name):
    # submodules loaded on first use: robodyn.robots, robodyn.trajectories, ...
    import importlib

    if name in ("robots", "trajectories", "control", "urdf", "dh", "campaign", "datasets"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'robodyn' has no attribute '{name}'")


__all__ = ["Robot", "ModelSpec", "Body", "Frame", "load_urdf", "from_dh", "set_num_threads", "SimulationResult",
           "get_num_threads", "robots", "trajectories", "control", "simulate", "dataset",
           "campaign", "Spring", "RotationalSpring", "BodyForce", "Curve"]
