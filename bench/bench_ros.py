"""Timing of robodyn-ros2 over ROS 2 on this machine: command rate, compute per tick, latency.

    python bench/bench_ros.py [--seconds 5] [--rates 500 1000] [--state-rate 200]
                              [--robot intelledex_605] [--ticks 20000]

Needs the ``ros`` extra. Everything runs on this machine only: a random private
ROS_DOMAIN_ID in 100..230 and ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, set before rclpy starts.

1. Compute time per tick, in process: the node's own tick called ``--ticks`` times in each
   mode, its publish stubbed out (the reference is the thesis motion sampled every 20 ms).
2. For each rate: the node runs as a second process (``python -m robodyn.ros.node``,
   gravity_compensation). This process publishes joint states at ``--state-rate`` Hz, each
   with a distinct q, and records every command it receives for ``--seconds`` s after a 1 s
   warm-up:
   - achieved command rate (commands received / s) and the period between commands
     (mean, p50, p99), measured at the receiver;
   - end-to-end latency: from publishing a joint state to receiving the first command
     computed from it (the peer knows g(q) of each q it sent, bit for bit), p50 / p99; this
     includes the wait for the node's next timer tick (half a period on average);
   - the node's compute and publish time per tick while running (its shutdown summary): the
     publish, synchronous in rmw_fastrtps, hands the message to the subscriber's process.

The figures depend on the load of the machine: the load average is printed with them.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np


def setup_environment():
    """Private domain and localhost-only discovery, before rclpy initialises; ROS logs in a
    temporary directory (returned, to be removed) unless ROS_LOG_DIR is set."""
    os.environ["ROS_DOMAIN_ID"] = str(random.SystemRandom().randint(100, 230))
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["ROS_STATIC_PEERS"] = ""
    if "ROS_LOG_DIR" in os.environ:
        return None
    logs = tempfile.mkdtemp(prefix="robodyn_bench_ros_")
    os.environ["ROS_LOG_DIR"] = logs
    return logs


def stats_ms(x):
    x = np.asarray(x) * 1e3
    if x.size == 0:
        return "n/a"
    return (f"mean {x.mean():7.3f}  p50 {np.percentile(x, 50):7.3f}  "
            f"p99 {np.percentile(x, 99):7.3f}  max {x.max():7.3f} ms")


class _NoPublish:
    def publish(self, msg):
        pass


def tick_times(rosnode, robot_name, ticks, context):
    """Per-mode compute time of the node's tick (s), called in this process, publish stubbed
    out: reference, control law (one robodyn call) and the clip."""
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from robodyn import trajectories

    motion = trajectories.thesis_motion()
    ts = np.arange(0.0, motion.duration + 1e-12, 0.02)
    Q, QD, QDD = motion.sample(ts)
    out = {}
    for mode in rosnode.MODES:
        node = rosnode.ControllerNode(context=context, parameter_overrides=[
            Parameter("robot", value=robot_name), Parameter("mode", value=mode),
            Parameter("joint_state_timeout", value=1e6)])
        try:
            names = node.robot.joint_names
            node._on_joint_state(JointState(name=names, position=Q[40].tolist(),
                                            velocity=QD[40].tolist()))
            node._on_reference(rosnode.trajectory_message(names, ts, Q, QD, QDD))
            node._pub = _NoPublish()
            dt = np.empty(ticks)
            clock = time.perf_counter
            tick = node._tick
            for i in range(ticks):
                t0 = clock()
                tick()
                dt[i] = clock() - t0
            out[mode] = dt
        finally:
            node.destroy_node()
    return out


class Peer:
    """Publishes distinct joint states, records the commands and when they arrive."""

    def __init__(self, rclpy, rosnode, robot, context):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.robot = robot
        self.JointState = JointState
        self.node = rclpy.create_node("robodyn_bench_peer", context=context)
        self.pub = self.node.create_publisher(JointState, rosnode.JOINT_STATES, 10)
        self.received = []  # (time, bytes of the command)
        self.lock = threading.Lock()
        self.node.create_subscription(Float64MultiArray, rosnode.COMMANDS, self._on_command, 100)
        self.executor = rosnode._executor(context)
        self.executor.add_node(self.node)
        self.stop = rclpy.task.Future()
        self.thread = threading.Thread(target=self.executor.spin_until_future_complete,
                                       args=(self.stop,), kwargs={"timeout_sec": 120.0},
                                       daemon=True)
        self.thread.start()
        lim = np.asarray(robot.effort_limits, dtype=float)
        lim[~(lim > 0) | ~np.isfinite(lim)] = np.inf
        self.lo, self.hi = -lim, lim

    def _on_command(self, msg):
        t = time.monotonic()
        with self.lock:
            self.received.append((t, bytes(msg.data)))

    def command_for(self, q):
        """The node's gravity-compensation command for q, bit for bit."""
        tau = np.empty(self.robot.n)
        self.robot.gravity_torques(q, out=tau)
        np.maximum(tau, self.lo, out=tau)
        np.minimum(tau, self.hi, out=tau)
        return tau.tobytes()

    def publish(self, q):
        msg = self.JointState(name=self.robot.joint_names, position=q.tolist(),
                              velocity=[0.0] * self.robot.n)
        self.pub.publish(msg)

    def close(self):
        self.stop.set_result(True)
        self.executor.wake()
        self.thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()


