"""Timing of robodyn-ros2 over ROS 2 on this machine: periods delivered, latency, idle CPU.

    python bench/bench_ros.py [--seconds 10] [--rate 1000] [--state-rate 200]
                              [--event-rate 500] [--robot intelledex_605] [--ticks 20000]
                              [--big 100000] [--priority 50]
                              [--png bench/results/ros_timing.png]

Needs the ``ros`` extra (and matplotlib for the figure). Everything runs on this machine only:
a random private ROS_DOMAIN_ID in 100..230 and ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, set
before rclpy starts. The node is a second process started as a user starts it (the
``robodyn-ros2`` console script, no ``duration``) and stopped with SIGTERM; this process is
the peer.

1. Compute time per tick, in process: the node's own tick called ``--ticks`` times in each
   mode, its publish stubbed out (the reference is the thesis motion sampled every 20 ms).
2. Idle CPU: the node's CPU time (/proc/PID/stat) over 5 s with no input, in the timer mode at
   ``--rate`` Hz (the timer ticks, nothing to compute) and in the event mode.
3. Timer mode at ``--rate`` Hz (gravity_compensation): this process publishes joint states at
   ``--state-rate`` Hz, each with a distinct q, and records every command for ``--seconds`` s
   after a 1 s warm-up: the fraction of periods delivered (commands received / (seconds x
   rate)), the period between commands, the latency from publishing a state to receiving the
   first command computed from it (includes the wait for the next tick), the node's CPU use.
4. Event mode (``trigger:=joint_states``): states at ``--event-rate`` Hz for ``--seconds`` s,
   each answered by one command: the state-to-command latency (publish to receive, both in
   this process: serialization, transport both ways, the node's callback).
5. A legal ``--big``-point reference sent to a feedforward node at ``--rate`` Hz: the longest
   gap between commands in the 3 s around it, and how long until it is in force.

Runs 3 to 5 are made twice: with normal scheduling, and with ``realtime_priority:=PRIORITY``
(``--priority``, default 50; 0 skips it: SCHED_FIFO for the node's executor and middleware
threads, and for this process's receiving thread, so that neither process's scheduling on a
loaded machine dominates the figures). The figures depend on the load of the machine: the load
average is printed with them. The histograms of the timer periods and the event latencies go
to ``--png``.
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


def load():
    return f"load average {os.getloadavg()[0]:.2f}"


def cpu_seconds(pid):
    """User + system CPU time of a process (s), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_priority(prio):
    """SCHED_FIFO at ``prio`` (0: SCHED_OTHER) for every thread of this process; False if not
    permitted."""
    policy, param = (os.SCHED_FIFO, os.sched_param(prio)) if prio else (os.SCHED_OTHER,
                                                                          os.sched_param(0))
    try:
        for tid in os.listdir("/proc/self/task"):
            os.sched_setscheduler(int(tid), policy, param)
    except (OSError, AttributeError):
        return False
    return True


class _NoPublish:
    def publish(self, msg):
        pass


