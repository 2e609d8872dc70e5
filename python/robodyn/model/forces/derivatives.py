"""dQ/dq and dQ/dqd of the force elements (ForcedRobot.generalized_force_derivatives).

Fixed base: analytic, from the world-frame joint axes z_j and origins o_j. A point x fixed to
a body moves with each joint j of its chain by the column s_j = z_j x (x - o_j) (revolute) or
z_j (prismatic); its second derivatives, for a the ancestor of b in the chain (a = b allowed),
are d s_b / dq_a = z_a x s_b when a is revolute and 0 when a is prismatic. A spring of length
l = |x2 - x1| with D = J2 - J1 has dl/dq = G = u^T D and Hessian
H = D^T (1 - u u^T) D / l + sum_k u_k d^2 (x2 - x1)_k / dq^2; with Q = -f G,
dQ/dq = -G (f_l G + f_v H qd)^T - f H and dQ/dqd = -f_v G G^T (f_l, f_v the tension's
derivatives in l and l'). A free-floating base: central differences on the configuration
manifold (robot.integrate), exact in qd (Q is linear in qd).
"""

from __future__ import annotations

import numpy as np

__all__ = ["force_derivatives"]


def _frames(robot, q):
    """Per joint j: (z_j, o_j, revolute) in world axes; per frame: its body's joint chain."""
    poses = np.asarray(robot.forward_kinematics(q))
    bodies = robot._spec.bodies
    n = len(bodies)
    axes = []
    for j, b in enumerate(bodies):
        a = np.asarray(b.axis, dtype=float)
        axes.append((poses[j][:3, :3] @ (a / np.linalg.norm(a)), poses[j][:3, 3],
                     b.joint_type != "prismatic"))
    parents = list(robot.parents)
    frame_body = list(range(n)) + [int(f.parent) for f in robot._spec.frames]
    return poses, axes, parents, frame_body


def _chain(parents, b):
    out = []
    while b >= 0:
        out.append(b)
        b = parents[b]
    return out[::-1]  # root first: an earlier entry is an ancestor of a later one


def _point(robot, q, geo, frame, p):
    """x (3,), J (3, n), H (n, n, 3) of point p of frame `frame` (-1: the world)."""
    poses, axes, parents, frame_body = geo
    n = len(axes)
    J = np.zeros((3, n))
    H = np.zeros((n, n, 3))
    if frame < 0:
        return np.asarray(p, dtype=float), J, H
    x = poses[frame][:3, :3] @ p + poses[frame][:3, 3]
    chain = _chain(parents, frame_body[frame])
    cols = {}
    for j in chain:
        z, o, rev = axes[j]
        cols[j] = np.cross(z, x - o) if rev else z
        J[:, j] = cols[j]
    for ia, a in enumerate(chain):
        za, _, reva = axes[a]
        if not reva:
            continue
        for b in chain[ia:]:
            h = np.cross(za, cols[b])
            H[a, b] = h
            H[b, a] = h
    return x, J, H


def force_derivatives(robot, q, qd):
    n = robot.nv
    if robot.floating_base:
        return _numerical(robot, q, qd)
    fs = robot._force_set
    st = fs.states(q, qd)
    Kq = np.zeros((n, n))
    Kv = np.zeros((n, n))
    geo = _frames(robot, q)
    for i, s in enumerate(robot._springs):
        l, _, f, _, _, fl, fv = st[i]
        if l < 1e-12:
            continue  # no defined direction (forces.hpp): the element's force is along qd
        f1 = robot._link(s.body1, "body1")
        f2 = -1 if s.body2 is None else robot._link(s.body2, "body2")
        x1, J1, H1 = _point(robot, q, geo, f1, s.point1)
        x2, J2, H2 = _point(robot, q, geo, f2, s.point2)
        u = (x2 - x1) / l
        D = J2 - J1
        G = u @ D
        Hl = D.T @ (np.eye(3) - np.outer(u, u)) @ D / l + (H2 - H1) @ u
        Kq += -np.outer(G, fl * G + fv * (Hl @ qd)) - f * Hl
        Kv += -fv * np.outer(G, G)
    for i, r in enumerate(robot._rotational):
        row = st[len(robot._springs) + i]
        j = robot._joint(r.joint)
        Kq[j, j] -= row[5]
        Kv[j, j] -= row[6]
    poses, axes, parents, frame_body = geo
    for w in robot._wrenches:
        f = robot._link(w.body, "body")
        x, J, H = _point(robot, q, geo, f, w.point)
        R = poses[f][:3, :3]
        mo, fo = w.wrench[:3], w.wrench[3:]
        if w.frame == "body":
            mo, fo = R @ mo, R @ fo
        chain = _chain(parents, frame_body[f])
        Jw = np.zeros((3, n))
        for j in chain:
            if axes[j][2]:
                Jw[:, j] = axes[j][0]
        Kq += np.einsum("ijk,k->ij", H, fo)
        for ia, a in enumerate(chain):
            za, _, reva = axes[a]
            if not reva:
                continue
            # the axes of the joints after a turn with joint a
            for b in chain[ia + 1:]:
                if axes[b][2]:
                    Kq[b, a] += np.cross(za, axes[b][0]) @ mo
            if w.frame == "body":
                # the wrench's components turn with the body
                Kq[:, a] += Jw.T @ np.cross(za, mo) + J.T @ np.cross(za, fo)
    return Kq, Kv


def _numerical(robot, q, qd, h=1e-6):
    n = robot.nv
    Kq = np.zeros((n, n))
    Kv = np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        Kq[:, k] = (robot.generalized_forces(robot.integrate(q, e), qd)
                    - robot.generalized_forces(robot.integrate(q, -e), qd)) / (2 * h)
        Kv[:, k] = (robot.generalized_forces(q, qd + e)
                    - robot.generalized_forces(q, qd - e)) / (2 * h)
    return Kq, Kv
