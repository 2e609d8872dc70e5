"""The model layer: the Robot (an immutable model plus its workspace), its description
(ModelSpec), coupled joints, and the Lie-group and momentum helpers of a free base.
Imports only robodyn.util and the compiled core."""

from .coupling import CoupledRobot
from .robot import ForcedRobot, Robot
from .spec import Body, Frame, ModelSpec

__all__ = ["Robot", "CoupledRobot", "ForcedRobot", "ModelSpec", "Body", "Frame"]
