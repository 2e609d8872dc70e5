"""Figures of a :class:`~robodyn.simulation.SimulationResult` (optional ``plot`` extra).

matplotlib is imported lazily, only when a figure is drawn; without it the functions raise
``ImportError`` saying ``pip install robodyn[plot]``. Figures are built with
``matplotlib.figure.Figure`` (no pyplot, no global state, no display needed) unless
``show=True``.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["plot_result", "require_matplotlib"]


def require_matplotlib():
    """Import matplotlib or raise an ImportError that says how to install it."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib, which is not installed: "
                          "pip install robodyn[plot]  (or: pip install matplotlib)") from exc
    return matplotlib


def plot_result(res, path=None, show=False, title=None):
    """Four panels over time: joint positions (solid) with references (dashed), tracking
    error, applied torques, and kinetic + potential energy. Saved to ``path`` if given
    (format from the extension, e.g. PNG); shown in a window if ``show``. Returns the Figure.
    """
    require_matplotlib()
    if show:
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=(10, 9), layout="constrained")
    else:
        from matplotlib.figure import Figure
        fig = Figure(figsize=(10, 9), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    t = res.t
    colors = [f"C{i % 10}" for i in range(res.n)]
    names = res.joint_names

    ax = axes[0]
    for i in range(res.n):
        ax.plot(t, res.q[:, i], color=colors[i], lw=1.2, label=names[i])
        if res.q_ref is not None:
            ax.plot(t, res.q_ref[:, i], color=colors[i], lw=1.0, ls="--")
    ax.set_ylabel("q (rad or m)")
    ax.set_title("joint positions" + (" (dashed: reference)" if res.q_ref is not None else ""))
    ax.legend(loc="best", fontsize="small", ncol=min(res.n, 6))

    ax = axes[1]
    if res.q_ref is not None:
        e = res.error
        for i in range(res.n):
            ax.plot(t, e[:, i], color=colors[i], lw=1.0)
        ax.set_title(f"tracking error q_ref - q (max {float(np.max(np.abs(e))):.2e})")
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    else:
        ax.text(0.5, 0.5, "no reference", ha="center", va="center", transform=ax.transAxes)
        ax.set_title("tracking error")
    ax.set_ylabel("error")

    ax = axes[2]
    for i in range(res.n):
        ax.step(t, res.tau[:, i], where="post", color=colors[i], lw=1.0)
    ax.set_ylabel("tau (N m or N)")
    ax.set_title("applied joint torques")

    ax = axes[3]
    if res.energy is not None:
        ax.plot(t, res.kinetic, lw=1.0, label="kinetic")
        ax.plot(t, res.potential - res.potential[0], lw=1.0,
                label="potential - potential(0)")
        ax.plot(t, res.energy - res.potential[0], lw=1.4, color="k", label="total (shifted)")
        ax.legend(loc="best", fontsize="small")
    ax.set_ylabel("energy (J)")
    ax.set_title("energy")
    ax.set_xlabel("t (s)")

    fig.suptitle(title or f"{res.robot_name}: {res.controller_name}, {res.integrator}")
    if path is not None:
        fig.savefig(os.fspath(path), dpi=110)
    if show:
        import matplotlib.pyplot as plt
        plt.show()
    return fig
