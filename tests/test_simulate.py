"""robodyn.simulate: integrators, control timing, closed-loop accuracy, physics checks."""

import math
import sys

import numpy as np
import pytest

import robodyn
from robodyn import control as ct
from robodyn import trajectories as tr
from robodyn.sim.simulation import SimulationError, SimulationResult, simulate


@pytest.fixture(scope="module")
def intelledex():
    return robodyn.robots.intelledex_605()


@pytest.fixture(scope="module")
def stanford():
    return robodyn.robots.stanford_arm()


def with_damping(robot, damping):
    spec = robot.spec  # a copy
    for b in spec.bodies:
        b.damping = damping
    return robodyn.Robot(spec)


def scaled_masses(robot, factor):
    spec = robot.spec
    for b in spec.bodies:
        b.mass = b.mass * factor
        b.inertia = np.asarray(b.inertia) * factor
    return robodyn.Robot(spec)


# --- passive motion: energy ---------------------------------------------------------------

PASSIVE_STARTS = {
    "intelledex_605": [0.3, 1.2, -0.4, 0.5, 0.2, 0.1],
    "stanford_arm": [0.1, 1.2, 0.6, 0.3, 0.4, 0.2],  # q3 in metres
}


@pytest.mark.parametrize("name", sorted(PASSIVE_STARTS))
def test_passive_motion_conserves_energy(name, request):
    robot = request.getfixturevalue("intelledex" if name == "intelledex_605" else "stanford")
    # the free dynamics: the hard stops at the joint limits (the default) dissipate energy
    res = simulate(robot, None, None, duration=2.0, dt=1e-3, integrator="rk4",
                   q0=PASSIVE_STARTS[name], joint_limits="ignore")
    assert np.max(res.kinetic) > 1.0  # the arm really falls and swings
    np.testing.assert_array_equal(res.tau, 0.0)
    print(f"{name}: relative energy drift {res.energy_drift:.2e} over 2 s (RK4, 1 ms)")
    assert res.energy_drift < 1e-6


@pytest.mark.parametrize("name", sorted(PASSIVE_STARTS))
def test_viscous_friction_never_increases_energy(name, request):
    robot = request.getfixturevalue("intelledex" if name == "intelledex_605" else "stanford")
    damped = with_damping(robot, 0.5)
    res = simulate(damped, None, None, duration=2.0, dt=1e-3, q0=PASSIVE_STARTS[name],
                   joint_limits="ignore")  # the free dynamics: no stops
    E = res.energy
    scale = float(np.max(res.kinetic))
    # dE/dt = -0.5 |qd|^2 <= 0; allow only the integrator's round-off per step
    assert np.max(np.diff(E)) <= 1e-9 * scale
    dissipated = 0.5 * np.sum(res.qd**2, axis=1)
    # energy lost = integral of the friction power (trapezoid rule), to integration accuracy
    lost = np.concatenate([[0.0], np.cumsum(0.5 * (dissipated[1:] + dissipated[:-1])
                                           * np.diff(res.t))])
    np.testing.assert_allclose(E[0] - E, lost, rtol=0, atol=1e-5 * scale)
    assert E[0] - E[-1] > 1e-3 * scale


# --- closed loop on the thesis motion -----------------------------------------------------


def test_computed_torque_exact_model_continuous_tracks_to_integration_accuracy(intelledex):
    ref = tr.thesis_motion(robot=intelledex)
    ctrl = ct.ComputedTorque(intelledex, 400.0, 40.0)
    res = simulate(intelledex, ctrl, ref, duration=2.0, dt=1e-3, control_rate=None)
    err = float(np.max(res.max_error))
    print(f"continuous computed torque, exact model: max error {err:.2e} rad")
    assert err < 1e-6
    np.testing.assert_allclose(res.q[-1], np.full(6, math.pi / 3), atol=1e-6)
    assert ctrl.saturated_calls == 0
    assert res.stats["control_calls"] == 4 * 2000 + 1  # every RK4 stage, plus the last point


