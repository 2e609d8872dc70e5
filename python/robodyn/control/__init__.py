"""The control layer: the control laws (laws: ComputedTorque, PDGravity, Feedforward,
AdaptiveComputedTorque and their base Controller) and the reference trajectories
(trajectories). ``robodyn.control`` is this package: the laws' public names are its own.
Imports the model layer and below."""

from .laws import *  # noqa: F401,F403
from .laws import __all__ as _laws

__all__ = list(_laws)
