"""The reports of the benchmark suite (bench/run_all.py): tables, the plot, the targets,
PERFORMANCE.md and RESULTS.md."""

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
from run_common import BUILD, SIX, fit_growth, log  # noqa: E402,F401


# ---------------------------------------------------------------------------------------------
# reports


def _fmt_ratio(r):
    return "-" if r is None or (isinstance(r, float) and np.isnan(r)) else f"{r:.2f}x"


# bench_vs_pinocchio's quantities: M is one triangle on Pinocchio's side (its crba fills the
# upper one), Mfull the whole matrix on both (Pinocchio's crba and its copy into the lower one)
CPP_QUANTITY_NAMES = {**B.QUANTITY_NAMES, "M": "mass matrix (Pinocchio: one triangle)",
                      "Mfull": "mass matrix, both triangles on both sides"}


def cpp_table(cpp, lib=None):
    names = ["robodyn rnea", "robodyn kane", "specialised id", "pinocchio rnea",
             "robodyn crba", "robodyn crba lower", "specialised M", "pinocchio crba",
             "pinocchio crba WORLD", "robodyn crba full", "pinocchio crba+symmetric",
             "pinocchio crba WORLD+symmetric",
             "robodyn aba", "robodyn crba+chol", "robodyn kane_forward", "specialised fd",
             "pinocchio aba", "pinocchio aba WORLD", "robodyn gravity", "specialised g",
             "pinocchio gravity"]
    names = [c for c in names if any(c in r["impl"] for r in cpp)]
    by_q = {}
    for c in names:
        q = next(r["impl"][c]["quantity"] for r in cpp if c in r["impl"])
        by_q.setdefault(q, []).append(c)
    lines = []
    for q, cols in by_q.items():
        lines += [f"**{CPP_QUANTITY_NAMES[q]}** (ns per call, ratio to the faster Pinocchio "
                  f"convention)", "", "| robot | n | " + " | ".join(cols) + " |",
                  "|---|---|" + "---|" * len(cols)]
        for r in cpp:
            cells = []
            for c in cols:
                e = r["impl"].get(c)
                cells.append("-" if e is None else f"{e['ns']:.0f} ({e['ratio']:.2f}x)")
            lines.append(f"| {r['case']} | {r['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    if lib:
        lines += ["**Pinocchio as shipped** (the wheel's compiled algorithms, "
                  "PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION): robodyn's ratio to it", "",
                  "| robot | n | rnea | crba | aba | gravity |", "|---|---|---|---|---|---|"]
        for r in lib:
            cells = [_fmt_ratio(r["impl"].get(c, {}).get("ratio"))
                     for c in ("robodyn rnea", "robodyn crba", "robodyn aba", "robodyn gravity")]
            lines.append(f"| {r['case']} | {r['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def latency_table(lat):
    lines = ["| robot | implementation | p50 | p90 | p99 | p99.9 | max |",
             "|---|---|---|---|---|---|---|"]
    for r in lat:
        for name, v in r["latency"].items():
            lines.append(f"| {r['case']} | {name} | {v['p50']:.0f} | {v['p90']:.0f} | "
                         f"{v['p99']:.0f} | {v['p999']:.0f} | {v['max']:.0f} |")
    return "\n".join(lines)


def growth_table(growth):
    lines = ["| series (ns, or instructions) | linear fit | R^2 linear | R^2 quadratic | "
             "quadratic term at n = 48 | log-log slope |", "|---|---|---|---|---|---|"]
    for name, g in growth.items():
        b, a = g["deg1"]["coef"]
        lines.append(f"| {name} | {a:.0f} + {b:.1f} n | {g['deg1']['r2']:.4f} | "
                     f"{g['deg2']['r2']:.4f} | {100 * g['quadratic_share_at_max_n']:.1f}% | "
                     f"{g['loglog_slope']:.2f} |")
    return "\n".join(lines)


VARIANTS = (("robodyn", "robodyn"), ("robodyn out=", "robodyn, out="),
            ("robodyn kane", "robodyn Kane"), ("robodyn specialised", "robodyn specialised"))
CPP_VARIANTS = {"id": ("robodyn rnea", "robodyn kane", "specialised id"),
                "M": ("robodyn crba", "specialised M"),
                "fd": ("robodyn aba", "robodyn kane_forward", "specialised fd"),
                "g": ("robodyn gravity", "specialised g")}
CPP_REF = {"id": "pinocchio rnea", "M": "pinocchio crba", "fd": "pinocchio aba",
           "g": "pinocchio gravity"}


def _bars(ax, groups, series, title, ylabel, target=None):
    """Grouped bars: series = [(label, [(median, lo, hi) per group])]."""
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for k, (lab, vals) in enumerate(series):
        med = np.array([v[0] for v in vals], float)
        err = np.array([[v[0] - v[1] for v in vals], [v[2] - v[0] for v in vals]], float)
        ax.bar(x + k * width, med, width, yerr=err, capsize=2, label=lab)
    ax.axhline(1.0, color="k", lw=0.8)
    if target:
        for t, lab in target:
            ax.axhline(t, color="r", ls="--", lw=0.8)
            ax.text(len(groups) - 0.5, t, lab, color="r", fontsize=7, va="bottom", ha="right")
    ax.set_xticks(x + width * (len(series) - 1) / 2)
    ax.set_xticklabels(groups, rotation=10)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)


def _spread(vals):
    vals = [v for v in vals if v is not None and np.isfinite(v)]
    if not vals:
        return (np.nan, np.nan, np.nan)
    return (float(np.median(vals)), float(min(vals)), float(max(vals)))


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    qs = list(B.QUANTITIES)
    names = [B.QUANTITY_NAMES[q] for q in qs]
    six = [r for r in res["python"] if r["name"] in SIX]
    # (a) Python single call, 6-DOF robots
    series = []
    for lab, text in VARIANTS:
        vals = [_spread([r["single"].get(q, {}).get(lab, (0, None))[1] for r in six]) for q in qs]
        if any(np.isfinite(v[0]) for v in vals):
            series.append((text, vals))
    _bars(axes[0, 0], names, series, "Python, one call, 6-DOF robots (median, range over "
          f"{', '.join(r['name'] for r in six)})", "time / Pinocchio time",
          [(0.6, "target 0.6")])
    # (b) C++ per call, 6-DOF robots: time ratios and instruction ratios
    cpp6 = [r for r in res.get("cpp", []) if r["case"] in SIX]
    cg = res.get("callgrind", {})
    series = []
    picks = (("robodyn generic: time", {q: CPP_VARIANTS[q][0] for q in qs}),
             ("robodyn Kane: time", {"id": "robodyn kane", "fd": "robodyn kane_forward"}),
             ("specialised: time", {q: f"specialised {q}" for q in qs}))
    for text, pick in picks:
        series.append((text, [_spread([r["impl"][pick[q]]["ratio"] for r in cpp6
                                       if pick.get(q) in r["impl"]]) for q in qs]))
    vals = []
    for q in qs:
        vals.append(_spread([d[CPP_VARIANTS[q][0]] / d[CPP_REF[q]] for d in
                             (cg.get(k, {}) for k in SIX)
                             if CPP_VARIANTS[q][0] in d and CPP_REF[q] in d]))
    series.append(("robodyn generic: instructions", vals))
    _bars(axes[0, 1], names, series, "C++, one call, 6-DOF robots", "robodyn / Pinocchio",
          [(0.8, "id target generic 0.8"), (0.4, "id target specialised 0.4")])
    # (c) C++ time per call against n
    ax = axes[1, 0]
    chains = [r for r in res.get("cpp", []) if r["case"].startswith("chain")]
    styles = (("robodyn rnea", "o-"), ("robodyn kane", "s-"), ("robodyn aba", "^-"),
              ("robodyn crba", "v-"), ("pinocchio rnea", "o--"), ("pinocchio aba", "^--"),
              ("pinocchio crba", "v--"))
    if chains:
        ns = np.array([r["n"] for r in chains])
        for name, style in styles:
            ts = [r["impl"][name]["ns"] for r in chains if name in r["impl"]]
            if len(ts) == len(ns):
                ax.plot(ns, np.array(ts) / 1e3, style, label=name, ms=4)
        ax.set_xlabel("n (random DH chain)")
        ax.set_ylabel("microseconds per call (C++)")
        ax.set_title("C++ time per call against n", fontsize=10)
        ax.legend(fontsize=7)
    # (d) instructions per call against n, with the linear fits
    ax = axes[1, 1]
    cgc = res.get("callgrind_chains", {})
    if cgc:
        ns = np.array(sorted(int(k[5:]) for k in cgc))
        for name, style in styles:
            ys = [cgc[f"chain{n}"].get(name) for n in ns]
            if all(y is not None for y in ys):
                ax.plot(ns, np.array(ys) / 1e3, style, label=name, ms=4)
                g = res["growth"].get(f"instructions {name}")
                if g and "crba" not in name:  # crba is O(n^2) by design
                    b, a = g["deg1"]["coef"]
                    ax.plot(ns, (a + b * ns) / 1e3, "k:", lw=0.8)
        ax.set_xlabel("n (random DH chain)")
        ax.set_ylabel("thousand instructions per call (callgrind)")
        ax.set_title("instructions per call against n (dotted: linear fits of rnea, kane, aba)",
                     fontsize=10)
        ax.legend(fontsize=7)
    m = res["machine"]
    fig.suptitle(f"robodyn against Pinocchio {m['versions'].get('pinocchio', '?')}: "
                 f"{m.get('model_name', '?')}, {m.get('cpus', '?')} cores (shared), "
                 f"{m['date']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def targets(res):
    """The figures of the issue: list of (target, values, verdict text)."""
    out = []
    py = {r["name"]: r for r in res["python"]}
    for q, name in (("id", "inverse dynamics"), ("M", "mass matrix"), ("fd", "forward dynamics")):
        rows = {k: py[k]["single"][q] for k in SIX if k in py and q in py[k]["single"]}
        if not rows:
            continue
        plain = {k: r["robodyn"][1] for k, r in rows.items()}
        outs = {k: r["robodyn out="][1] for k, r in rows.items()}
        met_plain, met_out = max(plain.values()) <= 0.6, max(outs.values()) <= 0.6
        out.append((f"Python single call, 6-DOF, {name} <= 0.6x Pinocchio",
                    "plain call " + ", ".join(f"{k} {v:.2f}x" for k, v in plain.items())
                    + "; with out= " + ", ".join(f"{k} {v:.2f}x" for k, v in outs.items()),
                    "met" if met_plain else "met with out= only" if met_out else "NOT met"))
    vals = {k: py[k]["batch"]["id"]["robodyn batch"][1] for k in SIX
            if k in py and "id" in py[k]["batch"]}
    if vals:
        out.append(("Python batch inverse dynamics per state <= 0.25x a pin.rnea call",
                    ", ".join(f"{k} {v:.2f}x" for k, v in vals.items()),
                    "met" if max(vals.values()) <= 0.25 else "NOT met"))
    cpp = {r["case"]: r for r in res.get("cpp", [])}
    cg = res.get("callgrind", {})
    for impl, limit, label in (("robodyn rnea", 0.8, "generic"),
                               ("specialised id", 0.4, "specialised")):
        vals = {k: cpp[k]["impl"][impl]["ratio"] for k in SIX
                if k in cpp and impl in cpp[k]["impl"]}
        title = f"C++ 6-DOF inverse dynamics, {label} <= {limit}x Pinocchio"
        if not vals:
            out.append((title, "no specialised kernels", "not measured"))
            continue
        ir = {k: cg[k][impl] / cg[k]["pinocchio rnea"] for k in SIX
              if k in cg and impl in cg[k] and "pinocchio rnea" in cg[k]}
        text = "time " + ", ".join(f"{k} {v:.2f}x" for k, v in vals.items())
        if ir:
            text += "; instructions " + ", ".join(f"{k} {v:.2f}x" for k, v in ir.items())
        out.append((title, text, "met" if max(vals.values()) <= limit else "NOT met"))
    for name in ("robodyn rnea", "robodyn kane", "robodyn aba", "pinocchio rnea",
                 "pinocchio aba"):
        g = res.get("growth", {}).get(f"instructions {name}")
        t = res.get("growth", {}).get(f"C++ {name}")
        if not g:
            continue
        lin = g["quadratic_share_at_max_n"] < 0.05 and g["deg1"]["r2"] > 0.999
        text = (f"instructions: R^2 of the linear fit {g['deg1']['r2']:.5f}, quadratic term "
                f"{100 * g['quadratic_share_at_max_n']:.1f}% of the count at n = 48")
        if t:
            text += (f"; time: R^2 {t['deg1']['r2']:.3f}, log-log slope "
                     f"{t['loglog_slope']:.2f}")
        out.append((f"linear growth of {name} up to n = 48", text,
                    ("met" if lin else "NOT met") if name.startswith("robodyn")
                    else "for comparison"))
    return out


def performance_md(res, tgts):
    m = res["machine"]
    py = {r["name"]: r for r in res["python"]}
    cpp = {r["case"]: r for r in res.get("cpp", [])}
    cg = res.get("callgrind", {})
    lines = ["## Performance", "",
             f"Measured on {m['date']} on an {m.get('model_name', '?')} virtual machine "
             f"({m.get('cpus', '?')} cores, shared with other jobs), against Pinocchio "
             f"{m['versions'].get('pinocchio', '?')}: every library runs in the same process, "
             "interleaved, and each number is the median over many rounds of this thread's CPU "
             "time, given as a ratio to Pinocchio (lower is faster; for crba and aba the faster "
             "of Pinocchio's two conventions).", ""]
    lines += ["| 6-DOF robot | Python: inverse dynamics | mass matrix | forward dynamics | "
              "Python batch, inverse dynamics per state | C++ inverse dynamics | "
              "C++ specialised |", "|---|---|---|---|---|---|---|"]
    for k in SIX:
        if k not in py:
            continue
        r = py[k]
        cells = []
        for q in ("id", "M", "fd"):
            e = r["single"].get(q, {})
            cells.append(f"{_fmt_ratio(e.get('robodyn', (0, None))[1])} "
                         f"({_fmt_ratio(e.get('robodyn out=', (0, None))[1])} with out=)")
        cells.append(_fmt_ratio(r["batch"].get("id", {}).get("robodyn batch", (0, None))[1]))
        c = cpp.get(k, {}).get("impl", {})
        cc = _fmt_ratio(c.get("robodyn rnea", {}).get("ratio"))
        if k in cg and "robodyn rnea" in cg[k] and "pinocchio rnea" in cg[k]:
            cc += f" ({cg[k]['robodyn rnea'] / cg[k]['pinocchio rnea']:.2f}x instructions)"
        cells.append(cc)
        cells.append(_fmt_ratio(c.get("specialised id", {}).get("ratio")))
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", "Python: one call on one state (robodyn's plain call returns a new array; "
              "`out=` writes into a preallocated one) against `pin.rnea`, `pin.crba`, `pin.aba`. "
              "Batch: one robodyn call on 10,000 states (C++ loop, one thread), per state, "
              "against one `pin.rnea` call from Python. C++: robodyn and Pinocchio compiled "
              "from their headers with the same flags (-O3 -DNDEBUG), both models read from "
              "the same URDF; specialised = the robot-specific code of `robot.specialized()`. "
              "MuJoCo (`mj_inverse`) takes 2-3x Pinocchio's time per Python call and the "
              "Robotics Toolbox (`rne`) about 10x on these arms."]
    growth = res.get("growth", {})
    parts = []
    for name in ("robodyn rnea", "robodyn aba"):
        g = growth.get(f"instructions {name}")
        if g:
            b, a = g["deg1"]["coef"]
            parts.append(f"{name.split()[1]} {a:.0f} + {b:.0f} n instructions "
                         f"(R^2 {g['deg1']['r2']:.4f})")
    if parts:
        lines += ["", "Inverse dynamics and the articulated-body forward dynamics cost a fixed "
                  "amount per joint (random chains n = 6..48): " + "; ".join(parts) + "."]
    lines += ["", "Reproduce with `python bench/run_all.py` (all tables: bench/results/"
              "RESULTS.md, plot: bench/results/bench.png) or, for a quick table, "
              "`robodyn bench`.", ""]
    return "\n".join(lines)


def write_reports(res, out):
    """RESULTS.md, PERFORMANCE.md and bench.png from the results (and py_callgrind.json)."""
    rounds = res["rounds"]
    growth = res.get("growth", {})
    pyc = out / "py_callgrind.json"
    if pyc.exists():
        res["py_callgrind"] = json.loads(pyc.read_text())["instructions"]
    tg = targets(res)
    res["targets"] = [{"target": t, "value": v, "met": ok} for t, v, ok in tg]
    (out / "results.json").write_text(json.dumps(res, indent=1, default=float))
    md = ["# robodyn benchmark results", "",
          f"{res['machine']['date']}, {res['machine'].get('model_name', '?')}, "
          f"{res['machine'].get('cpus', '?')} cores (shared; load average at start "
          f"{', '.join(f'{x:.1f}' for x in res['machine'].get('loadavg', ()))}). Versions: "
          + ", ".join(f"{k} {v}" for k, v in res["machine"]["versions"].items()) + ".", "",
          "Generated by `python bench/run_all.py`; all numbers are medians of interleaved "
          f"rounds ({rounds} in Python, of this thread's CPU time) with ratios to Pinocchio "
          "(the faster of its two conventions for crba and aba).", "",
          "## Python", "", B.markdown_tables(res["python"]), ""]
    notes = sorted({f"{r['name']}: {s}" for r in res["python"] for s in r["notes"]})
    impl_notes = sorted({f"{k}: {v}" for r in res["python"] for k, v in r["impl_notes"].items()})
    md += ["Notes:", ""] + [f"- {s}" for s in notes + impl_notes] + [""]
    if "cpp" in res:
        md += ["## C++ per call", "", cpp_table(res["cpp"], res.get("cpp_lib")), "",
               "## C++ latency of one inverse-dynamics call (ns, wall clock, 10^6 calls each, "
               "interleaved call by call; includes preemption on a shared machine)", "",
               latency_table(res["latency"]), ""]
    if res.get("callgrind"):
        md += ["## Instructions per call (valgrind --tool=callgrind)", "",
               "| robot | implementation | instructions | ratio to Pinocchio |",
               "|---|---|---|---|"]
        for k, d in res["callgrind"].items():
            for impl, ir in d.items():
                q = next((r["impl"][impl]["quantity"] for r in res["cpp"] if r["case"] == k
                          and impl in r["impl"]), None)
                ref = {"id": "pinocchio rnea", "M": "pinocchio crba", "fd": "pinocchio aba",
                       "g": "pinocchio gravity"}.get(q)
                ratio = ir / d[ref] if ref in d else float("nan")
                md.append(f"| {k} | {impl} | {ir:.0f} | {_fmt_ratio(ratio)} |")
        md.append("")
    if res.get("py_callgrind"):
        md += ["## Instructions per Python call (valgrind --tool=callgrind, UR5; the empty "
               "loop subtracted)", "", "| quantity | " + " | ".join(
                   next(iter(res["py_callgrind"].values())).keys()) + " |",
               "|---|" + "---|" * len(next(iter(res["py_callgrind"].values())))]
        for q, d in res["py_callgrind"].items():
            pin = d.get("pinocchio")
            md.append(f"| {q} | " + " | ".join(
                "-" if v is None else f"{v:.0f}" + (f" ({v / pin:.2f}x)" if pin else "")
                for v in d.values()) + " |")
        md.append("")
    if res.get("callgrind_chains"):
        cgc = res["callgrind_chains"]
        impls = list(next(iter(cgc.values())).keys())
        md += ["## Instructions per call against n (random DH chains, callgrind)", "",
               "| n | " + " | ".join(impls) + " |", "|---|" + "---|" * len(impls)]
        for k, d in cgc.items():
            md.append(f"| {k[5:]} | " + " | ".join(f"{d[i]:.0f}" for i in impls) + " |")
        md.append("")
    if growth:
        md += ["## Growth with n (random DH chains): least-squares fits", "",
               growth_table(growth), ""]
    if res.get("profiles"):
        md += ["## Where the instructions go (callgrind_annotate, top lines; full profiles in "
               "bench/results/profiles/)", ""]
        for k, lines in res["profiles"].items():
            md += [f"**{k}**", "", "```"] + lines[:14] + ["```", ""]
    md += ["## Targets", ""] + [f"- {t}: **{ok}** ({v})" for t, v, ok in tg] + [""]
    (out / "RESULTS.md").write_text("\n".join(md))
    (out / "PERFORMANCE.md").write_text(performance_md(res, tg))
    plot(res, out / "bench.png")
