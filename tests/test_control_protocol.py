"""One implementation of each control law and of the fixed-step integrators, and the public
protocol by which a controller describes itself to robodyn.simulate's C++ loop
(robodyn.control.Controller.law_spec, draw_noise, ideal_measurement)."""

import numpy as np
import pytest

import robodyn
from robodyn import _core
from robodyn import control as ct
from robodyn import trajectories as tr
from robodyn.sim.simulation import FixedStep, simulate


@pytest.fixture(scope="module")
def robot():
    return robodyn.robots.intelledex_605()


def test_builtin_controllers_describe_themselves(robot):
    limits = np.full(6, 50.0)
    cases = [(ct.ComputedTorque(robot, 100.0, 20.0, method="kane", effort_limits=limits),
              "computed_torque", True, "kane"),
             (ct.PDGravity(robot, 10.0, 2.0, saturate=False), "pd_gravity", True, "rnea"),
             (ct.Feedforward(robot), "feedforward", False, "rnea"),
             (ct.Feedforward(robot, kp=5.0), "feedforward", True, "rnea")]
    for ctrl, law, feedback, method in cases:
        spec = ctrl.law_spec()
        assert isinstance(spec, ct.LawSpec)
        assert spec.law == law and spec.law in ct.LAWS and spec.robot is robot
        assert spec.feedback is feedback and spec.method == method
        np.testing.assert_array_equal(spec.kp, ctrl.kp)
        np.testing.assert_array_equal(spec.kd, ctrl.kd)
        assert spec.delay == 0 and spec.ring is None and ctrl.ideal_measurement
    assert cases[1][0].law_spec().limit is None
    np.testing.assert_array_equal(cases[0][0].law_spec().limit, limits)
    noisy = ct.ComputedTorque(robot, noise_std=1e-3, delay=2)
    spec = noisy.law_spec()
    assert not noisy.ideal_measurement and spec.delay == 2 and spec.ring.shape == (3, 2, 6)


def test_subclasses_and_other_laws_run_in_python_unless_they_declare_their_law(robot):
    ref = tr.thesis_motion(robot=robot)

    class Tweaked(ct.ComputedTorque):  # inherits no description: it may change the law
        pass

    class Declared(ct.ComputedTorque):  # says it is the computed-torque law
        LAW = "computed_torque"

    adaptive = ct.AdaptiveComputedTorque(robot, lam=10.0, kd=5.0)
    assert Tweaked(robot).law_spec() is None and adaptive.law_spec() is None
    assert ct.Controller.law_spec(adaptive) is None
    assert Declared(robot).law_spec().law == "computed_torque"
    runs = {}
    for cls in (Tweaked, Declared):
        runs[cls] = simulate(robot, cls(robot, 100.0, 20.0), ref, duration=0.05)
    assert runs[Tweaked].stats["engine"] == "python"
    assert runs[Declared].stats["engine"] == "cpp"
    scale = float(np.max(np.abs(runs[Tweaked].tau)))
    np.testing.assert_allclose(runs[Declared].tau, runs[Tweaked].tau, rtol=0,
                               atol=1e-12 * scale)


def test_draw_noise_is_what_the_calls_would_draw(robot, rng):
    for options in ({"noise_std": 1e-3}, {"velocity_noise_std": 2e-3},
                    {"noise_std": 1e-3, "velocity_noise_std": 2e-3}):
        a = ct.PDGravity(robot, 10.0, 1.0, seed=3, saturate=False, delay=0, **options)
        b = ct.PDGravity(robot, 10.0, 1.0, seed=3, saturate=False, delay=0, **options)
        nq, nqd = a.draw_noise(5)
        assert (nq is None) == ("noise_std" not in options)
        assert (nqd is None) == ("velocity_noise_std" not in options)
        # b's calls see q + noise, qd + noise: its law's input shows the draws
        q, qd = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
        zero = np.zeros(6)
        for k in range(5):
            b.step(0.0, q, qd, zero, zero, zero, np.empty(6))
            seen_q, seen_qd = b._slots[0]
            np.testing.assert_allclose(seen_q - q, zero if nq is None else nq[k], atol=1e-15)
            np.testing.assert_allclose(seen_qd - qd, zero if nqd is None else nqd[k],
                                       atol=1e-15)
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
    quiet = ct.PDGravity(robot, 1.0, 1.0)
    assert quiet.draw_noise(4) == (None, None)


