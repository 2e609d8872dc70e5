"""Regression tests of the adversarial review (issue 13): each failed on the main of that day.

What the API takes in: load_urdf refuses devices, FIFOs and directories and caps the size
read; an ``out=`` sharing memory with an input is computed through a temporary; overflowing
model constants are refused with the link named and huge gravity is kept; the smaller ones
(controller shape, tiny control rate, MemoryError, complex lists, generated forward dynamics
at an overflowing state).
"""

import os
import time
import warnings

import numpy as np
import pytest

import robodyn
from reference import random_models as rm
from _hardening import chain_urdf, run_python


# ------------------------------------------------------------------ 2. load_urdf: what it reads


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_refused(path):
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    t0 = time.perf_counter()
    with pytest.raises(robodyn.urdf.URDFError, match="not a regular file"):
        robodyn.load_urdf(path)
    assert time.perf_counter() - t0 < 1.0


def test_fifo_and_directory_refused(tmp_path):
    fifo = tmp_path / "pipe.urdf"
    os.mkfifo(fifo)
    # in a subprocess with a timeout: on the old main this blocked forever
    res = run_python(f"""
        import robodyn
        try:
            robodyn.load_urdf({str(fifo)!r})
        except ValueError as e:
            print("refused:", e)
        """, timeout=20)
    assert "refused:" in res.stdout and "not a regular file" in res.stdout, res.stderr
    with pytest.raises(robodyn.urdf.URDFError, match="not a regular file"):
        robodyn.load_urdf(tmp_path)


def test_size_limit(tmp_path):
    text = chain_urdf(3)
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    assert robodyn.urdf.MAX_BYTES == 64 * 1024 * 1024
    assert robodyn.load_urdf(path).n == 3
    with pytest.raises(robodyn.urdf.URDFError, match=r"exceed the limit of 100\b"):
        robodyn.load_urdf(path, max_bytes=100)
    with pytest.raises(robodyn.urdf.URDFError, match="exceed the limit"):
        robodyn.load_urdf(text, max_bytes=100)
    with pytest.raises(robodyn.urdf.URDFError, match="exceed the limit"):
        robodyn.load_urdf(text.encode(), max_bytes=100)
    assert robodyn.load_urdf(path, max_bytes=len(text)).n == 3
    with pytest.raises(ValueError, match="max_bytes"):
        robodyn.load_urdf(path, max_bytes=0)
    # a sparse file just over the default limit: refused from its size, nothing read
    big = tmp_path / "big.urdf"
    with open(big, "wb") as f:
        f.truncate(robodyn.urdf.MAX_BYTES + 1)
    with pytest.raises(robodyn.urdf.URDFError, match="exceed the limit"):
        robodyn.load_urdf(big)


# ------------------------------------------------------------------ 3. out= overlapping inputs


@pytest.fixture(scope="module")
def arm():
    return robodyn.Robot(rm.random_chain(6, np.random.default_rng(3)))


