"""Momentum projection for a free-floating robot: after each integrator step the base velocity
is reset so that the total momentum keeps its initial value (``simulate(...,
project_momentum=True)``).

Without gravity and external wrenches the total momentum h = A_G(q) v (A_G the centroidal
momentum matrix: [angular about the centre of mass; linear], world axes) is a first integral:
the exact motion keeps h(t) = h(0), but a Runge-Kutta step only to its local error (O(dt^5)
per step). The projection

    v_base <- v_base + A_b^-1 (h0 - A_G v),    A_b = A_G[:, :6] (the base's columns)

restores it. It is the smallest change of v in the kinetic-energy metric that does so: the
base rows of the mass matrix are the momentum seen from the base (A_G = X M[:6, :] for a
spatial transform X), so M^-1 A_G' lam = [X' lam; 0] and the metric projection moves the
base's velocity only. Physically it is the velocity jump an impulsive wrench on the base
equal to the momentum error would cause; its size is RK4's own error. The joints' positions
and velocities, and the base's pose, are untouched. The kinetic energy changes by
v' M dv + dv' M dv / 2 per step; :meth:`MomentumProjection.summary` reports the total.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MomentumProjection"]


class MomentumProjection:
    """The post-step hook ``hook(q, v) -> True`` that projects ``v`` (in place) onto the
    constant-momentum set of ``robot`` (a free-floating Robot without gravity or BodyForce
    elements), after the hook ``inner`` (the joint limits) if given.

    ``q0``, ``v0``: the initial state, whose momentum is kept. Raises ValueError for a
    fixed-base robot, a nonzero gravity, or BodyForce elements: their impulse changes the
    momentum, and projecting onto a constant value would be wrong.
    """

    def __init__(self, robot, q0, v0, inner=None):
        if not robot.floating_base:
            raise ValueError("project_momentum: the robot has a fixed base (its momentum is "
                             "not conserved: the ground pushes it)")
        if np.any(np.asarray(robot.gravity) != 0.0):
            raise ValueError("project_momentum: gravity changes the momentum (set gravity "
                             "to zero, or leave the momentum free)")
        from ..model.forces import BodyForce

        if any(isinstance(f, BodyForce) for f in getattr(robot, "forces", ())):
            raise ValueError("project_momentum: a BodyForce is an external wrench and "
                             "changes the momentum")
        self.robot = robot
        self.inner = inner
        self.h0 = np.asarray(robot.centroidal_momentum_matrix(q0), dtype=float) @ np.asarray(
            v0, dtype=float)
        self._A = np.empty((6, robot.nv))
        self.steps = 0
        self.max_correction = 0.0   # largest |h0 - h| corrected (N m s or N s)
        self.energy_change = 0.0    # sum of the kinetic energy changes (J)
        self.energy_change_abs = 0.0  # sum of their magnitudes (J)

    def __call__(self, q, v):
        if self.inner is not None:
            self.inner(q, v)
        robot = self.robot
        A = robot.centroidal_momentum_matrix(q, out=self._A)
        err = self.h0 - A @ v
        dvb = np.linalg.solve(A[:, :6], err)
        t0 = float(robot.kinetic_energy(q, v))
        v[:6] += dvb
        dT = float(robot.kinetic_energy(q, v)) - t0
        self.steps += 1
        self.max_correction = max(self.max_correction, float(np.abs(err).max()))
        self.energy_change += dT
        self.energy_change_abs += abs(dT)
        return True

    def summary(self) -> dict:
        """{"steps", "max_correction", "energy_change", "energy_change_abs"}: the projections
        made, the largest momentum error removed, and the net and absolute sums of the
        kinetic energy changes they caused."""
        return {"steps": self.steps, "max_correction": self.max_correction,
                "energy_change": self.energy_change,
                "energy_change_abs": self.energy_change_abs}
