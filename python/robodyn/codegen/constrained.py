"""Constrained forward dynamics: its operation counts and its generated kernel.

A :class:`robodyn.ConstrainedRobot`'s ``forward_dynamics`` (``cpp/include/robodyn/constraints/
dynamics.hpp``: M's tree-sparse factor, the Schur complement J M^-1 J', its Cholesky factor)
is a template over the scalar like every algorithm: run with the counting scalar it gives the
operation counts (:func:`constrained_counts`, the rules of docs/opcounts.md), run with the
tracing scalar the expression graph the kernel is generated from (:func:`trace_constrained`,
:func:`generate_constrained`, :func:`specialize_constrained`).

What the kernel covers (fixed when it is generated):

- ``mu = 0`` (default): one Cholesky solve of J M^-1 J' (the constraints must not be redundant:
  a row that is structurally zero is refused; a system that is singular only at some states
  gives inf or NaN there, like the unconstrained kernels for a singular M);
- ``mu > 0``: exactly ``iterations`` proximal iterations from lam = 0 (no early stop: the
  core's ``forward_dynamics(q, v, tau, mu, max_iter=iterations, tol=0)``).

Baumgarte terms are built in (their gains are constants): kd on every row, kp on translation
rows. A position gain kp on a constraint's rotation rows is refused (ValueError): the rotation
vector's t / sin(t) takes a series branch at t = 0 that a straight-line graph cannot, so a
closed loop would give 0 / 0.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .kernels import (CONST, COS, INPUT, MAX_OPERATIONS, SIN, CodeSizeError, Graph,
                      c_expression, c_identifier, count_line, embed, simplify)

__all__ = ["constrained_counts", "trace_constrained", "generate_constrained",
           "specialize_constrained", "write_constrained", "ConstrainedCode", "ConstrainedKernel", "FUNCTION"]

FUNCTION = "constrained_forward_dynamics"


def _system(system):
    from ..constraints.system import ConstrainedRobot

    if not isinstance(system, ConstrainedRobot):
        raise ValueError(f"system: expected a robodyn.ConstrainedRobot, got "
                         f"{type(system).__name__}")
    return system


def constrained_counts(system, mu=0.0, iterations=1) -> dict:
    """{"mul", "add", "trig"} of one constrained forward dynamics call (qdd and the
    multipliers) of ``system`` at a general state, counted by the counting scalar with the
    rules of docs/opcounts.md (trig counts sin, cos, sqrt and atan2). ``mu = 0``: one solve
    (``iterations`` must be 1); ``mu > 0``: exactly ``iterations`` proximal iterations.
    ValueError for a bad mu or iterations, or constraints rank deficient with mu = 0."""
    return dict(_system(system)._core._op_counts(float(mu), int(iterations)))


def trace_constrained(system, mu=0.0, iterations=1):
    """(Graph, outputs) of constrained forward dynamics traced on ``system`` (simplified as it
    was built): inputs q = 0..nq-1, v = nq..nq+nv-1, tau = nq+nv..nq+2nv-1; outputs qdd (nv)
    then lam (rows)."""
    return Graph._from_core(_system(system)._core._trace(float(mu), int(iterations)))


@dataclass
class ConstrainedCode:
    """The generated constrained forward dynamics of one system."""

    robot_name: str               # the robot's name in the symbol and the file names
    prefix: str                   # robodyn_<robot>
    nq: int
    nv: int
    rows: int                     # constraint rows m: the size of lam
    mu: float
    iterations: int
    graph: Graph = None
    outputs: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    source: str = ""
    header: str = ""

    @property
    def sha256(self):
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def symbol(self):
        return f"{self.prefix}_{FUNCTION}"


_PARAMS = "const double* q, const double* v, const double* tau, double* qdd, double* lam"


def _emit(code):
    """The C++ function of the traced graph."""
    g, outputs, nq, nv = code.graph, code.outputs, code.nq, code.nv
    names = {}
    for k in range(len(g)):
        if g.op[k] == INPUT:
            i = g.a[k]
            names[k] = (f"q[{i}]" if i < nq else
                        f"{('v', 'tau')[(i - nq) // nv]}[{(i - nq) % nv}]")
    lines, counter = [], 0
    for k in g.live(outputs):
        op, a = g.op[k], g.a[k]
        if op in (CONST, INPUT):
            continue
        if op in (SIN, COS) and g.op[a] == INPUT and g.a[a] < nq:
            name = ("s" if op == SIN else "c") + str(g.a[a] + 1)  # of q[i - 1]: s<i>, c<i>
        else:
            counter += 1
            name = f"x{counter}"
        lines.append(f"  const double {name} = {c_expression(g, k, names)};")
        names[k] = name
    for i, o in enumerate(outputs[:nv]):
        lines.append(f"  qdd[{i}] = {c_expression(g, o, names)};")
    for i, o in enumerate(outputs[nv:]):
        lines.append(f"  lam[{i}] = {c_expression(g, o, names)};")
    return f"void {code.symbol}({_PARAMS}) {{\n" + "\n".join(lines) + "\n}\n"


def generate_constrained(system, name=None, mu=0.0, iterations=1, max_operations=None):
    """The generated kernel of ``system``'s constrained forward dynamics: a
    :class:`ConstrainedCode` with the C++ source (plain C ABI, ``<cmath>`` only)::

        void robodyn_<robot>_constrained_forward_dynamics(const double* q, const double* v,
            const double* tau, double* qdd, double* lam);

    q (nq,), v and tau (nv,), qdd (nv,), lam (rows,): the same as
    ``system.forward_dynamics(q, v, tau, mu, max_iter=iterations, tol=0)``. Bounded before
    tracing by the operation count (CodeSizeError over ``max_operations``, default
    :data:`robodyn.codegen.MAX_OPERATIONS`)."""
    system = _system(system)
    robot = system.robot
    robot_name = str(name if name is not None else robot.name)
    limit = MAX_OPERATIONS if max_operations is None else int(max_operations)
    predicted = sum(constrained_counts(system, mu, iterations).values())
    if predicted > limit:
        raise CodeSizeError(
            f"generated constrained forward dynamics of '{embed(robot_name, 'text')}' would "
            f"take {predicted:,} operations, over the limit of {limit:,} (max_operations, "
            f"robodyn.codegen.MAX_OPERATIONS)")
    g, outs = simplify(*trace_constrained(system, mu, iterations))
    code = ConstrainedCode(robot_name=robot_name, prefix="robodyn_" + c_identifier(robot_name),
                           nq=int(robot.nq), nv=int(robot.nv), rows=int(system.rows),
                           mu=float(mu), iterations=int(iterations), graph=g, outputs=outs,
                           counts=g.counts(outs))
    solve = ("one Cholesky solve of J M^-1 J' (mu = 0)" if mu == 0 else
             f"{iterations} proximal iterations with mu = {float(mu)!r}")
    head = [
        f"// Generated by robodyn.codegen: constrained forward dynamics of '"
        f"{embed(robot_name, 'text')}', specialised. Do not edit.",
        f"// nq = {code.nq}, nv = {code.nv}, {code.rows} constraint rows; {solve}.",
        "// M qdd + h = tau + J' lam, J qdd = -gamma - kd J v - kp phi: qdd (nv,) and lam",
        "// (rows,): per constraint its wrench on body 1 in frame 1's axes, in this order:",
        *(f"//   lam[{s.start}..{s.stop - 1}]: '{embed(c.name, 'text')}' rows "
          f"{', '.join(c.axes)}" for c, s in zip(system.constraints, system.row_slices)),
        "// Operations per call (mul, add, trig = sin/cos/sqrt/atan2):",
        "//   " + count_line(FUNCTION, code.counts, width=30),
    ]
    code.source = "\n".join([*head, "", "#include <cmath>", "", 'extern "C" {', "",
                             _emit(code), '}  // extern "C"', ""])
    guard = code.prefix.upper() + "_CONSTRAINED_H_"
    code.header = "\n".join([
        head[0], f"#ifndef {guard}", f"#define {guard}", "#ifdef __cplusplus", 'extern "C" {',
        "#endif", f"void {code.symbol}({_PARAMS});", "#ifdef __cplusplus", "}", "#endif",
        f"#endif  // {guard}", ""])
    return code


def write_constrained(system, directory, name=None, mu=0.0, iterations=1, max_operations=None):
    """Write ``<robot>_constrained.cpp`` and ``.h`` into ``directory`` (created if needed);
    returns the :class:`ConstrainedCode` and the two paths (see :func:`generate_constrained`)."""
    code = generate_constrained(system, name, mu, iterations, max_operations)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stem = c_identifier(code.robot_name) + "_constrained"
    cpp, hdr = directory / f"{stem}.cpp", directory / f"{stem}.h"
    cpp.write_text(code.source)
    hdr.write_text(code.header)
    return code, cpp, hdr


class ConstrainedKernel:
    """A compiled constrained forward dynamics kernel: ``kernel(q, v, tau) -> (qdd, lam)``
    for single states (q (nq,), v and tau (nv,)) or (N, .) batches. ``code`` is its
    :class:`ConstrainedCode` (``code.counts`` its operations)."""

    def __init__(self, code, function, library):
        self.code = code
        self._f = function
        self._library = library  # kept loaded as long as the kernel lives

    def __call__(self, q, v, tau):
        c = self.code
        arrays = []
        for name, x, n in (("q", q, c.nq), ("v", v, c.nv), ("tau", tau, c.nv)):
            a = np.ascontiguousarray(x, dtype=float)
            if a.ndim not in (1, 2) or a.shape[-1] != n:
                raise ValueError(f"{name}: expected shape ({n},) or (N, {n}), got {a.shape}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: not finite")
            arrays.append(a)
        if len({a.shape[:-1] for a in arrays}) != 1:
            raise ValueError("q, v, tau: a single state and a batch, or batches of different "
                             "lengths, are mixed")
        batch = arrays[0].ndim == 2
        rows = [a if batch else a[None] for a in arrays]
        N = rows[0].shape[0]
        qdd, lam = np.empty((N, c.nv)), np.empty((N, c.rows))
        ptr = ctypes.POINTER(ctypes.c_double)
        for r in range(N):
            self._f(*(x[r].ctypes.data_as(ptr) for x in rows), qdd[r].ctypes.data_as(ptr),
                    lam[r].ctypes.data_as(ptr))
        return (qdd, lam) if batch else (qdd[0], lam[0])


def specialize_constrained(system, mu=0.0, iterations=1, name=None):
    """The generated kernel of ``system`` (:func:`generate_constrained`) compiled with the
    system C++ compiler into the per-user cache of robodyn.codegen (as ``specialize``), loaded
    and checked against the core at a few random states (1e-9 relative; RuntimeError if they
    differ). RuntimeError when no compiler is available or compilation fails."""
    from .compiled import load_library

    system = _system(system)
    code = generate_constrained(system, name, mu, iterations)
    lib = load_library(code)
    f = getattr(lib, code.symbol)
    f.restype = None
    f.argtypes = [ctypes.POINTER(ctypes.c_double)] * 5
    kernel = ConstrainedKernel(code, f, lib)
    _check(kernel, system)
    return kernel


def _check(kernel, system, seed=1988):
    rng = np.random.default_rng(seed)
    robot = system.robot
    q0 = np.zeros(robot.nq)
    if robot.nq != robot.nv:
        q0[6] = 1.0  # a free-flyer's unit quaternion (x, y, z, w)
    for _ in range(3):
        q = robot.integrate(q0, rng.uniform(-1, 1, robot.nv), 1.0)
        v, tau = rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)
        ref = system.forward_dynamics(q, v, tau, kernel.code.mu, kernel.code.iterations, 0.0)
        got = kernel(q, v, tau)
        for what, x, y in zip(("qdd", "lam"), got, ref):
            scale = max(1.0, float(np.max(np.abs(y), initial=0.0)))
            err = float(np.max(np.abs(x - y), initial=0.0))
            if not err <= 1e-9 * scale:
                raise RuntimeError(f"generated constrained forward dynamics of "
                                   f"'{embed(robot.name, 'text')}' differs from the core in "
                                   f"{what} by {err:.3g} (scale {scale:.3g})")
