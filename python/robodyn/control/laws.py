"""Joint-space controllers: ``ctrl(t, q, qd, ref) -> tau``.

Each controller holds its *own* robot model, which may differ from the simulated plant (a
perturbed copy, to study model error). ``ref`` is the reference at time ``t``: a tuple
``(q_ref, qd_ref, qdd_ref)`` of ``(n,)`` arrays, or a trajectory ``ref(t) -> (q, qd, qdd)``, or
``None`` for the ``reference=`` given at construction. ``e = q_ref - q`` and
``edot = qd_ref - qd`` are the tracking errors.

- :class:`ComputedTorque`: ``tau = M(q) (qdd_ref + kp e + kd edot) + h(q, qd)``, evaluated as
  one inverse-dynamics call ``robot.inverse_dynamics(q, qd, qdd_ref + kp e + kd edot)``
  (``h`` includes whatever the model's inverse dynamics includes: Coriolis, centrifugal,
  gravity, rotor inertia, joint friction). With an exact model the closed loop is
  ``e'' + kd e' + kp e = 0`` for every joint, so ``kp``, ``kd`` are in 1/s^2 and 1/s.
- :class:`PDGravity`: ``tau = kp e + kd edot + g(q)``; ``kp``, ``kd`` in torque units
  (:func:`pd_gains` scales them by the joint inertias).
- :class:`Feedforward`: ``tau = inverse_dynamics(q_ref, qd_ref, qdd_ref)`` (plus an optional
  ``kp e + kd edot``, zero by default).
- :class:`AdaptiveComputedTorque`: Slotine & Li's (1987) adaptive law,
  ``tau = Y(q, qd, qd_r, qdd_r) pi_hat - kd s`` with ``qd_r = qd_ref + lam e``,
  ``s = qd - qd_r``, and the estimate updated every control period by
  ``pi_hat' = -gamma Y' s`` (the Slotine-Li regressor of :meth:`robodyn.Robot.slotine_li_regressor`
  plus the armature and friction columns): tracking converges and the estimates stay bounded
  for any initial model of the right structure.

Gains are scalars or ``(n,)`` vectors. Options common to all controllers:

- ``saturate=True`` clips ``tau`` to ``+-robot.effort_limits`` (or ``effort_limits=``);
  infinite and non-positive entries mean "no limit" (a URDF ``effort="0"`` is unspecified);
- ``noise_std`` / ``velocity_noise_std`` add Gaussian measurement noise to ``q`` / ``qd``
  from a generator seeded by ``seed`` (reproducible; :meth:`Controller.reset` re-seeds);
- ``delay`` (an integer number of controller calls, i.e. control periods under a zero-order
  hold) makes the control law see the measurement taken ``delay`` calls earlier.

A NaN or inf in the measured state or the reference is a ``ValueError`` naming it (``q``,
``qd``, ``q_ref``, ``qd_ref``, ``qdd_ref``), from ``__call__`` and :meth:`Controller.step`
alike, before the torque is written; a NaN effort limit is a ``ValueError`` too. The laws are
joint-space laws for fixed-base robots: building one on a free-floating robot is a
``ValueError`` (robodyn.simulate takes any callable for those).

Calls with ``out=`` write the torque into a preallocated ``(n,)`` array; without it a new
array is returned. :meth:`Controller.step` is the unchecked single update for a loop that
owns its buffers. The error, command and noise buffers are preallocated, and when the
robot's methods accept ``out=`` the control law allocates nothing.

One implementation: the laws of :class:`ComputedTorque`, :class:`PDGravity` and
:class:`Feedforward`, the measurement model (noise, delay) and the saturation of every
controller are the C++ functions of ``cpp/include/robodyn/simulation/control.hpp``, called here through
``robodyn._core`` with the controller model's ``inverse_dynamics`` / ``gravity_torques`` as
callbacks; robodyn.simulate's C++ loop runs the same functions with the model's algorithms
(so its Python and C++ loops, and the ROS 2 node, share one copy of each law).

How a controller tells robodyn.simulate's C++ loop what it is (the public protocol):
:meth:`Controller.law_spec` returns a :class:`LawSpec` (the law's name in :data:`LAWS`, its
model, gains, feedback flag, inverse-dynamics method, torque bounds, delay and measurement
ring) or ``None`` (the loop then runs in Python and calls the controller).
:meth:`Controller.draw_noise` draws the measurement noise of the next calls exactly as that
many calls would, and :attr:`Controller.ideal_measurement` says whether there is any noise or
delay. The built-in classes describe themselves only as their own exact class: a subclass may
change the law in any method, so it inherits ``law_spec() -> None`` unless it declares
``LAW`` itself.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Optional

import numpy as np

from .. import _core
from ..util.out import with_out
from .trajectories import Trajectory

__all__ = ["Controller", "ComputedTorque", "PDGravity", "Feedforward", "AdaptiveComputedTorque",
           "pd_gains", "effort_bounds", "LawSpec", "LAWS", "COMPUTED_TORQUE_KP",
           "COMPUTED_TORQUE_KD", "saturate"]

# the laws written in C++ (cpp/include/robodyn/simulation/control.hpp), by name; index = the C++ enum
LAWS = tuple(_core.CONTROL_LAWS)
_LAW_INDEX = {name: i for i, name in enumerate(LAWS)}

# Default computed-torque gains, used by ComputedTorque, `robodyn simulate` and the ROS 2 node:
# with an exact model every joint's error obeys e'' + 40 e' + 400 e = 0, a natural frequency of
# 20 rad/s (3.2 Hz) critically damped, settling in about 0.3 s; well inside a 1 kHz control
# rate and gentle enough for a model that is off by tens of percent.
COMPUTED_TORQUE_KP = 400.0  # 1/s^2
COMPUTED_TORQUE_KD = 40.0   # 1/s


def _gain(x, n, name):
    try:
        g = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected a number or an ({n},) array") from exc
    if g.ndim == 0:
        g = np.full(n, float(g))
    if g.shape != (n,):
        raise ValueError(f"{name}: expected a scalar or shape ({n},), got {g.shape}")
    if not np.all(np.isfinite(g)) or np.any(g < 0.0):
        raise ValueError(f"{name}: gains must be finite and non-negative, got {g}")
    return g


def effort_bounds(limits, n):
    """``limits`` (a number or ``(n,)``) as ``(n,)`` torque bounds: infinite and non-positive
    entries (a URDF ``effort="0"`` is unspecified) mean "no bound" and become ``inf``.
    ``ValueError`` if it is not a number or an ``(n,)`` array, or if an entry is NaN (which
    is not "no bound": a NaN limit is a broken description, refused with its joint named)."""
    try:
        lim = np.broadcast_to(np.asarray(limits, dtype=np.float64), (n,)).copy()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"effort_limits: expected a number or an ({n},) array, "
                         f"got {limits!r}") from exc
    nan = np.flatnonzero(np.isnan(lim))
    if nan.size:
        raise ValueError(f"effort_limits: NaN for joint {', '.join(map(str, nan))} (no bound "
                         f"is inf or 0)")
    lim[~(lim > 0.0) | ~np.isfinite(lim)] = np.inf
    return lim


class LawSpec(NamedTuple):
    """What a controller tells robodyn.simulate's C++ loop (:meth:`Controller.law_spec`) so
    that the loop runs its law itself, without calling back into Python."""

    law: str                       # one of LAWS other than "none"
    robot: object                  # the controller's model (a robodyn.Robot)
    kp: np.ndarray                 # (n,) position gains
    kd: np.ndarray                 # (n,) velocity gains
    feedback: bool                 # Feedforward: add kp e + kd edot
    method: str                    # inverse dynamics: "rnea" or "kane"
    limit: Optional[np.ndarray]    # (n,) torque bounds (inf: none), or None: no saturation
    delay: int                     # measurement delay, in control calls
    ring: Optional[np.ndarray]     # (delay + 1, 2, n) measurement history the loop continues
                                   # (None when the measurement is ideal)


def _vector(x, n, name):
    """x as a C-contiguous float64 (n,) array (itself when it is one; scalars broadcast)."""
    if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (n,) \
            and x.flags.c_contiguous:
        return x
    try:
        return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected ({n},) numbers") from exc


def _std(x, n, name):
    g = _gain(x, n, name)
    return g if np.any(g > 0.0) else None


def saturate(tau, bounds) -> bool:
    """Clip ``tau`` (n,) in place to ``[-bounds, bounds]``, the controllers' clip (C++
    control.hpp); True if an entry was clipped."""
    return bool(_core._saturate(tau, bounds))


class Controller:
    """Base class: measurement (noise, delay), reference handling and torque saturation.

    Subclasses implement ``_law(t, q, qd, q_ref, qd_ref, qdd_ref, tau)`` writing into ``tau``.
    """

    def __init__(self, robot, *, reference=None, saturate=True, effort_limits=None,
                 noise_std=0.0, velocity_noise_std=0.0, delay=0, seed=None):
        if int(getattr(robot, "nq", robot.n)) != int(robot.n):
            raise ValueError(f"robot: {getattr(robot, 'name', 'the robot')} has a free-floating "
                             f"base; {type(self).__name__} is a joint-space law for fixed-base "
                             f"robots (simulate a floating robot with a controller callable "
                             f"ctrl(t, q, qd, ref) -> tau of nv entries)")
        self.robot = robot
        n = self.n = int(robot.n)
        self.reference = reference
        self.saturate = bool(saturate)
        lim = effort_bounds(robot.effort_limits if effort_limits is None else effort_limits, n)
        self.effort_limits = lim
        self._limit = lim if self.saturate and np.any(np.isfinite(lim)) else None
        self._shape = (n,)
        self.noise_std = _std(noise_std, n, "noise_std")
        self.velocity_noise_std = _std(velocity_noise_std, n, "velocity_noise_std")
        if int(delay) != delay or delay < 0:
            raise ValueError(f"delay: expected a non-negative integer number of control "
                             f"periods, got {delay!r}")
        self.delay = int(delay)
        self.seed = seed
        self._ideal = self.noise_std is None and self.velocity_noise_std is None and delay == 0
        # measurement buffers: ring of the last delay + 1 measurements, rows (q, qd), with a
        # (q, qd) pair of views per slot; this call's noise
        self._ring = np.zeros((self.delay + 1, 2, n))
        self._slots = tuple((slot[0], slot[1]) for slot in self._ring)
        self._noise_q = None if self.noise_std is None else np.empty(n)
        self._noise_qd = None if self.velocity_noise_std is None else np.empty(n)
        self._refbuf = np.empty((3, n))
        self._zeros = np.zeros(n)
        self.reset()

    def reset(self):
        """Forget past measurements, re-seed the noise generator, zero the counters."""
        self.rng = np.random.default_rng(self.seed)
        self.calls = 0
        self.saturated_calls = 0  # calls in which at least one joint was clipped

    @property
    def ideal_measurement(self):
        """True when the law sees the state itself (no measurement noise, no delay)."""
        return self._ideal

    def law_spec(self):
        """A :class:`LawSpec` for robodyn.simulate's C++ loop, or None when the loop must call
        this controller in Python (the base class, :class:`AdaptiveComputedTorque`, and any
        subclass that does not declare ``LAW`` itself)."""
        return None

    def draw_noise(self, calls):
        """``(noise_q, noise_qd)``: the measurement noise of the next ``calls`` control calls,
        ``(calls, n)`` arrays (None where there is no such noise), drawn from the controller's
        generator exactly as that many calls would draw it (the generator advances)."""
        n = self.n
        parts = (self.noise_std is not None) + (self.velocity_noise_std is not None)
        if not parts:
            return None, None
        # each call draws n values for q, then n for qd
        z = self.rng.standard_normal((int(calls), parts * n))
        noise_q = noise_qd = None
        if self.noise_std is not None:
            noise_q = np.ascontiguousarray(z[:, :n]) * self.noise_std
        if self.velocity_noise_std is not None:
            noise_qd = np.ascontiguousarray(z[:, (parts - 1) * n:]) * self.velocity_noise_std
        return noise_q, noise_qd

    def __call__(self, t, q, qd, ref=None, out=None):
        """Torque ``(n,)`` at time ``t`` for the measured state ``q``, ``qd``."""
        n = self.n
        if type(q) is not np.ndarray or q.dtype != np.float64:
            q = np.asarray(q, dtype=np.float64)
        if type(qd) is not np.ndarray or qd.dtype != np.float64:
            qd = np.asarray(qd, dtype=np.float64)
        if q.shape != self._shape or qd.shape != self._shape:
            raise ValueError(f"q, qd: expected shape ({n},), got {q.shape} and {qd.shape}")
        q, qd = np.ascontiguousarray(q), np.ascontiguousarray(qd)
        q_r, qd_r, qdd_r = (_vector(r, n, f"ref[{i}]") for i, r in
                            enumerate(self._resolve_reference(t, ref)))
        if out is not None and not (isinstance(out, np.ndarray) and out.dtype == np.float64
                                    and out.shape == self._shape):
            # (a float64 (n,) view is written through a copy; another dtype or shape would be
            # cast or broadcast silently)
            raise ValueError(f"out: expected a float64 array of shape ({n},), got "
                             f"{type(out).__name__} {getattr(out, 'dtype', '')} "
                             f"{np.shape(out)}")
        tau = out if out is not None and _vector(out, n, "out") is out else np.empty(n)
        self.step(t, q, qd, q_r, qd_r, qdd_r, tau)
        if out is not None and tau is not out:
            out[...] = tau
            return out
        return tau

    def step(self, t, q, qd, q_r, qd_r, qdd_r, tau):
        """One control update into ``tau``: measurement, control law and saturation, for
        C-contiguous ``(n,)`` float64 arrays that are not converted (a real-time loop's entry
        point: robodyn.simulate's Python loop, robodyn-ros2's tick; an array of another kind
        is a ValueError). Allocates nothing when the robot's methods take ``out=``. Returns
        ``tau``."""
        if not self._ideal:
            # input refused before the call's noise is drawn: a refused call leaves the
            # generator, the ring and the counters as they were
            _core._control_inputs(q, qd, q_r, qd_r, qdd_r)
            q, qd = self._measure(q, qd)
        self._law(t, q, qd, q_r, qd_r, qdd_r, tau)
        # count the call if a joint is beyond its bound, and clip
        if self._limit is not None and _core._saturate(tau, self._limit):
            self.saturated_calls += 1
        self.calls += 1
        return tau

    def _measure(self, q, qd):
        """The (noisy, delayed) measurement the control law sees: this call's noise (q's,
        then qd's), then the ring update of control.hpp."""
        nq, nqd = self._noise_q, self._noise_qd
        if nq is not None:
            self.rng.standard_normal(out=nq)
            nq *= self.noise_std
        if nqd is not None:
            self.rng.standard_normal(out=nqd)
            nqd *= self.velocity_noise_std
        return self._slots[_core._measure(self._ring, self.calls, self.delay, q, qd, nq, nqd)]

    def _resolve_reference(self, t, ref):
        if ref is None:
            ref = self.reference
        if ref is None:
            raise ValueError(f"{type(self).__name__} needs a reference: pass ref=(q, qd, qdd) "
                             f"or a trajectory, or reference= at construction")
        if isinstance(ref, Trajectory):
            return ref(t, out=self._refbuf)
        if callable(ref):
            ref = ref(t)
        if len(ref) != 3:
            raise ValueError("ref: expected (q_ref, qd_ref, qdd_ref)")
        return ref

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref, tau):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(n={self.n})"


