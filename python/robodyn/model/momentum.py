"""The momentum balance of a floating robot's simulation: how much of the change of its total
momentum the external forces explain (:attr:`robodyn.SimulationResult.momentum_drift`).

The total momentum h = [L; p] (angular about the world origin; linear, world axes; what
``robot.momentum`` returns) changes only by external wrenches: dh/dt = w_gravity + w_ext.

- Gravity acts on the centre of mass c: w_gravity = [c x m g; m g] (constant force, so its
  linear impulse over a run of length T is exactly m g T).
- Joint torques are internal. A wrench applied to any link (a controller's ``(tau, wrenches)``)
  enters the generalized force as J^T w, whose base block (the first six entries of
  ``result.tau``) is the total external wrench [moment about the base origin; force] in the
  base frame. In world axes about the world origin: f = R f_b, n = R n_b + r x f, with (r, R)
  the base pose.

The impulse is integrated by the trapezoidal rule over each output interval, with the
recorded command held over the interval (or, for a continuous controller, taken at both ends),
so the drift h(t) - h(0) - impulse(t) measures the integrator's error.
"""

from __future__ import annotations

import numpy as np

__all__ = ["external_impulse", "momentum_lines", "base_rotations"]


def base_rotations(quaternions):
    """(N, 3, 3) rotation matrices of unit quaternions (N, 4) given as x, y, z, w."""
    x, y, z, w = (quaternions[:, k] for k in range(4))
    R = np.empty((quaternions.shape[0], 3, 3))
    R[:, 0, 0] = 1 - 2 * (y * y + z * z)
    R[:, 0, 1] = 2 * (x * y - z * w)
    R[:, 0, 2] = 2 * (x * z + y * w)
    R[:, 1, 0] = 2 * (x * y + z * w)
    R[:, 1, 1] = 1 - 2 * (x * x + z * z)
    R[:, 1, 2] = 2 * (y * z - x * w)
    R[:, 2, 0] = 2 * (x * z - y * w)
    R[:, 2, 1] = 2 * (y * z + x * w)
    R[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def _world_wrench(q, tau_base):
    """[moment about the world origin; force] in world axes (N, 6) of base-frame wrenches
    ``tau_base`` (N, 6) on bases at poses q[:, :7]."""
    R = base_rotations(q[:, 3:7])
    f = np.einsum("nij,nj->ni", R, tau_base[:, 3:])
    n = np.einsum("nij,nj->ni", R, tau_base[:, :3]) + np.cross(q[:, :3], f)
    return np.hstack([n, f])


def external_impulse(res):
    """(N+1, 6) impulse of the external wrenches on the floating robot of ``res`` from t[0]
    to each sample, [angular about the world origin (N m s); linear (N s)] in world axes, the
    frame of ``res.momentum``: gravity's and the base block of ``res.tau``'s. Returns None for
    a fixed base, or when ``res.robot`` (None for a result built by hand) cannot give its
    centre of mass."""
    robot = res.robot
    if not res.floating or res.momentum is None or robot is None:
        return None
    t, q = res.t, res.q
    gravity_of = getattr(robot, "gravity", None)
    com_of = getattr(robot, "center_of_mass", None)
    spec = getattr(robot, "spec", None)
    if gravity_of is None or com_of is None or spec is None:
        return None
    try:
        mass = float(sum(b.mass for b in spec.bodies))
        c = np.asarray(com_of(np.ascontiguousarray(q)), dtype=np.float64)
        g = np.asarray(gravity_of, dtype=np.float64).reshape(3)
    except (TypeError, ValueError, IndexError):
        return None
    if c.shape != (t.shape[0], 3):
        return None
    tau = np.asarray(res.tau[:, :6], dtype=np.float64)
    gravity = np.hstack([np.cross(c, mass * g), np.broadcast_to(mass * g, c.shape)])
    start = _world_wrench(q[:-1], tau[:-1])
    # a held command keeps its base-frame value over the interval; a continuous one changes
    end = _world_wrench(q[1:], tau[:-1] if res.control_rate is not None else tau[1:])
    rate = 0.5 * (gravity[:-1] + gravity[1:] + start + end)
    impulse = np.zeros((t.shape[0], 6))
    impulse[1:] = np.cumsum(np.diff(t)[:, None] * rate, axis=0)
    return impulse


def _vec(x, scale):
    """``(a, b, c)`` to 4 digits, entries below 1e-12 ``scale`` (rounding residue) as 0."""
    x = np.where(np.abs(x) <= 1e-12 * scale, 0.0, x) + 0.0
    return "(" + ", ".join(f"{v:.4g}" for v in x) + ")"


def momentum_lines(res):
    """The summary's lines on a floating robot's momentum: its change over the run against the
    external impulse (when there is one), then the drift (their difference), and a plain
    statement that nothing holds the robot up when gravity acts."""
    h = res.momentum
    h0 = h[0]
    ang, lin = res.momentum_drift
    impulse = res.external_impulse
    lines = []
    if impulse is not None and np.any(impulse[-1] != 0.0):
        change = h[-1] - h0
        scale = float(np.max(np.abs(np.concatenate([change, impulse[-1]]))))
        lines.append(f"momentum change over the run (world axes, angular about the origin): "
                     f"angular {_vec(change[:3], scale)} N m s, linear "
                     f"{_vec(change[3:], scale)} N s")
        sources = "gravity" if np.any(np.asarray(res.robot.gravity) != 0.0) else ""
        if np.any(res.tau[:, :6] != 0.0):
            sources += (" and " if sources else "") + "wrenches on the robot"
        lines.append(f"external impulse ({sources}): angular {_vec(impulse[-1, :3], scale)} "
                     f"N m s, linear {_vec(impulse[-1, 3:], scale)} N s")
        what = "momentum drift (change minus impulse, largest over the run)"
    elif impulse is not None:
        what = "momentum drift (no external force: its change, largest over the run)"
    else:
        what = "momentum drift (its change, largest over the run; no robot to weigh forces)"
    lines.append(f"{what}: angular {ang:.3e} N m s (|h0| {float(np.linalg.norm(h0[:3])):.6g}), "
                 f"linear {lin:.3e} N s (|p0| {float(np.linalg.norm(h0[3:])):.6g})")
    gravity = getattr(res.robot, "gravity", None)
    if gravity is not None and np.any(np.asarray(gravity) != 0.0):
        lines.append("no ground contact model: under gravity the robot falls freely (robodyn "
                     "simulates no contacts yet)")
    return lines
