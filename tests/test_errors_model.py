"""Bad input in the model description: ValueError naming the body for each kind of
non-physical or malformed body; a built Robot cannot be constructed again.
"""

import math

import numpy as np
import pytest

import robodyn
from reference import featherstone as F
from reference import random_models as R


# ---------------------------------------------------------------- model validation

def spec3(rng):
    return R.random_chain(3, rng)


def mutate(**changes):
    def apply(spec):
        body = spec.bodies[1]
        for key, value in changes.items():
            if callable(value):
                value(body)
            else:
                setattr(body, key, value)
    return apply


def _set(attr, index, value):
    def f(body):
        a = np.array(getattr(body, attr), dtype=float)
        a[index] = value
        setattr(body, attr, a)
    return f


INVALID = {
    "negative_mass": (mutate(mass=-1.0), "mass"),
    "nan_mass": (mutate(mass=math.nan), "finite"),
    "non_symmetric_inertia": (mutate(inertia=_set("inertia", (0, 1), 0.01)), "symmetric"),
    "negative_principal_moment": (mutate(inertia=np.diag([-0.01, 0.1, 0.1])), "semidefinite"),
    "triangle_inequality": (mutate(inertia=np.diag([0.01, 0.02, 0.5])), "triangle"),
    "nan_inertia": (mutate(inertia=_set("inertia", (2, 2), math.nan)), "finite"),
    "nan_origin": (mutate(origin=_set("origin", (0, 3), math.nan)), "finite"),
    "nan_origin_rotation": (mutate(origin=_set("origin", (1, 1), math.nan)), "finite"),
    "inf_origin": (mutate(origin=_set("origin", (2, 3), math.inf)), "finite"),
    "nan_axis": (mutate(axis=_set("axis", 1, math.nan)), "finite"),
    "nan_com": (mutate(com=_set("com", 2, math.nan)), "finite"),
    "zero_axis": (mutate(axis=np.zeros(3)), "axis"),
    "tiny_axis": (mutate(axis=np.full(3, 1e-14)), "axis"),
    "parent_is_self": (mutate(parent=1), "parent"),
    "parent_after": (mutate(parent=2), "parent"),
    "parent_below_base": (mutate(parent=-2), "parent"),
    "unknown_joint_type": (mutate(joint_type="spherical"), "joint type"),
    "scaled_origin": (mutate(origin=_set("origin", (slice(0, 3), slice(0, 3)), 2 * np.eye(3))),
                      "rotation"),
    "reflected_origin": (mutate(origin=_set("origin", (2, 2), -1.0)), "rotation"),
    "sheared_origin": (mutate(origin=_set("origin", (0, 1), 0.3)), "rotation"),
    "negative_armature": (mutate(armature=-0.1), "armature"),
    "inf_armature": (mutate(armature=math.inf), "armature"),
    "negative_damping": (mutate(damping=-0.1), "damping"),
    "negative_friction": (mutate(friction=-0.1), "friction"),
    "inverted_limits": (mutate(lower=1.0, upper=-1.0), "limits"),
    "nan_limit": (mutate(lower=math.nan), "limits"),
    "negative_velocity_limit": (mutate(velocity=-1.0), "velocity"),
    "negative_effort_limit": (mutate(effort=-1.0), "effort"),
    "wrong_axis_length": (mutate(axis=np.ones(2)), "3"),
    "wrong_origin_shape": (mutate(origin=np.eye(3)), "4"),
}


def invalid_cases():
    for name, (change, match) in INVALID.items():
        yield pytest.param(name, change, match, id=name)


@pytest.mark.parametrize("name, change, match", list(invalid_cases()))
def test_invalid_body_raises_value_error_naming_it(name, change, match, rng):
    spec = spec3(rng)
    if name == "reflected_origin":
        spec.bodies[1].origin[:3, :3] = np.eye(3)
    change(spec)
    with pytest.raises(ValueError, match=match) as info:
        robodyn.Robot(spec)
    assert "link2" in str(info.value), str(info.value)


