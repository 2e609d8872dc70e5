"""Figures and animations (optional ``plot`` extra: matplotlib, with pillow for GIFs).

- :func:`plot_result`: the time series of a :class:`~robodyn.simulation.SimulationResult`;
- :func:`draw_robot`: the robot at one configuration as a 3-D stick figure with its joint
  frames (``robodyn show``);
- :func:`animate_result`: the simulated motion as an animated GIF of that stick figure
  (``res.animate``, ``robodyn simulate --animate``).

matplotlib is imported lazily, only when a figure is drawn; without it the functions raise
``ImportError`` saying ``pip install robodyn[plot]``. Figures are built with
``matplotlib.figure.Figure`` and the Agg canvas (no pyplot, no global state, no display) unless
``show=True``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

__all__ = ["plot_result", "draw_robot", "animate_result", "default_configuration",
           "require_matplotlib"]


def require_matplotlib(animation=False):
    """Import matplotlib (and pillow, for ``animation``) or raise an ImportError that says how
    to install it."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib, which is not installed: "
                          "pip install robodyn[plot]  (or: pip install matplotlib)") from exc
    if animation:
        try:
            import PIL  # noqa: F401
        except ImportError as exc:
            raise ImportError("animations need pillow, which is not installed: "
                              "pip install pillow") from exc
    return matplotlib


def _figure(figsize, show):
    if show:
        import matplotlib.pyplot as plt
        return plt.figure(figsize=figsize, layout="constrained")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _finish(fig, path, show, dpi=100):
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)
    if show:
        import matplotlib.pyplot as plt
        plt.show()
    return fig


_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "\u00b5"), (1e-9, "n"))


def _scaled(values, unit):
    """``values`` and a unit with an SI prefix that keeps the numbers between 1 and 1000."""
    peak = float(np.max(np.abs(values))) if np.size(values) else 0.0
    for factor, prefix in _PREFIXES:
        if peak >= factor or factor == _PREFIXES[-1][0]:
            return np.asarray(values) / factor, prefix + unit
    return np.asarray(values), unit  # pragma: no cover


class _Row:
    """One row of :func:`plot_result`: the entries of q and of qd / tau it shows."""

    def __init__(self, name, q_cols, v_cols, lines, pos_unit, eff_unit, effort):
        self.name = name          # the row's label
        self.q_cols = q_cols      # columns of res.q (and q_ref) drawn as positions
        self.v_cols = v_cols      # columns of res.tau (and limits) drawn as efforts
        self.lines = lines        # legend labels of the lines, or None for one line
        self.pos_unit, self.eff_unit = pos_unit, eff_unit
        self.effort = effort      # "torque", "force" or "moment"


def _rows(res):
    """The rows of :func:`plot_result`: a fixed-base robot's joints one by one; a floating
    robot's base position (q 0-2; the force on the base, tau 3-5) and orientation quaternion
    (q 3-6; the moment on the base, tau 0-2), then its joints (q 7:, tau 6:)."""
    rows = []
    base_q = 7 if res.floating else 0
    base_v = 6 if res.floating else 0
    if res.floating:
        rows.append(_Row("base position", [0, 1, 2], [3, 4, 5], ["x", "y", "z"], "m", "N",
                         "force"))
        rows.append(_Row("base orientation", [3, 4, 5, 6], [0, 1, 2],
                         ["qx", "qy", "qz", "qw"], "quaternion", "N m", "moment"))
    for i in range(base_v, res.n):
        pos_unit, _, eff_unit = res.units(i)
        rows.append(_Row(res.joint_names[i], [base_q + i - base_v], [i], None, pos_unit,
                         eff_unit, "torque" if eff_unit == "N m" else "force"))
    return rows


