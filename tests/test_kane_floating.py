"""Kane's method on a free-floating base (cpp/include/robodyn/algorithms/kane.hpp): the base's six
generalized speeds are its twist in base axes, v[:6] = [angular; linear], so
inverse_dynamics(method="kane") and forward_dynamics(method="kane") take the same q (nq), v, a
(nv) as every other algorithm and return the base's wrench [moment about the base origin;
force] in base axes.

Checked against Newton-Euler (rnea), the pure-NumPy reference (tests/reference/featherstone.py,
sharing no code with cpp/), the articulated-body algorithm and M + Cholesky, on seeded random
floating chains and trees, the bundled floating seed systems, and Solo12 / Talos of
example-robot-data (skipped without it); batches, out=, op counts.
"""

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R

import _load

TOL = 1e-10
SIZES = (0, 1, 2, 5, 12, 25)


def rel_err(a, b):
    """Worst per-state error of a against b, relative to the largest entry of b's state."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    scale = np.max(np.abs(b), axis=1)
    assert np.all(scale > 0)
    return float(np.max(np.max(np.abs(a - b), axis=1) / scale))


def floating_states(spec, rng, count):
    """(count, nq), (count, nv), (count, nv) C-contiguous batches."""
    rows = [R.random_floating_state(spec, rng) for _ in range(count)]
    return tuple(np.ascontiguousarray([r[k] for r in rows]) for k in range(3))


def robot_states(robot, rng, count):
    """States of a loaded floating robot: a random base pose, joints within their limits."""
    lo, hi = robot.position_limits
    Q = np.empty((count, robot.nq))
    Q[:, :3] = rng.normal(0.0, 1.0, (count, 3))
    quat = rng.standard_normal((count, 4))
    Q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    Q[:, 7:] = rng.uniform(np.maximum(lo[7:], -np.pi), np.minimum(hi[7:], np.pi),
                           (count, robot.nq - 7))
    return Q, rng.standard_normal((count, robot.nv)), rng.standard_normal((count, robot.nv))


def check_kane(robot, Q, V, A):
    """Kane's ID equals rnea's; Kane's FD equals ABA's and M + Cholesky's; FD(kane ID) = A by
    Kane and by ABA. Returns the worst relative error."""
    V = V.copy()
    V[0] = 0.0  # at rest: only gravity and inertia (Coulomb friction sign(0) = 0)
    tau_ne = robot.inverse_dynamics(Q, V, A, method="rnea")
    tau_k = robot.inverse_dynamics(Q, V, A, method="kane")
    errs = {"id": rel_err(tau_k, tau_ne)}
    tau = tau_ne + np.random.default_rng(0).standard_normal(tau_ne.shape)
    qdd_aba = robot.forward_dynamics(Q, V, tau, method="aba")
    errs["fd_aba"] = rel_err(robot.forward_dynamics(Q, V, tau, method="kane"), qdd_aba)
    errs["fd_crba"] = rel_err(robot.forward_dynamics(Q, V, tau, method="kane"),
                              robot.forward_dynamics(Q, V, tau, method="crba"))
    errs["round_trip_kane"] = rel_err(robot.forward_dynamics(Q, V, tau_k, method="kane"), A)
    errs["round_trip_aba"] = rel_err(robot.forward_dynamics(Q, V, tau_k, method="aba"), A)
    for key, err in errs.items():
        assert err <= TOL, f"{robot.name}: {key} {err:.2e}"
    return max(errs.values())


# ---------------------------------------------------------------- random floating trees

@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("joint_types", ["revolute", "mixed"])
def test_random_floating_models(kind, joint_types, rng):
    for n in SIZES:
        spec = R.random_floating(n, rng, kind, joint_types=joint_types)
        robot = robodyn.Robot(spec)
        assert robot.nv == n + 6 and robot.nq == n + 7
        check_kane(robot, *floating_states(spec, rng, 4))


def test_against_the_numpy_reference(rng):
    """Kane's ID against the independent NumPy Featherstone reference (free-flyer root)."""
    for n in SIZES:
        spec = R.random_floating(n, rng, "tree")
        robot = robodyn.Robot(spec)
        for q, v, a in zip(*floating_states(spec, rng, 3)):
            ref = F.rnea(spec, q, v, a)
            assert rel_err(robot.inverse_dynamics(q, v, a, method="kane"), ref) <= TOL


