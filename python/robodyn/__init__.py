"""robodyn: dynamics of robot mechanisms (Newton-Euler, Kane, CRBA, ABA) with a C++ core.

The package is in layers, each a subpackage importing only the ones below it
(docs/design.md "Layers"): util <- model <- constraints <- io <- control <- sim, codegen,
identification <- campaign <- ros <- view <- cli. This module gathers the public names.
"""

from __future__ import annotations

from ._core import get_num_threads, set_num_threads
from .constraints import ConstrainedRobot, LoopConstraint
from .io.loaders import from_dh, load_urdf
from .model import Body, CoupledRobot, ForcedRobot, Frame, ModelSpec, Robot
from .model.build import robot
from .model.forces import BodyForce, Curve, RotationalSpring, Spring
from .sim import SimulationResult, simulate
from .util.version import __version__


def dataset(robot, n, quantities=("q", "qd", "qdd", "tau"), sampler="uniform", chunk=100_000,
            path=None, **options):
    """A chunked dataset of dynamics quantities through dask.array, written to Parquet or Zarr
    when ``path`` is given; see robodyn.datasets.dataset (needs the ``campaign`` extra)."""
    from .campaign.datasets import dataset as _dataset

    return _dataset(robot, n, quantities, sampler, chunk, path, **options)


# the modules of the public API by their short names (robodyn.robots, robodyn.urdf, ...),
# loaded on first use
MODULES = {
    "robots": "io.robots", "urdf": "io.urdf", "xacro": "io.xacro", "dh": "io.dh",
    "coupling": "model.coupling", "safe_io": "util.safe_io",
    "control": "control", "trajectories": "control.trajectories",
    "simulation": "sim.simulation", "plotting": "sim.plotting",
    "codegen": "codegen", "opcount": "codegen.opcount", "published": "codegen.published",
    "identification": "identification",
    "campaign": "campaign", "datasets": "campaign.datasets",
    "ros": "ros", "cli": "cli",
    "forces": "model.forces", "loop_urdf": "io.loop_urdf", "constrained_simulation": "sim.constrained",
}


def __getattr__(name):
    import importlib

    if name in MODULES:
        return importlib.import_module(f".{MODULES[name]}", __name__)
    raise AttributeError(f"module 'robodyn' has no attribute '{name}'")


__all__ = ["Robot", "CoupledRobot", "robot", "ModelSpec", "Body", "Frame", "load_urdf",
           "from_dh", "set_num_threads", "get_num_threads", "SimulationResult", "simulate",
           "dataset", "robots", "trajectories", "control", "campaign", "coupling", "safe_io",
           "ConstrainedRobot", "LoopConstraint", "ForcedRobot", "Spring", "RotationalSpring", "BodyForce",
           "Curve"]