def plot_result(res, path=None, show=False, title=None):
    """One row per joint: position with its reference, tracking error, applied torque, each in
    the joint's own unit (rad / N m or m / N), then the energy. Saved to ``path`` if given
    (format from the extension, e.g. PNG); shown in a window if ``show``. Returns the Figure.

    Position: the simulated motion solid, the reference dashed black on top. Error:
    ``q_ref - q`` scaled to a readable unit (e.g. mrad). Torque: the applied (held) command.
    Energy: kinetic, potential and their sum, and the work the joint torques did on the robot
    since the start; without friction, damping or stops the sum changes by exactly that work
    (a passive run keeps the sum constant).

    A floating robot's base takes two rows before its joints: its position (x, y, z in the
    world, m) beside the force on it, and its orientation quaternion (qx, qy, qz, qw) beside
    the moment on it (both in the base frame: the base block of ``res.tau``); a last row shows
    the change of its total momentum from the start (angular, N m s; linear, N s). A run
    without a reference (a passive one) has no error column.
    """
    require_matplotlib()
    rows = _rows(res)
    n = len(rows)
    has_ref = res.q_ref is not None
    momentum = res.momentum is not None
    extra = 2 if momentum else 1
    fig = _figure((12, 1.6 * n + 2.8 * extra), show)
    grid = fig.add_gridspec(n + extra, 3 if has_ref else 2,
                            height_ratios=[1.0] * n + [1.4] * extra)
    t = res.t
    first = None
    efforts = {row.effort for row in rows}
    for i, row in enumerate(rows):
        pos_unit, eff_unit = row.pos_unit, row.eff_unit
        ax = fig.add_subplot(grid[i, 0], sharex=first)
        first = first or ax
        for k, c in enumerate(row.q_cols):
            label = "simulated" if row.lines is None else row.lines[k]
            color = f"C{i % 10}" if row.lines is None else f"C{k}"
            ax.plot(t, res.q[:, c], color=color, lw=1.6, label=label)
            if has_ref:
                ax.plot(t, res.q_ref[:, c], color="k", lw=0.9, ls="--",
                        label="reference" if k == 0 else None)
        for c in row.v_cols:
            if res.position_limits is not None and res.limit_hits[c]:
                for bound in (res.position_limits[0][c], res.position_limits[1][c]):
                    if np.isfinite(bound):
                        ax.axhline(bound, color="r", lw=0.8, ls=":", label="limit")
        ax.set_ylabel(f"{row.name}\n({pos_unit})")
        if row.lines is not None:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small",
                      frameon=False, handlelength=1.0)
        if i == 0:
            ax.set_title("position")
            if row.lines is None:
                ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.15), ncol=3,
                          fontsize="small", frameon=False)
        if has_ref:
            ax = fig.add_subplot(grid[i, 1], sharex=first)
            if pos_unit == "quaternion":  # dimensionless: the scale as a factor
                e, unit = _scaled(res.error[:, row.q_cols], "")
                factor = {"": "", "m": "1e-3", "\u00b5": "1e-6", "n": "1e-9"}[unit]
                unit = f"x {factor}" if factor else "1"
            else:
                e, unit = _scaled(res.error[:, row.q_cols], pos_unit)
            for k in range(len(row.q_cols)):
                ax.plot(t, e[:, k], color=f"C{i % 10}" if row.lines is None else f"C{k}",
                        lw=1.0)
            ax.ticklabel_format(axis="y", useOffset=False, style="plain")
            ax.set_ylabel(f"error ({unit})")
            if i == 0:
                ax.set_title("tracking error q_ref - q")
        ax = fig.add_subplot(grid[i, 2 if has_ref else 1], sharex=first)
        for k, c in enumerate(row.v_cols):
            ax.step(t, res.tau[:, c], where="post", lw=1.0,
                    color=f"C{i % 10}" if row.lines is None else f"C{k}")
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_ylabel(f"{row.effort} ({eff_unit})")
        if i == 0:
            ax.set_title("applied " + " / ".join(
                e for e in ("torque", "force", "moment") if e in efforts))
    ax = fig.add_subplot(grid[n, :], sharex=first)
    if res.energy is not None:
        ax.plot(t, res.kinetic, lw=1.0, label="kinetic")
        ax.plot(t, res.potential - res.potential[0], lw=1.0, label="potential (from its start)")
        ax.plot(t, res.energy - res.energy[0], lw=1.8, color="k",
                label="kinetic + potential (change from start)")
        work = res.actuator_work()
        if np.any(work != 0.0):
            ax.plot(t, work, lw=1.0, ls="--", color="C3",
                    label="work done by the joint torques")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                  frameon=False)
    ax.set_ylabel("energy (J)")
    ax.set_title("energy: the total changes by the torques' work (friction, damping and "
                 "stops take some away)")
    if momentum:
        ax = fig.add_subplot(grid[n + 1, :], sharex=first)
        d = res.momentum - res.momentum[0]
        for k, label in enumerate(("angular x (N m s)", "angular y (N m s)",
                                   "angular z (N m s)", "linear x (N s)", "linear y (N s)",
                                   "linear z (N s)")):
            ax.plot(t, d[:, k], lw=1.0, ls="-" if k < 3 else "--", color=f"C{k % 3}",
                    label=label)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                  frameon=False)
        ax.set_ylabel("momentum change")
        ax.set_title("total momentum (world axes, angular about the world origin): change "
                     "from the start")
    ax.set_xlabel("t (s)")
    fig.suptitle(title or f"{res.robot_name}: controller {res.controller_name}, "
                          f"{res.integrator}, dt {res.dt:g} s")
    return _finish(fig, path, show, dpi=100)


