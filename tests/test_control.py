"""robodyn.control: the control laws against their formulas, built from independent calls."""

import copy
import math

import numpy as np
import pytest

import robodyn
from robodyn import control as ct
from robodyn import trajectories as tr


@pytest.fixture(scope="module")
def robot():
    return robodyn.robots.intelledex_605()


def random_state(rng, n):
    return rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n), rng.uniform(-2.0, 2.0, n)


class Spy:
    """Delegates to a robot and counts the dynamics calls made through it."""

    def __init__(self, robot):
        self._robot = robot
        self.calls = {}

    def __getattr__(self, name):
        attr = getattr(self._robot, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)
        return counted


def test_computed_torque_is_m_times_command_plus_bias(robot, rng):
    n = robot.n
    kp = rng.uniform(10, 100, n)
    kd = rng.uniform(1, 20, n)
    ctrl = ct.ComputedTorque(robot, kp, kd, saturate=False)
    for _ in range(5):
        q, qd, _ = random_state(rng, n)
        qr, qdr, qddr = random_state(rng, n)
        tau = ctrl(0.0, q, qd, (qr, qdr, qddr))
        v = qddr + kp * (qr - q) + kd * (qdr - qd)
        expected = robot.mass_matrix(q) @ v + robot.bias_torques(q, qd)
        np.testing.assert_allclose(tau, expected, rtol=1e-10, atol=1e-10)


def test_computed_torque_makes_exactly_one_inverse_dynamics_call(robot, rng):
    spy = Spy(robot)
    ctrl = ct.ComputedTorque(spy, 100.0, 20.0)
    spy.calls.clear()
    q, qd, _ = random_state(rng, robot.n)
    out = np.empty(robot.n)
    ctrl(0.1, q, qd, random_state(rng, robot.n), out=out)
    assert spy.calls == {"inverse_dynamics": 1}


def test_pd_gravity_and_feedforward_formulas(robot, rng):
    n = robot.n
    kp, kd = 50.0, rng.uniform(1, 5, n)
    pd = ct.PDGravity(robot, kp, kd, saturate=False)
    ff = ct.Feedforward(robot, saturate=False)
    for _ in range(5):
        q, qd, _ = random_state(rng, n)
        ref = random_state(rng, n)
        np.testing.assert_allclose(
            pd(0.0, q, qd, ref),
            kp * (ref[0] - q) + kd * (ref[1] - qd) + robot.gravity_torques(q),
            rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ff(0.0, q, qd, ref), robot.inverse_dynamics(*ref),
                                   rtol=1e-12, atol=1e-12)
    ff_pd = ct.Feedforward(robot, kp=3.0, kd=0.5, saturate=False)
    q, qd, _ = random_state(rng, n)
    ref = random_state(rng, n)
    np.testing.assert_allclose(
        ff_pd(0.0, q, qd, ref),
        robot.inverse_dynamics(*ref) + 3.0 * (ref[0] - q) + 0.5 * (ref[1] - qd),
        rtol=1e-12, atol=1e-12)


def test_reference_may_be_a_tuple_a_trajectory_or_given_at_construction(robot, rng):
    ref = tr.thesis_motion()
    q, qd, _ = random_state(rng, robot.n)
    a = ct.ComputedTorque(robot, 10.0, 2.0)(0.6, q, qd, ref(0.6))
    b = ct.ComputedTorque(robot, 10.0, 2.0)(0.6, q, qd, ref)
    c = ct.ComputedTorque(robot, 10.0, 2.0, reference=ref)(0.6, q, qd)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    with pytest.raises(ValueError, match="needs a reference"):
        ct.PDGravity(robot, 1.0, 1.0)(0.0, q, qd)


def test_controller_uses_its_own_model(robot, rng):
    spec = robot.spec
    for b in spec.bodies:
        b.mass *= 1.1
        b.inertia = np.asarray(b.inertia) * 1.1
    heavier = robodyn.Robot(spec)
    q, qd, _ = random_state(rng, robot.n)
    ref = random_state(rng, robot.n)
    exact = ct.ComputedTorque(robot, 10.0, 2.0, saturate=False)(0.0, q, qd, ref)
    model = ct.ComputedTorque(heavier, 10.0, 2.0, saturate=False)(0.0, q, qd, ref)
    # every term of tau is linear in the mass parameters: a uniform 10 % scale scales tau
    np.testing.assert_allclose(model, 1.1 * exact, rtol=1e-10, atol=1e-10)


