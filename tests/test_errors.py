"""Bad input at the Python boundary and in the model description.

- every state argument of every public method: wrong shapes and lengths, 3-D arrays,
  mismatched batch sizes, strings, None, object and complex arrays, NaN and inf raise
  ValueError naming the argument (q, qd, qdd, tau, out) and the expected shape; ints, bools,
  float32 and lists are converted;
- out= of the wrong shape, dtype, layout or writeability, unknown methods, bad link arguments;
- model validation: ValueError naming the body for each kind of non-physical or malformed body;
- a hypothesis fuzz over shapes, dtypes, values, layouts and argument kinds of every public
  method: only ever a result, ValueError or TypeError.
"""

import ctypes
import ctypes.util
import math
import platform
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robodyn
from reference import featherstone as F
from reference import random_models as R

N = 4


@pytest.fixture(scope="module")
def robot():
    spec = R.random_tree(N, np.random.default_rng(5), frames=1)
    return robodyn.Robot(spec)


# ---------------------------------------------------------------- state arguments

# method -> (names of its state arguments, call(robot, *args))
METHODS = {
    "inverse_dynamics": (("q", "qd", "qdd"), lambda r, *a: r.inverse_dynamics(*a)),
    "inverse_dynamics_kane": (("q", "qd", "qdd"),
                              lambda r, *a: r.inverse_dynamics(*a, method="kane")),
    "forward_dynamics": (("q", "qd", "tau"), lambda r, *a: r.forward_dynamics(*a)),
    "forward_dynamics_crba": (("q", "qd", "tau"),
                              lambda r, *a: r.forward_dynamics(*a, method="crba")),
    "forward_dynamics_kane": (("q", "qd", "tau"),
                              lambda r, *a: r.forward_dynamics(*a, method="kane")),
    "mass_matrix": (("q",), lambda r, *a: r.mass_matrix(*a)),
    "bias_torques": (("q", "qd"), lambda r, *a: r.bias_torques(*a)),
    "gravity_torques": (("q",), lambda r, *a: r.gravity_torques(*a)),
    "coriolis_matrix": (("q", "qd"), lambda r, *a: r.coriolis_matrix(*a)),
    "kinetic_energy": (("q", "qd"), lambda r, *a: r.kinetic_energy(*a)),
    "potential_energy": (("q",), lambda r, *a: r.potential_energy(*a)),
    "forward_kinematics": (("q",), lambda r, *a: r.forward_kinematics(*a)),
    "jacobian": (("q",), lambda r, *a: r.jacobian(*a, 1)),
}

BAD = {
    "short": lambda: np.zeros(N - 1),
    "long": lambda: np.zeros(N + 1),
    "scalar": lambda: 0.5,
    "0-d": lambda: np.array(0.5),
    "3-d": lambda: np.zeros((2, 1, N)),
    "column": lambda: np.zeros((N, 1)),
    "batch_wrong_width": lambda: np.zeros((3, N + 1)),
    "empty": lambda: np.zeros(0),
    "string": lambda: "0 0 0 0",
    "bytes": lambda: b"\0" * 8 * N,
    "None": lambda: None,
    "dict": lambda: {"q": np.zeros(N)},
    "ragged": lambda: [[0.0] * N, [0.0] * (N - 1)],
    "object_array": lambda: np.zeros(N).astype(object),
    "object_list": lambda: [0.0, None, 1.0, 2.0][:N] + [0.0] * (N - 4),
    "string_array": lambda: np.array(["0"] * N),
    "complex_array": lambda: np.zeros(N, dtype=complex),
    "complex_list": lambda: [1j] * N,
    "nan": lambda: np.array([0.0, np.nan] + [0.0] * (N - 2)),
    "inf": lambda: np.array([0.0] * (N - 1) + [np.inf]),
    "-inf_list": lambda: [-math.inf] + [0.0] * (N - 1),
    "nan_in_batch_row": lambda: np.vstack([np.zeros(N), np.full(N, np.nan)]),
}



def good_args(names, rng, rows=None):
    shape = (N,) if rows is None else (rows, N)
    return [rng.uniform(-1, 1, shape) for _ in names]


