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
import sys
import warnings

import numpy as np

from ..control.trajectories import default_reference
from ..util.messages import say_warning, warning_lines
from .options import (SPLIT, UNITS, UsageError, add_floating_option, add_robot_options,
                      clean_zeros, fmt, joint_units, load_robot, parse_vector, robot_options)
from .simulate import simulate_arguments, simulate_run

__all__ = ["main", "COMMANDS", "register", "load_robot", "add_robot_options", "robot_options",
           "parse_vector", "UsageError", "build_parser", "default_reference", "warning_lines",
           "peers_benchmark"]



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
              f"{fmt(r['mass'])}  {fmt(r['lower'])}  {fmt(r['upper'])}  "
              f"{fmt(r['velocity'])}  {fmt(r['effort'])}  {fmt(r['armature'])}  "
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
    shown = clean_zeros(tau)
    w = max(5, max(len(r[0]) for r in rows))
    print(f"  {'joint':<{w}}  {'q':>16}  {'qd':>16}  {'qdd':>18}  {'tau':>20}")
    for name, qi, k, u in rows:
        qtext = "" if math.isnan(qi) else f"{qi:.4g} {u[0]:<3}"
        print(f"  {name:<{w}}  {qtext:>16}  {qd[k]:>10.4g} {u[1]:<5}  "
              f"{qdd[k]:>10.4g} {u[2]:<7}  {shown[k]:>16.9g} {u[3]:<3}")
    return 0




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
        count = len([x for tok in args.q for x in SPLIT.split(tok.strip()) if x])
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
    bench/peers.py of robodyn's source tree, which is not part of the installed package;
    loaded when ``robodyn bench`` runs. Looked for beside the package's source (a checkout on
    PYTHONPATH or installed editable), then in the current folder if it is a robodyn checkout
    (its pyproject.toml names the project robodyn) whose bench/ folder and files belong to the
    user and are writable by no one else. UsageError otherwise."""
    import importlib
    from pathlib import Path

    tried = []
    for root in (Path(__file__).resolve().parents[3], Path.cwd()):
        bench = root / "bench"
        tried.append(str(bench))
        if (bench / "peers.py").is_file() and (root == Path(__file__).resolve().parents[3]
                                               or _own_checkout(root)):
            break
    else:
        raise UsageError("bench: the benchmark of peers runs from a robodyn source checkout "
                         f"(bench/peers.py; not found in {' or '.join(tried)})")
    if str(bench) not in sys.path:
        sys.path.append(str(bench))  # peers imports its sibling modules
    return importlib.import_module("peers")


def _own_checkout(root):
    """root holds robodyn's pyproject.toml, and root/bench and its .py files are the user's,
    not writable by group or others (code from the current folder runs only if it is so)."""
    import stat

    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8", errors="replace")[:4096]
        paths = [root / "bench", *sorted((root / "bench").glob("*.py"))]
        modes = [p.stat() for p in paths]
    except OSError:
        return False
    return 'name = "robodyn"' in text and all(
        m.st_uid == os.getuid() and not m.st_mode & (stat.S_IWGRP | stat.S_IWOTH) for m in modes)


def _bench_run(args):
    """timing table: robodyn against Pinocchio, MuJoCo and the Robotics Toolbox"""
    return peers_benchmark().run(args, robot_options(args))


def _opcount_arguments(p):
    from ..codegen.opcount import add_arguments

    add_arguments(p)
    add_robot_options(p)
    add_floating_option(p)


def _opcount_run(args):
    """operation counts against the published formulations"""
    from ..codegen.opcount import run

    options = robot_options(args)
    return run(args, lambda name: load_robot(name, floating_base=args.floating_base,
                                             loops=True, **options))


def _codegen_arguments(p):
    from ..codegen.command import add_arguments

    add_arguments(p)
    add_robot_options(p)
    add_floating_option(p)


def _codegen_run(args):
    """write the robot's generated C++ kernels (.cpp and .h)"""
    from ..codegen.command import run

    return run(args, load_robot(args.robot, floating_base=args.floating_base, loops=True,
                                **robot_options(args)))


COMMANDS = {
    "info": (_info_arguments, _info_run),
    "id": (_id_arguments, _id_run),
    "simulate": (simulate_arguments, simulate_run),
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
    from ..campaign.command import run_command

    return run_command(args)


COMMANDS["campaign"] = (_campaign_arguments, _campaign_run)


def _view_arguments(p):
    from ..view.command import add_arguments
    add_arguments(p)
    add_robot_options(p)
    add_floating_option(p)


def _view_run(args):
    """the robot in the browser (a local server on 127.0.0.1): meshes, joint sliders, frames,
    axes, centres of mass, inertia boxes; or a campaign run's playback"""
    from ..view.command import run
    opts = robot_options(args)

    def load(name, floating_base):
        return load_robot(name, **opts, floating_base=floating_base, loops=True)

    return run(args, load, lambda tokens, n: parse_vector(tokens, n, "--q"), opts)


COMMANDS["view"] = (_view_arguments, _view_run)

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

