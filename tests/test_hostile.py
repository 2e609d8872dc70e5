"""Hostile input (issue 13): property-based tests over every public array method and over
mutated URDF text. The contract:

- arrays: a call either returns exactly what the same call returns on clean, C-contiguous
  float64 copies of the arguments, or raises ValueError/TypeError whose message starts with
  the name of an argument; never a crash, a hang or a silent wrong number;
- URDF text (the files of tests/data and example-robot-data arms with elements deleted or
  duplicated, numbers replaced by extremes): load_urdf either builds a Robot whose dynamics
  run, or raises ValueError naming the file; run in a subprocess under an address-space limit,
  so a blow-up is a test failure, not an OOM kill of the suite.

Both are bounded (max_examples, deadline, derandomized) to run in ~30 s together in CI. The
figures of the last run are printed with ``-s`` (examples, time, findings).
"""

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robodyn
from reference import random_models as rm

TESTS = Path(__file__).resolve().parent
N = 5

# (method, argument names, keyword arguments)
CALLS = [
    ("inverse_dynamics", ("q", "qd", "qdd"), {}),
    ("inverse_dynamics", ("q", "qd", "qdd"), {"method": "kane"}),
    ("forward_dynamics", ("q", "qd", "tau"), {}),
    ("forward_dynamics", ("q", "qd", "tau"), {"method": "crba"}),
    ("forward_dynamics", ("q", "qd", "tau"), {"method": "kane"}),
    ("mass_matrix", ("q",), {}),
    ("bias_torques", ("q", "qd"), {}),
    ("gravity_torques", ("q",), {}),
    ("coriolis_matrix", ("q", "qd"), {}),
    ("kinetic_energy", ("q", "qd"), {}),
    ("potential_energy", ("q",), {}),
    ("forward_kinematics", ("q",), {}),
    ("jacobian", ("q",), {"link": -1}),
]
OUT_CAPABLE = {"inverse_dynamics", "forward_dynamics", "mass_matrix", "bias_torques",
               "gravity_torques", "coriolis_matrix", "forward_kinematics", "jacobian"}

DTYPES = ["f8", "f4", "f2", ">f8", "i8", "i2", "u1", "?", "c16", "O", "U3"]
LAYOUTS = ["contiguous", "list", "strided", "reversed", "fortran", "readonly", "tuple"]
POISON = [None, None, None, None, None, np.nan, np.inf, -np.inf, 1e308, -1e300, 5e-324]


@pytest.fixture(scope="module")
def robots():
    generic = robodyn.Robot(rm.random_chain(N, np.random.default_rng(13)))
    arm = robodyn.robots.stanford_arm()
    return {"generic": generic, "special": arm.specialized(), "arm": arm}


@st.composite
def argument(draw, n, rows, hostile=True):
    """(value passed, clean float64 array or None if the argument is invalid)."""
    shape = (n,) if rows is None else (rows, n)
    if not hostile:
        a = np.array(draw(st.lists(st.floats(-3, 3), min_size=int(np.prod(shape)),
                                   max_size=int(np.prod(shape)))), dtype=float).reshape(shape)
        return a, a, shape
    if draw(st.integers(0, 9)) == 0:  # a wrong shape
        shape = draw(st.sampled_from([(n + 1,), (n - 1,), (), (1, 1, n), (n, n + 1), (0,),
                                      (2, n - 1)]))
    base = draw(st.lists(st.floats(-3, 3, allow_nan=False), min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape)))) if shape else [draw(st.floats(-3, 3))]
    a = np.array(base, dtype=float).reshape(shape)
    poison = draw(st.sampled_from(POISON))
    if poison is not None and a.size:
        a.flat[draw(st.integers(0, a.size - 1))] = poison
    dtype = draw(st.sampled_from(DTYPES))
    layout = draw(st.sampled_from(LAYOUTS))
    with np.errstate(all="ignore"):
        if dtype == "O":
            typed = a.astype(object)
        elif dtype == "U3":
            typed = a.astype("U3")
        elif dtype == "c16":
            typed = a.astype(complex) + 0.5j
        else:
            typed = a.astype(dtype)
    if layout == "list":
        value = typed.tolist()
    elif layout == "tuple":
        value = tuple(typed.tolist()) if typed.ndim == 1 else typed.tolist()
    elif layout == "strided":
        value = np.repeat(typed, 2, axis=-1)[..., ::2] if typed.ndim else typed
    elif layout == "reversed":
        value = np.flip(np.flip(typed).copy()) if typed.ndim else typed
    elif layout == "fortran":
        value = np.asfortranarray(typed)
    elif layout == "readonly":
        value = typed.copy()
        value.flags.writeable = False
    else:
        value = typed
    # what the value is, as NumPy reads it (an empty list is (0,), whatever it came from)
    seen = np.asarray(value)
    clean = None
    if seen.dtype.kind in "fiub":  # object, complex and string kinds are refused
        with np.errstate(all="ignore"):
            try:
                clean = np.ascontiguousarray(seen, dtype=np.float64)
            except (TypeError, ValueError):
                clean = None
    valid = (clean is not None and
             (clean.shape == (n,) or (clean.ndim == 2 and clean.shape[1] == n)) and
             bool(np.all(np.isfinite(clean))))
    return value, (clean if valid else None), shape