# ---------------------------------------------------------------------------------------------
# the robot as a stick figure



class _Skeleton:
    """What the stick figure draws of a robot, read once from its description: the parent of
    every pose ``forward_kinematics`` returns (bodies, then extra frames; -1 the base), the
    joint axes of the jointed bodies in their own frames, the centres of mass of the bodies
    with mass, and whether body 0 floats (a free-flyer joint: no link to the world)."""

    def __init__(self, robot):
        spec = robot.spec
        bodies = spec.bodies
        self.parents = np.array([int(b.parent) for b in bodies]
                                + [int(f.parent) for f in spec.frames], dtype=int)
        self.floating = bool(bodies) and bodies[0].joint_type == "floating"
        self.jointed = np.array([i for i, b in enumerate(bodies)
                                 if b.joint_type != "floating"], dtype=int)
        self.axes = np.array([np.asarray(bodies[i].axis, dtype=float)
                              for i in self.jointed]).reshape(-1, 3)
        self.massive = np.array([i for i, b in enumerate(bodies) if b.mass > 0.0], dtype=int)
        self.com = np.array([np.asarray(bodies[i].com, dtype=float)
                             for i in self.massive]).reshape(-1, 3)
        # segments parent origin -> child origin; a root's parent is the world origin on a
        # fixed base, and a floating root has none
        child = np.arange(self.parents.shape[0])
        keep = (self.parents >= 0) | (not self.floating)
        self.link_child, self.link_parent = child[keep], self.parents[keep]


def _poses(robot, Q):
    """Poses (frames, k, 4, 4) of every link for each configuration in Q (frames, nq)."""
    return np.asarray(robot.forward_kinematics(np.ascontiguousarray(Q, dtype=np.float64)),
                      dtype=np.float64).reshape(Q.shape[0], -1, 4, 4)


def _polyline(a, b):
    """x, y, z arrays of the segments a[i] -> b[i] (k, 3), separated by NaN (one artist)."""
    pts = np.full((a.shape[0], 3, 3), np.nan)
    pts[:, 0], pts[:, 1] = a, b
    return pts.reshape(-1, 3).T


_E = np.zeros(0)  # no points yet


