"""Pure-NumPy loop-constraint kinematics on a ModelSpec: phi(q), J(q), gamma(q, v).

The test oracle for robodyn.constraints, built on reference.featherstone (no robodyn code, no
compiled core). One small function per quantity, plain 3x3 algebra in world axes.

Conventions (docs/constraints.md; lam, the wrench on body 1, enters as M qdd + h = tau + J' lam):
- a loop holds frame 1 (pose T1 on body 1, or in the world for None) to frame 2 (T2 on body 2);
  its world poses are (R1, p1) and (R2, p2);
- the full residual is the weld's [log(R2' R1); R1' (p1 - p2)]: the pose of frame 1 relative
  to frame 2 (rotation vector, then origin 1 minus origin 2), in frame 1's axes (the rotation
  vector of R2' R1 has the same coordinates in both frames); a loop keeps `rows` of it,
  ascending indices into [rx, ry, rz, x, y, z]: a point (3, 4, 5), a weld 0-5, a revolute
  about z (0, 1, 3, 4, 5);
- the constraint velocity J v is the motion of frame 1 relative to frame 2 in frame 1's axes,
  [R1' (w1 - w2); R1' (v1 - v2 - w1 x (p1 - p2))] (w world angular velocities, v world
  velocities of the frame origins): its linear rows are the exact time derivative of the
  translation residual; its angular rows satisfy d(R1' R2)/dt = -skew(J_ang v) R1' R2 (they
  equal the rate of log(R2' R1) where R1' R2 = 1);
- gamma(q, v) = dJ/dt v, so J qdd + gamma is the time derivative of J v.
"""

from collections import namedtuple

import numpy as np

from . import featherstone as F

__all__ = ["Loop", "loop", "AXIS_NAMES", "so3_log", "frame_pose", "frame_jacobian",
           "frame_motion", "relative_twist", "residual", "jacobian", "bias_acceleration"]

AXIS_NAMES = ("rx", "ry", "rz", "x", "y", "z")

Loop = namedtuple("Loop", "body1 body2 frame1 frame2 rows")


def loop(body1, body2, frame1=None, frame2=None, kind="point", axes=None):
    """A Loop: `kind` "point" (rows x, y, z), "weld" (all six) or "axes" (the named `axes`)."""
    if kind == "point":
        rows = (3, 4, 5)
    elif kind == "weld":
        rows = tuple(range(6))
    elif kind == "axes":
        rows = tuple(sorted(AXIS_NAMES.index(a) for a in axes))
    else:
        raise ValueError(f"unknown kind {kind!r}")
    eye = np.eye(4)
    return Loop(body1, body2, eye if frame1 is None else np.asarray(frame1, dtype=float),
                eye if frame2 is None else np.asarray(frame2, dtype=float), rows)


def so3_log(R):
    """Rotation vector of R (angle in [0, pi]) through its unit quaternion."""
    x = F.rot_to_quat(R)
    s = np.linalg.norm(x[:3])
    if s < 1e-12:
        return 2.0 * x[:3] / x[3]
    return 2.0 * np.arctan2(s, x[3]) * x[:3] / s


# ---------------------------------------------------------------- one frame on one body

def _attach(spec, name, T):
    """(body index or -1, pose of the frame in that body): links are bodies or spec.frames."""
    if name is None:
        return -1, T
    for i, b in enumerate(spec.bodies):
        if b.name == name:
            return i, T
    for f in spec.frames:
        if f.name == name:
            return int(f.parent), np.asarray(f.pose, dtype=float) @ T
    raise ValueError(f"no link named {name!r}")


def frame_pose(spec, q, name, T):
    """(R, p): world rotation and origin of the frame at pose T on link `name` (None: world)."""
    body, T = _attach(spec, name, T)
    P = T if body == -1 else F.fk(spec, q)[body] @ T
    return P[:3, :3], P[:3, 3]


def frame_jacobian(spec, q, name, T):
    """(3, nv), (3, nv): world angular velocity and world velocity of the frame origin per v."""
    body, T = _attach(spec, name, T)
    nv = F.layout(spec)[3]
    if body == -1:
        return np.zeros((3, nv)), np.zeros((3, nv))
    Jb = F.jacobian(spec, q, body)
    P = F.fk(spec, q)[body]
    r = P[:3, :3] @ T[:3, 3]
    # shift the body-origin rows to the frame origin: v_p = v_o + w x r
    return Jb[:3], Jb[3:] - F.skew(r) @ Jb[:3]


