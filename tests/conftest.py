"""Shared test setup: tests/ on sys.path so `from reference import ...` works."""

import pathlib
import sys

import numpy as np
import pytest

_TESTS = str(pathlib.Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import _tiers  # noqa: E402  (needs tests/ on sys.path)


@pytest.fixture
def rng():
    """A fresh seeded generator per test."""
    return np.random.default_rng(20080101)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test gets the marker of its tier (tests/_tiers.py) before `-m` selects; then the
    tests marked ``allocations`` run first, in their order. tracemalloc traces the
    allocations of every thread of the process, and other tests leave threads behind that
    wake up and allocate (Dask's event loops and offload thread, zarr's I/O thread, tqdm's
    monitor): in the full suite a window of test_noalloc's traced calls caught one of their
    wake-ups now and then (a 2 kB peak where the calls themselves allocate nothing), the more
    often the longer the window (forward_dynamics_derivatives, on a loaded machine)."""
    _tiers.mark(items)
    items.sort(key=lambda item: item.get_closest_marker("allocations") is None)
