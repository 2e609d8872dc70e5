"""What a campaign file may say: the sections and their keys, the metric columns, the limits,
and the checks of keys and integers; :func:`read_toml` reads the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..util import safe_io


CONTROLLERS = ("computed-torque", "pd-gravity", "feedforward", "none")

# the keys of the [campaign] table (or the file's top level): Campaign's keyword arguments,
# with the robot and the output directory
TOP_KEYS = ("robot", "samples", "seed", "batch", "trajectories", "trajectory_stride",
            "specialized", "name", "output")

# keys a campaign may set or vary, by section
KEYS = {
    "controller": ("type", "kp", "kd", "noise_std", "velocity_noise_std", "delay", "saturate"),
    "simulation": ("duration", "dt", "control_rate", "integrator", "method", "max_steps"),
    "model": ("mass_scale", "inertia_scale"),
    "reference": ("q0", "q1", "T"),
    "initial": ("q_offset", "qd"),
}
# the parameters that are per joint (or per link) vectors when given as lists
VECTOR_KEYS = {"controller.kp", "controller.kd", "controller.noise_std",
                "controller.velocity_noise_std", "model.mass_scale", "model.inertia_scale",
                "reference.q0", "reference.q1", "initial.q_offset", "initial.qd"}

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


def check_key(key, where):
    section, _, name = str(key).partition(".")
    if section not in KEYS or name not in KEYS[section]:
        known = ", ".join(f"{s}.{k}" for s, ks in KEYS.items() for k in ks)
        raise ValueError(f"{where}: unknown parameter {key!r}; known: {known}")
    return section, name


def integer(value, what, least):
    """``value`` as an int >= ``least`` (ValueError naming ``what`` otherwise)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= least:
        return int(value)
    kind = "a positive" if least == 1 else "a non-negative"
    raise ValueError(f"{what}: expected {kind} integer, got {value!r}")


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
