"""``robodyn bench``: time robodyn against its peers, from Python, in one process.

This file is outside the installed package: ``robodyn bench`` loads it from the source tree
(robodyn.cli.commands.peers_benchmark), the scripts of bench/ import it as ``peers``.

What is timed, for each robot and each quantity (inverse dynamics ``id``, mass matrix ``M``,
forward dynamics ``fd``, gravity torques ``g``):

- **single**: one call from Python on a (n,) state, what a Python control loop pays. robodyn
  plain (a new array per call), with ``out=``, with ``method="kane"`` and, when
  ``robot.specialized()`` exists, the specialised robot; Pinocchio (``pin.rnea``, ``pin.crba``,
  ``pin.aba``, ``pin.computeGeneralizedGravity``; both conventions of crba / aba); MuJoCo
  (``mj_inverse``; the minimal ``mj_kinematics, mj_comPos, mj_comVel, mj_rne`` pipeline;
  ``mj_crb + mj_fullM``; ``mj_forward``); the Robotics Toolbox (``rne``, ``inertia``,
  ``accel``, ``gravload`` of a DHRobot) where a DH table of the robot is known.
- **batch**: one robodyn call on (N, n) arrays (the C++ loop, one thread), per state, against
  one ``pin`` call from Python (Pinocchio has no batch call).

Method: every library gets the same pool of distinct random states (so robodyn's
per-configuration cache never hits), converted once to its joint order; each round times a
loop over the pool for every implementation, the order rotating and reversing from round to
round; the time of an empty loop over the pool is subtracted; the reported time is the median
over rounds and the ratio is the median over rounds of the per-round ratio to Pinocchio (the
faster of its two conventions where it has two). Before anything is timed, every
implementation's result is compared with robodyn's on a few states.

All models are read from one URDF text: the robot's URDF with visual, collision, dynamics
(damping and friction), mimic, transmission and gazebo elements removed, continuous joints
turned into revolute ones with wide limits and infinite effort or velocity limits made finite, so every library computes the same rigid-body
equation ``tau = (M(q) + diag(armature)) qdd + C(q, qd) qd + g(q)``. Rotor inertia (robodyn's
``<robodyn armature>`` extension) is copied into Pinocchio's and MuJoCo's models; MuJoCo gets
constraints, contacts and passive forces disabled.

Peers are optional: each is used only if it imports. bench/run_all.py in the source tree runs
the full suite (random chains, the C++ harness, plots).
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import importlib.util
import math
import pathlib
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET

import numpy as np

__all__ = ["Case", "Impl", "strip_urdf", "load_case", "case_from_dh", "example_robot_data_urdf",
           "implementations", "check_agreement", "measure", "bench_case", "markdown_tables",
           "add_arguments", "run", "QUANTITIES", "PEERS"]

QUANTITIES = ("id", "M", "fd", "g")
QUANTITY_NAMES = {"id": "inverse dynamics", "M": "mass matrix", "fd": "forward dynamics",
                  "g": "gravity torques"}
PEERS = ("pinocchio", "mujoco", "rtb")

# example-robot-data URDFs usable as ROBOT names (robodyn.robots, the one name resolver)
from robodyn.io.robots import EXAMPLE_ROBOTS, example_robot_data_urdf  # noqa: E402


class BenchError(RuntimeError):
    """A result that disagrees with robodyn's, or a model that cannot be built."""


# ---------------------------------------------------------------------------------------------
# models


@dataclasses.dataclass
class Case:
    """One robot: the robodyn Robot, the URDF text every library reads, and optionally a DH
    table for the Robotics Toolbox (rows of dicts theta, d, a, alpha, joint, mass, com,
    inertia, armature; ``dh_gravity`` is gravity in DH frame 0)."""

    name: str
    robot: object
    urdf: str
    dh: list | None = None
    dh_gravity: tuple | None = None
    notes: list = dataclasses.field(default_factory=list)

    @property
    def n(self):
        return self.robot.n


def strip_urdf(text):
    """The URDF reduced to what the rigid-body dynamics needs (see the module docstring)."""
    root = ET.fromstring(text)
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for joint in root.iter("joint"):
        for tag in ("dynamics", "mimic", "safety_controller", "calibration"):
            for e in joint.findall(tag):
                joint.remove(e)
        lim = joint.find("limit")
        for key in ("effort", "velocity") if lim is not None else ():
            try:
                ok = math.isfinite(float(lim.get(key, "0")))
            except ValueError:
                ok = False
            if not ok:
                lim.set(key, "1000")  # urdfdom (Pinocchio, MuJoCo) rejects inf
        if joint.get("type") == "continuous":
            joint.set("type", "revolute")
            lim = joint.find("limit")
            if lim is None:
                lim = ET.SubElement(joint, "limit")
            lim.set("lower", "-1000")
            lim.set("upper", "1000")
            lim.set("effort", lim.get("effort", "1000"))
            lim.set("velocity", lim.get("velocity", "1000"))
    for tag in ("transmission", "gazebo", "mujoco"):
        for e in root.findall(tag):
            root.remove(e)
    return ET.tostring(root, encoding="unicode")