class _StickFigure:
    """Artists of one robot drawing on a 3-D axes, updated in place for each frame (a handful of
    Line3D objects whatever the robot's size: every link in one, every frame axis of one colour
    in one)."""

    def __init__(self, ax, robot, poses_all):
        self.sk = sk = _Skeleton(robot)
        origins = poses_all[:, :, :3, 3].reshape(-1, 3)
        massive = poses_all[:, sk.massive]
        coms = (np.einsum("fkij,kj->fki", massive[:, :, :3, :3], sk.com)
                + massive[:, :, :3, 3]).reshape(-1, 3)
        pts = np.vstack([origins, coms] + ([] if sk.floating else [np.zeros((1, 3))]))
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        centre = 0.5 * (lo + hi)
        half = max(0.5 * float(np.max(hi - lo)), 0.05) * 1.15
        self.scale = 0.12 * 2 * half
        ax.set_xlim(centre[0] - half, centre[0] + half)
        ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_zlim(centre[2] - half, centre[2] + half)
        ax.set_box_aspect((1, 1, 1))
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.set_zlabel("z (m)")
        self.links = ax.plot(_E, _E, _E, "-", color="0.25", lw=3, solid_capstyle="round",
                             label="links")[0]
        self.to_com = ax.plot(_E, _E, _E, ":", color="0.4", lw=1.5)[0]
        self.coms = ax.plot(_E, _E, _E, "o", color="C0", ms=4, label="centres of mass")[0]
        self.joints = ax.plot(_E, _E, _E, "o", color="C1", ms=6, label="joints")[0]
        self.triads = [ax.plot(_E, _E, _E, "-", color=c, lw=1.2)[0] for c in "rgb"]
        self.joint_axes = ax.plot(_E, _E, _E, "-", color="m", lw=2.5, alpha=0.8,
                                  label="joint axes")[0]
        if sk.floating:
            self.base = ax.plot(_E, _E, _E, "ks", ms=7, label="floating base")[0]
        else:
            self.base = ax.plot([0.0], [0.0], [0.0], "ks", ms=7, label="base")[0]
        ax.plot(_E, _E, _E, "-", color="r", lw=1.2, label="frames x, y, z (r, g, b)")
        ax.legend(loc="upper left", fontsize="x-small", frameon=False)

    @property
    def artists(self):
        """The artists that move from frame to frame."""
        moving = [self.links, self.to_com, self.coms, self.joints, *self.triads,
                  self.joint_axes]
        return moving + ([self.base] if self.sk.floating else [])

    def update(self, poses):
        sk, s = self.sk, self.scale
        origin, R = poses[:, :3, 3], poses[:, :3, :3]
        start = np.zeros((sk.link_child.shape[0], 3))
        has_parent = sk.link_parent >= 0
        start[has_parent] = origin[sk.link_parent[has_parent]]
        self.links.set_data_3d(*_polyline(start, origin[sk.link_child]))
        com = np.einsum("kij,kj->ki", R[sk.massive], sk.com) + origin[sk.massive]
        self.to_com.set_data_3d(*_polyline(origin[sk.massive], com))
        self.coms.set_data_3d(*com.T)
        jointed = origin[sk.jointed]
        self.joints.set_data_3d(*jointed.T)
        for k, line in enumerate(self.triads):
            line.set_data_3d(*_polyline(origin, origin + 0.6 * s * R[:, :, k]))
        u = np.einsum("kij,kj->ki", R[sk.jointed], sk.axes)
        self.joint_axes.set_data_3d(*_polyline(jointed - 0.5 * s * u, jointed + 0.5 * s * u))
        if sk.floating:
            self.base.set_data_3d(*origin[:1].T)


def default_configuration(robot):
    """Where :func:`draw_robot` draws a robot given no q: its joints at zero clipped into their
    limits; a floating base at the origin with the identity quaternion, or for a bundled seed
    system the document's initial state (:func:`robodyn.robots.initial_state`)."""
    lo, hi = (np.asarray(x, dtype=np.float64) for x in robot.position_limits)
    joints = np.clip(np.zeros(lo.shape[0]), lo, hi)
    if robot.nq == robot.nv:
        return joints
    from ..io import robots

    try:
        return robots.initial_state(robot.name, robot)[0]
    except ValueError:  # not a bundled seed system
        q = np.zeros(robot.nq)
        q[6] = 1.0
        q[7:] = joints[-(robot.nq - 7):] if robot.nq > 7 else joints[:0]
        return q


def _describe(robot, q):
    """A title line for the robot at q (a floating base's pose apart from its joints)."""
    def vec(x):
        return "(" + ", ".join(f"{v:.3g}" for v in x) + ")"

    if robot.nq == robot.nv:
        return f"{robot.name} at q = {vec(q)}"
    text = f"{robot.name}: base at {vec(q[:3])} m, quaternion (x, y, z, w) {vec(q[3:7])}"
    return text + (f"\njoints {vec(q[7:])}" if q.shape[0] > 7 else "")