def bad_cases():
    for method, (names, _) in METHODS.items():
        for k, name in enumerate(names):
            for bad in BAD:
                yield pytest.param(method, k, bad, id=f"{method}-{name}-{bad}")


@pytest.mark.parametrize("method, k, bad", list(bad_cases()))
def test_bad_argument_raises_value_error_naming_it(robot, method, k, bad, rng):
    names, call = METHODS[method]
    args = good_args(names, rng)
    args[k] = BAD[bad]()
    with pytest.raises(ValueError) as info:
        call(robot, *args)
    assert str(info.value).startswith(f"{names[k]}: "), str(info.value)


def shape_cases():
    for method in ("inverse_dynamics", "forward_dynamics", "mass_matrix", "kinetic_energy"):
        names = METHODS[method][0]
        for k, name in enumerate(names):
            for bad in BAD:
                yield pytest.param(method, k, bad, id=f"{method}-{name}-{bad}")


@pytest.mark.parametrize("method", sorted(METHODS))
def test_nan_or_inf_in_a_batch_names_the_row_and_entry(robot, method, rng):
    """The finiteness check reads a whole batch in one branch-free pass; the error still names
    the first non-finite value: its row and entry in a batch, its index in a single state."""
    names, call = METHODS[method]
    for k in range(len(names)):
        for bad, (row, entry) in ((np.nan, (5, 2)), (-np.inf, (0, N - 1)), (np.inf, (6, 0))):
            args = good_args(names, rng, rows=7)
            args[k][row, entry] = bad
            args[k][6, 1] = np.nan  # a later one: the first is named
            with pytest.raises(ValueError,
                               match=rf"^{names[k]}: contains NaN or inf at row {row}, "
                                     rf"entry {entry} \(.*\(N, {N}\)"):
                call(robot, *args)
        args = good_args(names, rng)
        args[k][3] = np.nan
        with pytest.raises(ValueError, match=rf"^{names[k]}: contains NaN or inf at index 3 "):
            call(robot, *args)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="FE_DOWNWARD's value is x86's")