def _make_urdf_tables():
    """robots/make_urdf.py of the source tree (the bundled robots' DH tables), or None."""
    here = pathlib.Path(__file__).resolve()
    for path in (here.parents[2] / "robots" / "make_urdf.py",):
        if path.is_file():
            spec = importlib.util.spec_from_file_location("_robodyn_make_urdf", path)
            mod = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(mod)
            except Exception:
                return None
            return mod
    return None


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y),
                              math.sin(y))
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _bundled_dh(name, gravity):
    """DH rows and gravity in DH frame 0 of a bundled robot, from robots/make_urdf.py."""
    mod = _make_urdf_tables()
    table = getattr(mod, name.upper(), None) if mod else None
    if table is None:
        return None, None
    rows = []
    for r in table["rows"]:
        typ, theta, d, a, alpha, mass, com, inertia, *_rest = r
        rows.append(dict(theta=theta, d=d, a=a, alpha=alpha, joint=typ, mass=mass,
                         com=np.array(com, dtype=float), inertia=np.diag(inertia),
                         armature=float(r[12]) if len(r) > 12 else 0.0))
    R0 = _rpy_matrix(table.get("base_rpy") or (0.0, 0.0, 0.0))
    return rows, tuple(R0.T @ np.asarray(gravity, dtype=float))


