"""Two builds of robodyn compared by their Python-call speed relative to Pinocchio: for a change
of compile flags or of how the C++ is split into units (docs/build.md).

    python bench/build_compare.py --a /path/A/python --b /path/B/python --pairs 4
    python bench/build_compare.py --b build/py        # A: the robodyn installed in this venv

Each side is a folder on PYTHONPATH holding a robodyn package with its compiled _core (empty:
the installed robodyn). The two cannot share a process (one extension module name), so each
run is a process of its own, A and B alternating (--pairs times each). A run measures
robodyn.bench.bench_case on one robot against Pinocchio in the same process (interleaved
rounds, CPU clock, a pool of distinct random states), so the ratio to Pinocchio cancels most of
the machine's load; the report is, per quantity, the median over runs of robodyn's ratio for
single calls and for one batch call per state.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys
import peers as bench
import robodyn
case = bench.load_case(sys.argv[1])
res = bench.bench_case(case, quantities=tuple(sys.argv[2].split(",")), peers=("pinocchio",),
                       rounds=int(sys.argv[3]), batch=int(sys.argv[4]), specialized=False)
out = {"core": robodyn._core.__file__}
for q in res["single"]:
    out[q] = res["single"][q].get("robodyn", (None, None))[1]
    b = res["batch"].get(q, {}).get("robodyn batch")
    out[q + " batch"] = b[1] if b else None
print(json.dumps(out))
"""


def run_side(path, args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if path:
        env["PYTHONPATH"] = path
    else:
        env.pop("PYTHONPATH", None)
    cmd = [sys.executable, "-c", CHILD, args.robot, args.quantities, str(args.rounds),
           str(args.batch)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", default="", help="PYTHONPATH of build A (empty: the installed one)")
    ap.add_argument("--b", required=True, help="PYTHONPATH of build B")
    ap.add_argument("--robot", default="ur5")
    ap.add_argument("--quantities", default="id,M,fd")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--batch", type=int, default=2000)
    args = ap.parse_args()
    runs = {"A": [], "B": []}
    for k in range(args.pairs):
        for side, path in (("A", args.a), ("B", args.b)):
            r = run_side(path, args)
            runs[side].append(r)
            print(f"run {k + 1} {side}: " + ", ".join(
                f"{q} {v:.3f}" for q, v in r.items() if isinstance(v, float)), flush=True)
    print(f"A: {runs['A'][0]['core']}\nB: {runs['B'][0]['core']}")
    print(f"{'ratio to pinocchio (median of runs)':<40}{'A':>8}{'B':>8}")
    for q in runs["A"][0]:
        if q == "core" or runs["A"][0][q] is None:
            continue
        a = statistics.median(r[q] for r in runs["A"])
        b = statistics.median(r[q] for r in runs["B"])
        print(f"{q:<40}{a:>8.3f}{b:>8.3f}")


if __name__ == "__main__":
    main()
