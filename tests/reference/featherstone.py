"""Pure-NumPy rigid-body dynamics on a ModelSpec, written from Featherstone (2008).

This is the test oracle. It is deliberately plain: 6x6 matrices everywhere, the book's names
(Xup, S, v, a, f, IC, IA, pA, U, D, u), one small function per algorithm. It shares no code
with cpp/ and never imports robodyn's compiled core; it only reads ModelSpec attributes.

Conventions:
- spatial vectors are [angular; linear] (Plucker coordinates, RBDA ch. 2);
- Xup[i] maps motion vectors from parent coordinates to body-i coordinates;
- S[i] is the joint motion subspace in body-i coordinates: [axis; 0] revolute, [0; axis]
  prismatic;
- the fixed base has v = 0 and a = [0; -gravity] (the fictitious base acceleration trick);
- joint-space terms: tau = M qdd + C qd + g + armature qdd + damping qd + friction sign(qd).
"""

import numpy as np

__all__ = [
    "skew", "rot", "crm", "crf", "plux", "mcI", "pose_to_X", "joint_transform",
    "motion_subspace", "spatial_inertia", "model_arrays",
    "rnea", "crba", "bias", "gravity_torques", "aba", "fk", "jacobian",
    "kinetic_energy", "potential_energy", "friction_torques",
]


# ---------------------------------------------------------------- spatial algebra (RBDA ch. 2)