def test_zero_order_hold_error_matches_the_derived_estimate(intelledex):
    # Why a 1 kHz zero-order hold leaves an error, and how large it is.
    #
    # At a control instant t_k the controller applies tau_k = M(q_k) v_k + h(q_k, qd_k), with
    # v_k = qdd_r(t_k) + kp e_k + kd e'_k, and holds it for the period D. With the exact model
    # the plant's acceleration at t_k is v_k. During the hold the torque the reference needs,
    # tau_r(t) = ID(q_r, qd_r, qdd_r)(t), keeps changing while the applied torque does not;
    # to first order in (t - t_k) and in the (small) error, M (qdd_r - qdd) grows as
    # (dtau_r/dt) (t - t_k). So, for t in [t_k, t_k + D),
    #
    #     e'' + kd e' + kp e = d(t),   d(t) = M(q_r)^-1 (dtau_r/dt) (t - t_k)
    #
    # (the held feedback adds kp (e - e_k) + kd (e' - e'_k), second order since e = O(D)).
    # d is a sawtooth: a slowly varying mean M^-1 tau_r' D / 2 plus a zero-mean ripple at
    # 1/D = 1 kHz that the loop (natural frequency sqrt(kp) = 20 rad/s) attenuates by about
    # kp (D / 2 pi)^2 ~ 1e-5. The mean changes slowly compared with the loop's time constant,
    # so quasi-statically e = mean(d) / kp:
    #
    #     e(t) ~ D / (2 kp) M(q_r)^-1 dtau_r/dt.
    #
    # It is the rate of the required *torque*, not the reference's jerk, that matters:
    # differentiating tau_r = M qdd_r + h gives M^-1 tau_r' = jerk + M^-1 (M' qdd_r + h'),
    # and on the thesis motion the change of the gravity torque dominates, so the naive
    # jerk D / (2 kp) underestimates the error several times over (printed below).
    kp, kd, D = 400.0, 40.0, 1e-3
    ref = tr.thesis_motion(robot=intelledex)
    ctrl = ct.ComputedTorque(intelledex, kp, kd)
    res = simulate(intelledex, ctrl, ref, duration=2.0, dt=1e-3, control_rate=1.0 / D)
    t = res.t
    Q, QD, QDD = ref.sample(t)
    tau_r = np.asarray(intelledex.inverse_dynamics(Q, QD, QDD))  # batch (N, n)
    tau_r_dot = np.gradient(tau_r, t, axis=0)
    M = np.asarray(intelledex.mass_matrix(Q))  # (N, n, n)
    estimate = D / (2 * kp) * np.linalg.solve(M, tau_r_dot[:, :, None])[:, :, 0]
    predicted = np.max(np.abs(estimate), axis=0)
    measured = res.max_error
    jerk = np.array([ref.jerk(x) for x in t])
    naive = np.max(np.abs(jerk), axis=0) * D / (2 * kp)
    print("zero-order hold at 1 kHz, kp = 400, kd = 40, per joint:")
    print("  measured max |e|      ", np.array2string(measured, precision=3))
    print("  D/(2 kp) M^-1 dtau_r/dt", np.array2string(predicted, precision=3))
    print("  naive jerk D/(2 kp)   ", np.array2string(naive, precision=3))
    ratio = measured / predicted
    assert np.all((ratio > 0.5) & (ratio < 2.0)), ratio
    assert np.max(measured) > 1e-6  # the hold really sets the error (continuous: < 1e-6)


