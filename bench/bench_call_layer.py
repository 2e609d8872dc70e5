"""The cost of robodyn's call layer: the same rnea called from Python through robodyn's
hand-made fast calls, through pybind11 and through nanobind.

    python bench/bench_call_layer.py [ROBOT ...] [--rounds 21] [--calls 2000]
                                     [--callgrind] [--reps 2000] [--json PATH]

ROBOT: ur5 (example-robot-data), a bundled robot (stanford_arm, ...), talos
(``talos_reduced``, free-floating, example-robot-data), chainN (a seeded random revolute
chain of N < 100 joints, bench/cpp_cases.py); default ur5 talos. Needs nanobind (``pip
install nanobind``: a tool of this benchmark, not a dependency of robodyn), CMake, Ninja and a
C++17 compiler; the first run builds ``bench/call_layer/`` (its own CMakeLists: two extension
modules compiled from the project's headers and model builder, -O3, no LTO) into
``build/call_layer/`` (about 3 minutes; later runs rebuild only what changed).

The robot is robodyn's: the bench case file (``bench/cpp_cases.py``) of the loaded Robot read
by the project's model builder, so every layer runs the same model; each layer's result is
checked bit for bit against ``robot.inverse_dynamics`` before timing. Every entry point makes
the checks robodyn's fast call makes on one state (sizes, finiteness, a unit base
quaternion, out= not overlapping an input) and returns a new float64 array (or writes out=).
The calls, made as user code makes them (``f(q, qd, qdd)``, ``f(q, qd, qdd, out=o)``, the
bound method looked up once):

- robodyn: ``robot.inverse_dynamics`` (METH_FASTCALL, cpp/src/fast_calls.cpp), with and
  without ``out=``;
- pybind11: ``Eigen::Ref<const VectorXd>`` inputs returning an ``Eigen::VectorXd``, with a
  writeable ``Eigen::Ref`` out=, and ``py::array_t`` inputs returning a ``py::array_t``;
- nanobind: ``nb::ndarray`` inputs returning an ``nb::ndarray<nb::numpy>`` owned by a capsule,
  with an ``nb::ndarray`` out=, and ``nb::DRef<const VectorXd>`` inputs returning a VectorXd;
- pybind11 and nanobind ``empty``: the boundary alone (arguments, checks, result array);
- pybind11 and nanobind ``dispatch only``: the call of a method taking three untyped
  arguments (``py::handle``, ``nb::handle``) and returning None, the binding's dispatch alone;
  ``METH_FASTCALL dispatch only``: the same as a hand-made METH_FASTCALL method descriptor
  (how robodyn._core installs its fast calls), the floor of a vectorcall entry;
- C++ rnea alone: the same rnea in a C++ loop (no Python), the dynamics without a layer.

Timing: one process; each round times a loop of --calls calls of every entry point, in an
order that rotates and reverses from round to round, cycling through 64 distinct seeded states
(no call sees the state of the call before); the thread's CPU clock; an empty loop over the
same rows is timed each round and subtracted. Figures are medians over rounds; ratios are the
medians of per-round ratios to robodyn's call of the same kind (new array / out=), with their
interquartile range as the noise.

--callgrind: instructions per call, counted by valgrind's callgrind in one process per robot
started with instrumentation off (the imports run uninstrumented); for each entry point the
loop runs once to warm it, then the counters are zeroed, the loop makes --reps calls and the
counters are dumped (the module's client requests). Instructions per call = (dump - the empty
loop's dump) / reps, interpreter call included, as bench/py_callgrind.py counts them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "call_layer"
SOURCE = ROOT / "bench" / "call_layer"
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

POOL = 64  # distinct states per entry point


class LayerError(RuntimeError):
    """The benchmark cannot run: a tool or robot missing, a build failing, or an entry point's
    result differing from robodyn's."""


