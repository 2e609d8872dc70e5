"""Loop constraints: a frame on one body held to a frame on another body or the world.

The rows of a constraint are the relative-motion axes of frame 2 with respect to frame 1, in
frame 1's axes, ordered [angular; linear] like every spatial vector in robodyn: a ``point``
constraint holds the origins together (rows 3, 4, 5), a ``weld`` also the orientation (rows
0-5), ``axes`` a chosen subset (a revolute loop about frame 1's z axis: rx, ry, x, y, z).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LoopConstraint", "AXIS_NAMES", "KINDS"]

AXIS_NAMES = ("rx", "ry", "rz", "x", "y", "z")
KINDS = ("point", "weld", "axes")

# a frame's rotation is accepted when R' R is the identity and det R = 1 within this
_RIGID_TOL = 1e-9


def _frame(value, what: str) -> np.ndarray:
    """A 4x4 rigid transform (a copy, read-only), or a clear ValueError naming ``what``."""
    if value is None:
        T = np.eye(4)
    else:
        try:
            T = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: expected a 4x4 homogeneous transform, got "
                             f"{type(value).__name__}") from None
        if T.shape != (4, 4):
            raise ValueError(f"{what}: expected a 4x4 homogeneous transform, got shape "
                             f"{T.shape}")
        if not np.all(np.isfinite(T)):
            raise ValueError(f"{what}: has non-finite entries")
        if not np.array_equal(T[3], [0.0, 0.0, 0.0, 1.0]):
            raise ValueError(f"{what}: the last row must be [0, 0, 0, 1], got {T[3].tolist()}")
        R = T[:3, :3]
        err = np.abs(R.T @ R - np.eye(3)).max()
        if err > _RIGID_TOL or np.linalg.det(R) < 0:
            raise ValueError(f"{what}: the rotation block is not a proper rotation "
                             f"(|R'R - I| = {err:.3g}, det = {np.linalg.det(R):.6g})")
    T.setflags(write=False)
    return T


def _body(value, what: str):
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what}: expected a link name (str) or None for the world, got "
                         f"{value!r}")
    return value


class LoopConstraint:
    """A constraint between frame 1 on ``body1`` and frame 2 on ``body2`` (link names, or
    None for the world).

    ``frame1``, ``frame2``: 4x4 poses of the constraint frames in their link's frame (for the
    world: in the world frame; default identity). ``kind``: ``"point"`` (the origins
    coincide: 3 rows), ``"weld"`` (the frames coincide: 6 rows) or ``"axes"`` (the relative
    motion along/about the given ``axes`` of frame 1 is zero, a subset of ``AXIS_NAMES``:
    a revolute loop about z is ``("rx", "ry", "x", "y", "z")``). ``baumgarte=(kp, kd)``:
    the constraint acceleration is driven to ``-kd dphi - kp phi`` instead of 0.
    ``rows``: the constrained axes as row indices of [angular; linear] (0-5), in order.
    """

    __slots__ = ("body1", "body2", "frame1", "frame2", "kind", "axes", "rows", "baumgarte",
                 "name")

    def __init__(self, body1, body2, frame1=None, frame2=None, kind="point", axes=None,
                 baumgarte=(0.0, 0.0), name=None):
        body1 = _body(body1, "body1")
        body2 = _body(body2, "body2")
        if body1 == body2:
            what = "the world" if body1 is None else f"link {body1!r}"
            raise ValueError(f"body1 and body2 are both {what}: a loop constraint joins two "
                             "different bodies (or a body and the world)")
        if name is None:
            name = f"{kind}:{body1 or 'world'}-{body2 or 'world'}"
        elif not isinstance(name, str) or not name:
            raise ValueError(f"name: expected a non-empty str, got {name!r}")
        if kind not in KINDS:
            raise ValueError(f"constraint {name!r}: kind: expected one of {KINDS}, got {kind!r}")
        if kind == "axes":
            if axes is None or isinstance(axes, str):
                raise ValueError(f"constraint {name!r}: axes: kind='axes' needs a sequence of "
                                 f"axis names from {AXIS_NAMES}, got {axes!r}")
            axes = tuple(axes)
            bad = [a for a in axes if a not in AXIS_NAMES]
            if bad:
                raise ValueError(f"constraint {name!r}: axes: unknown axis {bad[0]!r}; expected "
                                 f"names from {AXIS_NAMES}")
            if len(set(axes)) != len(axes):
                raise ValueError(f"constraint {name!r}: axes: an axis is repeated in {axes}")
            if not axes:
                raise ValueError(f"constraint {name!r}: axes: at least one axis is needed")
            rows = tuple(sorted(AXIS_NAMES.index(a) for a in axes))
            axes = tuple(AXIS_NAMES[r] for r in rows)
        else:
            if axes is not None:
                raise ValueError(f"constraint {name!r}: axes: only kind='axes' takes axes "
                                 f"(kind is {kind!r})")
            rows = (3, 4, 5) if kind == "point" else (0, 1, 2, 3, 4, 5)
            axes = tuple(AXIS_NAMES[r] for r in rows)
        try:
            kp, kd = (float(x) for x in baumgarte)
        except (TypeError, ValueError):
            raise ValueError(f"constraint {name!r}: baumgarte: expected (kp, kd), got "
                             f"{baumgarte!r}") from None
        if not (math.isfinite(kp) and math.isfinite(kd) and kp >= 0 and kd >= 0):
            raise ValueError(f"constraint {name!r}: baumgarte: gains must be finite and >= 0, "
                             f"got {(kp, kd)}")
        self.body1, self.body2 = body1, body2
        self.frame1 = _frame(frame1, f"constraint {name!r}: frame1")
        self.frame2 = _frame(frame2, f"constraint {name!r}: frame2")
        self.kind, self.axes, self.rows = kind, axes, rows
        self.baumgarte = (kp, kd)
        self.name = name

    @property
    def size(self) -> int:
        """Number of rows (3 for a point, 6 for a weld)."""
        return len(self.rows)

    def __repr__(self) -> str:
        extra = f", axes={self.axes}" if self.kind == "axes" else ""
        return (f"LoopConstraint({self.body1!r}, {self.body2!r}, kind={self.kind!r}{extra}, "
                f"name={self.name!r})")
