"""CPU time of robodyn.simulate's Python loop (``engine="python"``), one source tree against
another: the loop's speed before and after a change.

Cases: the Intelledex 605 (fixed base, n = 6) under computed torque at 1 kHz on the CLI's
default reference, by "rk4", "euler" and "rk45", and with continuous control by "rk4"; the
Lynch satellite (a free-floating base) passive and under a Python controller, by "rk4",
"euler" and "rk45". Each case's figure is the least CPU time (``stats["cpu_time"]``) of ``--repeat`` runs.

With ``--against DIR`` (another tree's ``python/`` folder, holding its own compiled
``_core``), each round runs every case in a fresh interpreter on this tree and on DIR, in
alternating order, and the report gives per case the median over rounds of both times and the
median of the per-round ratios this / DIR (below 1: this tree is faster). Without it, the
medians of this tree only.

    python bench/bench_sim_loop.py [--against /tmp/old/python] [--rounds 7] [--duration 1]
                                   [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
PYTHON_DIR = HERE.parent / "python"

CASES = ("fixed rk4", "fixed euler", "fixed rk45", "fixed rk4 continuous",
         "floating rk4", "floating euler", "floating rk45", "floating rk4 controller")


def run_cases(duration, repeat):
    """{case: least CPU seconds of ``repeat`` runs} on the robodyn first on sys.path."""
    import numpy as np

    import robodyn
    from robodyn import control as ct
    from robodyn.cli import default_reference

    arm = robodyn.robots.load("intelledex_605")
    ref = default_reference(arm)
    sat = robodyn.robots.load("lynch_satellite")
    q0 = np.zeros(sat.nq)
    q0[6] = 1.0
    v0 = np.linspace(-0.3, 0.4, sat.nv)

    def push(t, q, v, r):
        tau = -0.5 * v
        tau[:6] = 0.0
        return tau

    def ct_law():
        return ct.ComputedTorque(arm, kp=400.0, kd=40.0)

    runs = {
        "fixed rk4": lambda: robodyn.simulate(arm, ct_law(), ref, duration=duration,
                                              engine="python"),
        "fixed euler": lambda: robodyn.simulate(arm, ct_law(), ref, duration=duration,
                                                integrator="euler", engine="python"),
        "fixed rk45": lambda: robodyn.simulate(arm, ct_law(), ref, duration=duration / 10,
                                               integrator="rk45", engine="python"),
        "fixed rk4 continuous": lambda: robodyn.simulate(
            arm, ct_law(), ref, duration=duration, control_rate=None, engine="python"),
        "floating rk4": lambda: robodyn.simulate(sat, q0=q0, qd0=v0, duration=duration),
        "floating euler": lambda: robodyn.simulate(sat, q0=q0, qd0=v0, duration=duration,
                                                   integrator="euler"),
        "floating rk45": lambda: robodyn.simulate(sat, q0=q0, qd0=v0, duration=duration,
                                                  integrator="rk45"),
        "floating rk4 controller": lambda: robodyn.simulate(sat, push, q0=q0, qd0=v0,
                                                            duration=duration),
    }
    runs["fixed rk4"]()  # warm-up: imports, first calls
    return {name: min(runs[name]().stats["cpu_time"] for _ in range(repeat)) for name in CASES}


def in_subprocess(python_dir, duration, repeat):
    env = dict(os.environ, PYTHONPATH=str(python_dir))
    out = subprocess.run([sys.executable, __file__, "--child", "--duration", str(duration),
                          "--repeat", str(repeat)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=pathlib.Path, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--duration", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_cases(args.duration, args.repeat)))
        return
    trees = [PYTHON_DIR] + ([args.against] if args.against else [])
    times = [{c: [] for c in CASES} for _ in trees]
    for r in range(args.rounds):
        order = range(len(trees)) if r % 2 == 0 else reversed(range(len(trees)))
        for i in order:
            for case, s in in_subprocess(trees[i], args.duration, args.repeat).items():
                times[i][case].append(s)
    print(f"Python loop, {args.duration:g} s simulated (rk45 on the arm: a tenth), "
          f"CPU s (least of {args.repeat} runs), medians of {args.rounds} rounds")
    if args.against is None:
        for case in CASES:
            print(f"  {case:<26} {statistics.median(times[0][case]):.4f}")
        return
    print(f"  {'case':<26} {'this':>8} {'against':>8} {'ratio':>7}")
    for case in CASES:
        new, old = times[0][case], times[1][case]
        ratio = statistics.median(a / b for a, b in zip(new, old))
        print(f"  {case:<26} {statistics.median(new):8.4f} {statistics.median(old):8.4f} "
              f"{ratio:7.3f}")


if __name__ == "__main__":
    main()
