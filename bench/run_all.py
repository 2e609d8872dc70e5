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
from robodyn import bench as B  # noqa: E402

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
            m = re.search(rf"^{key}:\s*(.+)$", out, re.M)
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


def callgrind_counts(binary, case_file, impls, reps=2000):
    """Instructions per call of each implementation: (Ir(reps) - Ir(0)) / reps."""
    if shutil.which("valgrind") is None:
        return {"error": "valgrind not installed"}

    def total(impl, n):
        out = BUILD / "callgrind.out.tmp"
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                            str(binary), "--states", "64", "--count", impl, "--reps", str(n),
                            str(case_file)], capture_output=True, text=True)
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if r.returncode != 0 or not m:
            raise RuntimeError(f"callgrind {impl}: {r.stderr[-1500:]}")
        out.unlink(missing_ok=True)
        return int(m.group(1))

    base = total(impls[0], 0)
    return {impl: (total(impl, reps) - base) / reps for impl in impls}


def callgrind_profile(binary, case_file, impl, reps=2000, top=12):
    """The functions where ``impl`` spends its instructions (callgrind_annotate, inclusive of
    inlined code attributed to the enclosing function)."""
    out = BUILD / f"callgrind.{impl.replace(' ', '_')}.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    str(binary), "--states", "64", "--count", impl, "--reps", str(reps),
                    str(case_file)], capture_output=True, text=True, check=True)
    r = subprocess.run(["callgrind_annotate", "--threshold=99", str(out)], capture_output=True,
                       text=True)
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
    out["quadratic_share_at_max_n"] = float(c2[0] * ns.max() ** 2 / np.polyval(c2, ns.max()))
    out["loglog_slope"] = float(np.polyfit(np.log(ns), np.log(ts), 1)[0])
    return out


# ---------------------------------------------------------------------------------------------
# reports


def _fmt_ratio(r):
    return "-" if r is None or (isinstance(r, float) and np.isnan(r)) else f"{r:.2f}x"


