"""The integrators of the Python loop: the fixed-step ones written once in C++
(:class:`FixedStep`: RK4, semi-implicit Euler) and the Dormand-Prince tableau of the
adaptive one (:func:`dormand_prince`)."""

from __future__ import annotations

import numpy as np

from .. import _core
from ..util.out import with_out


def dormand_prince():
    """The Dormand-Prince 5(4) tableau of ``scipy.integrate.RK45`` as (c (7,), rows of a, the
    last one the weights b, error weights e (7,)): the 7th stage is the new point (FSAL)."""
    from scipy.integrate import RK45

    c = np.append(RK45.C, 1.0)
    a = [RK45.A[s, :s].copy() for s in range(RK45.n_stages)] + [RK45.B.copy()]
    return c, a, RK45.E.copy()


class FixedStep:
    """One step of a fixed-step integrator (``"rk4"`` or semi-implicit ``"euler"``) of the plant
    ``qdd = forward_dynamics(q, qd, tau)``: the step :func:`simulate`'s Python loop takes, and
    what ``robodyn-ros2-sim`` integrates with. The step itself is the C++ one of the C++ loop
    (``cpp/include/robodyn/simulation/integrator.hpp``, through ``robodyn._core._fixed_step``), which
    calls the forward dynamics back once per stage.

    ``FixedStep(robot, integrator="rk4", method="aba", tau=None)`` integrates
    ``robot.forward_dynamics`` (or ``fd(q, qd, tau, method=, out=)`` if given). The state is
    ``y`` (2n,) = ``(q, qd)``, with views ``q`` and ``qd``; ``tau`` (n,) is the applied torque
    (a given buffer, or a new one), held over the step unless a stage control updates it.
    ``step(h, t=0.0, control=None)`` advances the state by ``h`` in place; with ``control``,
    ``control(t_s, q_s, qd_s)`` is called before RK4 stages 2-4 (continuous control);
    ``advance(t, t_end)`` does the same from ``t`` to ``t_end`` with the ``control``
    attribute. Nothing is allocated per step but the stage times given to ``control``.
    """

    def __init__(self, robot, integrator="rk4", method="aba", *, tau=None, fd=None):
        if integrator not in ("rk4", "euler"):
            raise ValueError(f"integrator: expected 'rk4' or 'euler', got {integrator!r}")
        n = int(robot.n)
        if fd is None:
            fd = with_out(robot.forward_dynamics, np.zeros(n), np.zeros(n), np.zeros(n),
                           method=method)
        self.n = n
        self.fd = fd
        self.method = method
        self.rk4 = integrator == "rk4"
        self.tau = np.zeros(n) if tau is None else tau
        # stage s uses Z[s] = [q_s | qd_s | qdd_s]: its state is Z[s, :2n] and the state's
        # derivative (qd_s, qdd_s) is Z[s, n:]; the current state is Z[0, :2n]
        Z = self.Z = np.zeros((4, 3 * n))
        self.y = Z[0, :2 * n]
        self.q_s = tuple(Z[s, :n] for s in range(4))
        self.v_s = tuple(Z[s, n:2 * n] for s in range(4))
        self.a_s = tuple(Z[s, 2 * n:] for s in range(4))
        self.q, self.qd = self.q_s[0], self.v_s[0]
        self._tmp = np.empty(2 * n)
        self.control = None

    def step(self, h, t=0.0, control=None):
        """Advance ``y`` by ``h`` (seconds) under ``tau``."""
        _core._fixed_step(self.Z, self._tmp, self.q_s, self.v_s, self.a_s, self.tau, h,
                          self.rk4, self.fd, self.method, t, control)

    def advance(self, t, t_end):
        """Advance ``y`` from ``t`` to ``t_end`` under ``tau``, the stage control being the
        attribute ``control`` (None unless set): the step of robodyn.simulate's loop."""
        _core._fixed_step(self.Z, self._tmp, self.q_s, self.v_s, self.a_s, self.tau, t_end - t,
                          self.rk4, self.fd, self.method, t, self.control)
