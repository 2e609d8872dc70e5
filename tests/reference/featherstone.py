"""Pure-NumPy rigid-body dynamics on a ModelSpec, written from Featherstone (2008).

This is the test oracle. It is deliberately plain: 6x6 matrices everywhere, the book's names
(Xup, S, v, a, f, IC, IA, pA, U, D, u), one small function per algorithm. It shares no code
with cpp/ and never imports robodyn's compiled core; it only reads ModelSpec attributes.

Conventions:
- spatial vectors are [angular; linear] (Plucker coordinates, RBDA ch. 2);
- Xup[i] maps motion vectors from parent coordinates to body-i coordinates;
- S[i] is the joint motion subspace in body-i coordinates, a (6, nv_i) matrix: [axis; 0]
  revolute, [0; axis] prismatic, the identity for a free-flyer ("floating") joint;
- the fixed base (the world) has v = 0 and a = [0; -gravity] (the fictitious base
  acceleration trick);
- joint-space terms: tau = M qdd + C qd + g + armature qdd + damping qd + friction sign(qd).

Free-flyer joints (joint_type "floating", RBDA sec. 4.5 with the body-coordinate velocity of
api.md): the joint's block of q is [position of the body origin in the parent (3), unit
quaternion x, y, z, w of the body's orientation (4)], its block of v is the body's spatial
velocity in body coordinates [angular velocity; velocity of the body origin] (so S = 1), the
block of qdd is that vector's time derivative and the block of tau is the wrench on the body in
body coordinates [moment about the body origin; force]. `integrate` moves a free-flyer with
constant body twist (the SE(3) exponential); `difference` is its inverse (the SE(3) logarithm).
The configuration has nq = nv + (number of free-flyer joints) entries.
"""

import numpy as np

