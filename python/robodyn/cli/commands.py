"""The ``robodyn`` command line.

Subcommands are kept in :data:`COMMANDS`, a dict ``name -> (add_arguments, run)``:
``add_arguments(parser)`` declares the subcommand's options on an ``argparse`` sub-parser and
``run(args) -> int`` does the work and returns the exit status. The first line of ``run``'s
docstring is the subcommand's one-line help. To add a subcommand, write the two functions and
add an entry (or call :func:`register`).

Exit status: 0 on success; 2 for a usage error (bad option, unknown robot, wrong number of
values: argparse's convention); 1 when the work itself fails (simulation diverged, file not
writable).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings

import numpy as np

from ..util.messages import say_warning, warning_lines  # noqa: F401 (warning_lines: public here)

__all__ = ["main", "COMMANDS", "register", "load_robot", "add_robot_options", "robot_options",
           "parse_vector", "UsageError", "build_parser", "default_reference", "warning_lines",
           "peers_benchmark"]


class UsageError(Exception):
    """A bad command line detected after parsing (reported with exit status 2)."""


# ---------------------------------------------------------------------------------------------
# shared helpers


def add_robot_options(p):
    """The options of every subcommand that loads a ROBOT: ``--strict``, ``--xacro-arg``,
    ``--xacro-allow-env``."""
    p.add_argument("--strict", action="store_true",
                   help="refuse a URDF that would load with warnings (a non-physical inertia "
                        "on a moving link)")
    p.add_argument("--xacro-arg", action="append", metavar="NAME:=VALUE", dest="xacro_arg",
                   help="an argument of a .xacro ROBOT file (repeatable)")
    p.add_argument("--xacro-allow-env", action="store_true", dest="xacro_env",
                   help="let a .xacro ROBOT file read environment variables ($(env), "
                        "$(optenv)) and ROS package paths ($(find) beyond its own folders)")


def add_floating_option(p):
    """``--floating-base`` (info, id, simulate, codegen)."""
    p.add_argument("--floating-base", action="store_true", dest="floating_base",
                   help="the URDF's root link moves freely (a free-flyer joint: q = [base "
                        "position, quaternion x y z w, joints], v = [base angular, base "
                        "linear, joints])")


def robot_options(args):
    """load_robot's keyword arguments from the options of :func:`add_robot_options`."""
    xacro_args = None
    for item in getattr(args, "xacro_arg", None) or []:
        name, sep, value = item.partition(":=")
        if not sep or not name.strip():
            raise UsageError(f"--xacro-arg: expected NAME:=VALUE, got {item!r}")
        xacro_args = xacro_args or {}
        xacro_args[name.strip()] = value
    return {"strict": bool(getattr(args, "strict", False)), "xacro_args": xacro_args,
            "xacro_env": bool(getattr(args, "xacro_env", False))}


def load_robot(name_or_path, *, strict=False, xacro_args=None, floating_base=False,
               xacro_env=False):
    """A robot by name (:func:`robodyn.robots.resolve`: the bundled robots and, when installed,
    example-robot-data's) or a URDF (or .xacro) file by path; UsageError if there is none.

    Loading warnings are printed once to stderr, one line each (:func:`say_warning`);
    ``strict`` turns them into errors (ValueError)."""
    from ..io import load_urdf, robots, urdf

    text = str(name_or_path)
    looks_like_path = (os.path.sep in text or text.endswith((".urdf", ".xml", ".xacro"))
                       or os.path.exists(text))
    if looks_like_path:
        if not os.path.isfile(text):
            raise UsageError(f"no such URDF file: {text}")
        if (xacro_args or xacro_env) and not text.endswith(".xacro"):
            flag = "--xacro-arg" if xacro_args else "--xacro-allow-env"
            raise UsageError(f"{flag}: {text} is not a .xacro file")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", urdf.URDFWarning)
            robot = load_urdf(text, strict=strict, xacro_args=xacro_args,
                              floating_base=floating_base, xacro_env=xacro_env)
        for w in caught:
            say_warning(w.message)
        return robot
    if xacro_args or xacro_env:
        flag = "--xacro-arg" if xacro_args else "--xacro-allow-env"
        raise UsageError(f"{flag}: {text} is a robot name, not a .xacro file")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            robot = robots.resolve(text, strict=strict)
    except ValueError as exc:
        if "unknown robot" in str(exc) or "not installed" in str(exc):
            raise UsageError(str(exc)) from None
        raise
    for w in caught:
        print(f"robodyn: warning: {w.message}", file=sys.stderr)
    if floating_base and robot.nq == robot.nv:
        raise UsageError(f"--floating-base: the bundled {text} has a fixed base (its root link "
                         "has no mass); give a URDF path")
    return robot


