"""Operation counts of robodyn's algorithms beside the published figures (``robodyn opcount``).

robodyn's counts come from ``Robot.op_counts``: the C++ algorithms run once with a counting
scalar at a fixed general state, counting the arithmetic a build-time-specialised evaluation
of that code does for that robot (operations on model constants, and multiplications by a
constant 0 or +-1 and additions of a constant 0, are folded, and operations the result does
not need are not counted: docs/opcounts.md). The published algorithm of the seed thesis (Nie 1988) is counted the same way
by running its pure-Python transcription (``kane_nie.py``) with an instrumented float
(``opfloat.py``), both in :mod:`robodyn.codegen.published`. The other published figures are quoted
from docs/opcounts.md (the counting rules and every published figure with its source): Kane &
Levinson (1983) and Nie (1988) for the two bundled robots, and
Featherstone (2008) Table 10.1 formulas evaluated at n.

Functions: :func:`robot_counts`, :func:`comparisons`, :func:`growth` (fits on generic
all-revolute DH chains), :func:`plot_growth`, and the command line pair
:func:`add_arguments` / :func:`run`.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

import numpy as np

__all__ = ["ALGORITHMS", "RULES", "FEATHERSTONE", "QUOTED", "robot_counts", "published_module",
           "published_counts", "comparisons", "generic_dh_rows", "growth", "plot_growth",
           "add_arguments", "run"]

ALGORITHMS = ("rnea", "kane", "gravity", "crba", "forward_dynamics", "aba", "kane_forward")
# the longest chain of `robodyn opcount --n-range`: the whole range up to it counts in about
# a minute of CPU. Counting Nie's published algorithm (a source checkout) grows as n^3 per
# chain (1.3 s at n = 40; --n-range 1 60 took 62 s of CPU), robodyn's own algorithms as about
# n^2.5 (0.8 s at n = 300; 1..300 took 57 s of CPU).
MAX_N_PUBLISHED = 60
MAX_N = 300


def max_n() -> int:
    """The largest n of ``--n-range``: :data:`MAX_N_PUBLISHED` when Nie's published algorithm
    is counted too, else :data:`MAX_N`."""
    return MAX_N_PUBLISHED if published_module() is not None else MAX_N

RULES = ("mul = multiplications + divisions; add = additions + subtractions (negation free); "
         "trig = sin/cos/sqrt/atan2 calls; comparisons free. One call at a fixed general state "
         "(every q, qd, qdd non-zero, gravity on), counted by running the code with an "
         "instrumented scalar, as a build-time-specialised evaluation: operations on model "
         "constants only, x * 0, x * +-1 and x + 0 (constant 0, +-1) are folded, not counted; "
         "what depends on q, qd, qdd, tau is counted if the result (or the configuration cache "
         "of sin/cos) needs it.")

# Featherstone, Rigid Body Dynamics Algorithms (2008), Table 10.1: polynomial coefficients in n,
# highest power first (sin and cos not counted; DH frames, joint axes along local z).
FEATHERSTONE = {
    "rnea_best": ("RNEA best (Balafoutis & Patel 1991)", (93, -108), (81, -100)),
    "rnea_lwp": ("RNEA (Luh, Walker & Paul 1980)", (150, -48), (131, -48)),
    "crba": ("CRBA mass matrix", (10, 22, -32), (6, 37, -43)),
    "aba_best": ("ABA best (McMillan et al. 1995)", (224, -259), (205, -248)),
}

# The Table 10.1 figure each robodyn algorithm is set beside (forward dynamics by mass matrix
# + Cholesky beside the articulated-body figure: the same problem, a different algorithm).
_FEATHERSTONE_FOR = {
    "rnea": ("rnea_best", "rnea_lwp"),
    "kane": ("rnea_best",),
    "crba": ("crba",),
    "aba": ("aba_best",),
    "forward_dynamics": ("aba_best",),
    "kane_forward": ("aba_best",),
}

# Robot-specific figures quoted in Nie (1988), docs/opcounts.md: (algorithm, source, mul, add).
QUOTED = {
    "stanford_arm": (
        ("kane", "Kane, hand-derived (Kane & Levinson 1983)", 646, 394),
        ("rnea", "Newton-Euler (Hollerbach 1980; Silver 1982)", 852, 738),
        ("rnea", "Newton-Euler (Walker & Orin 1982)", 1541, 1196),
        ("rnea", "Lagrangian (Hollerbach 1980)", 2195, 1719),
    ),
    "intelledex_605": (
        ("kane", "Kane, hand-derived (Nie 1988)", 672, 404),
    ),
}

_NA = "n/a (source checkout only)"


def _poly(coeffs, n):
    return sum(c * n ** k for k, c in enumerate(reversed(coeffs)))


# ---------------------------------------------------------------- robodyn's counts

def robot_counts(robot, algorithms=ALGORITHMS, mu=0.0, iterations=1) -> dict:
    """{algorithm: {"mul", "add", "trig"}} of one call of each algorithm on ``robot``. A
    :class:`robodyn.ConstrainedRobot` gives its tree's counts and
    "constrained_forward_dynamics" (:func:`robodyn.codegen.constrained.constrained_counts`
    with ``mu`` and ``iterations``)."""
    if hasattr(robot, "constraints"):
        from .constrained import constrained_counts

        counts = robot_counts(robot.robot, algorithms)
        counts["constrained_forward_dynamics"] = constrained_counts(robot, mu, iterations)
        return counts
    return {a: robot.op_counts(a) for a in algorithms}


# ---------------------------------------------------------------- the published algorithm

def published_module():
    """(kane_nie, opfloat): the modules of Nie's published algorithm (robodyn.codegen.published)."""
    from .published import kane_nie, opfloat

    return kane_nie, opfloat