def test_saturation_clips_to_the_effort_limits(robot, rng):
    n = robot.n
    lim = np.full(n, 0.5)
    q, qd, _ = random_state(rng, n)
    ref = (q + 1.0, qd, np.zeros(n))
    free = ct.PDGravity(robot, 100.0, 0.0, saturate=False)(0.0, q, qd, ref)
    assert np.all(np.abs(free) > 0.5)
    ctrl = ct.PDGravity(robot, 100.0, 0.0, effort_limits=lim)
    tau = ctrl(0.0, q, qd, ref)
    np.testing.assert_array_equal(tau, np.clip(free, -lim, lim))
    assert ctrl.saturated_calls == 1
    # the robot's own limits by default: the Intelledex URDF's efforts
    default = ct.PDGravity(robot, 1e5, 0.0)
    tau = default(0.0, q, qd, ref)
    np.testing.assert_allclose(np.abs(tau), robot.effort_limits)
    # infinite or non-positive entries mean no limit
    mixed = ct.PDGravity(robot, 100.0, 0.0, effort_limits=[0.5, math.inf, 0.0, 0.5, 0.5, 0.5])
    tau = mixed(0.0, q, qd, ref)
    np.testing.assert_array_equal(tau[[1, 2]], free[[1, 2]])


def test_measurement_noise_is_seeded_and_has_the_requested_spread(robot, rng):
    n = robot.n
    q, qd, _ = random_state(rng, n)
    ref = (q.copy(), qd.copy(), np.zeros(n))
    std = 0.01

    def run(seed):
        ctrl = ct.Feedforward(robot, kp=1.0, kd=0.0, noise_std=std, seed=seed, saturate=False)
        base = robot.inverse_dynamics(*ref)
        # tau = ID(ref) + kp (q_ref - (q + noise)) = ID(ref) - noise
        return np.array([base - ctrl(0.0, q, qd, ref) for _ in range(4000)])

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert abs(np.std(a) / std - 1.0) < 0.05
    assert abs(np.mean(a)) < 5 * std / math.sqrt(a.size)


def test_delay_shows_the_measurement_from_delay_calls_earlier(robot, rng):
    n = robot.n
    ref = (np.zeros(n), np.zeros(n), np.zeros(n))
    states = [random_state(rng, n)[:2] for _ in range(6)]
    plain = ct.PDGravity(robot, 20.0, 3.0, saturate=False)
    delayed = ct.PDGravity(robot, 20.0, 3.0, delay=2, saturate=False)
    want = [plain(0.0, q, qd, ref) for q, qd in states]
    got = [delayed(0.0, q, qd, ref).copy() for q, qd in states]
    np.testing.assert_array_equal(got[0], want[0])  # nothing older yet: the first measurement
    np.testing.assert_array_equal(got[1], want[0])
    for k in range(2, 6):
        np.testing.assert_array_equal(got[k], want[k - 2])
    delayed.reset()
    np.testing.assert_array_equal(delayed(0.0, *states[5], ref), want[5])


def test_out_argument_is_written_and_returned(robot, rng):
    ctrl = ct.ComputedTorque(robot, 10.0, 2.0)
    out = np.empty(robot.n)
    q, qd, _ = random_state(rng, robot.n)
    ref = random_state(rng, robot.n)
    res = ctrl(0.0, q, qd, ref, out=out)
    assert res is out
    np.testing.assert_array_equal(out, ctrl(0.0, q, qd, ref))


@pytest.mark.parametrize("kwargs", [
    {"kp": -1.0, "kd": 1.0},
    {"kp": [1.0, 2.0], "kd": 1.0},
    {"kp": 1.0, "kd": float("nan")},
    {"kp": 1.0, "kd": 1.0, "delay": 1.5},
    {"kp": 1.0, "kd": 1.0, "delay": -1},
    {"kp": 1.0, "kd": 1.0, "noise_std": -0.1},
    {"kp": 1.0, "kd": 1.0, "effort_limits": [1.0, 2.0]},
])
def test_bad_controller_arguments(robot, kwargs):
    with pytest.raises(ValueError):
        ct.ComputedTorque(robot, **kwargs)


def test_wrong_state_shape_is_a_value_error(robot):
    ctrl = ct.ComputedTorque(robot, 1.0, 1.0)
    z = np.zeros(robot.n)
    with pytest.raises(ValueError, match="expected shape"):
        ctrl(0.0, np.zeros(3), z, (z, z, z))


