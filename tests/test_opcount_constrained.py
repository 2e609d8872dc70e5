"""Operation counts and the traced graph of constrained forward dynamics
(robodyn.codegen.constrained): the counts against the cost of each proximal iteration written
out from the solve's loops, the traced graph evaluated with NumPy against the core, the refusals.
The compiled kernel: tests/test_codegen_constrained.py."""

import numpy as np
import pytest

import robodyn
from robodyn.codegen import constrained as cc
from robodyn.codegen import kernels as ck
from reference import fourbars
from test_codegen import _counts_in_source
from reference import random_models as R


def pose(p=(0, 0, 0)):
    T = np.eye(4)
    T[:3, 3] = p
    return T


# constrained_counts(system) of test_legged_robots (docs/opcounts.md)
LEGGED_COUNTS = {"talos_data": {"mul": 10969, "add": 9536, "trig": 110},
                 "solo_description": {"mul": 4937, "add": 4159, "trig": 51}}


def planar(kind="axes", **kw):
    """The planar four-bar closed by a planar closure (2 rows) or a point (3 rows, one of
    them structurally zero)."""
    robot = robodyn.load_urdf(fourbars.PLANAR)
    extra = dict(axes=("x", "y")) if kind == "axes" else {}
    return robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(
        "coupler", "rocker", pose((0.5, 0, 0)), pose((0.4, 0, 0)), kind=kind, name="rod",
        **extra, **kw)])


def spatial():
    robot = robodyn.load_urdf(fourbars.SPATIAL)
    return robodyn.ConstrainedRobot(robot, [robodyn.LoopConstraint(
        "coupler", "rocker", pose((0.6, 0, 0)), pose((0, 0, 0.3)), kind="point", name="ball")])


def two_feet(rng, baumgarte=(0.0, 0.0)):
    """A random free-floating chain of 7 joints, its base and its tip welded to the world
    (12 rows, 13 velocity coordinates)."""
    spec = R.random_floating(7, rng, kind="chain")
    robot = robodyn.Robot(spec)
    links = list(robot.link_names)
    feet = [robodyn.LoopConstraint(links[k], None, kind="weld", name=f"foot{k % 8}",
                                   baumgarte=baumgarte) for k in (0, -1)]
    return robodyn.ConstrainedRobot(robot, feet)


def core_state(system, rng):
    robot = system.robot
    q0 = np.zeros(robot.nq)
    if robot.nq != robot.nv:
        q0[6] = 1.0
    q = robot.integrate(q0, rng.uniform(-1, 1, robot.nv), 1.0)
    return q, rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)


@pytest.mark.parametrize("make", [planar, spatial, lambda: two_feet(np.random.default_rng(3))],
                         ids=["planar_fourbar", "spatial_fourbar", "floating_two_feet"])
def test_each_proximal_iteration_costs_a_solve(make):
    """Iteration k >= 2 forms b = r + mu lam (m mul, m add) and solves with A's Cholesky factor
    (forward and back substitution: m(m-1) mul + 2m divisions, m(m-1) add); the first has
    lam = 0 (folded) and mu > 0 adds mu to A's diagonal (m add) over mu = 0."""
    system = make()
    m = system.rows
    c0 = cc.constrained_counts(system)
    c = [cc.constrained_counts(system, 0.1, k) for k in (1, 2, 3, 4)]
    assert c[0] == {"mul": c0["mul"], "add": c0["add"] + m, "trig": c0["trig"]}
    for a, b in zip(c[1:], c[2:]):
        assert b["mul"] - a["mul"] == m * (m + 2)
        assert b["add"] - a["add"] == m * m
        assert b["trig"] == a["trig"]
    assert c[1]["mul"] - c[0]["mul"] == m * (m + 2)  # lam_1 is a variable, mu lam_1 counted


def test_counts_grow_with_the_rows():
    """More rows cost more, and the constrained solve costs more than the tree's own forward
    dynamics (it contains it: bias, mass matrix and its factor)."""
    two, three = planar("axes"), spatial()
    c2 = cc.constrained_counts(two)
    assert c2["mul"] > two.robot.op_counts("forward_dynamics")["mul"]
    assert c2["mul"] > two.robot.op_counts("aba")["mul"]
    weld = two_feet(np.random.default_rng(3))
    assert cc.constrained_counts(weld)["mul"] > weld.robot.op_counts("forward_dynamics")["mul"]
    assert cc.constrained_counts(three)["mul"] > 0
    # the same numbers through robodyn.opcount
    counts = robodyn.opcount.robot_counts(two)
    assert counts["constrained_forward_dynamics"] == c2
    assert counts["aba"] == two.robot.op_counts("aba")