def tick_times(rosnode, robot_name, ticks, context):
    """Per-mode compute time of the node's tick (s), called in this process, publish stubbed
    out: reference, control law (one controller step) and the finiteness check."""
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
            node._pending = node.prepare_reference(
                rosnode.trajectory_message(names, ts, Q, QD, QDD))
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
    """Publishes joint states and references, records the commands and when they arrive."""

    def __init__(self, rclpy, rosnode, robot, context, priority=0):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        self.robot = robot
        self.JointState = JointState
        self.node = rclpy.create_node("robodyn_bench_peer", context=context)
        self.pub = self.node.create_publisher(JointState, rosnode.JOINT_STATES, 10)
        self.ref_pub = self.node.create_publisher(JointTrajectory, rosnode.REFERENCE, 10)
        self.received = []  # (time, bytes of the command)
        self.lock = threading.Lock()
        self.node.create_subscription(Float64MultiArray, rosnode.COMMANDS, self._on_command,
                                      100)
        self.executor = rosnode._executor(context)
        self.executor.add_node(self.node)
        self.stop = rclpy.task.Future()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()
        # this process under the node's scheduling too (all its threads: one thread alone
        # would wait for the interpreter lock held by a preempted normal one)
        process_priority(priority)
        lim = np.asarray(robot.effort_limits, dtype=float)
        lim[~(lim > 0) | ~np.isfinite(lim)] = np.inf
        self.lo, self.hi = -lim, lim

    def _spin(self):
        self.executor.spin_until_future_complete(self.stop, timeout_sec=300.0)

    def _on_command(self, msg):
        t = time.monotonic()
        key = (np.frombuffer(msg.data, dtype=np.float64) + 0.0).tobytes()  # -0.0 as 0.0
        with self.lock:
            self.received.append((t, key))

    def command_for(self, q):
        """The node's gravity-compensation command for q, bit for bit (-0.0 as 0.0)."""
        tau = np.empty(self.robot.n)
        self.robot.gravity_torques(q, out=tau)
        np.maximum(tau, self.lo, out=tau)
        np.minimum(tau, self.hi, out=tau)
        return (tau + 0.0).tobytes()

    def publish(self, q):
        msg = self.JointState(name=self.robot.joint_names, position=q.tolist(),
                              velocity=[0.0] * self.robot.n)
        self.pub.publish(msg)

    def close(self):
        process_priority(0)
        self.stop.set_result(True)
        self.executor.wake()
        self.thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()