def frame_motion(spec, q, v, name, T):
    """(w, vp, alpha, ap) in world axes: angular velocity, origin velocity, and their rates
    when qdd = 0 (no gravity): the velocity-product accelerations of the frame."""
    body, T = _attach(spec, name, T)
    if body == -1:
        return np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
    parent, Xup, S, _ = F.model_arrays(spec, q)
    vb = F._blocks(spec, np.asarray(v, dtype=float), 1)
    # forward pass: body velocities and accelerations with qdd = 0, body coordinates
    vel, acc = [None] * len(parent), [None] * len(parent)
    for i in range(body + 1):
        vJ = S[i] @ vb[i]
        if parent[i] == -1:
            vel[i], acc[i] = vJ, np.zeros(6)
        else:
            vel[i] = Xup[i] @ vel[parent[i]] + vJ
            acc[i] = Xup[i] @ acc[parent[i]] + F.crm(vel[i]) @ vJ
    w, vo = vel[body][:3], vel[body][3:]
    wd, ao = acc[body][:3], acc[body][3:]
    r = T[:3, 3]
    # the body point at r: velocity vo + w x r, classical acceleration (spatial + w x velocity)
    vp = vo + np.cross(w, r)
    ap = ao + np.cross(wd, r) + np.cross(w, vp)
    Rb = F.fk(spec, q)[body][:3, :3]
    return Rb @ w, Rb @ vp, Rb @ wd, Rb @ ap


# ---------------------------------------------------------------- one loop

def _full_residual(spec, q, lp):
    R1, p1 = frame_pose(spec, q, lp.body1, lp.frame1)
    R2, p2 = frame_pose(spec, q, lp.body2, lp.frame2)
    return np.concatenate([so3_log(R2.T @ R1), R1.T @ (p1 - p2)])


def _full_jacobian(spec, q, lp):
    R1, p1 = frame_pose(spec, q, lp.body1, lp.frame1)
    _, p2 = frame_pose(spec, q, lp.body2, lp.frame2)
    W1, V1 = frame_jacobian(spec, q, lp.body1, lp.frame1)
    W2, V2 = frame_jacobian(spec, q, lp.body2, lp.frame2)
    # w1 x (p1 - p2) = -skew(p1 - p2) w1
    return np.vstack([R1.T @ (W1 - W2), R1.T @ (V1 - V2 + F.skew(p1 - p2) @ W1)])


def relative_twist(spec, q, v, lp):
    """(6,) [R1' (w1 - w2); R1' (v1 - v2 - w1 x (p1 - p2))]: J v from the frames' motion."""
    R1, p1 = frame_pose(spec, q, lp.body1, lp.frame1)
    _, p2 = frame_pose(spec, q, lp.body2, lp.frame2)
    w1, v1, _, _ = frame_motion(spec, q, v, lp.body1, lp.frame1)
    w2, v2, _, _ = frame_motion(spec, q, v, lp.body2, lp.frame2)
    return np.concatenate([R1.T @ (w1 - w2), R1.T @ (v1 - v2 - np.cross(w1, p1 - p2))])


def _full_bias(spec, q, v, lp):
    R1, p1 = frame_pose(spec, q, lp.body1, lp.frame1)
    _, p2 = frame_pose(spec, q, lp.body2, lp.frame2)
    w1, v1, al1, a1 = frame_motion(spec, q, v, lp.body1, lp.frame1)
    w2, v2, al2, a2 = frame_motion(spec, q, v, lp.body2, lp.frame2)
    d = p1 - p2
    # d/dt R1' x = R1' (x' - w1 x x), applied to x = w1 - w2 and to u = v1 - v2 - w1 x d
    u = v1 - v2 - np.cross(w1, d)
    du = a1 - a2 - np.cross(al1, d) - np.cross(w1, v1 - v2)
    return np.concatenate([R1.T @ (al1 - al2 - np.cross(w1, w1 - w2)),
                           R1.T @ (du - np.cross(w1, u))])


# ---------------------------------------------------------------- a list of loops

def residual(spec, q, loops):
    """(m,) phi(q): each loop's rows of its weld residual, stacked in order."""
    return np.concatenate([_full_residual(spec, q, lp)[list(lp.rows)] for lp in loops])


def jacobian(spec, q, loops):
    """(m, nv) J(q): J v is the stacked rows of each loop's relative twist."""
    return np.vstack([_full_jacobian(spec, q, lp)[list(lp.rows)] for lp in loops])


def bias_acceleration(spec, q, v, loops):
    """(m,) gamma(q, v) = dJ/dt v: the constraint acceleration is J qdd + gamma."""
    return np.concatenate([_full_bias(spec, q, v, lp)[list(lp.rows)] for lp in loops])
