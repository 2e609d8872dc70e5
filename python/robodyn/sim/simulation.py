"""Forward simulation of a robot under a controller: :func:`simulate` -> :class:`SimulationResult`.

The plant is ``qdd = robot.forward_dynamics(q, qd, tau, method="aba")`` with the state
``y = (q, qd)``; whatever the model includes (rotor inertia, joint friction) is part of the
plant.

Joint limits (``joint_limits=``): by default (``"stop"``) the plant's position limits are hard
stops. At the end of every integration step a joint found beyond a finite limit is put back on
it and, if it still moves outward, its velocity is reversed and scaled by ``restitution``
(default 0: a plastic stop that zeroes the velocity; 1: an elastic bounce). This is a
projection at step ends, not an impact model: within a step the joint can overshoot by about
``|qd| dt``, and a stop dissipates the kinetic energy of the stopped motion. ``"report"``
enforces nothing but records the violations and warns (``RuntimeWarning``); ``"ignore"`` does
neither. Either way ``result.limit_hits`` (steps that ended beyond a limit, per joint) and
``result.limit_excess`` (largest distance beyond it, rad or m) say what happened, and the
summary lists every joint that reached a limit.

Time is split on a grid made of the integrator's steps (every ``dt``) and the control
instants (every ``1 / control_rate``): the controller runs at the control instants and its
torque is held constant (zero-order hold) until the next one, while the plant is integrated
over every grid interval, so no step straddles a control update. With
``control_rate=None`` (or ``"continuous"``) the controller is evaluated at every integrator
stage instead, which makes the closed loop an ordinary differential equation.

Integrators:

- ``"rk4"``: classical fourth-order Runge-Kutta, four forward-dynamics calls per step;
- ``"euler"``: semi-implicit (symplectic) Euler, ``qd += h qdd(q, qd); q += h qd``, one call;
- ``"rk45"``: Dormand-Prince 5(4) with error control (``rtol``, ``atol``), SciPy's
  ``scipy.integrate.RK45``; it integrates adaptively *between* consecutive grid points (one
  solver per interval, started with the last accepted step size), so the control instants are
  respected and the output is sampled on the same grid.

Engines: the fixed-step integrators ("rk4", "euler") also run as a loop in C++
(``robodyn._core._simulate_fixed``, cpp/include/robodyn/simulation/simulate.hpp) when the plant is a
:class:`robodyn.Robot`, the controller is ``None`` or one of :class:`~robodyn.control.ComputedTorque`,
:class:`~robodyn.control.PDGravity`, :class:`~robodyn.control.Feedforward` (measurement noise
and delay included) and the reference has ``.sample(ts)`` (every robodyn trajectory). The
reference is then sampled once, in Python, at every instant the controller will run, and the
loop runs without the GIL. It performs the Python loop's operations in the same order, so the
two engines agree to rounding (about 1e-15 per step). ``engine="python"`` forces the Python
loop, ``engine="cpp"`` the C++ one (``ValueError`` if the run does not qualify).

Free-floating robots (``robot.nq != robot.nv``: a free-flyer root with q = [base position,
unit quaternion x, y, z, w, joints] and v = [base angular and linear velocity in the base
frame, joints]) are integrated on their configuration manifold, always by the Python loop
(the C++ loop integrates nq = nv models only; ``engine="cpp"`` raises ``ValueError``):

- ``"rk4"`` and ``"rk45"`` are Runge-Kutta-Munthe-Kaas methods: each stage's configuration is
  ``robot.integrate(q0, theta_s, 1)`` from the step's start ``q0``, where ``theta_s`` is the
  tableau's combination of the stage slopes in the tangent space at ``q0``; the slope of a
  stage with velocity ``v_s`` is ``Jr(theta_s)^-1 v_s`` (the body twist carried back to
  ``q0``'s tangent space by the inverse right Jacobian of SE(3), :mod:`robodyn._lie`; the
  joints' block is ``v_s`` itself). This keeps the classical order (4 for "rk4", 5(4) for
  "rk45") for the base pose as well as the joints; the new configuration is
  ``integrate(q0, theta)`` and its quaternion is renormalised after every step;
- ``"euler"`` is semi-implicit: ``v += h a(q, v)``, then ``q = integrate(q, v, h)``;
- the controller's ``q`` has ``nq`` entries and its torque ``nv`` (the first six, the wrench on
  the base [moment about the base origin; force] in the base frame, are usually zero: the
  base is not actuated); robodyn's joint-space controllers (ComputedTorque, PDGravity,
  Feedforward) are for fixed-base models and are refused;
- the result records the momentum ``robot.momentum(q, v)`` (angular about the world origin;
  linear), and the summary its change against the external impulse (gravity's m g T, any
  wrench) and the drift, the difference (zero to integration error). There is no ground
  contact model: under gravity a floating robot falls freely;
- joint limits apply to the joints (q[7:], v[6:]) as on a fixed base, but a stop's velocity
  change is an internal impulse ``M dv = E lam`` (E the stopped joints' columns of the
  identity): the stopped joint gets exactly the fixed-base rule's velocity and the base and
  the other joints take the reaction; then the base's velocity takes up the momentum that
  putting the joint back on its limit changed. So the momentum is kept to rounding, and an
  elastic stop keeps the kinetic energy (to the effect of the overshoot, about ``|qd| dt``).
  ``result.limit_hits`` etc. are in the layout of qd, the base's six entries never hit.

External wrenches on bodies: a controller may return ``(tau, wrenches)`` instead of ``tau``,
``wrenches`` a mapping from a link name (``robot.link_names``) to a (6,) wrench [moment about
the link frame's origin; force], in the link frame's axes (body-fixed thrusters and jets). Each
is applied as the generalized force ``J(q)^T w`` (J the link's Jacobian in its own frame),
evaluated where the controller runs and held with the torque until its next call (zero-order
hold; with ``control_rate="continuous"`` it is re-evaluated at every stage). A wrench on the
root link of a floating robot needs no Jacobian: it is the base block of the generalized force.
``result.tau`` records the total generalized force, torque plus wrenches.

The fixed-step integrators and the control laws are written once, in C++
(``cpp/include/robodyn/simulation/integrator.hpp``, ``control.hpp``): the Python loop calls them through
``robodyn._core`` (:class:`FixedStep`, :mod:`robodyn.control`) with the robot's methods as
callbacks, the C++ loop with the model's algorithms. A controller tells the C++ loop what it
is by :meth:`robodyn.control.Controller.law_spec` (see :mod:`robodyn.control`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..control import trajectories as _traj
from ..constraints import ConstrainedRobot
from ..control.laws import Controller
from .cpp_loop import cpp_engine, run_cpp
from .inputs import (SimulationError, positive, sizes, state_vector, time_grid,
                     unit_quaternion)
from .integrators import FixedStep
from .limits import JOINT_LIMITS, joint_limits as make_limits
from .loop import run, stepper
from .plant import HoldPose, Plant
from .results import SimulationResult

__all__ = ["simulate", "SimulationResult", "SimulationError", "FixedStep", "INTEGRATORS",
           "ENGINES", "JOINT_LIMITS"]

INTEGRATORS = ("rk4", "euler", "rk45")
ENGINES = ("auto", "cpp", "python")



def simulate(robot, controller=None, reference=None, duration=2.0, dt=1e-3,
             control_rate=1000.0, integrator="rk4", q0=None, qd0=None, *, rtol=1e-8,
             atol=1e-10, method="aba", max_steps=2_000_000, progress=None, engine="auto",
             joint_limits="stop", restitution=0.0, project_momentum=False):
    """Simulate ``robot`` for ``duration`` seconds and return a :class:`SimulationResult`.

    Parameters
    ----------
    robot : robodyn.Robot
        The plant, integrated as ``qdd = robot.forward_dynamics(q, qd, tau, method=method)``.
        A :class:`robodyn.ConstrainedRobot` runs in :mod:`robodyn.sim.constrained`.
    controller : callable ``ctrl(t, q, qd, ref) -> tau`` or ``-> (tau, wrenches)``, or None
        ``ref`` is ``(q_ref, qd_ref, qdd_ref)`` at ``t``. ``None`` applies zero torque
        (passive motion). Controllers from :mod:`robodyn.control` may carry their own,
        different, robot model; they are ``reset()`` at the start of the run, so a seeded
        noisy controller gives the same run every time. ``wrenches`` maps link names to
        (6,) wrenches [moment about the link origin; force] in the link frame, applied as
        ``J^T w`` (see the module documentation).
    reference : callable ``ref(t) -> (q, qd, qdd)`` or None
        E.g. :func:`robodyn.trajectories.smooth`. With a controller but no reference, the
        controller holds the initial pose ``q0``.
    duration, dt : float
        Simulated time and integrator step (for ``"rk45"``: the output interval), seconds.
    control_rate : float, None or "continuous"
        Controller rate in Hz (zero-order hold between updates), or evaluation at every
        integrator stage.
    integrator : "rk4", "euler" (semi-implicit) or "rk45" (Dormand-Prince, ``rtol``, ``atol``).
    q0, qd0 : (nq,) and (nv,) arrays
        Initial state; default ``reference(0)`` if a reference is given, else zeros (for a
        floating robot the base at the origin with the identity quaternion (0, 0, 0, 1)). A
        base quaternion within 1e-6 of unit length is normalised, others are refused.
    max_steps : int
        Bound on the number of grid points. ``"rk45"`` also stops (``SimulationError``) after
        ``max(100 (grid points - 1), 100000)`` attempted steps.
    progress : callable ``progress(t, duration)`` or None
        Called about a hundred times during the run, and once at the end.
    engine : "auto", "cpp" or "python"
        Which loop integrates: ``"auto"`` takes the C++ loop whenever the run qualifies (see
        the module documentation), ``"cpp"`` insists on it, ``"python"`` never uses it. Both
        give the same result to rounding; ``result.stats["engine"]`` says which ran.
    joint_limits : "stop" (default), "report" or "ignore"
        The plant's position limits as hard stops, only recorded (with a RuntimeWarning), or
        not looked at; see the module documentation.
    restitution : float in [0, 1]
        With hard stops, the fraction of the outward velocity a joint keeps (reversed) when it
        is stopped; 0 (default) stops it dead.
    project_momentum : bool
        A free-floating robot without gravity or external wrenches: after every step reset
        the base velocity so that the total momentum keeps its initial value (the Python
        loop; :class:`robodyn.constraints.momentum.MomentumProjection`, reported in
        ``result.stats["momentum_projection"]``).
    """
    if isinstance(robot, ConstrainedRobot):
        args = dict(locals())
        from .constrained import simulate_constrained

        return simulate_constrained(**args)
    nq, n = sizes(robot)
    floating = nq != n
    duration = positive(duration, "duration")
    dt = positive(dt, "dt")
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator: expected one of {', '.join(INTEGRATORS)}, "
                         f"got {integrator!r}")
    if control_rate is None or (isinstance(control_rate, str)
                                and control_rate.strip().lower() == "continuous"):
        continuous, period, rate = True, None, None
    else:
        rate = positive(control_rate, "control_rate")
        period = 1.0 / rate
        if not math.isfinite(period):
            raise ValueError(f"control_rate: {control_rate!r} Hz is too small (its period "
                             "1 / control_rate overflows)")
        continuous = False
    limits = make_limits(robot, joint_limits, restitution, floating)
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps: expected a positive integer, got {max_steps!r}")
    if integrator == "rk45":
        rtol = positive(rtol, "rtol")
        atol = positive(atol, "atol")
    if reference is not None and not callable(reference):
        raise ValueError("reference: expected a callable ref(t) -> (q, qd, qdd), e.g. "
                         "robodyn.trajectories.smooth(q0, q1, T)")
    if controller is not None and not callable(controller):
        raise ValueError("controller: expected a callable ctrl(t, q, qd, ref) -> tau or None")
    if isinstance(controller, Controller) and floating:
        raise ValueError(f"controller: {type(controller).__name__} is a joint-space law for "
                         f"fixed-base robots; a floating robot needs a controller callable "
                         f"ctrl(t, q, v, ref) -> tau (nv,) or (tau, wrenches)")
    if isinstance(controller, Controller):
        if controller.n != n:
            raise ValueError(f"controller: its model has {controller.n} joints, the plant {n}")
        if continuous and not controller.ideal_measurement:
            raise ValueError("control_rate: measurement noise and delay are defined per "
                             "control period; give a control rate in Hz, not 'continuous'")

    if reference is not None:
        r0 = reference(0.0)
        if len(r0) != 3:
            raise ValueError("reference: ref(t) must return (q, qd, qdd)")
        r0 = [state_vector(x, nq if i == 0 else n, f"reference(0)[{i}]") for i, x in enumerate(r0)]
    q_default = np.zeros(nq)
    if floating:
        q_default[6] = 1.0
    q0 = state_vector(r0[0] if (q0 is None and reference is not None) else
                (q_default if q0 is None else q0), nq, "q0")
    if floating:
        unit_quaternion(q0, "q0")
    qd0 = state_vector(r0[1] if (qd0 is None and reference is not None) else
                 (np.zeros(n) if qd0 is None else qd0), n, "qd0")
    if controller is not None and reference is None:
        reference = _traj.Constant(q0) if not floating else HoldPose(q0, n)

    grid, flags = time_grid(duration, dt, period, int(max_steps))
    post_step = limits
    if project_momentum:
        from ..constraints.momentum import MomentumProjection

        if engine == "cpp":
            raise ValueError("engine='cpp': project_momentum runs in the Python loop")
        post_step = MomentumProjection(robot, q0, qd0, limits)
    core = None
    if engine != "python" and not project_momentum:
        core, why = cpp_engine(robot, controller, reference, integrator, method)
        if core is None and engine == "cpp":
            raise ValueError(f"engine='cpp': {why}; use engine='auto' or 'python'")
    if isinstance(controller, Controller):
        controller.reset()  # fresh measurement history, noise seed and counters per run
    plant = None if core is not None else Plant(robot, controller, reference, n, method,
                                                  continuous, nq, post_step)
    # timed: the loop, and for the C++ engine also sampling the reference it needs
    start, cpu_start = time.perf_counter(), time.process_time()
    if core is not None:
        rec, stats = run_cpp(core, robot, controller, reference, grid, flags, q0, qd0,
                              integrator, method, continuous, progress, duration, limits)
    else:
        max_attempts = max(100 * (grid.shape[0] - 1), 100_000)
        rec, stats = run(plant, stepper(plant, integrator, grid, q0, qd0, rtol, atol,
                                        max_attempts), grid, flags, progress, duration)
    stats["engine"] = "python" if core is None else "cpp"
    if project_momentum:
        stats["momentum_projection"] = post_step.summary()
    wall = time.perf_counter() - start
    stats["cpu_time"] = time.process_time() - cpu_start

    res = SimulationResult._build(robot, controller, reference, grid, rec, stats, wall,
                                  integrator=integrator, dt=dt, control_rate=rate,
                                  duration=duration, joint_limits=joint_limits,
                                  restitution=float(restitution))
    if limits is not None:
        # in the layout of qd: a floating robot's six base entries have no limits
        base = n - limits.hits.shape[0]
        res.limit_hits[base:] = limits.hits
        res.limit_excess[base:] = limits.excess
        if not limits.stops and limits.hits.any():
            import warnings

            warnings.warn("robodyn.simulate: " + "; ".join(res.limit_report()) + " (not "
                          "enforced: joint_limits='report')", RuntimeWarning, stacklevel=2)
    return res


