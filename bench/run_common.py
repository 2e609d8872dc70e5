"""Shared by the benchmark suite (bench/run_all.py): paths, the log, the machine's description and
the fit of growth with n."""

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
