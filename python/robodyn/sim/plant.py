"""What the Python simulation loop integrates: the plant's forward dynamics, the torque it is
driven by and the controller that sets that torque (:class:`Plant`), every buffer allocated
once. The integration itself is :mod:`robodyn.sim.loop`'s."""

from __future__ import annotations

import numpy as np

from ..control import trajectories as _traj
from ..control.laws import Controller
from ..util.out import with_out


class HoldPose:
    """The reference of a floating robot's controller given none: q0, zero velocity."""

    def __init__(self, q0, nv):
        self.value = (q0.copy(), np.zeros(nv), np.zeros(nv))

    def __call__(self, t):
        return self.value


class Plant:
    """The robot under its controller, as the loop and its steppers call it.

    ``tau`` (nv,) is the applied generalized force; ``fd(q, v, tau, method=, out=)`` the
    forward dynamics (at the time ``clock[0]`` when the robot has force elements with Python
    callables, else ``clock`` is None); ``control(t, q, v)`` updates ``tau`` from the
    controller (nothing without one); ``limits(q, v)`` the joint stops (or None);
    ``continuous``: the controller runs at every integrator stage, not only at the grid's
    control instants."""

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
        # time: the steppers set clock[0] before every forward-dynamics call
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
