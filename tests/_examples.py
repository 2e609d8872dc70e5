"""The example scripts (examples/*.py) as modules, for the tests that check their figures."""

import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load_example(name):
    """examples/NAME.py imported as a module (skips the test outside a source checkout)."""
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        pytest.skip("examples/ is not next to the tests (installed package)")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