class _PDTerms(Controller):
    """The laws of control.hpp: gains, buffers, and the one call into C++."""

    LAW = None  # the name in LAWS of the law a class implements (declared by the class itself)

    def __init__(self, robot, kp, kd, **options):
        super().__init__(robot, **options)
        self.kp = _gain(kp, self.n, "kp")
        self.kd = _gain(kd, self.n, "kd")
        self.feedback = True
        self._law_index = _LAW_INDEX[self.LAW]
        self._v = np.empty(self.n)
        self._g = np.empty(self.n)
        self._id = None       # inverse_dynamics(q, qd, qdd, out=), when the law needs it
        self._gravity = None  # gravity_torques(q, out=), when the law needs it

    def law_spec(self):
        if "LAW" not in type(self).__dict__:
            return None  # a subclass: it may have changed the law
        return LawSpec(self.LAW, self.robot, self.kp, self.kd, self.feedback,
                       getattr(self, "method", "rnea"), self._limit, self.delay,
                       None if self._ideal else self._ring)

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref, tau):
        _core._control_law(self._law_index, self.kp, self.kd, self.feedback, q, qd, q_ref,
                           qd_ref, qdd_ref, tau, self._v, self._g, self._id, self._gravity)

    def _inverse_dynamics(self, method):
        """``robot.inverse_dynamics(q, qd, qdd, out=...)`` with ``method`` bound."""
        fn = self.robot.inverse_dynamics
        if method != "rnea":
            fn = functools.partial(fn, method=method)
        z = self._zeros
        return with_out(fn, z, z, z)


