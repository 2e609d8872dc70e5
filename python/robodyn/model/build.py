"""The one function that builds a robot of the right class from a model description."""

from __future__ import annotations

from .coupling import CoupledRobot
from .robot import Robot
from .spec import ModelSpec

__all__ = ["robot"]


def robot(spec: ModelSpec) -> Robot:
    """A :class:`Robot` of ``spec``, or a :class:`robodyn.coupling.CoupledRobot` when a body
    of the spec has ``mimic`` (coupled joints: the robot's coordinates are the independent
    joints). ``robodyn.load_urdf`` and ``robodyn.from_dh`` build their robots here."""
    if isinstance(spec, ModelSpec) and any(getattr(b, "mimic", None) is not None
                                           for b in spec.bodies):
        return CoupledRobot(spec)
    return Robot(spec)