def start_node(*params):
    """robodyn-ros2 as a user starts it (console script next to this interpreter)."""
    script = os.path.join(os.path.dirname(sys.executable), "robodyn-ros2")
    if not os.path.exists(script):
        script = shutil.which("robodyn-ros2") or script
    args = [script, "--ros-args"]
    for p in params:
        args += ["-p", p]
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(args, env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    proc.log = log
    return proc


def stop_node(proc):
    """SIGTERM, then the exit status, the time it took and the node's log."""
    start = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    took = time.monotonic() - start
    proc.log.seek(0)
    text = proc.log.read()
    proc.log.close()
    return proc.returncode, took, text


def warm_up(peer, q0, timeout=30.0):
    """Publish q0 until commands flow (bounded), then 1 s more."""
    deadline = time.monotonic() + timeout
    while not peer.received and time.monotonic() < deadline:
        peer.publish(q0)
        time.sleep(0.02)
    if not peer.received:
        raise RuntimeError(f"no command from the node within {timeout:g} s")
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        peer.publish(q0)
        time.sleep(0.02)


def stream_states(peer, robot, q0, rate, seconds, rng):
    """Publish distinct states at ``rate`` for ``seconds``; {command bytes: publish time}."""
    sent = {}
    period = 1.0 / rate
    end = time.monotonic() + seconds
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
            sent.setdefault(key, t)
            next_t += period
        time.sleep(max(0.0, min(next_t, end) - time.monotonic()))
    return sent


def latencies(peer, sent):
    with peer.lock:
        got = list(peer.received)
    out, seen = [], set()
    for t, key in got:
        if key in sent and key not in seen:
            seen.add(key)
            out.append(t - sent[key])
    return np.array(out)


def idle_cpu(robot_name, rate, seconds=5.0):
    """CPU use (fraction of one CPU) of an idle node: timer mode and event mode."""
    out = {}
    for trigger in ("timer", "joint_states"):
        proc = start_node(f"robot:={robot_name}", f"rate_hz:={float(rate)}",
                          f"trigger:={trigger}")
        try:
            # past start-up (imports, discovery): wait for its start message, bounded
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline:
                proc.log.seek(0)
                if "waiting for" in proc.log.read():
                    break
                time.sleep(0.1)
            time.sleep(1.0)
            c0, t0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(seconds)
            out[trigger] = (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0)
        finally:
            stop_node(proc)
    return out


def run_timer(rclpy, rosnode, robot, robot_name, rate, seconds, state_rate, context, seed,
              priority=0):
    proc = start_node(f"robot:={robot_name}", "mode:=gravity_compensation",
                      f"rate_hz:={float(rate)}", "joint_state_timeout:=1.0",
                      f"realtime_priority:={priority}")
    peer = Peer(rclpy, rosnode, robot, context, priority)
    rng = np.random.default_rng(seed)
    q0 = np.array([0.3, 1.2, 0.4, -0.3, 0.5, 0.1])[:robot.n]
    try:
        warm_up(peer, q0)
        start = time.monotonic()
        c0 = cpu_seconds(proc.pid)
        sent = stream_states(peer, robot, q0, state_rate, seconds, rng)
        end = time.monotonic()
        cpu = (cpu_seconds(proc.pid) - c0) / (end - start)
        time.sleep(0.1)
    finally:
        peer.close()
        status, took, text = stop_node(proc)
    with peer.lock:
        times = np.array([t for t, _ in peer.received if start <= t < end])
    summary = re.search(r"compute_us p50=([\d.]+) p99=([\d.]+) max=([\d.]+) "
                        r"publish_us p50=([\d.]+) p99=([\d.]+) max=([\d.]+)", text)
    ticks = re.search(r"periods_ms p50=([\d.]+) p99=([\d.]+) max=([\d.]+) "
                      r"delivered=([\d.]+)%", text)
    return {"delivered": len(times) / ((end - start) * rate), "commands": len(times),
            "periods": np.diff(times), "latency": latencies(peer, sent), "cpu": cpu,
            "node_us": tuple(float(x) for x in summary.groups()) if summary else None,
            "node_ticks": tuple(float(x) for x in ticks.groups()) if ticks else None,
            "exit": (status, took), "log": text}


def run_event(rclpy, rosnode, robot, robot_name, seconds, state_rate, context, seed,
              priority=0):
    proc = start_node(f"robot:={robot_name}", "mode:=gravity_compensation",
                      "trigger:=joint_states", f"realtime_priority:={priority}")
    peer = Peer(rclpy, rosnode, robot, context, priority)
    rng = np.random.default_rng(seed + 1)
    q0 = np.array([0.3, 1.2, 0.4, -0.3, 0.5, 0.1])[:robot.n]
    try:
        warm_up(peer, q0)
        start = time.monotonic()
        c0 = cpu_seconds(proc.pid)
        sent = stream_states(peer, robot, q0, state_rate, seconds, rng)
        cpu = (cpu_seconds(proc.pid) - c0) / (time.monotonic() - start)
        time.sleep(0.1)
    finally:
        peer.close()
        status, took, text = stop_node(proc)
    lat = latencies(peer, sent)
    return {"latency": lat, "matched": (len(lat), len(sent)), "cpu": cpu,
            "exit": (status, took), "log": text}


def run_big_reference(rclpy, rosnode, robot, robot_name, rate, points, context, priority=0):
    """Feedforward at ``rate``; a legal ``points``-point reference arrives: the longest gap
    between commands around it and the time until it is in force."""
    names = list(robot.joint_names)
    q0 = np.array([0.3, 1.2, 0.4, -0.3, 0.5, 0.1])[:robot.n]
    ts = np.arange(points) * 1e-3
    # a slow legal motion away from q0 (within the limits), positions and velocities
    P = q0 + 0.2 * np.sin(0.5 * ts)[:, None]
    V = 0.1 * np.cos(0.5 * ts)[:, None] * np.ones(robot.n)
    big = rosnode.trajectory_message(names, ts, P, V)
    hold = rosnode.trajectory_message(names, [0.0], [q0])
    proc = start_node(f"robot:={robot_name}", "mode:=feedforward", f"rate_hz:={float(rate)}",
                      f"max_points:={max(points, 1)}", f"realtime_priority:={priority}")
    peer = Peer(rclpy, rosnode, robot, context, priority)
    try:
        deadline = time.monotonic() + 30.0
        while not peer.received and time.monotonic() < deadline:
            peer.ref_pub.publish(hold)
            time.sleep(0.05)
        time.sleep(1.0)
        with peer.lock:
            before = peer.received[-1][1]
        sent = time.monotonic()
        peer.ref_pub.publish(big)
        published = time.monotonic()
        time.sleep(3.0)
    finally:
        peer.close()
        status, took, text = stop_node(proc)
    with peer.lock:
        got = [(t, c) for t, c in peer.received if sent - 1.0 <= t]
    times = np.array([t for t, _ in got])
    changed = [t for t, c in got if t > sent and c != before]
    ticks = re.search(r"periods_ms p50=([\d.]+) p99=([\d.]+) max=([\d.]+) "
                      r"delivered=([\d.]+)%", text)
    return {"max_gap": float(np.diff(times).max()) if len(times) > 1 else float("nan"),
            "node_ticks": tuple(float(x) for x in ticks.groups()) if ticks else None,
            "commands": len(times), "publish": published - sent,
            "in_force": (changed[0] - sent) if changed else float("nan"),
            "exit": (status, took), "log": text}


def figure(path, runs, rate, title):
    """Histograms: a row per scheduling (label, timer result, event result)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 2, figsize=(11, 3.6 * len(runs)), squeeze=False)
    for row, (label, timer, event) in zip(axes, runs):
        ax = row[0]
        per = timer["periods"] * 1e3
        if per.size:
            top = max(3.0 * 1e3 / rate, np.percentile(per, 99.9))
            ax.hist(np.minimum(per, top), bins=np.linspace(0.0, top, 80), color="C0")
            node = ""
            if timer["node_ticks"]:
                t50, t99, tmax, dl = timer["node_ticks"]
                node = (f"\nin the node: {dl:.2f} % published, period p99 {t99:.2f}, "
                        f"max {tmax:.1f} ms")
            ax.set_title(f"{label}, timer {rate:g} Hz, at the receiver: "
                         f"{100 * timer['delivered']:.2f} % of periods\np50 "
                         f"{np.percentile(per, 50):.3f} ms, p99 {np.percentile(per, 99):.3f} ms, "
                         f"max {per.max():.1f} ms{node}", fontsize=9)
        ax.set_yscale("log")
        ax.set_xlabel("period between commands (ms; the last bin holds the longer ones)")
        ax.set_ylabel("count")
        ax = row[1]
        lat = event["latency"] * 1e3
        if lat.size:
            top = max(2.5, np.percentile(lat, 99.9))
            ax.hist(np.minimum(lat, top), bins=np.linspace(0.0, top, 80), color="C1")
            ax.axvline(np.percentile(lat, 50), color="k", lw=1, label="p50")
            ax.axvline(np.percentile(lat, 99), color="k", lw=1, ls="--", label="p99")
            ax.legend()
            ax.set_title(f"{label}, trigger:=joint_states ({lat.size} states):\np50 "
                         f"{np.percentile(lat, 50):.3f} ms, p99 {np.percentile(lat, 99):.3f} ms, "
                         f"max {lat.max():.1f} ms", fontsize=9)
        ax.set_yscale("log")
        ax.set_xlabel("joint state published -> command received (ms)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--state-rate", type=float, default=200.0)
    ap.add_argument("--event-rate", type=float, default=500.0)
    ap.add_argument("--robot", default="intelledex_605")
    ap.add_argument("--ticks", type=int, default=20000)
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--priority", type=int, default=50,
                    help="also run with realtime_priority:=PRIORITY (0: skip)")
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results", "ros_timing.png"))
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
          f"{os.cpu_count()} CPUs; {load()}")
    try:
        print(f"\ncompute time per tick, in process, {args.ticks} back-to-back ticks "
              f"(reference + controller step; publish stubbed out):")
        for mode, dt in tick_times(rosnode, args.robot, args.ticks, context).items():
            us = dt * 1e6
            print(f"  {mode:22s} mean {us.mean():6.1f}  p50 {np.percentile(us, 50):6.1f}  "
                  f"p99 {np.percentile(us, 99):6.1f} us")

        idle = idle_cpu(args.robot, args.rate)
        print(f"\nidle node, no input, 5 s ({load()}): CPU {100 * idle['timer']:.1f} % of one "
              f"CPU with the {args.rate:g} Hz timer, {100 * idle['joint_states']:.2f} % with "
              f"trigger:=joint_states")

        runs = []
        for label, prio in (("normal scheduling", 0), (f"SCHED_FIFO {args.priority}",
                                                         args.priority)):
            if label != "normal scheduling" and not args.priority:
                continue
            timer = run_timer(rclpy, rosnode, robot, args.robot, args.rate, args.seconds,
                              args.state_rate, context, args.seed, prio)
            print(f"\n{label}: timer {args.rate:g} Hz, gravity_compensation, {args.seconds:g} s, "
                  f"joint states at {args.state_rate:g} Hz ({load()}):")
            print(f"  periods delivered        {100 * timer['delivered']:.2f} % "
                  f"({timer['commands']} commands received)")
            if timer["node_ticks"]:
                t50, t99, tmax, dl = timer["node_ticks"]
                print(f"  in the node (its tick times, whole run): {dl:.2f} % of periods "
                      f"published, period p50 {t50:.3f}  p99 {t99:.3f}  max {tmax:.3f} ms")
            print(f"  period between commands  {stats_ms(timer['periods'])}")
            print(f"  joint state -> command   {stats_ms(timer['latency'])}  (includes the "
                  f"wait for the next tick)")
            print(f"  node CPU                 {100 * timer['cpu']:.1f} % of one CPU")
            if timer["node_us"]:
                c50, c99, cmax, p50, p99, pmax = timer["node_us"]
                print(f"  in the node, per tick: compute p50 {c50:.1f}  p99 {c99:.1f}  max "
                      f"{cmax:.1f} us; publish p50 {p50:.1f}  p99 {p99:.1f}  max {pmax:.1f} us")
            print(f"  SIGTERM -> exit status {timer['exit'][0]} in "
                  f"{1e3 * timer['exit'][1]:.0f} ms")

            event = run_event(rclpy, rosnode, robot, args.robot, args.seconds, args.event_rate,
                              context, args.seed, prio)
            print(f"\n{label}: trigger:=joint_states, gravity_compensation, states at "
                  f"{args.event_rate:g} Hz for {args.seconds:g} s ({load()}):")
            print(f"  joint state -> command   {stats_ms(event['latency'])}  "
                  f"({event['matched'][0]} of {event['matched'][1]} states answered)")
            print(f"  node CPU                 {100 * event['cpu']:.1f} % of one CPU")
            print(f"  SIGTERM -> exit status {event['exit'][0]} in "
                  f"{1e3 * event['exit'][1]:.0f} ms")
            for r in (timer, event):
                if r["exit"][0] != 0:
                    print(r["log"])
            runs.append((label, timer, event))

        if args.big > 0:
            for label, prio in (("normal scheduling", 0), (f"SCHED_FIFO {args.priority}",
                                                             args.priority)):
                if label != "normal scheduling" and not args.priority:
                    continue
                big = run_big_reference(rclpy, rosnode, robot, args.robot, args.rate, args.big,
                                        context, prio)
                print(f"\n{label}: a legal {args.big}-point reference to a feedforward node at "
                      f"{args.rate:g} Hz ({load()}):")
                if big["node_ticks"]:
                    t50, t99, tmax, dl = big["node_ticks"]
                    print(f"  in the node (its tick times, whole run): {dl:.2f} % of periods "
                          f"published, period p50 {t50:.3f}  p99 {t99:.3f}  max {tmax:.3f} ms")
                print(f"  at the receiver: longest gap between commands in the 3 s around it "
                      f"{1e3 * big['max_gap']:.1f} ms ({big['commands']} commands; the peer's "
                      f"own publish call held its interpreter {big['publish']:.2f} s); in "
                      f"force {big['in_force']:.2f} s after publishing")
                if big["exit"][0] != 0:
                    print(big["log"])
        if args.png:
            figure(args.png, runs, args.rate,
                   f"robodyn-ros2, {args.robot}, second process, {os.cpu_count()} shared CPUs, "
                   f"{load()}")
            print(f"\nhistograms: {args.png}")
    finally:
        rclpy.try_shutdown(context=context)
        if logs:
            shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
