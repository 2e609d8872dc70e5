"""A hypothesis fuzz over shapes, dtypes, values, layouts and argument kinds of every public
method: only ever a result, ValueError or TypeError.
"""

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robodyn
from reference import featherstone as F
from reference import random_models as R


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