def test_law_entry_refuses_bad_buffers_with_a_value_error(robot):
    ctrl = ct.ComputedTorque(robot)
    z = np.zeros(6)
    ok = dict(q=z, qd=z, q_ref=z, qd_ref=z, qdd_ref=z, tau=np.empty(6), v=np.empty(6),
              g=np.empty(6))
    args = lambda **kw: (1, ctrl.kp, ctrl.kd, True, *{**ok, **kw}.values(), ctrl._id, None)
    _core._control_law(*args())
    for bad, match in ((dict(q=np.zeros(5)), "q"), (dict(tau=np.zeros(12)[::2]), "tau"),
                       (dict(qd=np.zeros(6, dtype=np.float32)), "qd"),
                       (dict(v=[0.0] * 6), "v")):
        with pytest.raises(ValueError, match=match):
            _core._control_law(*args(**bad))
    frozen = np.empty(6)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="tau"):
        _core._control_law(*args(tau=frozen))
    with pytest.raises(ValueError, match="law"):
        _core._control_law(7, *args()[1:])
    # an error raised by the model's method reaches the caller as itself
    def broken(q, qd, qdd, out):
        raise ZeroDivisionError("model")
    with pytest.raises(ZeroDivisionError):
        _core._control_law(*args()[:-2], broken, None)
    # the user-facing call converts what it is given (lists, strided arrays, scalars)
    tau = ctrl(0.0, [0.1] * 6, np.zeros(12)[::2], ref=([0.2] * 6, 0.0, np.zeros(6)))
    want = ctrl(0.0, np.full(6, 0.1), np.zeros(6), ref=(np.full(6, 0.2), z, z))
    np.testing.assert_array_equal(tau, want)
    out = np.zeros(12)
    assert ctrl(0.0, z, z, ref=(z, z, z), out=out[::2]) is not None
    np.testing.assert_array_equal(out[::2], ctrl(0.0, z, z, ref=(z, z, z)))


def oscillator_fd(q, qd, tau, method=None, out=None):
    """qdd = tau - 4 q - 0.1 qd, elementwise: a damped oscillator per entry."""
    np.subtract(tau, 4.0 * q + 0.1 * qd, out=out)
    return out


class Oscillator:
    n = 3