def draw_robot(robot, q=None, path=None, show=False, title=None, elev=25.0, azim=-60.0):
    """The robot at configuration ``q`` (nq,) as a 3-D stick figure: a segment from each link's
    frame origin to its parent's (to the world origin for a fixed base's first link; none for a
    floating base, drawn as a black square), a dotted segment from each link's origin to its
    centre of mass (blue dot), the joint origins, each link frame's x, y, z axes (red, green,
    blue) and each joint's axis (magenta). Frames are those of ``robot.forward_kinematics``
    (the URDF's link frames, or the DH frames). ``q`` defaults to
    :func:`default_configuration`. Saved to ``path`` if given; returns the Figure."""
    require_matplotlib()
    q = default_configuration(robot) if q is None else np.asarray(q, dtype=np.float64)
    if q.shape != (robot.nq,):
        raise ValueError(f"q: expected {robot.nq} values, got {q.shape[0] if q.ndim else 1}")
    fig = _figure((7, 7), show)
    ax = fig.add_subplot(projection="3d")
    ax.view_init(elev=elev, azim=azim)
    poses = _poses(robot, q[None, :])
    stick = _StickFigure(ax, robot, poses)
    stick.update(poses[0])
    ax.set_title(title or _describe(robot, q), fontsize="small")
    return _finish(fig, path, show, dpi=100)


def animate_result(res, path, fps=25.0, max_frames=250, dpi=80, elev=25.0, azim=-60.0,
                   progress=False):
    """Write the simulated motion of ``res`` as an animated GIF at ``path``: the stick figure
    of :func:`draw_robot` at ``fps`` frames per simulated second (at most ``max_frames``
    frames: sampled more sparsely for long runs, which then play faster, as the title says),
    with the simulated time in the top right corner. Needs the plant robot (``res.robot``, set by
    :func:`robodyn.simulate`). ``progress``: a progress bar on stderr (tqdm). Returns the
    path.

    The axes, panes and legend are drawn once; each frame redraws only the moving lines over
    that background (blitting) and is appended to the file as it is drawn
    (:class:`robodyn._gif.GifWriter`, one palette for the whole animation)."""
    require_matplotlib(animation=True)
    from ._gif import GifWriter, frame_delay_ms

    robot = getattr(res, "robot", None)
    if robot is None:
        raise ValueError("animate: this result has no robot (res.robot); results from "
                         "robodyn.simulate carry theirs")
    if not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"fps: expected a positive number, got {fps!r}")
    if int(max_frames) < 2:
        raise ValueError(f"max_frames: expected at least 2, got {max_frames!r}")
    count = int(min(int(max_frames), max(2, round(res.duration * fps) + 1)))
    times = np.linspace(res.t[0], res.t[-1], count)
    rows = np.clip(np.searchsorted(res.t, times), 0, res.t.shape[0] - 1)
    poses = _poses(robot, res.q[rows])
    fig = _figure((6, 6), False)
    fig.set_dpi(dpi)
    ax = fig.add_subplot(projection="3d")
    ax.view_init(elev=elev, azim=azim)
    stick = _StickFigure(ax, robot, poses)
    # playback speed: the GIF shows count frames, each for its delay; the run lasted
    # res.duration
    speed = res.duration / (count * frame_delay_ms(fps) / 1000.0)
    note = "" if 0.9 < speed < 1.1 else f", played at {speed:.2g}x"
    ax.set_title(f"{res.robot_name}, controller {res.controller_name}{note}",
                 fontsize="small")
    # only the clock changes in the text: a few glyphs drawn per frame
    clock = ax.text2D(0.99, 0.99, "t = 0.00 s", transform=ax.transAxes, ha="right",
                      va="top", fontsize="small", family="monospace")
    moving = stick.artists + [clock]
    for artist in moving:
        artist.set_animated(True)
    canvas = fig.canvas
    canvas.draw()  # the static part, laid out once
    fig.set_layout_engine("none")
    background = canvas.copy_from_bbox(fig.bbox)
    bar = None
    if progress:
        from tqdm import tqdm

        isatty = getattr(sys.stderr, "isatty", None)
        bar = tqdm(total=count, unit="frame", desc=f"writing {os.path.basename(path)}",
                   leave=False, file=sys.stderr, mininterval=0.2,
                   delay=0.0 if isatty and isatty() else 1.0)
    path = os.fspath(path)
    try:
        with GifWriter(path, fps) as gif:
            for k in range(count):
                canvas.restore_region(background)
                stick.update(poses[k])
                clock.set_text(f"t = {res.t[rows[k]]:.2f} s")
                for artist in moving:
                    ax.draw_artist(artist)
                gif.add(np.asarray(canvas.buffer_rgba()))
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return path
