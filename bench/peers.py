"""``robodyn bench``: time robodyn against its peers, from Python, in one process.

This file is outside the installed package: ``robodyn bench`` loads it from the source tree
(robodyn.cli.commands.peers_benchmark), the scripts of bench/ import it as ``peers``.

What is timed, for each robot and each quantity (inverse dynamics ``id``, mass matrix ``M``,
forward dynamics ``fd``, gravity torques ``g``):

- **single**: one call from Python on a (n,) state, what a Python control loop pays. robodyn
  plain (a new array per call), with ``out=``, with ``method="kane"`` and, when
  ``robot.specialized()`` exists, the specialised robot; Pinocchio (``pin.rnea``, ``pin.crba``,
  ``pin.aba``, ``pin.computeGeneralizedGravity``; both conventions of crba / aba); MuJoCo
  (``mj_inverse``; the minimal ``mj_kinematics, mj_comPos, mj_comVel, mj_rne`` pipeline;
  ``mj_crb + mj_fullM``; ``mj_forward``); the Robotics Toolbox (``rne``, ``inertia``,
  ``accel``, ``gravload`` of a DHRobot) where a DH table of the robot is known.
- **batch**: one robodyn call on (N, n) arrays (the C++ loop, one thread), per state, against
  one ``pin`` call from Python (Pinocchio has no batch call).

Method: every library gets the same pool of distinct random states (so robodyn's
per-configuration cache never hits), converted once to its joint order; each round times a
loop over the pool for every implementation, the order rotating and reversing from round to
round; the time of an empty loop over the pool is subtracted; the reported time is the median
over rounds and the ratio is the median over rounds of the per-round ratio to Pinocchio (the
faster of its two conventions where it has two). Before anything is timed, every
implementation's result is compared with robodyn's on a few states.

All models are read from one URDF text: the robot's URDF with visual, collision, dynamics
(damping and friction), mimic, transmission and gazebo elements removed, continuous joints
turned into revolute ones with wide limits and infinite effort or velocity limits made finite, so every library computes the same rigid-body
equation ``tau = (M(q) + diag(armature)) qdd + C(q, qd) qd + g(q)``. Rotor inertia (robodyn's
``<robodyn armature>`` extension) is copied into Pinocchio's and MuJoCo's models; MuJoCo gets
constraints, contacts and passive forces disabled.

Peers are optional: each is used only if it imports. bench/run_all.py in the source tree runs
the full suite (random chains, the C++ harness, plots).
"""

from __future__ import annotations

import gc
import math
import sys
import time

import numpy as np

from peer_cases import (PEERS, QUANTITIES, QUANTITY_NAMES, BenchError, Case,  # noqa: F401
                        case_from_dh, example_robot_data_urdf, load_case, random_states,
                        strip_urdf)
from peer_impls import Impl, check_agreement, implementations

__all__ = ["Case", "Impl", "strip_urdf", "load_case", "case_from_dh", "example_robot_data_urdf",
           "implementations", "check_agreement", "measure", "bench_case", "markdown_tables",
           "run", "QUANTITIES", "PEERS"]



# ---------------------------------------------------------------------------------------------
# timing


def measure(impls, rounds=21, warmup=1, clock="cpu", loop_budget=0.02):
    """Interleaved timing: {label: array of seconds per state, one per round}.

    Each round times one loop over ``im.args`` for every implementation, in an order that
    rotates and reverses from round to round; an empty loop over the same rows is timed in
    every round and subtracted from the single-call loops. ``clock="cpu"`` reads this
    thread's CPU time (time spent descheduled on a shared machine is not counted), "wall"
    the wall clock. An implementation whose loop takes longer than ``loop_budget`` seconds
    loops over fewer states. Garbage collection is off while timing."""
    perf = time.thread_time_ns if clock == "cpu" else time.perf_counter_ns
    samples = {im.label: [] for im in impls}
    for im in impls:
        for _ in range(warmup):
            t0 = time.perf_counter()
            for a in im.args:
                im.fn(*a)
            took = time.perf_counter() - t0
        # a slow implementation (the Toolbox on a long chain) loops over fewer states
        if not im.batch and took > loop_budget and len(im.args) > 4:
            keep = max(4, int(len(im.args) * loop_budget / took))
            im.args, im.count = im.args[:keep], keep
    enabled = gc.isenabled()
    gc.disable()
    try:
        k = len(impls)
        for r in range(rounds):
            order = impls[r % k:] + impls[:r % k]
            if r % 2:
                order = order[::-1]
            for im in order:
                fn, args = im.fn, im.args
                t0 = perf()
                for a in args:
                    fn(*a)
                t1 = perf()
                for a in args:
                    pass
                t2 = perf()
                loop = (t2 - t1) if not im.batch else 0
                samples[im.label].append(max(t1 - t0 - loop, 0) * 1e-9 / im.count)
    finally:
        if enabled:
            gc.enable()
    return {lab: np.array(v) for lab, v in samples.items()}