def test_pd_gains_scale_with_the_joint_inertias(robot):
    q = np.array([0.1, 1.0, 0.2, 0.3, 0.4, 0.5])
    kp, kd = ct.pd_gains(robot, q, bandwidth_hz=2.0, damping=0.7)
    m = np.diag(robot.mass_matrix(q))
    w = 2 * math.pi * 2.0
    np.testing.assert_allclose(kp, m * w * w, rtol=1e-14)
    np.testing.assert_allclose(kd, 2 * 0.7 * m * w, rtol=1e-14)
    with pytest.raises(ValueError):
        ct.pd_gains(robot, q, bandwidth_hz=0.0)


def test_spec_copy_helper_does_not_touch_the_original(robot):
    before = copy.deepcopy(robot.spec)
    spec = robot.spec
    spec.bodies[0].mass = 123.0
    assert robot.spec.bodies[0].mass == before.bodies[0].mass


@pytest.mark.parametrize("make", [
    lambda n: np.zeros(n, dtype=np.int64),   # would be truncated silently
    lambda n: np.zeros(n, dtype=np.float32),  # would be rounded silently
    lambda n: np.zeros(1),                    # would be broadcast
    lambda n: [0.0] * n,                      # not an array
])
def test_out_of_another_dtype_or_shape_is_a_value_error(robot, rng, make):
    ctrl = ct.ComputedTorque(robot, 10.0, 2.0)
    q, qd, _ = random_state(rng, robot.n)
    ref = random_state(rng, robot.n)
    out = make(robot.n)
    with pytest.raises(ValueError, match="out"):
        ctrl(0.0, q, qd, ref, out=out)


ARGS = ("q", "qd", "q_ref", "qd_ref", "qdd_ref")


@pytest.mark.parametrize("value", [math.nan, math.inf])
@pytest.mark.parametrize("which", ARGS)
@pytest.mark.parametrize("make", [
    lambda r: ct.ComputedTorque(r),
    lambda r: ct.PDGravity(r, 10.0, 2.0),
    lambda r: ct.Feedforward(r),                 # no feedback: q, qd unused, still checked
    lambda r: ct.Feedforward(r, 10.0, 2.0),
    lambda r: ct.PDGravity(r, 10.0, 2.0, noise_std=0.01, delay=2, seed=1),
    lambda r: ct.AdaptiveComputedTorque(r, 5.0, 10.0),
], ids=["computed_torque", "pd_gravity", "feedforward", "feedforward_feedback",
        "pd_gravity_noise_delay", "adaptive"])
def test_non_finite_measurement_or_reference_is_a_value_error_naming_it(robot, rng, make,
                                                                        which, value):
    """A NaN or inf in the measured state or the reference is a ValueError naming the
    argument, from the checked call and from step() (the loops' entry point), before the
    torque is written or the call counted; never a silent NaN torque (PDGravity and
    Feedforward computed one)."""
    n = robot.n
    ctrl = make(robot)
    args = dict(zip(ARGS, [*random_state(rng, n), *random_state(rng, n)]))
    args[which] = args[which].copy()
    args[which][2] = value
    tau = np.full(n, 7.0)
    with pytest.raises(ValueError, match=rf"\b{which}\b.*(NaN|finite)"):
        ctrl(0.0, args["q"], args["qd"], (args["q_ref"], args["qd_ref"], args["qdd_ref"]),
             out=tau)
    with pytest.raises(ValueError, match=rf"\b{which}\b.*(NaN|finite)"):
        ctrl.step(0.0, *(args[k] for k in ARGS), tau)
    assert np.all(tau == 7.0) and ctrl.calls == 0
    # the same controller then works on finite input
    args[which][2] = 0.1
    assert np.all(np.isfinite(ctrl.step(0.0, *(args[k] for k in ARGS), tau)))


def _controller_state(ctrl):
    """Everything a call may change: the noise generator, the measurement ring, the counters
    and (adaptive) the estimate and the time of its last update."""
    return (repr(ctrl.rng.bit_generator.state), ctrl._ring.tobytes(), ctrl.calls,
            ctrl.saturated_calls, getattr(ctrl, "estimate", np.empty(0)).tobytes(),
            getattr(ctrl, "_t_last", None))


@pytest.mark.parametrize("which", ARGS)
@pytest.mark.parametrize("make", [
    lambda r: ct.PDGravity(r, 10.0, 2.0, noise_std=0.01, delay=2, seed=1),
    lambda r: ct.ComputedTorque(r, velocity_noise_std=0.05, seed=2),
    lambda r: ct.Feedforward(r, noise_std=0.01, velocity_noise_std=0.02, seed=3),
    lambda r: ct.AdaptiveComputedTorque(r, 5.0, 10.0, noise_std=0.01, delay=1, seed=4),
], ids=["pd_gravity_noise_delay", "computed_torque_velocity_noise", "feedforward_noise",
        "adaptive_noise_delay"])
