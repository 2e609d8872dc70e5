"""Cost of Kane's method against Newton-Euler (and Kane forward dynamics against ABA / CRBA).

    python bench/bench_kane.py [--batch 2000] [--reps 31] [--seed 1]

For each model (the bundled Intelledex 605 and Stanford arm, random mixed chains of n = 6, 12,
24, 48 joints) the two methods are timed in the same process, interleaved (the order alternates
every repetition), and the medians are compared:

- batch: one call on (N, n) arrays of random states, the C++ loop without Python overhead,
  reported per state;
- single: N calls on (n,) arrays with a preallocated `out=`, per call (Python overhead included).

Operation counts (robot.op_counts) are printed too when the core provides them. The growth
order is the slope of log(time) against log(n) over the random chains.
"""

import argparse
import pathlib
import sys
import time

import numpy as np

import robodyn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from reference import random_models as rm  # noqa: E402


def models(seed):
    out = []
    for name in ("intelledex_605", "stanford_arm"):
        try:
            out.append((name, getattr(robodyn.robots, name)()))
        except Exception as e:  # a bundled robot that does not load yet is reported, not fatal
            print(f"# {name}: not loaded ({type(e).__name__}: {e})")
    for n in (6, 12, 24, 48):
        spec = rm.random_chain(n, np.random.default_rng(seed + n), joint_types="mixed")
        out.append((f"chain n={n}", robodyn.Robot(spec)))
    return out


def time_pair(fa, fb, reps):
    """Medians of interleaved timings of two zero-argument callables (order alternates)."""
    ta, tb = [], []
    for k in range(reps):
        for f, acc in (((fa, ta), (fb, tb)) if k % 2 == 0 else ((fb, tb), (fa, ta))):
            t0 = time.perf_counter()
            f()
            acc.append(time.perf_counter() - t0)
    return float(np.median(ta)), float(np.median(tb))


def op_counts(robot, algo):
    try:
        c = robot.op_counts(algo)
        return f"{c['mul']}m {c['add']}a"
    except Exception:
        return "-"


def bench(robot, N, reps, rng, pair, make_args):
    """(batch ns a, batch ns b, single ns a, single ns b) for pair = ((fn_a, meth_a), ...)."""
    n = robot.n
    args = make_args(robot, N, rng)
    out_b = np.empty((N, n))
    out_s = np.empty(n)
    (fa, ma), (fb, mb) = pair
    ba, bb = time_pair(lambda: fa(*args, method=ma, out=out_b),
                       lambda: fb(*args, method=mb, out=out_b), reps)
    short = tuple(a[:N // 4] for a in args)

    def singles(f, m):
        rows = [tuple(a[i] for a in short) for i in range(len(short[0]))]

        def run():
            for r in rows:
                f(*r, method=m, out=out_s)
        return run
    sa, sb = time_pair(singles(fa, ma), singles(fb, mb), max(5, reps // 3))
    return ba / N * 1e9, bb / N * 1e9, sa / len(short[0]) * 1e9, sb / len(short[0]) * 1e9


def id_args(robot, N, rng):
    Q, QD, QDD = (np.ascontiguousarray(rng.uniform(-1, 1, (N, robot.n))) for _ in range(3))
    return Q, QD, QDD


def fd_args(robot, N, rng):
    Q, QD, QDD = id_args(robot, N, rng)
    return Q, QD, robot.inverse_dynamics(Q, QD, QDD)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=31)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    robodyn.set_num_threads(1)
    rng = np.random.default_rng(a.seed)
    ms = models(a.seed)

    print(f"\nInverse dynamics, Kane vs Newton-Euler (medians of {a.reps} interleaved runs; "
          f"batch N = {a.batch}, ns per state; single = ns per Python call)")
    head = (f"{'model':<16}{'n':>3}  {'NE batch':>9}{'Kane batch':>11}{'ratio':>7}  "
            f"{'NE single':>10}{'Kane single':>12}{'ratio':>7}  {'ops NE':>13}{'ops Kane':>13}")
    print(head)
    print("-" * len(head))
    chain = []
    for name, r in ms:
        ne, ka, sne, ska = bench(r, a.batch, a.reps, rng,
                                 ((r.inverse_dynamics, "rnea"), (r.inverse_dynamics, "kane")),
                                 id_args)
        print(f"{name:<16}{r.n:>3}  {ne:>9.0f}{ka:>11.0f}{ka / ne:>7.2f}  "
              f"{sne:>10.0f}{ska:>12.0f}{ska / sne:>7.2f}  "
              f"{op_counts(r, 'rnea'):>13}{op_counts(r, 'kane'):>13}")
        if name.startswith("chain"):
            chain.append((r.n, ne, ka))
    if len(chain) >= 2:
        ns, ne, ka = (np.array(x, dtype=float) for x in zip(*chain))
        sne = np.polyfit(np.log(ns), np.log(ne), 1)[0]
        ska = np.polyfit(np.log(ns), np.log(ka), 1)[0]
        print(f"growth (slope of log t vs log n, chains): Newton-Euler {sne:.2f}, Kane {ska:.2f}")

    print(f"\nForward dynamics, Kane (F by composites + Cholesky) vs ABA and CRBA + Cholesky "
          f"(batch, ns per state)")
    head = f"{'model':<16}{'n':>3}  {'ABA':>8}{'Kane':>8}{'ratio':>7}  {'CRBA':>8}{'Kane':>8}{'ratio':>7}"
    print(head)
    print("-" * len(head))
    for name, r in ms:
        fd = r.forward_dynamics
        aba, ka1, _, _ = bench(r, a.batch, a.reps, rng, ((fd, "aba"), (fd, "kane")), fd_args)
        crba, ka2, _, _ = bench(r, a.batch, a.reps, rng, ((fd, "crba"), (fd, "kane")), fd_args)
        print(f"{name:<16}{r.n:>3}  {aba:>8.0f}{ka1:>8.0f}{ka1 / aba:>7.2f}  "
              f"{crba:>8.0f}{ka2:>8.0f}{ka2 / crba:>7.2f}")


if __name__ == "__main__":
    main()