def _reference(quantity, samples):
    """Label of the Pinocchio implementation with the smallest median (None if absent)."""
    pins = [lab for lab in samples if lab.startswith("pinocchio") and not lab.endswith("batch")]
    if not pins:
        return None
    return min(pins, key=lambda lab: float(np.median(samples[lab])))


def summarize(samples, ref):
    """{label: (median s per state, median of per-round ratios to ref or nan)}."""
    out = {}
    for lab, s in samples.items():
        ratio = float(np.median(s / samples[ref])) if ref else float("nan")
        out[lab] = (float(np.median(s)), ratio)
    return out


def bench_case(case, quantities=QUANTITIES, peers=PEERS, rounds=21, pool_size=128,
               batch=10_000, specialized=True, seed=0, clock="cpu", log=None):
    """Everything for one Case: {"name", "n", "notes", "single": {q: {label: (s, ratio)}},
    "batch": {q: {label: (s, ratio)}}, "ref": {q: label}, "labels_notes": {label: note}}."""
    rng = np.random.default_rng(seed)
    pool = random_states(case.robot, pool_size, rng)
    notes = list(case.notes)
    impls = implementations(case, pool, quantities, peers, batch, specialized, notes)
    result = {"name": case.name, "n": case.n, "notes": notes, "single": {}, "batch": {},
              "ref": {}, "impl_notes": {}}
    for q in quantities:
        keep, bad = check_agreement(impls[q])
        notes.extend(bad)
        for im in keep:
            if im.note:
                result["impl_notes"][f"{im.label} {q}"] = im.note
        single = [im for im in keep if not im.batch]
        samples = measure(single, rounds, clock=clock)
        ref = _reference(q, samples)
        result["ref"][q] = ref
        result["single"][q] = summarize(samples, ref)
        batch_impls = [im for im in keep if im.batch]
        if batch_impls:
            pin_single = [im for im in single if im.label == ref] if ref else []
            bs = measure(batch_impls + pin_single, rounds, clock=clock)
            result["batch"][q] = summarize(bs, ref if pin_single else None)
        if log:
            log(f"  {case.name} {q}: done")
    return result


# ---------------------------------------------------------------------------------------------
# reporting

SINGLE_COLUMNS = ["robodyn", "robodyn out=", "robodyn kane", "robodyn specialised",
                  "pinocchio", "pinocchio WORLD", "mujoco", "mujoco mj_rne", "rtb"]
BATCH_COLUMNS = ["robodyn batch", "robodyn kane batch", "robodyn specialised batch"]


def _cell(entry, unit=1e6, digits=2, ratio=True):
    if entry is None:
        return "-"
    t, r = entry
    text = f"{t * unit:.{digits}f}"
    if ratio and not math.isnan(r):
        text += f" ({r:.2f}x)"
    return text


def _has_reference(results):
    """Did Pinocchio run (is there a reference for the ratios)?"""
    return any(r["ref"].get(q) for r in results for q in r["ref"])


