"""Generated robot-specific kernels against the generic robodyn code: time per call in C++,
callgrind instruction counts per call, operation counts, and the per-call time through Python.

    python bench/bench_codegen.py [ROBOT ...] [--no-callgrind] [--json FILE]

ROBOT: bundled names or URDF paths (default: the bundled robots, plus UR5 and Panda when
example-robot-data is installed); ``--floating-base`` frees the root of URDF robots, and the
bundled floating seed systems (``lynch_satellite`` ...) are floating already (no Kane case:
Kane's method is for fixed bases). The C++ harness is built per robot in a temporary directory
with the extension's flags (-O3 -DNDEBUG): the generic algorithms (header-only templates) and
the generated source as its own translation unit, both called on the same 64 states in turn
(so the generic code's per-configuration cache never hits). Times are the median of 7 runs;
instruction counts (valgrind --tool=callgrind, when installed) are exact and immune to the
machine's noise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import timeit
import warnings
from pathlib import Path

import numpy as np

import robodyn
from robodyn import codegen

ROOT = Path(__file__).resolve().parents[1]

# (label, generic call, generated call) in the harness; x = qdd or tau
CASES = [
    ("inverse_dynamics", "rnea(m, d, q, qd, x, out)", "ID(q, qd, x, out)"),
    ("inverse_dynamics(kane)", "kane(m, d, q, qd, x, out)", "ID(q, qd, x, out)"),
    ("mass_matrix", "crba(m, d, q); out[0] = d.M(0, 0)", "MM(q, out)"),
    ("gravity", "gravity_torques(m, d, q, out)", "G(q, out)"),
    ("forward_dynamics", "aba(m, d, q, qd, x, out)", "FD(q, qd, x, out)"),
    ("forward_dynamics(crba)", "forward_dynamics_crba(m, d, q, qd, x, out)", "FD(q, qd, x, out)"),
]

HARNESS = r"""
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/kane.hpp"
#include "robodyn/algorithms/rnea.hpp"

using namespace robodyn;

extern "C" {
void @P@_inverse_dynamics(const double*, const double*, const double*, double*);
void @P@_mass_matrix(const double*, double*);
void @P@_gravity(const double*, double*);
void @P@_forward_dynamics(const double*, const double*, const double*, double*);
}
#define ID @P@_inverse_dynamics
#define MM @P@_mass_matrix
#define G @P@_gravity
#define FD @P@_forward_dynamics

static Model make_model() {
  std::vector<BodySpec> bs;
@BODIES@
  return build_model(bs, {}, Vec3(@GRAVITY@), @CHECK@);
}

constexpr int kStates = 64;
static Model m = make_model();
static Data d(m);
static std::vector<double> Q, QD, X, OUT;
static double sink = 0;

@FUNCS@

int main(int argc, char** argv) {
  const int nq = m.nq, nv = m.nv;
  std::mt19937 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int k = 0; k < kStates * nq; ++k) Q.push_back(3 * u(g));
  for (int k = 0; k < kStates * nv; ++k) {
    QD.push_back(u(g));
    X.push_back(u(g));
  }
  // a free-flyer's quaternion q[3..6] made unit
  for (int k = 0; m.floating && k < kStates; ++k) {
    double* quat = &Q[k * nq + 3];
    const double norm = std::sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] +
                                  quat[3] * quat[3]);
    for (int j = 0; j < 4; ++j) quat[j] /= norm;
  }
  OUT.assign(nv * nv, 0.0);
  typedef void (*Fn)(int);
  Fn fns[] = {@TABLE@};
  const int nf = sizeof(fns) / sizeof(fns[0]);
  if (argc > 2) {  // one function, a fixed number of calls (for callgrind)
    fns[std::atoi(argv[1])](std::atoi(argv[2]));
    std::printf("%g\n", sink);
    return 0;
  }
  for (int f = 0; f < nf; ++f) {
    int reps = 1000;
    for (;;) {  // calibrate to about 20 ms per run
      auto t0 = std::chrono::steady_clock::now();
      fns[f](reps);
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (dt > 0.02 || reps > (1 << 26)) break;
      reps *= 4;
    }
    std::vector<double> t;
    for (int k = 0; k < 7; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      fns[f](reps);
      t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                      .count() / reps);
    }
    std::sort(t.begin(), t.end());
    std::printf("%d %.2f\n", f, t[3]);
  }
  std::fprintf(stderr, "%g\n", sink);
  return 0;
}
"""


def _num(x):
    return repr(float(x))


def _vec(v):
    return ", ".join(_num(x) for x in np.asarray(v, dtype=float).reshape(-1))


def _bodies(spec):
    lines = []
    for b in spec.bodies:
        T = np.asarray(b.origin, dtype=float)
        lines += [
            "  {", "    BodySpec b;",
            f"    b.parent = {int(b.parent)};",
            "    b.type = JointType::" + {"revolute": "Revolute", "floating": "FreeFlyer"}.get(
                b.joint_type, "Prismatic") + ";",
            f"    b.axis = Vec3({_vec(b.axis)});",
            f"    b.origin_R << {_vec(T[:3, :3])};",
            f"    b.origin_p = Vec3({_vec(T[:3, 3])});",
            f"    b.mass = {_num(b.mass)};",
            f"    b.com = Vec3({_vec(b.com)});",
            f"    b.inertia << {_vec(b.inertia)};",
            f"    b.armature = {_num(b.armature)};",
            f"    b.damping = {_num(b.damping)};",
            f"    b.friction = {_num(b.friction)};",
            "    bs.push_back(b);", "  }"]
    return "\n".join(lines)


def _cases(robot):
    """CASES, without Kane's method on a floating base."""
    return [c for c in CASES if robot.nq == robot.nv or "kane" not in c[1]]


