"""Closed loops and contacts: loop constraints on a robot (docs/constraints.md)."""

from .loop import AXIS_NAMES, KINDS, LoopConstraint
from .system import ConstrainedRobot

__all__ = ["AXIS_NAMES", "KINDS", "LoopConstraint", "ConstrainedRobot"]
