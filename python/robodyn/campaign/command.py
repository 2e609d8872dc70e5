"""``robodyn campaign CONFIG [--scheduler ADDRESS]``: a campaign file run (the options are
declared by robodyn.cli)."""

from __future__ import annotations

import os
from pathlib import Path

from .campaigns import Campaign
from .config import read_toml

__all__ = ["run_command"]


def run_command(args):
    """``robodyn campaign``: run the TOML campaign ``args.config``; exit status 0, or 1 when
    batches could not be computed (run again to resume)."""
    path = Path(args.config)
    if not path.exists():
        raise ValueError(f"no such campaign file: {path}")
    config = read_toml(path)
    output = args.output or config.get("campaign", {}).get("output") or config.get("output")
    if output is None:
        output = path.with_suffix(".campaign")
    elif not os.path.isabs(output) and not args.output:
        output = path.parent / output  # relative to the file
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers: expected a positive number, got {args.workers}")
    if args.serial and args.scheduler:
        raise ValueError("--serial and --scheduler exclude each other")
    campaign = Campaign.from_dict(config, base_dir=path.parent,
                                  xacro_env=bool(getattr(args, "xacro_env", False)))
    scheduler = "serial" if args.serial else args.scheduler
    if not args.quiet:
        where = ("this process" if args.serial else args.scheduler
                 or f"a local cluster ({args.workers or os.cpu_count()} workers)")
        print(f"campaign '{campaign.name}': {campaign.runs} runs of {campaign.robot.name} in "
              f"{campaign.batches} batches on {where} -> {output}", flush=True)
    result = campaign.run(output, scheduler, workers=args.workers, progress=not args.quiet,
                          overwrite=args.overwrite)
    if not args.quiet:
        print(f"\n{result.table.num_rows} runs ({result.failed} failed), {result.computed} "
              f"batches computed, {result.skipped} already there, {result.wall_time:.1f} s; "
              f"results: {Path(output) / 'runs'}")
    return 0