def load_case(name, strict=False, xacro_args=None, xacro_env=False):
    """A Case from a bundled robot name, ``ur5`` / ``panda`` (example-robot-data) or a URDF
    (or .xacro) path. Raises BenchError with the reason when the robot is not available.
    Mimic joints load as independent joints (as the peers load them); ``strict`` refuses a
    file that would load with warnings."""
    import robodyn
    from robodyn.io.sources import expand_xacro

    text = str(name)
    dh = dh_gravity = None
    if text in EXAMPLE_ROBOTS:
        path = example_robot_data_urdf(text)
        if path is None:
            raise BenchError(f"{text}: example-robot-data is not installed")
        source = path.read_text()
    elif text in robodyn.robots.available():
        source = robodyn.robots.urdf_path(text).read_text()
    else:
        path = pathlib.Path(text)
        if not path.is_file():
            raise BenchError(f"unknown robot {text!r}: give a robot name "
                             f"({', '.join(robodyn.robots.names())}) or a URDF file path")
        if text.endswith(".xacro"):
            source, _ = expand_xacro(text, xacro_args, xacro_env)
        else:
            from robodyn import safe_io

            source = safe_io.read_text(path)  # (a regular file, at most 64 MiB)
        text = path.stem
    urdf = strip_urdf(source)
    if strict:
        robodyn.load_urdf(urdf, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = robodyn.load_urdf(urdf, check_inertia=False, mimic="independent")
    if text in robodyn.robots.available():
        dh, dh_gravity = _bundled_dh(text, robot.gravity)
    return Case(text, robot, urdf, dh, dh_gravity)


def case_from_dh(rows, name, gravity=(0.0, 0.0, -9.81)):
    """A Case from standard-DH rows (robodyn.from_dh), read back through its URDF so that
    every library reads the same file. Rows without ``limits`` get +-pi."""
    import robodyn

    rows = [dict(r) for r in rows]
    for r in rows:
        r.setdefault("limits", (-math.pi, math.pi) if r.get("joint", "revolute") == "revolute"
                     else (-1.0, 1.0))
    urdf = strip_urdf(robodyn.from_dh(rows, gravity=gravity, name=name).to_urdf())
    robot = robodyn.load_urdf(urdf, check_inertia=False)
    return Case(name, robot, urdf, rows, tuple(gravity))


def random_states(robot, count, rng):
    """(q, qd, qdd, tau) arrays of shape (count, n): q uniform in the limits (at most +-pi),
    qd, qdd standard normal, tau = inverse_dynamics(q, qd, qdd)."""
    lo, hi = robot.position_limits
    lo, hi = np.maximum(lo, -np.pi), np.minimum(hi, np.pi)
    n = robot.n
    Q = np.ascontiguousarray(rng.uniform(lo, hi, (count, n)))
    QD = np.ascontiguousarray(rng.standard_normal((count, n)))
    QDD = np.ascontiguousarray(rng.standard_normal((count, n)))
    TAU = np.ascontiguousarray(robot.inverse_dynamics(Q, QD, QDD))
    return Q, QD, QDD, TAU


# ---------------------------------------------------------------------------------------------
# implementations


@dataclasses.dataclass
class Impl:
    """One way of computing one quantity.

    ``fn(*a)`` for ``a`` in ``args`` is what is timed (``count`` states per loop over
    ``args``: len(args) for single calls, N for a batch); ``result(k)`` gives the result for
    pool state k in robodyn's joint order, for the agreement check (M: full matrix, or upper
    triangle only if ``upper``)."""

    label: str
    lib: str
    quantity: str
    fn: object
    args: list
    count: int
    result: object
    upper: bool = False
    batch: bool = False
    note: str = ""


def _robodyn_impls(label, robot, quantity, pool, n, batch_states):
    """Single-call and batch implementations on one robodyn Robot: ``label`` "robodyn" gives
    the plain call and the ``out=`` call, "robodyn kane" Kane's method (id, fd) with ``out=``,
    anything else (the specialised robot) its default method with ``out=``."""
    Q, QD, QDD, TAU = pool
    K = Q.shape[0]
    method = "kane" if label == "robodyn kane" else None
    if method and quantity in ("M", "g"):
        return []
    fn, inputs = {"id": (robot.inverse_dynamics, (Q, QD, QDD)),
                  "fd": (robot.forward_dynamics, (Q, QD, TAU)),
                  "M": (robot.mass_matrix, (Q,)),
                  "g": (robot.gravity_torques, (Q,))}[quantity]
    extra = (method,) if quantity in ("id", "fd") else ()
    row_shape = (n, n) if quantity == "M" else (n,)
    out = np.empty(row_shape)

    def res(k):
        return np.array(fn(*(tuple(a[k] for a in inputs) + extra)))

    impls = []
    if label == "robodyn":
        impls.append(Impl("robodyn", "robodyn", quantity, fn,
                          [tuple(a[k] for a in inputs) for k in range(K)], K, res))
        label = "robodyn out="
    impls.append(Impl(label, "robodyn", quantity, fn,
                      [tuple(a[k] for a in inputs) + extra + (out,) for k in range(K)], K, res))
    if batch_states:
        N = batch_states
        if quantity == "M":
            N = max(64, min(N, 4_000_000 // (n * n)))  # (N, n, n) output under 32 MB
        idx = np.arange(N) % K
        args = (tuple(np.ascontiguousarray(a[idx]) for a in inputs) + extra
                + (np.empty((N,) + row_shape),))
        impls.append(Impl(impls[-1].label.replace(" out=", "") + " batch", "robodyn", quantity,
                          fn, [args], N, res, batch=True))
    return impls


def _pinocchio_impls(case, pool, quantity, cache):
    import pinocchio as pin

    if "pin" not in cache:
        model = pin.buildModelFromXML(case.urdf)
        names = list(case.robot.joint_names)
        jids = [model.getJointId(j) for j in names]
        if any(j >= model.njoints for j in jids):
            raise BenchError("pinocchio: joint names differ from robodyn's")
        joints = [model.joints[j] for j in jids]
        if any(j.nq != 1 or j.nv != 1 for j in joints):
            raise BenchError("pinocchio: a joint is not 1-DOF")
        if model.nq != case.n or model.nv != case.n:
            raise BenchError(f"pinocchio: nq = {model.nq}, nv = {model.nv}, robodyn n = {case.n}")
        iq = np.array([j.idx_q for j in joints])
        iv = np.array([j.idx_v for j in joints])
        model.armature = np.zeros(model.nv)
        model.armature[iv] = [b.armature for b in case.robot.spec.bodies]
        data = model.createData()
        Q, QD, QDD, TAU = pool
        conv = lambda A, idx: np.ascontiguousarray(A[:, np.argsort(idx)])
        cache["pin"] = (model, data, iv, conv(Q, iq), conv(QD, iv), conv(QDD, iv), conv(TAU, iv))
    model, data, iv, PQ, PV, PA, PT = cache["pin"]
    K = PQ.shape[0]
    W = pin.Convention.WORLD
    rows3 = lambda X: [(model, data, PQ[k], PV[k], X[k]) for k in range(K)]
    if quantity == "id":
        return [Impl("pinocchio", "pinocchio", "id", pin.rnea, rows3(PA), K,
                     lambda k: np.array(pin.rnea(model, data, PQ[k], PV[k], PA[k]))[iv])]
    if quantity == "fd":
        return [Impl("pinocchio", "pinocchio", "fd", pin.aba, rows3(PT), K,
                     lambda k: np.array(pin.aba(model, data, PQ[k], PV[k], PT[k]))[iv]),
                Impl("pinocchio WORLD", "pinocchio", "fd", pin.aba,
                     [r + (W,) for r in rows3(PT)], K,
                     lambda k: np.array(pin.aba(model, data, PQ[k], PV[k], PT[k], W))[iv])]
    if quantity == "M":
        sel = np.ix_(iv, iv)
        return [Impl("pinocchio", "pinocchio", "M", pin.crba,
                     [(model, data, PQ[k]) for k in range(K)], K,
                     lambda k: np.array(pin.crba(model, data, PQ[k]))[sel], upper=True),
                Impl("pinocchio WORLD", "pinocchio", "M", pin.crba,
                     [(model, data, PQ[k], W) for k in range(K)], K,
                     lambda k: np.array(pin.crba(model, data, PQ[k], W))[sel], upper=True)]
    return [Impl("pinocchio", "pinocchio", "g", pin.computeGeneralizedGravity,
                 [(model, data, PQ[k]) for k in range(K)], K,
                 lambda k: np.array(pin.computeGeneralizedGravity(model, data, PQ[k]))[iv])]


def _mujoco_model(case):
    import mujoco

    # MuJoCo reads URDF; the stripped text has no meshes, written to a temporary directory
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / f"{case.name}.urdf"
        path.write_text(case.urdf)
        try:
            m = mujoco.MjModel.from_xml_path(str(path))
        except Exception as e:
            raise BenchError(f"mujoco cannot load the URDF: {str(e).splitlines()[0]}") from None
    D = mujoco.mjtDisableBit
    m.opt.disableflags |= int(D.mjDSBL_CONSTRAINT | D.mjDSBL_CONTACT | D.mjDSBL_LIMIT
                              | D.mjDSBL_EQUALITY | D.mjDSBL_FRICTIONLOSS | D.mjDSBL_SPRING
                              | D.mjDSBL_DAMPER | D.mjDSBL_ACTUATION | D.mjDSBL_SENSOR)
    m.opt.gravity[:] = case.robot.gravity
    names = [m.joint(j).name for j in range(m.njnt)]
    if m.nq != case.n or m.nv != case.n or sorted(names) != sorted(case.robot.joint_names):
        raise BenchError(f"mujoco: nq = {m.nq}, joints {names} differ from robodyn's")
    jid = [names.index(j) for j in case.robot.joint_names]
    iq = np.array([m.jnt_qposadr[j] for j in jid])
    iv = np.array([m.jnt_dofadr[j] for j in jid])
    m.dof_armature[:] = 0.0
    m.dof_armature[iv] = [b.armature for b in case.robot.spec.bodies]
    m.dof_damping[:] = 0.0
    m.dof_frictionloss[:] = 0.0
    return m, iq, iv


def _mujoco_impls(case, pool, quantity, cache):
    import mujoco

    if "mj" not in cache:
        m, iq, iv = _mujoco_model(case)
        d = mujoco.MjData(m)
        Q, QD, QDD, TAU = pool
        conv = lambda A, idx: np.ascontiguousarray(A[:, np.argsort(idx)])
        cache["mj"] = (m, d, iv, conv(Q, iq), conv(QD, iv), conv(QDD, iv), conv(TAU, iv))
    m, d, iv, PQ, PV, PA, PT = cache["mj"]
    K = PQ.shape[0]
    nv = m.nv
    res = np.zeros(nv)
    Mfull = np.zeros((nv, nv))
    kin, com, vel, rne = mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_comVel, mujoco.mj_rne
    armature = np.array(m.dof_armature)

    def inverse(q, v, a):
        d.qpos[:] = q
        d.qvel[:] = v
        d.qacc[:] = a
        mujoco.mj_inverse(m, d)
        return d.qfrc_inverse

    def rne_pipeline(q, v, a):
        d.qpos[:] = q
        d.qvel[:] = v
        d.qacc[:] = a
        kin(m, d)
        com(m, d)
        vel(m, d)
        rne(m, d, 1, res)
        return res

    def mass(q):
        d.qpos[:] = q
        kin(m, d)
        com(m, d)
        mujoco.mj_crb(m, d)
        mujoco.mj_fullM(m, d, Mfull)
        return Mfull

    def forward(q, v, tau):
        d.qpos[:] = q
        d.qvel[:] = v
        d.qfrc_applied[:] = tau
        mujoco.mj_forward(m, d)
        return d.qacc

    def gravity(q):
        d.qpos[:] = q
        d.qvel[:] = 0.0
        kin(m, d)
        com(m, d)
        vel(m, d)
        rne(m, d, 0, res)
        return res

    if quantity == "id":
        rows = [(PQ[k], PV[k], PA[k]) for k in range(K)]
        return [Impl("mujoco", "mujoco", "id", inverse, rows, K,
                     lambda k: np.array(inverse(*rows[k]))[iv], note="mj_inverse"),
                Impl("mujoco mj_rne", "mujoco", "id", rne_pipeline, rows, K,
                     lambda k: (np.array(rne_pipeline(*rows[k])) + armature * PA[k])[iv],
                     note="mj_kinematics + mj_comPos + mj_comVel + mj_rne (no armature term)")]
    if quantity == "M":
        rows = [(PQ[k],) for k in range(K)]
        return [Impl("mujoco", "mujoco", "M", mass, rows, K,
                     lambda k: np.array(mass(*rows[k]))[np.ix_(iv, iv)],
                     note="mj_kinematics + mj_comPos + mj_crb + mj_fullM")]
    if quantity == "fd":
        rows = [(PQ[k], PV[k], PT[k]) for k in range(K)]
        return [Impl("mujoco", "mujoco", "fd", forward, rows, K,
                     lambda k: np.array(forward(*rows[k]))[iv], note="mj_forward")]
    rows = [(PQ[k],) for k in range(K)]
    return [Impl("mujoco", "mujoco", "g", gravity, rows, K,
                 lambda k: np.array(gravity(*rows[k]))[iv],
                 note="mj_kinematics + mj_comPos + mj_comVel + mj_rne(flg_acc=0), qvel = 0")]


def _rtb_robot(case):
    import roboticstoolbox as rtb

    links = []
    for r in case.dh:
        inertia = np.asarray(r["inertia"], dtype=float)
        if inertia.shape != (3, 3):
            ixx, iyy, izz, ixy, iyz, ixz = inertia
            inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        kw = dict(a=float(r["a"]), alpha=float(r["alpha"]), m=float(r["mass"]),
                  r=[float(x) for x in r["com"]], I=inertia, Jm=float(r.get("armature", 0.0)),
                  G=1.0, B=0.0, Tc=[0.0, 0.0])
        if r.get("joint", "revolute") == "revolute":
            links.append(rtb.RevoluteDH(d=float(r["d"]), offset=float(r["theta"]), **kw))
        else:
            links.append(rtb.PrismaticDH(theta=float(r["theta"]), offset=float(r["d"]), **kw))
    robot = rtb.DHRobot(links, name=case.name)
    robot.gravity = np.asarray(case.dh_gravity, dtype=float)
    return robot


def _rtb_impls(case, pool, quantity, cache):
    if case.dh is None:
        raise BenchError("no DH table for this robot")
    if "rtb" not in cache:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cache["rtb"] = _rtb_robot(case)
    R = cache["rtb"]
    Q, QD, QDD, TAU = pool
    K = Q.shape[0]
    if quantity == "id":
        rows = [(Q[k], QD[k], QDD[k]) for k in range(K)]
        return [Impl("rtb", "rtb", "id", R.rne, rows, K, lambda k: R.rne(*rows[k]), note="rne")]
    if quantity == "M":
        rows = [(Q[k],) for k in range(K)]
        return [Impl("rtb", "rtb", "M", R.inertia, rows, K, lambda k: R.inertia(*rows[k]),
                     note="inertia")]
    if quantity == "fd":
        rows = [(Q[k], QD[k], TAU[k]) for k in range(K)]
        return [Impl("rtb", "rtb", "fd", R.accel, rows, K, lambda k: R.accel(*rows[k]),
                     note="accel")]
    rows = [(Q[k],) for k in range(K)]
    return [Impl("rtb", "rtb", "g", R.gravload, rows, K, lambda k: R.gravload(*rows[k]),
                 note="gravload")]


def _specialized(robot, notes):
    fn = getattr(robot, "specialized", None)
    if fn is None:
        notes.append("robot.specialized() does not exist yet: specialised code skipped")
        return None
    try:
        return fn()
    except Exception as e:  # being written by another helper: skip gracefully
        notes.append(f"robot.specialized() failed ({type(e).__name__}: {e}): skipped")
        return None


def implementations(case, pool, quantities=QUANTITIES, peers=PEERS, batch=10_000,
                    specialized=True, notes=None):
    """{quantity: [Impl]} for robodyn's variants and the importable peers.

    A peer that does not import or cannot build the model is left out, with the reason in
    ``notes`` (a list of strings)."""
    notes = case.notes if notes is None else notes
    robot = case.robot
    n = robot.n
    spec_robot = _specialized(robot, notes) if specialized else None
    out = {q: [] for q in quantities}
    for q in quantities:
        out[q] += _robodyn_impls("robodyn", robot, q, pool, n, batch)
        out[q] += _robodyn_impls("robodyn kane", robot, q, pool, n, batch)
        if spec_robot is not None:
            try:
                impls = _robodyn_impls("robodyn specialised", spec_robot, q, pool, n, batch)
                for im in impls:
                    im.lib = "robodyn"
                    im.result(0)
                out[q] += impls
            except Exception as e:
                notes.append(f"specialised {q}: {type(e).__name__}: {e}")
    makers = {"pinocchio": ("pinocchio", _pinocchio_impls), "mujoco": ("mujoco", _mujoco_impls),
              "rtb": ("roboticstoolbox", _rtb_impls)}
    for peer in peers:
        module, make = makers[peer]
        try:
            importlib.import_module(module)
        except Exception as e:
            notes.append(f"{peer}: not importable ({type(e).__name__}: {e})")
            continue
        cache = {}
        for q in quantities:
            try:
                out[q] += make(case, pool, q, cache)
            except BenchError as e:
                notes.append(f"{peer}: {e}")
                break
    return out


def check_agreement(impls, states=3, rtol=1e-8):
    """Compare every implementation (batch calls: their output) with robodyn's plain call on
    ``states`` pool states.

    Returns the list of implementations that agree and a list of notes for those that do
    not. A robodyn variant that disagrees raises BenchError (a bug, not a convention)."""
    ref = next(im for im in impls if im.label == "robodyn")
    keep, notes = [], []
    for im in impls:
        err = 0.0
        if im.batch:  # the batch call itself: its output rows are the pool states in order
            im.fn(*im.args[0])
            batch_out = im.args[0][-1]
        for k in range(states):
            expected = np.asarray(ref.result(k), dtype=float)
            got = np.asarray(batch_out[k] if im.batch else im.result(k), dtype=float)
            if im.upper:
                expected, got = np.triu(expected), np.triu(got)
            scale = max(1.0, float(np.abs(expected).max()))
            err = max(err, float(np.abs(got - expected).max()) / scale)
        if not err <= rtol:
            msg = f"{im.label} {im.quantity}: disagrees with robodyn (relative error {err:.2e})"
            if im.lib == "robodyn":
                raise BenchError(msg)
            notes.append(msg + ", not timed")
            continue
        keep.append(im)
    return keep, notes


# ---------------------------------------------------------------------------------------------
# timing


def measure(impls, rounds=21, warmup=1, clock="cpu", loop_budget=0.02):
    """Interleaved timing: {label: array of seconds per state, one per round}.

    Each round times one loop over ``im.args`` for every implementation, in an order that
    rotates and reverses from round to round; an empty loop over the same rows is timed in
    every round and subtracted from the single-call loops. ``clock="cpu"`` reads this
    thread's CPU time (time spent descheduled on a shared machine is not counted), "wall"
    the wall clock. An implementation whose loop takes longer than ``loop_budget`` seconds
    loops over fewer states. Garbage collection is off while timing."""
    perf = time.thread_time_ns if clock == "cpu" else time.perf_counter_ns
    samples = {im.label: [] for im in impls}
    for im in impls:
        for _ in range(warmup):
            t0 = time.perf_counter()
            for a in im.args:
                im.fn(*a)
            took = time.perf_counter() - t0
        # a slow implementation (the Toolbox on a long chain) loops over fewer states
        if not im.batch and took > loop_budget and len(im.args) > 4:
            keep = max(4, int(len(im.args) * loop_budget / took))
            im.args, im.count = im.args[:keep], keep
    enabled = gc.isenabled()
    gc.disable()
    try:
        k = len(impls)
        for r in range(rounds):
            order = impls[r % k:] + impls[:r % k]
            if r % 2:
                order = order[::-1]
            for im in order:
                fn, args = im.fn, im.args
                t0 = perf()
                for a in args:
                    fn(*a)
                t1 = perf()
                for a in args:
                    pass
                t2 = perf()
                loop = (t2 - t1) if not im.batch else 0
                samples[im.label].append(max(t1 - t0 - loop, 0) * 1e-9 / im.count)
    finally:
        if enabled:
            gc.enable()
    return {lab: np.array(v) for lab, v in samples.items()}


def _reference(quantity, samples):
    """Label of the Pinocchio implementation with the smallest median (None if absent)."""
    pins = [lab for lab in samples if lab.startswith("pinocchio") and not lab.endswith("batch")]
    if not pins:
        return None
    return min(pins, key=lambda lab: float(np.median(samples[lab])))


def summarize(samples, ref):
    """{label: (median s per state, median of per-round ratios to ref or nan)}."""
    out = {}
    for lab, s in samples.items():
        ratio = float(np.median(s / samples[ref])) if ref else float("nan")
        out[lab] = (float(np.median(s)), ratio)
    return out


def bench_case(case, quantities=QUANTITIES, peers=PEERS, rounds=21, pool_size=128,
               batch=10_000, specialized=True, seed=0, clock="cpu", log=None):
    """Everything for one Case: {"name", "n", "notes", "single": {q: {label: (s, ratio)}},
    "batch": {q: {label: (s, ratio)}}, "ref": {q: label}, "labels_notes": {label: note}}."""
    rng = np.random.default_rng(seed)
    pool = random_states(case.robot, pool_size, rng)
    notes = list(case.notes)
    impls = implementations(case, pool, quantities, peers, batch, specialized, notes)
    result = {"name": case.name, "n": case.n, "notes": notes, "single": {}, "batch": {},
              "ref": {}, "impl_notes": {}}
    for q in quantities:
        keep, bad = check_agreement(impls[q])
        notes.extend(bad)
        for im in keep:
            if im.note:
                result["impl_notes"][f"{im.label} {q}"] = im.note
        single = [im for im in keep if not im.batch]
        samples = measure(single, rounds, clock=clock)
        ref = _reference(q, samples)
        result["ref"][q] = ref
        result["single"][q] = summarize(samples, ref)
        batch_impls = [im for im in keep if im.batch]
        if batch_impls:
            pin_single = [im for im in single if im.label == ref] if ref else []
            bs = measure(batch_impls + pin_single, rounds, clock=clock)
            result["batch"][q] = summarize(bs, ref if pin_single else None)
        if log:
            log(f"  {case.name} {q}: done")
    return result


# ---------------------------------------------------------------------------------------------
# reporting

SINGLE_COLUMNS = ["robodyn", "robodyn out=", "robodyn kane", "robodyn specialised",
                  "pinocchio", "pinocchio WORLD", "mujoco", "mujoco mj_rne", "rtb"]
BATCH_COLUMNS = ["robodyn batch", "robodyn kane batch", "robodyn specialised batch"]


def _cell(entry, unit=1e6, digits=2, ratio=True):
    if entry is None:
        return "-"
    t, r = entry
    text = f"{t * unit:.{digits}f}"
    if ratio and not math.isnan(r):
        text += f" ({r:.2f}x)"
    return text


def _has_reference(results):
    """Did Pinocchio run (is there a reference for the ratios)?"""
    return any(r["ref"].get(q) for r in results for q in r["ref"])


def markdown_tables(results):
    """Two Markdown tables (single call, batch) from bench_case results."""
    cols = [c for c in SINGLE_COLUMNS
            if any(c in r["single"].get(q, {}) for r in results for q in r["single"])]
    pin = _has_reference(results)
    lines = ["Python, one call per state: microseconds per call"
             + (" (ratio to Pinocchio)" if pin else " (Pinocchio not installed: no ratios)"), "",
             "| robot | n | quantity | " + " | ".join(cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for r in results:
        for q, row in r["single"].items():
            lines.append(f"| {r['name']} | {r['n']} | {q} | "
                         + " | ".join(_cell(row.get(c)) for c in cols) + " |")
    bcols = [c for c in BATCH_COLUMNS
             if any(c in r["batch"].get(q, {}) for r in results for q in r["batch"])]
    lines += ["", "Python, batch (one call on (N, n) arrays, one thread): nanoseconds per state"
              + (" (ratio to one Pinocchio call from Python)" if pin else ""), "",
              "| robot | n | quantity | " + " | ".join(bcols)
              + (" | Pinocchio call |" if pin else " |"),
              "|---|---|---|" + "---|" * (len(bcols) + (1 if pin else 0))]
    for r in results:
        for q, row in r["batch"].items():
            ref = r["ref"].get(q)
            pin = _cell(row.get(ref), 1e9, 0, False) if ref else "-"
            lines.append(f"| {r['name']} | {r['n']} | {q} | "
                         + " | ".join(_cell(row.get(c), 1e9, 0) for c in bcols)
                         + (f" | {pin} |" if _has_reference(results) else " |"))
    return "\n".join(lines)


SHORT = {"robodyn": "robodyn", "robodyn out=": "out=", "robodyn kane": "kane",
         "robodyn specialised": "specialised", "pinocchio": "pinocchio",
         "pinocchio WORLD": "pin WORLD", "mujoco": "mujoco", "mujoco mj_rne": "mj_rne",
         "rtb": "rtb", "robodyn batch": "robodyn", "robodyn kane batch": "kane",
         "robodyn specialised batch": "specialised"}


def text_tables(results):
    """Plain-text tables for the terminal (same content as markdown_tables)."""
    out = []
    cols = [c for c in SINGLE_COLUMNS
            if any(c in r["single"].get(q, {}) for r in results for q in r["single"])]
    w = 16
    head = f"{'robot':<16}{'n':>3} {'qty':<4}" + "".join(f"{SHORT[c]:>{w}}" for c in cols)
    pin = _has_reference(results)
    out += ["Python, one call per state: us per call"
            + (" (ratio to Pinocchio)" if pin else " (Pinocchio not installed: no ratios)")
            + "; out= and kane are robodyn's", head, "-" * len(head)]
    for r in results:
        for q, row in r["single"].items():
            out.append(f"{r['name'][:16]:<16}{r['n']:>3} {q:<4}"
                       + "".join(f"{_cell(row.get(c)):>{w}}" for c in cols))
    bcols = [c for c in BATCH_COLUMNS
             if any(c in r["batch"].get(q, {}) for r in results for q in r["batch"])]
    if bcols:
        head = (f"{'robot':<16}{'n':>3} {'qty':<4}" + "".join(f"{SHORT[c]:>{w}}" for c in bcols)
                + (f"{'pin call':>{w}}" if pin else ""))
        out += ["", "robodyn batch (N states in one call, 1 thread): ns per state"
                + (" (ratio to one Pinocchio call from Python)" if pin else ""),
                head, "-" * len(head)]
        for r in results:
            for q, row in r["batch"].items():
                ref = r["ref"].get(q)
                pin = _cell(row.get(ref), 1e9, 0, False) if ref else "-"
                out.append(f"{r['name'][:16]:<16}{r['n']:>3} {q:<4}"
                           + "".join(f"{_cell(row.get(c), 1e9, 0):>{w}}" for c in bcols)
                           + (f"{pin:>{w}}" if _has_reference(results) else ""))
    notes = [(r["name"], s) for r in results for s in r["notes"]]
    if notes:
        out += ["", "notes:"] + [f"  {name}: {s}" for name, s in notes]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# command line


def run(args, options=None):
    """timing table: robodyn against Pinocchio, MuJoCo and the Robotics Toolbox

    ``options``: keyword arguments of :func:`load_case` (``strict``, ``xacro_args``; the
    command line passes those of its options)."""
    import robodyn

    quantities = [q.strip() for q in args.quantities.split(",") if q.strip()]
    bad = [q for q in quantities if q not in QUANTITIES]
    if bad or not quantities:
        print(f"robodyn bench: --quantities: expected some of {', '.join(QUANTITIES)}",
              file=sys.stderr)
        return 2
    peers = [] if args.peers.strip() == "none" else [
        p.strip() for p in args.peers.split(",") if p.strip()]
    if any(p not in PEERS for p in peers):
        print(f"robodyn bench: --peers: expected some of {', '.join(PEERS)} or none",
              file=sys.stderr)
        return 2
    if args.rounds < 3 or args.pool < 1 or args.batch < 0:
        print("robodyn bench: --rounds >= 3, --pool >= 1, --batch >= 0", file=sys.stderr)
        return 2
    names = args.robots or robodyn.robots.available()
    options = options or {}
    cases = []
    for name in names:
        try:
            cases.append(load_case(name, **options))
        except BenchError as e:
            print(f"robodyn bench: {e}", file=sys.stderr)
            return 2
    threads = robodyn.get_num_threads()
    robodyn.set_num_threads(1)
    try:
        results = [bench_case(c, quantities, peers, args.rounds, args.pool, args.batch,
                              not args.no_specialized, args.seed, args.clock) for c in cases]
    except BenchError as e:
        print(f"robodyn bench: {e}", file=sys.stderr)
        return 1
    finally:
        robodyn.set_num_threads(threads)
    print(markdown_tables(results) if args.markdown else text_tables(results))
    print(f"\n(medians of {args.rounds} interleaved rounds over {args.pool} distinct states, "
          f"{args.clock} clock"
          + ("; Pinocchio reference: the faster of its conventions)" if _has_reference(results)
             else "; Pinocchio not installed, so no ratios: pip install robodyn[peers])"))
    return 0
