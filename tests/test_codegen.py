"""Generated robot-specific code (robodyn.codegen, Robot.specialized()).

The generated kernels are compared with the generic C++ algorithms: compiled (the bundled
robots' kernels built into the extension, a random chain compiled on demand) and, for UR5,
Panda and random models, by evaluating the emitted expression graph with NumPy (the source is a
one-line-per-node rendering of that graph; its text is checked against the graph's counts).
"""

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import robodyn
from robodyn import codegen
from robodyn.codegen import kernels as codegen_kernels, compiled as codegen_specialize  # noqa: E402,F401
from reference import random_models as rm
from _load import example_robot_data_dir

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "cpp" / "generated"
BUNDLED = ("intelledex_605", "stanford_arm")
N_STATES = 10_000
TOL = 1e-12


def _states(robot, rng, n_states=N_STATES):
    n = robot.n
    q = rng.uniform(-np.pi, np.pi, (n_states, n))
    qd = rng.standard_normal((n_states, n))
    x = rng.standard_normal((n_states, n))
    qd[::17, :] = 0.0  # Coulomb friction's sign(qd) at exactly zero
    return q, qd, x


def _generic(robot, q, qd, x):
    N = q.shape[0]
    return {"inverse_dynamics": robot.inverse_dynamics(q, qd, x),
            "mass_matrix": robot.mass_matrix(q).reshape(N, -1),
            "gravity": robot.gravity_torques(q),
            "forward_dynamics": robot.forward_dynamics(q, qd, x)}


def _assert_close(got, ref, what, tol=TOL):
    # per state, relative to the largest entry of the state's result (at least 1)
    scale = np.maximum(1.0, np.abs(ref).max(axis=1, keepdims=True))
    err = (np.abs(got - ref) / scale).max()
    assert err <= tol, f"{what}: relative error {err:.3g}"


def _check_graphs(robot, rng):
    gen = codegen.generate(robot)
    q, qd, x = _states(robot, rng)
    ref = _generic(robot, q, qd, x)
    for function, kernel in gen.kernels.items():
        got = codegen.evaluate(kernel.graph, kernel.outputs, q, qd, x)
        _assert_close(got, ref[function], f"{robot.name} {function}")
    return gen


@pytest.fixture(scope="module")
def bundled():
    return {name: robodyn.robots.load(name) for name in BUNDLED}


@pytest.fixture(scope="module")
def special(bundled):
    """The bundled robots, specialised (once per module)."""
    return {name: robot.specialized() for name, robot in bundled.items()}


@pytest.fixture(scope="module")
def chain7():
    """A random 7-DOF chain (mixed joints, armature, damping, Coulomb friction), specialised
    by compiling on demand into a fresh cache directory (once per test session)."""
    spec = rm.random_chain(7, np.random.default_rng(71))
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        old = os.environ.get("ROBODYN_CACHE_DIR")
        os.environ["ROBODYN_CACHE_DIR"] = cache
        try:
            robot = robodyn.Robot(spec)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                special = robot.specialized()
            libs = sorted(Path(cache).glob("*.so"))
            yield robot, special, libs, cache
        finally:
            if old is None:
                os.environ.pop("ROBODYN_CACHE_DIR", None)
            else:
                os.environ["ROBODYN_CACHE_DIR"] = old


# ------------------------------------------------------------------ the expression graph


