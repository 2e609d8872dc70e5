"""The Python simulation loop: one :func:`run` walks the time grid, calls the controller at
the control instants, records the state and the torque, applies the joint stops and checks
the state; a *stepper* integrates the plant (:class:`robodyn.sim.plant.Plant`) over each grid
interval. The steppers (:func:`stepper` picks one):

- :class:`JointStep`: RK4 or semi-implicit Euler on the joint space (the C++ step,
  :class:`~robodyn.sim.integrators.FixedStep`);
- :class:`AdaptiveStep`: Dormand-Prince 5(4) on the joint space (``scipy.integrate.RK45``);
- :class:`ManifoldStep`, :class:`ManifoldAdaptiveStep`: the same integrators as
  Runge-Kutta-Munthe-Kaas methods on a floating robot's configuration manifold.

A stepper holds the state ``y`` (nq + nv,) = ``[q | v]`` with views ``q`` and ``v``, which the
loop reads and the stops change in place, and has

- ``advance(t, t_end)``: integrate the state from ``t`` to ``t_end`` under ``plant.tau``;
- ``start``: None, or ``start(t)`` called at each grid point before it is recorded;
- ``restart()``: the state or the torque changed outside ``advance`` (a control instant, a
  stop), so nothing carried from the previous interval holds;
- ``control_at_grid``: with continuous control, whether the loop calls the controller at
  the grid points (else the stepper calls it at its stages, the grid points included);
- ``check_mask``: the loop checks the state for NaN/inf after interval k if ``k & mask``
  is 0;
- ``failed()``: the state or the torque is not finite (a ValueError came from divergence);
- ``stats(N)``: ``{"steps", "rejected", "fd_calls"}`` after N intervals.
"""

from __future__ import annotations

import math

import numpy as np

from ..model.lie import se3_dexpinv
from ..util.out import with_out
from .inputs import FINITE_CHECK_MASK, SimulationError
from .integrators import FixedStep, dormand_prince


def diverged(t, exc=None):
    """Raise the SimulationError of a run whose state or torque is no longer finite at t."""
    msg = (f"simulation diverged: non-finite state or torque at t = {t:.6g} s; reduce dt, "
           f"use integrator='rk45', or lower the controller gains")
    if exc is not None:
        raise SimulationError(msg) from exc
    raise SimulationError(msg)


