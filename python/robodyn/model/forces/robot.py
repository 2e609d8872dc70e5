"""What a robot with force elements adds to the rigid model: :class:`ForcesMixin`, the methods of
:class:`robodyn.model.robot.ForcedRobot` (made by ``robot.with_forces([...])``), kept here so
that this module does not import the Robot class that builds it."""

from __future__ import annotations

import numpy as np

from ... import _core
from .elements import BodyForce, RotationalSpring, Spring

__all__ = ["ForcesMixin", "rebuild_forced"]

_NAN = float("nan")


class ForcesMixin:
    """The methods of a :class:`robodyn.Robot` whose dynamics include force elements (:class:`Spring`,
    :class:`RotationalSpring`, :class:`BodyForce`): their generalized force ``Q(q, qd, t)``
    enters the equation of motion as ``M qdd + h = tau + Q``.

    - ``forward_dynamics(q, qd, tau, t=0.0)`` solves it (``Q`` evaluated in C++);
      ``inverse_dynamics(q, qd, qdd, t=0.0)`` returns ``tau = ID(q, qd, qdd) - Q`` (so a
      computed-torque controller with this model compensates the elements);
    - ``potential_energy(q)`` is gravity's plus the springs' (``k delta^2 / 2``, or
      ``integral k(s) s ds`` for a stiffness curve); ``kinetic_energy`` is unchanged;
    - ``forward_dynamics_derivatives`` and ``linearize`` include ``dQ/dq`` and ``dQ/dqd``
      (analytic for a fixed base; central differences on the configuration manifold for a
      free-floating one); elements with Python callables are refused there;
    - ``generalized_forces(q, qd, t=0.0)`` is ``Q``; ``element_states(q, qd, t=0.0)`` reports
      each spring's length, rate, tension, potential and power.

    :func:`robodyn.simulate` runs its C++ loop when every element is constant or a curve; an
    element with a Python callable makes it take the Python loop (which passes each stage's
    time ``t``); a free-floating robot with callables is refused by simulate. The other
    methods (mass matrix, bias and gravity torques, regressors) are the rigid model's.
    """

    def __init__(self, spec, forces=()):
        super().__init__(spec)
        forces = tuple(forces)
        for i, f in enumerate(forces):
            if not isinstance(f, (Spring, RotationalSpring, BodyForce)):
                raise ValueError(f"forces[{i}]: expected a robodyn.Spring, RotationalSpring or "
                                 f"BodyForce, got {type(f).__name__}")
        self._forces = forces
        self._springs = [f for f in forces if isinstance(f, Spring)]
        self._rotational = [f for f in forces if isinstance(f, RotationalSpring)]
        self._wrenches = [f for f in forces if isinstance(f, BodyForce)]
        curves = []

        def coeff(value, curve):
            if curve is None:
                return (value, -1)
            curves.append((curve.x, curve.y, curve.second_derivatives))
            return (0.0, len(curves) - 1)

        springs = [(self._link(s.body1, "body1"), s.point1,
                    -1 if s.body2 is None else self._link(s.body2, "body2"), s.point2,
                    coeff(s.k, s.stiffness_curve), coeff(s.c, s.damping_curve),
                    _NAN if s.rest_length is None else s.rest_length, s.force,
                    s.force_fn is not None) for s in self._springs]
        rotational = [(self._joint(r.joint) + 1, coeff(r.k, r.stiffness_curve),
                       coeff(r.c, r.damping_curve), r.rest, r.torque, r.torque_fn is not None)
                      for r in self._rotational]
        wrenches = [(self._link(w.body, "body"), w.point, w.frame == "world", w.wrench[:3],
                     w.wrench[3:], w.wrench_fn is not None) for w in self._wrenches]
        self._force_set = _core._ForceSet(self, curves, springs, rotational, wrenches)
        self.force_callables = any(s.force_fn for s in self._springs) or any(
            r.torque_fn for r in self._rotational) or any(w.wrench_fn for w in self._wrenches)

    # ----------------------------------------------------------------------------- resolution

    def _link(self, b, name):
        links = list(self.link_names)
        if isinstance(b, str):
            if b not in links:
                raise ValueError(f"{name}: no link {b!r} in {self.name!r} (links: "
                                 f"{', '.join(links)})")
            return links.index(b)
        if not 0 <= b < len(links):
            raise ValueError(f"{name}: link index {b} out of range (0..{len(links) - 1})")
        return b

    def _joint(self, j):
        joints = list(self.joint_names)
        if isinstance(j, str):
            if j not in joints:
                raise ValueError(f"joint: no joint {j!r} in {self.name!r} (joints: "
                                 f"{', '.join(joints)})")
            j = joints.index(j)
        elif not 0 <= j < len(joints):
            raise ValueError(f"joint: joint index {j} out of range (0..{len(joints) - 1})")
        if self.floating_base and j == 0:
            raise ValueError(f"joint: {joints[0]!r} is the free-floating base; a "
                             "RotationalSpring acts on a revolute or prismatic joint")
        return j

    # ------------------------------------------------------------------------------ evaluation

    @property
    def forces(self) -> tuple:
        """The force elements, in the order given."""
        return self._forces

    @property
    def rest_lengths(self) -> np.ndarray:
        """The springs' rest lengths l0 (m), those not given measured at q = 0."""
        return np.array(self._force_set.rest_lengths, dtype=float)

    def _per_call(self, q, qd, t):
        """The callables' values at one state: (F, N, W) arrays or None each."""
        F = N = W = None
        if any(s.force_fn for s in self._springs):
            st = self._force_set.states(q, qd)
            F = np.array([s.force_fn(st[i, 0], st[i, 1], t) if s.force_fn else 0.0
                          for i, s in enumerate(self._springs)], dtype=float)
        if any(r.torque_fn for r in self._rotational):
            st = self._force_set.states(q, qd)[len(self._springs):]
            N = np.array([r.torque_fn(st[i, 0], st[i, 1], t) if r.torque_fn else 0.0
                          for i, r in enumerate(self._rotational)], dtype=float)
        if any(w.wrench_fn for w in self._wrenches):
            rows = []
            for w in self._wrenches:
                x = np.asarray(w.wrench_fn(t, q, qd) if w.wrench_fn else np.zeros(6), dtype=float)
                if x.shape != (6,) or not np.all(np.isfinite(x)):
                    raise ValueError(f"BodyForce on {w.body!r}: the callable returned {x!r} at "
                                     f"t = {t:g}; expected 6 finite numbers [moment; force]")
                rows.append(x)
            W = np.concatenate(rows)
        for name, v in (("force", F), ("torque", N)):
            if v is not None and not np.all(np.isfinite(v)):
                raise ValueError(f"{name}: a callable returned a non-finite value at t = {t:g}")
        return F, N, W

    def generalized_forces(self, q, qd, t=0.0) -> np.ndarray:
        """``Q`` (nv,), or (N, nv) for (N, nq), (N, nv) states: the elements' generalized force
        (callables evaluated at time ``t``)."""
        if not self.force_callables:
            return self._force_set.generalized_forces(q, qd)
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        if q.ndim == 2:
            if qd.shape[:1] != q.shape[:1]:
                raise ValueError("qd: must have the same number of rows as q")
            return np.array([self.generalized_forces(a, b, t) for a, b in zip(q, qd)])
        self._force_set.states(q, qd)  # checks shapes and finiteness first
        return self._force_set.generalized_forces(q, qd, *self._per_call(q, qd, t))

    def _plus_forces(self, q, qd, x, name, t, sign):
        Q = self.generalized_forces(q, qd, t)
        x = np.asarray(x, dtype=float)
        if x.shape != Q.shape:
            raise ValueError(f"{name}: expected shape {Q.shape}, got {x.shape}")
        return x + sign * Q

    def forward_dynamics(self, q, qd, tau, method="aba", out=None, t=0.0):
        """qdd from ``M qdd + h = tau + Q(q, qd, t)`` (see :class:`ForcedRobot`)."""
        return super().forward_dynamics(q, qd, self._plus_forces(q, qd, tau, "tau", t, 1.0),
                                        method=method, out=out)

    def inverse_dynamics(self, q, qd, qdd, method="rnea", out=None, t=0.0):
        """``tau = ID(q, qd, qdd) - Q(q, qd, t)``: the joint force that, with the elements',
        gives ``qdd``."""
        tau = super().inverse_dynamics(q, qd, qdd, method=method)
        res = self._plus_forces(q, qd, tau, "tau", t, -1.0)
        if out is None:
            return res
        out[...] = res
        return out

    def potential_energy(self, q):
        """Gravity's potential plus the springs' (J); (N,) for (N, nq)."""
        return super().potential_energy(q) + self._force_set.potential(q)

    def element_states(self, q, qd, t=0.0) -> np.ndarray:
        """(springs + rotational springs, 5): per element, springs first, ``[l or theta, its
        rate, tension f or torque n, stiffness potential (J), power delivered to the robot
        -f l' or -n theta' (W)]`` at one state (callables at time ``t``)."""
        F, N, _ = self._per_call(np.asarray(q, float), np.asarray(qd, float), t) \
            if self.force_callables else (None, None, None)
        return self._force_set.states(q, qd, F, N)[:, :5]

    def generalized_force_derivatives(self, q, qd):
        """``(dQ/dq, dQ/dqd)``, each (nv, nv), at one state (constant and curve elements)."""
        if self.force_callables:
            raise ValueError("derivatives: elements with Python callables have no derivative "
                             "here (give constants or curves)")
        from .derivatives import force_derivatives

        return force_derivatives(self, np.asarray(q, dtype=float), np.asarray(qd, dtype=float))

    def forward_dynamics_derivatives(self, q, qd, tau, out=None):
        """``(dqdd/dq, dqdd/dqd, dqdd/dtau = M^-1)`` of :meth:`forward_dynamics`, the elements'
        ``M^-1 dQ/dq`` and ``M^-1 dQ/dqd`` included; (N, ...) for a batch."""
        if self.force_callables:
            raise ValueError("derivatives: elements with Python callables have no derivative "
                             "here (give constants or curves)")
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        total = self._plus_forces(q, qd, tau, "tau", 0.0, 1.0)
        dq, dqd, Minv = super().forward_dynamics_derivatives(q, qd, total)
        if q.ndim == 1:
            Kq, Kv = self.generalized_force_derivatives(q, qd)
            dq, dqd = dq + Minv @ Kq, dqd + Minv @ Kv
        else:
            for r in range(q.shape[0]):
                Kq, Kv = self.generalized_force_derivatives(q[r], qd[r])
                dq[r] += Minv[r] @ Kq
                dqd[r] += Minv[r] @ Kv
        if out is not None:
            for o, x in zip(out, (dq, dqd, Minv)):
                o[...] = x
            return out
        return dq, dqd, Minv

    def specialized(self) -> "ForcedRobot":
        """A ForcedRobot with the same elements whose rigid part runs generated code
        (:meth:`robodyn.Robot.specialized`); the elements are evaluated as before."""
        from ...codegen.compiled import specialize_spec

        forces = self._forces
        cls = type(self)
        return specialize_spec(self.spec, lambda spec: cls(spec, forces))

    def __reduce__(self):
        return (rebuild_forced, (type(self), self.spec, self._forces, self.is_specialized()))

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", {len(self._forces)} force elements>"


def rebuild_forced(cls, spec, forces, specialized=False):
    """Unpickles a ForcedRobot (specialised again if it was)."""
    robot = cls(spec, forces)
    return robot.specialized() if specialized else robot