def test_single_base_body_is_newton_euler(rng):
    """A lone rigid body (nv = 6): the wrench is Newton-Euler's about the body origin,
    written out here: with c the mass centre, Ic the central inertia, w, vo the twist,
    a_c = vd + w x vo + wd x c + w x (w x c) (classical), f = m (a_c - g_body),
    n = Ic wd + w x Ic w + c x f."""
    spec = R.random_floating(0, rng)
    body = spec.bodies[0]
    robot = robodyn.Robot(spec)
    for q, v, a in zip(*floating_states(spec, rng, 5)):
        Rb = F.quat_to_rot(q[3:7])
        g = Rb.T @ np.asarray(spec.gravity)
        w, vo, wd, vd = v[:3], v[3:], a[:3], a[3:]
        c, m, Ic = body.com, body.mass, body.inertia
        ac = vd + np.cross(w, vo) + np.cross(wd, c) + np.cross(w, np.cross(w, c))
        f = m * (ac - g)
        n = Ic @ wd + np.cross(w, Ic @ w) + np.cross(c, f)
        tau = robot.inverse_dynamics(q, v, a, method="kane")
        assert rel_err(tau, np.r_[n, f]) <= TOL


def test_gravity_and_free_systems(rng):
    """Kane at v = a = 0 is g(q); without gravity a free system at rest with a = 0 needs no
    force at all (every entry exactly 0: nothing accelerates)."""
    spec = R.random_floating(7, rng, "tree", armature=False, damping=False, friction=False)
    robot = robodyn.Robot(spec)
    Q, _, _ = floating_states(spec, rng, 4)
    Z = np.zeros((4, robot.nv))
    assert rel_err(robot.inverse_dynamics(Q, Z, Z, method="kane"),
                   robot.gravity_torques(Q)) <= TOL
    robot.gravity = [0.0, 0.0, 0.0]
    assert not robot.inverse_dynamics(Q, Z, Z, method="kane").any()
    # any gravity vector set after the build
    for gvec in (rng.standard_normal(3) * 9.81, [0.0, 9.81, 0.0]):
        robot.gravity = gvec
        _, V, A = floating_states(spec, rng, 4)
        assert rel_err(robot.inverse_dynamics(Q, V, A, method="kane"),
                       robot.inverse_dynamics(Q, V, A, method="rnea")) <= TOL


def test_base_held_at_rest_is_the_fixed_base_model(rng):
    """With the base at rest at the origin (its v and a zero, identity pose), Kane's joint
    rows are the fixed-base model's (the base's mass, here 1e6 kg, does not enter them)."""
    fixed_spec = R.random_chain(5, np.random.default_rng(3), armature=False, damping=False,
                                friction=False)
    fixed = robodyn.Robot(fixed_spec)
    spec = R.random_floating(5, np.random.default_rng(3), "chain", base_mass=1e6,
                             armature=False, damping=False, friction=False)
    robot = robodyn.Robot(spec)
    q, qd, qdd = R.random_state(fixed_spec, rng)
    base = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    tau = robot.inverse_dynamics(np.r_[base, q], np.r_[np.zeros(6), qd], np.r_[np.zeros(6), qdd],
                                 method="kane")
    assert rel_err(tau[6:], fixed.inverse_dynamics(q, qd, qdd, method="kane")) <= TOL


# ---------------------------------------------------------------- seed systems, legged robots

@pytest.mark.parametrize("name", ["lynch_satellite", "jpl_spacecraft", "dasc_cat"])
def test_seed_floating_systems(name, rng):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JPL's bus inertia as printed
        robot = robodyn.robots.load(name)
    assert robot.nq == robot.nv + 1
    check_kane(robot, *robot_states(robot, rng, 16))


LEGGED = {"solo12": "solo_description/robots/solo12.urdf",
          "talos": "talos_data/robots/talos_reduced.urdf"}


def legged(name):
    root = _load.example_robot_data_dir()
    if root is None or not (root / LEGGED[name]).is_file():
        pytest.skip("example-robot-data (or this robot in it) is not installed")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return robodyn.load_urdf(str(root / LEGGED[name]), floating_base=True,
                                 check_inertia=False, mimic="independent")


@pytest.mark.parametrize("name", sorted(LEGGED))
def test_legged_robots(name, rng):
    robot = legged(name)
    check_kane(robot, *robot_states(robot, rng, 16))


# ---------------------------------------------------------------- batches, out=, errors