def build_modules(log=print):
    """Configure (once) and build bench/call_layer into build/call_layer with one compile job;
    returns the build folder (on sys.path afterwards)."""
    try:
        import nanobind
        import pybind11
    except ImportError as e:
        raise LayerError(f"bench_call_layer: {e.name} is not installed (pip install nanobind "
                         "pybind11; a benchmark tool, not a robodyn dependency)") from None
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            raise LayerError(f"bench_call_layer: {tool} not found on PATH")
    if not (BUILD / "build.ninja").is_file():
        cmd = ["cmake", "-S", str(SOURCE), "-B", str(BUILD), "-G", "Ninja",
               "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
               f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
               f"-Dnanobind_DIR={nanobind.cmake_dir()}"]
        _run(cmd, "configuring bench/call_layer")
    t0 = time.perf_counter()
    _run(["cmake", "--build", str(BUILD), "-j1"], "building bench/call_layer")
    log(f"# {BUILD} up to date ({time.perf_counter() - t0:.0f} s)")
    if str(BUILD) not in sys.path:
        sys.path.insert(0, str(BUILD))
    return BUILD


def _run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-20:])
        raise LayerError(f"bench_call_layer: {what} failed:\n{tail}")


def load_robot(name):
    """(robodyn Robot, path of its bench case file) of ROBOT."""
    import cpp_cases
    import peers

    try:
        if name in cpp_cases.FLOATING:
            case = cpp_cases.floating_case(name)
        elif re.fullmatch(r"chain[1-9][0-9]?", name):
            case = cpp_cases.chain_case(int(name[5:]))
        else:
            case = peers.load_case(name)
    except peers.BenchError as e:
        raise LayerError(f"bench_call_layer: {e}") from None
    if case.robot.is_specialized():
        raise LayerError(f"bench_call_layer: {name} runs generated kernels; the comparison "
                         "is of the generic rnea")
    return case.robot, cpp_cases.write_case(case, BUILD / "cases")


def states(robot, count, rng):
    """count distinct (q, qd, qdd) rows: q uniform in the limits (at most +-pi), a random
    unit base quaternion on a floating base, qd and qdd standard normal."""
    lo, hi = robot.position_limits
    Q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi), (count, robot.nq))
    if robot.nq != robot.nv:
        Q[:, :3] = rng.normal(0, 1, (count, 3))
        quat = rng.standard_normal((count, 4))
        Q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    V = rng.standard_normal((count, robot.nv))
    A = rng.standard_normal((count, robot.nv))
    return [tuple(np.ascontiguousarray(x) for x in row) for row in zip(Q, V, A)], (Q, V, A)


class Entry:
    """One entry point: its label, the bound method, whether it takes out=, whether it
    computes nothing (not checked against robodyn)."""

    def __init__(self, label, fn, out=False, empty=False):
        self.label, self.fn, self.out, self.empty = label, fn, out, empty
        self.loop = None  # its timed loop (run_entry)


def entries(robot, case_path):
    import call_layer_nanobind as N
    import call_layer_pybind11 as P

    pb, nb = P.Core(str(case_path)), N.Core(str(case_path))
    id_ = robot.inverse_dynamics
    return [
        Entry("robodyn fast call", id_),
        Entry("robodyn fast call, out=", id_, out=True),
        Entry("pybind11 Eigen::Ref", pb.inverse_dynamics),
        Entry("pybind11 Eigen::Ref, out=", pb.inverse_dynamics_out, out=True),
        Entry("pybind11 py::array_t", pb.inverse_dynamics_array),
        Entry("nanobind nb::ndarray", nb.inverse_dynamics),
        Entry("nanobind nb::ndarray, out=", nb.inverse_dynamics_out, out=True),
        Entry("nanobind Eigen (nb::DRef)", nb.inverse_dynamics_eigen),
        Entry("pybind11 empty", pb.empty, empty=True),
        Entry("nanobind empty", nb.empty, empty=True),
        Entry("pybind11 dispatch only", pb.dispatch, empty=True),
        Entry("nanobind dispatch only", nb.dispatch, empty=True),
        Entry("METH_FASTCALL dispatch only", pb.fastcall_dispatch, empty=True),
    ], pb


def check_equal(robot, table, rows):
    """Every entry point's result equals robot.inverse_dynamics bit for bit on every row."""
    for e in table:
        if e.empty:
            continue
        for q, qd, qdd in rows:
            want = robot.inverse_dynamics(q, qd, qdd)
            if e.out:
                got = np.empty(robot.nv)
                e.fn(q, qd, qdd, out=got)
            else:
                got = e.fn(q, qd, qdd)
            if not np.array_equal(got, want):
                raise LayerError(f"{e.label}: result differs from robot.inverse_dynamics by "
                                 f"{np.max(np.abs(got - want)):.3g}")