def test_ten_percent_mass_error_keeps_the_error_bounded(intelledex):
    w = 2 * math.pi * 10.0  # 10 Hz bandwidth
    model = scaled_masses(intelledex, 1.1)
    ref = tr.thesis_motion(robot=intelledex)
    ctrl = ct.ComputedTorque(model, w * w, 2 * w)
    res = simulate(intelledex, ctrl, ref, duration=3.0, dt=1e-3, control_rate=1000.0)
    err = float(np.max(res.max_error))
    print(f"computed torque, controller masses and inertias +10 %, 10 Hz bandwidth, 1 kHz: "
          f"max tracking error {err:.3e} rad, final {np.max(np.abs(res.error[-1])):.3e} rad")
    exact = simulate(intelledex, ct.ComputedTorque(intelledex, w * w, 2 * w), ref,
                     duration=3.0, dt=1e-3, control_rate=1000.0)
    assert err < 1e-2
    assert err > 10 * float(np.max(exact.max_error))  # the model error is what we see


def test_pd_gravity_regulates_to_a_set_point(intelledex):
    target = np.array([0.5, 1.2, -0.3, 0.4, 0.2, -0.6])
    start = np.array([0.0, math.pi / 2, 0.0, 0.0, 0.0, 0.0])
    kp, kd = ct.pd_gains(intelledex, target, bandwidth_hz=2.0)
    ctrl = ct.PDGravity(intelledex, kp, kd, saturate=False)
    res = simulate(intelledex, ctrl, tr.constant(target), duration=3.0, dt=1e-3,
                   control_rate=1000.0, q0=start)
    final = float(np.max(np.abs(res.q[-1] - target)))
    print(f"PD + gravity: final error {final:.2e} rad")
    assert final < 1e-3
    assert np.max(np.abs(res.qd[-1])) < 1e-2


def test_feedforward_alone_replays_the_thesis_motion(intelledex):
    # robots.md: torques from inverse dynamics along the motion, integrated forward from the
    # same start, return to q(2 s) = (pi/3, ..., pi/3). Without feedback the arm is unstable
    # about the motion (gravity), so the integration error is amplified (about 1e6 over 2 s);
    # what remains must shrink as dt^4 for RK4 and vanish with a tight rk45.
    ref = tr.thesis_motion(robot=intelledex)
    end = np.full(6, math.pi / 3)

    def final_error(**kwargs):
        res = simulate(intelledex, ct.Feedforward(intelledex), ref, duration=2.0,
                       control_rate=None, **kwargs)
        return float(np.max(np.abs(res.q[-1] - end)))

    coarse, fine = final_error(dt=1e-3), final_error(dt=2.5e-4)
    tight = final_error(integrator="rk45", rtol=1e-12, atol=1e-14)
    print(f"feed-forward replay, error at 2 s: RK4 1 ms {coarse:.2e}, 0.25 ms {fine:.2e}, "
          f"rk45 (rtol 1e-12) {tight:.2e}")
    assert coarse < 1e-4
    assert 100 < coarse / fine < 400  # fourth order: 4^4 = 256
    assert tight < 1e-8


# --- a pendulum ---------------------------------------------------------------------------


