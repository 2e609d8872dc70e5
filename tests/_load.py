"""Where the tests' data and example-robot-data live."""

import pathlib

_ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = _ROOT / "tests" / "data"


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


def urdf_module():
    """robodyn.io.urdf (the URDF reader)."""
    import robodyn.io.urdf as mod

    return mod
