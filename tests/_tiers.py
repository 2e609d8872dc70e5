"""The test tiers: which tests need what, and which run by default.

Every test belongs to one tier, a pytest marker. `fast` (the README's `pytest -m fast`): every
module's results against the independent references, with the `test` extra alone, in a few
minutes. The others, which `.ci/run` runs one by one:

- `peers`: compares with Pinocchio, MuJoCo, example-robot-data or rtb-data (the `peers` extra)
- `compile`: runs the C++ compiler (kernels compiled on demand, the C++ allocation test)
- `ros`: ROS 2 nodes (the `ros` extra)
- `campaign`: Dask clusters and datasets in subprocesses
- `slow`: needs no more than `fast`, but takes long (subprocess runs of the examples and the CLI,
  fuzzing, long simulations)
- `timing`: asserts a wall-clock time, so it can fail on a loaded machine; CI runs and reports
  it without failing on it

A test's tier is its own marker if it has one (the doc-block tests mark themselves from the
fence line), else the first entry of TABLE that names it: "file::test[param]", then
"file::test", then "file"; else `fast`.
"""

import pytest

TIERS = ("fast", "peers", "compile", "ros", "campaign", "slow", "timing")

TABLE = {
    # the Pinocchio, MuJoCo and example-robot-data cross-checks
    "test_pinocchio.py": "peers",
    "test_real_robots.py": "peers",
    # ROS 2 nodes
    "test_ros.py": "ros",
    # Dask clusters, datasets, subprocess campaigns
    "test_campaign.py": "campaign",
    # the C++ compiler at test time
    "test_noalloc.py::test_cpp_algorithms_do_not_allocate": "compile",
    "test_noalloc.py::test_cpp_self_check_detects_an_allocation": "compile",
    "test_noalloc.py::test_cpp_rejects_unknown_mode": "compile",
    # wall-clock assertions
    "test_urdf.py::test_entity_expansion_is_refused_fast": "timing",
    "test_urdf.py::test_panda_loads_fast": "timing",
    "test_hardening.py::test_devices_refused": "timing",
    "test_hardening.py::test_ctrl_c_stops_simulate_promptly": "timing",
    "test_hardening.py::test_simulate_raises_keyboard_interrupt_from_cpp_loop": "timing",
}


def tier(item):
    """The tier of a collected test item."""
    for name in TIERS:
        if item.get_closest_marker(name) is not None:
            return name
    file = item.path.name if hasattr(item, "path") else item.fspath.basename
    function = getattr(item, "originalname", None) or item.name
    for key in (f"{file}::{item.name}", f"{file}::{function}", file):
        if key in TABLE:
            return TABLE[key]
    return "fast"


def mark(items):
    """Give every item the marker of its tier."""
    for item in items:
        name = tier(item)
        if item.get_closest_marker(name) is None:
            item.add_marker(getattr(pytest.mark, name))