_SPLIT = re.compile(r"[,\s]+")


def parse_vector(tokens, n, name):
    """Numbers from ``tokens`` (a list of strings, each comma- and/or space-separated).

    A single number is repeated for all ``n`` joints; otherwise exactly ``n`` are needed.
    """
    if tokens is None:
        return None
    if isinstance(tokens, str):
        tokens = [tokens]
    parts = [p for tok in tokens for p in _SPLIT.split(tok.strip()) if p]
    try:
        values = np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise UsageError(f"{name}: expected numbers, got {' '.join(tokens)!r}") from None
    if values.shape[0] == 1 and n > 1:
        values = np.full(n, values[0])
    if values.shape[0] != n:
        raise UsageError(f"{name}: expected {n} values (one per joint), got {values.shape[0]}")
    if not np.all(np.isfinite(values)):
        raise UsageError(f"{name}: values must be finite")
    return values


def _fmt(x, width=10):
    if isinstance(x, float) and math.isinf(x):
        return f"{'inf' if x > 0 else '-inf':>{width}}"
    return f"{x:>{width}.4g}"


def _clean_zeros(values, rel=1e-12):
    """``values`` with entries below ``rel`` times the largest magnitude (rounding residue of
    an exact zero, e.g. 4.4e-16 from g(q) of a joint gravity cannot turn) set to 0."""
    v = np.array(values, dtype=np.float64)
    scale = float(np.max(np.abs(v))) if v.size else 0.0
    v[np.abs(v) <= rel * max(scale, 1e-300)] = 0.0
    return v + 0.0  # no -0


# units of a joint's position, velocity, acceleration, effort and rotor inertia
UNITS = {
    "revolute": ("rad", "rad/s", "rad/s^2", "N m", "kg m^2"),
    "prismatic": ("m", "m/s", "m/s^2", "N", "kg"),
}


def joint_units(robot):
    """Per joint, the unit tuple of :data:`UNITS` (position, velocity, acceleration, effort,
    rotor inertia)."""
    return [UNITS.get(b.joint_type, UNITS["revolute"]) for b in robot.spec.bodies]


# ---------------------------------------------------------------------------------------------
# robodyn info ROBOT


