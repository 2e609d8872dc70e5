"""bench/callgrind_guard.py's baseline handling (the measurement itself, under valgrind, is a
benchmark run by hand, not a test): measure() is replaced by fixed counts."""

import importlib.util
import json
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[1] / "bench" / "callgrind_guard.py"


@pytest.fixture()
def guard(monkeypatch):
    spec = importlib.util.spec_from_file_location("callgrind_guard", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    counts = {label: 1000.0 + i for i, label in enumerate(mod.METHODS)}
    monkeypatch.setattr(mod, "measure", lambda labels, reps: {k: counts[k] for k in labels})
    mod.counts = counts
    return mod


def test_update_of_some_methods_keeps_the_others_and_a_regression_fails(guard, tmp_path):
    base = tmp_path / "baseline.json"
    assert guard.main(["--update", "--baseline", str(base)]) == 0
    first = json.loads(base.read_text())["instructions"]
    assert first == guard.counts
    # remeasuring one method leaves the other methods' baselines in place
    guard.counts["mass_matrix"] = 2000.0
    assert guard.main(["--update", "--only", "mass_matrix", "--baseline", str(base)]) == 0
    second = json.loads(base.read_text())["instructions"]
    assert second == {**first, "mass_matrix": 2000.0}
    # so a later regression of another method is still caught
    assert guard.main(["--baseline", str(base)]) == 0
    guard.counts["forward_dynamics"] *= 1.10
    assert guard.main(["--baseline", str(base)]) == 1
