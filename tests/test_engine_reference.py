"""The dynamics engine against the pure-NumPy reference.

Reference: tests/reference/featherstone.py (written from Featherstone 2008, shares no code with
cpp/) on seeded random trees and chains from tests/reference/random_models.py, n = 1..30,
mixed revolute/prismatic joints on random axes, with armature, viscous and Coulomb friction and
extra fixed frames. Agreement is to 1e-10 relative to the size of the quantity.
"""

import itertools

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R
from _engine import (FD_RTOL, KINDS, RTOL, SIZES, batch_calls, close, make,
                     models)  # noqa: F401  (models is a fixture)


# ---------------------------------------------------------------- agreement with the reference

def _jacobians_by_index(robot, spec, q):
    count = len(spec.bodies) + len(spec.frames)  # robot.n is nv: larger with a free-flyer
    assert len(robot.link_names) == count
    return (np.array([robot.jacobian(q, i) for i in range(count)]),
            np.array([F.jacobian(spec, q, i) for i in range(count)]))


def _jacobians_by_name(robot, spec, q):
    names = robot.link_names
    assert names == [b.name for b in spec.bodies] + [f.name for f in spec.frames]
    return (np.array([robot.jacobian(q, name) for name in names]),
            np.array([F.jacobian(spec, q, i) for i in range(len(names))]))


QUANTITIES = {
    "rnea": lambda r, s, q, qd, qdd, tau: (r.inverse_dynamics(q, qd, qdd),
                                           F.rnea(s, q, qd, qdd)),
    "rnea_default_method": lambda r, s, q, qd, qdd, tau: (
        r.inverse_dynamics(q, qd, qdd, method="rnea"), F.rnea(s, q, qd, qdd)),
    "kane": lambda r, s, q, qd, qdd, tau: (r.inverse_dynamics(q, qd, qdd, method="kane"),
                                           F.rnea(s, q, qd, qdd)),
    "mass_matrix": lambda r, s, q, qd, qdd, tau: (r.mass_matrix(q), F.crba(s, q)),
    "bias_torques": lambda r, s, q, qd, qdd, tau: (r.bias_torques(q, qd), F.bias(s, q, qd)),
    "gravity_torques": lambda r, s, q, qd, qdd, tau: (r.gravity_torques(q),
                                                      F.gravity_torques(s, q)),
    "fd_aba": lambda r, s, q, qd, qdd, tau: (r.forward_dynamics(q, qd, tau),
                                             F.aba(s, q, qd, tau)),
    "fd_crba": lambda r, s, q, qd, qdd, tau: (r.forward_dynamics(q, qd, tau, method="crba"),
                                              F.aba(s, q, qd, tau)),
    "fd_kane": lambda r, s, q, qd, qdd, tau: (r.forward_dynamics(q, qd, tau, method="kane"),
                                              F.aba(s, q, qd, tau)),
    "forward_kinematics": lambda r, s, q, qd, qdd, tau: (r.forward_kinematics(q),
                                                         np.array(F.fk(s, q))),
    "jacobian_by_index": lambda r, s, q, qd, qdd, tau: _jacobians_by_index(r, s, q),
    "jacobian_by_name": lambda r, s, q, qd, qdd, tau: _jacobians_by_name(r, s, q),
    "kinetic_energy": lambda r, s, q, qd, qdd, tau: (r.kinetic_energy(q, qd),
                                                     F.kinetic_energy(s, q, qd)),
    "potential_energy": lambda r, s, q, qd, qdd, tau: (r.potential_energy(q),
                                                       F.potential_energy(s, q)),
}


@pytest.mark.parametrize("quantity", sorted(QUANTITIES))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_agrees_with_reference(models, kind, n, quantity):
    spec, robot, states = models[kind, n]
    for q, qd, qdd, tau in states:
        actual, expected = QUANTITIES[quantity](robot, spec, q, qd, qdd, tau)
        close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