# the timed loops: the calls as user code writes them
def _calls(fn, rows, clock):
    t0 = clock()
    for q, qd, qdd in rows:
        fn(q, qd, qdd)
    return clock() - t0


def _calls_out(fn, rows, o, clock):
    t0 = clock()
    for q, qd, qdd in rows:
        fn(q, qd, qdd, out=o)
    return clock() - t0


def _bare(rows, clock):
    t0 = clock()
    for q, qd, qdd in rows:
        pass
    return clock() - t0


def _own_copy(loop):
    """loop with a code object of its own: CPython specialises a call site for the callables
    it meets (and backs off after misses), so each entry point's loop is its own copy and no
    entry point is timed or counted through a site specialised for another's."""
    return types.FunctionType(loop.__code__.replace(), loop.__globals__, loop.__name__)


def run_entry(e, rows, o, clock=time.thread_time_ns):
    if e.loop is None:
        e.loop = _own_copy(_calls_out if e.out else _calls)
    return e.loop(e.fn, rows, o, clock) if e.out else e.loop(e.fn, rows, clock)


def time_entries(table, core, pool, arrays, rounds, calls):
    """{label: [ns per call, one per round]} with "C++ rnea alone" and "bare loop"."""
    rows = [pool[i % len(pool)] for i in range(calls)]
    o = np.empty(arrays[1].shape[1])
    for e in table:  # warm every path
        run_entry(e, rows[:len(pool)], o)
    ns = {e.label: [] for e in table}
    ns["C++ rnea alone"], ns["bare loop"] = [], []
    Q, V, A = (np.ascontiguousarray(x) for x in arrays)
    gc.disable()
    try:
        for r in range(rounds):
            k = r % len(table)
            order = table[k:] + table[:k]
            if r % 2:
                order = order[::-1]
            bare = _bare(rows, time.thread_time_ns) / calls
            ns["bare loop"].append(bare)
            for e in order:
                ns[e.label].append(run_entry(e, rows, o) / calls - bare)
            ns["C++ rnea alone"].append(core.loop_ns(Q, V, A, calls))
    finally:
        gc.enable()
    return ns


def summarise(ns):
    """{label: {"ns": median, "ratio": median per-round ratio to its robodyn call, "iqr":
    [q1, q3] of that ratio}}."""
    out = {}
    for label, xs in ns.items():
        xs = np.asarray(xs)
        row = {"ns": float(np.median(xs))}
        if label not in ("bare loop",):
            base = "robodyn fast call, out=" if "out=" in label else "robodyn fast call"
            r = xs / np.asarray(ns[base])
            row["ratio"] = float(np.median(r))
            row["iqr"] = [float(np.percentile(r, 25)), float(np.percentile(r, 75))]
        out[label] = row
    return out


# ---- callgrind -------------------------------------------------------------------------------

_DUMP = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.M)
_TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def _child_callgrind(name, reps):
    """Under valgrind (--instr-atstart=no): dump the counters of reps calls of each entry
    point, of the empty loop and of the C++ loop."""
    build_modules(log=lambda *a: None)
    robot, path = load_robot(name)
    table, core = entries(robot, path)
    pool, arrays = states(robot, POOL, np.random.default_rng(0))
    rows = [pool[i % POOL] for i in range(reps)]
    o = np.empty(robot.nv)
    Q, V, A = (np.ascontiguousarray(x) for x in arrays)
    import call_layer_pybind11 as P

    gc.disable()
    P.callgrind_start()
    for _ in range(2):  # warm, then measure
        P.callgrind_zero()
        _bare(rows, time.thread_time_ns)
        P.callgrind_dump("bare loop")
    for e in table:
        run_entry(e, rows[:POOL], o)
        P.callgrind_zero()
        run_entry(e, rows, o)
        P.callgrind_dump(e.label)
    for n in (1, reps + 1):
        core.loop_ns(Q, V, A, n)
        P.callgrind_zero()
        core.loop_ns(Q, V, A, n)
        P.callgrind_dump(f"C++ loop {n}")


