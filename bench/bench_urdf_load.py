"""Time parse_urdf on the Panda URDF (or URDF paths given as arguments): median ms per load,
side by side with Pinocchio's pin.buildModelFromUrdf when it is installed.

    python bench/bench_urdf_load.py [--repeat N] [file.urdf ...]
"""

import argparse
import importlib.util
import pathlib
import statistics
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]


def urdf_module():
    """robodyn.urdf, imported normally or (core not built yet) loaded from the source tree."""
    try:
        import robodyn.urdf as mod
        return mod
    except ImportError:
        pass
    for name in ("_spec", "urdf"):
        spec = importlib.util.spec_from_file_location(
            f"robodyn.{name}", ROOT / "python" / "robodyn" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[f"robodyn.{name}"] = mod
        spec.loader.exec_module(mod)
    return mod


def panda_path():
    """panda.urdf from example-robot-data (Python module or the pip wheel's cmeel prefix)."""
    try:
        import example_robot_data.robots_loader as loader
        robots = pathlib.Path(loader.EXAMPLE_ROBOT_DATA_MODEL_DIR)
    except (ImportError, AttributeError):
        from importlib.metadata import PackageNotFoundError, distribution
        try:
            dist = distribution("example-robot-data")
        except PackageNotFoundError:
            sys.exit("example-robot-data is not installed: pass URDF paths as arguments")
        robots = pathlib.Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return robots / "panda_description" / "urdf" / "panda.urdf"


def median_ms(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    urdf = urdf_module()
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    warnings.simplefilter("ignore", UserWarning)  # mimic joints
    print(f"{'file':<28} {'dof':>4} {'robodyn ms':>11} {'pinocchio ms':>13} {'ratio':>6}")
    for path in args.files or [panda_path()]:
        ours = median_ms(lambda: urdf.parse_urdf(path), args.repeat)
        dof = len(urdf.parse_urdf(path).bodies)
        line = f"{path.name:<28} {dof:>4} {ours:>11.3f}"
        if pin is not None:
            theirs = median_ms(lambda: pin.buildModelFromUrdf(str(path)), args.repeat)
            line += f" {theirs:>13.3f} {ours / theirs:>6.2f}"
        print(line)


if __name__ == "__main__":
    main()