def _info_arguments(p):
    p.add_argument("robot", metavar="ROBOT", help="bundled robot name or URDF file path")
    add_robot_options(p)
    add_floating_option(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _info_run(args):
    """joints, links, masses and limits of a robot"""
    robot = load_robot(args.robot, **robot_options(args),
                       floating_base=bool(getattr(args, "floating_base", False)))
    spec = robot.spec
    bodies = spec.bodies
    names = [b.name for b in bodies]
    rows = []
    for i, b in enumerate(bodies):
        rows.append({
            "index": i, "joint": b.joint_name, "type": b.joint_type, "link": b.name,
            "parent": spec.base_name if b.parent < 0 else names[b.parent],
            "mass": float(b.mass), "lower": float(b.lower), "upper": float(b.upper),
            "velocity": float(b.velocity), "effort": float(b.effort),
            "armature": float(b.armature), "damping": float(b.damping),
            "friction": float(b.friction),
            "mimic": None if getattr(b, "mimic", None) is None else {
                "joint": b.mimic[0], "multiplier": b.mimic[1], "offset": b.mimic[2]},
        })
    total = float(sum(b.mass for b in bodies))
    if args.json:
        print(json.dumps({"name": spec.name, "n": int(robot.n), "nq": int(robot.nq),
                          "nv": int(robot.nv), "floating_base": bool(robot.nq != robot.nv),
                          "gravity": [float(g) for g in robot.gravity], "total_mass": total,
                          "joints": rows, "frames": [f.name for f in spec.frames]},
                         indent=2))
        return 0
    g = ", ".join(f"{x:g}" for x in robot.gravity)
    free = (f" (a free-floating base: nq = {robot.nq}, q = [base position, quaternion x y z w, "
            f"joints]; v = [base angular, base linear, joints])" if robot.nq != robot.nv else "")
    print(f"robot {spec.name}: {robot.n} degrees of freedom{free}, total moving mass "
          f"{total:.4g} kg, gravity ({g}) m/s^2, base {spec.base_name}")
    wj = max(5, max(len(r["joint"]) for r in rows))
    wl = max(4, max(len(r["link"]) for r in rows))
    print(f"  {'#':>2}  {'joint':<{wj}}  {'type':<9}  {'link':<{wl}}  {'mass kg':>10}  "
          f"{'lower':>10}  {'upper':>10}  {'velocity':>10}  {'effort':>10}  {'armature':>10}  "
          f"units (position, velocity, effort, armature)")
    for r, u in zip(rows, joint_units(robot)):
        print(f"  {r['index']:>2}  {r['joint']:<{wj}}  {r['type']:<9}  {r['link']:<{wl}}  "
              f"{_fmt(r['mass'])}  {_fmt(r['lower'])}  {_fmt(r['upper'])}  "
              f"{_fmt(r['velocity'])}  {_fmt(r['effort'])}  {_fmt(r['armature'])}  "
              f"{u[0]}, {u[1]}, {u[3]}, {u[4]}")
    extra = [r for r in rows if r["damping"] or r["friction"]]
    for r in extra:
        print(f"  joint {r['joint']}: viscous friction {r['damping']:g}, "
              f"Coulomb friction {r['friction']:g}")
    for r in rows:
        if r["mimic"]:
            m = r["mimic"]
            print(f"  joint {r['joint']} is coupled: q = {m['multiplier']:g} q({m['joint']}) "
                  f"+ {m['offset']:g} (not a coordinate)")
    if spec.frames:
        print(f"  extra frames: {', '.join(f.name for f in spec.frames)}")
    return 0


# ---------------------------------------------------------------------------------------------
# robodyn id ROBOT --q .. --qd .. --qdd ..


def _vector_option(p, flag, what):
    p.add_argument(flag, nargs="+", metavar="X",
                   help=f"{what}: n numbers, comma- or space-separated, or one number for all "
                        f"joints (default 0)")


def _id_arguments(p):
    p.add_argument("robot", metavar="ROBOT", help="bundled robot name or URDF file path")
    add_robot_options(p)
    add_floating_option(p)
    _vector_option(p, "--q", "joint positions (rad or m)")
    _vector_option(p, "--qd", "joint velocities")
    _vector_option(p, "--qdd", "joint accelerations")
    p.add_argument("--method", choices=("rnea", "kane"), default="rnea",
                   help="algorithm (default rnea)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _id_run(args):
    """inverse dynamics: joint torques for given q, qd, qdd"""
    robot = load_robot(args.robot, **robot_options(args),
                       floating_base=bool(getattr(args, "floating_base", False)))
    n, nq = robot.n, robot.nq
    q0 = np.zeros(nq)
    if nq != n:
        q0[6] = 1.0  # a free base at the origin, the identity quaternion
    q = parse_vector(args.q, nq, "--q") if args.q is not None else q0
    qd, qdd = (parse_vector(v, n, f"--{k}") if v is not None else np.zeros(n)
               for k, v in (("qd", args.qd), ("qdd", args.qdd)))
    try:
        tau = np.asarray(robot.inverse_dynamics(q, qd, qdd, method=args.method))
    except (ValueError, NotImplementedError) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps({"joint_names": list(robot.joint_names), "q": q.tolist(),
                          "qd": qd.tolist(), "qdd": qdd.tolist(), "tau": tau.tolist()}))
        return 0
    # one row per coordinate: a free base's seven (q) and six (v, tau) first; every value with
    # its unit, and rounding residue of an exact zero printed as 0
    names = list(robot.joint_names)
    units = joint_units(robot)
    if nq != n:
        base = names[0]
        print(f"inverse dynamics ({args.method}) of {robot.name}: free base {base} at "
              f"position ({', '.join(f'{x:.4g}' for x in q[:3])}), quaternion "
              f"({', '.join(f'{x:.4g}' for x in q[3:7])}); its rows: angular (base frame) "
              "then linear velocity, tau = [moment; force] on the base")
        rows = [(f"{base}.{'wx wy wz vx vy vz'.split()[k]}", float("nan"), k,
                 UNITS["revolute" if k < 3 else "prismatic"]) for k in range(6)]
        rows += [(name, q[6 + i], 5 + i, units[i]) for i, name in enumerate(names[1:], start=1)]
    else:
        print(f"inverse dynamics ({args.method}) of {robot.name}:")
        rows = [(name, q[i], i, units[i]) for i, name in enumerate(names)]
    shown = _clean_zeros(tau)
    w = max(5, max(len(r[0]) for r in rows))
    print(f"  {'joint':<{w}}  {'q':>16}  {'qd':>16}  {'qdd':>18}  {'tau':>20}")
    for name, qi, k, u in rows:
        qtext = "" if math.isnan(qi) else f"{qi:.4g} {u[0]:<3}"
        print(f"  {name:<{w}}  {qtext:>16}  {qd[k]:>10.4g} {u[1]:<5}  "
              f"{qdd[k]:>10.4g} {u[2]:<7}  {shown[k]:>16.9g} {u[3]:<3}")
    return 0


# ---------------------------------------------------------------------------------------------
# robodyn simulate ROBOT [options]

_CONTROLLERS = ("computed-torque", "pd-gravity", "feedforward", "none")


def _finite_float(text, *, positive):
    """A finite number, > 0 (positive) or >= 0, for argparse."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(v) and (v > 0 if positive else v >= 0)):
        kind = "positive" if positive else "non-negative"
        raise argparse.ArgumentTypeError(f"expected a {kind} number, got {text!r}")
    return v


def _positive_float(text):
    return _finite_float(text, positive=True)


def _nonneg_float(text):
    return _finite_float(text, positive=False)


def _rate(text):
    """A control rate in Hz, or 'continuous' (None)."""
    if text.strip().lower() in ("continuous", "none", "inf"):
        return None
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive rate in Hz or 'continuous', got {text!r}") from None


def _simulate_arguments(p):
    p.add_argument("robot", metavar="ROBOT", help="bundled robot name or URDF file path")
    add_robot_options(p)
    add_floating_option(p)
    p.add_argument("--controller", choices=_CONTROLLERS, default="computed-torque",
                   help="control law (default computed-torque)")
    p.add_argument("--kp", nargs="+", metavar="K",
                   help="proportional gain(s): one or n numbers (default: computed-torque "
                        "400 1/s^2; pd-gravity M_ii (2 pi 5 Hz)^2; feedforward 0)")
    p.add_argument("--kd", nargs="+", metavar="K",
                   help="derivative gain(s) (default: computed-torque 40 1/s, critically "
                        "damped; pd-gravity critically damped; feedforward 0)")
    p.add_argument("--duration", type=_positive_float, default=None,
                   help="simulated time in s (default: the reference's move time)")
    p.add_argument("--move-time", type=_positive_float, default=None,
                   help="duration T of the default reference motion (intelledex_605: 2 s, "
                        "the thesis; stanford_arm: --duration or 10 s; others: 2 s)")
    p.add_argument("--dt", type=_positive_float, default=1e-3,
                   help="integrator step in s (rk45: output interval; default 1e-3)")
    p.add_argument("--control-rate", type=_rate, default=1000.0,
                   help="controller rate in Hz with zero-order hold, or 'continuous' "
                        "(default 1000)")
    p.add_argument("--integrator", choices=("rk4", "euler", "rk45"), default="rk4",
                   help="rk4 (default), euler (semi-implicit) or rk45 (adaptive)")
    p.add_argument("--rtol", type=_positive_float, default=1e-8, help="rk45 relative tolerance")
    p.add_argument("--atol", type=_positive_float, default=1e-10, help="rk45 absolute tolerance")
    p.add_argument("--reference", metavar="CSV",
                   help="sampled reference from a CSV file (time column first) instead of the "
                        "default motion")
    p.add_argument("--q0", nargs="+", metavar="X",
                   help="initial joint positions (default: the reference's start)")
    p.add_argument("--model-error", type=float, default=0.0, metavar="FRACTION",
                   help="scale the controller's masses and inertias by 1 + FRACTION "
                        "(e.g. 0.1 for a 10%% model error)")
    p.add_argument("--noise-std", type=_nonneg_float, default=0.0,
                   help="std of the position measurement noise (rad or m)")
    p.add_argument("--delay", type=int, default=0, help="measurement delay in control periods")
    p.add_argument("--seed", type=int, default=0, help="noise seed (default 0)")
    p.add_argument("--no-saturate", action="store_true",
                   help="do not clip torques to the effort limits")
    p.add_argument("--joint-limits", choices=("stop", "report", "ignore"), default="stop",
                   help="position limits: hard stops (default), only report violations, or "
                        "ignore them")
    p.add_argument("--restitution", type=_nonneg_float, default=0.0,
                   help="hard stops: fraction of the velocity kept (reversed) at a stop, "
                        "0..1 (default 0: stopped dead)")
    p.add_argument("--plot", metavar="PNG", help="write a figure (needs matplotlib)")
    p.add_argument("--animate", metavar="GIF",
                   help="write an animation of the robot (stick figure; needs matplotlib and "
                        "pillow)")
    p.add_argument("--fps", type=_positive_float, default=25.0,
                   help="frames per second of --animate (default 25)")
    p.add_argument("--csv", metavar="CSV", help="write the time series as CSV")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


# the reference of `robodyn simulate` without --reference (kept here under its old name)
from ..control.trajectories import default_reference  # noqa: E402


def _perturbed(robot, fraction):
    """A copy of ``robot`` with every mass and inertia scaled by ``1 + fraction``."""
    from ..model.build import robot as build_robot

    spec = robot.spec
    for b in spec.bodies:
        b.mass = b.mass * (1.0 + fraction)
        b.inertia = np.asarray(b.inertia, dtype=np.float64) * (1.0 + fraction)
    return build_robot(spec)


def _check_delay(delay, duration, control_rate, dt):
    """--delay: a whole number of control periods, at most the run's length in them (the
    controller keeps a history of that many measurements)."""
    calls = duration * control_rate if control_rate else 4.0 * duration / dt  # rk4: 4 per step
    if delay < 0 or delay > math.ceil(calls):
        raise UsageError(f"--delay: expected 0 to {math.ceil(calls)} control periods (the "
                         f"length of the run), got {delay}")


def _make_controller(args, robot, reference):
    from .. import control as ct

    if args.controller == "none":
        return None
    if not (args.model_error > -1.0 and math.isfinite(args.model_error)):
        raise UsageError(f"--model-error: expected a fraction > -1, got {args.model_error}")
    model = _perturbed(robot, args.model_error) if args.model_error else robot
    n = robot.n
    kp = parse_vector(args.kp, n, "--kp")
    kd = parse_vector(args.kd, n, "--kd")
    if args.controller == "computed-torque":
        kp = ct.COMPUTED_TORQUE_KP if kp is None else kp
        kd = ct.COMPUTED_TORQUE_KD if kd is None else kd
        cls = ct.ComputedTorque
    elif args.controller == "pd-gravity":
        kp0, kd0 = ct.pd_gains(model, reference(reference.duration)[0], bandwidth_hz=5.0)
        kp = kp0 if kp is None else kp
        kd = kd0 if kd is None else kd
        cls = ct.PDGravity
    else:
        kp = 0.0 if kp is None else kp
        kd = 0.0 if kd is None else kd
        cls = ct.Feedforward
    if args.delay < 0:
        raise UsageError(f"--delay: expected a non-negative number of periods, got {args.delay}")
    return cls(model, kp, kd, saturate=not args.no_saturate, noise_std=args.noise_std,
               delay=args.delay, seed=args.seed)


class _Progress:
    """The simulation's progress as a tqdm bar on stderr, in simulated seconds: drawn at once on
    a terminal, and elsewhere (a log) once the run has taken a second (``delay``)."""

    def __init__(self, stream=None, delay=None, mininterval=0.1):
        from tqdm import tqdm

        stream = stream or sys.stderr
        if delay is None:
            isatty = getattr(stream, "isatty", None)
            delay = 0.0 if isatty and isatty() else 1.0
        self.bar = tqdm(total=1.0, unit="s", delay=delay, mininterval=mininterval, leave=False,
                        dynamic_ncols=True, file=stream, disable=False, desc="simulating",
                        bar_format="{percentage:3.0f}%|{bar}| {desc} [{elapsed}<{remaining}]")
        self.total_set = False

    def __call__(self, t, duration):
        if not self.total_set:
            self.bar.total = duration
            self.total_set = True
        self.bar.set_description_str(f"t = {t:.3f} / {duration:g} s", refresh=False)
        self.bar.update(t - self.bar.n)

    def close(self):
        self.bar.close()


def _simulate_run(args):
    """controlled simulation with a summary, CSV and plots"""
    from ..control import trajectories as tr
    from ..sim import simulate

    robot = load_robot(args.robot, **robot_options(args),
                       floating_base=bool(getattr(args, "floating_base", False)))
    n = robot.n
    if args.plot or args.animate:
        from ..sim.plotting import require_matplotlib
        require_matplotlib(animation=bool(args.animate))  # fail before a long run, not after
    if robot.nq != n:
        return _simulate_floating(args, robot, simulate)
    if args.reference:
        try:
            reference = tr.from_csv(args.reference, robot=robot)
        except OSError as exc:
            raise UsageError(f"--reference: cannot read {args.reference}: {exc}") from None
        if reference.n != n:
            raise UsageError(f"--reference: {reference.n} position columns, robot has {n}")
    else:
        reference = default_reference(robot, args.duration, args.move_time)
    duration = args.duration or max(reference.duration, args.dt)
    q0 = parse_vector(args.q0, n, "--q0")
    _check_delay(args.delay, duration, args.control_rate, args.dt)
    controller = _make_controller(args, robot, reference)
    if not args.restitution <= 1.0:
        raise UsageError(f"--restitution: expected a number in [0, 1], got {args.restitution}")
    bar = None if args.quiet else _Progress()
    started = []

    def progress(t, total):
        started[:] = [t]  # the last time reached
        if bar is not None:
            bar(t, total)

    try:
        res = simulate(robot, controller, reference, duration=duration, dt=args.dt,
                       control_rate=args.control_rate, integrator=args.integrator, q0=q0,
                       rtol=args.rtol, atol=args.atol, progress=progress,
                       joint_limits=args.joint_limits, restitution=args.restitution)
    except ValueError as exc:
        if not started:  # rejected before the loop ran: a usage error (exit 2)
            raise
        # the run itself failed (exit 1)
        raise RuntimeError(f"simulation failed after t = {started[-1]:g} s: {exc}") from None
    finally:
        if bar is not None:
            bar.close()
    return _write_results(args, res)


def _write_results(args, res):
    """write the files --csv / --plot / --animate ask for, print the summary; exit status 0"""
    written = []
    if args.csv:
        written.append(res.to_csv(args.csv))
    if args.plot:
        res.plot(args.plot)
        written.append(args.plot)
    if args.animate:
        res.animate(args.animate, fps=args.fps, progress=not args.quiet)
        written.append(args.animate)
    if not args.quiet:
        print(res.summary())
        for path in written:
            print(f"wrote {path}")
    return 0


def _simulate_floating(args, robot, simulate):
    """a free-floating robot from the command line: a passive run (zero joint torques) from
    --q0 (nq numbers), or the bundled system's initial state, or the base at rest at the
    origin"""
    if args.controller not in ("none", "computed-torque") or args.reference:
        raise UsageError("a free-floating robot simulates passively from the command line "
                         "(--controller none, no --reference); control it from Python with "
                         "robodyn.simulate")
    nq = robot.nq
    qd0 = None
    if args.q0 is not None:
        q0 = parse_vector(args.q0, nq, "--q0")
    else:
        from ..io import robots

        try:
            q0, qd0 = robots.initial_state(robot.name, robot)
        except (ValueError, KeyError, AttributeError):
            q0 = np.zeros(nq)
            q0[6] = 1.0
    duration = args.duration or 2.0
    if not args.quiet:
        print(f"robodyn: {robot.name} has a free-floating base: a passive run (zero joint "
              "torques)", file=sys.stderr)
    progress = None if args.quiet else _Progress()
    try:
        res = simulate(robot, None, None, duration=duration, dt=args.dt,
                       integrator=args.integrator, q0=q0, qd0=qd0, rtol=args.rtol,
                       atol=args.atol, progress=progress)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if progress is not None:
            progress.close()
    return _write_results(args, res)


# ---------------------------------------------------------------------------------------------
# dispatch

# ---------------------------------------------------------------------------------------------
# robodyn show ROBOT [--q ..] [-o PNG]


def _show_arguments(p):
    p.add_argument("robot", metavar="ROBOT", help="robot name or URDF file path")
    p.add_argument("--q", nargs="+", metavar="X",
                   help="the configuration: n joint positions (rad or m), comma- or "
                        "space-separated, or one number for all joints (default: zeros, "
                        "clipped into the limits); a free-floating robot's nq numbers are "
                        "the base position (3), its quaternion x y z w (4), then the joints "
                        "(default: a bundled system's initial state, else the base at the "
                        "origin)")
    p.add_argument("-o", "--output", metavar="PNG",
                   help="image file to write (default: ROBOT.png in the current directory)")
    p.add_argument("--view", nargs=2, type=float, metavar=("ELEV", "AZIM"),
                   default=(25.0, -60.0), help="camera elevation and azimuth in degrees")
    p.add_argument("--quiet", action="store_true", help="do not say which file was written")
    add_robot_options(p)
    add_floating_option(p)


def _show_run(args):
    """draw the robot at a configuration (3-D stick figure with joint frames)"""
    from ..sim.plotting import default_configuration, draw_robot, require_matplotlib

    if not all(math.isfinite(a) for a in args.view):
        raise UsageError(f"--view: expected finite angles in degrees, got "
                         f"{args.view[0]:g} {args.view[1]:g}")
    require_matplotlib()
    robot = load_robot(args.robot, **robot_options(args),
                       floating_base=bool(getattr(args, "floating_base", False)))
    if args.q is not None and robot.nq != robot.nv:
        count = len([x for tok in args.q for x in _SPLIT.split(tok.strip()) if x])
        if count != robot.nq:
            raise UsageError(f"--q: {robot.name} has a free-floating base: expected "
                             f"{robot.nq} numbers (base position 3, quaternion x y z w 4, "
                             f"joints {robot.nq - 7}), got {count}")
    q = (default_configuration(robot) if args.q is None
         else parse_vector(args.q, robot.nq, "--q"))
    path = args.output or f"{robot.name or 'robot'}.png"
    draw_robot(robot, q, path=path, elev=args.view[0], azim=args.view[1])
    if not args.quiet:
        print(f"wrote {path}")
    return 0


def _bench_arguments(p):
    # declared here so that the benchmark module (and its peers) loads only when it runs
    p.add_argument("robots", metavar="ROBOT", nargs="*",
                   help="robot name or URDF path (default: the bundled robots)")
    p.add_argument("--quantities", default="id,M,fd,g",
                   help="comma-separated subset of id, M, fd, g (default all)")
    p.add_argument("--peers", default="pinocchio,mujoco,rtb",
                   help="comma-separated peers to include if importable: pinocchio, mujoco, "
                        "rtb (default all; 'none' for robodyn only)")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    p.add_argument("--pool", type=int, default=128,
                   help="distinct states per timing loop (default 128)")
    p.add_argument("--batch", type=int, default=10_000, help="states per batch call (default "
                                                             "10000; 0 to skip)")
    p.add_argument("--no-specialized", action="store_true",
                   help="do not build robot.specialized()")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="cpu: this thread's CPU time (default; robust on a shared machine), "
                        "wall: wall-clock time")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.add_argument("--seed", type=int, default=0)
    add_robot_options(p)


def peers_benchmark():
    """The benchmark of robodyn against its peers (Pinocchio, MuJoCo, the Robotics Toolbox):
    bench/peers.py of the source tree, which is not part of the installed package; loaded
    when ``robodyn bench`` runs. UsageError outside a source checkout."""
    import importlib.util
    from pathlib import Path

    name = "robodyn_bench_peers"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[3] / "bench" / "peers.py"
    if not path.is_file():
        raise UsageError("bench: the benchmark of peers runs from a source checkout "
                         f"(bench/peers.py; not found at {path})")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _bench_run(args):
    """timing table: robodyn against Pinocchio, MuJoCo and the Robotics Toolbox"""
    return peers_benchmark().run(args, robot_options(args))


def _opcount_arguments(p):
    from ..codegen.opcount import add_arguments

    add_arguments(p)
    add_robot_options(p)


def _opcount_run(args):
    """operation counts against the published formulations"""
    from ..codegen.opcount import run

    options = robot_options(args)
    return run(args, lambda name: load_robot(name, **options))


def _codegen_arguments(p):
    from ..codegen.command import add_arguments

    add_arguments(p)
    add_robot_options(p)
    add_floating_option(p)


def _codegen_run(args):
    """write the robot's generated C++ kernels (.cpp and .h)"""
    from ..codegen.command import run

    return run(args, load_robot(args.robot, floating_base=args.floating_base,
                                **robot_options(args)))


