"""What the benchmark of peers (bench/peers.py) times: robodyn's variants and each peer's
calls (Pinocchio, MuJoCo, the Robotics Toolbox) for each quantity, checked against robodyn."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pathlib
import tempfile
import warnings

import numpy as np

from peer_cases import PEERS, QUANTITIES, BenchError


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