@pytest.mark.parametrize("joint_types", ["revolute", "prismatic"])
@pytest.mark.parametrize("kind", KINDS)
def test_single_joint_type_and_z_axes(kind, joint_types, rng):
    # all-revolute / all-prismatic models, and axes exactly along z (the special-cased paths)
    for axes in ("random", "z"):
        spec = make(kind, 7, rng, joint_types, axes=axes, frames=2)
        robot = robodyn.Robot(spec)
        for _ in range(2):
            q, qd, qdd = R.random_state(spec, rng)
            tau = 10 * rng.standard_normal(7)
            for quantity, fn in QUANTITIES.items():
                actual, expected = fn(robot, spec, q, qd, qdd, tau)
                close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


def test_axis_aligned_origins(rng):
    # origins that are signed permutations and axes along +-x, +-y, +-z
    spec = R.random_tree(9, rng, frames=2)
    perms = [np.eye(3), np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]),
             np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0.0]])]
    for i, b in enumerate(spec.bodies):
        b.origin[:3, :3] = perms[i % 3]
        if i % 2:
            b.origin[:3, 3] = [0.0, 0.0, 0.2]
        b.axis = np.roll([0.0, 0.0, -1.0 if i % 4 == 1 else 1.0], i)
    robot = robodyn.Robot(spec)
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        tau = 10 * rng.standard_normal(9)
        for quantity, fn in QUANTITIES.items():
            actual, expected = fn(robot, spec, q, qd, qdd, tau)
            close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


def proper_signed_permutations():
    """The 24 signed permutation matrices with determinant +1 (the rotations that map the
    coordinate axes onto coordinate axes)."""
    out = []
    for p in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            P = np.zeros((3, 3))
            P[range(3), p] = signs
            if np.linalg.det(P) > 0:
                out.append(P)
    assert len(out) == 24 and len({P.tobytes() for P in out}) == 24
    return out


AXES = {f"{s}{c}": (1.0 if s == "+" else -1.0) * np.eye(3)[k]
        for k, c in enumerate("xyz") for s in "+-"}


