"""No heap allocation in the hot paths.

C++: cpp/tests/test_noalloc.cpp with its parts in cpp/tests/noalloc/ (counting operator new /
malloc, Eigen's runtime no-malloc check) is compiled here with the system compiler (kept in
.pytest_cache, keyed by a hash of the sources, headers and flags) and run; its self-check
modes allocate on purpose inside the guarded region and must make it fail.

Python: single-state calls with ``out=`` allocate nothing; tracemalloc (which sees numpy's
data buffers and every Python object) shows no growth and no transient peak over 1000 calls,
while the same calls without ``out=`` do show the result's allocation (so the probe works).
"""

import hashlib
import itertools
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import robodyn
from reference import random_models as R

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "cpp" / "tests" / "test_noalloc.cpp"


# ---------------------------------------------------------------- the C++ test

def compiler():
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def cmeel_prefixes(text):
    """The prefixes printed by `python -m cmeel cmake`: a CMAKE_PREFIX_PATH, i.e. a list
    separated by os.pathsep (':'), with one prefix per installed cmeel tree."""
    return [pathlib.Path(p.strip()) for p in text.strip().split(os.pathsep) if p.strip()]


def test_cmeel_prefixes_is_a_path_list():
    assert cmeel_prefixes("/a/cmeel.prefix\n") == [pathlib.Path("/a/cmeel.prefix")]
    assert cmeel_prefixes(f"/a/p{os.pathsep}/b/q{os.pathsep}") == [pathlib.Path("/a/p"),
                                                                   pathlib.Path("/b/q")]
    assert cmeel_prefixes("") == []


def eigen_include():
    """Eigen's include directory: the cmeel-eigen wheel (as CMakeLists.txt finds it) or the
    system one."""
    candidates = []
    try:
        out = subprocess.run([sys.executable, "-m", "cmeel", "cmake"], capture_output=True,
                             text=True, timeout=60).stdout
        candidates += [p / "include" / "eigen3" for p in cmeel_prefixes(out)]
    except (OSError, subprocess.SubprocessError):
        pass
    candidates += [pathlib.Path("/usr/include/eigen3"), pathlib.Path("/usr/local/include/eigen3")]
    for path in candidates:
        if (path / "Eigen" / "Core").is_file():
            return path
    return None