def skew(x):
    """3x3 cross-product matrix: skew(x) @ y = x x y."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def rot(axis, angle):
    """Rotation matrix of `angle` about the unit vector `axis` (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def crm(v):
    """Spatial cross product for motion vectors: crm(v) @ m = v x m (RBDA eq. 2.31)."""
    w, vo = v[:3], v[3:]
    out = np.zeros((6, 6))
    out[:3, :3] = skew(w)
    out[3:, :3] = skew(vo)
    out[3:, 3:] = skew(w)
    return out


def crf(v):
    """Spatial cross product for force vectors: crf(v) @ f = v x* f = -crm(v).T @ f (eq. 2.32)."""
    return -crm(v).T


def plux(E, r):
    """Plucker transform B_X_A from rotation E (A coords -> B coords) and r (B origin in A)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, :3] = -E @ skew(r)
    X[3:, 3:] = E
    return X


def pose_to_X(T):
    """Motion transform child_X_parent of a 4x4 pose T of the child frame in the parent frame."""
    return plux(T[:3, :3].T, T[:3, 3])


def mcI(m, c, Ic):
    """Spatial inertia of a body with mass m, COM c and rotational inertia Ic about the COM."""
    C = skew(c)
    I = np.zeros((6, 6))
    I[:3, :3] = Ic + m * C @ C.T
    I[:3, 3:] = m * C
    I[3:, :3] = m * C.T
    I[3:, 3:] = m * np.eye(3)
    return I


# ---------------------------------------------------------------- model quantities

def joint_transform(body, qi):
    """(XJ, S): joint transform and motion subspace of one body (RBDA table 4.1, jcalc)."""
    axis = np.asarray(body.axis, dtype=float)
    S = np.zeros(6)
    if body.joint_type == "revolute":
        XJ = plux(rot(axis, qi).T, np.zeros(3))
        S[:3] = axis
    elif body.joint_type == "prismatic":
        XJ = plux(np.eye(3), axis * qi)
        S[3:] = axis
    else:
        raise ValueError(f"unknown joint type {body.joint_type!r}")
    return XJ, S


def motion_subspace(body):
    return joint_transform(body, 0.0)[1]


def spatial_inertia(body):
    return mcI(float(body.mass), np.asarray(body.com, dtype=float),
               np.asarray(body.inertia, dtype=float))


def model_arrays(spec, q):
    """parent, Xup, S, I for every body at configuration q."""
    parent, Xup, S, I = [], [], [], []
    for i, body in enumerate(spec.bodies):
        XJ, Si = joint_transform(body, q[i])
        parent.append(int(body.parent))
        Xup.append(XJ @ pose_to_X(np.asarray(body.origin, dtype=float)))
        S.append(Si)
        I.append(spatial_inertia(body))
    return parent, Xup, S, I


def _joint_vectors(spec):
    armature = np.array([b.armature for b in spec.bodies], dtype=float)
    damping = np.array([b.damping for b in spec.bodies], dtype=float)
    friction = np.array([b.friction for b in spec.bodies], dtype=float)
    return armature, damping, friction


def _base_acceleration(spec, gravity):
    g = np.asarray(spec.gravity if gravity is None else gravity, dtype=float)
    return np.concatenate([np.zeros(3), -g])


def friction_torques(spec, qd):
    """damping qd + friction sign(qd): the joint losses included in rnea."""
    _, damping, friction = _joint_vectors(spec)
    qd = np.asarray(qd, dtype=float)
    return damping * qd + friction * np.sign(qd)


# ---------------------------------------------------------------- algorithms

def rnea(spec, q, qd, qdd, gravity=None):
    """Inverse dynamics, RBDA table 5.1 (ID.m), plus armature, damping and Coulomb friction.

    tau = M(q) qdd + C(q, qd) qd + g(q) + armature qdd + damping qd + friction sign(qd).
    """
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    n = len(spec.bodies)
    parent, Xup, S, I = model_arrays(spec, q)
    a_base = _base_acceleration(spec, gravity)
    v, a, f = [None] * n, [None] * n, [None] * n
    # forward pass: velocities, accelerations, net body forces
    for i in range(n):
        vJ = S[i] * qd[i]
        if parent[i] == -1:
            v[i] = vJ
            a[i] = Xup[i] @ a_base + S[i] * qdd[i]
        else:
            v[i] = Xup[i] @ v[parent[i]] + vJ
            a[i] = Xup[i] @ a[parent[i]] + S[i] * qdd[i] + crm(v[i]) @ vJ
        f[i] = I[i] @ a[i] + crf(v[i]) @ I[i] @ v[i]
    # backward pass: project onto joint axes, accumulate into parents
    tau = np.zeros(n)
    for i in reversed(range(n)):
        tau[i] = S[i] @ f[i]
        if parent[i] != -1:
            f[parent[i]] = f[parent[i]] + Xup[i].T @ f[i]
    armature, _, _ = _joint_vectors(spec)
    return tau + armature * qdd + friction_torques(spec, qd)


def crba(spec, q):
    """Joint-space inertia matrix, composite-rigid-body algorithm (RBDA table 6.2, HandC.m).

    Includes the armature on the diagonal.
    """
    q = np.asarray(q, dtype=float)
    n = len(spec.bodies)
    parent, Xup, S, I = model_arrays(spec, q)
    # composite inertias, leaves to root
    IC = [Ii.copy() for Ii in I]
    for i in reversed(range(n)):
        if parent[i] != -1:
            IC[parent[i]] = IC[parent[i]] + Xup[i].T @ IC[i] @ Xup[i]
    # H_ij = S_i' IC_i (j_X_i S_j) for every ancestor j of i
    H = np.zeros((n, n))
    for i in range(n):
        fh = IC[i] @ S[i]
        H[i, i] = S[i] @ fh
        j = i
        while parent[j] != -1:
            fh = Xup[j].T @ fh
            j = parent[j]
            H[i, j] = H[j, i] = S[j] @ fh
    armature, _, _ = _joint_vectors(spec)
    return H + np.diag(armature)


def bias(spec, q, qd, gravity=None):
    """C(q, qd) qd + g(q): rnea with qdd = 0, without damping and Coulomb friction."""
    n = len(spec.bodies)
    qd = np.asarray(qd, dtype=float)
    return rnea(spec, q, qd, np.zeros(n), gravity) - friction_torques(spec, qd)


def gravity_torques(spec, q, gravity=None):
    """g(q): rnea with qd = qdd = 0."""
    n = len(spec.bodies)
    return rnea(spec, q, np.zeros(n), np.zeros(n), gravity)


def aba(spec, q, qd, tau, gravity=None):
    """Forward dynamics, articulated-body algorithm (RBDA table 7.1, FDab.m).

    Solves (M + diag(armature)) qdd = tau - damping qd - friction sign(qd) - C qd - g.
    """
    q, qd, tau = (np.asarray(x, dtype=float) for x in (q, qd, tau))
    n = len(spec.bodies)
    parent, Xup, S, I = model_arrays(spec, q)
    armature, _, _ = _joint_vectors(spec)
    tau = tau - friction_torques(spec, qd)
    a_base = _base_acceleration(spec, gravity)
    v, c, IA, pA = [None] * n, [None] * n, [None] * n, [None] * n
    # forward pass: velocities, velocity-product accelerations, bias forces
    for i in range(n):
        vJ = S[i] * qd[i]
        if parent[i] == -1:
            v[i] = vJ
            c[i] = np.zeros(6)
        else:
            v[i] = Xup[i] @ v[parent[i]] + vJ
            c[i] = crm(v[i]) @ vJ
        IA[i] = I[i].copy()
        pA[i] = crf(v[i]) @ I[i] @ v[i]
    # backward pass: articulated-body inertias and bias forces
    U, D, u = [None] * n, np.zeros(n), np.zeros(n)
    for i in reversed(range(n)):
        U[i] = IA[i] @ S[i]
        D[i] = S[i] @ U[i] + armature[i]
        u[i] = tau[i] - S[i] @ pA[i]
        if parent[i] != -1:
            Ia = IA[i] - np.outer(U[i], U[i]) / D[i]
            pa = pA[i] + Ia @ c[i] + U[i] * u[i] / D[i]
            IA[parent[i]] = IA[parent[i]] + Xup[i].T @ Ia @ Xup[i]
            pA[parent[i]] = pA[parent[i]] + Xup[i].T @ pa
    # forward pass: accelerations
    a = [None] * n
    qdd = np.zeros(n)
    for i in range(n):
        a_parent = a_base if parent[i] == -1 else a[parent[i]]
        a[i] = Xup[i] @ a_parent + c[i]
        qdd[i] = (u[i] - U[i] @ a[i]) / D[i]
        a[i] = a[i] + S[i] * qdd[i]
    return qdd


# ---------------------------------------------------------------- kinematics and energy

def _motion(body, qi):
    """4x4 joint motion: rotation about axis, or translation along it."""
    axis = np.asarray(body.axis, dtype=float)
    T = np.eye(4)
    if body.joint_type == "revolute":
        T[:3, :3] = rot(axis, qi)
    else:
        T[:3, 3] = axis * qi
    return T


def fk(spec, q):
    """World (base-frame) 4x4 poses: one per body, then one per spec.frames entry."""
    q = np.asarray(q, dtype=float)
    poses = []
    for i, body in enumerate(spec.bodies):
        parent_pose = np.eye(4) if body.parent == -1 else poses[body.parent]
        poses.append(parent_pose @ np.asarray(body.origin, dtype=float) @ _motion(body, q[i]))
    for frame in spec.frames:
        parent_pose = np.eye(4) if frame.parent == -1 else poses[frame.parent]
        poses.append(parent_pose @ np.asarray(frame.pose, dtype=float))
    return poses


def jacobian(spec, q, index):
    """(6, n) geometric Jacobian [angular; linear] of the origin of body/frame `index`.

    `index` follows fk: bodies first, then frames. Rows are in base-frame axes and the linear
    part is the velocity of the frame origin (Pinocchio's LOCAL_WORLD_ALIGNED).
    """
    poses = fk(spec, q)
    n = len(spec.bodies)
    body = index if index < n else spec.frames[index - n].parent
    p = poses[index][:3, 3]
    J = np.zeros((6, n))
    # walk to the base; each joint axis passes through its body origin
    while body != -1:
        b = spec.bodies[body]
        w = poses[body][:3, :3] @ np.asarray(b.axis, dtype=float)
        if b.joint_type == "revolute":
            J[:3, body] = w
            J[3:, body] = np.cross(w, p - poses[body][:3, 3])
        else:
            J[3:, body] = w
        body = b.parent
    return J


def kinetic_energy(spec, q, qd):
    """sum_i v_i' I_i v_i / 2 + armature qd^2 / 2 (= qd' M qd / 2 with M from crba)."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    n = len(spec.bodies)
    parent, Xup, S, I = model_arrays(spec, q)
    armature, _, _ = _joint_vectors(spec)
    v = [None] * n
    T = 0.5 * armature @ (qd * qd)
    for i in range(n):
        v[i] = S[i] * qd[i] if parent[i] == -1 else Xup[i] @ v[parent[i]] + S[i] * qd[i]
        T += 0.5 * v[i] @ I[i] @ v[i]
    return float(T)


def potential_energy(spec, q, gravity=None):
    """-sum_i m_i gravity . c_i, with c_i the world COM position (zero at the base origin)."""
    g = np.asarray(spec.gravity if gravity is None else gravity, dtype=float)
    poses = fk(spec, q)
    V = 0.0
    for i, body in enumerate(spec.bodies):
        c = poses[i][:3, :3] @ np.asarray(body.com, dtype=float) + poses[i][:3, 3]
        V -= body.mass * g @ c
    return float(V)