COMMANDS = {
    "info": (_info_arguments, _info_run),
    "id": (_id_arguments, _id_run),
    "simulate": (_simulate_arguments, _simulate_run),
    "show": (_show_arguments, _show_run),
    "opcount": (_opcount_arguments, _opcount_run),
    "codegen": (_codegen_arguments, _codegen_run),
    "bench": (_bench_arguments, _bench_run),
}


# robodyn campaign CONFIG [--scheduler ADDRESS]: python/robodyn/campaign/ (imported when run:
# it needs the `campaign` extra, Dask and pyarrow)
def _campaign_arguments(p):
    p.add_argument("config", metavar="CONFIG", help="campaign description (TOML file, see "
                                                    "docs/campaign.md)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address (tcp://host:8786); default: a local cluster on "
                        "127.0.0.1, one worker process per core")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default: one per core)")
    p.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="result directory (default: the file's 'output', else CONFIG's name "
                        "with .campaign); an interrupted campaign resumes there")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results of a different campaign in the output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument("--xacro-allow-env", action="store_true", dest="xacro_env",
                   help="let a .xacro robot file read environment variables and ROS package "
                        "paths")


def _campaign_run(args):
    """Run a simulation campaign (a TOML sweep) on Dask; one Parquet row per run."""
    from ..campaign.campaigns import run_command

    return run_command(args)


