"""``robodyn view``: a robot, or a campaign's run, in the browser (docs/view.md)."""

from __future__ import annotations

import json
import os

import numpy as np

__all__ = ["add_arguments", "run", "add_simulate_arguments", "write_html", "view_result",
           "campaign_result"]


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0.0 or value == float("inf"):
        import argparse

        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got "
                                         f"{text!r}")
    return value


def _port(text):
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"expected a port number in 1..65535, got {text!r}")
    return value


def _server_options(p):
    p.add_argument("--port", type=_port, default=None,
                   help="the server's port on 127.0.0.1 (default: a free one)")
    p.add_argument("--seconds", type=_seconds, default=None, metavar="N",
                   help="stop the server after N seconds (default: at Ctrl-C)")
    p.add_argument("--package-path", action="append", default=[], metavar="DIR",
                   dest="package_path",
                   help="a folder holding ROS packages for package:// meshes (repeatable; "
                        "searched before ROS_PACKAGE_PATH, AMENT_PREFIX_PATH and "
                        "example-robot-data)")


def add_arguments(p):
    """The options of ``robodyn view`` (the command line adds its robot options)."""
    p.add_argument("robot", metavar="ROBOT", nargs="?",
                   help="robot name or URDF/xacro file path (with --campaign: default the "
                        "campaign's robot)")
    p.add_argument("--q", nargs="+", metavar="X",
                   help="the configuration: nq numbers (default: zeros clipped into the "
                        "limits; a floating base at the origin)")
    p.add_argument("--campaign", metavar="DIR",
                   help="play back a run of this campaign folder (written with trajectories "
                        "= true)")
    p.add_argument("--run", type=int, default=None, metavar="I",
                   help="the run of --campaign to play back")
    _server_options(p)


def _source(args):
    from .model import robot_source

    return robot_source(args.robot)


def run(args, load, parse_q, options):
    """``robodyn view``: ``load(name_or_path, floating_base)`` loads the robot,
    ``parse_q(tokens, n)`` reads ``--q``, ``options`` the robot options (``xacro_args``,
    ``xacro_env``); usage errors are ValueErrors (exit status 2)."""
    if args.campaign is not None:
        return _run_campaign(args, load, options)
    if args.run is not None:
        raise ValueError("--run: needs --campaign DIR")
    if args.robot is None:
        raise ValueError("ROBOT: give a robot name or URDF path (or --campaign DIR --run I)")
    robot = load(args.robot, args.floating_base)
    q = None if args.q is None else parse_q(args.q, getattr(robot, "robot", robot).nq)
    from .live import show

    show(robot, q, urdf=_source(args), package_path=args.package_path, port=args.port,
         seconds=args.seconds, xacro_args=options["xacro_args"],
         xacro_env=options["xacro_env"])
    return 0


def campaign_result(folder, run, robot):
    """A SimulationResult of run ``run`` of the campaign in ``folder`` (its trajectory, written
    with ``trajectories = true``), for ``robot``."""
    from ..campaign.results import read_trajectories
    from ..sim.results import SimulationResult

    if not os.path.isdir(os.path.join(folder, "trajectories")):
        raise FileNotFoundError(f"{folder}: no trajectories/ folder (run the campaign with "
                                "trajectories = true to play its runs back)")
    table = read_trajectories(folder, run=run)
    if table.num_rows == 0:
        raise ValueError(f"--run: campaign {folder} has no trajectory of run {run}")
    data = table.sort_by("t").to_pydict()
    n = robot.nv

    def block(name):
        cols = [f"{name}_{j}" for j in range(n)]
        if not all(c in data for c in cols):
            return None
        return np.column_stack([np.asarray(data[c], dtype=float) for c in cols])

    q = block("q")
    if q is None or robot.nq != n:
        raise ValueError(f"{folder}: its trajectories do not have the {robot.nq} positions of "
                         f"{robot.name}")
    t = np.asarray(data["t"], dtype=float)
    return SimulationResult(t, q, block("qd"), block("tau"), q_ref=block("q_ref"),
                            joint_names=list(robot.joint_names), robot_name=robot.name,
                            robot=robot)


def _run_campaign(args, load, options):
    if args.run is None:
        raise ValueError("--campaign: needs --run I (the run to play back)")
    if args.q is not None:
        raise ValueError("--q: not with --campaign (the run gives the motion)")
    folder = args.campaign
    if not os.path.isdir(folder):
        raise ValueError(f"--campaign: no such folder: {folder}")
    name = args.robot
    if name is None:
        from ..util.safe_io import read_text

        try:
            name = json.loads(read_text(os.path.join(folder, "campaign.json"), 1 << 20))["robot"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"--campaign: cannot read the robot of {folder}/campaign.json "
                             f"({e}); give ROBOT") from None
        args.robot = name
    robot = load(name, args.floating_base)
    result = campaign_result(folder, args.run, getattr(robot, "robot", robot))
    from .playback import show_result

    show_result(result, robot=robot, urdf=_source(args), package_path=args.package_path,
                port=args.port, seconds=args.seconds, xacro_args=options["xacro_args"],
                xacro_env=options["xacro_env"])
    return 0


def add_simulate_arguments(p):
    """``--view`` and ``--html`` of ``robodyn simulate``."""
    p.add_argument("--html", metavar="HTML",
                   help="write the run's 3-D playback as one self-contained HTML file")
    p.add_argument("--view", action="store_true",
                   help="play the run back in the browser (a local server on 127.0.0.1; "
                        "--seconds bounds it)")
    _server_options(p)


def write_html(args, res, opts):
    """``robodyn simulate --html``: write the playback file (``opts``: the robot options,
    ``xacro_args`` and ``xacro_env``); its path."""
    from .model import robot_source
    from .playback import save_html

    return save_html(res, args.html, urdf=robot_source(args.robot),
                     package_path=args.package_path, xacro_args=opts["xacro_args"],
                     xacro_env=opts["xacro_env"])


def view_result(args, res, opts):
    """``robodyn simulate --view``: play the run back on the local server until Ctrl-C or
    ``--seconds`` (``opts`` as in :func:`write_html`)."""
    from .model import robot_source
    from .playback import show_result

    show_result(res, urdf=robot_source(args.robot), package_path=args.package_path,
                port=args.port, seconds=args.seconds, xacro_args=opts["xacro_args"],
                xacro_env=opts["xacro_env"])
