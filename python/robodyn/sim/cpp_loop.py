"""The C++ simulation loop (cpp/include/robodyn/simulation/simulate.hpp): when the plant, the controller
and the reference allow it, :func:`robodyn.simulate` runs here (:func:`cpp_engine` says why
not otherwise)."""

from __future__ import annotations

import numpy as np

from ..control.laws import Controller
from .inputs import SimulationError, sizes
from .loop import diverged


def cpp_engine(robot, controller, reference, integrator, method):
    """``(core, None)`` if the C++ loop can run this simulation, else ``(None, reason)``."""
    nq, nv = sizes(robot)
    if nq != nv:
        return None, ("a floating-base robot (nq != nv) runs in the Python loop, which "
                      "integrates on the configuration manifold")
    if integrator not in ("rk4", "euler"):
        return None, f"integrator {integrator!r} runs in Python (the C++ loop: rk4, euler)"
    try:
        from .. import _core as core
    except ImportError:  # pragma: no cover - the package does not import without its core
        return None, "the C++ core is not available"
    if not hasattr(core, "_simulate_fixed"):
        return None, "the installed C++ core has no simulation loop (rebuild robodyn)"
    if not isinstance(robot, core.RobotCore):
        return None, "the plant is not a robodyn.Robot"
    if hasattr(robot, "coupling"):
        return None, "the plant has coupled (mimic) joints (robodyn.coupling runs in Python)"
    if getattr(robot, "force_callables", False):
        return None, "the plant has force elements with Python callables (robodyn.forces)"
    if method not in ("aba", "crba", "kane"):
        return None, f"method {method!r} is not one of 'aba', 'crba', 'kane'"
    if controller is None:
        return core, None
    spec = controller.law_spec() if isinstance(controller, Controller) else None
    if spec is None:
        return None, (f"the controller (a {type(controller).__name__}) is not one of "
                      f"ComputedTorque, PDGravity, Feedforward (its law_spec() is None)")
    if spec.law not in core.CONTROL_LAWS[1:]:
        return None, f"the controller's law {spec.law!r} is not one of the C++ loop's"
    if not isinstance(spec.robot, core.RobotCore):
        return None, "the controller's model is not a robodyn.Robot"
    if hasattr(spec.robot, "coupling"):
        return None, "the controller's model has coupled (mimic) joints"
    if getattr(spec.robot, "force_callables", False):
        return None, "the controller's model has force elements with Python callables"
    if spec.law != "pd_gravity" and spec.method not in ("rnea", "kane"):
        return None, f"controller method {spec.method!r} is not 'rnea' or 'kane'"
    if not callable(getattr(reference, "sample", None)):
        return None, "the reference has no sample(ts) method (not a robodyn trajectory)"
    return core, None


def control_times(grid, flags, continuous, rk4):
    """The times of the control calls in call order (the C++ loop's reference rows):
    the control instants; continuous RK4: ``t_k, t_k + h/2, t_k + h`` per interval, then the
    last point (the midpoint stages share a row); continuous Euler: the grid."""
    if not continuous:
        return grid[flags]
    if not rk4:
        return grid
    t, h = grid[:-1], np.diff(grid)
    N = t.shape[0]
    ts = np.empty(3 * N + 1)
    ts[0:3 * N:3] = t
    ts[1:3 * N:3] = t + 0.5 * h
    ts[2:3 * N:3] = t + h
    ts[-1] = grid[-1]
    return ts


def run_cpp(core, robot, controller, reference, grid, flags, q0, qd0, integrator, method,
             continuous, progress, duration, limits):
    """The fixed-step loop in C++: same grid, stages and control calls as the Python loop's
    :class:`~robodyn.sim.loop.JointStep`."""
    n = int(robot.n)
    m = grid.shape[0]
    Q, QD, TAU = np.empty((m, n)), np.empty((m, n)), np.empty((m, n))
    kw = {}
    if controller is not None:
        ts = control_times(grid, flags, continuous, integrator == "rk4")
        rows = ts.shape[0]
        ref = []
        for name, a in zip(("q", "qd", "qdd"), reference.sample(ts)):
            a = np.ascontiguousarray(a, dtype=np.float64)
            if a.shape != (rows, n):
                raise ValueError(f"reference: sample(ts) must give ({rows}, {n}) arrays, got "
                                 f"{name} of shape {a.shape}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"reference: non-finite {name} in sample(ts)")
            ref.append(a)
        # the controller describes itself (control.LawSpec); the noise of its calls is drawn
        # here, as the Python loop's calls would draw it
        spec = controller.law_spec()
        noise_q, noise_qd = controller.draw_noise(rows)
        kw = dict(controller=spec.robot, law=spec.law,
                  kp=np.ascontiguousarray(spec.kp, dtype=np.float64),
                  kd=np.ascontiguousarray(spec.kd, dtype=np.float64),
                  feedback=bool(spec.feedback), kane=spec.method == "kane", limit=spec.limit,
                  q_ref=ref[0], qd_ref=ref[1], qdd_ref=ref[2], noise_q=noise_q,
                  noise_qd=noise_qd, delay=spec.delay, ring=spec.ring)
    if progress is not None:
        kw["progress"] = lambda t: progress(t, duration)
        kw["every"] = max(1, (m - 1) // 100)
    if limits is not None:
        big = np.finfo(np.float64).max  # the C++ boundary takes finite bounds only
        kw.update(lower=np.maximum(limits.lower, -big), upper=np.minimum(limits.upper, big),
                  stops=limits.stops,
                  restitution=limits.restitution, hits_out=limits.hits,
                  excess_out=limits.excess)
    out = core._simulate_fixed(robot, grid, flags, q0, qd0, Q, QD, TAU, integrator=integrator,
                               method=method, continuous=continuous, **kw)
    if controller is not None:
        controller.calls += out["control_calls"]
        controller.saturated_calls += out["saturated_calls"]
    status, t = out["status"], out["t"]
    if status == "diverged":
        diverged(t)
    if status == "fd_failed":
        raise ValueError("forward dynamics failed: the mass matrix is not positive definite at "
                         "this state")
    if status != "ok":  # pragma: no cover - "stopped" re-raises the progress callback's error
        raise SimulationError(f"simulation stopped at t = {t:.6g} s ({status})")
    if progress is not None:
        progress(duration, duration)
    stats = {"steps": m - 1, "rejected": 0, "fd_calls": out["fd_calls"],
             "control_calls": out["control_calls"]}
    return {"q": Q, "qd": QD, "tau": TAU}, stats
