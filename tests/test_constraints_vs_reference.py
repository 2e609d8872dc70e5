"""robodyn's constraint kinematics (C++, ConstrainedRobot) against the pure-NumPy reference
(tests/reference/constraints.py) on seeded random trees, fixed and floating, with loops of every
kind between links, extra frames and the world."""

import numpy as np
import pytest

import robodyn
from reference import constraints as C
from reference import random_models as R

KINDS = [("point", None), ("weld", None), ("axes", ("rx", "ry", "x", "y", "z")),
         ("axes", ("rz", "x", "y")), ("axes", ("ry",))]


def model(base, rng):
    if base == "fixed":
        spec = R.random_tree(7, rng, frames=2)
        q, v, a = R.random_state(spec, rng)
    else:
        spec = R.random_floating(6, rng, "tree", frames=2)
        q, v, a = R.random_floating_state(spec, rng)
    return spec, q, v, a


def loops(spec, rng):
    names = [b.name for b in spec.bodies] + [None]
    out = []
    for k, (kind, axes) in enumerate(KINDS):
        a, b = rng.choice(len(names), size=2, replace=False)
        out.append(robodyn.LoopConstraint(names[a], names[b], R.random_pose(rng),
                                          R.random_pose(rng), kind, axes, name=f"c{k}"))
    return out


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("seed", range(4))
def test_kinematics_match_the_reference(base, seed):
    rng = np.random.default_rng(seed)
    spec, q, v, _ = model(base, rng)
    cs = loops(spec, rng)
    system = robodyn.ConstrainedRobot(robodyn.Robot(spec), cs)
    scale = 1.0 + np.abs(C.jacobian(spec, q, cs)).max() * (1.0 + np.abs(v).max()) ** 2
    np.testing.assert_allclose(system.residual(q), C.residual(spec, q, cs), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(system.jacobian(q), C.jacobian(spec, q, cs), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(system.bias_acceleration(q, v),
                               C.bias_acceleration(spec, q, v, cs), rtol=1e-10,
                               atol=1e-12 * scale)


def test_frames_on_links_merged_by_fixed_joints(rng):
    # the random tree's extra frames are links welded to bodies (or to the base)
    spec, q, v, _ = model("fixed", rng)
    frames = [f.name for f in spec.frames]
    cs = [robodyn.LoopConstraint(frames[0], spec.bodies[3].name, R.random_pose(rng),
                                 R.random_pose(rng), "weld", name="w"),
          robodyn.LoopConstraint(spec.bodies[5].name, frames[1], R.random_pose(rng),
                                 R.random_pose(rng), "point", name="p")]
    try:
        system = robodyn.ConstrainedRobot(robodyn.Robot(spec), cs)
    except ValueError as e:
        pytest.skip(f"refused: {e}")
    np.testing.assert_allclose(system.residual(q), C.residual(spec, q, cs), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(system.jacobian(q), C.jacobian(spec, q, cs), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(system.bias_acceleration(q, v),
                               C.bias_acceleration(spec, q, v, cs), rtol=1e-10, atol=1e-10)