def run(plant, stepper, grid, flags, progress, duration):
    """Integrate over ``grid`` (the controller at the points ``flags`` marks) and return
    ``(record, stats)``: record ``{"y": (N+1, nq+nv), "tau": (N+1, nv)}`` at the grid
    points, stats the stepper's and ``control_calls``."""
    m = grid.shape[0]
    N = m - 1
    Yr, TAUr = np.empty((m, plant.nq + plant.n)), np.empty((m, plant.n))
    y, q, v, tau = stepper.y, stepper.q, stepper.v, plant.tau
    control, limits, cont = plant.control, plant.limits, plant.continuous
    advance, start, restart = stepper.advance, stepper.start, stepper.restart
    due = np.full(m, stepper.control_at_grid) if cont else flags
    mask = stepper.check_mask
    copyto, isfinite, count_nonzero = np.copyto, np.isfinite, np.count_nonzero
    ok, size = np.empty(y.shape[0], dtype=bool), y.shape[0]
    every = max(1, N // 100)
    t = 0.0
    try:
        for k in range(N):
            t = grid[k]
            if due[k]:
                control(t, q, v)
                restart()
            if start is not None:
                start(t)
            copyto(Yr[k], y)
            copyto(TAUr[k], tau)
            advance(t, grid[k + 1])
            if limits is not None and limits(q, v):
                restart()
            # (count_nonzero with out=, unlike all(), allocates nothing)
            if not (k & mask) and count_nonzero(isfinite(y, out=ok)) < size:
                diverged(grid[k + 1])
            if progress is not None and k % every == 0:
                progress(t, duration)
        t = grid[N]
        if count_nonzero(isfinite(y, out=ok)) < size:
            diverged(t)
        if cont or flags[N]:
            control(t, q, v)
    except ValueError as exc:
        if stepper.failed():
            diverged(t, exc)
        raise
    copyto(Yr[N], y)
    copyto(TAUr[N], tau)
    if progress is not None:
        progress(duration, duration)
    stats = stepper.stats(N)
    stats["control_calls"] = plant.n_control
    return {"y": Yr, "tau": TAUr}, stats


def stepper(plant, integrator, grid, q0, qd0, rtol=None, atol=None, max_attempts=None):
    """The stepper of ``integrator`` ("rk4", "euler", "rk45") for ``plant``, at (q0, qd0)."""
    floating = plant.nq != plant.n
    if integrator == "rk45":
        cls = ManifoldAdaptiveStep if floating else AdaptiveStep
        return cls(plant, grid, q0, qd0, rtol, atol, max_attempts)
    return (ManifoldStep if floating else JointStep)(plant, integrator, q0, qd0)


class _State:
    """The state y = [q | v] of a stepper, its views, and the common answers."""

    control_at_grid = True
    check_mask = FINITE_CHECK_MASK
    start = None

    def _state(self, plant, q0, qd0, y=None):
        self.plant = plant
        self.y = np.empty(plant.nq + plant.n) if y is None else y
        self.q, self.v = self.y[:plant.nq], self.y[plant.nq:]
        np.copyto(self.q, q0)
        np.copyto(self.v, qd0)

    def restart(self):
        pass

    def failed(self):
        return not (np.isfinite(self.y).all() and np.isfinite(self.plant.tau).all())


class JointStep(_State):
    """RK4 or semi-implicit Euler on the joint space: the C++ step (:class:`FixedStep`)."""

    def __init__(self, plant, integrator, q0, qd0):
        fixed = FixedStep(plant.robot, integrator, plant.method, tau=plant.tau, fd=plant.fd)
        self._state(plant, q0, qd0, fixed.y)
        self.Z = fixed.Z
        self.calls_per_step = 4 if integrator == "rk4" else 1
        step = fixed.step
        stage_control = plant.control if plant.continuous else None
        clock = plant.clock
        if clock is None:
            fixed.control = stage_control
            advance = fixed.advance
        else:
            # the stages' times for the force elements with Python callables
            def timed(ts, q_s, qd_s):
                clock[0] = ts
                if stage_control is not None:
                    stage_control(ts, q_s, qd_s)

            def advance(t, t_end):
                clock[0] = t
                step(t_end - t, t, timed)
        self.advance = advance

    def failed(self):
        # the stages' states too: a stage that diverged makes the forward dynamics raise
        return not (np.isfinite(self.Z).all() and np.isfinite(self.plant.tau).all())

    def stats(self, N):
        return {"steps": N, "rejected": 0, "fd_calls": self.calls_per_step * N}


class AdaptiveStep(_State):
    """Adaptive Dormand-Prince 5(4) (``scipy.integrate.RK45``) over each grid interval: a new
    solver per interval (a control instant may change the torque there), started with the
    step size the previous interval ended with."""

    # Measured against a hand-written Dormand-Prince loop (Intelledex 605, computed torque at
    # 1 kHz, 1 s, same process, medians of 3): 0.100 s against 0.048 s of CPU (2.1x; 8
    # forward-dynamics calls per interval against 7: no first-same-as-last across solver
    # restarts), the same trajectory. Kept for the library: the adaptive integrator is the
    # accurate, not the fast, path (rk4 and the C++ loop are that).

    control_at_grid = False
    check_mask = 0

    def __init__(self, plant, grid, q0, qd0, rtol, atol, max_attempts):
        from scipy.integrate import RK45

        self._state(plant, q0, qd0)
        self.RK45 = RK45
        self.rtol, self.atol, self.max_attempts = rtol, atol, max_attempts
        self.h_next = None
        self.steps = self.fd_calls = 0
        n = plant.n
        tau, fd, method, control = plant.tau, plant.fd, plant.method, plant.control
        cont, clock = plant.continuous, plant.clock
        qdd = np.empty(n)

        def deriv(t, state):
            q, qd = state[:n], state[n:]
            if cont:
                control(t, q, qd)
            if clock is not None:
                clock[0] = t
            fd(q, qd, tau, method=method, out=qdd)
            return np.concatenate((qd, qdd))

        self.deriv = deriv

    def advance(self, t, t_end):
        h_next, max_attempts = self.h_next, self.max_attempts
        solver = self.RK45(self.deriv, t, self.y.copy(), t_end, rtol=self.rtol,
                           atol=self.atol,
                           first_step=None if h_next is None else min(h_next, t_end - t))
        # bounded: the solver stops at the interval's end; its evaluations are counted against
        # max_attempts (6 per attempted step) over the whole run
        while solver.status == "running":
            if self.fd_calls + solver.nfev > 6 * max_attempts:
                raise SimulationError(f"rk45: more than {max_attempts} attempted steps "
                                      f"(at t = {solver.t:.6g} s); loosen rtol/atol")
            message = solver.step()
            self.steps += 1
            if solver.status == "failed":
                if not np.isfinite(solver.y).all():
                    diverged(solver.t)
                raise SimulationError(f"rk45: {message} at t = {solver.t:.6g} s")
            if solver.status == "running" or solver.step_size < t_end - t:
                self.h_next = solver.step_size
        self.fd_calls += solver.nfev
        np.copyto(self.y, solver.y)

    def stats(self, N):
        attempts = (self.fd_calls - N) // 6  # one evaluation per solver start, six per attempt
        return {"steps": self.steps, "rejected": max(attempts - self.steps, 0),
                "fd_calls": self.fd_calls}


class _Manifold(_State):
    """A stepper on a floating robot's configuration manifold (q (nq,) with the base's unit
    quaternion q[3:7], v (nv,) in the base frame)."""

    def _manifold(self, theta):
        """``(retract, slope)``, given the stepper's tangent buffer ``theta`` (a step
        allocates nothing): ``retract(q0, theta, out, out_quat)`` puts integrate(q0, theta, 1)
        in out (the plant's ``integrate(..., out=)``) and renormalises the base quaternion
        ``out_quat = out[3:7]``; ``slope(theta, v, v_joints, out, out_joints)`` puts the
        tangent-space rate at q0 of a stage at integrate(q0, theta) with velocity v in out:
        Jr(theta_base)^-1 v_base for the free-flyer block, v for the joints (``v_joints =
        v[6:]``, ``out_joints = out[6:]``)."""
        integrate = with_out(self.plant.robot.integrate, self.q, theta, 1.0)
        copyto, dot, sqrt = np.copyto, np.dot, math.sqrt

        def retract(q0, theta, out, out_quat):
            integrate(q0, theta, 1.0, out=out)
            out_quat /= sqrt(float(dot(out_quat, out_quat)))

        def slope(theta, v, v_joints, out, out_joints):
            copyto(out_joints, v_joints)
            se3_dexpinv(theta, v, out)

        return retract, slope


class ManifoldStep(_Manifold):
    """RK4 (Munthe-Kaas, stages in the tangent space at the step's start) or semi-implicit
    Euler on a floating robot's configuration manifold."""

    def __init__(self, plant, integrator, q0, qd0):
        self._state(plant, q0, qd0)
        n, nq = plant.n, plant.nq
        self.calls_per_step = 4 if integrator == "rk4" else 1
        q, v = self.q, self.v
        tau, fd, method, control = plant.tau, plant.fd, plant.method, plant.control
        cont = plant.continuous
        qs, vs = np.empty(nq), np.empty(n)
        theta = np.zeros(n)
        kq = np.empty((4, n))  # tangent-space slopes of the configuration
        kv = np.empty((4, n))  # accelerations
        # every buffer and view the steps use, made once: a step allocates nothing (but the
        # stage times given to a continuous controller)
        kq_s, kv_s = tuple(kq), tuple(kv)
        start = np.empty(nq)  # the step's initial configuration
        wh, dv = np.empty(4), np.empty(n)
        copyto, multiply, dot, add = np.copyto, np.multiply, np.dot, np.add
        q_quat, qs_quat, vs_joints = q[3:7], qs[3:7], vs[6:]
        kq_joints = tuple(row[6:] for row in kq)
        retract, slope = self._manifold(theta)
        w = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0
        c = (0.0, 0.5, 0.5, 1.0)

        def rk4(t, t_end):
            # stage s: theta_s = c_s h k_(s-1), q_s = integrate(q, theta_s),
            # v_s = v + c_s h a_(s-1); slopes (Jr(theta_s)^-1 v_s, a(q_s, v_s))
            h = t_end - t
            copyto(start, q)
            copyto(kq_s[0], v)
            fd(q, v, tau, method=method, out=kv_s[0])
            for st in (1, 2, 3):
                multiply(kq_s[st - 1], c[st] * h, out=theta)
                retract(q, theta, qs, qs_quat)
                multiply(kv_s[st - 1], c[st] * h, out=vs)
                add(vs, v, out=vs)
                if cont:
                    control(t + c[st] * h, qs, vs)
                fd(qs, vs, tau, method=method, out=kv_s[st])
                slope(theta, vs, vs_joints, kq_s[st], kq_joints[st])
            multiply(w, h, out=wh)
            dot(wh, kq, out=theta)
            retract(start, theta, q, q_quat)
            add(v, dot(wh, kv, out=dv), out=v)

        def euler(t, t_end):
            # semi-implicit Euler: velocity first, then the pose with the new velocity
            h = t_end - t
            copyto(start, q)
            fd(q, v, tau, method=method, out=kv_s[0])
            multiply(kv_s[0], h, out=dv)
            add(v, dv, out=v)
            multiply(v, h, out=theta)
            retract(start, theta, q, q_quat)

        self.advance = rk4 if integrator == "rk4" else euler

    def stats(self, N):
        return {"steps": N, "rejected": 0, "fd_calls": self.calls_per_step * N}


class ManifoldAdaptiveStep(_Manifold):
    """Adaptive Dormand-Prince (Munthe-Kaas) over each grid interval on a floating robot's
    configuration manifold; the error is measured in the tangent space. The acceleration at
    an accepted step's end starts the next one (first same as last) unless the loop restarts
    the stepper (a control instant, a joint stop)."""

    control_at_grid = False

    def __init__(self, plant, grid, q0, qd0, rtol, atol, max_attempts):
        self._state(plant, q0, qd0)
        n, nq = plant.n, plant.nq
        q, v = self.q, self.v
        tau, fd, method, control = plant.tau, plant.fd, plant.method, plant.control
        cont = plant.continuous
        C, A, E = dormand_prince()
        qs, vs, theta = np.empty(nq), np.empty(n), np.zeros(n)
        Kq, Kv = np.zeros((7, n)), np.zeros((7, n))
        err = np.empty(2 * n)
        scale = np.empty(2 * n)
        # every buffer and view the attempts use, made once: an attempt allocates nothing (but
        # the stage times given to a continuous controller)
        Kq_s, Kv_s = tuple(Kq), tuple(Kv)
        Kq_to, Kv_to = tuple(Kq[:st] for st in range(7)), tuple(Kv[:st] for st in range(7))
        ah = tuple(np.empty(st) for st in range(8))  # a stage's row of the tableau times h
        eh = np.empty(7)
        err_q, err_v, scale_q, scale_v = err[:n], err[n:], scale[:n], scale[n:]
        abs_v, abs_vs = np.empty(n), np.empty(n)
        copyto, multiply, dot, add = np.copyto, np.multiply, np.dot, np.add
        qs_quat, vs_joints = qs[3:7], vs[6:]
        Kq_joints = tuple(row[6:] for row in Kq)
        retract, slope = self._manifold(theta)

        def size(views):
            # a magnitude per tangent direction: 1 for the base rotation, |p|, |q_joint|;
            # views = (qq[:3], qq[7:], out[:3], out[3:6], out[6:]) of a configuration qq and
            # the output out
            p, joints, rot, pos, rest = views
            rot.fill(1.0)
            np.abs(p, out=pos)
            np.abs(joints, out=rest)

        mag0, mag1 = np.empty(n), np.empty(n)
        size_q = (q[:3], q[7:], mag0[:3], mag0[3:6], mag0[6:])
        size_qs = (qs[:3], qs[7:], mag1[:3], mag1[3:6], mag1[6:])
        self.h_prop = min(grid[1] - grid[0], (grid[-1] - grid[0]))
        self.attempts = self.rejected = self.fd_calls = 0
        self.fsal = False

        def start(t):
            # the first stage, unless the last accepted step's end carries over
            if not self.fsal:
                if cont:
                    control(t, q, v)
                fd(q, v, tau, method=method, out=Kv_s[0])
                self.fd_calls += 1
            copyto(Kq_s[0], v)

        def advance(t, t_end):
            h_prop = self.h_prop
            while True:
                remaining = t_end - t
                if remaining <= 1e-12 * max(1.0, abs(t_end)):
                    break
                clipped = h_prop >= remaining
                h = remaining if clipped else h_prop
                if h <= 1e-14 * max(1.0, abs(t)):
                    raise SimulationError(f"rk45: step size underflow at t = {t:.6g} s")
                self.attempts += 1
                if self.attempts > max_attempts:
                    raise SimulationError(f"rk45: more than {max_attempts} attempted steps "
                                          f"(at t = {t:.6g} s); loosen rtol/atol")
                for st in (1, 2, 3, 4, 5, 6):
                    a = multiply(A[st], h, out=ah[st])
                    dot(a, Kq_to[st], out=theta)
                    retract(q, theta, qs, qs_quat)
                    dot(a, Kv_to[st], out=vs)
                    add(vs, v, out=vs)
                    if cont:
                        control(t + C[st] * h, qs, vs)
                    fd(qs, vs, tau, method=method, out=Kv_s[st])
                    slope(theta, vs, vs_joints, Kq_s[st], Kq_joints[st])
                self.fd_calls += 6
                # stage 7 is the new point: theta = theta_7, v = vs
                multiply(E, h, out=eh)
                dot(eh, Kq, out=err_q)
                dot(eh, Kv, out=err_v)
                size(size_q)
                size(size_qs)
                np.maximum(mag0, mag1, out=scale_q)
                np.maximum(np.abs(v, out=abs_v), np.abs(vs, out=abs_vs), out=scale_v)
                multiply(scale, rtol, out=scale)
                add(scale, atol, out=scale)
                np.divide(err, scale, out=err)
                enorm = math.sqrt(float(dot(err, err)) / err.shape[0])
                if not math.isfinite(enorm):
                    diverged(t)
                if enorm <= 1.0:
                    t = t_end if clipped else t + h
                    copyto(q, qs)
                    copyto(v, vs)
                    # first same as last: the acceleration at the new point
                    copyto(Kv_s[0], Kv_s[6])
                    copyto(Kq_s[0], v)
                    self.fsal = True
                    factor = 5.0 if enorm == 0.0 else min(5.0, 0.9 * enorm ** -0.2)
                    h_prop = max(h_prop, h * factor) if clipped else h * factor
                else:
                    self.rejected += 1
                    h_prop = h * max(0.2, 0.9 * enorm ** -0.2)
            self.h_prop = h_prop

        self.start, self.advance = start, advance

    def restart(self):
        self.fsal = False

    def stats(self, N):
        return {"steps": self.attempts - self.rejected, "rejected": self.rejected,
                "fd_calls": self.fd_calls}