def build_key(cxx, flags, sources):
    """Hash of everything the binary depends on: compiler, flags, sources, core headers and the
    headers of the C++ tests (cpp/tests/noalloc: test_noalloc.cpp's parts)."""
    h = hashlib.sha256()
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    h.update((cxx + version + " ".join(flags)).encode())
    headers = [*sorted((ROOT / "cpp" / "include").rglob("*.hpp")),
               *sorted((ROOT / "cpp" / "tests").rglob("*.hpp"))]
    for path in [*sources, *headers]:
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def build_cpp_test(request, tmp_path_factory, source, extra_flags=()):
    """Builds the C++ test program `source` + cpp/src/model.cpp (the two translation units in
    parallel, without -DNDEBUG) and returns the executable. The binary is kept in pytest's
    cache directory under a hash of compiler, flags, sources and headers, so it is rebuilt
    exactly when one of them changes. Skips when there is no compiler."""
    cxx = compiler()
    if cxx is None:
        pytest.skip("no C++ compiler found")
    eigen = eigen_include()
    assert eigen is not None, "Eigen headers not found (cmeel-eigen or /usr/include/eigen3)"
    flags = ["-std=c++17", "-O1", *extra_flags, "-I", str(ROOT / "cpp" / "include"),
             "-I", str(eigen)]
    sources = [source, ROOT / "cpp" / "src" / "model.cpp"]
    key = build_key(cxx, flags, sources)
    name = source.stem
    cache = getattr(request.config, "cache", None)
    cache_dir = cache.mkdir(f"robodyn_{name}") if cache is not None else None
    if cache_dir is not None and (cache_dir / f"{name}-{key}").is_file():
        return cache_dir / f"{name}-{key}"

    build = tmp_path_factory.mktemp(name)
    objects = [build / (s.stem + ".o") for s in sources]

    def compile_one(pair):
        src, obj = pair
        return subprocess.run([cxx, *flags, "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True, timeout=900)

    with ThreadPoolExecutor(len(sources)) as pool:
        results = list(pool.map(compile_one, zip(sources, objects)))
    for res in results:
        assert res.returncode == 0, f"compilation failed:\n{res.stderr[-4000:]}"
    exe = build / name
    res = subprocess.run([cxx, *map(str, objects), "-o", str(exe)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f"link failed:\n{res.stderr[-4000:]}"
    if cache_dir is None:
        return exe
    for old in cache_dir.glob(f"{name}-*"):
        old.unlink(missing_ok=True)
    target = cache_dir / f"{name}-{key}"
    shutil.copy2(exe, build / "staged")
    os.replace(build / "staged", target)
    return target


@pytest.fixture(scope="module")
def noalloc_binary(request, tmp_path_factory):
    """cpp/tests/test_noalloc.cpp built with Eigen's run-time allocation check."""
    return build_cpp_test(request, tmp_path_factory, SOURCE, ["-DEIGEN_RUNTIME_NO_MALLOC"])


def run(exe, *args):
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_cpp_algorithms_do_not_allocate(noalloc_binary):
    res = run(noalloc_binary)
    assert res.returncode == 0, f"allocation inside an algorithm:\n{res.stdout}{res.stderr}"
    assert "test_noalloc: OK" in res.stdout
    # the three models ran (two fixed-base, one free-floating), each with cache hits and
    # misses under the guard, and the constrained algorithms on a fixed and a floating model
    assert res.stdout.count("0 failure(s)") == 5, res.stdout
    assert "floating tree constraints: 0 failure(s)" in res.stdout, res.stdout
    assert "floating tree: nq=14 nv=13" in res.stdout, res.stdout


@pytest.mark.parametrize("mode, counter", [
    ("--self-check-new", 0),     # counters: operator new, malloc, Eigen malloc asserts
    ("--self-check-malloc", 1),
    ("--self-check-eigen", 2),
])
def test_cpp_self_check_detects_an_allocation(noalloc_binary, mode, counter):
    res = run(noalloc_binary, mode)
    if mode == "--self-check-malloc" and "malloc hook: off" in res.stdout:
        pytest.skip("malloc is not interposed on this C library")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL random tree: self-check allocated" in res.stdout
    assert "FAIL structured chain: self-check allocated" in res.stdout
    # the failure is attributed to the deliberate allocation only, through the expected counter
    lines = [line for line in res.stdout.splitlines() if line.startswith("FAIL")]
    assert all("self-check" in line for line in lines), res.stdout
    counts = re.search(r"(\d+) operator new, (\d+) malloc, (\d+) Eigen", lines[0])
    assert counts and int(counts.group(counter + 1)) > 0, lines[0]
    assert "test_noalloc: FAILED" in res.stdout


def test_cpp_rejects_unknown_mode(noalloc_binary):
    assert run(noalloc_binary, "--bogus").returncode == 2


# ---------------------------------------------------------------- the Python hot path

N_DOF = 64  # the tau result is 512 bytes, M 32 kB: well above the threshold below
THRESHOLD = 256  # bytes


@pytest.fixture(scope="module")
def hot():
    rng = np.random.default_rng(99)
    spec = R.random_tree(N_DOF, rng)
    robot = robodyn.Robot(spec)
    q, qd, qdd = R.random_state(spec, rng)
    return robot, q, qd, qdd


def traced(call, repeats=1000):
    """(net growth, peak above the start) in bytes over `repeats` calls of call(), after
    warm-up. call is a closure over prebound methods and arguments: no *args / **kwargs
    unpacking (which allocates argument tuples that stay on the tuple free list)."""
    for _ in range(3):
        call()
    tracemalloc.start()
    try:
        call()
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in itertools.repeat(None, repeats):
            call()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return current - base, peak - base


def hot_calls(robot, q, qd, qdd):
    """name -> (call with out=, the same call without out=, out)."""
    n = robot.n
    vec, mat = np.empty(n), np.empty((n, n))
    ID, FD, M = robot.inverse_dynamics, robot.forward_dynamics, robot.mass_matrix
    B, G = robot.bias_torques, robot.gravity_torques
    DID, DFD = robot.inverse_dynamics_derivatives, robot.forward_dynamics_derivatives
    reg = np.empty((n, 10 * n))
    pair = (np.empty((n, n)), np.empty((n, n)))
    triple = (np.empty((n, n)), np.empty((n, n)), np.empty((n, n)))
    return {
        "inverse_dynamics": (lambda: ID(q, qd, qdd, out=vec), lambda: ID(q, qd, qdd), vec),
        "inverse_dynamics_kane": (lambda: ID(q, qd, qdd, "kane", vec),
                                  lambda: ID(q, qd, qdd, "kane"), vec),
        "forward_dynamics": (lambda: FD(q, qd, qdd, out=vec), lambda: FD(q, qd, qdd), vec),
        "forward_dynamics_crba": (lambda: FD(q, qd, qdd, method="crba", out=vec),
                                  lambda: FD(q, qd, qdd, method="crba"), vec),
        "forward_dynamics_kane": (lambda: FD(q, qd, qdd, "kane", out=vec),
                                  lambda: FD(q, qd, qdd, "kane"), vec),
        "mass_matrix": (lambda: M(q, out=mat), lambda: M(q), mat),
        "bias_torques": (lambda: B(q, qd, out=vec), lambda: B(q, qd), vec),
        "gravity_torques": (lambda: G(q, out=vec), lambda: G(q), vec),
        "regressor": (lambda: robot.regressor(q, qd, qdd, out=reg), lambda: robot.regressor(q, qd, qdd),
                      reg),
        "inverse_dynamics_derivatives": (lambda: DID(q, qd, qdd, out=pair),
                                         lambda: DID(q, qd, qdd), pair),
        "forward_dynamics_derivatives": (lambda: DFD(q, qd, qdd, out=triple),
                                         lambda: DFD(q, qd, qdd), triple),
    }


@pytest.mark.allocations
@pytest.mark.parametrize("name", ["inverse_dynamics", "inverse_dynamics_kane",
                                  "forward_dynamics", "forward_dynamics_crba",
                                  "forward_dynamics_kane", "mass_matrix", "bias_torques",
                                  "gravity_torques", "regressor", "inverse_dynamics_derivatives",
                                  "forward_dynamics_derivatives"])
def test_python_hot_path_with_out_allocates_nothing(hot, name):
    robot, q, qd, qdd = hot
    with_out, without_out, out = hot_calls(robot, q, qd, qdd)[name]
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        o[...] = np.nan
    assert with_out() is out
    expected = without_out()
    for o, e in zip(outs, expected if isinstance(out, tuple) else (expected,)):
        np.testing.assert_array_equal(o, e)
    growth, peak = traced(with_out)
    assert growth <= 0 and peak < THRESHOLD, (name, growth, peak)
    # the probe does see the result array when out= is not given
    growth, peak = traced(without_out, repeats=10)
    assert peak >= outs[0].nbytes, (name, peak)


@pytest.mark.allocations
def test_python_floating_derivatives_with_out_allocate_nothing(rng):
    # a free-floating base (nq = nv + 1): the derivative and regressor calls with out=
    from _floating import floating_state, floating_tree

    robot = robodyn.Robot(floating_tree(40, rng))
    q, qd, qdd = floating_state(robot, rng)
    nv, nb = robot.nv, len(robot.spec.bodies)
    DID, DFD, REG = (robot.inverse_dynamics_derivatives, robot.forward_dynamics_derivatives,
                     robot.regressor)
    pair = (np.empty((nv, nv)), np.empty((nv, nv)))
    triple = (np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv)))
    reg = np.empty((nv, 10 * nb))
    for with_out, without_out, out in (
            (lambda: DID(q, qd, qdd, out=pair), lambda: DID(q, qd, qdd), pair),
            (lambda: DFD(q, qd, qdd, out=triple), lambda: DFD(q, qd, qdd), triple),
            (lambda: REG(q, qd, qdd, out=reg), lambda: REG(q, qd, qdd), reg)):
        assert with_out() is out
        growth, peak = traced(with_out)
        assert growth <= 0 and peak < THRESHOLD, (growth, peak)
        growth, peak = traced(without_out, repeats=10)
        assert peak >= (out[0] if isinstance(out, tuple) else out).nbytes


@pytest.mark.allocations
def test_python_hot_path_varying_q_allocates_nothing(hot):
    # cache misses on every call (q alternates), still nothing allocated
    robot, q, qd, qdd = hot
    q2 = q + 0.1
    tau = np.empty(robot.n)
    M = np.empty((robot.n, robot.n))
    f, m = robot.inverse_dynamics, robot.mass_matrix

    def alternate():
        f(q, qd, qdd, out=tau)
        m(q2, out=M)

    before = robot.cache_stats()["misses"]
    growth, peak = traced(alternate, repeats=500)
    assert robot.cache_stats()["misses"] - before >= 1000
    assert growth <= 0 and peak < THRESHOLD, (growth, peak)


@pytest.mark.allocations
@pytest.mark.parametrize("integrator", ["rk4", "euler"])
def test_python_floating_loop_allocates_nothing_per_step(integrator):
    """robodyn.simulate's Python loop on a floating robot (manifold RK4, semi-implicit Euler;
    not Dormand-Prince, whose steps the held stop makes reject for a minute of test time),
    whose shoulder a constant torque drives onto its stop and holds there (a controller that
    returns its own array): between two progress callbacks
    (40 steps apart) the traced memory does not grow and its transient peak stays below 512 B
    (the headers of a few views). Before the loop's buffers were made once it was 1.1-1.2 kB
    (integrate's result, q.copy(), w * h, se3_dexpinv's generators, the finiteness check)
    and 4.0-4.5 kB at the stop (index arrays, np.linalg.solve)."""
    from test_joint_limits import FLOATING_URDF

    robot = robodyn.load_urdf(FLOATING_URDF, floating_base=True)
    q0 = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    v0 = np.r_[0.1, -0.2, 0.3, 0.05, 0.0, 0.0, 0.8, -0.2]
    push = np.zeros(8)
    push[6] = 0.5  # N m on the shoulder, outward
    marks = np.zeros((101, 2), dtype=np.int64)  # (current, peak) at each callback
    calls = [0]
    get, reset = tracemalloc.get_traced_memory, tracemalloc.reset_peak

    def progress(t, duration):
        marks[calls[0]] = get()
        calls[0] += 1
        reset()

    tracemalloc.start()
    try:
        res = robodyn.simulate(robot, lambda t, q, v, ref: push, q0=q0, qd0=v0,
                               duration=4.0, dt=1e-3, integrator=integrator,
                               control_rate="continuous", progress=progress)
    finally:
        tracemalloc.stop()
    assert res.limit_hits[6] > 1000  # most steps end at the stop
    # the windows after warm-up, without the last callback (after the loop)
    w = marks[3:calls[0] - 1]
    assert len(w) > 90
    growth, peak = w[-1, 0] - w[0, 0], (w[1:, 1] - w[:-1, 0]).max()
    assert growth < 256 and peak < 512, (growth, peak)