def _harness(robot, gen):
    funcs, table = [], []
    for k, (label, generic, special) in enumerate(_cases(robot)):
        for which, call in (("generic", generic), ("generated", special)):
            name = f"run_{which}_{k}"
            funcs.append(
                f"__attribute__((noinline)) void {name}(int reps) {{\n"
                f"  for (int r = 0; r < reps; ++r) {{\n"
                f"    const int s = r % kStates;\n"
                f"    const double *q = &Q[s * m.nq], *qd = &QD[s * m.nv], *x = &X[s * m.nv];\n"
                f"    double* out = OUT.data();\n"
                f"    {call};\n"
                f"    sink += out[0];\n"
                f"  }}\n}}\n")
            table.append(name)
    spec = robot.spec
    text = HARNESS.replace("@P@", gen.prefix)
    text = text.replace("@BODIES@", _bodies(spec))
    text = text.replace("@GRAVITY@", _vec(spec.gravity))
    text = text.replace("@CHECK@", "true" if getattr(spec, "check_inertia", True) else "false")
    text = text.replace("@FUNCS@", "\n".join(funcs))
    text = text.replace("@TABLE@", ", ".join(table))
    return text, table


def _eigen_include():
    try:
        out = subprocess.run([sys.executable, "-m", "cmeel", "cmake"], capture_output=True,
                             text=True, check=True).stdout.strip()
        path = Path(out) / "include" / "eigen3"
        if path.is_dir():
            return str(path)
    except (OSError, subprocess.CalledProcessError):
        pass
    return "/usr/include/eigen3"


def _build(robot, workdir):
    gen = codegen.generate(robot)
    text, table = _harness(robot, gen)
    work = Path(workdir)
    (work / "harness.cpp").write_text(text)
    (work / "kernels.cpp").write_text(gen.source)
    cxx = os.environ.get("CXX", "c++")
    flags = ["-O3", "-DNDEBUG", "-std=c++17", "-g"]
    objs = []
    for src in ("harness.cpp", "kernels.cpp", str(ROOT / "cpp" / "src" / "model.cpp")):
        obj = work / (Path(src).stem + ".o")
        subprocess.run([cxx, *flags, f"-I{ROOT / 'cpp' / 'include'}", f"-I{_eigen_include()}",
                        "-c", str(work / src) if "/" not in src else src, "-o", str(obj)],
                       check=True)
        objs.append(str(obj))
    exe = work / "harness"
    subprocess.run([cxx, *objs, "-o", str(exe)], check=True)
    return gen, exe, table


def _callgrind(exe, table, index, calls=2000):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        "--collect-atstart=no", f"--toggle-collect={table[index]}*",
                        str(exe), str(index), str(calls)],
                       capture_output=True, check=True)
        text = out.read_text()
        m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
        return int(m.group(1)) / calls


def _python_times(robot, special):
    rng = np.random.default_rng(3)
    nq, n = robot.nq, robot.nv
    q, qd, x = rng.uniform(-3, 3, nq), rng.standard_normal(n), rng.standard_normal(n)
    Q, QD, X = rng.standard_normal((1000, nq)), *rng.standard_normal((2, 1000, n))
    if nq != n:  # a free-flyer's unit quaternion
        q[3:7] /= np.linalg.norm(q[3:7])
        Q[:, 3:7] /= np.linalg.norm(Q[:, 3:7], axis=1, keepdims=True)
    rows = []
    for label, fn in (("inverse_dynamics", lambda r: r.inverse_dynamics(q, qd, x)),
                      ("inverse_dynamics batch/row",
                       lambda r: r.inverse_dynamics(Q, QD, X)),
                      ("mass_matrix", lambda r: r.mass_matrix(q)),
                      ("forward_dynamics", lambda r: r.forward_dynamics(q, qd, x))):
        per = []
        for r in (robot, special):
            number = 20 if "batch" in label else 20000
            t = min(timeit.repeat(lambda: fn(r), number=number, repeat=5)) / number
            per.append(t * 1e9 / (1000 if "batch" in label else 1))
        rows.append((label, per[0], per[1]))
    return rows


