"""Generated code for free-floating models (robodyn.codegen on a free-flyer base).

The kernels take q (nq,) with the base position and unit quaternion (x, y, z, w) and qd, qdd,
tau (nv,). They are compared with the generic C++ algorithms on random floating trees (the
emitted graphs evaluated with NumPy, and one tree compiled on demand), on the seed systems
(whose kernels are compiled into the extension) and on Solo12 (example-robot-data), at
1e-10 relative; the boundary refuses a non-unit quaternion before any kernel runs.
"""

import os
import pickle
import re
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import robodyn
from robodyn import codegen
from robodyn.codegen import kernels as codegen_kernels, compiled as codegen_specialize  # noqa: E402,F401
from reference import random_models as rm
from _load import example_robot_data_dir
import test_codegen
from test_codegen import _generic  # the generic results the kernels are compared with

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "cpp" / "generated"
SEEDS = ("lynch_satellite", "jpl_spacecraft", "dasc_cat")
TOL = 1e-10
HAS_CXX = codegen_specialize._compiler() is not None


def _load_seed(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # jpl_spacecraft's bus inertia, kept as printed
        return robodyn.robots.load(name)


def _states(robot, rng, n_states=400):
    """q (N, nq): base position ~ N(0, 1), a uniform random unit quaternion, joints within
    their limits (or +-pi); qd, x (N, nv) standard normal, every 17th qd zero (Coulomb
    friction's sign at zero)."""
    lo, hi = robot.position_limits
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    q = rng.uniform(lo, hi, (n_states, robot.nq))
    q[:, :3] = rng.standard_normal((n_states, 3))
    quat = rng.standard_normal((n_states, 4))
    q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qd = rng.standard_normal((n_states, robot.nv))
    x = rng.standard_normal((n_states, robot.nv))
    qd[::17] = 0.0
    return q, qd, x


def _assert_close(got, ref, what):
    test_codegen._assert_close(got, ref, what, TOL)


def _check_graphs(robot, rng):
    gen = codegen.generate(robot)
    assert (gen.nq, gen.n) == (robot.nq, robot.nv)
    q, qd, x = _states(robot, rng)
    ref = _generic(robot, q, qd, x)
    for function, kernel in gen.kernels.items():
        got = codegen.evaluate(kernel.graph, kernel.outputs, q, qd, x)
        _assert_close(got, ref[function], f"{robot.name} {function}")
    return gen


def _counts_in_source(source, symbol):
    body = source.split(f"void {symbol}(")[1].split("\n}\n")[0]
    mul = add = trig = 0
    for line in body.splitlines()[1:]:
        rhs = line.split("=", 1)[1] if "=" in line else ""
        mul += len(re.findall(r" [*/] ", rhs))
        add += len(re.findall(r" [+-] ", rhs))
        trig += len(re.findall(r"std::(?:sin|cos|sqrt)\(", rhs))
    return {"mul": mul, "add": add, "trig": trig}


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A fresh kernel cache (kernels compiled on demand land here)."""
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path))
    return tmp_path


# ------------------------------------------------------------------ the traced graphs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_graphs_agree_random_floating_trees(seed):
    rng = np.random.default_rng(seed)
    _check_graphs(robodyn.Robot(rm.random_floating(5, rng, "tree")), rng)
    _check_graphs(robodyn.Robot(rm.random_floating(4, rng, "chain", joint_types="prismatic")),
                  rng)
    _check_graphs(robodyn.Robot(rm.random_floating(3, rng, "tree", axes="z")), rng)


def test_graphs_agree_single_free_body():
    """A lone free-flyer (nq = 7, nv = 6): M is the constant spatial inertia, and gravity
    enters through the quaternion alone."""
    rng = np.random.default_rng(8)
    robot = robodyn.Robot(rm.random_floating(0, rng))
    gen = _check_graphs(robot, rng)
    assert gen.kernels["mass_matrix"].counts == {"mul": 0, "add": 0, "trig": 0}
    g = gen.kernels["gravity"]
    inputs = {g.graph.a[k] for k in g.graph.live(g.outputs) if g.graph.op[k] == codegen.INPUT}
    assert inputs == {3, 4, 5, 6}, "the gravity wrench depends on the quaternion only"


def test_quaternion_traced_as_normalised():
    """The kernels normalise the quaternion, as the generic code does: a quaternion scaled by
    any factor gives the result of the unit one (the boundary refuses those off by more than
    1e-6; a C caller of the kernels gets the normalised answer)."""
    rng = np.random.default_rng(4)
    robot = robodyn.Robot(rm.random_floating(3, rng))
    q, qd, x = _states(robot, rng, 50)
    scaled = q.copy()
    scaled[:, 3:7] *= rng.uniform(0.5, 2.0, (50, 1))
    for function, kernel in codegen.generate(robot).kernels.items():
        unit = codegen.evaluate(kernel.graph, kernel.outputs, q, qd, x)
        _assert_close(codegen.evaluate(kernel.graph, kernel.outputs, scaled, qd, x), unit,
                      function)


# the generic function each of Kane's formulations computes
_KANE = {"inverse_dynamics": "kane", "mass_matrix": "kane_inertia", "gravity": "gravity_kane",
         "forward_dynamics": "kane_forward"}


def _check_kane_graphs(robot, rng, n_states=400):
    """Kane's formulations traced on a floating base (the base's speeds its twist), simplified
    and evaluated: equal to the generic Newton-Euler, CRBA and ABA results."""
    q, qd, x = _states(robot, rng, n_states)
    ref = _generic(robot, q, qd, x)
    for function, algorithm in _KANE.items():
        g, outs = codegen.simplify(*codegen.trace(robot, algorithm))
        _assert_close(codegen.evaluate(g, outs, q, qd, x), ref[function],
                      f"{robot.name} {algorithm}")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kane_graphs_agree_random_floating_trees(seed):
    rng = np.random.default_rng(seed)
    _check_kane_graphs(robodyn.Robot(rm.random_floating(5, rng, "tree")), rng)
    _check_kane_graphs(
        robodyn.Robot(rm.random_floating(4, rng, "chain", joint_types="prismatic")), rng)
    _check_kane_graphs(robodyn.Robot(rm.random_floating(3, rng, "tree", axes="z")), rng)
    _check_kane_graphs(robodyn.Robot(rm.random_floating(0, rng)), rng)


@pytest.mark.parametrize("name", SEEDS)
def test_kane_graphs_agree_seeds(name):
    _check_kane_graphs(_load_seed(name), np.random.default_rng(17))


def test_kane_graphs_agree_solo12():
    base = example_robot_data_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed")
    robot = robodyn.load_urdf(str(base / "solo_description/robots/solo12.urdf"),
                              floating_base=True)
    _check_kane_graphs(robot, np.random.default_rng(12), 100)


def test_shortest_trace_kept_on_a_floating_base():
    """Every formulation is traced on a floating base too, and each kernel is the one with
    the fewest multiplications plus additions (the seeds: Newton-Euler, CRBA and ABA)."""
    rng = np.random.default_rng(9)
    for robot in (_load_seed("lynch_satellite"), robodyn.Robot(rm.random_floating(4, rng))):
        gen = codegen.generate(robot)
        for function, kernel in gen.kernels.items():
            costs = {}
            for algorithm in codegen_kernels._TRACED[function]:
                c = codegen.simplify(*codegen.trace(robot, algorithm))
                costs[algorithm] = sum(c[0].counts(c[1])[k] for k in ("mul", "add"))
            assert kernel.traced in costs
            assert costs[kernel.traced] == min(costs.values()), (function, costs)
    assert {f: k.traced for f, k in codegen.generate(_load_seed("lynch_satellite"))
            .kernels.items()} == {"inverse_dynamics": "rnea", "mass_matrix": "crba",
                                  "gravity": "gravity", "forward_dynamics": "aba"}


def test_generation_time_is_bounded():
    """dasc_cat (nq = 17, nv = 16, the largest bundled floating model): traced, simplified
    and emitted in about a second; 30 s of CPU is the bound."""
    robot = _load_seed("dasc_cat")
    t0 = time.process_time()
    codegen.generate(robot)
    assert time.process_time() - t0 < 30.0


# ------------------------------------------------------------------ compiled kernels


@pytest.mark.parametrize("name", SEEDS)
def test_seed_kernels_compiled_in_agree_with_generic(name):
    robot = _load_seed(name)
    special = robot.specialized()
    builtin = {row[0]: row[2:] for row in robodyn._core._builtin_kernels()}
    assert special._kernels() == tuple(builtin[name]), "the compiled-in kernels are used"
    assert special._kernel_lib is None
    rng = np.random.default_rng(21)
    q, qd, x = _states(robot, rng)
    ref = _generic(robot, q, qd, x)
    got = _generic(special, q, qd, x)
    for function in codegen.FUNCTIONS:
        _assert_close(got[function], ref[function], f"{name} {function}")
    # single states, out=, the crba method, and a batch over two threads
    out = np.empty(robot.nv)
    assert special.inverse_dynamics(q[3], qd[3], x[3], out=out) is out
    _assert_close(out[None], ref["inverse_dynamics"][3:4], "single state, out=")
    M = np.empty((robot.nv, robot.nv))
    special.mass_matrix(q[5], out=M)
    _assert_close(M.reshape(1, -1), ref["mass_matrix"][5:6], "mass matrix, out=")
    _assert_close(special.forward_dynamics(q[:50], qd[:50], x[:50], method="crba"),
                  ref["forward_dynamics"][:50], "method crba")
    threads = robodyn.get_num_threads()
    robodyn.set_num_threads(2)
    try:
        _assert_close(special.forward_dynamics(q, qd, x), ref["forward_dynamics"],
                      "two threads")
    finally:
        robodyn.set_num_threads(threads)
    M = special.mass_matrix(q[:20])
    assert np.array_equal(M, np.swapaxes(M, 1, 2))


@pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler")
def test_compiled_on_demand_random_floating_tree(cache):
    """A floating tree with armature, damping and Coulomb friction on its joints and gravity
    (the quaternion enters every function), compiled into a fresh cache."""
    rng = np.random.default_rng(31)
    robot = robodyn.Robot(rm.random_floating(5, rng))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        special = robot.specialized()
    assert all(special._kernels()) and special._kernel_lib is not None
    assert len(list(cache.glob("*.so"))) == 1
    q, qd, x = _states(robot, rng)
    ref = _generic(robot, q, qd, x)
    got = _generic(special, q, qd, x)
    for function in codegen.FUNCTIONS:
        _assert_close(got[function], ref[function], f"floating tree {function}")
    # pickled, the robot is specialised again on arrival (from this process's loaded kernels)
    again = pickle.loads(pickle.dumps(special))
    assert again.is_specialized() and again._kernels() == special._kernels()
    _assert_close(again.inverse_dynamics(q[:5], qd[:5], x[:5]),
                  ref["inverse_dynamics"][:5], "unpickled")


@pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler")
def test_solo12_specialised_agrees_with_generic(cache):
    base = example_robot_data_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed")
    robot = robodyn.load_urdf(str(base / "solo_description/robots/solo12.urdf"),
                              floating_base=True)
    special = robot.specialized()
    assert all(special._kernels())
    q, qd, x = _states(robot, np.random.default_rng(12))
    ref = _generic(robot, q, qd, x)
    got = _generic(special, q, qd, x)
    for function in codegen.FUNCTIONS:
        _assert_close(got[function], ref[function], f"solo12 {function}")
    # the generated code is shorter than the generic algorithms
    for algorithm in ("rnea", "crba", "aba", "gravity"):
        s, g = special.op_counts(algorithm), robot.op_counts(algorithm)
        assert s["mul"] + s["add"] < g["mul"] + g["add"], (algorithm, s, g)


# ------------------------------------------------------------------ the boundary


def test_quaternion_checked_before_the_kernels():
    robot = _load_seed("dasc_cat")
    special = robot.specialized()
    assert all(special._kernels())
    q, qd, x = _states(robot, np.random.default_rng(5), 2)
    bad = q.copy()
    bad[1, 3:7] *= 1.01
    calls = {"inverse_dynamics": lambda r, q: r.inverse_dynamics(q, qd, x),
             "mass_matrix": lambda r, q: r.mass_matrix(q),
             "gravity_torques": lambda r, q: r.gravity_torques(q),
             "forward_dynamics": lambda r, q: r.forward_dynamics(q, qd, x)}
    for what, call in calls.items():
        with pytest.raises(ValueError) as generic_error:
            call(robot, bad)
        with pytest.raises(ValueError) as special_error:
            call(special, bad)
        assert str(special_error.value) == str(generic_error.value), what
        assert "quaternion" in str(special_error.value) and "row 1" in str(special_error.value)
        with pytest.raises(ValueError, match="q"):
            call(special, q[:, :robot.nv])  # nv entries where nq are expected
        # within the tolerance: normalised, the answer of the unit quaternion
        near = q.copy()
        near[:, 3:7] *= 1 + 5e-7
        np.testing.assert_allclose(call(special, near), call(robot, q), rtol=1e-12,
                                   atol=1e-12)
    # method="kane" runs the generic Kane algorithm (the kernels answer the default method)
    np.testing.assert_allclose(special.inverse_dynamics(q, qd, x, method="kane"),
                               robot.inverse_dynamics(q, qd, x), rtol=1e-10, atol=1e-10)


def test_gravity_change_switches_floating_kernels_off():
    special = _load_seed("lynch_satellite").specialized()
    assert all(special._kernels())
    special.gravity = [0.0, 0.0, -9.81]
    assert special._kernels() == (0, 0, 0, 0)
    ref = _load_seed("lynch_satellite")
    ref.gravity = [0.0, 0.0, -9.81]
    q, qd, x = _states(ref, np.random.default_rng(2), 5)
    np.testing.assert_array_equal(special.gravity_torques(q), ref.gravity_torques(q))


# ------------------------------------------------------------------ files and counts


@pytest.mark.parametrize("name", SEEDS)
def test_floating_op_counts_are_those_of_the_emitted_code(name):
    robot = _load_seed(name)
    special = robot.specialized()
    src = (GENERATED / f"{name}.cpp").read_text()
    for algorithm, function in codegen.OPCOUNT_ALGORITHMS.items():
        counted = _counts_in_source(src, f"robodyn_{name}_{function}")
        assert special.op_counts(algorithm) == counted, (algorithm, counted)
    for algorithm in ("rnea", "crba", "aba"):
        s, g = special.op_counts(algorithm), robot.op_counts(algorithm)
        assert s["mul"] < g["mul"] and s["add"] < g["add"], (algorithm, s, g)


@pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler")
def test_cli_codegen_floating_sources_embed(tmp_path):
    """`robodyn codegen lynch_satellite` writes the compiled-in source and a header with the
    two sizes; a C++ program including them gets the generic answer."""
    from robodyn.cli import main

    assert main(["codegen", "lynch_satellite", "-o", str(tmp_path)]) == 0
    cpp, hdr = tmp_path / "lynch_satellite.cpp", tmp_path / "lynch_satellite.h"
    assert cpp.read_text() == (GENERATED / "lynch_satellite.cpp").read_text()
    header = hdr.read_text()
    assert "ROBODYN_LYNCH_SATELLITE_NQ = 9, ROBODYN_LYNCH_SATELLITE_NV = 8" in header
    robot = _load_seed("lynch_satellite")
    q, qd, x = _states(robot, np.random.default_rng(6), 1)
    fmt = lambda a: ", ".join(repr(float(v)) for v in a.ravel())  # noqa: E731
    main_cpp = tmp_path / "main.cpp"
    main_cpp.write_text(
        '#include <cstdio>\n#include "lynch_satellite.h"\n'
        f"int main() {{ double q[ROBODYN_LYNCH_SATELLITE_NQ] = {{{fmt(q)}}};\n"
        f"  double qd[ROBODYN_LYNCH_SATELLITE_NV] = {{{fmt(qd)}}};\n"
        f"  double x[ROBODYN_LYNCH_SATELLITE_NV] = {{{fmt(x)}}};\n"
        "  double tau[ROBODYN_LYNCH_SATELLITE_NV];\n"
        "  robodyn_lynch_satellite_inverse_dynamics(q, qd, x, tau);\n"
        '  for (double t : tau) std::printf("%.17g\\n", t);\n}\n')
    exe = tmp_path / "main"
    cxx = codegen_specialize._compiler().split()
    subprocess.run([*cxx, "-std=c++17", "-O1", "-o", str(exe), str(main_cpp), str(cpp)],
                   check=True, capture_output=True, timeout=300, cwd=tmp_path)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=60)
    tau = np.array([float(v) for v in out.stdout.split()])
    _assert_close(tau[None], robot.inverse_dynamics(q, qd, x), "embedded kernel")