def test_single_pendulum_small_angle_period():
    L, m, g, theta0 = 1.0, 2.0, 9.81, 0.01
    row = dict(theta=0.0, d=0.0, a=L, alpha=0.0, joint="revolute", mass=m,
               com=(0.0, 0.0, 0.0), inertia=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    # the link swings in the base x-y plane (joint axis z0), gravity along -y0: hanging at
    # q = -pi/2, with the point mass at the tip (DH frame 1)
    pendulum = robodyn.from_dh([row], gravity=(0.0, -g, 0.0))
    res = simulate(pendulum, None, None, duration=10.0, dt=1e-3, q0=[-math.pi / 2 + theta0])
    x = res.q[:, 0] + math.pi / 2
    up = np.nonzero((x[:-1] < 0) & (x[1:] >= 0))[0]
    crossings = res.t[up] - x[up] * (res.t[up + 1] - res.t[up]) / (x[up + 1] - x[up])
    assert len(crossings) >= 4
    period = float(np.mean(np.diff(crossings)))
    # small-angle period with the first amplitude corrections (Landau & Lifshitz, sec. 28)
    expected = 2 * math.pi * math.sqrt(L / g) * (1 + theta0**2 / 16 + 11 * theta0**4 / 3072)
    print(f"pendulum period {period:.9f} s, expected {expected:.9f} s")
    assert abs(period / expected - 1) < 1e-6
    assert abs(period / (2 * math.pi * math.sqrt(L / g)) - 1) > 1e-6  # amplitude term seen


# --- integrators ---------------------------------------------------------------------------


def test_euler_and_rk45_agree_with_rk4(intelledex):
    # a passive fall: the arm speeds up to ~100 J of kinetic energy within 0.5 s, so compare
    # over 0.3 s, and check the semi-implicit Euler's first order
    q0 = PASSIVE_STARTS["intelledex_605"]

    def final(integrator, dt=1e-3):
        return simulate(intelledex, None, None, duration=0.3, dt=dt, integrator=integrator,
                        q0=q0, rtol=1e-10, atol=1e-12).q[-1]
    rk4 = final("rk4")
    d45 = np.max(np.abs(final("rk45") - rk4))
    deu = np.max(np.abs(final("euler") - rk4))
    deu_fine = np.max(np.abs(final("euler", dt=1e-4) - rk4))
    print(f"passive 0.3 s: |rk45 - rk4| {d45:.2e}, |semi-implicit euler - rk4| {deu:.2e} "
          f"(dt 1 ms), {deu_fine:.2e} (dt 0.1 ms)")
    assert d45 < 1e-8
    assert deu < 2e-2
    assert 5 < deu / deu_fine < 20  # first order


def test_rk45_respects_control_instants(intelledex):
    # at 50 Hz the hold is long; an adaptive integrator that stepped across a control instant
    # would apply the old torque past it and drift away from RK4 on the same grid
    ref = tr.thesis_motion(robot=intelledex)
    w = 2 * math.pi * 2.0

    def run(integrator):
        ctrl = ct.ComputedTorque(intelledex, w * w, 2 * w)
        return simulate(intelledex, ctrl, ref, duration=2.0, dt=1e-3, control_rate=50.0,
                        integrator=integrator, rtol=1e-10, atol=1e-12)
    a, b = run("rk4"), run("rk45")
    assert np.max(np.abs(a.q - b.q)) < 1e-8
    np.testing.assert_allclose(a.tau, b.tau, rtol=0, atol=1e-6)
    assert b.stats["control_calls"] == a.stats["control_calls"] == 101


def test_control_instants_and_zero_order_hold(intelledex):
    times = []

    def ctrl(t, q, qd, ref):
        times.append(t)
        return np.full(6, len(times), dtype=float)

    res = simulate(intelledex, ctrl, None, duration=0.1, dt=1e-3, control_rate=300.0)
    np.testing.assert_allclose(times, np.arange(31) / 300.0, rtol=0, atol=1e-12)
    # every control instant and every multiple of dt is a grid point
    for t in np.arange(31) / 300.0:
        assert np.min(np.abs(res.t - t)) < 1e-12
    for t in np.arange(101) * 1e-3:
        assert np.min(np.abs(res.t - t)) < 1e-12
    # between instants the torque is held
    k = np.searchsorted(np.arange(31) / 300.0, res.t + 1e-12, side="right")
    np.testing.assert_array_equal(res.tau[:, 0], k)


def test_continuous_control_calls_the_controller_at_every_stage(intelledex):
    calls = []

    def ctrl(t, q, qd, ref):
        calls.append(t)
        return np.zeros(6)

    simulate(intelledex, ctrl, None, duration=0.01, dt=1e-3, control_rate="continuous")
    assert len(calls) == 4 * 10 + 1
    np.testing.assert_allclose(calls[:4], [0.0, 5e-4, 5e-4, 1e-3], atol=1e-15)


# --- defaults, result object, validation ----------------------------------------------------


def test_defaults_start_on_the_reference_and_record_it(intelledex):
    ref = tr.thesis_motion(robot=intelledex)
    res = simulate(intelledex, None, ref, duration=0.05)
    np.testing.assert_array_equal(res.q[0], ref(0)[0])
    np.testing.assert_array_equal(res.tau, 0.0)
    np.testing.assert_allclose(res.q_ref, ref.sample(res.t)[0])
    assert res.t.shape == (51,)
    res = simulate(intelledex, None, None, duration=0.01)
    np.testing.assert_array_equal(res.q[0], 0.0)
    assert res.q_ref is None and res.max_error is None


def test_top_level_simulate_name_from_api_md(intelledex):
    res = robodyn.simulate(intelledex, duration=0.01)
    assert isinstance(res, SimulationResult)


def test_result_csv_and_summary(intelledex, tmp_path):
    ref = tr.thesis_motion(robot=intelledex)
    res = simulate(intelledex, ct.ComputedTorque(intelledex, 100.0, 20.0), ref, duration=0.1)
    path = res.to_csv(tmp_path / "run.csv")
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    assert header[0] == "t" and "q_joint1" in header and "tau_joint6" in header
    assert header[-1] == "energy"
    np.testing.assert_array_equal(data[:, 0], res.t)
    np.testing.assert_array_equal(data[:, header.index("q_joint3")], res.q[:, 2])
    np.testing.assert_array_equal(data[:, header.index("energy")], res.energy)
    back = tr.from_csv(path)  # the q_* columns
    np.testing.assert_allclose(back.sample(res.t)[0], res.q, atol=1e-15)
    text = res.summary()
    assert "real-time factor" in text and "joint6" in text
    assert len(text.splitlines()) < 25


def test_plot_writes_a_png(intelledex, tmp_path):
    pytest.importorskip("matplotlib")
    ref = tr.thesis_motion(robot=intelledex)
    res = simulate(intelledex, ct.PDGravity(intelledex, 200.0, 20.0), ref, duration=0.2)
    path = tmp_path / "run.png"
    res.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(intelledex, monkeypatch):
    res = simulate(intelledex, None, None, duration=0.01)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install robodyn\[plot\]"):
        res.plot("never.png")


@pytest.mark.parametrize("kwargs, match", [
    ({"dt": 0.0}, "dt"),
    ({"dt": -1e-3}, "dt"),
    ({"duration": 0.0}, "duration"),
    ({"duration": float("inf")}, "duration"),
    ({"integrator": "leapfrog"}, "integrator"),
    ({"control_rate": -5.0}, "control_rate"),
    ({"control_rate": "often"}, "control_rate"),
    ({"q0": [0.0, 0.0]}, "q0"),
    ({"q0": [0.0] * 5 + [float("nan")]}, "q0"),
    ({"qd0": np.zeros((6, 1))}, "qd0"),
    ({"reference": 3.0}, "reference"),
    ({"controller": "pid"}, "controller"),
    ({"duration": 10.0, "dt": 1e-6, "max_steps": 1000}, "max_steps"),
    ({"integrator": "rk45", "rtol": 0.0}, "rtol"),
])
def test_bad_arguments_are_value_errors(intelledex, kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate(intelledex, **kwargs)


def test_controller_of_the_wrong_size_is_refused(intelledex):
    pendulum = robodyn.from_dh([dict(theta=0.0, d=0.0, a=1.0, alpha=0.0, mass=1.0,
                                     com=(0, 0, 0), inertia=(0, 0, 0, 0, 0, 0))])
    with pytest.raises(ValueError, match="joints"):
        simulate(intelledex, ct.PDGravity(pendulum, 1.0, 1.0), duration=0.01)
    with pytest.raises(ValueError, match="shape"):
        simulate(intelledex, lambda t, q, qd, ref: np.zeros(3), duration=0.01)


def test_unstable_loop_raises_simulation_error(intelledex):
    # kp D^2 = 100 > 4: the sampled loop is unstable and the state blows up
    ctrl = ct.ComputedTorque(intelledex, 1e8, 0.0, saturate=False)
    with pytest.raises(SimulationError, match="diverged"):  # (the stops would hold it)
        simulate(intelledex, ctrl, tr.constant(np.full(6, 0.1)), duration=1.0,
                 q0=np.zeros(6), integrator="euler", joint_limits="ignore")


def test_noisy_delayed_control_is_reproducible(intelledex):
    ref = tr.thesis_motion(robot=intelledex)
    ctrl = ct.ComputedTorque(intelledex, 400.0, 40.0, noise_std=1e-4, delay=2, seed=5)
    a = simulate(intelledex, ctrl, ref, duration=0.2)
    b = simulate(intelledex, ctrl, ref, duration=0.2)  # same controller object, run again
    np.testing.assert_array_equal(a.q, b.q)
    quiet = simulate(intelledex, ct.ComputedTorque(intelledex, 400.0, 40.0), ref, duration=0.2)
    assert np.max(np.abs(a.q - quiet.q)) > 1e-7
    with pytest.raises(ValueError, match="per control period"):
        simulate(intelledex, ctrl, ref, duration=0.2, control_rate=None)


def test_progress_is_reported(intelledex):
    seen = []
    simulate(intelledex, None, None, duration=0.5, progress=lambda t, T: seen.append((t, T)))
    assert 50 <= len(seen) <= 200
    assert seen[-1] == (0.5, 0.5)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


# --- the C++ loop (engine="cpp") against the Python loop ------------------------------------
#
# Both engines integrate the same grid with the same stage formulas and the same order of the
# floating-point operations in the control laws; what differs is summation order in the RK4
# combination (numpy's dot) and the reference evaluated by sample(ts) instead of ref(t). The
# cases are well-conditioned closed loops (or short runs) so rounding does not grow beyond
# 1e-12 of the signals' size; a saturated, chattering loop would amplify it chaotically.

W10 = 2 * math.pi * 10.0  # a 10 Hz computed-torque bandwidth


def run_both(robot, make_controller, reference, **kwargs):
    """(python result, its controller, cpp result, its controller)."""
    out = []
    for engine in ("python", "cpp"):
        ctrl = make_controller()
        res = simulate(robot, ctrl, reference, engine=engine, **kwargs)
        assert res.stats["engine"] == engine
        out += [res, ctrl]
    return out


def assert_same_run(a, b, tol=1e-12):
    np.testing.assert_array_equal(a.t, b.t)
    for name in ("q", "qd", "tau"):
        x, y = getattr(a, name), getattr(b, name)
        scale = max(1.0, float(np.max(np.abs(x))))
        np.testing.assert_allclose(y, x, rtol=0, atol=tol * scale, err_msg=name)
    for key in ("steps", "fd_calls", "control_calls"):
        assert a.stats[key] == b.stats[key], key
    assert a.saturated_calls == b.saturated_calls


ENGINE_CASES = {
    "computed torque, 1 kHz hold, rk4": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10), dict(control_rate=1000.0)),
    "computed torque, continuous, rk4": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10), dict(control_rate=None)),
    "computed torque, 1 kHz hold, euler": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10),
        dict(control_rate=1000.0, integrator="euler")),
    "computed torque, continuous, euler": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10),
        dict(control_rate=None, integrator="euler")),
    "computed torque, 300 Hz off the dt grid": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10), dict(control_rate=300.0)),
    "computed torque by kane, plant by crba": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10, method="kane"),
        dict(method="crba")),
    "computed torque, plant by kane": (
        lambda r: ct.ComputedTorque(r, W10**2, 2 * W10), dict(method="kane")),
    "computed torque, +10 % controller model": (
        lambda r: ct.ComputedTorque(scaled_masses(r, 1.1), W10**2, 2 * W10),
        dict(control_rate=500.0)),
    "pd + gravity, 1 kHz hold": (
        lambda r: ct.PDGravity(r, *ct.pd_gains(r, np.zeros(r.n), 5.0),
                               saturate=False), dict()),
    "pd + gravity, continuous, -10 % model": (
        lambda r: ct.PDGravity(scaled_masses(r, 0.9), *ct.pd_gains(r, np.zeros(r.n), 5.0),
                               saturate=False), dict(control_rate=None)),
    "feedforward + pd, -10 % model, euler": (
        lambda r: ct.Feedforward(scaled_masses(r, 0.9), *ct.pd_gains(r, np.zeros(r.n), 5.0),
                                 saturate=False),
        dict(integrator="euler")),
    "feedforward alone, continuous (short: open loop)": (
        lambda r: ct.Feedforward(r, saturate=False), dict(control_rate=None, duration=0.5)),
    "passive": (lambda r: None, dict(duration=0.5)),
}


