"""The C++ view of the benchmark suite (bench/run_all.py): building and running the harness, and
callgrind's instruction counts and profiles."""

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
from run_common import BUILD, SIX, log  # noqa: E402,F401


# ---------------------------------------------------------------------------------------------
# C++


def build_cpp():
    log("building the C++ harness (bench/build_cpp.sh) ...")
    r = subprocess.run(["bash", str(ROOT / "bench" / "build_cpp.sh")], capture_output=True,
                       text=True)
    if r.returncode != 0:
        log(r.stdout[-2000:] + r.stderr[-4000:])
        raise RuntimeError("bench/build_cpp.sh failed")
    log(r.stdout.strip())


def run_harness(binary, files, *extra):
    r = subprocess.run([str(binary), *extra, *map(str, files)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{binary.name} failed ({r.returncode}): {r.stderr[-2000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def callgrind_counts(binary, case_file, impls, reps=1000, workers=2):
    """Instructions per call of each implementation: (Ir(reps) - Ir(0)) / reps, the harness
    counting only its timed loop (--instr-atstart=no and callgrind's client requests). The
    counts do not depend on the machine's load, so two runs go at a time."""
    from concurrent.futures import ThreadPoolExecutor

    if shutil.which("valgrind") is None:
        return {"error": "valgrind not installed"}

    def total(job):
        impl, n = job
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                            "--instr-atstart=no",
                            str(binary), "--states", "64", "--count", impl, "--reps", str(n),
                            str(case_file)], capture_output=True, text=True)
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if r.returncode != 0 or not m:
            raise RuntimeError(f"callgrind {impl}: {r.stderr[-1500:]}")
        return int(m.group(1))

    jobs = [(impls[0], 0)] + [(impl, reps) for impl in impls]
    with ThreadPoolExecutor(workers) as ex:
        totals = list(ex.map(total, jobs))
    return {impl: (t - totals[0]) / reps for impl, t in zip(impls, totals[1:])}


def callgrind_profile(binary, case_file, impl, path, reps=1000, top=25):
    """Where ``impl`` spends its instructions: callgrind_annotate's per-function and per-line
    counts (the harness is built with -g), written to ``path``; returns the top lines."""
    out = BUILD / "callgrind.profile.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    "--instr-atstart=no",
                    str(binary), "--states", "64", "--count", impl, "--reps", str(reps),
                    str(case_file)], capture_output=True, text=True, check=True)
    r = subprocess.run(["callgrind_annotate", "--auto=yes", "--threshold=99", str(out)],
                       capture_output=True, text=True)
    out.unlink(missing_ok=True)
    pathlib.Path(path).write_text(r.stdout)
    lines = [ln for ln in r.stdout.splitlines() if re.match(r"^\s*[\d,]+ \(", ln)]
    return lines[:top]