def cpp_table(cpp, lib=None):
    names = ["robodyn rnea", "robodyn kane", "specialised id", "pinocchio rnea",
             "robodyn crba", "specialised M", "pinocchio crba", "pinocchio crba WORLD",
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
        lines += [f"**{B.QUANTITY_NAMES[q]}** (ns per call, ratio to the faster Pinocchio "
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
    lines = ["| series | t(n) linear fit (ns) | R^2 linear | R^2 quadratic | quadratic share "
             "at n = 48 | log-log slope |", "|---|---|---|---|---|---|"]
    for name, g in growth.items():
        b, a = g["deg1"]["coef"]
        lines.append(f"| {name} | {a:.0f} + {b:.1f} n | {g['deg1']['r2']:.4f} | "
                     f"{g['deg2']['r2']:.4f} | {100 * g['quadratic_share_at_max_n']:.1f}% | "
                     f"{g['loglog_slope']:.2f} |")
    return "\n".join(lines)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    # (a) Python single call, 6-DOF robots, robodyn / Pinocchio
    ax = axes[0]
    six = [r for r in res["python"] if r["name"] in SIX]
    qs = list(B.QUANTITIES)
    width = 0.8 / max(1, len(six))
    for k, r in enumerate(six):
        vals = [r["single"].get(q, {}).get("robodyn", (np.nan, np.nan))[1] for q in qs]
        ax.bar(np.arange(len(qs)) + k * width, vals, width, label=r["name"])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(0.6, color="r", ls="--", lw=0.8, label="target 0.6")
    ax.set_xticks(np.arange(len(qs)) + width * (len(six) - 1) / 2)
    ax.set_xticklabels([B.QUANTITY_NAMES[q] for q in qs], rotation=15)
    ax.set_ylabel("time / Pinocchio time")
    ax.set_title("Python, one call, 6-DOF robots")
    ax.legend(fontsize=8)
    # (b) C++ per call against n, with the linear fits
    ax = axes[1]
    chains = [r for r in res.get("cpp", []) if r["case"].startswith("chain")]
    if chains:
        ns = [r["n"] for r in chains]
        for name, style in (("robodyn rnea", "o-"), ("robodyn kane", "s-"),
                            ("robodyn aba", "^-"), ("robodyn crba", "v-"),
                            ("pinocchio rnea", "o--"), ("pinocchio aba", "^--"),
                            ("pinocchio crba", "v--")):
            ts = [r["impl"][name]["ns"] for r in chains if name in r["impl"]]
            if len(ts) == len(ns):
                ax.plot(ns, ts, style, label=name, ms=4)
        for name, g in res.get("growth", {}).items():
            if name.startswith("C++ robodyn") and name.split("C++ ")[1] in ("robodyn rnea",
                                                                            "robodyn aba"):
                b, a = g["deg1"]["coef"]
                x = np.array([min(ns), max(ns)])
                ax.plot(x, a + b * x, "k:", lw=0.8)
        ax.set_xlabel("n (random DH chain)")
        ax.set_ylabel("ns per call (C++)")
        ax.set_title("C++ per call against n (dotted: linear fits)")
        ax.legend(fontsize=8)
    # (c) Python batch per state against n
    ax = axes[2]
    pch = [r for r in res["python"] if r["name"].startswith("chain")]
    if pch:
        ns = [r["n"] for r in pch]
        for q, lab, style in (("id", "robodyn batch", "o-"), ("id", "robodyn kane batch", "s-"),
                              ("fd", "robodyn batch", "^-"), ("M", "robodyn batch", "v-")):
            ts = [r["batch"].get(q, {}).get(lab, (np.nan,))[0] * 1e9 for r in pch]
            ax.plot(ns, ts, style, label=f"{q}: {lab}", ms=4)
        ts = [r["single"]["id"]["pinocchio"][0] * 1e9 for r in pch]
        ax.plot(ns, ts, "o--", label="id: one pin.rnea call from Python", ms=4)
        ax.set_xlabel("n (random DH chain)")
        ax.set_ylabel("ns per state")
        ax.set_title("Python batch (N states per call), per state")
        ax.legend(fontsize=8)
    m = res["machine"]
    fig.suptitle(f"robodyn benchmarks, {m.get('model_name', '?')} ({m.get('cpus', '?')} cores, "
                 f"shared), {m['date']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def targets(res):
    """Which figures of the issue are reached: list of (target, value text, met)."""
    out = []
    py = {r["name"]: r for r in res["python"]}
    for q, name in (("id", "inverse dynamics"), ("M", "mass matrix"), ("fd", "forward dynamics")):
        vals = {k: py[k]["single"][q]["robodyn"][1] for k in SIX if k in py and q in py[k]["single"]}
        outs = {k: py[k]["single"][q]["robodyn out="][1] for k in vals}
        if vals:
            worst = max(vals.values())
            out.append((f"Python single call, 6-DOF, {name} <= 0.6x Pinocchio",
                        ", ".join(f"{k} {v:.2f}x (out= {outs[k]:.2f}x)" for k, v in vals.items()),
                        worst <= 0.6))
    vals = {k: py[k]["batch"]["id"]["robodyn batch"][1] for k in SIX
            if k in py and "id" in py[k]["batch"]}
    if vals:
        out.append(("Python batch inverse dynamics per state <= 0.25x a pin.rnea call",
                    ", ".join(f"{k} {v:.2f}x" for k, v in vals.items()),
                    max(vals.values()) <= 0.25))
    cpp = {r["case"]: r for r in res.get("cpp", [])}
    cg = res.get("callgrind", {})
    for impl, limit, label in (("robodyn rnea", 0.8, "generic"), ("specialised id", 0.4,
                                                                   "specialised")):
        vals = {k: cpp[k]["impl"][impl]["ratio"] for k in SIX if k in cpp
                and impl in cpp[k]["impl"]}
        if not vals:
            out.append((f"C++ 6-DOF inverse dynamics, {label} <= {limit}x Pinocchio",
                        "not measured (no specialised kernels)", None))
            continue
        ir = {k: cg[k][impl] / cg[k]["pinocchio rnea"] for k in cg
              if impl in cg[k] and "pinocchio rnea" in cg[k]}
        text = ", ".join(f"{k} {v:.2f}x" for k, v in vals.items())
        if ir:
            text += "; instructions " + ", ".join(f"{k} {v:.2f}x" for k, v in ir.items())
        out.append((f"C++ 6-DOF inverse dynamics, {label} <= {limit}x Pinocchio", text,
                    max(vals.values()) <= limit))
    for name, g in res.get("growth", {}).items():
        if name.startswith("C++ robodyn") and ("rnea" in name or "aba" in name
                                               or "kane" in name):
            lin = g["quadratic_share_at_max_n"] < 0.1 and g["deg1"]["r2"] > 0.99
            out.append((f"linear growth up to n = 48: {name}",
                        f"R^2 {g['deg1']['r2']:.4f}, quadratic share at 48: "
                        f"{100 * g['quadratic_share_at_max_n']:.1f}%, log-log slope "
                        f"{g['loglog_slope']:.2f}", lin))
    return out


def performance_md(res, tgts):
    m = res["machine"]
    py = {r["name"]: r for r in res["python"]}
    cpp = {r["case"]: r for r in res.get("cpp", [])}
    lines = ["## Performance", "",
             f"Measured on {m['date']} on an {m.get('model_name', '?')} virtual machine with "
             f"{m.get('cpus', '?')} cores, shared with other work: every library runs in the "
             "same process, interleaved, and the numbers are medians of many rounds of this "
             "thread's CPU time, given as ratios to Pinocchio "
             f"{m['versions'].get('pinocchio', '?')} (lower is faster). Reproduce with "
             "`python bench/run_all.py` (the full tables are in bench/results/RESULTS.md) or "
             "`robodyn bench`.", ""]
    lines += ["| 6-DOF robot | Python: inverse dynamics | mass matrix | forward dynamics | "
              "batch inverse dynamics, per state | C++ inverse dynamics |",
              "|---|---|---|---|---|---|"]
    for k in SIX:
        if k not in py:
            continue
        r = py[k]
        cells = [_fmt_ratio(r["single"].get(q, {}).get("robodyn", (0, None))[1])
                 for q in ("id", "M", "fd")]
        cells.append(_fmt_ratio(r["batch"].get("id", {}).get("robodyn batch", (0, None))[1]))
        c = cpp.get(k, {}).get("impl", {})
        cc = _fmt_ratio(c.get("robodyn rnea", {}).get("ratio"))
        if "specialised id" in c:
            cc += f" (specialised {c['specialised id']['ratio']:.2f}x)"
        cells.append(cc)
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", "Python columns: one call from Python on a single state (robodyn returning a "
              "new array; with `out=` it is a little faster) against `pin.rnea`, `pin.crba`, "
              "`pin.aba`; the batch column is one robodyn call on 10,000 states, per state, "
              "against one `pin.rnea` call. C++: robodyn and Pinocchio compiled from their "
              "headers with the same flags (-O3 -DNDEBUG), both from the same URDF."]
    growth = res.get("growth", {})
    parts = []
    for name in ("C++ robodyn rnea", "C++ robodyn aba"):
        if name in growth:
            b, a = growth[name]["deg1"]["coef"]
            parts.append(f"{name.split('robodyn ')[1]} {a:.0f} + {b:.1f} n ns "
                         f"(R^2 {growth[name]['deg1']['r2']:.3f})")
    if parts:
        lines += ["", "Time per call grows linearly with the number of joints (random chains "
                  "n = 6..48): " + "; ".join(parts) + "."]
    lines += ["", "Targets of the benchmark issue:", ""]
    for t, v, ok in tgts:
        mark = "met" if ok else ("not measured" if ok is None else "NOT met")
        lines.append(f"- {t}: {mark} ({v})")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, no callgrind")
    ap.add_argument("--no-cpp", action="store_true", help="skip the C++ views")
    ap.add_argument("--no-build", action="store_true", help="use the built C++ harness")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--latency", type=int, default=1_000_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args()
    rounds = a.rounds or (9 if a.quick else 25)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
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
            for k in ("ur5", "intelledex_605", "stanford_arm", "chain48"):
                f = BUILD / "cases" / f"{k}.model"
                if not f.exists():
                    continue
                names = subprocess.run([str(binary), "--list", str(f)], capture_output=True,
                                       text=True).stdout.split("\n")
                names = [s for s in names if s and (k != "chain48" or s.endswith(
                    ("rnea", "kane", "aba", "id")))]
                log(f"callgrind {k}: {len(names)} implementations ...")
                res["callgrind"][k] = callgrind_counts(binary, f, names)
    res["growth"] = growth
    tg = targets(res)
    res["targets"] = [{"target": t, "value": v, "met": ok} for t, v, ok in tg]
    res["elapsed_s"] = time.time() - t_start

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
    if growth:
        md += ["## Growth with n (random DH chains)", "", growth_table(growth), ""]
    md += ["## Targets", ""] + [f"- {t}: {'met' if ok else ('not measured' if ok is None else 'NOT met')} ({v})"
                                for t, v, ok in tg] + [""]
    (out / "RESULTS.md").write_text("\n".join(md))
    (out / "PERFORMANCE.md").write_text(performance_md(res, tg))
    plot(res, out / "bench.png")
    log(f"wrote {out}/RESULTS.md, PERFORMANCE.md, bench.png, results.json "
        f"({time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
