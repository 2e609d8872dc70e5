"""The Python simulation loop: one :class:`Loop` runs a robot, a controller and a reference
over the time grid with a fixed-step or the adaptive integrator, on the joint space or (a
free-floating base) on the manifold of configurations."""

from __future__ import annotations

import math

import numpy as np

from ..control import trajectories as _traj
from ..control.laws import Controller
from ..model.lie import se3_dexpinv
from ..util.out import with_out
from .inputs import FINITE_CHECK_MASK, SimulationError
from .integrators import FixedStep, dormand_prince


class HoldPose:
    """The reference of a floating robot's controller given none: q0, zero velocity."""

    def __init__(self, q0, nv):
        self.value = (q0.copy(), np.zeros(nv), np.zeros(nv))

    def __call__(self, t):
        return self.value


class Loop:
    """The integration loops, with every buffer allocated once."""

    def __init__(self, robot, controller, reference, n, method, continuous, nq=None,
                 limits=None):
        self.n = n
        self.nq = n if nq is None else nq
        self.robot = robot
        self.limits = limits
        self.method = method
        self.continuous = continuous
        self.controller = controller
        self.reference = reference
        self.tau = np.zeros(n)
        q_probe = np.zeros(self.nq)
        if self.nq != n:
            q_probe[6] = 1.0  # the identity quaternion
        self.fd = with_out(robot.forward_dynamics, q_probe, np.zeros(n), np.zeros(n),
                            method=method)
        # force elements with Python callables (robodyn.forces) are evaluated at each stage's
        # time: the loops set clock[0] before every forward-dynamics call
        self.clock = None
        if getattr(robot, "force_callables", False):
            if self.nq != n:
                raise ValueError("robot: a free-floating robot with force elements that are "
                                 "Python callables is not simulated (use constants or curves)")
            self.clock = clock = [0.0]
            fd = self.fd

            def timed_fd(q, qd, tau, method="aba", out=None):
                return fd(q, qd, tau, method=method, out=out, t=clock[0])

            self.fd = timed_fd
        self.ref_buf = np.empty((3, n))
        self.n_control = 0
        self._link_index = None
        if controller is None:
            self.control = self._no_control
        elif isinstance(controller, Controller) and isinstance(reference, _traj.Trajectory):
            self.control = self._fast_control
        else:
            self.control = self._generic_control

    def _no_control(self, t, q, qd):
        pass

    def _fast_control(self, t, q, qd):
        """robodyn controller and trajectory: no argument checks, no allocation."""
        q_r, qd_r, qdd_r = self.reference(t, out=self.ref_buf)
        self.controller.step(t, q, qd, q_r, qd_r, qdd_r, self.tau)
        self.n_control += 1

    def _generic_control(self, t, q, qd):
        """Any callables: update ``self.tau`` from ``controller(t, q, qd, reference(t))``."""
        ctrl = self.controller
        ref = self.reference
        if isinstance(ref, _traj.Trajectory):
            r = ref(t, out=self.ref_buf)
        else:
            r = ref(t)
        if isinstance(ctrl, Controller):
            ctrl(t, q, qd, r, out=self.tau)
        else:
            u = ctrl(t, q, qd, r)
            wrenches = None
            if isinstance(u, tuple) and len(u) == 2:
                u, wrenches = u
            # checked at every call: a shape that changes later is an error, never broadcast
            if getattr(u, "shape", None) != self.tau.shape:
                u = np.asarray(u, dtype=np.float64)
                if u.shape != (self.n,):
                    raise ValueError(f"controller: returned shape {u.shape} at t = {t:.6g} s, "
                                     f"expected ({self.n},)")
            self.tau[:] = u
            if wrenches:
                self._add_wrenches(q, wrenches)
        self.n_control += 1

    def _add_wrenches(self, q, wrenches):
        """self.tau += J(q)^T w for every (link, w) of ``wrenches`` (w in the link frame)."""
        robot = self.robot
        if self._link_index is None:
            self._link_index = {name: i for i, name in
                                enumerate(getattr(robot, "link_names", []))}
        poses = None
        for link, w in wrenches.items():
            w = np.asarray(w, dtype=np.float64)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise ValueError(f"controller: the wrench on {link!r} must be 6 finite numbers "
                                 f"[moment; force], got {w!r}")
            if link not in self._link_index:
                raise ValueError(f"controller: a wrench on {link!r}, which is not one of the "
                                 f"robot's links {sorted(self._link_index)}")
            if self.nq != self.n and self._link_index[link] == 0:
                # the floating root: its generalized force is the wrench in its own frame
                self.tau[:6] += w
                continue
            if poses is None:
                poses = np.asarray(robot.forward_kinematics(q))
            Rl = poses[self._link_index[link]][:3, :3]
            J = np.asarray(robot.jacobian(q, link))
            self.tau += J[:3].T @ (Rl @ w[:3]) + J[3:].T @ (Rl @ w[3:])

    def _alloc(self, grid):
        # recorded state rows y = (q, qd) and applied torque, one row per grid point
        m = grid.shape[0]
        return {"y": np.empty((m, self.nq + self.n)), "tau": np.empty((m, self.n))}

    @staticmethod
    def _diverged(t, y, exc=None):
        msg = (f"simulation diverged: non-finite state or torque at t = {t:.6g} s; reduce dt, "
               f"use integrator='rk45', or lower the controller gains")
        if exc is not None:
            raise SimulationError(msg) from exc
        raise SimulationError(msg)

    def run_fixed(self, integrator, grid, flags, q0, qd0, progress, duration):
        """RK4 or semi-implicit Euler over the grid."""
        rec = self._alloc(grid)
        Yr, TAUr = rec["y"], rec["tau"]
        copyto = np.copyto
        tau = self.tau
        control = self.control
        cont = self.continuous
        limits = self.limits
        stepper = FixedStep(self.robot, integrator, self.method, tau=tau, fd=self.fd)
        step = stepper.step
        stage_control = control if cont else None
        clock = self.clock
        if clock is not None:
            def stage_control(ts, q_s, qd_s, _control=stage_control):
                clock[0] = ts
                if _control is not None:
                    _control(ts, q_s, qd_s)
        y, q, v = stepper.y, stepper.q, stepper.qd
        y[:self.n] = q0
        y[self.n:] = qd0
        N = grid.shape[0] - 1
        every = max(1, N // 100)
        t = 0.0
        try:
            for k in range(N):
                t = grid[k]
                if cont or flags[k]:
                    control(t, q, v)
                copyto(Yr[k], y)
                copyto(TAUr[k], tau)
                if clock is not None:
                    clock[0] = t
                step(grid[k + 1] - t, t, stage_control)
                if limits is not None:
                    limits(q, v)
                if not (k & FINITE_CHECK_MASK) and not np.isfinite(y).all():
                    self._diverged(grid[k + 1], y)
                if progress is not None and k % every == 0:
                    progress(t, duration)
            t = grid[N]
            if not np.isfinite(y).all():
                self._diverged(t, y)
            if cont or flags[N]:
                control(t, q, v)
        except ValueError as exc:
            if not (np.isfinite(stepper.Z).all() and np.isfinite(tau).all()):
                self._diverged(t, y, exc)
            raise
        Yr[N] = y
        TAUr[N] = tau
        if progress is not None:
            progress(duration, duration)
        calls_per_step = 4 if integrator == "rk4" else 1
        stats = {"steps": N, "rejected": 0, "fd_calls": calls_per_step * N,
                 "control_calls": self.n_control}
        return rec, stats

    def run_rk45(self, grid, flags, q0, qd0, rtol, atol, max_attempts, progress, duration):
        """Adaptive Dormand-Prince 5(4) (``scipy.integrate.RK45``) between consecutive grid
        points: a new solver per interval (a control instant may change the torque there),
        started with the step size the previous interval ended with."""
        # Measured against the hand-written Dormand-Prince loop this replaced (Intelledex 605,
        # computed torque at 1 kHz, 1 s, same process, medians of 3): 0.100 s against 0.048 s
        # of CPU (2.1x; 8 forward-dynamics calls per interval against 7: no first-same-as-last
        # across solver restarts), the same trajectory. Kept for the library: the adaptive
        # integrator is the accurate, not the fast, path (rk4 and the C++ loop are that).
        from scipy.integrate import RK45

        n = self.n
        rec = self._alloc(grid)
        Yr, TAUr = rec["y"], rec["tau"]
        tau = self.tau
        fd = self.fd
        method = self.method
        control = self.control
        cont = self.continuous
        limits = self.limits
        qdd = np.empty(n)

        def deriv(t, state):
            q, qd = state[:n], state[n:]
            if cont:
                control(t, q, qd)
            if self.clock is not None:
                self.clock[0] = t
            fd(q, qd, tau, method=method, out=qdd)
            return np.concatenate((qd, qdd))

        y = np.concatenate([q0, qd0])
        N = grid.shape[0] - 1
        every = max(1, N // 100)
        h_next = None
        steps = fd_calls = 0
        t = 0.0
        try:
            for k in range(N):
                t = grid[k]
                if flags[k] and not cont:
                    control(t, y[:n], y[n:])
                Yr[k] = y
                TAUr[k] = tau
                solver = RK45(deriv, t, y, grid[k + 1], rtol=rtol, atol=atol,
                              first_step=None if h_next is None else
                              min(h_next, grid[k + 1] - t))
                # bounded: the solver stops at the interval's end; its evaluations are counted
                # against max_attempts (6 per attempted step) over the whole run
                while solver.status == "running":
                    if fd_calls + solver.nfev > 6 * max_attempts:
                        raise SimulationError(f"rk45: more than {max_attempts} attempted steps "
                                              f"(at t = {solver.t:.6g} s); loosen rtol/atol")
                    message = solver.step()
                    steps += 1
                    if solver.status == "failed":
                        if not np.isfinite(solver.y).all():
                            self._diverged(solver.t, solver.y)
                        raise SimulationError(f"rk45: {message} at t = {solver.t:.6g} s")
                    if solver.status == "running" or solver.step_size < grid[k + 1] - t:
                        h_next = solver.step_size
                fd_calls += solver.nfev
                t = solver.t
                y = solver.y.copy()
                if limits is not None:
                    limits(y[:n], y[n:])
                if not np.isfinite(y).all():
                    self._diverged(t, y)
                if progress is not None and k % every == 0:
                    progress(t, duration)
            t = grid[N]
            if cont or flags[N]:
                control(t, y[:n], y[n:])
        except ValueError as exc:
            if not (np.isfinite(y).all() and np.isfinite(tau).all()):
                self._diverged(t, y, exc)
            raise
        Yr[N] = y
        TAUr[N] = tau
        if progress is not None:
            progress(duration, duration)
        attempts = (fd_calls - N) // 6  # one evaluation per solver start, six per attempt
        stats = {"steps": steps, "rejected": max(attempts - steps, 0), "fd_calls": fd_calls,
                 "control_calls": self.n_control}
        return rec, stats

    # ------------------------------------------------------------ floating robots (nq = nv + 1)

    def _manifold_steps(self, q, theta):
        """``(retract, slope)`` for a manifold loop, given views of its own buffers made once
        (a step allocates nothing): ``retract(q0, theta, out, out_quat)`` puts
        integrate(q0, theta, 1) in out (the plant's ``integrate(..., out=)``) and renormalises
        the base quaternion ``out_quat = out[3:7]``; ``slope(theta, v, v_joints, out,
        out_joints)`` puts the tangent-space rate at q0 of a stage at integrate(q0, theta) with
        velocity v in out: Jr(theta_base)^-1 v_base for the free-flyer block, v for the joints
        (``v_joints = v[6:]``, ``out_joints = out[6:]``)."""
        integrate = with_out(self.robot.integrate, q, theta, 1.0)
        copyto, dot, sqrt = np.copyto, np.dot, math.sqrt

        def retract(q0, theta, out, out_quat):
            integrate(q0, theta, 1.0, out=out)
            out_quat /= sqrt(float(dot(out_quat, out_quat)))

        def slope(theta, v, v_joints, out, out_joints):
            copyto(out_joints, v_joints)
            se3_dexpinv(theta, v, out)

        return retract, slope

    def _finish_manifold(self, rec, grid, flags, q, v, progress, duration):
        """The end of a manifold run: the last state checked, the controller's last call (if
        due) and the last recorded row."""
        N = grid.shape[0] - 1
        t = grid[N]
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            self._diverged(t, None)
        if self.continuous or flags[N]:
            self.control(t, q, v)
        rec["y"][N, :self.nq] = q
        rec["y"][N, self.nq:] = v
        rec["tau"][N] = self.tau
        if progress is not None:
            progress(duration, duration)

    def _check_failure(self, t, q, v, exc):
        """A ValueError inside a manifold loop: a SimulationError if the state or the torque
        is no longer finite (the cause of the error), else the caller re-raises it."""
        if not (np.isfinite(q).all() and np.isfinite(v).all() and np.isfinite(self.tau).all()):
            self._diverged(t, None, exc)

    def run_fixed_manifold(self, integrator, grid, flags, q0, qd0, progress, duration):
        """RK4 (Munthe-Kaas, stages in the tangent space at the step's start) or
        semi-implicit Euler on a floating robot's configuration manifold."""
        n, nq = self.n, self.nq
        rec = self._alloc(grid)
        Yr, TAUr = rec["y"], rec["tau"]
        tau, fd, method, control = self.tau, self.fd, self.method, self.control
        cont = self.continuous
        limits = self.limits
        q, v = q0.copy(), qd0.copy()
        qs, vs = np.empty(nq), np.empty(n)
        theta = np.empty(n)
        kq = np.empty((4, n))  # tangent-space slopes of the configuration
        kv = np.empty((4, n))  # accelerations
        # every buffer and view the steps use, made once: a step allocates nothing (but the
        # stage times given to a continuous controller)
        kq_s, kv_s = tuple(kq), tuple(kv)
        start = np.empty(nq)  # the step's initial configuration
        wh, dv = np.empty(4), np.empty(n)
        Yq, Yv = Yr[:, :nq], Yr[:, nq:]
        copyto, multiply, dot = np.copyto, np.multiply, np.dot
        isfinite, count_nonzero = np.isfinite, np.count_nonzero
        q_ok, v_ok = np.empty(nq, dtype=bool), np.empty(n, dtype=bool)
        q_quat, qs_quat, vs_joints = q[3:7], qs[3:7], vs[6:]
        kq_joints = tuple(row[6:] for row in kq)
        retract, slope = self._manifold_steps(q, theta)
        w = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0
        c = (0.0, 0.5, 0.5, 1.0)
        N = grid.shape[0] - 1
        every = max(1, N // 100)
        rk4 = integrator == "rk4"
        t = 0.0
        try:
            for k in range(N):
                t = grid[k]
                h = grid[k + 1] - t
                if cont or flags[k]:
                    control(t, q, v)
                copyto(Yq[k], q)
                copyto(Yv[k], v)
                copyto(TAUr[k], tau)
                copyto(start, q)
                if rk4:
                    # stage s: theta_s = c_s h k_(s-1), q_s = integrate(q, theta_s),
                    # v_s = v + c_s h a_(s-1); slopes (Jr(theta_s)^-1 v_s, a(q_s, v_s))
                    copyto(kq_s[0], v)
                    fd(q, v, tau, method=method, out=kv_s[0])
                    for st in (1, 2, 3):
                        multiply(kq_s[st - 1], c[st] * h, out=theta)
                        retract(q, theta, qs, qs_quat)
                        multiply(kv_s[st - 1], c[st] * h, out=vs)
                        vs += v
                        if cont:
                            control(t + c[st] * h, qs, vs)
                        fd(qs, vs, tau, method=method, out=kv_s[st])
                        slope(theta, vs, vs_joints, kq_s[st], kq_joints[st])
                    multiply(w, h, out=wh)
                    dot(wh, kq, out=theta)
                    retract(start, theta, q, q_quat)
                    v += dot(wh, kv, out=dv)
                else:
                    # semi-implicit Euler: velocity first, then the pose with the new velocity
                    fd(q, v, tau, method=method, out=kv_s[0])
                    multiply(kv_s[0], h, out=dv)
                    v += dv
                    multiply(v, h, out=theta)
                    retract(start, theta, q, q_quat)
                if limits is not None:
                    limits(q, v)
                if not (k & FINITE_CHECK_MASK) and (
                        count_nonzero(isfinite(q, out=q_ok)) < nq
                        or count_nonzero(isfinite(v, out=v_ok)) < n):
                    self._diverged(grid[k + 1], None)
                if progress is not None and k % every == 0:
                    progress(t, duration)
            t = grid[N]
            self._finish_manifold(rec, grid, flags, q, v, progress, duration)
        except ValueError as exc:
            self._check_failure(t, q, v, exc)
            raise
        stats = {"steps": N, "rejected": 0, "fd_calls": (4 if rk4 else 1) * N,
                 "control_calls": self.n_control}
        return rec, stats

    def run_rk45_manifold(self, grid, flags, q0, qd0, rtol, atol, max_attempts, progress,
                          duration):
        """Adaptive Dormand-Prince (Munthe-Kaas) between consecutive grid points on a
        floating robot's configuration manifold; the error is measured in the tangent space."""
        n, nq = self.n, self.nq
        rec = self._alloc(grid)
        Yr, TAUr = rec["y"], rec["tau"]
        tau, fd, method, control = self.tau, self.fd, self.method, self.control
        cont = self.continuous
        limits = self.limits
        C, A, E = dormand_prince()
        self._Jinv = np.empty((6, 6))
        q, v = q0.copy(), qd0.copy()
        qs, vs, theta = np.empty(nq), np.empty(n), np.empty(n)
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
        Yq, Yv = Yr[:, :nq], Yr[:, nq:]
        copyto, multiply, dot = np.copyto, np.multiply, np.dot
        qs_quat, vs_joints = qs[3:7], vs[6:]
        Kq_joints = tuple(row[6:] for row in Kq)
        retract, slope = self._manifold_steps(q, theta)

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
        N = grid.shape[0] - 1
        every = max(1, N // 100)
        h_prop = min(grid[1] - grid[0], (grid[-1] - grid[0]))
        attempts = rejected = fd_calls = 0
        fsal = False
        t = 0.0
        try:
            for k in range(N):
                t = grid[k]
                t_end = grid[k + 1]
                if flags[k] and not cont:
                    control(t, q, v)
                    fsal = False
                if not fsal:
                    if cont:
                        control(t, q, v)
                    fd(q, v, tau, method=method, out=Kv_s[0])
                    fd_calls += 1
                copyto(Kq_s[0], v)
                copyto(Yq[k], q)
                copyto(Yv[k], v)
                copyto(TAUr[k], tau)
                while True:
                    remaining = t_end - t
                    if remaining <= 1e-12 * max(1.0, abs(t_end)):
                        break
                    clipped = h_prop >= remaining
                    h = remaining if clipped else h_prop
                    if h <= 1e-14 * max(1.0, abs(t)):
                        raise SimulationError(f"rk45: step size underflow at t = {t:.6g} s")
                    attempts += 1
                    if attempts > max_attempts:
                        raise SimulationError(f"rk45: more than {max_attempts} attempted steps "
                                              f"(at t = {t:.6g} s); loosen rtol/atol")
                    for st in (1, 2, 3, 4, 5, 6):
                        a = multiply(A[st], h, out=ah[st])
                        dot(a, Kq_to[st], out=theta)
                        retract(q, theta, qs, qs_quat)
                        dot(a, Kv_to[st], out=vs)
                        vs += v
                        if cont:
                            control(t + C[st] * h, qs, vs)
                        fd(qs, vs, tau, method=method, out=Kv_s[st])
                        slope(theta, vs, vs_joints, Kq_s[st], Kq_joints[st])
                    fd_calls += 6
                    # stage 7 is the new point: theta = theta_7, v = vs
                    multiply(E, h, out=eh)
                    dot(eh, Kq, out=err_q)
                    dot(eh, Kv, out=err_v)
                    size(size_q)
                    size(size_qs)
                    np.maximum(mag0, mag1, out=scale_q)
                    np.maximum(np.abs(v, out=abs_v), np.abs(vs, out=abs_vs), out=scale_v)
                    scale *= rtol
                    scale += atol
                    err /= scale
                    enorm = math.sqrt(float(dot(err, err)) / err.shape[0])
                    if not math.isfinite(enorm):
                        self._diverged(t, None)
                    if enorm <= 1.0:
                        t = t_end if clipped else t + h
                        copyto(q, qs)
                        copyto(v, vs)
                        # first same as last: the acceleration at the new point
                        copyto(Kv_s[0], Kv_s[6])
                        copyto(Kq_s[0], v)
                        fsal = True
                        factor = 5.0 if enorm == 0.0 else min(5.0, 0.9 * enorm ** -0.2)
                        h_prop = max(h_prop, h * factor) if clipped else h * factor
                    else:
                        rejected += 1
                        h_prop = h * max(0.2, 0.9 * enorm ** -0.2)
                # the stops at the end of the grid interval, as the fixed-base rk45 loop;
                # a stopped joint invalidates the acceleration carried to the next step
                if limits is not None and limits(q, v):
                    fsal = False
                if progress is not None and k % every == 0:
                    progress(t, duration)
            t = grid[N]
            self._finish_manifold(rec, grid, flags, q, v, progress, duration)
        except ValueError as exc:
            self._check_failure(t, q, v, exc)
            raise
        stats = {"steps": attempts - rejected, "rejected": rejected, "fd_calls": fd_calls,
                 "control_calls": self.n_control}
        return rec, stats