def run_rate(rclpy, rosnode, robot, robot_name, rate, seconds, state_rate, context, seed):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "robodyn.ros.node", "--ros-args", "-p", f"robot:={robot_name}",
         "-p", "mode:=gravity_compensation", "-p", f"rate_hz:={float(rate)}",
         "-p", "joint_state_timeout:=1.0", "-p", f"duration:={seconds + 30.0}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    peer = Peer(rclpy, rosnode, robot, context)
    rng = np.random.default_rng(seed)
    q0 = np.array([0.3, 1.2, 0.4, -0.3, 0.5, 0.1])[:robot.n]
    sent = {}
    try:
        # warm up: discovery, until commands flow (bounded), then 1 s more
        deadline = time.monotonic() + 20.0
        while not peer.received and time.monotonic() < deadline:
            peer.publish(q0)
            time.sleep(0.02)
        if not peer.received:
            raise RuntimeError("no command from the node within 20 s")
        # measured window: distinct states at state_rate, commands recorded throughout
        period = 1.0 / state_rate
        start = time.monotonic() + 1.0
        end = start + seconds
        k = 0
        next_t = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= end:
                break
            if now >= next_t:
                q = q0 + rng.uniform(-0.3, 0.3, robot.n)
                key = peer.command_for(q)
                t = time.monotonic()
                peer.publish(q)
                if now >= start and key not in sent:
                    sent[key] = t
                k += 1
                next_t += period
            time.sleep(max(0.0, min(next_t, end) - time.monotonic()))
        time.sleep(0.1)
    finally:
        peer.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.seek(0)
        text = log.read()
        log.close()
    with peer.lock:
        got = list(peer.received)
    window = [(t, key) for t, key in got if start <= t < end]
    times = np.array([t for t, _ in window])
    latency, seen = [], set()
    for t, key in got:
        if key in sent and key not in seen:
            seen.add(key)
            latency.append(t - sent[key])
    summary = re.search(r"compute_us p50=([\d.]+) p99=([\d.]+) max=([\d.]+) "
                        r"publish_us p50=([\d.]+) p99=([\d.]+) max=([\d.]+)", text)
    return {
        "rate": len(window) / seconds,
        "periods": np.diff(times),
        "latency": np.array(latency),
        "matched": (len(latency), len(sent)),
        "node_compute_us": tuple(float(x) for x in summary.groups()) if summary else None,
        "exit": proc.returncode,
        "log": text,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rates", type=float, nargs="+", default=[500.0, 1000.0])
    ap.add_argument("--state-rate", type=float, default=200.0)
    ap.add_argument("--robot", default="intelledex_605")
    ap.add_argument("--ticks", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    logs = setup_environment()
    import rclpy
    import rclpy.task
    from rclpy.signals import SignalHandlerOptions

    import robodyn
    from robodyn.ros import node as rosnode

    robot = rosnode.load_robot(args.robot)
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    print(f"# robodyn-ros2 on {args.robot} ({robot.n} joints), robodyn {robodyn.__version__}, "
          f"rclpy from {os.path.dirname(rclpy.__file__)}")
    print(f"# ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} LOCALHOST discovery; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")
    try:
        print(f"\ncompute time per tick, in process, {args.ticks} back-to-back ticks "
              f"(reference + robodyn call + clip; publish stubbed out):")
        for mode, dt in tick_times(rosnode, args.robot, args.ticks, context).items():
            us = dt * 1e6
            print(f"  {mode:22s} mean {us.mean():6.1f}  p50 {np.percentile(us, 50):6.1f}  "
                  f"p99 {np.percentile(us, 99):6.1f} us")
        for rate in args.rates:
            r = run_rate(rclpy, rosnode, robot, args.robot, rate, args.seconds, args.state_rate,
                         context, args.seed)
            print(f"\nrate_hz {rate:g} (gravity_compensation; node = second process; "
                  f"load average {os.getloadavg()[0]:.2f}):")
            print(f"  achieved command rate {r['rate']:8.1f} /s over {args.seconds:g} s "
                  f"({100.0 * r['rate'] / rate:.1f}% of rate_hz)")
            print(f"  period between commands  {stats_ms(r['periods'])}")
            print(f"  joint state -> command   {stats_ms(r['latency'])}  "
                  f"({r['matched'][0]} of {r['matched'][1]} states at {args.state_rate:g} Hz "
                  f"matched)")
            if r["node_compute_us"]:
                c50, c99, cmax, p50, p99, pmax = r["node_compute_us"]
                print(f"  in the running node, per tick: compute p50 {c50:.1f}  p99 {c99:.1f}  "
                      f"max {cmax:.1f} us; publish p50 {p50:.1f}  p99 {p99:.1f}  "
                      f"max {pmax:.1f} us")
            if r["exit"] != 0:
                print(f"  node exited with status {r['exit']}:\n{r['log']}")
    finally:
        rclpy.try_shutdown(context=context)
        if logs:
            shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