def test_batches_and_out(rng):
    spec = R.random_floating(9, rng, "tree")
    robot = robodyn.Robot(spec)
    Q, V, A = floating_states(spec, rng, 33)
    tau = robot.inverse_dynamics(Q, V, A, method="kane")
    assert tau.shape == (33, robot.nv)
    for i in (0, 17, 32):
        assert np.array_equal(robot.inverse_dynamics(Q[i], V[i], A[i], method="kane"), tau[i])
    out = np.full((33, robot.nv), np.nan)
    assert robot.inverse_dynamics(Q, V, A, method="kane", out=out) is out
    assert np.array_equal(out, tau)
    one = np.full(robot.nv, np.nan)
    assert robot.inverse_dynamics(Q[3], V[3], A[3], "kane", one) is one
    assert np.array_equal(one, tau[3])
    qdd = robot.forward_dynamics(Q, V, tau, method="kane")
    assert rel_err(qdd, A) <= TOL
    fout = np.full((33, robot.nv), np.nan)
    assert robot.forward_dynamics(Q, V, tau, method="kane", out=fout) is fout
    assert np.array_equal(fout, qdd)
    for i in (0, 32):
        assert np.array_equal(robot.forward_dynamics(Q[i], V[i], tau[i], method="kane"), qdd[i])
    # threads (each with its own workspace) give the same numbers
    old = robodyn.get_num_threads()
    robodyn.set_num_threads(2)
    try:
        assert np.array_equal(robot.inverse_dynamics(np.repeat(Q, 40, 0), np.repeat(V, 40, 0),
                                                     np.repeat(A, 40, 0), method="kane")[::40],
                              tau)
    finally:
        robodyn.set_num_threads(old)


def test_bad_input_is_a_clear_error(rng):
    spec = R.random_floating(3, rng)
    robot = robodyn.Robot(spec)
    q, v, a = R.random_floating_state(spec, rng)
    with pytest.raises(ValueError, match=r"qd: expected shape \(9,\)"):
        robot.inverse_dynamics(q, q, a, method="kane")
    bad = q.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match="quaternion"):
        robot.inverse_dynamics(bad, v, a, method="kane")
    with pytest.raises(ValueError, match="quaternion"):
        robot.forward_dynamics(bad, v, a, method="kane")
    with pytest.raises(ValueError, match="method"):
        robot.inverse_dynamics(q, v, a, method="KANE")


# ---------------------------------------------------------------- operation counts

def test_op_counts_on_a_floating_tree(rng):
    """Counted (and checked against the double evaluation in C++) on a floating tree; trig
    calls: sin and cos per revolute joint, plus one sqrt for the quaternion's norm (and one
    per Cholesky pivot in kane_forward); Kane's ID costs about Newton-Euler's."""
    spec = R.random_floating(8, rng, "tree")
    robot = robodyn.Robot(spec)
    n_rev = sum(b.joint_type == "revolute" for b in spec.bodies)
    counts = {a: robot.op_counts(a) for a in ("rnea", "kane", "kane_forward", "aba")}
    print("floating tree (8 joints): " + ", ".join(f"{a} {c['mul']}/{c['add']}/{c['trig']}"
                                                   for a, c in counts.items()))
    assert counts["kane"]["trig"] == counts["rnea"]["trig"]
    assert counts["kane_forward"]["trig"] == counts["rnea"]["trig"] + robot.nv
    assert counts["kane"]["trig"] in (2 * n_rev, 2 * n_rev + 1)
    assert counts["kane"]["mul"] < 2 * counts["rnea"]["mul"]
    assert counts["kane_forward"]["mul"] > counts["kane"]["mul"]


def test_op_count_growth_on_floating_chains():
    """Prefixes of one floating chain (a generic arm on a free base): Kane's ID grows linearly
    (second differences zero), Kane's FD (inertia + Cholesky) cubically."""
    rng = np.random.default_rng(11)
    full = R.random_floating(9, rng, "chain", joint_types="revolute", armature=False,
                             damping=False, friction=False)
    counts = {"kane": [], "kane_forward": []}
    for n in range(4, 10):
        spec = R.ModelSpec(bodies=full.bodies[:n + 1], gravity=full.gravity)
        robot = robodyn.Robot(spec)
        for alg in counts:
            c = robot.op_counts(alg)
            counts[alg].append([c["mul"], c["add"]])
    k = np.array(counts["kane"])
    print("floating chain, n = 4..9 joints, kane mul/add:", k.tolist())
    assert not np.diff(k, 2, axis=0).any(), k
    assert (np.diff(k, axis=0) > 0).all()
    f = np.array(counts["kane_forward"])
    assert not np.diff(f, 4, axis=0).any() and np.diff(f, 3, axis=0).all(), f