def bench(robot, use_callgrind=True):
    special = robot.specialized()
    with tempfile.TemporaryDirectory() as tmp:
        gen, exe, table = _build(robot, tmp)
        res = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
        times = {}
        for line in res.stdout.split("\n"):
            if line.strip():
                i, t = line.split()
                times[int(i)] = float(t)
        instr = {}
        if use_callgrind and shutil.which("valgrind"):
            for i in range(len(table)):
                instr[i] = _callgrind(exe, table, i)
    rows = []
    for k, (label, _, _) in enumerate(_cases(robot)):
        row = {"case": label, "generic_ns": times[2 * k], "generated_ns": times[2 * k + 1],
               "time_ratio": times[2 * k + 1] / times[2 * k]}
        if instr:
            row.update(generic_instr=instr[2 * k], generated_instr=instr[2 * k + 1],
                       instr_ratio=instr[2 * k + 1] / instr[2 * k])
        rows.append(row)
    counts = {f: gen.kernels[f].counts for f in codegen.FUNCTIONS}
    generic_counts = {f: robot.op_counts(a) for a, f in
                      (("rnea", "inverse_dynamics"), ("crba", "mass_matrix"),
                       ("gravity", "gravity"), ("aba", "forward_dynamics"))}
    return {"robot": robot.name, "n": robot.n, "nq": robot.nq, "cpp": rows, "counts": counts,
            "generic_counts": generic_counts, "python": _python_times(robot, special)}


def _robots(names, floating_base=False):
    if names:
        from robodyn.cli import load_robot

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [load_robot(x, floating_base=floating_base and x.endswith(".urdf"))
                    for x in names]
    robots = [robodyn.robots.load(x) for x in robodyn.robots.available()]
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from _load import example_robot_data_dir

        base = example_robot_data_dir()
    except ImportError:
        base = None
    if base is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for rel in ("ur_description/urdf/ur5_robot.urdf",
                        "panda_description/urdf/panda.urdf"):
                robots.append(robodyn.load_urdf(str(base / rel)))
    return robots


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("robots", nargs="*")
    p.add_argument("--no-callgrind", action="store_true")
    p.add_argument("--json", default=None)
    p.add_argument("--floating-base", action="store_true",
                   help="free the root link of the URDF robots given")
    args = p.parse_args(argv)
    results = []
    print("counting: mul = multiplications + divisions, add = additions + subtractions "
          "(negation free), trig = sin/cos/sqrt; instructions from callgrind")
    for robot in _robots(args.robots, args.floating_base):
        r = bench(robot, not args.no_callgrind)
        results.append(r)
        print(f"\n{r['robot']} (" + (f"nq = {r['nq']}, nv = {r['n']})" if r["nq"] != r["n"]
                                       else f"n = {r['n']})"))
        print(f"  {'C++ per call':<24}{'generic ns':>11}{'generated':>11}{'ratio':>7}"
              f"{'generic instr':>15}{'generated':>11}{'ratio':>7}")
        for row in r["cpp"]:
            line = (f"  {row['case']:<24}{row['generic_ns']:>11.1f}{row['generated_ns']:>11.1f}"
                    f"{row['time_ratio']:>7.2f}")
            if "instr_ratio" in row:
                line += (f"{row['generic_instr']:>15.0f}{row['generated_instr']:>11.0f}"
                         f"{row['instr_ratio']:>7.2f}")
            print(line)
        print(f"  {'operations':<24}{'generic mul/add/trig':>24}{'generated':>20}")
        for f in codegen.FUNCTIONS:
            gc, c = r["generic_counts"][f], r["counts"][f]
            print(f"  {f:<24}{gc['mul']:>10}/{gc['add']}/{gc['trig']:<8}"
                  f"{c['mul']:>10}/{c['add']}/{c['trig']}")
        print(f"  {'through Python':<24}{'generic ns':>11}{'generated':>11}{'ratio':>7}")
        for label, a, b in r["python"]:
            print(f"  {label:<24}{a:>11.1f}{b:>11.1f}{b / a:>7.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