def test_graph_simplifies_as_it_is_built():
    """The rules of the tracer (C++, tracing.hpp), applied by codegen.simplify to a graph of
    raw nodes: each pair of expressions must come out as one node."""
    g = codegen.Graph()
    C, N = codegen.CONST, codegen.NEG
    ADD, SUB, MUL = codegen.ADD, codegen.SUB, codegen.MUL
    x, y = g.node(codegen.INPUT, 0), g.node(codegen.INPUT, 1)
    zero, one = g.node(C, c=0.0), g.node(C, c=1.0)
    two, three, six, m2 = (g.node(C, c=v) for v in (2.0, 3.0, 6.0, -2.0))
    xy = g.node(MUL, x, y)
    pairs = [
        (g.node(MUL, x, zero), zero), (g.node(ADD, x, zero), x), (g.node(MUL, one, x), x),
        (g.node(N, g.node(N, x)), x),
        (g.node(SUB, x, x), zero),
        (xy, g.node(MUL, y, x)),  # hash-consed: one node per product
        (g.node(ADD, xy, g.node(N, g.node(MUL, x, y))), zero),
        (g.node(ADD, x, g.node(N, y)), g.node(SUB, x, y)),
        # constants folded, also through a product: 2 * (3 * x) = 6 * x
        (g.node(MUL, two, g.node(MUL, three, x)), g.node(MUL, six, x)),
        # a negative constant factor is a negation of the positive one (shared with it)
        (g.node(MUL, m2, x), g.node(N, g.node(MUL, two, x))),
        (g.node(codegen.SIN, x), g.node(codegen.SIN, x)),
        (g.node(codegen.COS, g.node(N, x)), g.node(codegen.COS, x)),
    ]
    h, outs = codegen.simplify(g, [k for pair in pairs for k in pair])
    for i, (left, right) in enumerate(pairs):
        assert outs[2 * i] == outs[2 * i + 1], (i, left, right)
    # malformed graphs are refused by the C++ simplifier, not read out of bounds
    bad = codegen.Graph()
    bad.node(codegen.ADD, 0, 5)
    with pytest.raises(ValueError, match="does not come before"):
        codegen.simplify(bad, [0])
    inf = codegen.Graph()
    inf.node(C, c=float("inf"))
    with pytest.raises(ValueError, match="non-finite constant"):
        codegen.simplify(inf, [0])


def test_sin_cos_once_per_angle(bundled):
    """Every revolute angle has at most one sin and one cos node in the traced graphs."""
    for robot in bundled.values():
        for algorithm in ("rnea", "crba", "forward_dynamics", "aba", "kane"):
            g, outs = codegen.trace(robot, algorithm)
            trig = [(g.op[k], g.a[k]) for k in g.live(outs)
                    if g.op[k] in (codegen.SIN, codegen.COS)]
            assert len(trig) == len(set(trig))
            assert all(g.op[a] == codegen.INPUT and g.a[a] < robot.n for _, a in trig)


def test_trace_rejects_unknown_algorithm(bundled):
    with pytest.raises(ValueError, match="unknown algorithm"):
        bundled["stanford_arm"]._trace("nope")
    with pytest.raises(ValueError, match="cannot be traced"):
        bundled["stanford_arm"]._trace("regressor")


def test_one_table_of_algorithm_names(bundled):
    """The generated code is traced from algorithms named as Robot.op_counts names them (one
    table, cpp/include/robodyn/algorithms/algorithms.hpp): every traced name is counted, an unknown
    name is refused by both with the same list of names."""
    robot = bundled["intelledex_605"]
    for names in codegen_kernels._TRACED.values():
        for name in names:
            g, outs = codegen.trace(robot, name)
            counted = robot.op_counts(name)
            # the tracer folds the model's zeros, the counting scalar does not
            traced = g.counts(outs)
            assert 0 < traced["mul"] <= counted["mul"], (name, traced, counted)
    with pytest.raises(ValueError) as traced_error:
        robot._trace("nope")
    with pytest.raises(ValueError) as counted_error:
        robot.op_counts("nope")
    assert str(traced_error.value) == str(counted_error.value)


# ------------------------------------------------------------------ agreement with the generic code


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_kernels_agree_with_generic(bundled, special, name):
    robot, special = bundled[name], special[name]
    builtin = {row[0]: row[2:] for row in robodyn._core._builtin_kernels()}
    assert special._kernels() == tuple(builtin[name]), "the compiled-in kernels are used"
    q, qd, x = _states(robot, np.random.default_rng(11))
    ref = _generic(robot, q, qd, x)
    got = _generic(special, q, qd, x)
    for function in codegen.FUNCTIONS:
        _assert_close(got[function], ref[function], f"{name} {function}")
    # single-state calls, out= and the other forward-dynamics method go to the kernels too
    out = np.empty(robot.n)
    special.inverse_dynamics(q[3], qd[3], x[3], out=out)
    _assert_close(out[None], ref["inverse_dynamics"][3:4], "single state")
    _assert_close(special.forward_dynamics(q[:50], qd[:50], x[:50], method="crba"),
                  ref["forward_dynamics"][:50], "method crba")