def test_unknown_joint_type_is_value_error(rng):
    spec = spec3(rng)
    spec.bodies[1].joint_type = "spherical"
    with pytest.raises(ValueError, match="unknown joint type 'spherical'"):
        robodyn.Robot(spec)


def test_zero_principal_moment_is_accepted(rng):
    # a thin rod (Stanford arm link 5 style): one principal moment exactly zero
    spec = spec3(rng)
    Rt = R.random_rotation(rng)
    spec.bodies[1].inertia = Rt @ np.diag([0.0, 0.04, 0.04]) @ Rt.T
    spec.bodies[2].inertia = np.diag([0.03, 0.03, 0.0])
    robot = robodyn.Robot(spec)
    q, qd, qdd = R.random_state(spec, rng)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd),
                               rtol=1e-10, atol=1e-10)


def test_massless_last_link_is_singular(rng):
    spec = spec3(rng)
    last = spec.bodies[-1]
    last.mass, last.inertia, last.com, last.armature = 0.0, np.zeros((3, 3)), np.zeros(3), 0.0
    with pytest.raises(ValueError, match="singular"):
        robodyn.Robot(spec)
    # armature on that joint makes it regular again
    last.armature = 0.05
    robodyn.Robot(spec)


def test_massless_intermediate_link_is_fine(rng):
    spec = spec3(rng)
    mid = spec.bodies[1]
    mid.mass, mid.inertia, mid.com = 0.0, np.zeros((3, 3)), np.zeros(3)
    robot = robodyn.Robot(spec)
    q, qd, qdd = R.random_state(spec, rng)
    np.testing.assert_allclose(robot.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd),
                               rtol=1e-10, atol=1e-10)


def test_empty_model_and_non_spec_rejected():
    with pytest.raises(ValueError):
        robodyn.Robot(R.ModelSpec(bodies=[]))
    with pytest.raises(TypeError):
        robodyn.Robot({"bodies": []})


def test_invalid_frame_rejected(rng):
    spec = R.random_chain(3, rng, frames=1)
    spec.frames[0].parent = 3
    with pytest.raises(ValueError, match="frame1"):
        robodyn.Robot(spec)
    spec.frames[0].parent = 0
    spec.frames[0].pose = 2 * np.eye(4)
    with pytest.raises(ValueError, match="frame1"):
        robodyn.Robot(spec)


def test_init_again_on_a_built_robot_is_refused(rng):
    """A Robot is immutable: pybind11 ignores a second construction of the C++ core, so
    Robot.__init__ on a built robot would swap the description (name, limits, spec) and keep
    the old dynamics. It is a RuntimeError, and the robot is left as it was."""
    robot = robodyn.Robot(R.random_chain(3, rng))
    other = R.random_tree(5, rng)
    q, qd, qdd = (rng.uniform(-1, 1, 3) for _ in range(3))
    tau, name, spec = robot.inverse_dynamics(q, qd, qdd), robot.name, robot.spec
    with pytest.raises(RuntimeError, match="immutable"):
        robot.__init__(other)
    with pytest.raises(RuntimeError, match="immutable"):
        robodyn.Robot.__init__(robot, spec)
    assert robot.n == 3 and robot.name == name and len(robot.spec.bodies) == 3
    assert len(robot.joint_names) == 3 and robot.effort_limits.shape == (3,)
    np.testing.assert_array_equal(robot.inverse_dynamics(q, qd, qdd), tau)
    # a failed first construction leaves nothing built: __init__ may then be called again
    bad = R.random_chain(3, rng)
    bad.bodies[1].mass = -1.0
    fresh = robodyn.Robot.__new__(robodyn.Robot)
    with pytest.raises(ValueError):
        fresh.__init__(bad)
    fresh.__init__(spec)
    np.testing.assert_array_equal(fresh.inverse_dynamics(q, qd, qdd), tau)
