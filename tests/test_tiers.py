"""tests/_tiers.py names tests that exist, and its tiers are the registered markers."""

import pathlib
import re

import _tiers

TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent


def test_every_table_entry_names_an_existing_test():
    for key, tier in _tiers.TABLE.items():
        assert tier in _tiers.TIERS, key
        file, _, name = key.partition("::")
        path = TESTS / file
        assert path.is_file(), key
        function = name.split("[")[0]
        if function:
            assert re.search(rf"^\s*def {function}\(", path.read_text(), re.M), key


def test_tiers_are_registered_markers_and_run_by_ci():
    pyproject = (ROOT / "pyproject.toml").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    for tier in _tiers.TIERS:
        assert f'"{tier}: ' in pyproject, tier
        assert re.search(rf"\b{tier}\b", ci), tier
