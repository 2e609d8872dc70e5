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

BUILD = ROOT / "build" / "bench"
SIX = ("ur5", "intelledex_605", "stanford_arm", "chain6")  # the 6-DOF robots of the targets


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# machine


def machine():
    info = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "platform": platform.platform()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for key in ("Model name", "CPU(s)", "Hypervisor vendor"):
            m = re.search(rf"^{re.escape(key)}:\s*(.+)$", out, re.M)
            if m:
                info[key.lower().replace(" ", "_").replace("(s)", "s")] = m.group(1).strip()
    except OSError:
        pass
    try:
        info["loadavg"] = os.getloadavg()
    except OSError:
        pass
    versions = {"robodyn": robodyn.__version__, "numpy": np.__version__}
    for mod, name in (("pinocchio", "pinocchio"), ("mujoco", "mujoco"),
                      ("roboticstoolbox", "roboticstoolbox")):
        try:
            m = __import__(mod)
            versions[name] = getattr(m, "__version__", "?")
        except Exception as e:
            versions[name] = f"not importable: {type(e).__name__}: {e}"
    cxx = os.environ.get("CXX", "g++")
    try:
        versions["cxx"] = subprocess.run([cxx, "--version"], capture_output=True,
                                         text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        pass
    info["versions"] = versions
    return info


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


# ---------------------------------------------------------------------------------------------
# growth with n


def fit_growth(ns, ts):
    """Least-squares fits of t(n): linear a + b n and quadratic; R^2 of each, the quadratic
    share of t at the largest n, and the log-log slope."""
    ns, ts = np.asarray(ns, float), np.asarray(ts, float)
    out = {}
    for deg in (1, 2):
        c = np.polyfit(ns, ts, deg)
        pred = np.polyval(c, ns)
        ss = float(np.sum((ts - pred) ** 2))
        tot = float(np.sum((ts - ts.mean()) ** 2))
        out[f"deg{deg}"] = {"coef": c.tolist(), "r2": 1 - ss / tot if tot else 1.0}
    c2 = out["deg2"]["coef"]
    out["quadratic_share_at_max_n"] = float(abs(c2[0]) * ns.max() ** 2 / np.polyval(c2, ns.max()))
    out["loglog_slope"] = float(np.polyfit(np.log(ns), np.log(ts), 1)[0])
    return out


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


if __name__ == "__main__":
    main()
