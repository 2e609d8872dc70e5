"""Real-time factor of robodyn.simulate: the C++ loop against the Python loop.

The headline case (issue 9): 10 s of a 6-DOF arm (the Intelledex 605 on Nie's thesis motion,
held at its end after 2 s) under computed-torque control at 1 kHz with a zero-order hold,
integrated by RK4 at 1 ms. Target: at least 100x real time.

Every case runs with ``engine="python"`` (the loop in simulation.py) and ``engine="cpp"`` (the
loop in cpp/include/robodyn/simulation/simulate.hpp, reference sampled once in Python, GIL released),
in the same process, best CPU time of --repeat (the machine is shared: CPU time, not wall
time). Reported: CPU seconds and real-time factor (simulated / CPU time) of each engine, their
ratio, the Python loop's overhead per 1 ms step (its CPU time minus calls x the cost of one
call made the way the loop makes it, with ``out=``), and the factor the dynamics alone would
allow (calls x the per-state cost of batch calls, i.e. the dynamics in C++ without a Python
call), which bounds what the C++ loop can reach. rk45 runs in Python only.

    python bench/bench_simulate.py [--robot intelledex_605] [--duration 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import time
import timeit

import numpy as np

import robodyn
from robodyn import control as ct
from robodyn import simulate


def per_call(fn, number=20000, repeat=5):
    """Best CPU time of one call of ``fn()`` in seconds."""
    timer = timeit.Timer(fn, timer=time.process_time)
    return min(timer.repeat(number=number, repeat=repeat)) / number


def call_costs(robot, method="aba"):
    """Seconds per call: single-state (as the loop calls them) and per state in a batch."""
    n = robot.n
    rng = np.random.default_rng(1)
    q, qd, x = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    out = np.empty(n)
    N = 10000
    Q, QD, X = (rng.uniform(-1, 1, (N, n)) for _ in range(3))
    return {
        "fd": per_call(lambda: robot.forward_dynamics(q, qd, x, method=method, out=out)),
        "id": per_call(lambda: robot.inverse_dynamics(q, qd, x, out=out)),
        "fd_batch": per_call(lambda: robot.forward_dynamics(Q, QD, X, method=method),
                             number=3, repeat=5) / N,
        "id_batch": per_call(lambda: robot.inverse_dynamics(Q, QD, X), number=3,
                             repeat=5) / N,
    }


def run_case(robot, make_controller, reference, duration, repeat, **kwargs):
    """The run with the least CPU time of ``repeat``."""
    best = None
    for _ in range(repeat):
        res = simulate(robot, make_controller(), reference, duration=duration, **kwargs)
        if best is None or res.stats["cpu_time"] < best.stats["cpu_time"]:
            best = res
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="intelledex_605")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    robot = robodyn.robots.load(args.robot)
    from robodyn.cli import default_reference
    reference = default_reference(robot)
    w = 2 * math.pi * 10.0
    costs = call_costs(robot)
    n_threads = robodyn.get_num_threads() if hasattr(robodyn, "get_num_threads") else "?"
    print(f"robot {robot.name} (n = {robot.n}), {args.duration:g} s simulated, best CPU time "
          f"of {args.repeat}; robodyn threads {n_threads}")
    print(f"one call from Python (out=): forward_dynamics {costs['fd'] * 1e6:.2f} us, "
          f"inverse_dynamics {costs['id'] * 1e6:.2f} us; per state in a batch: "
          f"{costs['fd_batch'] * 1e6:.2f} us, {costs['id_batch'] * 1e6:.2f} us")

    def computed_torque(r=robot):
        return lambda: ct.ComputedTorque(r, w * w, 2 * w)

    fast = robot.specialized() if hasattr(robot, "specialized") else None
    cases = [
        ("computed torque 1 kHz ZOH, RK4 1 ms", robot, computed_torque(),
         dict(dt=1e-3, control_rate=1000.0, integrator="rk4")),
        ("passive, RK4 1 ms", robot, lambda: None, dict(dt=1e-3, integrator="rk4")),
        ("computed torque continuous, RK4 1 ms", robot, computed_torque(),
         dict(dt=1e-3, control_rate=None, integrator="rk4")),
        ("computed torque 1 kHz, semi-implicit Euler 1 ms", robot, computed_torque(),
         dict(dt=1e-3, control_rate=1000.0, integrator="euler")),
        ("PD + gravity 1 kHz ZOH, RK4 1 ms", robot,
         lambda: ct.PDGravity(robot, *ct.pd_gains(robot, reference(0.0)[0], 5.0)),
         dict(dt=1e-3, control_rate=1000.0, integrator="rk4")),
        ("computed torque 1 kHz, noise + delay, RK4 1 ms", robot,
         lambda: ct.ComputedTorque(robot, w * w, 2 * w, noise_std=1e-5, delay=1, seed=1),
         dict(dt=1e-3, control_rate=1000.0, integrator="rk4")),
        ("computed torque 1 kHz, rk45 (rtol 1e-8)", robot, computed_torque(),
         dict(dt=1e-3, control_rate=1000.0, integrator="rk45")),
    ]
    if fast is not None and any(fast._kernels()):
        cases.insert(1, ("same, generated kernels (robot.specialized())", fast,
                         computed_torque(fast),
                         dict(dt=1e-3, control_rate=1000.0, integrator="rk4")))
    header = (f"{'case':<50} {'Python s':>8} {'x real':>7} {'C++ s':>7} {'x real':>7} "
              f"{'C++/Py':>6} {'Py ovh/step':>11} {'dyn-only x':>10}")
    print(header)
    print("-" * len(header))
    for name, plant, make, kwargs in cases:
        ref = None if "passive" in name else reference
        q0 = reference(0.0)[0]
        py = run_case(plant, make, ref, args.duration, args.repeat, q0=q0, engine="python",
                      **kwargs)
        cpu_py = py.stats["cpu_time"]
        steps = py.t.shape[0] - 1
        fd_calls = py.stats["fd_calls"]
        ctrl_calls = py.stats["control_calls"]
        in_robodyn = fd_calls * costs["fd"] + ctrl_calls * costs["id"]
        overhead = (cpu_py - in_robodyn) / steps
        # the dynamics alone (batch cost per state), without any loop around them
        dyn = fd_calls * costs["fd_batch"] + ctrl_calls * costs["id_batch"]
        if kwargs["integrator"] == "rk45":
            cpp_cols = f"{'-':>7} {'-':>7} {'-':>6}"
        else:
            cxx = run_case(plant, make, ref, args.duration, args.repeat, q0=q0, engine="cpp",
                           **kwargs)
            cpu_cxx = cxx.stats["cpu_time"]
            cpp_cols = (f"{cpu_cxx:7.3f} {args.duration / cpu_cxx:7.1f} "
                        f"{cpu_py / cpu_cxx:6.1f}")
        dyn_col = "-" if plant is not robot else f"{args.duration / dyn:10.0f}"
        print(f"{name:<50} {cpu_py:8.3f} {args.duration / cpu_py:7.1f} {cpp_cols} "
              f"{overhead * 1e6:8.2f} us {dyn_col:>10}")
    print("x real: simulated time / CPU time of the run (for the C++ engine including the "
          "reference sampling); C++/Py: speed-up of the C++ loop; Py ovh/step: the Python "
          "loop's CPU time outside robodyn's dynamics calls, per step; dyn-only x: real-time "
          "factor if only the dynamics remained (per-state cost of batch calls)")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - t0:.1f} s)")
