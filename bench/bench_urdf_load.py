"""Time parse_urdf on the Panda URDF (or URDF paths given as arguments): median ms per load,
side by side with Pinocchio's pin.buildModelFromUrdf when it is installed.

    python bench/bench_urdf_load.py [--repeat N] [file.urdf ...]
    python bench/bench_urdf_load.py --chain 10000 [--repeat N]

``--chain N``: robodyn.load_urdf (parsing and building the model) of an N-link chain (the
text of tests/_hardening.py's chain_urdf, 3.5 MB for N = 10,000), as process CPU seconds
per load (median and min over the repeats) with the load average (issue 13's figure: under
1 s for 10,000 links).
"""

import argparse
import pathlib
import statistics
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]


def urdf_module():
    """robodyn.io.urdf, the URDF reader."""
    import robodyn.io.urdf as mod

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


def chain_urdf(n):
    """An n-link chain, as tests/_hardening.py writes it."""
    parts = ['<robot name="chain">', '<link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(
            f'<link name="l{i}"><inertial><origin xyz="0 0 0.05"/>'
            '<mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" '
            'izz="0.005"/></inertial></link>')
        axis = "0 0 1" if i % 2 else "0 1 0"
        parts.append(
            f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
            f'<child link="l{i}"/><origin xyz="0.01 0 0.1" rpy="0 0 0"/>'
            f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="10" velocity="5"/>'
            "</joint>")
    parts.append("</robot>")
    return "\n".join(parts)


def chain_cpu(n, repeat):
    import os

    import robodyn

    text = chain_urdf(n)
    robodyn.load_urdf(text)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.process_time()
        robodyn.load_urdf(text)
        times.append(time.process_time() - start)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load_urdf, {n}-link chain ({len(text) / 1e6:.1f} MB): median "
          f"{statistics.median(times):.3f} s CPU, min {min(times):.3f} s over {repeat} loads "
          f"(load average {load})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--chain", type=int, default=None,
                        help="time load_urdf of an N-link chain (CPU seconds)")
    args = parser.parse_args()
    if args.chain is not None:
        chain_cpu(args.chain, args.repeat or 5)
        return
    args.repeat = args.repeat or 50
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
