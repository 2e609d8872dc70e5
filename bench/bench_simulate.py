"""Real-time factor and per-step Python overhead of robodyn.simulate.

The headline case: 10 s of a 6-DOF arm (the Intelledex 605 on Nie's thesis motion, held at its
end after 2 s) under computed-torque control at 1 kHz with a zero-order hold, integrated by
RK4 at 1 ms. Target: at least 100x real time.

For every case the script reports the wall time of the integration loop (best of --repeat),
the real-time factor, the time per 1 ms step, and how that time splits between robodyn's
dynamics calls and the Python around them. The time in robodyn calls is estimated as
(number of calls) x (cost of one call made the way the loop makes it, with ``out=``); the
rest is Python overhead. The cost of the same dynamics inside C++ without the Python call is
estimated from batch calls ((N, n) arrays, one Python call for N states), which gives the
real-time factor a loop written in C++ could reach.

    python bench/bench_simulate.py [--robot intelledex_605] [--duration 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import time
import timeit

import numpy as np

import robodyn
from robodyn import control as ct
from robodyn.simulation import simulate


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
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    robot = robodyn.robots.load(args.robot)
    from robodyn.cli import default_reference
    reference = default_reference(robot)
    w = 2 * math.pi * 10.0
    costs = call_costs(robot)
    n_threads = robodyn.get_num_threads() if hasattr(robodyn, "get_num_threads") else "?"
    print(f"robot {robot.name} (n = {robot.n}), {args.duration:g} s simulated, best of "
          f"{args.repeat}; robodyn threads {n_threads}")
    print(f"one call from Python (out=): forward_dynamics {costs['fd'] * 1e6:.2f} us, "
          f"inverse_dynamics {costs['id'] * 1e6:.2f} us; per state in a batch: "
          f"{costs['fd_batch'] * 1e6:.2f} us, {costs['id_batch'] * 1e6:.2f} us")

    cases = [
        ("computed torque 1 kHz ZOH, RK4 1 ms", lambda: ct.ComputedTorque(robot, w * w, 2 * w),
         dict(dt=1e-3, control_rate=1000.0, integrator="rk4")),
        ("passive, RK4 1 ms", lambda: None, dict(dt=1e-3, integrator="rk4")),
        ("computed torque continuous, RK4 1 ms", lambda: ct.ComputedTorque(robot, w * w, 2 * w),
         dict(dt=1e-3, control_rate=None, integrator="rk4")),
        ("computed torque 1 kHz, semi-implicit Euler 1 ms",
         lambda: ct.ComputedTorque(robot, w * w, 2 * w),
         dict(dt=1e-3, control_rate=1000.0, integrator="euler")),
        ("computed torque 1 kHz, rk45 (rtol 1e-8)", lambda: ct.ComputedTorque(robot, w * w, 2 * w),
         dict(dt=1e-3, control_rate=1000.0, integrator="rk45")),
    ]
    header = (f"{'case':<50} {'wall s':>7} {'cpu s':>7} {'x real':>7} {'us/step':>8} "
              f"{'in robodyn':>10} {'Python/step':>11} {'C++ loop x':>10}")
    print(header)
    print("-" * len(header))
    for name, make, kwargs in cases:
        ref = None if "passive" in name else reference
        q0 = reference(0.0)[0]
        res = run_case(robot, make, ref, args.duration, args.repeat, q0=q0, **kwargs)
        steps = res.t.shape[0] - 1
        fd_calls = res.stats["fd_calls"]
        ctrl_calls = res.stats["control_calls"]
        in_robodyn = fd_calls * costs["fd"] + ctrl_calls * costs["id"]
        cpu = res.stats["cpu_time"]
        python = cpu - in_robodyn
        # a loop in C++ pays the dynamics only (batch cost per state) plus little else
        cxx = fd_calls * costs["fd_batch"] + ctrl_calls * costs["id_batch"]
        print(f"{name:<50} {res.wall_time:7.3f} {cpu:7.3f} {args.duration / cpu:7.1f} "
              f"{cpu / steps * 1e6:8.2f} {100 * in_robodyn / cpu:9.0f}% "
              f"{python / steps * 1e6:8.2f} us {args.duration / cxx:10.0f}")
    print("x real: simulated / CPU time of the loop (the wall-clock factor is the same on an "
          "idle machine); in robodyn: share of it inside robodyn's dynamics calls (calls x "
          "per-call cost); Python/step: the rest, per 1 ms step; C++ loop x: real-time factor "
          "if only the dynamics remained (at the per-state cost of batch calls)")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - t0:.1f} s)")