def count_instructions(name, reps, log=print):
    """{label: instructions per call} of ROBOT, from one process under callgrind."""
    if shutil.which("valgrind") is None:
        raise LayerError("bench_call_layer: valgrind not found on PATH (--callgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        t0 = time.perf_counter()
        p = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                            f"--callgrind-out-file={tmp}/cg.out", sys.executable, __file__,
                            "--_callgrind-child", name, "--reps", str(reps)],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise LayerError(f"bench_call_layer: the callgrind run failed:\n{p.stderr[-2000:]}")
        dumps = {}
        for f in pathlib.Path(tmp).glob("cg.out*"):
            text = f.read_text()
            d, t = _DUMP.search(text), _TOTAL.search(text)
            if d and t:
                dumps[d.group(1).strip()] = int(t.group(1))
        log(f"# {name}: callgrind run {time.perf_counter() - t0:.0f} s, {len(dumps)} dumps")
    if "bare loop" not in dumps:
        raise LayerError("bench_call_layer: callgrind wrote no counters (was build/call_layer "
                         "compiled without valgrind's headers, valgrind/callgrind.h?)")
    bare = dumps.pop("bare loop")
    out = {k: (v - bare) / reps for k, v in dumps.items() if not k.startswith("C++ loop")}
    out["C++ rnea alone"] = (dumps[f"C++ loop {reps + 1}"] - dumps["C++ loop 1"]) / reps
    return out


# ---- report ----------------------------------------------------------------------------------

ORDER = ("robodyn fast call", "pybind11 Eigen::Ref", "pybind11 py::array_t",
         "nanobind nb::ndarray", "nanobind Eigen (nb::DRef)", "robodyn fast call, out=",
         "pybind11 Eigen::Ref, out=", "nanobind nb::ndarray, out=", "pybind11 empty",
         "nanobind empty", "pybind11 dispatch only", "nanobind dispatch only",
         "METH_FASTCALL dispatch only", "C++ rnea alone")


def table_md(name, robot, times, instructions):
    lines = [f"{name} (nq {robot.nq}, nv {robot.nv}):", "",
             "| entry point | ns per call | ratio to robodyn (IQR) | instructions per call | "
             "ratio |", "|---|---|---|---|---|"]
    for label in ORDER:
        t = times.get(label)
        if t is None:
            continue
        ratio = (f"{t['ratio']:.2f} ({t['iqr'][0]:.2f}-{t['iqr'][1]:.2f})"
                 if "ratio" in t and not label.startswith("robodyn") else "1")
        ins = instructions.get(label) if instructions else None
        base = "robodyn fast call, out=" if "out=" in label else "robodyn fast call"
        iratio = (f"{ins / instructions[base]:.2f}" if ins is not None and base in instructions
                  else "")
        lines.append(f"| {label} | {t['ns']:.0f} | {ratio} | "
                     f"{'' if ins is None else f'{ins:,.0f}'} | {iratio} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("robots", nargs="*", default=["ur5", "talos"])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--calls", type=int, default=2000, help="calls per timed loop")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions")
    ap.add_argument("--reps", type=int, default=2000, help="calls counted under callgrind")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--_callgrind-child", dest="child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    for flag in ("rounds", "calls", "reps"):
        if not 1 <= getattr(a, flag) <= 1_000_000:
            ap.error(f"--{flag}: expected 1..1000000, got {getattr(a, flag)}")
    try:
        if a.child:
            _child_callgrind(a.child, a.reps)
            return 0
        build_modules()
        result = {"python": sys.version.split()[0], "numpy": np.__version__,
                  "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "load": os.getloadavg()[0], "robots": {}}
        for name in a.robots:
            robot, path = load_robot(name)
            table, core = entries(robot, path)
            pool, arrays = states(robot, POOL, np.random.default_rng(0))
            check_equal(robot, table, pool)
            times = summarise(time_entries(table, core, pool, arrays, a.rounds, a.calls))
            ins = count_instructions(name, a.reps) if a.callgrind else None
            result["robots"][name] = {"times": times, "instructions": ins}
            print(table_md(name, robot, times, ins), "\n", flush=True)
        print(f"# load {result['load']:.1f} at start, {a.rounds} rounds of {a.calls} calls")
        if a.json:
            pathlib.Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(a.json).write_text(json.dumps(result, indent=1))
    except (LayerError, ImportError, OSError) as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