def test_batch_out_shifted_by_one_row(arm):
    rng = np.random.default_rng(0)
    B = rng.uniform(-1, 1, (41, 6))
    QD, QDD = rng.uniform(-1, 1, (2, 40, 6))
    want = arm.inverse_dynamics(B[:-1].copy(), QD, QDD)
    got = arm.inverse_dynamics(B[:-1], QD, QDD, out=B[1:])
    assert got.base is B or got is B[1:] or np.shares_memory(got, B)
    np.testing.assert_allclose(B[1:], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shift", [-5, -3, -1, 0, 1, 3, 5])
@pytest.mark.parametrize("method", ["rnea", "kane"])
def test_single_out_partly_over_qdd(arm, shift, method):
    rng = np.random.default_rng(1)
    buf = rng.uniform(-1, 1, 40)
    q, qd = rng.uniform(-1, 1, (2, 6))
    start = 20
    qdd = buf[start:start + 6]
    want = arm.inverse_dynamics(q, qd, qdd.copy(), method=method)
    arm.inverse_dynamics(q, qd, qdd, method=method, out=buf[start + shift:start + shift + 6])
    np.testing.assert_allclose(buf[start + shift:start + shift + 6], want, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("shift", [-3, 0, 2])
def test_forward_dynamics_and_bias_out_overlap(arm, shift):
    rng = np.random.default_rng(2)
    buf = rng.uniform(-1, 1, 30)
    q = buf[10:16]
    qd = rng.uniform(-1, 1, 6)
    tau = rng.uniform(-1, 1, 6)
    want_fd = arm.forward_dynamics(q.copy(), qd, tau)
    arm.forward_dynamics(q, qd, tau, out=buf[10 + shift:16 + shift])
    np.testing.assert_allclose(buf[10 + shift:16 + shift], want_fd, rtol=1e-11, atol=1e-12)
    buf2 = rng.uniform(-1, 1, 30)
    qd2 = buf2[10:16]
    want_b = arm.bias_torques(q.copy(), qd2.copy())
    arm.bias_torques(q.copy(), qd2, out=buf2[10 + shift:16 + shift])
    np.testing.assert_allclose(buf2[10 + shift:16 + shift], want_b, rtol=1e-12, atol=1e-12)


def test_mass_matrix_out_over_q(arm):
    buf = np.zeros(36)
    buf[:6] = np.linspace(-1, 1, 6)
    want = arm.mass_matrix(buf[:6].copy())
    arm.mass_matrix(buf[:6], out=buf.reshape(6, 6))
    np.testing.assert_allclose(buf.reshape(6, 6), want, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ 5. overflow


def test_overflowing_inertial_origin_refused_with_link_named():
    text = chain_urdf(3).replace('<origin xyz="0 0 0.05"/><mass value="1"/>',
                                 '<origin xyz="0 0 1e160"/><mass value="1"/>', 1)
    with pytest.raises(ValueError, match=r"'l1'.*overflow"):
        robodyn.load_urdf(text)


def test_huge_gravity_kept_by_newton_euler_and_kane():
    r = robodyn.load_urdf(chain_urdf(3))
    q = np.array([0.3, -0.5, 0.8])
    z = np.zeros(3)
    g1 = r.inverse_dynamics(q, z, z)
    for scale in (1e153, 1e155, 1e200):
        r.gravity = [0.0, 0.0, -9.81 * scale / 9.81]
        tau_rnea = r.inverse_dynamics(q, z, z)
        tau_kane = r.inverse_dynamics(q, z, z, method="kane")
        np.testing.assert_allclose(tau_rnea, g1 * scale / 9.81, rtol=1e-9, atol=1e-12 * scale)
        np.testing.assert_allclose(tau_kane, tau_rnea, rtol=1e-9, atol=1e-12 * scale)
        assert np.abs(tau_rnea).max() > 1e-3 * scale  # not dropped to zero
    assert r.gravity[2] == -1e200


# ------------------------------------------------------------------ 8. smaller ones


def test_controller_output_shape_change_is_an_error():
    r = robodyn.robots.stanford_arm()
    calls = []

    def ctrl(t, q, qd, ref):
        calls.append(t)
        return np.zeros(6) if len(calls) < 3 else 5.0

    with pytest.raises(ValueError, match=r"controller: returned shape \(\)"):
        robodyn.simulate(r, controller=ctrl, duration=0.01, dt=1e-3)
    for bad in ((1,), (1, 6)):
        calls.clear()

        def ctrl2(t, q, qd, ref, bad=bad):
            calls.append(t)
            return np.zeros(6) if len(calls) < 3 else np.ones(bad)

        with pytest.raises(ValueError, match="controller: returned shape"):
            robodyn.simulate(r, controller=ctrl2, duration=0.01, dt=1e-3)


def test_tiny_control_rate_refused():
    r = robodyn.robots.stanford_arm()
    ctrl = robodyn.control.ComputedTorque(r, kp=100.0, kd=20.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="control_rate"):
            robodyn.simulate(r, controller=ctrl, duration=0.01, control_rate=1e-320)


def test_complex_list_refused_like_complex_array(arm):
    z = [0.1 + 1j] * 6
    for arg in (z, np.array(z)):
        with pytest.raises(ValueError, match="^q: .*(complex|kind 'c')"):
            arm.inverse_dynamics(arg, np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match="^qd: "):
        arm.bias_torques(np.zeros(6), [[0.5j] * 6])


def test_memory_error_while_converting_stays_memory_error(arm):
    class Huge:
        def __array__(self, dtype=None, copy=None):
            raise MemoryError("no room")

    with pytest.raises(MemoryError):
        arm.inverse_dynamics(Huge(), np.zeros(6), np.zeros(6))
    with pytest.raises(MemoryError):
        arm.mass_matrix(Huge())


def test_specialized_forward_dynamics_overflow_matches_generic():
    r = robodyn.robots.stanford_arm()
    special = r.specialized()
    q = np.full(6, 0.3)
    qd = np.full(6, 1e200)
    tau = np.zeros(6)

    def outcome(robot):
        try:
            with np.errstate(all="ignore"):
                return ("ok", robot.forward_dynamics(q, qd, tau))
        except ValueError as e:
            return ("error", str(e))

    a, b = outcome(r), outcome(special)
    assert a[0] == b[0]
    if a[0] == "ok":
        np.testing.assert_array_equal(np.isfinite(a[1]), np.isfinite(b[1]))
    # and where everything is finite the generated code still runs (and agrees)
    qd = np.full(6, 0.5)
    np.testing.assert_allclose(special.forward_dynamics(q, qd, tau),
                               r.forward_dynamics(q, qd, tau), rtol=1e-9, atol=1e-12)