def test_mass_matrix_symmetric_by_construction(special, chain7):
    for robot in (*special.values(), chain7[1]):
        q = np.random.default_rng(3).uniform(-3, 3, (200, robot.n))
        M = robot.mass_matrix(q)
        assert np.array_equal(M, np.swapaxes(M, 1, 2))
    # the emitted code computes the lower triangle and mirrors it
    src = (GENERATED / "stanford_arm.cpp").read_text()
    body = src.split("robodyn_stanford_arm_mass_matrix(")[1].split("\n}\n")[0]
    n = 6
    for i in range(n):
        for j in range(i + 1, n):
            assert f"  M[{i * n + j}] = M[{j * n + i}];" in body


def test_graphs_agree_ur5_panda():
    base = example_robot_data_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed")
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # panda's mimic finger joint
        for rel in ("ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf"):
            _check_graphs(robodyn.load_urdf(str(base / rel), mimic="independent"), rng)


@pytest.mark.parametrize("seed", [1, 2])
def test_graphs_agree_random_models(seed):
    rng = np.random.default_rng(seed)
    _check_graphs(robodyn.Robot(rm.random_chain(6, rng)), rng)
    _check_graphs(robodyn.Robot(rm.random_tree(6, rng, axes="z")), rng)
    _check_graphs(robodyn.Robot(rm.random_chain(4, rng, joint_types="prismatic",
                                                armature=False)), rng)


def test_graphs_agree_dh_chain():
    rng = np.random.default_rng(9)
    robot = robodyn.Robot(rm.dh_to_spec(rm.random_dh_chain(6, rng, armature=True)))
    _check_graphs(robot, rng)


# ------------------------------------------------------------------ compiled on demand, fallback


def test_compiled_on_demand_random_chain(chain7, monkeypatch):
    robot, special, libs, cache = chain7
    assert len(libs) == 1 and all(special._kernels())
    q, qd, x = _states(robot, np.random.default_rng(12))
    ref = _generic(robot, q, qd, x)
    got = _generic(special, q, qd, x)
    for function in codegen.FUNCTIONS:
        _assert_close(got[function], ref[function], f"chain7 {function}")
    # a second specialisation is served from the cache: the compiler is not run again
    def no_compiler(*args, **kwargs):
        raise AssertionError("the compiler ran again")

    monkeypatch.setattr(codegen_specialize.subprocess, "run", no_compiler)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = robot.specialized()
    assert all(again._kernels())
    assert sorted(Path(cache).glob("*.so")) == libs


def test_no_compiler_falls_back_to_generic(monkeypatch, tmp_path):
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ROBODYN_CXX", "/nonexistent/c++")
    robot = robodyn.Robot(rm.random_chain(3, np.random.default_rng(4)))
    with pytest.warns(RuntimeWarning, match="generic"):
        special = robot.specialized()
    assert special._kernels() == (0, 0, 0, 0)
    q, qd, x = _states(robot, np.random.default_rng(1), 20)
    np.testing.assert_array_equal(special.inverse_dynamics(q, qd, x),
                                  robot.inverse_dynamics(q, qd, x))
    assert special.op_counts("rnea") == robot.op_counts("rnea")


def test_gravity_change_switches_kernels_off(bundled):
    special = bundled["stanford_arm"].specialized()  # its own: the gravity is changed
    special.gravity = special.gravity  # unchanged: kernels stay
    assert all(special._kernels())
    special.gravity = [0.0, 0.0, -1.62]
    assert special._kernels() == (0, 0, 0, 0)
    ref = robodyn.robots.stanford_arm()
    ref.gravity = [0.0, 0.0, -1.62]
    q = np.full(6, 0.3)
    np.testing.assert_allclose(special.gravity_torques(q), ref.gravity_torques(q), rtol=1e-14)
    assert special.op_counts("rnea") == ref.op_counts("rnea")


# ------------------------------------------------------------------ files, determinism, counts


