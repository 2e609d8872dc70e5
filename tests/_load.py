"""Load robodyn.urdf for the tests: the installed package if `import robodyn` works, else the
source file by path (the C++ core may not be built yet), plus where example-robot-data lives."""

import importlib.util
import pathlib
import sys

_ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = _ROOT / "tests" / "data"


def urdf_module():
    """robodyn.urdf, imported normally or loaded from python/robodyn/urdf.py."""
    try:
        import robodyn.urdf as mod
        return mod
    except ImportError:
        pass
    mod = sys.modules.get("robodyn.urdf")
    if mod is not None:
        return mod
    from reference import spec_module
    spec_module()  # registers robodyn._spec, which urdf.py imports
    path = _ROOT / "python" / "robodyn" / "urdf.py"
    loader_spec = importlib.util.spec_from_file_location("robodyn.urdf", path)
    mod = importlib.util.module_from_spec(loader_spec)
    sys.modules["robodyn.urdf"] = mod
    loader_spec.loader.exec_module(mod)
    return mod


def example_robot_data_dir():
    """The `robots` directory of example-robot-data, or None if it is not installed.

    The pip wheel ships the robots under its cmeel prefix without a Python module, so the
    distribution's files are tried after `import example_robot_data`.
    """
    try:
        import example_robot_data.robots_loader as loader
        path = pathlib.Path(loader.EXAMPLE_ROBOT_DATA_MODEL_DIR)
        if path.is_dir():
            return path
    except (ImportError, AttributeError):
        pass
    try:
        from importlib.metadata import PackageNotFoundError, distribution
        dist = distribution("example-robot-data")
    except (ImportError, PackageNotFoundError):
        return None
    path = pathlib.Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None
