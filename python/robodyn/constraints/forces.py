"""A constrained system with force elements: ``ConstrainedRobot.with_forces([...])``.

The elements (robodyn.Spring, RotationalSpring, BodyForce; docs/forces.md) act on the spanning
tree, so the system's tree becomes a :class:`robodyn.ForcedRobot` and their generalized force
``Q(q, v, t)`` (evaluated in C++ by the tree's force set) joins the applied force of the
constrained equations of motion:

    M qdd + h = tau + Q + J' lam,    J qdd = -gamma - kd J v - kp phi.

The constrained forward dynamics passes ``tau + Q`` to the constraint solver; the inverse
dynamics, the energies and the simulation use the tree's ``inverse_dynamics`` (which
subtracts Q), ``potential_energy`` (gravity plus the springs) and ``kinetic_energy``.
"""

from __future__ import annotations

import numpy as np

from .system import ConstrainedRobot

__all__ = ["ForcedConstrainedRobot", "with_forces"]


class ForcedConstrainedRobot(ConstrainedRobot):
    """A :class:`robodyn.ConstrainedRobot` whose tree (``robot``) is a
    :class:`robodyn.ForcedRobot`: the same loops and actuators, with the tree's force elements
    in the forward and inverse dynamics, the simulation and the energies.

    - ``forward_dynamics(q, v, tau, ..., t=0.0)``: ``(qdd, lam)`` with ``tau + Q(q, v, t)``;
    - ``inverse_dynamics(q, v, qdd)``: the actuators' share of ``M qdd + h - Q`` and lam;
    - ``generalized_forces(q, v, t=0.0)``: Q (nv,) or (N, nv);
    - ``kinetic_energy``, ``potential_energy`` (gravity + springs), ``energy``: the tree's.
    """

    def __init__(self, robot, constraints, actuated=None):
        from ..model.robot import ForcedRobot

        if not isinstance(robot, ForcedRobot):
            raise ValueError(f"robot: expected a robodyn.ForcedRobot, got {type(robot).__name__}")
        super().__init__(robot, constraints, actuated)

    @property
    def forces(self) -> tuple:
        """The force elements, in the order given."""
        return self.robot.forces

    def generalized_forces(self, q, v, t=0.0):
        """The elements' generalized force Q(q, v, t) on the tree, (nv,) or (N, nv)."""
        return self.robot.generalized_forces(q, v, t)

    def forward_dynamics(self, q, v, tau, mu=0.0, max_iter=1, tol=1e-12, out=None, t=0.0):
        """(qdd, lam) of ``M qdd + h = tau + Q(q, v, t) + J' lam`` with the loops' acceleration
        equations (:meth:`robodyn.ConstrainedRobot.forward_dynamics`; callables at time t)."""
        Q = self.robot.generalized_forces(q, v, t)
        tau = np.asarray(tau, dtype=float)
        if tau.shape != Q.shape:
            raise ValueError(f"tau: expected shape {Q.shape}, got {tau.shape}")
        return super().forward_dynamics(q, v, tau + Q, mu, max_iter, tol, out)

    def kinetic_energy(self, q, v):
        """The tree's kinetic energy v' M v / 2 (J)."""
        return self.robot.kinetic_energy(q, v)

    def potential_energy(self, q):
        """Gravity's potential plus the springs' (J)."""
        return self.robot.potential_energy(q)

    def energy(self, q, v):
        """Kinetic + gravity + spring energy (J): constant along a motion without dampers,
        actuators or Baumgarte terms doing work."""
        return self.kinetic_energy(q, v) + self.potential_energy(q)

    def with_forces(self, forces) -> "ForcedConstrainedRobot":
        """A new system with these elements added after the ones it has."""
        return with_forces(self, forces)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", {len(self.forces)} force elements)"


def with_forces(system, forces) -> ForcedConstrainedRobot:
    """``system`` (a ConstrainedRobot) with the force elements ``forces`` on its tree (after
    the ones it already has): the same constraints, actuated joints and Baumgarte gains."""
    if not isinstance(system, ConstrainedRobot):
        raise ValueError(f"system: expected a robodyn.ConstrainedRobot, got "
                         f"{type(system).__name__}")
    return ForcedConstrainedRobot(system.robot.with_forces(forces), system.constraints,
                                  system.actuated)
