"""Bad arguments at the Python boundary.

- every state argument of every public method: wrong shapes and lengths, 3-D arrays,
  mismatched batch sizes, strings, None, object and complex arrays, NaN and inf raise
  ValueError naming the argument (q, qd, qdd, tau, out) and the expected shape; ints, bools,
  float32 and lists are converted;
- out= of the wrong shape, dtype, layout or writeability, unknown methods, bad link arguments.
"""

import ctypes
import ctypes.util
import math
import platform

import numpy as np
import pytest

import robodyn
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
