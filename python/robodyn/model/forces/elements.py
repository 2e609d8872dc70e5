"""The force elements: :class:`Spring`, :class:`RotationalSpring`, :class:`BodyForce`.

They are descriptions (immutable, checked when made); ``robot.with_forces([...])`` resolves
their link and joint names against a robot and hands them to the C++ core.
"""

from __future__ import annotations

import math

import numpy as np

from .curve import Curve

__all__ = ["Spring", "RotationalSpring", "BodyForce", "FRAMES"]

FRAMES = ("world", "body")


def _number(x, name, nonnegative=False):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {v!r}")
    if nonnegative and v < 0:
        raise ValueError(f"{name}: must be >= 0, got {v:g} (a negative stiffness or damping "
                         "adds energy; give an actuator force=callable for that)")
    return v


def _point(p, name):
    a = np.array(p, dtype=float).reshape(-1) if p is not None else np.zeros(3)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected 3 finite coordinates (m), got {p!r}")
    a.setflags(write=False)
    return a


def _curve(c, name):
    if c is None:
        return None
    if not isinstance(c, Curve):
        raise ValueError(f"{name}: expected a robodyn.Curve, got {type(c).__name__}")
    if np.any(c.y < 0):
        raise ValueError(f"{name}: values must be >= 0 (got {c.y.min():g})")
    return c


def _actuator(f, name):
    """(constant, callable): a number is a constant actuator, a callable is evaluated in
    Python per call, None is zero."""
    if f is None:
        return 0.0, None
    if callable(f):
        return 0.0, f
    return _number(f, name), None


def _body(b, name, allow_world=False):
    if b is None and allow_world:
        return None
    if isinstance(b, (str, int, np.integer)) and not isinstance(b, bool):
        return b if isinstance(b, str) else int(b)
    raise ValueError(f"{name}: expected a link name or index{' or None (the world)' if allow_world else ''}, "
                     f"got {b!r}")


class Spring:
    """A translational spring-damper-actuator from ``point1`` on link ``body1`` to ``point2``
    on link ``body2`` (points in each link's frame, m), or to the world point ``point2`` when
    ``body2`` is None. Its tension (positive pulls the points together) is

        f = k (l - l0) + c l' + F

    with ``l`` the distance between the points, ``l'`` its rate, ``l0 = rest_length`` (None:
    the distance at q = 0, the configuration the robot is described in), ``k`` (N/m) and ``c``
    (N s/m) constants >= 0 or, with ``stiffness_curve`` / ``damping_curve``, curves over the
    deflection ``l - l0`` (:class:`robodyn.Curve`), and ``F = force``: a constant (N), or a
    callable ``force(l, ldot, t) -> float`` evaluated in Python (which makes
    :func:`robodyn.simulate` use its Python loop). The generalized force is
    ``f (J1 - J2)^T u`` (u the unit vector from point 1 to point 2, J the points' linear
    Jacobians); below 1e-12 m the direction is that of the relative velocity and, with the
    points also at relative rest, there is no force (never NaN).
    """

    def __init__(self, body1, point1, body2=None, point2=None, k=0.0, c=0.0, rest_length=None,
                 force=None, stiffness_curve=None, damping_curve=None):
        self.body1 = _body(body1, "body1")
        self.point1 = _point(point1, "point1")
        self.body2 = _body(body2, "body2", allow_world=True)
        self.point2 = _point(point2, "point2")
        self.k = _number(k, "k", nonnegative=True)
        self.c = _number(c, "c", nonnegative=True)
        self.rest_length = None if rest_length is None else _number(rest_length, "rest_length",
                                                                    nonnegative=True)
        self.force, self.force_fn = _actuator(force, "force")
        self.stiffness_curve = _curve(stiffness_curve, "stiffness_curve")
        self.damping_curve = _curve(damping_curve, "damping_curve")

    def __repr__(self) -> str:
        to = "world" if self.body2 is None else repr(self.body2)
        return f"Spring({self.body1!r} -> {to}, k={self.k:g}, c={self.c:g})"


class RotationalSpring:
    """A rotational spring-damper-actuator about a revolute joint (or along a prismatic one):
    the torque ``n = k (theta - rest) + c theta' + N`` opposes the joint coordinate,
    ``Q_joint = -n`` (DASC eq. 3.35; ``theta`` is the joint coordinate, which counts whole
    turns). ``k``, ``c`` constants >= 0 or curves over ``theta - rest``; ``torque``: a constant
    or a callable ``torque(theta, thetad, t) -> float`` evaluated in Python."""

    def __init__(self, joint, k=0.0, c=0.0, rest=0.0, torque=None, stiffness_curve=None,
                 damping_curve=None):
        if not isinstance(joint, (str, int, np.integer)) or isinstance(joint, bool):
            raise ValueError(f"joint: expected a joint name or index, got {joint!r}")
        self.joint = joint if isinstance(joint, str) else int(joint)
        self.k = _number(k, "k", nonnegative=True)
        self.c = _number(c, "c", nonnegative=True)
        self.rest = _number(rest, "rest")
        self.torque, self.torque_fn = _actuator(torque, "torque")
        self.stiffness_curve = _curve(stiffness_curve, "stiffness_curve")
        self.damping_curve = _curve(damping_curve, "damping_curve")

    def __repr__(self) -> str:
        return f"RotationalSpring({self.joint!r}, k={self.k:g}, c={self.c:g}, rest={self.rest:g})"


class BodyForce:
    """A wrench ``[moment (3); force (3)]`` (N m, N) on link ``body`` at ``point`` (in the link
    frame, default its origin): a constant (6,) array or a callable ``wrench(t, q, qd) -> (6,)``
    evaluated in Python. ``frame="world"``: components in world axes; ``"body"``: in the link
    frame's axes (turning with it). Generalized force ``Jw^T moment + Jv^T force``."""

    def __init__(self, body, wrench_or_callable, frame="world", point=None):
        self.body = _body(body, "body")
        if frame not in FRAMES:
            raise ValueError(f"frame: expected one of {', '.join(FRAMES)}, got {frame!r}")
        self.frame = frame
        self.point = _point(point, "point")
        if callable(wrench_or_callable):
            self.wrench, self.wrench_fn = np.zeros(6), wrench_or_callable
        else:
            w = np.array(wrench_or_callable, dtype=float).reshape(-1)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise ValueError(f"wrench: expected 6 finite numbers [moment; force] or a "
                                 f"callable wrench(t, q, qd), got {wrench_or_callable!r}")
            self.wrench, self.wrench_fn = w, None
        self.wrench.setflags(write=False)

    def __repr__(self) -> str:
        return f"BodyForce({self.body!r}, frame={self.frame!r})"
