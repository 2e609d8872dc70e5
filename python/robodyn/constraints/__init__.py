"""Closed loops and contacts: loop constraints on a robot (docs/constraints.md)."""

from .loop import AXIS_NAMES, KINDS, LoopConstraint
from .system import ConstrainedRobot
from .forces import ForcedConstrainedRobot

__all__ = ["AXIS_NAMES", "KINDS", "LoopConstraint", "ConstrainedRobot", "ForcedConstrainedRobot"]
