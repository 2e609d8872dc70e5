"""The robots of the benchmark suite, and their case files for the C++ harness.

    python bench/cpp_cases.py --out build/bench/cases [--kernels build/bench/kernels]

Robots (``cases()``): UR5 and Panda (example-robot-data, skipped if not installed), the bundled
Intelledex 605 and Stanford arm, seeded random standard-DH chains (revolute, products of
inertia, tests/reference/random_models.random_dh_chain) with n = 6, 12, ..., 48, and the
free-floating Solo12 and Talos (example-robot-data, ``floating_base=True``; Pinocchio reads
them with its free-flyer root joint). Every robot is a robodyn.bench.Case: the robodyn Robot
and the stripped URDF text all libraries read.

A case file (``NAME.model``) holds robodyn's bodies in joint order (parent, joint type, axis,
origin rotation and translation, mass, centre of mass, inertia about it, armature, limits,
joint name) and the path of the stripped URDF (``NAME.urdf``) that Pinocchio's C++ parser
reads; bench/cpp/bench_vs_pinocchio.cpp reads both.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import peers as B  # noqa: E402

CHAIN_SIZES = (6, 12, 18, 24, 30, 36, 42, 48)
NAMED = ("ur5", "panda", "intelledex_605", "stanford_arm")
# free-floating robots of example-robot-data (the figures of bench/bench_floating.py)
FLOATING = {"solo12": "solo_description/robots/solo12.urdf",
            "talos": "talos_data/robots/talos_reduced.urdf"}


def chain_case(n, seed=2024):
    """Random standard-DH revolute chain of n joints (seeded; the same for every n's prefix
    is not promised)."""
    from reference import random_models as rm

    rows = rm.random_dh_chain(n, np.random.default_rng(seed + n))
    return B.case_from_dh(rows, f"chain{n}")


def floating_case(name):
    """Case of a free-floating robot of FLOATING: the stripped URDF loaded with
    ``floating_base=True`` (mimic joints independent, as Pinocchio loads them)."""
    import warnings

    import robodyn
    from _load import example_robot_data_dir

    root = example_robot_data_dir()
    path = root / FLOATING[name] if root is not None else None
    if path is None or not path.is_file():
        raise B.BenchError(f"{name}: {path} not found (example-robot-data)")
    urdf = B.strip_urdf(path.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = robodyn.load_urdf(urdf, floating_base=True, check_inertia=False,
                                  mimic="independent")
    return B.Case(name, robot, urdf)


def cases(names=NAMED, chains=CHAIN_SIZES, floating=(), log=print):
    """[Case]: the named robots that are available, the random chains, then the floating
    robots (names of FLOATING) that are available."""
    out = []
    for name in names:
        try:
            out.append(B.load_case(name))
        except B.BenchError as e:
            log(f"# {name}: skipped ({e})")
    out += [chain_case(n) for n in chains]
    for name in floating:
        try:
            out.append(floating_case(name))
        except (B.BenchError, ImportError, OSError) as e:
            log(f"# {name}: skipped ({e})")
    return out


def _fmt(x):
    return " ".join(repr(float(v)) for v in np.ravel(x))


def write_case(case, folder):
    """Write FOLDER/NAME.model and FOLDER/NAME.urdf; returns the .model path."""
    folder = pathlib.Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    urdf = folder / f"{case.name}.urdf"
    urdf.write_text(case.urdf)
    spec = case.robot.spec
    lines = ["# robodyn bench case: robodyn's bodies in joint order; Pinocchio reads the urdf",
             f"name {case.name}", f"urdf {urdf}", f"gravity {_fmt(case.robot.gravity)}"]
    for b in spec.bodies:
        T = np.asarray(b.origin, dtype=float)
        jtype = {"revolute": 0, "prismatic": 1, "floating": 2}[b.joint_type]
        lines.append(f"body {int(b.parent)} {jtype} {_fmt(b.axis)} {_fmt(T[:3, :3])} "
                     f"{_fmt(T[:3, 3])} {float(b.mass)!r} {_fmt(b.com)} {_fmt(b.inertia)} "
                     f"{float(b.armature)!r} {max(float(b.lower), -1e300)!r} "
                     f"{min(float(b.upper), 1e300)!r} {b.joint_name}")
    path = folder / f"{case.name}.model"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_kernels(case_list, folder, max_n=12, log=print):
    """Robot-specific C++ kernels for the harness from robodyn.codegen, when it exists.

    Writes FOLDER/<name>.cpp for each robot with n <= max_n and each floating robot (Solo12,
    Talos: their specialised figures against the C++ bars of issue 17) and FOLDER/kernels.hpp
    (the table the harness includes). Returns the number of robots with kernels (0: no
    header)."""
    folder = pathlib.Path(folder)
    header = folder / "kernels.hpp"
    if header.exists():
        header.unlink()
    for old in folder.glob("*.cpp") if folder.is_dir() else ():
        old.unlink()
    try:
        from robodyn import codegen
        generate = codegen.generate
    except (ImportError, AttributeError) as e:
        log(f"# specialised kernels: robodyn.codegen.generate not available ({e})")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    keys = ("inverse_dynamics", "mass_matrix", "gravity", "forward_dynamics")
    sig = {"inverse_dynamics": "const double*, const double*, const double*, double*",
           "mass_matrix": "const double*, double*", "gravity": "const double*, double*",
           "forward_dynamics": "const double*, const double*, const double*, double*"}
    entries, decls = [], []
    for case in case_list:
        if case.n > max_n and case.name not in FLOATING:
            continue
        try:
            gen = generate(case.robot, name=f"bench_{case.name}")
        except Exception as e:
            log(f"# specialised kernels for {case.name}: {type(e).__name__}: {e}")
            continue
        (folder / f"{case.name}.cpp").write_text(gen.source)
        fields = []
        for key in keys:
            decls.append(f'extern "C" void {gen.symbol(key)}({sig[key]});')
            fields.append(gen.symbol(key))
        entries.append(f'    {{"{case.name}", {", ".join(fields)}}},')
    if not entries:
        return 0
    header.write_text("\n".join([
        "// generated by bench/cpp_cases.py from robodyn.codegen; do not edit",
        "#pragma once", "#include <vector>", *decls, "namespace bench_kernels {",
        "struct Entry {", "  const char* name;",
        "  void (*id)(const double*, const double*, const double*, double*);",
        "  void (*mass)(const double*, double*);", "  void (*gravity)(const double*, double*);",
        "  void (*fd)(const double*, const double*, const double*, double*);", "};",
        "inline const std::vector<Entry>& table() {",
        "  static const std::vector<Entry> t = {", *entries, "  };", "  return t;", "}",
        "}  // namespace bench_kernels", ""]))
    return len(entries)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "bench" / "cases"))
    ap.add_argument("--kernels", default=None, help="folder for robot-specific kernels")
    a = ap.parse_args()
    cs = cases(floating=tuple(FLOATING))
    for c in cs:
        write_case(c, a.out)
    print(f"cpp_cases.py: {len(cs)} case files in {a.out}")
    if a.kernels:
        k = write_kernels(cs, a.kernels)
        print(f"cpp_cases.py: specialised kernels for {k} robot(s)")


if __name__ == "__main__":
    main()