@st.composite
def call(draw):
    name, args, kw = draw(st.sampled_from(CALLS))
    robot = draw(st.sampled_from(["generic", "special"]))
    rows = draw(st.sampled_from([None, None, 0, 1, 3, 70]))
    n = 6 if robot == "special" else N
    # one hostile argument (the others clean), or all of them
    which_hostile = draw(st.integers(-1, len(args) - 1))
    drawn = [draw(argument(n, rows, which_hostile in (-1, k))) for k in range(len(args))]
    out = draw(st.sampled_from(["none", "none", "fresh", "wrong_shape", "f4", "readonly",
                                "overlap"])) if name in OUT_CAPABLE else "none"
    return name, args, kw, robot, drawn, out


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


STATS = {"examples": 0, "results": 0, "errors": 0, "seconds": 0.0}


@settings(max_examples=400, deadline=timedelta(seconds=2), derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(call())
def test_array_arguments(robots, case):
    t0 = time.perf_counter()
    name, argnames, kw, which, drawn, out_kind = case
    robot = robots[which]
    method = getattr(robot, name)
    values = [v for v, _, _ in drawn]
    cleans = [c for _, c, _ in drawn]
    shapes = {c.shape for c in cleans if c is not None}
    all_valid = all(c is not None for c in cleans) and len(shapes) == 1
    reference = None
    ref_error = None
    if all_valid:
        try:
            with np.errstate(all="ignore"):
                reference = method(*cleans, **kw)
        except ValueError as e:  # e.g. forward dynamics failing at an extreme state
            ref_error = str(e)
    extra = {}
    out = None
    if out_kind != "none" and reference is not None and not np.isscalar(reference):
        shape = np.shape(reference)
        if out_kind == "fresh":
            out = np.empty(shape)
        elif out_kind == "wrong_shape":
            out = np.empty(shape + (1,))
        elif out_kind == "f4":
            out = np.empty(shape, dtype=np.float32)
        elif out_kind == "readonly":
            out = np.empty(shape)
            out.flags.writeable = False
        elif out_kind == "overlap" and isinstance(values[0], np.ndarray) and \
                values[0].dtype == np.float64 and values[0].flags.c_contiguous and \
                values[0].flags.writeable and values[0].size:
            # out over the first argument's buffer, shifted by one element when it fits
            flat = values[0].reshape(-1)
            size = int(np.prod(shape))
            if size <= flat.size - 1:
                out = flat[1:1 + size].reshape(shape)
        if out is not None:
            extra["out"] = out
    STATS["examples"] += 1
    try:
        with np.errstate(all="ignore"):
            got = method(*values, **kw, **extra)
    except (ValueError, TypeError) as e:
        msg = str(e)
        STATS["errors"] += 1
        if reference is not None and "out" not in extra:
            raise AssertionError(f"{name}{kw}: valid arguments refused: {msg}") from e
        if ref_error is not None and "out" not in extra:
            assert msg == ref_error
        elif ref_error is None:
            named = msg.split(":", 1)[0]
            assert named in (*argnames, "out", "link"), f"{name}: {msg!r} names no argument"
        return
    finally:
        STATS["seconds"] += time.perf_counter() - t0
    STATS["results"] += 1
    assert all_valid, f"{name}{kw}: accepted invalid input {[type(v) for v in values]}"
    assert ref_error is None, f"{name}{kw}: clean call failed ({ref_error}), this one returned"
    if out is not None:
        assert out_kind in ("fresh", "overlap")
        assert got is out
    assert _same(got, reference), f"{name}{kw} ({which}, out={out_kind}): differs from the " \
                                  "clean float64 call"


def test_array_suite_figures(capsys):
    """Prints the figures of the array suite (run after it in file order)."""
    with capsys.disabled():
        print(f"\n[hostile arrays] {STATS}")
    assert STATS["examples"] == 0 or STATS["results"] > 0 and STATS["errors"] > 0


# ------------------------------------------------------------------ URDF text, in a subprocess

URDF_FUZZ = r"""
import json, resource, sys, time, warnings
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
sys.path.insert(0, {tests!r})
from datetime import timedelta
from pathlib import Path
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import robodyn
import test_urdf_fuzz as F
from _load import example_robot_data_dir

seeds = [p.read_text() for p in sorted((Path({tests!r}) / "data" / "good_urdf").glob("*.urdf"))]
erd = example_robot_data_dir()
if erd is not None:
    for rel in ("ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf",
                "double_pendulum_description/urdf/double_pendulum.urdf",
                "z1_description/urdf/z1.urdf", "so_arm_description/urdf/so_arm100.urdf"):
        p = erd / rel
        if p.is_file() and p.stat().st_size < 400_000:
            seeds.append(p.read_text())
EXTREME = ["1e300", "-1e300", "1e160", "1e-300", "5e-324", "1e154", "0", "-0", "1e308",
           "179769313486231570814527423731704356798070567525844996598917476803157260780028538"
           "760589558632766878171540458953514382464234321326889464182768467546703537516986049"
           "910576551282076245490090389328944075868508455133942304583236903222948165808559332"
           "123348274797826204144723168738177180919299881250404026184124858368.0"]

def extreme(draw, text):
    m = F._pick(draw, list(F.NUMBER.finditer(text)))
    if m is None:
        return text
    return text[:m.start()] + draw(st.sampled_from(EXTREME)) + text[m.end():]

OPS = F.TEXT_OPS + [extreme, extreme]

@st.composite
def mutated(draw):
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        text = draw(st.sampled_from(OPS))(draw, text)
    return text

def inertia_scale(r):
    # the largest term either algorithm adds: |I| |qd|^2 and |I| |qdd| (qd = qdd = 0.1), I the
    # rotational inertias about the joint origins. Rounding is bounded by eps times it: a
    # mutated product of inertia of 1e160 beside a diagonal of 0.03 (a non-physical inertia,
    # loaded with a warning) absorbs Izz qdd = 4e-4 in Newton-Euler's [W] J and not in Kane's
    # sums, so agreement is asked for relative to this scale too (1e-12 of it: for real
    # inertias far below the 1e-6 relative tolerance)
    return 0.1 * max((np.abs(b.inertia).max() + b.mass * float(np.dot(b.com, b.com))
                      for b in r.spec.bodies), default=0.0)

stats = {{"examples": 0, "loaded": 0, "refused": 0, "nonfinite_results": 0, "fd_refused": 0,
          "seeds": len(seeds), "findings": []}}

@settings(max_examples={examples}, deadline=timedelta(seconds=5), derandomize=True,
          database=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def fuzz(text):
    stats["examples"] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = robodyn.load_urdf(text)
        except ValueError as e:
            assert str(e), "empty message"
            stats["refused"] += 1
            return
    stats["loaded"] += 1
    n, nq = r.n, r.nq
    q = np.linspace(-0.5, 0.5, nq)
    if nq != n:  # a free-floating base (a floating root joint): a unit quaternion at 3:7
        q[3:7] = (0.0, 0.0, 0.0, 1.0)
    qd = np.full(n, 0.1)
    with np.errstate(all="ignore"):
        tau = r.inverse_dynamics(q, qd, qd)
        M = r.mass_matrix(q)
        # (Kane's method is for fixed-base models)
        tau_k = tau if nq != n else r.inverse_dynamics(q, qd, qd, method="kane")
        r.forward_kinematics(q)
        try:
            r.forward_dynamics(q, qd, tau)
        except ValueError:
            stats["fd_refused"] += 1
    # results at the edge of the double range (a mass of 1.8e308 is finite, its weight is
    # not): overflow, counted; the two algorithms may overflow at different steps
    big = 1e300
    if not (np.all(np.abs(tau) < big) and np.all(np.abs(M) < big)
            and np.all(np.abs(tau_k) < big)):
        stats["nonfinite_results"] += 1
    elif not np.allclose(tau, tau_k, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(tau).max())
                         + 1e-12 * inertia_scale(r)):
        stats["findings"].append("rnea != kane on " + r.name)

t0 = time.perf_counter()
fuzz()
stats["seconds"] = round(time.perf_counter() - t0, 2)
print(json.dumps(stats))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS (Linux)")
def test_mutated_urdf_in_limited_subprocess():
    code = URDF_FUZZ.format(limit=3 << 30, tests=str(TESTS), examples=300)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"\n[hostile URDF] {stats}")
    assert stats["examples"] >= 300 and stats["loaded"] > 0 and stats["refused"] > 0
    assert stats["findings"] == []
