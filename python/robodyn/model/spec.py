"""The neutral description of a robot that every front end (URDF, DH) produces.

A :class:`ModelSpec` is plain data: the URDF loader and ``from_dh`` build one, ``Robot`` turns
it into the immutable C++ model, ``to_urdf`` writes one back out. Frames and units:

- bodies are listed so that ``bodies[i].parent < i`` (``-1`` is the fixed base);
- ``origin`` is the 4x4 pose of the body frame in its parent's body frame at q = 0 (the URDF
  joint ``<origin>``); the pose at q is ``parent_pose @ origin @ motion(axis, q)``, where the
  motion is a rotation about ``axis`` (revolute) or a translation along it (prismatic);
- ``axis`` is a unit 3-vector in the body frame;
- ``com`` (m) and ``inertia`` (kg m^2, about the centre of mass) are in the body frame;
- ``frames`` are extra frames rigidly attached to a body (or to the base, parent ``-1``) by a
  constant pose: links merged through fixed joints, DH frames, tool frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import hashlib
import math
import pickle

import numpy as np

__all__ = ["Body", "Frame", "ModelSpec", "negative_moments", "fingerprint"]


@dataclass
class Body:
    """One moving link and the joint that connects it to its parent."""

    name: str
    joint_name: str
    parent: int
    joint_type: str  # "revolute" or "prismatic"
    axis: np.ndarray  # (3,)
    origin: np.ndarray  # (4, 4)
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    armature: float = 0.0
    damping: float = 0.0  # viscous friction, N m s / rad (or N s / m)
    friction: float = 0.0  # Coulomb friction, N m (or N)
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    # a coupled (URDF <mimic>) joint: (leader joint name, multiplier, offset), its angle is
    # multiplier * q_leader + offset; the leader is an independent joint (mimic None)
    mimic: tuple | None = None


@dataclass
class Frame:
    """A frame fixed to a body (``parent`` index) or to the base (``-1``)."""

    name: str
    parent: int
    pose: np.ndarray  # (4, 4) in the parent body frame


@dataclass
class ModelSpec:
    """A whole robot: its moving bodies (parents before children, in joint order), extra
    frames, gravity in the base frame (m/s^2) and name; ``Robot(spec)`` builds the model."""

    bodies: list[Body]
    frames: list[Frame] = field(default_factory=list)
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    name: str = "robot"
    base_name: str = "base"
    # False accepts inertias that break the triangle inequality as given (published models
    # such as the Stanford arm's link 5); True checks it too, with the one tolerance of
    # robodyn.urdf. A negative principal moment is refused either way (Robot(spec)) unless
    # accept_indefinite_inertia is True: load_urdf sets it for a file that has one on a moving
    # link (after its warning, or with check_inertia=False), so such a file loads as written.
    check_inertia: bool = True
    accept_indefinite_inertia: bool = False
    # False accepts a singular mass matrix (a joint that moves no mass: inverse dynamics and
    # kinematics work, forward dynamics raises); load_urdf sets it, with a warning
    check_mass_matrix: bool = True


def negative_moments(inertias):
    """``(bad, moments)`` of a stack of (n, 3, 3) rotational inertias: ``bad[i]`` is True when
    tensor i is finite, symmetric (to 1e-9 of its scale) and has a principal moment below
    ``-max(INERTIA_RTOL * largest |moment|, INERTIA_ATOL)`` (the model's one tolerance);
    ``moments`` (n, 3) ascending (zero for the tensors not analysed)."""
    from .._core import INERTIA_ATOL, INERTIA_RTOL

    I = np.asarray(inertias, dtype=float).reshape(-1, 3, 3)
    moments = np.zeros((I.shape[0], 3))
    with np.errstate(all="ignore"):
        scale = np.maximum(1.0, np.abs(I).max(axis=(1, 2), initial=0.0))
        usable = (np.isfinite(I).all(axis=(1, 2))
                  & (np.abs(I - I.transpose(0, 2, 1)).max(axis=(1, 2), initial=0.0)
                     <= 1e-9 * scale))
        moments[usable] = np.linalg.eigvalsh(I[usable])
        tol = np.maximum(INERTIA_RTOL * np.abs(moments).max(axis=1), INERTIA_ATOL)
        bad = usable & (moments[:, 0] < -tol)
    return bad, moments


def fingerprint(spec) -> str:
    """SHA-256 of a model description (its pickle: the numbers, names and options); the key
    of caches of anything computed from a model (loaded kernels, campaign plants)."""
    return hashlib.sha256(pickle.dumps(spec, protocol=4)).hexdigest()