def test_finite_inputs_accepted_under_downward_rounding(robot, rng):
    """The finiteness check ORs the bits of x - x, a zero for a finite x: -0 when the
    floating-point rounding mode is downward (a caller's fesetround). Finite inputs are still
    accepted then, and NaN still refused."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    fe_downward = 0x400
    names, call = METHODS["inverse_dynamics"]
    single, batch = good_args(names, rng), good_args(names, rng, rows=7)
    old = libm.fegetround()
    try:
        assert libm.fesetround(fe_downward) == 0
        assert np.isfinite(call(robot, *single)).all()
        assert np.isfinite(call(robot, *batch)).all()
        batch[1][4, 2] = np.nan
        with pytest.raises(ValueError, match=rf"^{names[1]}: contains NaN or inf at row 4, "):
            call(robot, *batch)
    finally:
        libm.fesetround(old)


@pytest.mark.parametrize("method, k, bad", list(shape_cases()))
def test_bad_argument_message_gives_expected_shape(robot, method, k, bad, rng):
    names, call = METHODS[method]
    args = good_args(names, rng)
    args[k] = BAD[bad]()
    with pytest.raises(ValueError, match=rf"^{names[k]}: .*\({N},\)"):
        call(robot, *args)


@pytest.mark.parametrize("method", sorted(m for m in METHODS if len(METHODS[m][0]) > 1))
def test_mismatched_batch_sizes(robot, method, rng):
    names, call = METHODS[method]
    for k in range(1, len(names)):
        for other in (np.zeros(N), np.zeros((2, N)), np.zeros((0, N))):
            args = good_args(names, rng, rows=3)
            args[k] = other
            with pytest.raises(ValueError, match=rf"^{names[k]}: "):
                call(robot, *args)
    # a single state with a batch in a later argument
    args = good_args(names, rng)
    args[-1] = np.zeros((1, N))
    with pytest.raises(ValueError, match=rf"^{names[-1]}: "):
        call(robot, *args)


def test_mismatched_batch_message_gives_expected_shape(robot, rng):
    with pytest.raises(ValueError, match=rf"^qd: .*\(3, {N}\)"):
        robot.inverse_dynamics(np.zeros((3, N)), np.zeros((2, N)), np.zeros((3, N)))


CONVERTIBLE = {
    "int_array": lambda x: np.round(x).astype(np.int64),
    "int32_array": lambda x: np.round(x).astype(np.int32),
    "uint8_array": lambda x: np.abs(np.round(x)).astype(np.uint8),
    "bool_array": lambda x: x > 0,
    "float32": lambda x: x.astype(np.float32),
    "float16": lambda x: x.astype(np.float16),
    "big_endian": lambda x: x.astype(">f8"),
    "list": lambda x: x.tolist(),
    "int_list": lambda x: [int(v) for v in np.round(x)],
    "tuple": lambda x: tuple(x.tolist()),
    "fortran_view": lambda x: np.asfortranarray(np.vstack([x, x]))[0],
    "strided": lambda x: np.repeat(x, 2)[::2],
    "reversed": lambda x: x[::-1].copy()[::-1],
    "read_only": lambda x: np.lib.stride_tricks.as_strided(x, writeable=False),
}


@pytest.mark.parametrize("kind", sorted(CONVERTIBLE))
@pytest.mark.parametrize("method", ["inverse_dynamics", "forward_dynamics_crba", "mass_matrix",
                                    "coriolis_matrix", "kinetic_energy", "jacobian"])
def test_convertible_arguments_are_accepted(robot, method, kind, rng):
    names, call = METHODS[method]
    args = [3 * x for x in good_args(names, rng)]
    converted = [CONVERTIBLE[kind](x) for x in args]
    expected = call(robot, *[np.asarray(c, dtype=float) for c in converted])
    np.testing.assert_array_equal(call(robot, *converted), expected)


def test_batch_as_nested_lists_and_fortran(robot, rng):
    Q, QD, QDD = rng.uniform(-1, 1, (3, 5, N))
    expected = robot.inverse_dynamics(Q, QD, QDD)
    np.testing.assert_array_equal(robot.inverse_dynamics(Q.tolist(), QD.tolist(), QDD.tolist()),
                                  expected)
    np.testing.assert_array_equal(
        robot.inverse_dynamics(np.asfortranarray(Q), QD[:, ::-1][:, ::-1], QDD), expected)


# ---------------------------------------------------------------- out=

OUT_METHODS = {
    "inverse_dynamics": (lambda r, q, out: r.inverse_dynamics(q, q, q, out=out), (N,)),
    "forward_dynamics": (lambda r, q, out: r.forward_dynamics(q, q, q, out=out), (N,)),
    "forward_dynamics_kane": (lambda r, q, out: r.forward_dynamics(q, q, q, "kane", out), (N,)),
    "mass_matrix": (lambda r, q, out: r.mass_matrix(q, out=out), (N, N)),
    "bias_torques": (lambda r, q, out: r.bias_torques(q, q, out=out), (N,)),
    "gravity_torques": (lambda r, q, out: r.gravity_torques(q, out=out), (N,)),
    "coriolis_matrix": (lambda r, q, out: r.coriolis_matrix(q, q, out=out), (N, N)),
    "forward_kinematics": (lambda r, q, out: r.forward_kinematics(q, out=out), (N + 1, 4, 4)),
    "jacobian": (lambda r, q, out: r.jacobian(q, 0, out=out), (6, N)),
}


def bad_outs(shape):
    ro = np.zeros(shape)
    ro.flags.writeable = False
    yield "wrong_shape", np.zeros(shape[:-1] + (shape[-1] + 1,)), True
    yield "extra_dim", np.zeros((1,) + shape), True
    yield "flat", np.zeros(int(np.prod(shape)) + (len(shape) == 1)), True
    yield "float32", np.zeros(shape, np.float32), False
    yield "int64", np.zeros(shape, np.int64), False
    yield "complex", np.zeros(shape, complex), False
    yield "big_endian", np.zeros(shape, ">f8"), False
    yield "strided", np.zeros(shape[:-1] + (2 * shape[-1],))[..., ::2], False
    if len(shape) > 1:
        yield "fortran", np.asfortranarray(np.zeros(shape)), False
    yield "read_only", ro, False
    yield "list", np.zeros(shape).tolist(), False
    yield "scalar", 0.0, False
    yield "string", "out", False


@pytest.mark.parametrize("method", sorted(OUT_METHODS))
def test_bad_out_rejected(robot, method, rng):
    call, shape = OUT_METHODS[method]
    q = rng.uniform(-1, 1, N)
    for label, out, shape_error in bad_outs(shape):
        with pytest.raises(ValueError, match="^out: ") as info:
            call(robot, q, out)
        if shape_error:
            expected = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
            assert expected in str(info.value), (label, str(info.value))
        if isinstance(out, np.ndarray) and out.dtype.kind == "f":
            assert np.all(out == 0), label  # untouched


@pytest.mark.parametrize("method", sorted(OUT_METHODS))
def test_good_out_for_a_batch_needs_the_batch_shape(robot, method, rng):
    call, shape = OUT_METHODS[method]
    Q = rng.uniform(-1, 1, (3, N))
    with pytest.raises(ValueError, match="^out: "):
        call(robot, Q, np.zeros(shape))


@pytest.mark.parametrize("method", ["crba", "kane"])
@pytest.mark.parametrize("alias", ["tau", "qd"])
def test_out_may_alias_an_input(robot, method, alias, rng):
    q, qd, tau = rng.uniform(-1, 1, (3, N))
    expected = robot.forward_dynamics(q, qd, tau, method=method)
    args = {"q": q, "qd": qd.copy(), "tau": tau.copy()}
    got = robot.forward_dynamics(args["q"], args["qd"], args["tau"], method=method,
                                 out=args[alias])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_out_aliasing_an_input_is_fine_for_rnea_and_aba(robot, rng):
    q, qd, qdd = rng.uniform(-1, 1, (3, N))
    for method in ("rnea", "kane"):
        expected = robot.inverse_dynamics(q, qd, qdd, method=method)
        for k in range(3):
            args = [q.copy(), qd.copy(), qdd.copy()]
            np.testing.assert_array_equal(
                robot.inverse_dynamics(*args, method=method, out=args[k]), expected)
    expected = robot.forward_dynamics(q, qd, qdd)
    for k in range(3):
        args = [q.copy(), qd.copy(), qdd.copy()]
        np.testing.assert_array_equal(robot.forward_dynamics(*args, out=args[k]), expected)


# ---------------------------------------------------------------- methods, links, arguments

@pytest.mark.parametrize("method", ["RNEA", "aba", "newton", "", 3, b"rnea"])
def test_unknown_inverse_dynamics_method(robot, method):
    q = np.zeros(N)
    with pytest.raises(ValueError, match="^method: .*'rnea'.*'kane'"):
        robot.inverse_dynamics(q, q, q, method=method)


@pytest.mark.parametrize("method", ["ABA", "rnea", "featherstone", "", 1.0, ["aba"]])
def test_unknown_forward_dynamics_method(robot, method):
    q = np.zeros(N)
    with pytest.raises(ValueError, match="^method: .*'aba'.*'crba'.*'kane'"):
        robot.forward_dynamics(q, q, q, method=method)


def test_method_none_is_the_default(robot, rng):
    q, qd, x = rng.uniform(-1, 1, (3, N))
    np.testing.assert_array_equal(robot.inverse_dynamics(q, qd, x, None),
                                  robot.inverse_dynamics(q, qd, x, "rnea"))
    np.testing.assert_array_equal(robot.forward_dynamics(q, qd, x, method=None),
                                  robot.forward_dynamics(q, qd, x, method="aba"))


@pytest.mark.parametrize("link, match", [
    (N + 1, "out of range"), (-(N + 2), "out of range"), (10**6, "out of range"),
    ("no_such_link", "no link named 'no_such_link'"), ("", "no link named"),
    (None, "link name or index"), (1.0, "link name or index"), (b"link1", "link name or index"),
    ([0], "link name or index"),
])
def test_bad_jacobian_link(robot, link, match):
    with pytest.raises(ValueError, match=f"^link: .*{match}"):
        robot.jacobian(np.zeros(N), link)


def test_jacobian_accepts_numpy_integer_link(robot):
    q = np.zeros(N)
    np.testing.assert_array_equal(robot.jacobian(q, np.int64(2)), robot.jacobian(q, 2))


def test_jacobian_huge_link_index_is_value_error(robot):
    with pytest.raises(ValueError, match="^link: "):
        robot.jacobian(np.zeros(N), 10**30)


def test_wrong_argument_counts_are_type_errors(robot):
    q = np.zeros(N)
    with pytest.raises(TypeError, match="missing required argument 'qdd'"):
        robot.inverse_dynamics(q, q)
    with pytest.raises(TypeError, match="missing required argument 'q'"):
        robot.mass_matrix()
    with pytest.raises(TypeError, match="at most"):
        robot.forward_dynamics(q, q, q, "aba", None, None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'qdd'"):
        robot.forward_dynamics(q, q, qdd=q)
    with pytest.raises(TypeError, match="multiple values for 'q'"):
        robot.gravity_torques(q, q=q)
    with pytest.raises(TypeError):
        robot.coriolis_matrix(q)
    with pytest.raises(TypeError):
        robot.kinetic_energy(q, q, q)
    with pytest.raises(TypeError):
        robot.jacobian(q)


def test_keyword_arguments(robot, rng):
    q, qd, x = rng.uniform(-1, 1, (3, N))
    np.testing.assert_array_equal(robot.inverse_dynamics(qdd=x, qd=qd, q=q, method="kane"),
                                  robot.inverse_dynamics(q, qd, x, "kane"))
    np.testing.assert_array_equal(robot.forward_dynamics(tau=x, q=q, qd=qd),
                                  robot.forward_dynamics(q, qd, x))
    np.testing.assert_array_equal(robot.bias_torques(qd=qd, q=q), robot.bias_torques(q, qd))


def singular_robot():
    """Massless revolute joint about z carrying a point mass on a prismatic joint along y: the
    mass matrix is singular exactly when the mass sits on the z axis (q[1] = 0.5)."""
    T = np.eye(4)
    T[:3, 3] = [0.0, -0.5, 0.0]
    spec = R.ModelSpec(bodies=[
        R.Body("a", "ja", -1, "revolute", np.array([0.0, 0.0, 1.0]), np.eye(4)),
        R.Body("b", "jb", 0, "prismatic", np.array([0.0, 1.0, 0.0]), T, mass=2.0)])
    return robodyn.Robot(spec)


@pytest.mark.parametrize("method", ["aba", "crba", "kane"])
def test_forward_dynamics_at_a_singular_configuration(method):
    robot = singular_robot()
    q, zero = np.array([0.3, 0.5]), np.zeros(2)
    assert np.linalg.matrix_rank(robot.mass_matrix(q)) == 1
    with pytest.raises(ValueError, match="forward dynamics failed"):
        robot.forward_dynamics(q, zero, np.ones(2), method=method)
    Q = np.array([[0.3, 0.1], [0.3, 0.5], [0.0, 0.9]])
    with pytest.raises(ValueError, match="forward dynamics failed"):
        robot.forward_dynamics(Q, np.zeros((3, 2)), np.ones((3, 2)), method=method)
    # away from the singularity it works
    assert np.all(np.isfinite(robot.forward_dynamics([0.3, 0.1], zero, np.ones(2),
                                                     method=method)))


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


# ---------------------------------------------------------------- hypothesis fuzz

FUZZ_ROBOT = robodyn.Robot(R.random_tree(3, np.random.default_rng(11), frames=1))
FN = FUZZ_ROBOT.n
SIGNATURES = {
    # name: (state argument names, extra keyword arguments and their strategies)
    "inverse_dynamics": (("q", "qd", "qdd"), ("method", "out")),
    "forward_dynamics": (("q", "qd", "tau"), ("method", "out")),
    "mass_matrix": (("q",), ("out",)),
    "bias_torques": (("q", "qd"), ("out",)),
    "gravity_torques": (("q",), ("out",)),
    "coriolis_matrix": (("q", "qd"), ("out",)),
    "kinetic_energy": (("q", "qd"), ()),
    "potential_energy": (("q",), ()),
    "forward_kinematics": (("q",), ("out",)),
    "jacobian": (("q", "link"), ("out",)),
}
ERROR_PREFIXES = ("q: ", "qd: ", "qdd: ", "tau: ", "out: ", "method: ", "link: ",
                  "forward dynamics failed")

FINITE_SPECIALS = np.array([0.0, -0.0, 1.0, 1e308, -1e308, 5e-324, 1e150, 2.0**62])
SPECIALS = np.concatenate([FINITE_SPECIALS, [np.nan, np.inf, -np.inf]])
FINITE_FILLS = ["uniform", "uniform", "finite_specials", "huge"]
FILLS = FINITE_FILLS + ["nan", "inf", "specials"]


def fill(shape, how, seed):
    """Values for an array of `shape`: uniform in [-3, 3] with some entries replaced according
    to `how` (drawn by hypothesis together with the seed; cheaper than drawing every entry)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3.0, 3.0, shape)
    if a.size == 0 or how == "uniform":
        return a
    flat = a.reshape(-1)
    pick = rng.random(flat.size) < 0.5
    pick[rng.integers(flat.size)] = True
    if how == "finite_specials":
        flat[pick] = rng.choice(FINITE_SPECIALS, pick.sum())
    elif how == "huge":
        flat[:] = rng.choice([1e308, -1e308], flat.size)
    elif how == "nan":
        flat[rng.integers(flat.size)] = np.nan
    elif how == "inf":
        flat[rng.integers(flat.size)] = rng.choice([np.inf, -np.inf])
    else:
        flat[pick] = rng.choice(SPECIALS, pick.sum())
    return a


