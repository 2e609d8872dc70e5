"""Simulation of a ConstrainedRobot: ``robodyn.simulate(system, ...)`` comes here.

The plant is ``qdd, lam = system.forward_dynamics(q, v, tau)`` (each constraint's Baumgarte
gains ``(kp, kd)`` in its acceleration equation ``J qdd = -gamma - kd J v - kp phi``). After
every integrator step the state is projected back onto the constraints (``project=True``,
default): q by :func:`robodyn.constraints.assembly.assemble` (a Gauss-Newton step or two from
the step's end) and v by :func:`~robodyn.constraints.assembly.project_velocity` (the smallest
Euclidean change making J v zero). The drift the step made before its projection is recorded.

Integrators: ``"rk4"``, a Runge-Kutta-Munthe-Kaas method on the configuration manifold (each
stage at ``robot.integrate(q0, theta)``, the free-flyer's stage slopes carried back to q0 by the
inverse right Jacobian of SE(3); on a fixed base, classical RK4), and ``"euler"``
(semi-implicit: ``v += h qdd``, then ``q = integrate(q, v h)``).

The controller ``ctrl(t, q, v, ref) -> tau`` commands the actuated joints: it returns their
torques, either ``(k,)`` in the order of ``system.actuated_dofs`` or ``(nv,)`` with zeros on
every joint that is not actuated (a nonzero command to a passive joint is an error). It runs
at ``control_rate`` (Hz, zero-order hold) or, with ``control_rate=None``, at every stage.
``ref`` is ``reference(t)`` or, without a reference, ``(q0, 0, 0)``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..constraints.assembly import assemble, project_velocity
from ..model.lie import se3_dexpinv
from .constrained_step import CommandedPlant, ConstrainedStep
from .inputs import positive, time_grid
from .loop import run
from .results import SimulationResult

__all__ = ["simulate_constrained", "ConstrainedSimulationResult", "INTEGRATORS"]

INTEGRATORS = ("rk4", "euler")

# what simulate() accepts for a Robot but a constrained run does not do
_UNSUPPORTED = dict(rtol=1e-8, atol=1e-10, method="aba", engine="auto", joint_limits="stop",
                    restitution=0.0, project_momentum=False)


class ConstrainedSimulationResult(SimulationResult):
    """A :class:`robodyn.SimulationResult` of a constrained system, with

    - ``constraint_forces``: (N+1, m) lam at each sample (per constraint, the wrench on body 1
      in frame 1's axes, the constraint's rows; at the sample's state and torque);
    - ``residual``: (N+1,) max |phi(q)| at each sample (after projection);
    - ``step_drift``: (N+1,) max |phi| each step reached before its projection (0 at t = 0);
    - ``velocity_drift``: (N+1,) max |J v| likewise;
    - ``constraint_names``, ``constraint_rows`` (slices into the m rows), ``projection``;
    - ``system``: the :class:`robodyn.ConstrainedRobot` simulated (``robot`` is its tree).
    """

    def summary(self):
        lines = [super().summary()]
        lines.append(
            f"constraints: {len(self.constraint_names)} ({self.constraint_forces.shape[1]} "
            f"rows), projection {'on' if self.projection else 'off'}: max |phi| "
            f"{float(self.residual.max()):.3g} (per step before projection "
            f"{float(self.step_drift.max()):.3g}), max |J v| before projection "
            f"{float(self.velocity_drift.max()):.3g}")
        for name, rows in zip(self.constraint_names, self.constraint_rows):
            lam = self.constraint_forces[:, rows]
            lines.append(f"  {name:<16} max |lambda| {float(np.abs(lam).max()):.4g} "
                         f"(row by row {', '.join(f'{x:.3g}' for x in np.abs(lam).max(0))})")
        return "\n".join(lines)


def _command(system, tau, nv, k, t):
    """The (nv,) generalised force of a controller's output."""
    tau = np.asarray(tau, dtype=float)
    dofs = system.actuated_dofs
    out = np.zeros(nv)
    if tau.shape == (k,):
        out[dofs] = tau
    elif tau.shape == (nv,):
        passive = np.setdiff1d(np.arange(nv), dofs)
        if np.any(tau[passive] != 0.0):
            j = int(passive[np.argmax(tau[passive] != 0.0)])
            raise ValueError(f"controller: at t = {t:g} commands {tau[j]:g} on velocity {j}, "
                             f"which no actuator drives (actuated: "
                             f"{', '.join(system.actuated) or 'none'})")
        out[:] = tau
    else:
        raise ValueError(f"controller: expected the torques of the {k} actuated joints, "
                         f"shape ({k},) or ({nv},), got {tau.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"controller: non-finite torque at t = {t:g}")
    return out


def simulate_constrained(robot, controller=None, reference=None, duration=2.0, dt=1e-3,
                         control_rate=1000.0, integrator="rk4", q0=None, qd0=None, *,
                         project=True, tol=1e-12, mu=0.0, fd_iterations=50,
                         max_steps=2_000_000, progress=None, **options):
    """Simulate the :class:`robodyn.ConstrainedRobot` ``robot`` (``robodyn.simulate``
    dispatches here) and return a :class:`ConstrainedSimulationResult`.

    ``q0``: default a configuration that closes the loops near the robot's neutral one
    (``assemble``); a given q0 is assembled too (its actuated joints held) and ``qd0``
    (default zero) projected, so the run starts on the constraints. ``project``: project q
    and v after every step (to ``tol``); False leaves only the Baumgarte terms. ``mu > 0``:
    the forward dynamics runs proximal iterations (at most ``fd_iterations``), which
    redundant constraints need (a planar loop closed by a revolute loop joint). The
    other parameters are :func:`robodyn.simulate`'s; its ``rtol``, ``atol``, ``method``,
    ``engine``, ``joint_limits`` and ``restitution`` are not used here (a non-default value
    is an error; joint limits are not enforced).
    """
    for key, value in options.items():
        if key not in _UNSUPPORTED:
            raise TypeError(f"simulate() got an unexpected keyword argument {key!r}")
        if value != _UNSUPPORTED[key]:
            raise ValueError(f"{key}: a constrained system is simulated by the Python loop "
                             f"without it (got {value!r}; leave the default)")
    system, robot = robot, robot.robot
    nq, nv, k = robot.nq, robot.nv, len(system.actuated_dofs)
    duration = positive(duration, "duration")
    dt = positive(dt, "dt")
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator: expected one of {', '.join(INTEGRATORS)} for a "
                         f"constrained system, got {integrator!r}")
    continuous = control_rate is None or (isinstance(control_rate, str) and
                                          control_rate.strip().lower() == "continuous")
    period = None if continuous else 1.0 / positive(control_rate, "control_rate")
    if controller is not None and not callable(controller):
        raise ValueError("controller: expected a callable ctrl(t, q, v, ref) -> tau or None")
    if reference is not None and not callable(reference):
        raise ValueError("reference: expected a callable ref(t) -> (q, qd, qdd)")
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps: expected a positive integer, got {max_steps!r}")
    grid, flags = time_grid(duration, dt, period, int(max_steps))
    mu = float(mu)
    if not (mu >= 0 and math.isfinite(mu)):
        raise ValueError(f"mu: expected a finite number >= 0, got {mu!r}")
    if int(fd_iterations) != fd_iterations or fd_iterations < 1:
        raise ValueError(f"fd_iterations: expected a positive integer, got {fd_iterations!r}")
    iterations = int(fd_iterations) if mu > 0 else 1

    # the start: on the constraints
    if q0 is None:
        if reference is not None:
            q0 = reference(0.0)[0]
        else:
            q0 = np.zeros(nq)
            if robot.floating_base:
                q0[6] = 1.0
        hold = ()
    else:
        hold = system.actuated
    q = assemble(system, q0, hold=hold, tol=tol)
    v = project_velocity(system, q, np.zeros(nv) if qd0 is None else qd0)
    ref0 = (q.copy(), np.zeros(nv), np.zeros(nv))

    def ref_at(t):
        return ref0 if reference is None else reference(t)

    def control(t, q, v):
        if controller is None:
            return np.zeros(nv)
        return _command(system, controller(t, q, v, ref_at(t)), nv, k, t)

    calls = {"fd": 0}

    # a system with force elements evaluates their callables at the stage's time
    timed = hasattr(system, "generalized_forces")

    def accel(q, v, tau, t):
        calls["fd"] += 1
        extra = {"t": t} if timed else {}
        qdd, lam = system.forward_dynamics(q, v, tau, mu=mu, max_iter=iterations, **extra)
        return np.asarray(qdd, dtype=float), np.asarray(lam, dtype=float)

    def slope(theta, v):
        if not robot.floating_base:
            return v
        out = v.copy()
        se3_dexpinv(theta[:6], v[:6], out[:6])
        return out

    plant = CommandedPlant(nq, nv, control, continuous)
    step = ConstrainedStep(system, integrator, plant, q, v, accel, slope, grid, project, tol)
    wall = time.perf_counter()
    rec, _ = run(plant, step, grid, flags, progress, duration)
    step.start(grid[-1])  # the constraint forces and the residual at the last sample
    wall = time.perf_counter() - wall
    n = grid.shape[0]
    Q, V = np.ascontiguousarray(rec["y"][:, :nq]), np.ascontiguousarray(rec["y"][:, nq:])
    TAU = rec["tau"]
    LAM, RES, DRIFT, VDRIFT = step.lam, step.residual, step.step_drift, step.velocity_drift
    stats = dict(steps=n - 1, rejected=0, fd_calls=calls["fd"], control_calls=plant.n_control,
                 cpu_time=wall, engine="python")
    res = ConstrainedSimulationResult._build(
        robot, controller, reference, grid, {"q": Q, "qd": V, "tau": TAU}, stats, wall,
        integrator=integrator, dt=dt, control_rate=None if continuous else 1.0 / period,
        duration=duration, joint_limits="ignore")
    res.constraint_forces, res.residual = LAM, RES
    res.step_drift, res.velocity_drift = DRIFT, VDRIFT
    res.constraint_names = [c.name for c in system.constraints]
    res.constraint_rows = list(system.row_slices)
    res.projection = bool(project)
    res.system = system  # what the 3-D view draws (the loops too); res.robot is its tree
    return res
