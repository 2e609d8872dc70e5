"""Independent pure-NumPy reference (the test oracle); shares no code with cpp/."""

import importlib.util
import pathlib
import sys


def spec_module():
    """Return robodyn._spec: the installed one if robodyn imports, else loaded by file path."""
    try:
        import robodyn._spec as mod
        return mod
    except ImportError:
        pass
    mod = sys.modules.get("robodyn._spec")
    if mod is not None:
        return mod
    path = pathlib.Path(__file__).resolve().parents[2] / "python" / "robodyn" / "_spec.py"
    loader_spec = importlib.util.spec_from_file_location("robodyn._spec", path)
    mod = importlib.util.module_from_spec(loader_spec)
    sys.modules["robodyn._spec"] = mod
    loader_spec.loader.exec_module(mod)
    return mod
