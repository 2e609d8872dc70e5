"""What a campaign file may say: the names of its keys (declared with their types in
:mod:`robodyn.campaign.schema`), the metric columns, the limits; :func:`read_toml` reads
the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..util import safe_io
# the names of the file's keys (their types are declared in schema.py): the controller
# types, the keys of the [campaign] table (or the file's top level: Campaign's keyword
# arguments, the robot and the output directory), the keys of each section, and the
# parameters that are per joint (or per link) vectors when given as lists
from .schema import CONTROLLERS, KEYS, TOP_KEYS, VECTOR_KEYS  # noqa: F401

# metric columns (float64 unless listed in INT_METRICS); per-joint "tau_peak_<j>" follow
METRICS = ("max_tracking_error", "rms_tracking_error", "final_tracking_error", "tau_peak",
           "energy", "position_limit_violations", "velocity_limit_violations",
           "max_position_excess", "saturated_calls", "steps")
INT_METRICS = {"position_limit_violations", "velocity_limit_violations", "saturated_calls",
                "steps"}

FORMAT_VERSION = 1  # part of the fingerprint
MAX_RUNS = 10**9  # runs of one campaign
MAX_BATCHES = 100_000  # batches of one campaign: a Dask task and a Parquet file each
TOML_MAX_BYTES = 4 << 20  # the largest campaign file read


def plain(x):
    """JSON-able form of a configuration value."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    return x


def read_toml(path):
    """Parse a TOML file (tomllib, or tomli before Python 3.11); ValueError naming the file."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    path = Path(path)
    text = safe_io.read_text(path, TOML_MAX_BYTES)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not valid TOML: {e}") from None
