"""The checked inputs of a simulation: sizes, states, the free-flyer quaternion, the time grid
(integration points and control instants), and the error a failed run raises."""

from __future__ import annotations

import math

import numpy as np


# check the state for NaN/inf every this many steps (a power of two minus one, as a mask)
FINITE_CHECK_MASK = 255

# a free-flyer quaternion further than this from unit length is an error; closer, normalised
QUATERNION_TOLERANCE = 1e-6

# names of the free-flyer's entries of q and v (used when the robot gives joint names only)
BASE_Q_NAMES = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_V_NAMES = ("base_wx", "base_wy", "base_wz", "base_vx", "base_vy", "base_vz")


def sizes(robot):
    """(nq, nv): configuration and velocity sizes (nq = nv for a fixed-base robot)."""
    nv = int(getattr(robot, "nv", robot.n))
    nq = int(getattr(robot, "nq", nv))
    if nq != nv and nq != nv + 1:
        raise ValueError(f"robot: nq = {nq}, nv = {nv}; the simulator integrates fixed-base "
                         f"models and models with one free-flyer root (nq = nv + 1)")
    return nq, nv


def unit_quaternion(q, name):
    """Normalise q[3:7] in place; ValueError if it is further than the tolerance from unit."""
    norm = float(np.linalg.norm(q[3:7]))
    if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
        raise ValueError(f"{name}: the base quaternion q[3:7] (x, y, z, w) must have unit "
                         f"length (within {QUATERNION_TOLERANCE:g}), got norm {norm:.9g}")
    q[3:7] /= norm
    return q


class SimulationError(RuntimeError):
    """The simulation diverged (non-finite state) or the adaptive step size collapsed."""


def positive(x, name):
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected a positive number, got {x!r}") from exc
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name}: expected a positive, finite number, got {x!r}")
    return v


def state_vector(x, n, name):
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected ({n},) numbers, got {x!r}") from exc
    if a.ndim == 0 and n == 1:
        a = a.reshape(1)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: values must be finite, got {a}")
    return a.copy()


def time_grid(duration, dt, period, max_steps):
    """Grid of integration points and a flag per point: does the control update there?

    The grid is the union of ``k dt`` and ``m period`` in ``[0, duration]`` (``duration``
    included); points closer than ``1e-9 min(dt, period)`` are merged.
    """
    finest = dt if period is None else min(dt, period)
    steps, instants = duration / dt, (0.0 if period is None else duration / period)
    if steps + instants > max_steps:
        if instants > steps:  # the control rate makes the grid
            raise ValueError(f"control_rate: {1.0 / period:.3g} Hz over {duration:.3g} s makes "
                             f"{instants:.3g} control instants, over max_steps = {max_steps}; "
                             "lower the control rate (or raise max_steps)")
        raise ValueError(f"dt: duration / dt = {steps:.3g} steps (plus {instants:.3g} control "
                         f"instants) exceeds max_steps = {max_steps}; raise dt (or max_steps)")
    eps = 1e-9 * finest
    ts = np.arange(int(math.floor(duration / dt + 1e-9)) + 1) * dt
    if period is not None:
        tc = np.arange(int(math.floor(duration / period + 1e-9)) + 1) * period
        ts = np.sort(np.concatenate([ts, tc]))
    ts = ts[ts < duration - eps]
    ts = np.append(ts, duration)
    keep = np.concatenate([[True], np.diff(ts) > eps])
    grid = ts[keep]
    flags = np.zeros(grid.shape[0], dtype=bool)
    if period is None:
        flags[:] = True
    else:
        idx = np.searchsorted(grid, tc - eps)
        flags[idx[idx < grid.shape[0]]] = True
    return grid, flags