__all__ = [
    "skew", "rot", "crm", "crf", "plux", "mcI", "pose_to_X", "joint_transform",
    "motion_subspace", "spatial_inertia", "model_arrays", "FREE_JOINTS", "joint_dofs", "layout",
    "quat_to_rot", "rot_to_quat", "quat_mul", "so3_exp", "quat_exp", "se3_V", "se3_V_inv",
    "rnea", "crba", "bias", "gravity_torques", "aba", "fk", "jacobian",
    "kinetic_energy", "potential_energy", "friction_torques",
    "integrate", "difference", "momentum", "center_of_mass", "neutral",
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


# ---------------------------------------------------------------- rotations and SE(3)

def quat_to_rot(quat):
    """Rotation matrix of a unit quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rot_to_quat(R):
    """Unit quaternion (x, y, z, w), w >= 0, of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    k = int(np.argmax([t, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        s = 2 * np.sqrt(1 + t)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, s / 4]
    else:
        i = k - 1
        j, l = (i + 1) % 3, (i + 2) % 3
        s = 2 * np.sqrt(1 + R[i, i] - R[j, j] - R[l, l])
        q = np.zeros(4)
        q[i] = s / 4
        q[j] = (R[j, i] + R[i, j]) / s
        q[l] = (R[l, i] + R[i, l]) / s
        q[3] = (R[l, j] - R[j, l]) / s
    q = np.asarray(q, dtype=float)
    return q if q[3] >= 0 else -q


def quat_mul(a, b):
    """Hamilton product a b of quaternions (x, y, z, w): R(a b) = R(a) R(b)."""
    va, wa, vb, wb = np.asarray(a[:3]), a[3], np.asarray(b[:3]), b[3]
    return np.concatenate([wa * vb + wb * va + np.cross(va, vb), [wa * wb - va @ vb]])


def so3_exp(phi):
    """Rotation matrix of the rotation vector phi (angle |phi| about phi / |phi|)."""
    th = np.linalg.norm(phi)
    if th < 1e-12:
        return np.eye(3) + skew(phi)
    return rot(np.asarray(phi) / th, th)


def quat_exp(phi):
    """Unit quaternion (x, y, z, w) of the rotation vector phi."""
    th = np.linalg.norm(phi)
    # sin(th / 2) / th by its series near zero
    k = 0.5 - th * th / 48 if th < 1e-4 else np.sin(th / 2) / th
    return np.concatenate([k * np.asarray(phi, dtype=float), [np.cos(th / 2)]])


def _series(th, big, small):
    """big(th), or its Taylor series `small` below 0.1 rad (where big cancels)."""
    return small(th) if th < 0.1 else big(th)


def se3_V(phi):
    """Left Jacobian of SO(3): exp([phi, rho]) moves the origin by se3_V(phi) rho."""
    th = np.linalg.norm(phi)
    K = skew(phi)
    a = _series(th, lambda t: (1 - np.cos(t)) / t**2,
                lambda t: 0.5 - t**2 / 24 + t**4 / 720 - t**6 / 40320)
    b = _series(th, lambda t: (t - np.sin(t)) / t**3,
                lambda t: 1 / 6 - t**2 / 120 + t**4 / 5040 - t**6 / 362880)
    return np.eye(3) + a * K + b * K @ K


def se3_V_inv(phi):
    """Inverse of se3_V (closed form)."""
    th = np.linalg.norm(phi)
    K = skew(phi)
    c = _series(th, lambda t: (1 - t * np.sin(t) / (2 * (1 - np.cos(t)))) / t**2,
                lambda t: 1 / 12 + t**2 / 720 + t**4 / 30240 + t**6 / 1209600)
    return np.eye(3) - 0.5 * K + c * K @ K


def _quat_log(quat):
    """Rotation vector of a unit quaternion (x, y, z, w), angle in [0, pi]."""
    quat = np.asarray(quat, dtype=float)
    if quat[3] < 0:
        quat = -quat
    s = np.linalg.norm(quat[:3])
    th = 2 * np.arctan2(s, quat[3])
    k = 2.0 / quat[3] * (1 - s * s / (3 * quat[3] ** 2)) if s < 1e-8 else th / s
    return k * quat[:3]


# ---------------------------------------------------------------- joints and the q, v layout

FREE_JOINTS = ("floating", "free_flyer")


def joint_dofs(body):
    """(nq_i, nv_i) of a body's joint: (7, 6) for a free-flyer, else (1, 1)."""
    return (7, 6) if body.joint_type in FREE_JOINTS else (1, 1)


def layout(spec):
    """(iq, iv, nq, nv): where each body's block starts in q and in v, and the sizes."""
    iq, iv, nq, nv = [], [], 0, 0
    for body in spec.bodies:
        a, b = joint_dofs(body)
        iq.append(nq)
        iv.append(nv)
        nq += a
        nv += b
    return iq, iv, nq, nv


def _blocks(spec, x, which):
    """The per-body slices of a q (which=0) or v (which=1) vector."""
    iq, iv, _, _ = layout(spec)
    start = iq if which == 0 else iv
    return [x[s:s + joint_dofs(b)[which]] for s, b in zip(start, spec.bodies)]


def neutral(spec):
    """The zero configuration: joints at 0, free-flyers at the identity (quaternion w = 1)."""
    _, _, nq, _ = layout(spec)
    q = np.zeros(nq)
    for body, qi in zip(spec.bodies, _blocks(spec, q, 0)):
        if body.joint_type in FREE_JOINTS:
            qi[6] = 1.0
    return q


def _motion(body, qi):
    """4x4 joint motion: rotation about axis, translation along it, or the free-flyer pose."""
    T = np.eye(4)
    if body.joint_type in FREE_JOINTS:
        T[:3, :3] = quat_to_rot(qi[3:7])
        T[:3, 3] = qi[:3]
        return T
    axis = np.asarray(body.axis, dtype=float)
    if body.joint_type == "revolute":
        T[:3, :3] = rot(axis, qi[0])
    else:
        T[:3, 3] = axis * qi[0]
    return T


# ---------------------------------------------------------------- model quantities

def joint_transform(body, qi):
    """(XJ, S): joint transform and (6, nv_i) motion subspace of one body (RBDA table 4.1)."""
    qi = np.atleast_1d(np.asarray(qi, dtype=float))
    if body.joint_type in FREE_JOINTS:
        return pose_to_X(_motion(body, qi)), np.eye(6)
    axis = np.asarray(body.axis, dtype=float)
    S = np.zeros((6, 1))
    if body.joint_type == "revolute":
        XJ = plux(rot(axis, qi[0]).T, np.zeros(3))
        S[:3, 0] = axis
    elif body.joint_type == "prismatic":
        XJ = plux(np.eye(3), axis * qi[0])
        S[3:, 0] = axis
    else:
        raise ValueError(f"unknown joint type {body.joint_type!r}")
    return XJ, S


def motion_subspace(body):
    return joint_transform(body, neutral_block(body))[1]


def neutral_block(body):
    return np.array([0, 0, 0, 0, 0, 0, 1.0]) if body.joint_type in FREE_JOINTS else np.zeros(1)


def spatial_inertia(body):
    return mcI(float(body.mass), np.asarray(body.com, dtype=float),
               np.asarray(body.inertia, dtype=float))


def model_arrays(spec, q):
    """parent, Xup, S, I for every body at configuration q."""
    parent, Xup, S, I = [], [], [], []
    for body, qi in zip(spec.bodies, _blocks(spec, np.asarray(q, dtype=float), 0)):
        XJ, Si = joint_transform(body, qi)
        parent.append(int(body.parent))
        Xup.append(XJ @ pose_to_X(np.asarray(body.origin, dtype=float)))
        S.append(Si)
        I.append(spatial_inertia(body))
    return parent, Xup, S, I


def _joint_vectors(spec):
    """armature, damping, friction per entry of v (zero on free-flyers)."""
    out = []
    for key in ("armature", "damping", "friction"):
        out.append(np.concatenate([
            np.zeros(6) if b.joint_type in FREE_JOINTS else [float(getattr(b, key))]
            for b in spec.bodies]))
    return out


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
    qd_i, qdd_i = _blocks(spec, qd, 1), _blocks(spec, qdd, 1)
    a_base = _base_acceleration(spec, gravity)
    v, a, f = [None] * n, [None] * n, [None] * n
    # forward pass: velocities, accelerations, net body forces
    for i in range(n):
        vJ = S[i] @ qd_i[i]
        if parent[i] == -1:
            v[i] = vJ
            a[i] = Xup[i] @ a_base + S[i] @ qdd_i[i]
        else:
            v[i] = Xup[i] @ v[parent[i]] + vJ
            a[i] = Xup[i] @ a[parent[i]] + S[i] @ qdd_i[i] + crm(v[i]) @ vJ
        f[i] = I[i] @ a[i] + crf(v[i]) @ I[i] @ v[i]
    # backward pass: project onto joint axes, accumulate into parents
    tau = [None] * n
    for i in reversed(range(n)):
        tau[i] = S[i].T @ f[i]
        if parent[i] != -1:
            f[parent[i]] = f[parent[i]] + Xup[i].T @ f[i]
    armature, _, _ = _joint_vectors(spec)
    return np.concatenate(tau) + armature * qdd + friction_torques(spec, qd)


def crba(spec, q):
    """Joint-space inertia matrix, composite-rigid-body algorithm (RBDA table 6.2, HandC.m).

    Includes the armature on the diagonal.
    """
    q = np.asarray(q, dtype=float)
    n = len(spec.bodies)
    parent, Xup, S, I = model_arrays(spec, q)
    _, iv, _, nv = layout(spec)
    blk = [slice(iv[i], iv[i] + S[i].shape[1]) for i in range(n)]
    # composite inertias, leaves to root
    IC = [Ii.copy() for Ii in I]
    for i in reversed(range(n)):
        if parent[i] != -1:
            IC[parent[i]] = IC[parent[i]] + Xup[i].T @ IC[i] @ Xup[i]
    # H_ij = S_i' IC_i (j_X_i S_j) for every ancestor j of i
    H = np.zeros((nv, nv))
    for i in range(n):
        F = IC[i] @ S[i]
        H[blk[i], blk[i]] = S[i].T @ F
        j = i
        while parent[j] != -1:
            F = Xup[j].T @ F
            j = parent[j]
            H[blk[j], blk[i]] = S[j].T @ F
            H[blk[i], blk[j]] = H[blk[j], blk[i]].T
    armature, _, _ = _joint_vectors(spec)
    return H + np.diag(armature)


def bias(spec, q, qd, gravity=None):
    """C(q, qd) qd + g(q): rnea with qdd = 0, without damping and Coulomb friction."""
    qd = np.asarray(qd, dtype=float)
    return rnea(spec, q, qd, np.zeros(qd.shape[0]), gravity) - friction_torques(spec, qd)


def gravity_torques(spec, q, gravity=None):
    """g(q): rnea with qd = qdd = 0."""
    nv = layout(spec)[3]
    return rnea(spec, q, np.zeros(nv), np.zeros(nv), gravity)


def aba(spec, q, qd, tau, gravity=None):
    """Forward dynamics, articulated-body algorithm (RBDA table 7.1, FDab.m).

    Solves (M + diag(armature)) qdd = tau - damping qd - friction sign(qd) - C qd - g. A
    free-flyer root is an articulated body like any other (its D is 6x6).
    """
    q, qd, tau = (np.asarray(x, dtype=float) for x in (q, qd, tau))
    n = len(spec.bodies)
    parent, Xup, S, I = model_arrays(spec, q)
    armature, _, _ = _joint_vectors(spec)
    tau_i = _blocks(spec, tau - friction_torques(spec, qd), 1)
    arm_i = _blocks(spec, armature, 1)
    qd_i = _blocks(spec, qd, 1)
    a_base = _base_acceleration(spec, gravity)
    v, c, IA, pA = [None] * n, [None] * n, [None] * n, [None] * n
    # forward pass: velocities, velocity-product accelerations, bias forces
    for i in range(n):
        vJ = S[i] @ qd_i[i]
        if parent[i] == -1:
            v[i] = vJ
            c[i] = np.zeros(6)
        else:
            v[i] = Xup[i] @ v[parent[i]] + vJ
            c[i] = crm(v[i]) @ vJ
        IA[i] = I[i].copy()
        pA[i] = crf(v[i]) @ I[i] @ v[i]
    # backward pass: articulated-body inertias and bias forces
    U, Dinv, u = [None] * n, [None] * n, [None] * n
    for i in reversed(range(n)):
        U[i] = IA[i] @ S[i]
        Dinv[i] = np.linalg.inv(S[i].T @ U[i] + np.diag(arm_i[i]))
        u[i] = tau_i[i] - S[i].T @ pA[i]
        if parent[i] != -1:
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ Dinv[i] @ u[i]
            IA[parent[i]] = IA[parent[i]] + Xup[i].T @ Ia @ Xup[i]
            pA[parent[i]] = pA[parent[i]] + Xup[i].T @ pa
    # forward pass: accelerations
    a = [None] * n
    qdd = [None] * n
    for i in range(n):
        a_parent = a_base if parent[i] == -1 else a[parent[i]]
        a[i] = Xup[i] @ a_parent + c[i]
        qdd[i] = Dinv[i] @ (u[i] - U[i].T @ a[i])
        a[i] = a[i] + S[i] @ qdd[i]
    return np.concatenate(qdd)


# ---------------------------------------------------------------- kinematics and energy

def fk(spec, q):
    """World (base-frame) 4x4 poses: one per body, then one per spec.frames entry."""
    q = np.asarray(q, dtype=float)
    poses = []
    for body, qi in zip(spec.bodies, _blocks(spec, q, 0)):
        parent_pose = np.eye(4) if body.parent == -1 else poses[body.parent]
        poses.append(parent_pose @ np.asarray(body.origin, dtype=float) @ _motion(body, qi))
    for frame in spec.frames:
        parent_pose = np.eye(4) if frame.parent == -1 else poses[frame.parent]
        poses.append(parent_pose @ np.asarray(frame.pose, dtype=float))
    return poses


def jacobian(spec, q, index):
    """(6, nv) geometric Jacobian [angular; linear] of the origin of body/frame `index`.

    `index` follows fk: bodies first, then frames. Rows are in world (fixed-base) axes and the
    linear part is the velocity of the frame origin (Pinocchio's LOCAL_WORLD_ALIGNED).
    """
    poses = fk(spec, q)
    n = len(spec.bodies)
    _, iv, _, nv = layout(spec)
    body = index if index < n else spec.frames[index - n].parent
    p = poses[index][:3, 3]
    J = np.zeros((6, nv))
    # walk to the base; a body's motion [R w; R v] about its origin, shifted to p
    while body != -1:
        b = spec.bodies[body]
        S = motion_subspace(b)
        R, o = poses[body][:3, :3], poses[body][:3, 3]
        w, vo = R @ S[:3], R @ S[3:]
        cols = slice(iv[body], iv[body] + S.shape[1])
        J[:3, cols] = w
        J[3:, cols] = vo + np.cross(w.T, p - o).T
        body = b.parent
    return J


def _body_velocities(spec, q, qd):
    parent, Xup, S, I = model_arrays(spec, q)
    qd_i = _blocks(spec, np.asarray(qd, dtype=float), 1)
    v = []
    for i in range(len(spec.bodies)):
        vJ = S[i] @ qd_i[i]
        v.append(vJ if parent[i] == -1 else Xup[i] @ v[parent[i]] + vJ)
    return v, I


def kinetic_energy(spec, q, qd):
    """sum_i v_i' I_i v_i / 2 + armature qd^2 / 2 (= qd' M qd / 2 with M from crba)."""
    qd = np.asarray(qd, dtype=float)
    armature, _, _ = _joint_vectors(spec)
    v, I = _body_velocities(spec, q, qd)
    return float(0.5 * armature @ (qd * qd) + sum(0.5 * vi @ Ii @ vi for vi, Ii in zip(v, I)))


def potential_energy(spec, q, gravity=None):
    """-sum_i m_i gravity . c_i, with c_i the world COM position (zero at the base origin)."""
    g = np.asarray(spec.gravity if gravity is None else gravity, dtype=float)
    poses = fk(spec, q)
    V = 0.0
    for i, body in enumerate(spec.bodies):
        c = poses[i][:3, :3] @ np.asarray(body.com, dtype=float) + poses[i][:3, 3]
        V -= body.mass * g @ c
    return float(V)


def momentum(spec, q, qd):
    """(6,) total momentum [angular about the world origin; linear], world axes.

    Body i's momentum I_i v_i in body coordinates [about the body origin; linear], rotated to
    world axes and moved to the world origin (h = R k + p x R l). Rotor (armature) momentum is
    not included.
    """
    poses = fk(spec, q)
    v, I = _body_velocities(spec, q, qd)
    h = np.zeros(6)
    for i in range(len(spec.bodies)):
        k_l = I[i] @ v[i]
        R, p = poses[i][:3, :3], poses[i][:3, 3]
        lin = R @ k_l[3:]
        h[:3] += R @ k_l[:3] + np.cross(p, lin)
        h[3:] += lin
    return h


def center_of_mass(spec, q):
    """(3,) centre of mass of all bodies, world coordinates."""
    poses = fk(spec, q)
    m = sum(float(b.mass) for b in spec.bodies)
    c = sum(float(b.mass) * (P[:3, :3] @ np.asarray(b.com, dtype=float) + P[:3, 3])
            for b, P in zip(spec.bodies, poses))
    return c / m


# ---------------------------------------------------------------- configuration space

def integrate(spec, q, v, dt=1.0):
    """The configuration reached from q moving with constant v for dt.

    Joints: q + v dt. Free-flyers: the pose T = (R, p) becomes T exp(dt [w; v]^), the SE(3)
    exponential of the body twist: R Exp(w dt), p + R V(w dt) v dt; the quaternion is
    q_rot (x) quat_exp(w dt) (not renormalised beyond what the product keeps).
    """
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float) * dt
    out = []
    for body, qi, vi in zip(spec.bodies, _blocks(spec, q, 0), _blocks(spec, v, 1)):
        if body.joint_type in FREE_JOINTS:
            R = quat_to_rot(qi[3:7])
            out.append(qi[:3] + R @ se3_V(vi[:3]) @ vi[3:])
            out.append(quat_mul(qi[3:7], quat_exp(vi[:3])))
        else:
            out.append(qi + vi)
    return np.concatenate(out)


def difference(spec, q0, q1):
    """v with integrate(q0, v, 1) = q1: joints q1 - q0; free-flyers the SE(3) logarithm of
    T0^-1 T1 (rotation angle in [0, pi], whatever the quaternions' signs)."""
    q0, q1 = np.asarray(q0, dtype=float), np.asarray(q1, dtype=float)
    out = []
    for body, a, b in zip(spec.bodies, _blocks(spec, q0, 0), _blocks(spec, q1, 0)):
        if body.joint_type in FREE_JOINTS:
            qa = a[3:7] / np.linalg.norm(a[3:7])
            qb = b[3:7] / np.linalg.norm(b[3:7])
            conj = np.concatenate([-qa[:3], qa[3:]])
            phi = _quat_log(quat_mul(conj, qb))
            out.append(phi)
            out.append(se3_V_inv(phi) @ quat_to_rot(qa).T @ (b[:3] - a[:3]))
        else:
            out.append(b - a)
    return np.concatenate(out)
