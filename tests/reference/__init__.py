"""Independent pure-NumPy reference (the test oracle); shares no code with cpp/."""

import importlib.util
import pathlib
import sys


def spec_module():
    """Return robodyn.model.spec: the installed one if robodyn imports, else loaded by file path."""
    try:
        import robodyn.model.spec as mod
        return mod
    except ImportError:
        pass
    mod = sys.modules.get("robodyn.model.spec")
    if mod is not None:
        return mod
    path = pathlib.Path(__file__).resolve().parents[2] / "python" / "robodyn" / "model" / "spec.py"
    loader_spec = importlib.util.spec_from_file_location("robodyn.model.spec", path)
    mod = importlib.util.module_from_spec(loader_spec)
    sys.modules["robodyn.model.spec"] = mod
    loader_spec.loader.exec_module(mod)
    return mod
