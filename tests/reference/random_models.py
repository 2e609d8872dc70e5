"""Seeded random robots (ModelSpec) and DH tables for the tests; pure NumPy.

Every generator takes a numpy Generator (`np.random.default_rng(seed)`) and nothing else random.
"""

import numpy as np

from . import spec_module

_spec = spec_module()
Body, Frame, ModelSpec = _spec.Body, _spec.Frame, _spec.ModelSpec

__all__ = [
    "random_rotation", "random_inertia", "random_pose", "random_chain", "random_tree",
    "random_dh_chain", "dh_to_spec", "dh_standard", "dh_modified", "random_state",
    "random_floating", "random_quaternion", "random_floating_state",
]


def random_rotation(rng):
    """Uniformly distributed rotation matrix (QR of a Gaussian matrix, sign-fixed, det +1)."""
    Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def random_unit(rng):
    x = rng.standard_normal(3)
    return x / np.linalg.norm(x)


def random_inertia(mass, rng):
    """Physically valid inertia about the COM: R diag(J) R', J strictly triangle-inequal.

    J comes from positive second moments s of a mass distribution: J1 = s2 + s3, etc., so
    J1 + J2 - J3 = 2 s3 > 0 and similar for the other two.
    """
    s = mass * rng.uniform(0.002, 0.03, size=3)
    J = np.array([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
    R = random_rotation(rng)
    I = R @ np.diag(J) @ R.T
    return 0.5 * (I + I.T)


def random_pose(rng, scale=0.3):
    T = np.eye(4)
    T[:3, :3] = random_rotation(rng)
    T[:3, 3] = rng.normal(0.0, scale, size=3)
    return T


def _random_model(parents, rng, joint_types, axes, armature, damping, friction, frames, name):
    bodies = []
    for i, parent in enumerate(parents):
        if joint_types == "mixed":
            jtype = "revolute" if rng.random() < 0.7 else "prismatic"
        elif joint_types in ("revolute", "prismatic"):
            jtype = joint_types
        else:
            raise ValueError(f"joint_types must be 'mixed', 'revolute' or 'prismatic', "
                             f"got {joint_types!r}")
        if axes == "random":
            axis = random_unit(rng)
        elif axes == "z":
            axis = np.array([0.0, 0.0, 1.0])
        else:
            raise ValueError(f"axes must be 'random' or 'z', got {axes!r}")
        mass = rng.uniform(0.5, 5.0)
        lim = np.pi if jtype == "revolute" else 0.5
        bodies.append(Body(
            name=f"link{i + 1}",
            joint_name=f"joint{i + 1}",
            parent=int(parent),
            joint_type=jtype,
            axis=axis,
            origin=random_pose(rng),
            mass=mass,
            com=rng.normal(0.0, 0.1, size=3),
            inertia=random_inertia(mass, rng),
            armature=rng.uniform(0.01, 0.1) if armature else 0.0,
            damping=rng.uniform(0.01, 0.5) if damping else 0.0,
            friction=rng.uniform(0.01, 0.5) if friction else 0.0,
            lower=-lim,
            upper=lim,
            velocity=rng.uniform(1.0, 5.0),
            effort=rng.uniform(10.0, 200.0),
        ))
    extra = [Frame(name=f"frame{k + 1}", parent=int(rng.integers(-1, len(parents))),
                   pose=random_pose(rng)) for k in range(frames)]
    return ModelSpec(bodies=bodies, frames=extra, gravity=np.array([0.0, 0.0, -9.81]),
                     name=name)


def random_chain(n, rng, joint_types="mixed", axes="random", *, armature=True, damping=True,
                 friction=True, frames=0):
    """Serial chain of n bodies (parent[i] = i - 1).

    Origins: random rotation + N(0, 0.3 m) translation; unit axes random (or z); masses in
    [0.5, 5]; COM ~ N(0, 0.1 m); valid random inertias; armature in [0.01, 0.1], damping and
    Coulomb friction in [0.01, 0.5] (each switched off by passing False); `frames` extra fixed
    frames on random bodies (or the base). Revolute limits +-pi, prismatic +-0.5 m.
    """
    return _random_model(list(range(-1, n - 1)), rng, joint_types, axes, armature, damping,
                         friction, frames, f"random_chain_{n}")


def random_tree(n, rng, joint_types="mixed", axes="random", *, armature=True, damping=True,
                friction=True, frames=0):
    """Like random_chain, but parent[i] is uniform in [-1, i - 1] (a forest on the base)."""
    parents = [int(rng.integers(-1, i)) for i in range(n)]
    return _random_model(parents, rng, joint_types, axes, armature, damping, friction, frames,
                         f"random_tree_{n}")


def random_state(spec, rng):
    """(q, qd, qdd): q uniform within the limits (or +-pi), qd and qdd standard normal."""
    lo = np.array([max(b.lower, -np.pi) for b in spec.bodies])
    hi = np.array([min(b.upper, np.pi) for b in spec.bodies])
    n = len(spec.bodies)
    q = rng.uniform(lo, hi)
    return q, rng.standard_normal(n), rng.standard_normal(n)


def random_floating(n, rng, kind="tree", joint_types="mixed", *, base_mass=None, **kw):
    """A free-flyer root body (joint_type "floating", body 0) carrying a random chain or tree of
    n joints (random_chain / random_tree options in `kw`); every joint that hung on the fixed
    base hangs on the floating body. `base_mass` overrides the base's random mass (its
    inertia scales with it)."""
    gen = random_chain if kind == "chain" else random_tree
    spec = gen(n, rng, joint_types, **kw) if n else ModelSpec(bodies=[])
    mass = rng.uniform(2.0, 10.0)
    inertia = random_inertia(mass, rng)
    if base_mass is not None:
        inertia *= base_mass / mass
        mass = base_mass
    base = Body(name="base", joint_name="root_joint", parent=-1, joint_type="floating",
                axis=np.array([0.0, 0.0, 1.0]), origin=np.eye(4), mass=mass,
                com=rng.normal(0.0, 0.1, size=3), inertia=inertia)
    for b in spec.bodies:
        b.parent += 1
    for f in spec.frames:
        f.parent += 1
    return ModelSpec(bodies=[base] + list(spec.bodies), frames=list(spec.frames),
                     gravity=spec.gravity if n else np.array([0.0, 0.0, -9.81]),
                     name=f"floating_{kind}_{n}")


def random_quaternion(rng):
    """Uniformly distributed unit quaternion (x, y, z, w)."""
    x = rng.standard_normal(4)
    return x / np.linalg.norm(x)


def random_floating_state(spec, rng):
    """(q, v, vdot) of a model whose body 0 is a free-flyer: base position ~ N(0, 1 m), a
    uniform random orientation, joints as random_state; v and vdot standard normal."""
    q, qd, qdd = random_state(ModelSpec(bodies=spec.bodies[1:]), rng)
    base = np.concatenate([rng.standard_normal(3), random_quaternion(rng)])
    return (np.concatenate([base, q]), np.concatenate([rng.standard_normal(6), qd]),
            np.concatenate([rng.standard_normal(6), qdd]))


# ---------------------------------------------------------------- Denavit-Hartenberg

def _rotz(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[:2, :2] = [[c, -s], [s, c]]
    return T


def _rotx(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[1:3, 1:3] = [[c, -s], [s, c]]
    return T


def _trans(x, y, z):
    T = np.eye(4)
    T[:3, 3] = [x, y, z]
    return T


def dh_standard(theta, d, a, alpha):
    """Standard DH: A = Rz(theta) Tz(d) Tx(a) Rx(alpha)."""
    return _rotz(theta) @ _trans(0, 0, d) @ _trans(a, 0, 0) @ _rotx(alpha)


def dh_modified(alpha, a, theta, d):
    """Modified (Craig) DH: A = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)."""
    return _rotx(alpha) @ _trans(a, 0, 0) @ _rotz(theta) @ _trans(0, 0, d)


def random_dh_chain(n, rng, *, armature=False):
    """n revolute standard-DH rows: dicts theta, d, a, alpha, joint, mass, com, inertia.

    theta (offset) in [-pi, pi]; d, a ~ N(0, 0.3 m); alpha in {0, +-pi/2} or uniform;
    com ~ N(0, 0.1 m) and inertia (3, 3) about the COM, both in DH frame i.
    """
    rows = []
    for _ in range(n):
        alpha = rng.choice([0.0, np.pi / 2, -np.pi / 2]) if rng.random() < 0.5 \
            else rng.uniform(-np.pi, np.pi)
        mass = rng.uniform(0.5, 5.0)
        row = dict(theta=rng.uniform(-np.pi, np.pi), d=rng.normal(0.0, 0.3),
                   a=rng.normal(0.0, 0.3), alpha=float(alpha), joint="revolute", mass=mass,
                   com=rng.normal(0.0, 0.1, size=3), inertia=random_inertia(mass, rng))
        if armature:
            row["armature"] = rng.uniform(0.01, 0.1)
        rows.append(row)
    return rows


def _inertia_matrix(x):
    x = np.asarray(x, dtype=float)
    if x.shape == (3, 3):
        return x
    ixx, iyy, izz, ixy, iyz, ixz = x
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _row(r):
    if isinstance(r, dict):
        return r
    keys = ("theta", "d", "a", "alpha", "joint", "mass", "com", "inertia", "armature")
    return dict(zip(keys, r))


def dh_to_spec(rows, convention="standard", gravity=(0.0, 0.0, -9.81)):
    """ModelSpec equivalent to a DH table; joint i moves by q_i added to theta_i (or d_i).

    standard: frame i = frame i-1 @ Rz(theta_i + q_i) Tz(d_i) Tx(a_i) Rx(alpha_i). The joint
      motion is not at the end of A_i, so body i is the "joint frame" frame i-1 @ Rz(theta_i)
      Tz(d_i) (moved by Rz(q_i) or Tz(q_i)); DH frame i sits on body i at Tx(a_i) Rx(alpha_i),
      and COM and inertia given in DH frame i are carried into the body frame.
    modified (Craig): row i holds alpha_{i-1}, a_{i-1}, theta_i, d_i and
      frame i = frame i-1 @ Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i + q_i) Tz(d_i): body i is DH
      frame i itself.
    Either way spec.frames[i] is DH frame i+1 (fk index n + i), named "dh{i+1}".
    """
    rows = [_row(r) for r in rows]
    bodies, frames = [], []
    tail = np.eye(4)  # standard: Tx(a_{i-1}) Rx(alpha_{i-1}) of the previous row
    for i, r in enumerate(rows):
        jtype = r.get("joint", "revolute")
        if convention == "standard":
            origin = tail @ _rotz(r["theta"]) @ _trans(0, 0, r["d"])
            to_dh = _trans(r["a"], 0, 0) @ _rotx(r["alpha"])
            tail = to_dh
        elif convention == "modified":
            origin = dh_modified(r["alpha"], r["a"], r["theta"], r["d"])
            to_dh = np.eye(4)
        else:
            raise ValueError(f"convention must be 'standard' or 'modified', got {convention!r}")
        R = to_dh[:3, :3]
        com = R @ np.asarray(r["com"], dtype=float) + to_dh[:3, 3]
        inertia = R @ _inertia_matrix(r["inertia"]) @ R.T
        lower, upper = r.get("limits", (-np.inf, np.inf))
        bodies.append(Body(
            name=f"link{i + 1}", joint_name=f"joint{i + 1}", parent=i - 1, joint_type=jtype,
            axis=np.array([0.0, 0.0, 1.0]), origin=origin, mass=float(r["mass"]), com=com,
            inertia=inertia, armature=float(r.get("armature", 0.0)), lower=lower, upper=upper))
        frames.append(Frame(name=f"dh{i + 1}", parent=i, pose=to_dh))
    return ModelSpec(bodies=bodies, frames=frames, gravity=np.asarray(gravity, dtype=float),
                     name=f"dh_{convention}")
