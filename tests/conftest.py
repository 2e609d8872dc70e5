"""Shared test setup: tests/ on sys.path so `from reference import ...` works."""

import pathlib
import sys

import numpy as np
import pytest

_TESTS = str(pathlib.Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


@pytest.fixture
def rng():
    """A fresh seeded generator per test."""
    return np.random.default_rng(20080101)