def test_refused_call_leaves_a_noisy_controller_untouched(robot, rng, make, which):
    """A call refused for bad input (a NaN in the state or the reference) changes nothing:
    not the noise generator (it drew the call's noise before the input was checked), the
    measurement ring, the counters or the estimate; so the calls after it see exactly the
    noise and torques of a controller that never saw the bad call."""
    n = robot.n
    calls = [dict(zip(ARGS, [*random_state(rng, n), *random_state(rng, n)])) for _ in range(4)]
    ctrl, clean = make(robot), make(robot)
    tau, tau_clean = np.empty(n), np.empty(n)
    for k, args in enumerate(calls):
        if k == 2:
            before = _controller_state(ctrl)
            bad = dict(args, **{which: args[which].copy()})
            bad[which][1] = math.nan
            for call in (lambda: ctrl.step(0.01 * k, *(bad[a] for a in ARGS), tau),
                         lambda: ctrl(0.01 * k, bad["q"], bad["qd"],
                                      (bad["q_ref"], bad["qd_ref"], bad["qdd_ref"]), out=tau)):
                with pytest.raises(ValueError, match=rf"\b{which}\b"):
                    call()
                assert _controller_state(ctrl) == before
        ctrl.step(0.01 * k, *(args[a] for a in ARGS), tau)
        clean.step(0.01 * k, *(args[a] for a in ARGS), tau_clean)
        assert tau.tobytes() == tau_clean.tobytes()
    assert _controller_state(ctrl) == _controller_state(clean)


class _NanAfter(tr.Trajectory):
    """A trajectory whose position goes NaN after t = 0.05 s (a bad reference source)."""

    def __init__(self, n):
        self.n, self.duration = n, 0.1

    def _eval(self, ts):
        Q = np.zeros((ts.shape[0], self.n)) + 0.2
        Q[ts > 0.05, 1] = np.nan
        return Q, np.zeros_like(Q), np.zeros_like(Q)


@pytest.mark.parametrize("engine", ["python", "cpp"])
@pytest.mark.parametrize("make", [lambda r: ct.PDGravity(r, 50.0, 5.0),
                                  lambda r: ct.Feedforward(r),
                                  lambda r: ct.ComputedTorque(r)])
def test_non_finite_reference_in_a_simulation_is_a_value_error(robot, engine, make):
    """Both loops refuse a reference that goes NaN with a ValueError naming it, rather than
    a SimulationError blaming the plant ("diverged")."""
    with pytest.raises(ValueError, match=r"q_ref|reference"):
        robodyn.simulate(robot, make(robot), _NanAfter(robot.n), duration=0.1,
                         engine=engine, q0=np.full(robot.n, 0.2))


@pytest.mark.parametrize("limits", [math.nan, [1.0, math.nan, 3.0, 4.0, 5.0, 6.0],
                                    np.full(6, -math.nan)])
def test_nan_effort_limit_is_a_value_error(robot, limits):
    """effort_bounds reads inf and non-positive entries as "no bound" (a URDF's effort="0");
    a NaN is neither: it is refused with the joint named, not read as no bound."""
    with pytest.raises(ValueError, match=r"effort_limits.*NaN.*joint"):
        ct.effort_bounds(limits, robot.n)
    for cls in (ct.ComputedTorque, ct.PDGravity):
        with pytest.raises(ValueError, match=r"effort_limits.*NaN"):
            cls(robot, 1.0, 1.0, effort_limits=limits)
    # what is not a bound stays allowed
    np.testing.assert_array_equal(ct.effort_bounds([0.0, -1.0, math.inf, 2.0, 3.0, 4.0], 6),
                                  [math.inf, math.inf, math.inf, 2.0, 3.0, 4.0])


@pytest.mark.parametrize("make", [lambda r: ct.ComputedTorque(r), lambda r: ct.PDGravity(r, 1, 1),
                                  lambda r: ct.Feedforward(r),
                                  lambda r: ct.AdaptiveComputedTorque(r, 1.0, 1.0)])
def test_controller_of_a_floating_robot_is_refused_naming_the_robot(make):
    """The laws are joint-space laws for fixed-base robots: building one on a floating robot
    is a ValueError saying so (it was a shape error about a q the user never passed)."""
    from reference import random_models as R

    robot = robodyn.Robot(R.random_floating(2, np.random.default_rng(3)))
    with pytest.raises(ValueError, match=r"^robot: .*free-floating base.*fixed-base"):
        make(robot)
