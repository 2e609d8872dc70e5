"""The pure-NumPy loop-constraint reference (tests/reference/constraints.py), checked on its own.

It is the oracle for robodyn.constraints, so it is checked against what it does not share: finite
differences of the residual along featherstone.integrate (J), of J v along a motion (gamma), a
second difference of the translation residual (J qdd + gamma), the relative twist from a forward
pass of body velocities (J v), and closed forms (a loop closed by construction, a world point).
"""

import numpy as np
import pytest

from reference import constraints as C
from reference import featherstone as F
from reference import random_models as R

KINDS = [("point", None), ("weld", None), ("axes", ("rx", "ry", "x", "y", "z")),
         ("axes", ("rz", "x", "y"))]


def close(a, b, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def model(base, rng):
    """A random tree with two extra frames, fixed or on a free-flyer, and a random state."""
    if base == "fixed":
        spec = R.random_tree(6, rng, frames=2)
        q, v, a = R.random_state(spec, rng)
    else:
        spec = R.random_floating(5, rng, "tree", frames=2)
        q, v, a = R.random_floating_state(spec, rng)
    return spec, q, v, a


def random_loops(spec, rng):
    """One loop of each kind between random links, frames or the world, with random poses."""
    names = [b.name for b in spec.bodies] + [f.name for f in spec.frames] + [None]
    loops = []
    for kind, axes in KINDS:
        a, b = rng.choice(len(names), size=2, replace=False)
        loops.append(C.loop(names[a], names[b], R.random_pose(rng), R.random_pose(rng),
                            kind, axes))
    return loops


def along(spec, q, v, t):
    return F.integrate(spec, q, v, t)


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_rows_of_each_kind(base, rng):
    spec, q, _, _ = model(base, rng)
    names = [b.name for b in spec.bodies]
    T1, T2 = R.random_pose(rng), R.random_pose(rng)
    weld = C.loop(names[1], names[3], T1, T2, "weld")
    full = C.residual(spec, q, [weld])
    Jfull = C.jacobian(spec, q, [weld])
    for kind, axes in KINDS:
        lp = C.loop(names[1], names[3], T1, T2, kind, axes)
        close(C.residual(spec, q, [lp]), full[list(lp.rows)], atol=0)
        close(C.jacobian(spec, q, [lp]), Jfull[list(lp.rows)], atol=0)
    assert C.loop("a", "b", kind="axes", axes=("z", "rx")).rows == (0, 5)
    # the stack follows the order of the loops
    two = C.residual(spec, q, [weld, C.loop(names[2], None)])
    assert two.shape == (9,)
    close(two[:6], full, atol=0)


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_translation_rows_are_the_derivative_of_the_residual(base, rng):
    spec, q, v, _ = model(base, rng)
    loops = random_loops(spec, rng)
    J = C.jacobian(spec, q, loops)
    h = 1e-6
    dphi = (C.residual(spec, along(spec, q, v, h), loops)
            - C.residual(spec, along(spec, q, v, -h), loops)) / (2 * h)
    k = 0
    for lp in loops:
        for r in lp.rows:
            if r >= 3:
                close(J[k] @ v, dphi[k], rtol=1e-7, atol=1e-7)
            k += 1


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_angular_rows_rotate_the_relative_orientation(base, rng):
    # d(R1' R2)/dt = -skew(J_ang v) R1' R2, with J_ang the weld's first three rows
    spec, q, v, _ = model(base, rng)
    names = [b.name for b in spec.bodies] + [f.name for f in spec.frames]
    for a, b in [(names[0], names[-1]), (names[2], None), (None, names[4])]:
        lp = C.loop(a, b, R.random_pose(rng), R.random_pose(rng), "weld")

        def R12(t):
            qt = along(spec, q, v, t)
            R1, _ = C.frame_pose(spec, qt, lp.body1, lp.frame1)
            R2, _ = C.frame_pose(spec, qt, lp.body2, lp.frame2)
            return R1.T @ R2

        h = 1e-6
        dR = (R12(h) - R12(-h)) / (2 * h)
        w = C.jacobian(spec, q, [lp])[:3] @ v
        close(dR, -F.skew(w) @ R12(0.0), rtol=1e-7, atol=1e-7)


def test_angular_rows_are_the_derivative_of_the_log_when_aligned(rng):
    # a weld whose frames coincide at q: d log(R2' R1)/dt = J_ang v there
    spec, q, v, _ = model("fixed", rng)
    poses = F.fk(spec, q)
    T2 = R.random_pose(rng)
    T1 = np.linalg.inv(poses[1]) @ poses[4] @ T2
    lp = C.loop(spec.bodies[1].name, spec.bodies[4].name, T1, T2, "weld")
    close(C.residual(spec, q, [lp]), np.zeros(6), atol=1e-12)
    h = 1e-6
    dphi = (C.residual(spec, along(spec, q, v, h), [lp])
            - C.residual(spec, along(spec, q, v, -h), [lp])) / (2 * h)
    close(C.jacobian(spec, q, [lp]) @ v, dphi, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_jacobian_times_v_is_the_relative_twist(base, rng):
    # J from featherstone.jacobian columns; the twist from a forward pass of body velocities
    spec, q, v, _ = model(base, rng)
    loops = random_loops(spec, rng)
    J = C.jacobian(spec, q, loops)
    twist = np.concatenate([C.relative_twist(spec, q, v, lp)[list(lp.rows)] for lp in loops])
    close(J @ v, twist)


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_bias_acceleration_is_the_rate_of_the_jacobian(base, rng):
    # gamma = d/dt (J(q(t))) v with v held: a central difference along integrate
    spec, q, v, _ = model(base, rng)
    loops = random_loops(spec, rng)
    h = 1e-5
    dJv = (C.jacobian(spec, along(spec, q, v, h), loops)
           - C.jacobian(spec, along(spec, q, v, -h), loops)) @ v / (2 * h)
    close(C.bias_acceleration(spec, q, v, loops), dJv, rtol=1e-7, atol=1e-7)


def test_translation_acceleration_by_a_second_difference(rng):
    # q(t) = q + v t + a t^2 / 2: d^2/dt^2 of a translation residual is J a + gamma
    spec, q, v, a = model("fixed", rng)
    loops = [lp for lp in random_loops(spec, rng) if lp.rows == (3, 4, 5)]
    h = 1e-4
    path = [q + v * t + 0.5 * a * t * t for t in (-h, 0.0, h)]
    phi = [C.residual(spec, p, loops) for p in path]
    d2 = (phi[0] - 2 * phi[1] + phi[2]) / h**2
    expect = C.jacobian(spec, q, loops) @ a + C.bias_acceleration(spec, q, v, loops)
    close(d2, expect, rtol=1e-5, atol=1e-5)


def test_a_world_point_is_the_featherstone_jacobian(rng):
    # the world origin (frame 1) holding body 2's origin: phi = minus the body's world
    # position, J = minus the world-aligned linear rows of featherstone.jacobian
    spec, q, _, _ = model("fixed", rng)
    lp = C.loop(None, spec.bodies[5].name)
    close(C.residual(spec, q, [lp]), -F.fk(spec, q)[5][:3, 3])
    close(C.jacobian(spec, q, [lp]), -F.jacobian(spec, q, 5)[3:])


def test_a_loop_closed_by_construction_has_zero_residual(rng):
    # two links' frames placed at the same world pose: every kind reads zero
    spec, q, _, _ = model("floating", rng)
    poses = F.fk(spec, q)
    T2 = R.random_pose(rng)
    T1 = np.linalg.inv(poses[2]) @ poses[5] @ T2
    for kind, axes in KINDS:
        lp = C.loop(spec.bodies[2].name, spec.bodies[5].name, T1, T2, kind, axes)
        close(C.residual(spec, q, [lp]), np.zeros(len(lp.rows)), atol=1e-12)
    # a revolute loop turned about its free axis stays closed: rows rx, ry, x, y, z read zero
    lp = C.loop(spec.bodies[2].name, spec.bodies[5].name, T1,
                T2 @ np.block([[F.rot([0, 0, 1.0], 2.0), np.zeros((3, 1))],
                               [np.zeros((1, 3)), np.ones((1, 1))]]),
                "axes", ("rx", "ry", "x", "y", "z"))
    close(C.residual(spec, q, [lp]), np.zeros(5), atol=1e-12)
    full = C.residual(spec, q, [lp._replace(rows=tuple(range(6)))])
    close(full[2], -2.0)


def test_so3_log_inverts_exp(rng):
    for angle in (0.0, 1e-9, 0.3, 3.0, np.pi - 1e-6):
        axis = R.random_unit(rng)
        close(C.so3_log(F.so3_exp(angle * axis)), angle * axis, atol=1e-9)


def test_unknown_link_is_refused(rng):
    spec, q, _, _ = model("fixed", rng)
    with pytest.raises(ValueError, match="no link named 'nope'"):
        C.residual(spec, q, [C.loop("nope", None)])
