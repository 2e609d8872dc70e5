"""The full benchmark suite: robodyn against Pinocchio, MuJoCo and the Robotics Toolbox.

    python bench/run_all.py                  # everything, a few minutes on 2 cores
    python bench/run_all.py --quick          # fewer rounds, no callgrind
    python bench/run_all.py --no-cpp         # Python views only

Robots: UR5 and Panda (example-robot-data), the bundled Intelledex 605 and Stanford arm, random
standard-DH chains n = 6..48 (bench/cpp_cases.py). Three views, every library in the same
process, interleaved, medians of rounds, ratios to Pinocchio:

1. Python, one call per state (robodyn.bench; what a Python control loop pays);
2. Python, batch: one robodyn call on N = 10,000 states, per state, against one pin call;
3. C++, per call: bench/cpp/bench_vs_pinocchio.cpp (built by bench/build_cpp.sh), robodyn
   and Pinocchio's headers compiled with the same flags, both from the same URDF; a latency
   distribution of 10^6 inverse-dynamics calls; instruction counts under
   valgrind --tool=callgrind (independent of the machine's load).

Writes bench/results/: results.json (all numbers), RESULTS.md (the tables), bench.png (the
plot) and PERFORMANCE.md (the short text for the README).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import robodyn  # noqa: E402
import peers as B  # noqa: E402

import cpp_cases  # noqa: E402
from run_common import BUILD, SIX, fit_growth, log, machine  # noqa: E402,F401
from run_cpp import build_cpp, callgrind_counts, callgrind_profile, run_harness  # noqa: E402,F401
from run_reports import (CPP_QUANTITY_NAMES, CPP_REF, CPP_VARIANTS, VARIANTS, cpp_table,  # noqa: E402,F401
                         growth_table, latency_table, performance_md, plot, targets, write_reports)


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, no callgrind")
    ap.add_argument("--no-cpp", action="store_true", help="skip the C++ views")
    ap.add_argument("--no-build", action="store_true", help="use the built C++ harness")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--py-callgrind", action="store_true",
                    help="count the instructions of Python calls (UR5; ~10 min) into "
                         "OUT/py_callgrind.json (otherwise an existing file is reported)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--latency", type=int, default=1_000_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the reports from OUT/results.json (and py_callgrind.json)")
    a = ap.parse_args()
    rounds = a.rounds or (9 if a.quick else 25)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.report_only:
        write_reports(json.loads((out / "results.json").read_text()), out)
        return
    t_start = time.time()
    res = {"machine": machine(), "rounds": rounds, "batch": a.batch}
    log(f"machine: {res['machine']}")
    robodyn.set_num_threads(1)

    cases = cpp_cases.cases(log=log)
    res["python"] = []
    for c in cases:
        t0 = time.time()
        r = B.bench_case(c, rounds=rounds, batch=a.batch)
        res["python"].append(r)
        log(f"python {c.name} (n = {c.n}): {time.time() - t0:.1f} s")
        for note in r["notes"]:
            log(f"  note: {note}")

    chains = [r for r in res["python"] if r["name"].startswith("chain")]
    growth = {}
    if len(chains) >= 3:
        ns = [r["n"] for r in chains]
        for q, lab in (("id", "robodyn batch"), ("id", "robodyn kane batch"),
                       ("fd", "robodyn batch"), ("fd", "robodyn kane batch"),
                       ("M", "robodyn batch")):
            ts = [r["batch"][q][lab][0] * 1e9 for r in chains]
            growth[f"Python {q} {lab}"] = fit_growth(ns, ts)

    if not a.no_cpp:
        if not a.no_build:
            build_cpp()
        files = [BUILD / "cases" / f"{c.name}.model" for c in cases]
        for c in cases:
            cpp_cases.write_case(c, BUILD / "cases")
        # the free-floating robots (C++ view only; bench/bench_floating.py times them from Python)
        for c in cpp_cases.cases((), (), tuple(cpp_cases.FLOATING), log=log):
            files.append(cpp_cases.write_case(c, BUILD / "cases"))
        binary = BUILD / "bench_vs_pinocchio"
        crounds = 21 if a.quick else 61
        log("C++ per call ...")
        res["cpp"] = run_harness(binary, files, "--rounds", str(crounds))
        log("C++ per call against the wheel's compiled Pinocchio ...")
        res["cpp_lib"] = run_harness(BUILD / "bench_vs_pinocchio_lib",
                                     [f for f in files if not f.stem.startswith("chain")
                                      or f.stem in ("chain6", "chain48")],
                                     "--rounds", str(crounds))
        lat_cases = [BUILD / "cases" / f"{k}.model" for k in ("ur5", "intelledex_605")
                     if (BUILD / "cases" / f"{k}.model").exists()]
        calls = 100_000 if a.quick else a.latency
        log(f"C++ latency, {calls} calls ...")
        res["latency"] = run_harness(binary, lat_cases, "--latency", str(calls))
        cpp_chains = [r for r in res["cpp"] if r["case"].startswith("chain")]
        if len(cpp_chains) >= 3:
            ns = [r["n"] for r in cpp_chains]
            for name in ("robodyn rnea", "robodyn kane", "robodyn aba", "robodyn kane_forward",
                         "robodyn crba", "pinocchio rnea", "pinocchio aba"):
                growth[f"C++ {name}"] = fit_growth(ns, [r["impl"][name]["ns"]
                                                        for r in cpp_chains])
        if not (a.quick or a.no_callgrind):
            res["callgrind"] = {}
            for k in ("ur5", "intelledex_605", "stanford_arm"):
                f = BUILD / "cases" / f"{k}.model"
                if not f.exists():
                    continue
                names = [x for x in subprocess.run([str(binary), "--list", str(f)],
                                                   capture_output=True, text=True
                                                   ).stdout.split("\n") if x]
                log(f"callgrind {k}: {len(names)} implementations ...")
                res["callgrind"][k] = callgrind_counts(binary, f, names)
            res["callgrind_chains"] = {}
            growth_impls = ["robodyn rnea", "robodyn kane", "robodyn aba", "robodyn crba",
                            "pinocchio rnea", "pinocchio aba", "pinocchio crba"]
            for c in cases:
                if c.name.startswith("chain"):
                    log(f"callgrind {c.name} ...")
                    res["callgrind_chains"][c.name] = callgrind_counts(
                        binary, BUILD / "cases" / f"{c.name}.model", growth_impls, reps=200)
            cgc = res["callgrind_chains"]
            ns = sorted(int(k[5:]) for k in cgc)
            for name in growth_impls:
                growth[f"instructions {name}"] = fit_growth(ns, [cgc[f"chain{n}"][name]
                                                                 for n in ns])
            prof = out / "profiles"
            prof.mkdir(exist_ok=True)
            res["profiles"] = {}
            for k, impl in (("ur5", "robodyn crba"), ("ur5", "pinocchio crba"),
                            ("chain48", "robodyn crba"), ("ur5", "robodyn rnea")):
                f = BUILD / "cases" / f"{k}.model"
                name = f"{k}_{impl.replace(' ', '_')}.txt"
                log(f"callgrind profile {k} {impl} ...")
                res["profiles"][f"{k} {impl}"] = callgrind_profile(binary, f, impl, prof / name)
    pyc = out / "py_callgrind.json"
    if a.py_callgrind:
        import py_callgrind

        log("callgrind of Python calls, ur5 (slow) ...")
        pyc.write_text(json.dumps({"robot": "ur5", "instructions": py_callgrind.table("ur5")},
                                  indent=1))
    res["growth"] = growth
    res["elapsed_s"] = time.time() - t_start
    (out / "results.json").write_text(json.dumps(res, indent=1, default=float))
    write_reports(res, out)
    log(f"wrote {out}/RESULTS.md, PERFORMANCE.md, bench.png, results.json "
        f"({time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