def markdown_tables(results):
    """Two Markdown tables (single call, batch) from bench_case results."""
    cols = [c for c in SINGLE_COLUMNS
            if any(c in r["single"].get(q, {}) for r in results for q in r["single"])]
    pin = _has_reference(results)
    lines = ["Python, one call per state: microseconds per call"
             + (" (ratio to Pinocchio)" if pin else " (Pinocchio not installed: no ratios)"), "",
             "| robot | n | quantity | " + " | ".join(cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for r in results:
        for q, row in r["single"].items():
            lines.append(f"| {r['name']} | {r['n']} | {q} | "
                         + " | ".join(_cell(row.get(c)) for c in cols) + " |")
    bcols = [c for c in BATCH_COLUMNS
             if any(c in r["batch"].get(q, {}) for r in results for q in r["batch"])]
    lines += ["", "Python, batch (one call on (N, n) arrays, one thread): nanoseconds per state"
              + (" (ratio to one Pinocchio call from Python)" if pin else ""), "",
              "| robot | n | quantity | " + " | ".join(bcols)
              + (" | Pinocchio call |" if pin else " |"),
              "|---|---|---|" + "---|" * (len(bcols) + (1 if pin else 0))]
    for r in results:
        for q, row in r["batch"].items():
            ref = r["ref"].get(q)
            pin = _cell(row.get(ref), 1e9, 0, False) if ref else "-"
            lines.append(f"| {r['name']} | {r['n']} | {q} | "
                         + " | ".join(_cell(row.get(c), 1e9, 0) for c in bcols)
                         + (f" | {pin} |" if _has_reference(results) else " |"))
    return "\n".join(lines)


SHORT = {"robodyn": "robodyn", "robodyn out=": "out=", "robodyn kane": "kane",
         "robodyn specialised": "specialised", "pinocchio": "pinocchio",
         "pinocchio WORLD": "pin WORLD", "mujoco": "mujoco", "mujoco mj_rne": "mj_rne",
         "rtb": "rtb", "robodyn batch": "robodyn", "robodyn kane batch": "kane",
         "robodyn specialised batch": "specialised"}


def text_tables(results):
    """Plain-text tables for the terminal (same content as markdown_tables)."""
    out = []
    cols = [c for c in SINGLE_COLUMNS
            if any(c in r["single"].get(q, {}) for r in results for q in r["single"])]
    w = 16
    head = f"{'robot':<16}{'n':>3} {'qty':<4}" + "".join(f"{SHORT[c]:>{w}}" for c in cols)
    pin = _has_reference(results)
    out += ["Python, one call per state: us per call"
            + (" (ratio to Pinocchio)" if pin else " (Pinocchio not installed: no ratios)")
            + "; out= and kane are robodyn's", head, "-" * len(head)]
    for r in results:
        for q, row in r["single"].items():
            out.append(f"{r['name'][:16]:<16}{r['n']:>3} {q:<4}"
                       + "".join(f"{_cell(row.get(c)):>{w}}" for c in cols))
    bcols = [c for c in BATCH_COLUMNS
             if any(c in r["batch"].get(q, {}) for r in results for q in r["batch"])]
    if bcols:
        head = (f"{'robot':<16}{'n':>3} {'qty':<4}" + "".join(f"{SHORT[c]:>{w}}" for c in bcols)
                + (f"{'pin call':>{w}}" if pin else ""))
        out += ["", "robodyn batch (N states in one call, 1 thread): ns per state"
                + (" (ratio to one Pinocchio call from Python)" if pin else ""),
                head, "-" * len(head)]
        for r in results:
            for q, row in r["batch"].items():
                ref = r["ref"].get(q)
                pin = _cell(row.get(ref), 1e9, 0, False) if ref else "-"
                out.append(f"{r['name'][:16]:<16}{r['n']:>3} {q:<4}"
                           + "".join(f"{_cell(row.get(c), 1e9, 0):>{w}}" for c in bcols)
                           + (f"{pin:>{w}}" if _has_reference(results) else ""))
    notes = [(r["name"], s) for r in results for s in r["notes"]]
    if notes:
        out += ["", "notes:"] + [f"  {name}: {s}" for name, s in notes]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# command line


def run(args, options=None):
    """timing table: robodyn against Pinocchio, MuJoCo and the Robotics Toolbox

    ``options``: keyword arguments of :func:`load_case` (``strict``, ``xacro_args``; the
    command line passes those of its options)."""
    import robodyn

    quantities = [q.strip() for q in args.quantities.split(",") if q.strip()]
    bad = [q for q in quantities if q not in QUANTITIES]
    if bad or not quantities:
        print(f"robodyn bench: --quantities: expected some of {', '.join(QUANTITIES)}",
              file=sys.stderr)
        return 2
    peers = [] if args.peers.strip() == "none" else [
        p.strip() for p in args.peers.split(",") if p.strip()]
    if any(p not in PEERS for p in peers):
        print(f"robodyn bench: --peers: expected some of {', '.join(PEERS)} or none",
              file=sys.stderr)
        return 2
    if args.rounds < 3 or args.pool < 1 or args.batch < 0:
        print("robodyn bench: --rounds >= 3, --pool >= 1, --batch >= 0", file=sys.stderr)
        return 2
    names = args.robots or robodyn.robots.available()
    options = options or {}
    cases = []
    for name in names:
        try:
            cases.append(load_case(name, **options))
        except BenchError as e:
            print(f"robodyn bench: {e}", file=sys.stderr)
            return 2
    threads = robodyn.get_num_threads()
    robodyn.set_num_threads(1)
    try:
        results = [bench_case(c, quantities, peers, args.rounds, args.pool, args.batch,
                              not args.no_specialized, args.seed, args.clock) for c in cases]
    except BenchError as e:
        print(f"robodyn bench: {e}", file=sys.stderr)
        return 1
    finally:
        robodyn.set_num_threads(threads)
    print(markdown_tables(results) if args.markdown else text_tables(results))
    print(f"\n(medians of {args.rounds} interleaved rounds over {args.pool} distinct states, "
          f"{args.clock} clock"
          + ("; Pinocchio reference: the faster of its conventions)" if _has_reference(results)
             else "; Pinocchio not installed, so no ratios: pip install robodyn[peers])"))
    return 0