def permutation_trees(axis, rng):
    """Four trees (two on a fixed base, two floating) whose 48 bodies after the first take
    each of the 24 proper signed permutations as their origin's rotation, once on a revolute
    joint and once on a prismatic one, every joint about `axis`; offsets with every zero
    pattern. The first body (about `axis`, origin without rotation) hangs on the base or the
    free-flyer; the others form a binary tree below it (parent (k - 1) // 2 among them:
    branches, so each subtree's columns are several runs), half of the revolute joints
    without armature (the aba's kZ2 transport).

    The bodies' link kinds are not visible from Python. In build_model (model.cpp), body i's
    constant rotation is Rc = Ra_p' origin_R Ra_i with Ra the frame taking z onto the joint
    axis, a signed permutation for an axis along +-x, +-y, +-z (axis_frame); the turn psi that
    re-aims a frame is skipped when the child's Rc is already a signed permutation, and the
    angle offset qoff is taken only out of a general Rc. So every body below the first has
    Rc = Ra' P Ra (Ra the same for the body and its parent): the 24 P give the 24 signed
    permutations as Rc, for each joint type, classified Permutation: LinkKind RevPerm or
    PrisPerm. cpp/tests/test_link.cpp builds the same construction and asserts exactly that
    (m.link, m.Rc, m.qoff) before checking every Xup operation on it."""
    perms = proper_signed_permutations()
    trees = []
    for t in range(4):
        bodies = []
        floating = t % 2 == 1
        if floating:
            mass = rng.uniform(2.0, 10.0)
            bodies.append(R.Body(name="base", joint_name="root_joint", parent=-1,
                                 joint_type="floating", axis=np.array([0.0, 0.0, 1.0]),
                                 origin=np.eye(4), mass=mass, com=rng.normal(0.0, 0.1, 3),
                                 inertia=R.random_inertia(mass, rng)))
        first = len(bodies)
        for k in range(-1, 12):  # k = -1: the first body
            g = 12 * t + k  # 0..47 over the four trees
            jtype = "revolute" if k < 0 or g % 2 == 0 else "prismatic"
            origin = np.eye(4)
            if k >= 0:
                origin[:3, :3] = perms[g // 2]
            zeros = (g // 2 + 3 * (g % 2)) % 8  # bit c: component c of the offset is 0
            origin[:3, 3] = [0.0 if zeros >> c & 1 else rng.uniform(-0.4, 0.4) for c in range(3)]
            mass = rng.uniform(0.5, 5.0)
            lim = np.pi if jtype == "revolute" else 0.5
            bodies.append(R.Body(
                name=f"link{len(bodies)}", joint_name=f"joint{len(bodies)}",
                parent=first - 1 if k < 0 else first + (0 if k == 0 else 1 + (k - 1) // 2),
                joint_type=jtype, axis=AXES[axis].copy(), origin=origin, mass=mass,
                com=rng.normal(0.0, 0.1, 3), inertia=R.random_inertia(mass, rng),
                armature=0.0 if jtype == "revolute" and g % 4 == 0 else rng.uniform(0.01, 0.1),
                damping=rng.uniform(0.01, 0.5), friction=rng.uniform(0.01, 0.5),
                lower=-lim, upper=lim))
        pose = np.eye(4)
        pose[:3, :3] = perms[5 * t + 3]
        pose[:3, 3] = [0.1, 0.0, -0.2]
        frames = [R.Frame(name="tool", parent=len(bodies) - 1, pose=pose)]
        trees.append(R.ModelSpec(bodies=bodies, frames=frames, name=f"perm_{axis}_{t}"))
    return trees


def permutation_states(spec, rng, count):
    """`count` random (q, qd, qdd, tau) of a permutation tree (floating or not)."""
    floating = spec.bodies[0].joint_type == "floating"
    out = []
    for _ in range(count):
        q, qd, qdd = (R.random_floating_state if floating else R.random_state)(spec, rng)
        out.append((q, qd, qdd, 10 * rng.standard_normal(len(qd))))
    return out


@pytest.mark.parametrize("axis", sorted(AXES))
def test_every_signed_permutation_origin_on_every_axis(axis, rng):
    # every quantity against the reference on trees whose constant rotations are the 24
    # signed permutations, revolute and prismatic, on joints about +-x, +-y, +-z
    # (permutation_trees): a relabelling or sign of any one of them that goes wrong in one
    # algorithm fails here
    for spec in permutation_trees(axis, rng):
        robot = robodyn.Robot(spec)
        for q, qd, qdd, tau in permutation_states(spec, rng, 2):
            for quantity, fn in QUANTITIES.items():
                actual, expected = fn(robot, spec, q, qd, qdd, tau)
                close(actual, expected, FD_RTOL if quantity.startswith("fd_") else RTOL)


@pytest.mark.parametrize("floating", [False, True])
def test_signed_permutation_trees_mass_matrix_symmetric_and_batches(floating, rng):
    # the permutation trees' mass matrix exactly symmetric, single and batch; batch rows
    # (17: the two-row sweep and an odd last row) equal single calls
    for axis in sorted(AXES):
        for spec in permutation_trees(axis, rng)[int(floating)::2]:
            _check_symmetry_and_batches(spec, rng)


def _check_symmetry_and_batches(spec, rng):
    robot = robodyn.Robot(spec)
    states = permutation_states(spec, rng, 17)
    Q, QD, QDD, TAU = (np.array(x) for x in zip(*states))
    M = robot.mass_matrix(Q)
    assert np.array_equal(M, np.swapaxes(M, 1, 2)), spec.name
    for k in range(len(Q)):
        Mk = robot.mass_matrix(Q[k])
        assert np.array_equal(Mk, Mk.T), spec.name
    for name, (batch, singles) in batch_calls(robot, Q, QD, QDD, TAU).items():
        close(batch, np.array(singles), 1e-13)


def test_jacobian_negative_index_and_name_agree(models):
    spec, robot, states = models["tree", 9]
    q = states[0][0]
    count = len(robot.link_names)
    for i, name in enumerate(robot.link_names):
        J = robot.jacobian(q, i)
        np.testing.assert_array_equal(robot.jacobian(q, name), J)
        np.testing.assert_array_equal(robot.jacobian(q, i - count), J)
        np.testing.assert_array_equal(robot.jacobian(q, link=name), J)


def test_frame_on_the_base(rng):
    spec = R.random_tree(5, rng, frames=2)
    spec.frames[1].parent = -1
    robot = robodyn.Robot(spec)
    q = R.random_state(spec, rng)[0]
    T = robot.forward_kinematics(q)
    close(T[-1], spec.frames[1].pose, 1e-14)
    close(robot.forward_kinematics(q + 1)[-1], spec.frames[1].pose, 1e-14)
    assert np.all(robot.jacobian(q, "frame2") == 0)
    assert np.all(robot.jacobian(q, -1) == 0)


def test_energies_are_python_floats(models):
    spec, robot, states = models["chain", 3]
    q, qd, _, _ = states[0]
    assert type(robot.kinetic_energy(q, qd)) is float
    assert type(robot.potential_energy(q)) is float


# ---------------------------------------------------------------- from_dh against the reference

def dh_rows(n, rng, prismatic=(), armature=True):
    rows = R.random_dh_chain(n, rng, armature=armature)
    for i in prismatic:
        rows[i]["joint"] = "prismatic"
    return rows


DH_CASES = [
    ("standard", 1, ()), ("standard", 6, ()), ("standard", 6, (1, 4)), ("standard", 9, (0, 8)),
    ("modified", 1, (0,)), ("modified", 6, ()), ("modified", 6, (2, 3)), ("modified", 9, (5,)),
]


@pytest.mark.parametrize("convention, n, prismatic", DH_CASES)
def test_from_dh_matches_reference_dh_to_spec(convention, n, prismatic, rng):
    rows = dh_rows(n, rng, prismatic)
    assert all(r["theta"] != 0 and r["d"] != 0 for r in rows)  # joint offsets present
    robot = robodyn.from_dh(rows, convention=convention)
    spec = R.dh_to_spec(rows, convention)
    ref = robodyn.Robot(spec)
    assert robot.n == n
    names = robot.link_names
    for _ in range(3):
        q, qd, qdd = R.random_state(spec, rng)
        tau = 10 * rng.standard_normal(n)
        close(robot.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd))
        close(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd))
        close(robot.mass_matrix(q), ref.mass_matrix(q))
        close(robot.gravity_torques(q), ref.gravity_torques(q))
        close(robot.forward_dynamics(q, qd, tau), ref.forward_dynamics(q, qd, tau), FD_RTOL)
        close(robot.kinetic_energy(q, qd), ref.kinetic_energy(q, qd))
        close(robot.potential_energy(q), ref.potential_energy(q))
        # the DH frames: robodyn names them <robot>_dh<i>, the reference dh<i> (fk index n+i-1)
        fk, fk_ref = robot.forward_kinematics(q), ref.forward_kinematics(q)
        for i in range(1, n + 1):
            k = names.index(f"dh_robot_dh{i}")
            close(fk[k], fk_ref[n + i - 1], 1e-12)
            close(robot.jacobian(q, f"dh_robot_dh{i}"), ref.jacobian(q, f"dh{i}"))


def test_from_dh_armature_on_the_mass_matrix_diagonal(rng):
    rows = dh_rows(5, rng, prismatic=(2,))
    bare = [{k: v for k, v in r.items() if k != "armature"} for r in rows]
    q = rng.uniform(-np.pi, np.pi, 5)
    M = robodyn.from_dh(rows).mass_matrix(q)
    M0 = robodyn.from_dh(bare).mass_matrix(q)
    close(M - M0, np.diag([r["armature"] for r in rows]))
