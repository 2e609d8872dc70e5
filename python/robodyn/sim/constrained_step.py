"""The stepper of a ConstrainedRobot for the Python loop (:func:`robodyn.sim.loop.run`): RK4
(Munthe-Kaas) or semi-implicit Euler of ``qdd, lam = forward_dynamics(q, v, tau)``, each step
projected back onto the constraints, with the constraint forces, the residual and the drift
recorded at the grid points (:mod:`robodyn.sim.constrained` says what they are)."""

from __future__ import annotations

import math

import numpy as np

from ..constraints.assembly import AssemblyError, assemble, project_velocity
from .inputs import SimulationError


class CommandedPlant:
    """The plant side of a constrained run as the loop calls it: ``command(t, q, v)`` returns
    the (nv,) generalised force, which ``control`` puts in ``tau`` (every call counted in
    ``n_control``, with or without a controller); no joint limits."""

    limits = None

    def __init__(self, nq, nv, command, continuous):
        self.nq, self.n = nq, nv
        self.tau = np.zeros(nv)
        self.continuous = continuous
        self.n_control = 0
        self.command = command

    def control(self, t, q, v):
        self.tau[:] = self.command(t, q, v)
        self.n_control += 1


class ConstrainedStep:
    """The stepper (the protocol of :mod:`robodyn.sim.loop`). ``accel(q, v, tau, t) -> (qdd,
    lam)`` (t the stage's time, for force elements given as functions of time); ``slope(theta, v)`` the tangent-space rate of a stage at integrate(q0, theta) with
    velocity v. ``start(t)`` evaluates the forward dynamics at the grid point (the step's
    first stage) and records lam and the residual there; ``advance`` records the drift the
    step made before its projection."""

    control_at_grid = True
    check_mask = 0

    def __init__(self, system, integrator, plant, q0, v0, accel, slope, grid, project, tol):
        robot = system.robot
        nq, nv, m = robot.nq, robot.nv, grid.shape[0]
        self.system, self.robot, self.plant = system, robot, plant
        self.euler = integrator == "euler"
        self.accel, self.slope = accel, slope
        self.project, self.tol = project, tol
        self.y = np.empty(nq + nv)
        self.q, self.v = self.y[:nq], self.y[nq:]
        np.copyto(self.q, q0)
        np.copyto(self.v, v0)
        self.lam = np.zeros((m, system.rows))    # constraint forces at the grid points
        self.residual = np.zeros(m)              # max |phi| there
        self.step_drift = np.zeros(m)            # max |phi| a step reached before projection
        self.velocity_drift = np.zeros(m)        # max |J v| likewise
        self.k = 0                               # the grid point
        self.a1 = None                           # the acceleration there

    def start(self, t):
        system, q, v, k = self.system, self.q, self.v, self.k
        self.a1, self.lam[k] = self.accel(q, v, self.plant.tau, float(t))
        self.residual[k] = float(np.abs(system.residual(q)).max()) if system.rows else 0.0

    def restart(self):
        pass

    def advance(self, t, t_end):
        system, robot, plant = self.system, self.robot, self.plant
        accel, slope = self.accel, self.slope
        q, v, a1, tau = self.q.copy(), self.v.copy(), self.a1, plant.tau
        t, h = float(t), float(t_end - t)
        if plant.continuous:
            def force(s, qs, vs):
                plant.control(s, qs, vs)
                return tau
        else:
            def force(s, qs, vs):
                return tau
        if self.euler:
            v_new = v + h * a1
            q_new = robot.integrate(q, v_new, h)
        else:
            k1 = v
            th = 0.5 * h * k1
            q2, v2 = robot.integrate(q, th), v + 0.5 * h * a1
            a2 = accel(q2, v2, force(t + 0.5 * h, q2, v2), t + 0.5 * h)[0]
            k2 = slope(th, v2)
            th = 0.5 * h * k2
            q3, v3 = robot.integrate(q, th), v + 0.5 * h * a2
            a3 = accel(q3, v3, force(t + 0.5 * h, q3, v3), t + 0.5 * h)[0]
            k3 = slope(th, v3)
            th = h * k3
            q4, v4 = robot.integrate(q, th), v + h * a3
            a4 = accel(q4, v4, force(t + h, q4, v4), t + h)[0]
            k4 = slope(th, v4)
            q_new = robot.integrate(q, h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))
            v_new = v + h / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
        if robot.floating_base:
            q_new[3:7] /= math.sqrt(float(q_new[3:7] @ q_new[3:7]))
        if not (np.all(np.isfinite(q_new)) and np.all(np.isfinite(v_new))):
            raise SimulationError(f"the state diverged (non-finite) at t = {t_end:g} s")
        self.k += 1
        if system.rows:
            self.step_drift[self.k] = float(np.abs(system.residual(q_new)).max())
            self.velocity_drift[self.k] = float(np.abs(system.jacobian(q_new) @ v_new).max())
        if self.project and system.rows:
            try:
                q_new = assemble(system, q_new, tol=self.tol, max_iter=10)
                v_new = project_velocity(system, q_new, v_new)
            except AssemblyError as e:
                raise SimulationError(f"at t = {t_end:g} s the projection failed: {e}"
                                      ) from None
        np.copyto(self.q, q_new)
        np.copyto(self.v, v_new)

    def failed(self):
        return not (np.isfinite(self.y).all() and np.isfinite(self.plant.tau).all())

    def stats(self, N):
        return {"steps": N, "rejected": 0}