@pytest.mark.parametrize("case", sorted(ENGINE_CASES))
@pytest.mark.parametrize("name", ["intelledex_605", "stanford_arm"])
def test_cpp_engine_matches_python_engine(case, name, request):
    robot = request.getfixturevalue("intelledex" if name == "intelledex_605" else "stanford")
    make, kwargs = ENGINE_CASES[case]
    kwargs = {"duration": 2.0, "dt": 1e-3, **kwargs}
    ref = (tr.thesis_motion(robot=robot) if name == "intelledex_605"
           else tr.stanford_demo(T=2.0, robot=robot))
    a, ca, b, cb = run_both(robot, lambda: make(robot), ref, **kwargs)
    assert np.max(np.abs(a.q - a.q[0])) > 0.05  # the arm really moves
    assert_same_run(a, b)
    if ca is not None:
        assert ca.calls == cb.calls == a.stats["control_calls"]


def test_cpp_engine_saturation_matches(intelledex):
    # shoulder and elbow limited to 90 % of their peak torque on the motion: clipped over part
    # of the run, the loop stays well-conditioned
    ref = tr.thesis_motion(robot=intelledex)
    free = simulate(intelledex, ct.ComputedTorque(intelledex, 400.0, 40.0, saturate=False), ref,
                    duration=2.0, engine="python")
    limits = np.full(6, np.inf)
    limits[1:3] = 0.9 * np.max(np.abs(free.tau[:, 1:3]), axis=0)
    for kwargs in ({"control_rate": 1000.0}, {"control_rate": None},
                   {"control_rate": 1000.0, "integrator": "euler"}):
        a, ca, b, cb = run_both(intelledex, lambda: ct.ComputedTorque(
            intelledex, 400.0, 40.0, effort_limits=limits), ref, duration=2.0, **kwargs)
        assert 100 < a.saturated_calls < a.stats["control_calls"]
        assert np.all(np.abs(b.tau) <= np.where(np.isfinite(limits), limits, np.inf))
        assert_same_run(a, b)
        assert ca.saturated_calls == cb.saturated_calls