def reference_rk4(y, h, f):
    """Classical RK4 written out (Butcher's tableau), independent of integrator.hpp."""
    k1 = f(y)
    k2 = f(y + 0.5 * h * k1)
    k3 = f(y + 0.5 * h * k2)
    k4 = f(y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def test_fixed_step_is_classical_rk4_and_symplectic_euler():
    tau = np.array([0.5, -1.0, 0.0])

    def f(y):
        q, qd = y[:3], y[3:]
        return np.concatenate([qd, tau - 4.0 * q - 0.1 * qd])

    y0 = np.array([0.3, -0.2, 1.0, 0.5, 0.0, -1.0])
    for h in (0.1, 0.01):
        st = FixedStep(Oscillator(), "rk4", tau=tau.copy(), fd=oscillator_fd)
        st.y[:] = y0
        st.step(h)
        np.testing.assert_allclose(st.y, reference_rk4(y0, h, f), rtol=1e-14, atol=1e-15)
        eu = FixedStep(Oscillator(), "euler", tau=tau.copy(), fd=oscillator_fd)
        eu.y[:] = y0
        eu.step(h)
        qd1 = y0[3:] + h * (tau - 4.0 * y0[:3] - 0.1 * y0[3:])
        np.testing.assert_allclose(eu.qd, qd1, rtol=1e-15, atol=1e-16)
        np.testing.assert_allclose(eu.q, y0[:3] + h * qd1, rtol=1e-15, atol=1e-16)
    # stage control is called before stages 2-4 at t + h/2, t + h/2, t + h
    seen = []
    st = FixedStep(Oscillator(), "rk4", tau=tau.copy(), fd=oscillator_fd)
    st.step(0.2, 1.0, lambda t, q, qd: seen.append(t))
    assert seen == [1.1, 1.1, 1.2]
    # the state after a second of 1 ms steps against the exact solution of one oscillator
    st = FixedStep(Oscillator(), "rk4", tau=np.zeros(3), fd=oscillator_fd)
    st.y[:] = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    for _ in range(1000):
        st.step(1e-3)
    wd = np.sqrt(4.0 - 0.05 ** 2)
    exact = np.exp(-0.05) * (np.cos(wd) + 0.05 / wd * np.sin(wd))
    assert abs(st.q[0] - exact) < 1e-11


def test_fixed_step_refuses_views_that_are_not_its_workspace():
    st = FixedStep(Oscillator(), "rk4", fd=oscillator_fd)
    other = tuple(np.zeros(3) for _ in range(4))
    with pytest.raises(ValueError, match="views"):
        _core._fixed_step(st.Z, st._tmp, other, st.v_s, st.a_s, st.tau, 0.1, True,
                          oscillator_fd, "aba")
    with pytest.raises(ValueError, match="Z"):
        _core._fixed_step(np.zeros((4, 8)), st._tmp, st.q_s, st.v_s, st.a_s, st.tau, 0.1,
                          True, oscillator_fd, "aba")


def test_python_and_cpp_loops_share_the_law_and_step(robot):
    # the same controller object type in both loops, with saturation, noise and delay: the
    # runs agree to rounding (the reference is sampled differently: one batch against calls)
    ref = tr.thesis_motion(robot=robot)
    make = lambda: ct.ComputedTorque(robot, 400.0, 40.0, effort_limits=np.full(6, 30.0),
                                     noise_std=1e-5, delay=1, seed=2)
    a = simulate(robot, make(), ref, duration=0.3, engine="python")
    b = simulate(robot, make(), ref, duration=0.3, engine="cpp")
    assert a.saturated_calls == b.saturated_calls > 0
    scale = max(1.0, float(np.max(np.abs(a.tau))))
    np.testing.assert_allclose(b.tau, a.tau, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(b.q, a.q, rtol=0, atol=1e-12)


def test_joint_stops_put_joints_back_and_count_them():
    # written out per joint: beyond a bound -> on the bound, outward velocity * -restitution
    lower = np.array([-1.0, -np.inf, 0.0, -2.0])
    upper = np.array([1.0, 0.5, np.inf, 2.0])
    q = np.array([1.25, 0.75, -0.5, 0.0])
    qd = np.array([2.0, -1.0, -3.0, 5.0])
    for stops in (True, False):
        for e in (0.0, 0.5):
            qq, vv = q.copy(), qd.copy()
            hits, excess = np.zeros(4), np.zeros(4)
            _core._joint_stops(qq, vv, lower, upper, stops, e, hits, excess)
            np.testing.assert_array_equal(hits, [1, 1, 1, 0])
            np.testing.assert_allclose(excess, [0.25, 0.25, 0.5, 0.0], rtol=0, atol=1e-15)
            if stops:
                np.testing.assert_array_equal(qq, [1.0, 0.5, 0.0, 0.0])
                # joint 1 moves inward already (qd < 0 at the upper bound): kept
                np.testing.assert_array_equal(vv, [-e * 2.0, -1.0, e * 3.0, 5.0])
            else:
                np.testing.assert_array_equal(qq, q)
                np.testing.assert_array_equal(vv, qd)
    with pytest.raises(ValueError, match="hits"):
        _core._joint_stops(q.copy(), qd.copy(), lower, upper, True, 0.0, np.zeros(3),
                           np.zeros(4))


def test_measure_refuses_a_ring_of_another_size_even_for_the_largest_delay():
    # (delay + 1) * 2 counted in int wrapped to 0 for delay = 2**31 - 1: an empty ring passed
    # the size check and the sample was written past its end
    q = np.zeros(6)
    for delay in (2**31 - 1, 2**30, 3):
        with pytest.raises(ValueError, match="ring"):
            _core._measure(np.zeros(0), 5, delay, q, q, None, None)
    ring = np.zeros((4, 2, 6))
    assert _core._measure(ring, 5, 3, q + 1.0, q, None, None) == 2
    np.testing.assert_array_equal(ring[1, 0], 1.0)