def test_checked_in_files_are_up_to_date():
    files = codegen.bundled_sources()
    assert set(files) == {"intelledex_605.cpp", "stanford_arm.cpp", "lynch_satellite.cpp",
                          "jpl_spacecraft.cpp", "dasc_cat.cpp", "registry.cpp"}
    for name, text in files.items():
        assert (GENERATED / name).read_text() == text, \
            f"cpp/generated/{name} is stale: run python -m robodyn.codegen --bundled"


def test_regeneration_is_deterministic(bundled):
    robot = bundled["intelledex_605"]
    a = codegen.generate(robot).source
    assert codegen.generate(robodyn.robots.load("intelledex_605")).source == a
    # another process, another hash seed
    code = ("import hashlib, robodyn; from robodyn import codegen; "
            "print(codegen.generate(robodyn.robots.load('intelledex_605')).sha256)")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.strip()
    assert out == codegen.generate(robot).sha256


def _counts_in_source(source, symbol):
    body = source.split(f"void {symbol}(")[1].split("\n}\n")[0]
    mul = add = trig = 0
    for line in body.splitlines()[1:]:
        rhs = line.split("=", 1)[1] if "=" in line else ""
        mul += len(re.findall(r" [*/] ", rhs))
        add += len(re.findall(r" [+-] ", rhs))
        trig += len(re.findall(r"std::(?:sin|cos|sqrt)\(", rhs))
    return {"mul": mul, "add": add, "trig": trig}


@pytest.mark.parametrize("name", BUNDLED)
def test_op_counts_are_those_of_the_emitted_code(bundled, special, name):
    robot, special = bundled[name], special[name]
    src = (GENERATED / f"{name}.cpp").read_text()
    for algorithm, function in codegen.OPCOUNT_ALGORITHMS.items():
        counted = _counts_in_source(src, f"robodyn_{name}_{function}")
        assert special.op_counts(algorithm) == counted, (algorithm, counted)
    assert special.op_counts("kane") == robot.op_counts("kane")  # not generated: generic


def test_op_counts_beat_the_hand_derived_figures(special):
    """Kane & Levinson (1983): Stanford arm 646 mul / 394 add; Nie (1988): Intelledex 605
    672 / 404. Targets for the generated inverse dynamics: <= 300 mul, <= 250 add."""
    for name in BUNDLED:
        c = special[name].op_counts("rnea")
        assert c["mul"] <= 300 and c["add"] <= 250, (name, c)


def test_generated_inverse_dynamics_keeps_the_recorded_counts(special):
    """Issue 16's bar for the generated inverse dynamics, on multiplications and additions
    both: at or below the counts of the kernels generated before the uniform loops
    (Intelledex 605 184 mul / 146 add, Stanford arm 218 / 195)."""
    bars = {"intelledex_605": (184, 146), "stanford_arm": (218, 195)}
    for name, (mul, add) in bars.items():
        c = special[name].op_counts("rnea")
        assert c["mul"] <= mul and c["add"] <= add, (name, c)


def test_no_rounding_residue_in_the_generated_constants():
    """A pi/2 rotation of an inertia, and the central inertia taken back out of the inertia
    about the origin, leave residues of a few ulps (the Stanford arm's link 3: Ixx - Iyy =
    4.4e-16 where both are 2.51; J and the central inertias had entries of 1e-18). The code
    generator cleans them, so no generated constant is a residue: every literal is 0 or at
    least 1e-12 in size."""
    for name, text in codegen.bundled_sources().items():
        for literal in re.findall(r"\b\d+\.\d+(?:e[-+]\d+)?", text):
            assert float(literal) == 0 or float(literal) >= 1e-12, (name, literal)


def test_cli_codegen_writes_embeddable_sources(tmp_path):
    from robodyn.cli import main

    assert main(["codegen", "stanford_arm", "-o", str(tmp_path)]) == 0
    cpp, hdr = tmp_path / "stanford_arm.cpp", tmp_path / "stanford_arm.h"
    assert cpp.read_text() == (GENERATED / "stanford_arm.cpp").read_text()
    text = hdr.read_text()
    assert "robodyn_stanford_arm_forward_dynamics(const double* q" in text
    assert "#include" not in cpp.read_text().replace("#include <cmath>", "")