def test_cpp_engine_reproduces_noise_and_delay(intelledex):
    # the C++ loop draws the same measurement noise (one block from the controller's seeded
    # generator, in the Python loop's order) and keeps the same delay ring
    ref = tr.thesis_motion(robot=intelledex)
    for options in ({"noise_std": 1e-4, "delay": 2}, {"velocity_noise_std": 1e-3},
                    {"noise_std": 1e-4, "velocity_noise_std": 1e-3, "delay": 1},
                    {"delay": 3}):
        a, ca, b, cb = run_both(intelledex, lambda: ct.ComputedTorque(
            intelledex, 400.0, 40.0, seed=7, saturate=False, **options), ref, duration=1.0)
        assert_same_run(a, b)
        assert ca.rng.bit_generator.state == cb.rng.bit_generator.state
        np.testing.assert_allclose(cb._ring, ca._ring, rtol=0, atol=1e-12)
    quiet = simulate(intelledex, ct.ComputedTorque(intelledex, 400.0, 40.0, saturate=False), ref,
                     duration=1.0, engine="cpp")
    assert np.max(np.abs(quiet.q - b.q)) > 1e-7  # the noise and delay did act


def test_cpp_engine_uses_generated_kernels_like_python(intelledex):
    fast = intelledex.specialized()
    if not any(fast._kernels()):
        pytest.skip("no generated kernels for this robot")
    ref = tr.thesis_motion(robot=intelledex)
    a, _, b, _ = run_both(fast, lambda: ct.ComputedTorque(fast, W10**2, 2 * W10), ref,
                          duration=1.0)
    assert_same_run(a, b)
    generic = simulate(intelledex, ct.ComputedTorque(intelledex, W10**2, 2 * W10), ref,
                       duration=1.0, engine="cpp")
    np.testing.assert_allclose(b.q, generic.q, rtol=0, atol=1e-9)


