"""``robodyn simulate``: a controlled simulation with a summary, CSV and plots."""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from ..control.trajectories import default_reference
from .options import (UsageError, add_floating_option, add_robot_options, load_robot,
                      parse_vector, robot_options)

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


def simulate_arguments(p):
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
    from ..view.command import add_simulate_arguments
    add_simulate_arguments(p)  # --html, --view (the 3-D playback)




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


def make_controller(args, robot, reference):
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


class Progress:
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


def simulate_run(args):
    """controlled simulation with a summary, CSV and plots"""
    from ..control import trajectories as tr
    from ..sim import simulate

    robot = load_robot(args.robot, **robot_options(args),
                       floating_base=bool(getattr(args, "floating_base", False)))
    n = robot.n
    if args.plot or args.animate:
        from ..sim.plotting import require_matplotlib
        require_matplotlib(animation=bool(args.animate))  # fail before a long run, not after
    if args.html or args.view:
        from ..view.live import require
        require()
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
    controller = make_controller(args, robot, reference)
    if not args.restitution <= 1.0:
        raise UsageError(f"--restitution: expected a number in [0, 1], got {args.restitution}")
    bar = None if args.quiet else Progress()
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
    if getattr(args, "html", None):
        from ..view.command import write_html
        written.append(write_html(args, res, robot_options(args)))
    if not args.quiet:
        print(res.summary())
        for path in written:
            print(f"wrote {path}")
    if getattr(args, "view", False):
        from ..view.command import view_result
        view_result(args, res, robot_options(args))
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
    progress = None if args.quiet else Progress()
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
