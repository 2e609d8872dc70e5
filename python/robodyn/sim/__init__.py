"""The simulation layer: :func:`simulate`, its integrators and loops, the
:class:`SimulationResult` (simulation) and its figures and animations (plotting, _gif).
Imports the control layer and below."""

from .simulation import SimulationError, SimulationResult, simulate

__all__ = ["simulate", "SimulationResult", "SimulationError"]
