"""Denavit-Hartenberg front end: a table of DH rows becomes a :class:`ModelSpec`.

Two conventions are supported.

Standard (distal, Paul) DH, ``convention="standard"``: the pose of DH frame i in DH frame i-1 is

    A_i = Rz(theta_i + q_i) Tz(d_i) Tx(a_i) Rx(alpha_i)      (revolute joint i)
    A_i = Rz(theta_i) Tz(d_i + q_i) Tx(a_i) Rx(alpha_i)      (prismatic joint i)

so joint i moves about / along z of DH frame i-1.

Modified (proximal, Craig) DH, ``convention="modified"``: row i holds alpha_{i-1}, a_{i-1},
theta_i, d_i and

    A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i + q_i) Tz(d_i)      (revolute)
    A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i + q_i)      (prismatic)

so joint i moves about / along z of DH frame i. In both conventions DH frame 0 is the base
frame, ``theta`` and ``d`` of the row are the constant offsets that the joint variable is added
to, and the centre of mass and inertia of link i are given in DH frame i.

Mapping to a ModelSpec. A ModelSpec body pose is ``parent_pose @ origin @ motion(axis, q)``:
the joint motion is the last factor. In the modified convention DH frame i already has that
form, so body i *is* DH frame i. In the standard convention the motion of joint i sits at the
front of A_i, so body i is DH frame i-1 moved by joint i:

    revolute:   body_i = dh_{i-1} Rz(theta_i) Rz(q_i),  dh_i = body_i Tz(d_i) Tx(a_i) Rx(alpha_i)
    prismatic:  body_i = dh_{i-1} Rz(theta_i) Tz(d_i) Tz(q_i),  dh_i = body_i Tx(a_i) Rx(alpha_i)

with axis z, and the constant factor ``C_i`` (body_i to dh_i) re-expresses the link's centre of
mass and inertia in the body frame. Whatever the convention, the spec carries Frames
``<name>_dh0`` (on the base) ... ``<name>_dh<n>`` at the DH frames and ``<name>_tool`` at DH
frame n (times the optional ``tool`` pose), so forward kinematics reports the DH frame poses.

Rows are dicts or tuples. Dict keys:

    theta, d, a, alpha    (required) joint-angle offset (rad), offset (m), length (m), twist (rad)
    joint                 "revolute" (default) or "prismatic"
    mass                  (required) kg, >= 0
    com                   (required) (3,) centre of mass in DH frame i, m
    inertia               (required) (3, 3) symmetric, or 6 values Ixx, Iyy, Izz, Ixy, Iyz, Ixz,
                          about the centre of mass, axes of DH frame i, kg m^2
    armature              rotor inertia reflected to the joint (>= 0), kg m^2 (or kg)
    damping, friction     viscous and Coulomb joint friction (>= 0)
    limits                (lower, upper) or a dict with any of lower, upper, velocity, effort
    name, joint_name      link and joint names (default ``link<i>``, ``joint<i>``, i from 1)

Tuple rows are positional: ``(theta, d, a, alpha, joint, mass, com, inertia[, armature])``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..model.spec import Body, Frame, ModelSpec

__all__ = ["dh_to_spec", "dh_transform"]

_TUPLE_FIELDS = ("theta", "d", "a", "alpha", "joint", "mass", "com", "inertia", "armature")
_REQUIRED = ("theta", "d", "a", "alpha", "mass", "com", "inertia")
_KNOWN = frozenset(
    _TUPLE_FIELDS + ("damping", "friction", "limits", "name", "joint_name")
)
_JOINT_TYPES = ("revolute", "prismatic")
_CONVENTIONS = ("standard", "modified")


def _rot_x(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    T = np.eye(4)
    T[1, 1], T[1, 2], T[2, 1], T[2, 2] = c, -s, s, c
    return T


def _rot_z(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    T = np.eye(4)
    T[0, 0], T[0, 1], T[1, 0], T[1, 1] = c, -s, s, c
    return T


def _trans(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def dh_transform(theta: float, d: float, a: float, alpha: float,
                 convention: str = "standard") -> np.ndarray:
    """The 4x4 DH link transform A_i for the given (already joint-added) parameters.

    Standard: ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``; modified: ``Rx(alpha) Tx(a) Rz(theta) Tz(d)``
    (there ``alpha`` and ``a`` are alpha_{i-1} and a_{i-1}).
    """
    if convention == "standard":
        return _rot_z(theta) @ _trans(z=d) @ _trans(x=a) @ _rot_x(alpha)
    if convention == "modified":
        return _rot_x(alpha) @ _trans(x=a) @ _rot_z(theta) @ _trans(z=d)
    raise ValueError(f"convention must be one of {_CONVENTIONS}, got {convention!r}")


def _fail(i: int, field: str, msg: str) -> ValueError:
    return ValueError(f"DH row {i}: field {field!r}: {msg}")


def _scalar(i: int, field: str, value, nonneg: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise _fail(i, field, f"expected a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise _fail(i, field, f"must be finite, got {x}")
    if nonneg and x < 0.0:
        raise _fail(i, field, f"must be >= 0, got {x}")
    return x


def _vector3(i: int, field: str, value) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise _fail(i, field, f"expected 3 real numbers, got {value!r}") from None
    if v.shape != (3,):
        raise _fail(i, field, f"expected shape (3,), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise _fail(i, field, "must be finite")
    return v.copy()


def _inertia(i: int, value) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise _fail(i, "inertia", f"expected (3, 3) or 6 values, got {value!r}") from None
    if v.shape == (6,):
        ixx, iyy, izz, ixy, iyz, ixz = v
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    elif v.shape == (3, 3):
        I = v.copy()
    else:
        raise _fail(i, "inertia",
                    f"expected shape (3, 3) or 6 values (Ixx, Iyy, Izz, Ixy, Iyz, Ixz), "
                    f"got shape {v.shape}")
    if not np.all(np.isfinite(I)):
        raise _fail(i, "inertia", "must be finite")
    scale = max(float(np.max(np.abs(I))), 1e-300)
    if np.max(np.abs(I - I.T)) > 1e-12 * scale:
        raise _fail(i, "inertia", "must be symmetric")
    I = 0.5 * (I + I.T)
    if np.min(np.linalg.eigvalsh(I)) < -1e-12 * scale:
        raise _fail(i, "inertia", "must be positive semidefinite")
    return I


def _limits(i: int, value) -> dict[str, float]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        unknown = set(value) - {"lower", "upper", "velocity", "effort"}
        if unknown:
            raise _fail(i, "limits", f"unknown keys {sorted(unknown)}; "
                        "expected lower, upper, velocity, effort")
        out = {}
        for key in ("lower", "upper"):
            if value.get(key) is not None:
                x = float(value[key])
                if math.isnan(x):
                    raise _fail(i, "limits", f"{key} is NaN")
                out[key] = x
        for key in ("velocity", "effort"):
            if value.get(key) is not None:
                x = float(value[key])
                if math.isnan(x) or x <= 0.0:
                    raise _fail(i, "limits", f"{key} must be > 0, got {x}")
                out[key] = x
    else:
        try:
            lower, upper = value
            out = {"lower": float(lower), "upper": float(upper)}
        except (TypeError, ValueError):
            raise _fail(i, "limits", f"expected (lower, upper) or a dict, got {value!r}") \
                from None
        if math.isnan(out["lower"]) or math.isnan(out["upper"]):
            raise _fail(i, "limits", "lower / upper is NaN")
    if out.get("lower", -math.inf) > out.get("upper", math.inf):
        raise _fail(i, "limits", f"lower {out['lower']} > upper {out['upper']}")
    return out


def _as_dict(i: int, row) -> dict:
    if isinstance(row, Mapping):
        unknown = set(row) - _KNOWN
        if unknown:
            raise _fail(i, sorted(unknown)[0], f"unknown field; known fields are {sorted(_KNOWN)}")
        out = dict(row)
    elif isinstance(row, Sequence) and not isinstance(row, str):
        if not 8 <= len(row) <= 9:
            raise ValueError(
                f"DH row {i}: a tuple row has 8 or 9 entries "
                f"(theta, d, a, alpha, joint, mass, com, inertia[, armature]), got {len(row)}")
        out = dict(zip(_TUPLE_FIELDS, row))
    else:
        raise ValueError(f"DH row {i}: expected a dict or a tuple, got {type(row).__name__}")
    for key in _REQUIRED:
        if key not in out:
            raise _fail(i, key, "missing")
    return out


def _parse_row(i: int, row) -> dict:
    r = _as_dict(i, row)
    joint = r.get("joint", "revolute")
    if joint is None:
        joint = "revolute"
    if joint not in _JOINT_TYPES:
        raise _fail(i, "joint", f"unknown joint type {joint!r}; expected one of {_JOINT_TYPES}")
    out = {
        "joint": joint,
        "theta": _scalar(i, "theta", r["theta"]),
        "d": _scalar(i, "d", r["d"]),
        "a": _scalar(i, "a", r["a"]),
        "alpha": _scalar(i, "alpha", r["alpha"]),
        "mass": _scalar(i, "mass", r["mass"], nonneg=True),
        "com": _vector3(i, "com", r["com"]),
        "inertia": _inertia(i, r["inertia"]),
        "limits": _limits(i, r.get("limits")),
    }
    for key in ("armature", "damping", "friction"):
        out[key] = _scalar(i, key, r.get(key) or 0.0, nonneg=True)
    for key, default in (("name", f"link{i + 1}"), ("joint_name", f"joint{i + 1}")):
        value = r.get(key)
        if value is None:
            value = default
        if not isinstance(value, str) or not value:
            raise _fail(i, key, f"expected a non-empty string, got {value!r}")
        out[key] = value
    return out


def _check_pose(name: str, T) -> np.ndarray:
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError(f"{name} must be a finite (4, 4) homogeneous transform")
    R = T[:3, :3]
    if (np.max(np.abs(R.T @ R - np.eye(3))) > 1e-9 or abs(np.linalg.det(R) - 1.0) > 1e-9
            or np.any(T[3] != (0.0, 0.0, 0.0, 1.0))):
        raise ValueError(f"{name} must be a proper rigid transform (rotation, translation)")
    return T.copy()


def dh_to_spec(rows, convention: str = "standard", gravity=(0.0, 0.0, -9.81),
               name: str = "dh_robot", *, tool=None, check_inertia: bool = True) -> ModelSpec:
    """Build a :class:`ModelSpec` from a Denavit-Hartenberg table.

    Parameters
    ----------
    rows : sequence of dict or tuple
        One row per joint, base to tip; see the module docstring for the keys. Tuple rows are
        ``(theta, d, a, alpha, joint, mass, com, inertia[, armature])``.
    convention : "standard" or "modified"
        Standard (Paul) or modified (Craig) DH; in the modified convention row i holds
        alpha_{i-1} and a_{i-1}.
    gravity : (3,)
        Gravitational acceleration in the base frame (DH frame 0), m/s^2.
    name : str
        Model name, also the prefix of the frames ``<name>_dh0`` .. ``<name>_dh<n>`` and
        ``<name>_tool``.
    tool : (4, 4), optional
        Pose of the tool frame in DH frame n (identity by default).

    Returns
    -------
    ModelSpec
        Bodies ``link1`` .. ``link<n>`` (or the rows' names) with joints ``joint1`` ..
        ``joint<n>``, base ``base_link``. Body i is DH frame i (modified) or DH frame i-1 moved
        by joint i (standard); the centre of mass and inertia are re-expressed accordingly.

    Raises
    ------
    ValueError
        On a malformed row (message names the row index, from 0, and the field), an unknown
        convention, or a bad gravity / tool.
    """
    if convention not in _CONVENTIONS:
        raise ValueError(f"convention must be one of {_CONVENTIONS}, got {convention!r}")
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
        raise ValueError("rows must be a sequence of DH rows (dicts or tuples)")
    if len(rows) == 0:
        raise ValueError("rows is empty: a DH table needs at least one row")
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be 3 finite numbers, got {gravity!r}")
    tool_pose = np.eye(4) if tool is None else _check_pose("tool", tool)

    parsed = [_parse_row(i, row) for i, row in enumerate(rows)]
    for key in ("name", "joint_name"):
        names = [r[key] for r in parsed]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"DH rows: duplicate {key} {dup}")

    bodies: list[Body] = []
    frames: list[Frame] = [Frame(f"{name}_dh0", -1, np.eye(4))]
    # C_prev: pose of DH frame i-1 in body i-1 (identity for the base, DH frame 0)
    C_prev = np.eye(4)
    for i, r in enumerate(parsed):
        prismatic = r["joint"] == "prismatic"
        if convention == "standard":
            # body i = dh_{i-1} Rz(theta) [Tz(d)] motion; C = [Tz(d)] Tx(a) Rx(alpha)
            origin = C_prev @ _rot_z(r["theta"])
            C = _trans(x=r["a"]) @ _rot_x(r["alpha"])
            if prismatic:
                origin = origin @ _trans(z=r["d"])
            else:
                C = _trans(z=r["d"]) @ C
        else:
            # body i = dh_i = dh_{i-1} Rx(alpha) Tx(a) Rz(theta) Tz(d) motion
            origin = _rot_x(r["alpha"]) @ _trans(x=r["a"]) @ _rot_z(r["theta"]) \
                @ _trans(z=r["d"])
            C = np.eye(4)
        R = C[:3, :3]
        lim = r["limits"]
        bodies.append(Body(
            name=r["name"],
            joint_name=r["joint_name"],
            parent=i - 1,
            joint_type=r["joint"],
            axis=np.array([0.0, 0.0, 1.0]),
            origin=origin,
            mass=r["mass"],
            com=R @ r["com"] + C[:3, 3],
            inertia=R @ r["inertia"] @ R.T,
            armature=r["armature"],
            damping=r["damping"],
            friction=r["friction"],
            lower=lim.get("lower", -math.inf),
            upper=lim.get("upper", math.inf),
            velocity=lim.get("velocity", math.inf),
            effort=lim.get("effort", math.inf),
        ))
        frames.append(Frame(f"{name}_dh{i + 1}", i, C.copy()))
        C_prev = C
    frames.append(Frame(f"{name}_tool", len(parsed) - 1, C_prev @ tool_pose))
    return ModelSpec(bodies=bodies, frames=frames, gravity=g.copy(), name=name,
                     check_inertia=bool(check_inertia),
                     base_name="base_link")
