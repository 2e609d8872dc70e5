"""Force elements between bodies: springs, dampers and actuators (docs/forces.md).

``robot.with_forces([Spring(...), RotationalSpring(...), BodyForce(...)])`` gives a
:class:`robodyn.model.robot.ForcedRobot` whose forward dynamics, simulation, potential energy and derivatives
include the elements' generalized force, evaluated in C++ (cpp/include/robodyn/algorithms/forces.hpp).
"""

from .curve import CURVE_KINDS, Curve
from .elements import FRAMES, BodyForce, RotationalSpring, Spring

__all__ = ["Spring", "RotationalSpring", "BodyForce", "Curve",
           "CURVE_KINDS", "FRAMES"]