@pytest.mark.parametrize("mu, iterations", [(0.0, 1), (0.05, 3)])
def test_traced_graph_equals_the_core(mu, iterations, rng):
    """The traced and simplified graph, evaluated with NumPy, gives the core's qdd and lam
    (tol = 0: the core runs the same iterations); its operations are at most the counted
    ones (the tracer also shares common subexpressions)."""
    for system in (spatial(), two_feet(rng, baumgarte=(0.0, 3.0))):
        g, outs = ck.simplify(*cc.trace_constrained(system, mu, iterations))
        counted = cc.constrained_counts(system, mu, iterations)
        traced = g.counts(outs)
        assert 0 < traced["mul"] <= counted["mul"] and traced["add"] <= counted["add"]
        robot = system.robot
        for _ in range(3):
            q, v, tau = core_state(system, rng)
            qdd, lam = system.forward_dynamics(q, v, tau, mu, iterations, 0.0)
            got = ck.evaluate(g, outs, q, v, tau)[0]
            ref = np.concatenate([qdd, lam])
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
            assert got.shape == (robot.nv + system.rows,)


def test_refusals():
    """Rank-deficient constraints need mu > 0; bad mu or iterations; no kernel for Baumgarte kp
    on rotation rows (counted: an atan2 and a sqrt per weld); a Robot is not a constrained
    system; the size bound."""
    point = planar("point")  # the out-of-plane row of the point is zero
    with pytest.raises(ValueError, match="rank deficient.*mu > 0"):
        cc.constrained_counts(point)
    assert cc.constrained_counts(point, 1e-3, 2)["mul"] > 0
    for mu, it, what in ((-1.0, 1, "mu"), (float("nan"), 1, "mu"), (0.1, 0, "iterations"),
                         (0.0, 2, "iterations")):
        with pytest.raises(ValueError, match=what):
            cc.constrained_counts(planar(), mu, it)
        with pytest.raises(ValueError, match=what):
            cc.trace_constrained(planar(), mu, it)
    welded = two_feet(np.random.default_rng(1), baumgarte=(5.0, 1.0))
    # the rotation vectors of the residual: one atan2 and one sqrt per weld, counted as trig
    assert (cc.constrained_counts(welded)["trig"]
            == cc.constrained_counts(two_feet(np.random.default_rng(1)))["trig"] + 4)
    with pytest.raises(ValueError, match="foot0.*position gain kp on rotation rows"):
        cc.trace_constrained(welded)
    with pytest.raises(ValueError, match="ConstrainedRobot"):
        cc.constrained_counts(welded.robot)
    with pytest.raises(ck.CodeSizeError, match="over the limit"):
        cc.generate_constrained(planar(), max_operations=10)


def test_generated_source(tmp_path):
    """The generated text: one C function with the documented signature, the constraint rows
    named, deterministic, its operations those of the emitted lines; written with its
    header."""
    system = planar()
    a = cc.generate_constrained(system, name="fourbar")
    b = cc.generate_constrained(system, name="fourbar")
    assert a.source == b.source
    assert ("void robodyn_fourbar_constrained_forward_dynamics(const double* q, const double* v, "
            "const double* tau, double* qdd, double* lam) {") in a.source
    assert "lam[0..1]: 'rod' rows x, y" in a.source
    assert _counts_in_source(a.source, a.symbol) == a.counts
    assert a.counts == ck.Graph.counts(a.graph, a.outputs)
    code, cpp, hdr = cc.write_constrained(system, tmp_path, name="fourbar")
    assert cpp.read_text() == a.source and hdr.read_text() == a.header
    assert cpp.name == "fourbar_constrained.cpp"


@pytest.mark.parametrize("case", [
    ("talos_data/robots/talos_reduced.urdf", ("left_sole_link", "right_sole_link"), "weld"),
    ("solo_description/robots/solo12.urdf", ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
     "point")], ids=["talos_both_feet_welded", "solo12_four_point_feet"])
def test_legged_robots(case, rng):
    """Talos with both feet welded and Solo12 on four point feet (example-robot-data, peers
    tier): the traced graph equals the core at a consistent state, and the counts recorded in
    docs/opcounts.md."""
    pin = pytest.importorskip("pinocchio")
    from _load import example_robot_data_dir
    from reference.pinocchio_contacts import feet_case

    relative, feet, kind = case
    robot, system, *_ = feet_case(pin, str(example_robot_data_dir() / relative), feet, kind,
                                  rng)
    q0 = np.r_[0, 0, 1.0, 0, 0, 0, 1, np.zeros(robot.nv - 6)]
    g, outs = ck.simplify(*cc.trace_constrained(system))
    for _ in range(2):
        q = robot.integrate(q0, 0.3 * rng.standard_normal(robot.nv))
        v, tau = rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)
        ref = np.concatenate(system.forward_dynamics(q, v, tau))
        np.testing.assert_allclose(ck.evaluate(g, outs, q, v, tau)[0], ref, rtol=0,
                                   atol=1e-12 * np.abs(ref).max())
    counted = cc.constrained_counts(system)
    assert counted == LEGGED_COUNTS[relative.split("/")[0]]
    assert g.counts(outs)["mul"] <= counted["mul"]