def _general_state(n, seed):
    """Fixed non-zero values, magnitudes in [0.2, 1.2], alternating signs."""
    rng = np.random.default_rng(seed)
    return np.array([(-1.0) ** i for i in range(n)]) * rng.uniform(0.2, 1.2, n)


def published_counts(spec) -> dict | str:
    """Counts of Nie's algorithm (transcription) for a serial ModelSpec:
    {"kane": inverse dynamics, "kane_forward": forward dynamics by LDL^T}, or a string saying
    why they are not available."""
    mods = published_module()
    if mods is None:
        return _NA
    kn, of = mods
    n = len(spec.bodies)
    q, qd, x = (_general_state(n, s) for s in (1, 2, 3))
    try:
        chain = kn.chain_from_spec(spec)
        return {"kane": of.count_ops(kn.inverse_dynamics, chain, q, qd, x, scalar=of.OpFloat),
                "kane_forward": of.count_ops(kn.forward_dynamics, chain, q, qd, x,
                                             scalar=of.OpFloat)}
    except Exception as exc:  # e.g. a branched robot: the thesis covers serial chains only
        return f"n/a ({exc})"


# ---------------------------------------------------------------- comparison table

def comparisons(name, n, counts, published=None) -> list:
    """Rows (algorithm, reference, mul, add, ratio_mul, ratio_add): each robodyn algorithm
    beside the published figures for the same robot and n. Ratios are robodyn / published."""
    rows = []

    def add(alg, ref, mul, add_):
        c = counts[alg]
        rows.append({"algorithm": alg, "reference": ref, "mul": mul, "add": add_,
                     "ratio_mul": c["mul"] / mul if mul else None,
                     "ratio_add": c["add"] / add_ if add_ else None})

    for alg in ALGORITHMS:
        if alg not in counts:
            continue
        for alg_q, src, mul, add_ in QUOTED.get(name, ()):
            if alg_q == alg:
                add(alg, f"{src}, this robot", mul, add_)
        if alg in ("kane", "kane_forward"):
            what = "" if alg == "kane" else " + LDL^T solve"
            ref = f"Nie 1988 algorithm as published{what}, measured"
            if isinstance(published, dict):
                add(alg, ref, published[alg]["mul"], published[alg]["add"])
            elif published is not None:
                rows.append({"algorithm": alg, "reference": ref, "mul": None, "add": None,
                             "ratio_mul": None, "ratio_add": None, "note": published})
        for key in _FEATHERSTONE_FOR.get(alg, ()):
            label, cm, ca = FEATHERSTONE[key]
            add(alg, f"Featherstone Table 10.1 {label}, at n = {n}", _poly(cm, n),
                _poly(ca, n))
    return rows