COMMANDS["campaign"] = (_campaign_arguments, _campaign_run)

def register(name, add_arguments, run):
    """Add (or replace) subcommand ``name``; see the module docstring."""
    COMMANDS[name] = (add_arguments, run)


def _version():
    from ..util.version import __version__

    return __version__


def _description():
    from ..io import robots

    fixed = robots.available()
    floating = [n for n in robots.available(floating=True) if n not in fixed]
    return ("robodyn: dynamics of robot manipulators and free-floating systems. ROBOT is a "
            f"bundled robot ({', '.join(fixed)}; free-floating: {', '.join(floating)}), an "
            f"example-robot-data robot ({', '.join(robots.EXAMPLE_ROBOTS)}: when that package "
            "is installed) or a URDF file path.")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="robodyn",
        description=_description())
    parser.add_argument("--version", action="version", version=f"robodyn {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (add_arguments, run) in COMMANDS.items():
        doc = (run.__doc__ or "").strip().splitlines()
        summary = doc[0] if doc else None
        sp = sub.add_parser(name, help=summary, description=summary)
        add_arguments(sp)
        sp.set_defaults(_run=run)
    return parser


def _quiet_broken_pipe():
    """The reader of our output went away (``robodyn info ... | head -1``): stop quietly.

    Python would report the failed flush of stdout at exit; point stdout at /dev/null so that
    final flush succeeds, as a Unix filter exits when its reader closes the pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout not a real file (captured)
        pass


def main(argv=None):
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Exit status: 0 success (also when the reader of the output closes the pipe early); 1 the
    work failed (a simulation diverged, a file could not be written, a missing extra); 2 a
    usage error (bad option or value, unknown robot, unreadable input file); 130 interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage and the message (or --help)
        return exc.code if isinstance(exc.code, int) else 2
    prefix = f"robodyn {args.command}: error:"
    try:
        with warnings.catch_warnings():
            warnings.showwarning = say_warning  # one line each, no Python file paths
            status = int(args._run(args) or 0)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 0
    except UsageError as exc:
        print(f"{prefix} {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"{prefix} {exc}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as exc:
        print(f"{prefix} {exc}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as exc:
        print(f"{prefix} {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prefix} interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