class ComputedTorque(_PDTerms):
    """``tau = inverse_dynamics(q, qd, qdd_ref + kp e + kd edot)`` of the controller's model.

    One inverse-dynamics call per control update: the robot's ``inverse_dynamics`` evaluates
    ``M(q) v + h(q, qd)`` for the commanded acceleration ``v`` without forming ``M``. Default
    gains :data:`COMPUTED_TORQUE_KP`, :data:`COMPUTED_TORQUE_KD` (400 1/s^2, 40 1/s).
    """

    LAW = "computed_torque"

    def __init__(self, robot, kp=COMPUTED_TORQUE_KP, kd=COMPUTED_TORQUE_KD, *, method="rnea",
                 **options):
        super().__init__(robot, kp, kd, **options)
        self.method = method
        self._id = self._inverse_dynamics(method)


class PDGravity(_PDTerms):
    """``tau = kp e + kd edot + g(q)`` with ``g`` from the controller's model.

    With exact gravity compensation and a constant set point, ``q`` converges to the set point
    for any positive ``kp``, ``kd`` (Takegaki & Arimoto, 1981).
    """

    LAW = "pd_gravity"

    def __init__(self, robot, kp, kd, **options):
        super().__init__(robot, kp, kd, **options)
        self._gravity = with_out(robot.gravity_torques, self._zeros)