def test_engine_auto_picks_cpp_for_builtin_controllers(intelledex):
    ref = tr.thesis_motion(robot=intelledex)

    class Custom(ct.PDGravity):  # a subclass may override the law: Python loop
        pass

    runs = [
        (ct.ComputedTorque(intelledex, 100.0, 20.0), {}, "cpp"),
        (None, {}, "cpp"),
        (ct.PDGravity(intelledex, 100.0, 10.0), {"integrator": "euler"}, "cpp"),
        (ct.ComputedTorque(intelledex, 100.0, 20.0), {"integrator": "rk45"}, "python"),
        (Custom(intelledex, 100.0, 10.0), {}, "python"),
        (lambda t, q, qd, r: np.zeros(6), {}, "python"),
    ]
    for ctrl, kwargs, engine in runs:
        res = simulate(intelledex, ctrl, ref, duration=0.02, **kwargs)
        assert res.stats["engine"] == engine, (ctrl, kwargs)
    res = simulate(intelledex, ct.PDGravity(intelledex, 1.0, 1.0),
                   lambda t: (np.zeros(6), np.zeros(6), np.zeros(6)), duration=0.02)
    assert res.stats["engine"] == "python"  # a reference without sample(ts)


@pytest.mark.parametrize("kwargs, match", [
    ({"integrator": "rk45"}, "rk45"),
    ({"controller": lambda t, q, qd, r: np.zeros(6)}, "not one of"),
    ({"controller": "pd", "engine": "fast"}, "engine"),
    ({"reference": lambda t: (np.zeros(6),) * 3, "controller": "pd"}, "sample"),
])
def test_engine_cpp_refuses_what_it_cannot_run(intelledex, kwargs, match):
    kwargs = {"engine": "cpp", **kwargs}
    if kwargs.get("controller") == "pd":
        kwargs["controller"] = ct.PDGravity(intelledex, 1.0, 1.0)
    with pytest.raises(ValueError, match=match):
        simulate(intelledex, duration=0.01, **kwargs)


@pytest.mark.parametrize("engine", ["python", "cpp"])
def test_both_engines_raise_on_divergence_and_pass_progress_errors(intelledex, engine):
    ctrl = ct.ComputedTorque(intelledex, 1e8, 0.0, saturate=False)
    with pytest.raises(SimulationError, match="diverged"):  # (the stops would hold it)
        simulate(intelledex, ctrl, tr.constant(np.full(6, 0.1)), duration=1.0,
                 q0=np.zeros(6), integrator="euler", engine=engine, joint_limits="ignore")

    def stop(t, T):
        if t > 0.1:
            raise KeyError("stop")

    with pytest.raises(KeyError):
        simulate(intelledex, None, None, duration=0.5, progress=stop, engine=engine)