# ---------------------------------------------------------------- growth with n

def _random_inertia(mass, rng):
    s = mass * rng.uniform(0.002, 0.03, 3)
    J = np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
    Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q * np.sign(np.diag(R))
    I = Q @ J @ Q.T
    return 0.5 * (I + I.T)


def generic_dh_rows(n, seed=0) -> list:
    """n revolute standard-DH rows with generic values: twist alpha, length a and offset d
    non-zero and away from the special values 0, +-pi/2 (so no zero or one in the constant
    transforms); theta offsets 0 (the joint angle is theta itself, as in Table 10.1); random
    masses, full centres of mass and non-diagonal inertias."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        sign = rng.choice([-1.0, 1.0], 3)
        mass = rng.uniform(0.5, 5.0)
        rows.append(dict(theta=0.0, d=sign[0] * rng.uniform(0.05, 0.4),
                         a=sign[1] * rng.uniform(0.05, 0.4),
                         alpha=sign[2] * rng.uniform(0.3, 1.2), joint="revolute", mass=mass,
                         com=rng.choice([-1.0, 1.0], 3) * rng.uniform(0.02, 0.15, 3),
                         inertia=_random_inertia(mass, rng)))
    return rows


# nominal growth: linear, except the mass matrix (quadratic) and mass matrix + Cholesky
_DEGREE = {"rnea": 1, "kane": 1, "gravity": 1, "aba": 1, "crba": 2, "forward_dynamics": 2,
           "kane_forward": 2, "nie_kane": 3}


def _fit(ns, ys, deg):
    ns = np.asarray(ns, dtype=float)
    ys = np.asarray(ys, dtype=float)
    if len(ns) <= deg:
        return None
    V = np.vander(ns, deg + 1)
    coef = np.linalg.lstsq(V, ys, rcond=None)[0]
    res = float(np.max(np.abs(V @ coef - ys)))
    return [float(c) for c in coef], res


def _snap(coef):
    """Exact-fit coefficients as the fractions they are (least squares leaves ~1e-12 noise)."""
    return [float(Fraction(c).limit_denominator(12)) for c in coef]


def _fit_entry(ns, ys, deg):
    """Least-squares fit of the nominal degree, plus the lowest exact degree (<= 3, confirmed
    by at least one point more than the coefficients)."""
    out = {"degree": deg, "coef": None, "max_residual": None, "formula": None, "exact": None}
    f = _fit(ns, ys, deg)
    if f is None:
        return out
    for d in range(1, 4):
        g = _fit(ns, ys, d)
        if g is not None and len(ns) > d + 1 and g[1] < 1e-6 * max(1.0, max(ys)):
            out["exact"] = {"degree": d, "coef": _snap(g[0]), "formula": formula(g[0])}
            break
    exact = out["exact"] is not None and out["exact"]["degree"] == deg
    out["coef"] = out["exact"]["coef"] if exact else f[0]
    out["max_residual"] = 0.0 if exact else f[1]
    out["formula"] = formula(f[0], exact=exact)
    return out


def _at_or_below_from(ns, ys, coef):
    """Smallest n of the range from which every count is <= the published polynomial (None if
    the last one is above it)."""
    k = None
    for n, y in zip(reversed(ns), reversed(ys)):
        if y > _poly(coef, n) + 1e-9:
            break
        k = n
    return k


def growth(n_lo=1, n_hi=30, seed=0, algorithms=ALGORITHMS, published=True, fit_from=3,
           progress=None) -> dict:
    """Counts on generic all-revolute DH chains (:func:`generic_dh_rows`, one per n) and the
    least-squares growth formulas: {"n": [...], "counts": {alg: {"mul": [...], ...}},
    "fits": {alg: {"mul": fit, "add": fit}}, "vs": {alg: {table_key: {"mul": n0, "add": n0}}}}.
    A fit gives the nominal form's coefficients (highest power first) and max residual, and
    the lowest-degree exact polynomial if any; fits use n >= ``fit_from`` (the counts fold
    constants and skip unneeded values, docs/opcounts.md: with n = 1 or 2 the body on the base
    is also the tip, or the tip's parent, and the two savings overlap, so the articulated-body
    and mass-matrix counts at n = 2 are off the line by a few operations). "vs" gives, for each Table 10.1
    formula an algorithm is set beside, the smallest n0 of the range such that robodyn's count
    is at or below the formula for every n >= n0 (None: above it at the top of the range).
    With ``published`` and kane_nie.py available, Nie's algorithm is included as "nie_kane".
    ``progress(n)`` is called after each chain is counted."""
    from ..io import from_dh

    if n_lo < 1 or n_hi < n_lo:
        raise ValueError(f"bad n range {n_lo}..{n_hi}: need 1 <= lo <= hi")
    ns = list(range(n_lo, n_hi + 1))
    algs = list(algorithms)
    mods = published_module() if published else None
    if mods is not None:
        algs.append("nie_kane")
    counts = {a: {"mul": [], "add": [], "trig": []} for a in algs}
    for n in ns:
        robot = from_dh(generic_dh_rows(n, seed + n), name=f"generic_dh_{n}")
        c = robot_counts(robot, algorithms)
        if mods is not None:
            kn, of = mods
            q, qd, qdd = (_general_state(n, s) for s in (1, 2, 3))
            c["nie_kane"] = of.count_ops(kn.inverse_dynamics, kn.chain_from_spec(robot.spec),
                                         q, qd, qdd, scalar=of.OpFloat)
        for a in algs:
            for k in ("mul", "add", "trig"):
                counts[a][k].append(int(c[a][k]))
        if progress is not None:
            progress(n)
    lo = max(n_lo, fit_from)
    sel = [j for j, n in enumerate(ns) if n >= lo]
    fns = [ns[j] for j in sel]
    fits = {a: {k: _fit_entry(fns, [counts[a][k][j] for j in sel], _DEGREE[a])
                for k in ("mul", "add")} for a in algs}
    vs = {a: {t: {k: _at_or_below_from(ns, counts[a][k], FEATHERSTONE[t][1 if k == "mul" else 2])
                  for k in ("mul", "add")} for t in _FEATHERSTONE_FOR.get(a, ())}
          for a in algs}
    return {"n": ns, "fit_n": fns, "seed": seed, "counts": counts, "fits": fits, "vs": vs}


def formula(coef, exact=True) -> str:
    """'93n - 108' style text of a polynomial (coefficients highest power first). With
    ``exact``, coefficients within 1e-6 of a fraction print as one ('n^3/6'); all others with
    two decimals."""
    deg = len(coef) - 1
    parts = []
    for i, c in enumerate(coef):
        k = deg - i
        power = "" if k == 0 else ("n" if k == 1 else f"n^{k}")
        fr = Fraction(c).limit_denominator(12)
        if exact and abs(float(fr) - c) < 1e-6:
            if fr == 0:
                continue
            num, den = abs(fr.numerator), fr.denominator
            body = ("" if num == 1 and power else str(num)) + power
            if den != 1:
                body += f"/{den}"
        else:
            if abs(c) < 5e-3:
                continue
            body = f"{abs(c):.2f}{power}"
        parts.append(("- " if c < 0 else "+ ") + body)
    if not parts:
        return "0"
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


# ---------------------------------------------------------------- plot

# the published line each measured series is drawn against in the figure
_PLOT_PAIRS = (
    ("rnea", "rnea_best", "Newton-Euler"),
    ("crba", "crba", "mass matrix (CRBA)"),
    ("aba", "aba_best", "articulated-body"),
    ("nie_kane", "rnea_best", "Nie 1988 Kane, as published"),
)


def plot_growth(g, path, check_only=False):
    """The figure of a :func:`growth` result, saved to ``path``; returns the Figure.

    Top: multiplications and additions against n on a logarithmic axis (the counts span from
    tens to Nie's published algorithm's n^4 growth, ~1e5), robodyn's measured counts as markers
    and the published formulas of Featherstone (2008), Table 10.1, dashed in the same colour.
    Bottom: robodyn's counts divided by their published formulas on a linear axis (1 = the
    published count; below 1 = fewer operations), where differences of a few percent show.
    Needs matplotlib: raises ImportError saying how to install it (``check_only``: just
    that)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib, which is not installed: "
                          "pip install robodyn[plot]  (or: pip install matplotlib)") from exc
    if check_only:
        return None
    ns = np.asarray(g["n"])
    fig = Figure(figsize=(12, 8), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True)
    pairs = [p for p in _PLOT_PAIRS if p[0] in g["counts"]]
    for col, key in enumerate(("mul", "add")):
        top, bottom = axes[0, col], axes[1, col]
        for k, (alg, fkey, label) in enumerate(pairs):
            color = f"C{k}"
            ys = np.asarray(g["counts"][alg][key], dtype=float)
            ftitle, cm, ca = FEATHERSTONE[fkey]
            ref = np.array([_poly((cm, ca)[col], n) for n in ns], dtype=float)
            measured = "measured" if alg == "nie_kane" else "robodyn"
            top.plot(ns, np.where(ys > 0, ys, np.nan), "o-", ms=3, lw=1, color=color,
                     label=f"{label} ({measured})")
            if alg == "nie_kane":
                continue
            ok = ref > 0  # the formulas are not meant for n = 1 (some go negative)
            top.plot(ns, np.where(ok, ref, np.nan), "--", lw=1.2, color=color,
                     label=f"{ftitle}, published")
            bottom.plot(ns[ok], ys[ok] / ref[ok], "o-", ms=3, lw=1, color=color,
                        label=f"{label} / {ftitle}")
        word = "multiplications" if key == "mul" else "additions"
        top.set_yscale("log")
        top.set_ylabel(("multiplications + divisions" if key == "mul"
                        else "additions + subtractions") + " (log scale)")
        top.set_title(f"{word} per call")
        top.grid(True, which="both", alpha=0.3)
        bottom.axhline(1.0, color="k", lw=0.8)
        bottom.set_ylabel("robodyn / published (below 1: fewer)")
        bottom.set_xlabel("n (generic all-revolute DH chain)")
        bottom.set_title(f"{word}: robodyn / published")
        bottom.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8,
               title="published: Featherstone (2008),\nRigid Body Dynamics Algorithms, "
                     "Table 10.1", title_fontsize=8)
    handles, labels = axes[1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right lower", fontsize=8)
    fig.suptitle("Operation counts of one call against the number of joints n")
    fig.savefig(path, dpi=110)
    return fig


# ---------------------------------------------------------------- command line

def add_arguments(parser):
    """Arguments of ``robodyn opcount``."""
    parser.add_argument("robots", nargs="*", metavar="ROBOT",
                        help="bundled robot name or URDF path (default: both bundled robots)")
    parser.add_argument("--n-range", nargs=2, type=int, metavar=("LO", "HI"),
                        help="also fit growth formulas on generic all-revolute DH chains "
                             f"with n = LO..HI (HI at most {MAX_N_PUBLISHED} in a source "
                             f"checkout, where Nie's published algorithm is counted too, "
                             f"else {MAX_N}); progress on stderr")
    parser.add_argument("--plot", metavar="OUT.png",
                        help="draw counts against n with the published lines (needs "
                             "matplotlib; uses --n-range, default 1 30)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the random DH chains (default 0)")
    parser.add_argument("--mu", type=float, default=0.0,
                        help="a URDF with <loop_joint>s: count constrained forward dynamics "
                             "with this proximal mu (default 0: one Cholesky solve)")
    parser.add_argument("--iterations", type=int, default=1,
                        help="with --mu > 0: the proximal iterations counted (default 1)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _ratio(x):
    return "" if x is None else f"{x:.2f}"


def _robot_report(name, robot, mu=0.0, iterations=1):
    counts = robot_counts(robot, mu=mu, iterations=iterations)
    system, robot = (robot, robot.robot) if hasattr(robot, "constraints") else (None, robot)
    pub = published_counts(robot.spec)
    joints = "".join("R" if b.joint_type == "revolute" else "P" for b in robot.spec.bodies)
    rows = comparisons(name, robot.n, counts, pub)
    if system is not None:
        # constrained forward dynamics beside the tree's own, unconstrained
        c = counts["constrained_forward_dynamics"]
        for alg in ("aba", "forward_dynamics"):
            u = counts[alg]
            rows.append({"algorithm": "constrained_forward_dynamics",
                         "reference": f"{LABELS[alg]} of the tree, unconstrained",
                         "mul": u["mul"], "add": u["add"], "ratio_mul": c["mul"] / u["mul"],
                         "ratio_add": c["add"] / u["add"]})
    rep = {"robot": name, "n": robot.n, "joints": joints, "counts": counts,
           "published_algorithm": pub, "comparisons": rows}
    if system is not None:
        rep["constraint_rows"] = system.rows
        rep["mu"], rep["iterations"] = float(mu), int(iterations)
    return rep


# what each algorithm name stands for, in the printed tables (the names are op_counts' names)
LABELS = {
    "rnea": "rnea (ID)",
    "kane": "kane (ID)",
    "gravity": "gravity g(q)",
    "crba": "crba (M)",
    "aba": "aba (FD, default)",
    "forward_dynamics": "crba+chol (FD)",
    "kane_forward": "kane+chol (FD)",
    "constrained_forward_dynamics": "constrained FD",
}


def _print_robot(rep, out):
    loops = ""
    if "constraint_rows" in rep:
        solve = ("mu = 0" if rep["mu"] == 0 else
                 f"mu = {rep['mu']:g}, {rep['iterations']} proximal iterations")
        loops = f", {rep['constraint_rows']} constraint rows, {solve}"
    print(f"{rep['robot']} (n = {rep['n']}, joints {rep['joints']}{loops})", file=out)
    w = max(len(r["reference"]) for r in rep["comparisons"]) if rep["comparisons"] else 10
    print(f"  {'algorithm':<18}{'mul':>6}{'add':>6}{'trig':>5}   {'compared with':<{w}}"
          f"{'mul':>7}{'add':>7}{'ratio mul':>11}{'add':>6}", file=out)
    for a, c in rep["counts"].items():
        head = f"  {LABELS.get(a, a):<18}{c['mul']:>6}{c['add']:>6}{c['trig']:>5}   "
        rows = [r for r in rep["comparisons"] if r["algorithm"] == a] or [None]
        for r in rows:
            if r is None:
                line = "-"
            elif r["mul"] is None:
                line = f"{r['reference']:<{w}}  {r['note']}"
            else:
                line = (f"{r['reference']:<{w}}{r['mul']:>7}{r['add']:>7}"
                        f"{_ratio(r['ratio_mul']):>11}{_ratio(r['ratio_add']):>6}")
            print(head + line, file=out)
            head = " " * len(head)
    print(file=out)


def _fit_text(e):
    if e["coef"] is None:
        return f"(too few n for degree {e['degree']})"
    text = f"{e['formula']}  [max res {e['max_residual']:.3g}]"
    if e["exact"] is not None and e["exact"]["degree"] != e["degree"]:
        text += f"  exact: {e['exact']['formula']}"
    return text


def _below_text(n0, ns):
    if n0 is None:
        return "above"
    if n0 == ns[0]:
        return f"<= for every n in {ns[0]}..{ns[-1]}"
    return f"<= for n >= {n0}"


def _print_growth(g, out):
    fn = g.get("fit_n") or g["n"]
    print(f"Growth on generic all-revolute DH chains, n = {g['n'][0]}..{g['n'][-1]} "
          f"(seed {g['seed']}): least-squares fits over n = {fn[0]}..{fn[-1]} (for n <= 2 the "
          f"base's and the tip's folded zeros overlap), max residual in "
          f"operations; the exact polynomial too when the nominal form is not exact; beside "
          f"each Featherstone (2008) Table 10.1 formula, where robodyn's own count is at or below it", file=out)
    for a, f in g["fits"].items():
        name = "Nie 1988 as published" if a == "nie_kane" else LABELS.get(a, a)
        print(f"  {name:<22}mul  {_fit_text(f['mul'])}", file=out)
        print(f"  {'':<22}add  {_fit_text(f['add'])}", file=out)
        for k in _FEATHERSTONE_FOR.get(a, ()):
            label, cm, ca = FEATHERSTONE[k]
            v = g.get("vs", {}).get(a, {}).get(k)
            tail = ""
            if v is not None:
                tail = (f"  [robodyn mul {_below_text(v['mul'], g['n'])}; "
                        f"add {_below_text(v['add'], g['n'])}]")
            print(f"  {'':<22}     Featherstone Table 10.1 {label}: {formula(cm)} mul, {formula(ca)} add"
                  f"{tail}", file=out)
    print(file=out)


def run(args, load=None) -> int:
    """operation counts of the algorithms beside the published figures

    The table for each robot (default: the bundled ones); with ``--n-range`` or ``--plot``
    also the growth fits on generic DH chains; ``--json`` for machine-readable output.
    ``load(name) -> Robot`` reads a ROBOT argument (the command line passes its loader, with
    its --strict / --xacro-arg options); default :func:`robodyn.robots.resolve`.
    """
    from ..io import robots

    load = load or robots.resolve

    top = max_n()
    if args.n_range is not None and not 1 <= args.n_range[0] <= args.n_range[1] <= top:
        raise ValueError(f"--n-range: expected 1 <= LO <= HI <= {top} (a range up to {top} "
                         f"counts in about a minute), got {args.n_range[0]} {args.n_range[1]}")
    if args.plot:
        plot_growth(None, None, check_only=True)  # fail before the counting, not after
    names = args.robots or robots.available()
    loaded = [(str(name), load(name)) for name in names]
    reports = [_robot_report(name if name in robots.available() else
                             getattr(robot, "robot", robot).name, robot,
                             getattr(args, "mu", 0.0), getattr(args, "iterations", 1))
               for name, robot in loaded]
    g = None
    n_range = args.n_range or ((1, 30) if args.plot else None)
    if n_range is not None:
        from tqdm import tqdm

        # a bar on stderr once the counting has taken a second (at once on a terminal)
        with tqdm(total=n_range[1] - n_range[0] + 1, unit="chain", file=sys.stderr,
                  delay=0.0 if sys.stderr.isatty() else 1.0, leave=False,
                  desc="counting DH chains") as bar:
            g = growth(n_range[0], n_range[1], seed=args.seed,
                       progress=lambda n: bar.update(1))
    if args.plot:
        plot_growth(g, args.plot)
    out = sys.stdout
    if args.json:
        json.dump({"rules": RULES, "robots": reports, "growth": g}, out, indent=1)
        print(file=out)
        return 0
    print(f"Operation counts. {RULES} ID = inverse dynamics, M = mass matrix, FD = forward "
          f"dynamics: 'aba (FD, default)' is what robot.forward_dynamics() runs, "
          f"'crba+chol (FD)' is method='crba' (op_counts name 'forward_dynamics'), "
          f"'kane+chol (FD)' method='kane'. Published figures: docs/opcounts.md.", file=out)
    if published_module() is None:
        print(f"Nie 1988 algorithm as published: {_NA}", file=out)
    print(file=out)
    for rep in reports:
        _print_robot(rep, out)
    if g is not None:
        _print_growth(g, out)
    if args.plot:
        print(f"wrote {args.plot}", file=out)
    return 0