class Feedforward(_PDTerms):
    """``tau = inverse_dynamics(q_ref, qd_ref, qdd_ref)`` (+ ``kp e + kd edot``, default 0).

    The torque the model needs to follow the reference exactly; without feedback, any model
    error or initial offset goes uncorrected.
    """

    LAW = "feedforward"

    def __init__(self, robot, kp=0.0, kd=0.0, *, method="rnea", **options):
        super().__init__(robot, kp, kd, **options)
        self.method = method
        self._id = self._inverse_dynamics(method)
        self.feedback = bool(np.any(self.kp) or np.any(self.kd))


class AdaptiveComputedTorque(Controller):
    """Slotine-Li adaptive computed torque (Slotine & Li 1987, Int. J. Robotics Research 6(3)).

    With ``e = q_ref - q``, the reference velocity ``qd_r = qd_ref + lam e``,
    ``qdd_r = qdd_ref + lam edot`` and the sliding variable ``s = qd - qd_r``::

        tau       = Y(q, qd, qd_r, qdd_r) p_hat - kd s
        p_hat'    = -gamma * Y(q, qd, qd_r, qdd_r)' s

    ``Y = [slotine_li_regressor(q, qd, qd_r, qdd_r) | diag(qdd_r) | diag(qd) | diag(sign(qd))]``
    so that ``Y p = M qdd_r + C(q, qd) qd_r + g(q) + armature qdd_r + damping qd
    + friction sign(qd)``; ``p_hat`` starts at the controller's model
    (``robot.dynamic_parameters()``, ``robot.joint_parameters()``). With ``Mdot - 2C`` skew
    (robodyn's ``coriolis_matrix``) ``V = s'Ms/2 + p~' gamma^-1 p~/2`` never increases, so ``s``
    and the estimates stay bounded and ``e -> 0``. The estimate is integrated once per control
    call with the elapsed time (explicit Euler); :meth:`reset` restores the initial estimate.

    ``lam`` (1/s) and ``kd`` (torque units per rad/s) are scalars or (n,) arrays; ``gamma`` a
    scalar or a (p,) array of adaptation gains (p = 13 n; 13 per body of the full model with
    coupled joints), by default scaled per parameter by
    ``max(|p0|, 0.01)`` (relative adaptation rates).
    """

    def __init__(self, robot, lam, kd, gamma=1.0, **options):
        self._p0 = np.concatenate([robot.dynamic_parameters(), robot.joint_parameters()])
        super().__init__(robot, **options)
        n = self.n
        self.lam = _gain(lam, n, "lam")
        self.kd = _gain(kd, n, "kd")
        p = self._p0.size
        g = np.asarray(gamma, dtype=np.float64)
        if g.ndim == 0:
            g = float(g) * np.maximum(np.abs(self._p0), 0.01)
        if g.shape != (p,) or not np.all(np.isfinite(g)) or np.any(g < 0):
            raise ValueError(f"gamma: expected a non-negative scalar or shape ({p},), "
                             f"got {np.shape(gamma)}")
        self.gamma = g
        self._nb = robot.dynamic_parameters().size // 10  # bodies (coupled joints: > n)
        self._Y = np.zeros((n, p))
        self._Yr = np.empty((n, 10 * self._nb))  # C-contiguous, for out=
        self._diag = np.arange(n)
        self._qr = np.empty(n)
        self._ar = np.empty(n)
        self._s = np.empty(n)
        self._e = np.empty(n)

    def reset(self):
        super().reset()
        self.estimate = self._p0.copy()
        self._t_last = None

    def _law(self, t, q, qd, q_ref, qd_ref, qdd_ref, tau):
        # the measurement and the reference finite (as control.hpp's laws check them), before
        # the estimate adapts
        _core._control_inputs(q, qd, q_ref, qd_ref, qdd_ref)
        n = self.n
        e, qr, ar, s, Y, i = self._e, self._qr, self._ar, self._s, self._Y, self._diag
        # qd_r = qd_ref + lam e, qdd_r = qdd_ref + lam edot, s = qd - qd_r
        np.subtract(q_ref, q, out=e)
        np.multiply(self.lam, e, out=qr)
        qr += qd_ref
        np.subtract(qd_ref, qd, out=ar)
        ar *= self.lam
        ar += qdd_ref
        np.subtract(qd, qr, out=s)
        nb = self._nb
        Y[:, :10 * nb] = self.robot.slotine_li_regressor(q, qd, qr, ar, out=self._Yr)
        if nb == n:
            Y[i, 10 * n + i] = ar
            Y[i, 11 * n + i] = qd
            Y[i, 12 * n + i] = np.sign(qd)
        else:
            Y[:, 10 * nb:] = self.robot.joint_regressor(q, qd, ar)
        # adapt with the time since the last call, then the torque with the new estimate
        if self._t_last is not None and t > self._t_last:
            self.estimate -= (t - self._t_last) * self.gamma * (Y.T @ s)
        self._t_last = t
        np.dot(Y, self.estimate, out=tau)
        tau -= self.kd * s


def pd_gains(robot, q, bandwidth_hz=5.0, damping=1.0):
    """Per-joint ``(kp, kd)`` in torque units for :class:`PDGravity` (or :class:`Feedforward`).

    Each joint is treated as a decoupled inertia ``m_i = M(q)[i, i]``:
    ``kp_i = m_i w^2``, ``kd_i = 2 damping m_i w`` with ``w = 2 pi bandwidth_hz``, so the
    joint's error obeys ``e'' + 2 damping w e' + w^2 e = 0`` to first order.
    """
    if not (bandwidth_hz > 0.0 and math.isfinite(bandwidth_hz)):
        raise ValueError(f"bandwidth_hz: expected a positive number, got {bandwidth_hz!r}")
    if not (damping >= 0.0 and math.isfinite(damping)):
        raise ValueError(f"damping: expected a non-negative number, got {damping!r}")
    m = np.diag(np.asarray(robot.mass_matrix(np.asarray(q, dtype=np.float64))))
    w = 2.0 * math.pi * bandwidth_hz
    return m * w * w, 2.0 * damping * m * w