SHAPES = st.sampled_from([(), (0,), (1,), (FN,), (FN - 1,), (FN + 1,), (1, FN), (2, FN), (0, FN),
                          (FN, 1), (2, FN + 1), (1, 1, FN), (2, 2, FN), (FN, FN)])
DTYPES = st.sampled_from(["f8", "f4", "f2", ">f8", "i8", "i1", "u1", "?", "c16", "O", "U4"])
LAYOUTS = st.sampled_from(["C", "F", "strided", "reversed", "unaligned", "readonly", "list",
                           "tuple"])
OTHER = st.sampled_from([None, "q", "", b"\x00" * 24, {}, object(), 1.5, 3, True,
                         [1.0, "a", 2.0], [[1.0, 2.0], [3.0]], np.float64(1.0), [None] * FN,
                         slice(0, 3), Ellipsis, 10**400])


def layout(a, how):
    if how == "F":
        return np.asfortranarray(a)
    if how == "strided" and a.ndim >= 1:
        base = np.empty(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        view = base[..., ::2]
        view[...] = a
        return view
    if how == "reversed" and a.ndim >= 1:
        return a[..., ::-1].copy()[..., ::-1]
    if how == "unaligned" and a.dtype.kind in "fiucb" and a.dtype.itemsize > 1:
        buf = np.empty(a.nbytes + 1, dtype=np.uint8)
        view = buf[1:].view(a.dtype).reshape(a.shape)
        view[...] = a
        return view
    if how == "readonly":
        a.flags.writeable = False
        return a
    if how == "list":
        return a.tolist()
    if how == "tuple" and a.ndim == 1:
        return tuple(a.tolist())
    return a


# strategies built once (building them inside the composite on every draw is slow)
FILL_ANY, FILL_FINITE = st.sampled_from(FILLS), st.sampled_from(FINITE_FILLS)
SEEDS = st.integers(0, 2**16)
STATE_KINDS = st.sampled_from(["good", "good", "good", "array", "other"])
ROWS = st.sampled_from([None, None, 0, 1, 3])
LINKS = st.one_of(st.integers(-(FN + 3), FN + 3),
                  st.sampled_from(FUZZ_ROBOT.link_names + ["nope", "", None, 1.5, True,
                                                           np.int64(1), b"link1"]))
METHOD_ARGS = st.sampled_from([None, "rnea", "kane", "aba", "crba", "RNEA", "bogus", 3, b"aba",
                               ["kane"]])
OUT_KINDS = st.sampled_from(["exact", "exact", "array", "none", "other"])
OUT_SHAPES = {  # the result shape of one state
    "inverse_dynamics": (FN,), "forward_dynamics": (FN,), "mass_matrix": (FN, FN),
    "bias_torques": (FN,), "gravity_torques": (FN,), "coriolis_matrix": (FN, FN),
    "forward_kinematics": (len(FUZZ_ROBOT.link_names), 4, 4), "jacobian": (6, FN),
}
EXACT_DTYPES = st.sampled_from(["f8", "f8", "f8", "f4", ">f8", "i8"])
MISTAKES = st.sampled_from([None] * 12 + ["drop", "repeat", "unknown", "extra"])
POSITIONAL = {k: st.integers(0, k) for k in (1, 2, 3)}


def draw_array(draw, shape=None, dtype=None, fills=FILL_ANY):
    """An array of any (or the given) shape, dtype, values and layout."""
    shape = draw(SHAPES) if shape is None else shape
    dtype = draw(DTYPES) if dtype is None else dtype
    a = fill(shape, draw(fills), draw(SEEDS))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            a = a.astype(dtype)
        except (ValueError, OverflowError, TypeError):
            a = a.astype("f8")
    return layout(a, draw(LAYOUTS))


def draw_state(draw, rows):
    """A state argument: mostly valid (with the call's shared batch shape), else anything."""
    kind = draw(STATE_KINDS)
    if kind == "good":
        return draw_array(draw, (FN,) if rows is None else (rows, FN), "f8", FILL_FINITE)
    if kind == "array":
        return draw_array(draw)
    return draw(OTHER)


@st.composite
def calls(draw, name):
    """(positional, keyword) arguments for robot.<name>."""
    names, extras = SIGNATURES[name]
    rows = draw(ROWS)
    args = {}
    for arg in names:
        args[arg] = draw(LINKS) if arg == "link" else draw_state(draw, rows)
    if "method" in extras and draw(st.booleans()):
        args["method"] = draw(METHOD_ARGS)
    if "out" in extras and draw(st.booleans()):
        kind = draw(OUT_KINDS)
        if kind == "exact":  # the right shape, in any dtype and layout
            shape = OUT_SHAPES[name] if rows is None else (rows,) + OUT_SHAPES[name]
            args["out"] = draw_array(draw, shape, draw(EXACT_DTYPES))
        else:
            args["out"] = (draw_array(draw) if kind == "array" else
                           None if kind == "none" else draw(OTHER))
    positional = draw(POSITIONAL[len(names)])
    pos = [args.pop(k) for k in names[:positional]]
    # now and then a missing, repeated or unknown argument (TypeError)
    mistake = draw(MISTAKES)
    if mistake == "drop" and pos:
        pos.pop()
    elif mistake == "repeat" and pos:
        args[names[0]] = pos[0]
    elif mistake == "unknown":
        args["bogus"] = 1
    elif mistake == "extra":
        pos = pos + [args.pop(k) for k in names[positional:]] + [None] * 4
    return pos, args


def fuzz(name, call):
    pos, kw = call
    try:
        result = getattr(FUZZ_ROBOT, name)(*pos, **kw)
    except (ValueError, TypeError) as e:
        if isinstance(e, ValueError):
            assert str(e).startswith(ERROR_PREFIXES), repr(e)
        return
    assert isinstance(result, (np.ndarray, float)), type(result)
    if kw.get("out") is not None:
        assert result is kw["out"]


FUZZ_SETTINGS = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(HealthCheck))


def _fuzz_test(name):
    @FUZZ_SETTINGS
    @given(call=calls(name))
    def test(call):
        fuzz(name, call)

    test.__name__ = f"test_fuzz_{name}"
    return test


for _name in SIGNATURES:
    globals()[f"test_fuzz_{_name}"] = _fuzz_test(_name)
del _name


def test_fuzz_did_not_corrupt_the_robot():
    # runs after the fuzz tests (file order): the shared robot still computes correctly
    spec = FUZZ_ROBOT.spec
    rng = np.random.default_rng(0)
    q, qd, qdd = R.random_state(spec, rng)
    np.testing.assert_allclose(FUZZ_ROBOT.inverse_dynamics(q, qd, qdd), F.rnea(spec, q, qd, qdd),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(FUZZ_ROBOT.gravity, [0.0, 0.0, -9.81])


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
