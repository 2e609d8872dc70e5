"""The literal transcription of Nie (1988), Ch. III (robodyn/published/kane_nie.py).

Checked against the independent NumPy Featherstone reference (RNEA, CRBA, ABA), against
recorded Robotics Toolbox torques of the Stanford arm, against the thesis' own hand-written
direction cosines of the Intelledex 605, and its operation count against a loop-by-loop tally
of the published listing.
"""

import math

import numpy as np
import pytest

from reference import featherstone as fs
from robodyn.codegen.published import kane_nie as kn
from reference import random_models as rm
from robodyn.codegen.published.opfloat import OpCounter, OpFloat, count_ops

DEG = math.pi / 180.0


def _rows(table):
    return [dict(theta=theta, d=d, a=a, alpha=alpha, joint=joint, mass=m,
                 com=np.array(com, dtype=float), inertia=np.diag(inertia))
            for joint, theta, d, a, alpha, m, com, inertia in table]


# robots.md, Table 3 of the thesis: joint, theta offset, d, a, alpha, mass, COM, Ixx Iyy Izz
INTELLEDEX = [
    ("revolute", 0, 0, 0, 90 * DEG, 18.1440, (0, -0.1397, 0.1588), (0.1800, 0.0450, 0.1350)),
    ("revolute", 0, 0, 0, -90 * DEG, 12.2472, (0, -0.0127, 0), (0.0300, 0.0300, 0.0232)),
    ("revolute", 0, 0, 0.2794, 0, 8.6184, (-0.1794, 0, 0), (0.1041, 0.1041, 0.0260)),
    ("revolute", 0, 0, 0.3226, 0, 4.9896, (-0.1956, 0, 0), (0.0605, 0.0605, 0.0260)),
    ("revolute", 0, 0, 0, -90 * DEG, 1.3608, (0, 0, 0), (0.0048, 0.0048, 0.0035)),
    ("revolute", 0, 0, 0, 0, 0.9072, (0, 0, 0), (0.0040, 0.0040, 0.0030)),
]


def _stanford(toolbox_com=False):
    """robots.md Stanford arm; toolbox_com=True uses the Toolbox's verbatim COM values."""
    c2, c3, c5, c6 = (-1.054, -6.447, 0.566, 1.554) if toolbox_com else \
        (-0.1054, -0.6447, 0.0566, 0.1554)
    return [
        ("revolute", 0, 0.412, 0, -90 * DEG, 9.29, (0, 0.0175, -0.1105), (0.276, 0.255, 0.071)),
        ("revolute", 0, 0.154, 0, 90 * DEG, 5.01, (0, c2, 0), (0.108, 0.018, 0.100)),
        ("prismatic", -90 * DEG, 0, 0.0203, 0, 4.25, (0, 0, c3), (2.51, 2.51, 0.006)),
        ("revolute", 0, 0, 0, -90 * DEG, 1.08, (0, 0.092, -0.054), (0.002, 0.001, 0.001)),
        ("revolute", 0, 0, 0, 90 * DEG, 0.63, (0, c5, 0.003), (0.003, 0.0004, 0.0)),
        ("revolute", 0, 0, 0, 0, 0.51, (0, 0, c6), (0.013, 0.013, 0.0003)),
    ]


STANFORD_JM = [0.953, 2.193, 0.782, 0.106, 0.097, 0.020]


def intelledex_spec():
    # gravity 9.81 m/s^2 along +y of DH frame 0 (the thesis' n_2 points down)
    return rm.dh_to_spec(_rows(INTELLEDEX), gravity=(0.0, 9.81, 0.0))


def stanford_spec(toolbox_com=False, jm=False):
    rows = _rows(_stanford(toolbox_com))
    if jm:
        for row, j in zip(rows, STANFORD_JM):
            row["armature"] = j
    return rm.dh_to_spec(rows, gravity=(0.0, 0.0, -9.81))


def _close(a, b, rtol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


# ---------------------------------------------------------------- against Newton-Euler

@pytest.mark.parametrize("joint_types", ["revolute", "prismatic", "mixed"])
@pytest.mark.parametrize("axes", ["random", "z"])
def test_random_chains_match_rnea_and_aba(joint_types, axes):
    rng = np.random.default_rng({"revolute": 1, "prismatic": 2, "mixed": 3}[joint_types]
                                + (10 if axes == "z" else 0))
    for n in range(1, 13):
        spec = rm.random_chain(n, rng, joint_types, axes)  # armature, damping, friction on
        ch = kn.chain_from_spec(spec)
        for _ in range(2):
            q, qd, qdd = rm.random_state(spec, rng)
            tau = kn.inverse_dynamics(ch, q, qd, qdd)
            _close(tau, fs.rnea(spec, q, qd, qdd))
            _close(kn.forward_dynamics(ch, q, qd, tau), qdd)
            tau2 = rng.standard_normal(n) * 5.0
            _close(kn.forward_dynamics(ch, q, qd, tau2), fs.aba(spec, q, qd, tau2))


def test_kane_terms_are_crba_and_bias():
    rng = np.random.default_rng(7)
    for n in (1, 3, 6, 9):
        spec = rm.random_chain(n, rng, "mixed")
        q, qd, _ = rm.random_state(spec, rng)
        F, Z, Kp = kn.kane_terms(spec, q, qd)
        np.testing.assert_array_equal(F, F.T)  # lower triangle copied, as in the listing
        armature = np.array([b.armature for b in spec.bodies])
        _close(F, fs.crba(spec, q) - np.diag(armature))
        _close(Z - Kp, fs.bias(spec, q, qd))
        _close(-Kp, fs.gravity_torques(spec, q))
        _close(kn.mass_matrix(spec, q), fs.crba(spec, q))
        assert np.all(np.linalg.eigvalsh(F) > 0)


def test_zero_and_general_gravity():
    rng = np.random.default_rng(8)
    spec = rm.random_chain(5, rng, "mixed")
    q, qd, qdd = rm.random_state(spec, rng)
    for g in ([0.0, 0.0, 0.0], [1.0, -2.0, 9.0], [0.0, 0.0, -9.81]):
        spec.gravity = np.array(g)
        _close(kn.inverse_dynamics(spec, q, qd, qdd), fs.rnea(spec, q, qd, qdd))


def test_rejects_non_serial_models():
    spec = rm.random_chain(4, np.random.default_rng(3))
    spec.bodies[3].parent = 1  # a branch: bodies 2 and 3 both on body 1
    with pytest.raises(ValueError, match="serial"):
        kn.chain_from_spec(spec)
    with pytest.raises(ValueError, match="qd"):
        kn.inverse_dynamics(intelledex_spec(), [0] * 6, [0] * 5, [0] * 6)


# ---------------------------------------------------------------- the two named arms

def test_intelledex_frames_are_the_thesis_frames():
    """A^k(q) equals the hand-written direction cosines of AUTOSUB (App. 4), gravity L = 2."""
    ch = kn.chain_from_spec(intelledex_spec())
    assert ch.L == 1 and ch.G == 9.81 and all(ch.principal)
    q = np.array([0.3, 1.1, -0.4, 0.7, -1.3, 2.0])
    c, s = np.cos(q), np.sin(q)
    listing = [
        [[c[0], 0, s[0]], [s[0], 0, -c[0]], [0, 1, 0]],
        [[c[1], 0, -s[1]], [s[1], 0, c[1]], [0, -1, 0]],
        [[c[2], -s[2], 0], [s[2], c[2], 0], [0, 0, 1]],
        [[c[3], -s[3], 0], [s[3], c[3], 0], [0, 0, 1]],
        [[c[4], 0, -s[4]], [s[4], 0, c[4]], [0, -1, 0]],
        [[c[5], -s[5], 0], [s[5], c[5], 0], [0, 0, 1]],
    ]
    for k in range(1, 7):
        A, AD, _ = kn._direction_cosines(ch, k, q[k - 1], 0.5, float)
        np.testing.assert_array_equal(np.array(A, dtype=float), np.array(listing[k - 1]))
        # AD(K,1,J) = -U sin-ish, AD(K,2,J) = U cos-ish: Ad = u dA/dq
        dA = np.array(listing[k - 1], dtype=float)
        np.testing.assert_allclose(np.array(AD, dtype=float)[:2], 0.5 * np.array(
            [-dA[1], dA[0]]), rtol=0, atol=1e-15)


def test_intelledex_matches_rnea():
    spec = intelledex_spec()
    rng = np.random.default_rng(605)
    for _ in range(5):
        q, qd, qdd = rm.random_state(spec, rng)
        tau = kn.inverse_dynamics(spec, q, qd, qdd)
        _close(tau, fs.rnea(spec, q, qd, qdd))
        _close(kn.forward_dynamics(spec, q, qd, tau), qdd)


def _thesis_motion(t, T=2.0):
    """robots.md: the AUTOTF test motion (GCRD subroutine), q, u, ud at time t."""
    w = 2 * math.pi / T
    s, sd, sdd = t - math.sin(w * t) / w, 1 - math.cos(w * t), w * math.sin(w * t)
    k = math.pi / (3 * T)
    q = np.full(6, k * s)
    q[1] = math.pi / 2 - k * s / 2
    qd = np.full(6, k * sd)
    qd[1] = -k * sd / 2
    qdd = np.full(6, k * sdd)
    qdd[1] = -k * sdd / 2
    return q, qd, qdd


def test_intelledex_thesis_motion_round_trip():
    """AUTOTF then AUTOQ: integrating the computed torques returns to q(2 s) = pi/3."""
    solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp
    ch = kn.chain_from_spec(intelledex_spec())

    def tau(t):
        return kn.inverse_dynamics(ch, *_thesis_motion(t))

    def rhs(t, x):
        return np.concatenate([x[6:], kn.forward_dynamics(ch, x[:6], x[6:], tau(t))])

    x0 = np.concatenate(_thesis_motion(0.0)[:2])
    np.testing.assert_allclose(x0[:6], [0, math.pi / 2, 0, 0, 0, 0], atol=1e-15)
    # open loop and sensitive (a fixed-step RK4 needs h < 1 ms for 1e-5): adaptive 8th order
    sol = solve_ivp(rhs, (0.0, 2.0), x0, method="DOP853", rtol=1e-10, atol=1e-12)
    assert sol.success
    np.testing.assert_allclose(sol.y[:6, -1], np.full(6, math.pi / 3), rtol=0, atol=1e-5)
    np.testing.assert_allclose(sol.y[6:, -1], 0.0, atol=1e-4)


STANFORD_STATE = ([0.1, 0.2, 0.5, 0.4, 0.5, 0.6], [0.3, -0.2, 0.1, 0.4, -0.5, 0.6],
                  [1.0, -1.0, 0.5, 0.2, -0.3, 0.4])


def test_stanford_matches_robotics_toolbox():
    """robots.md: roboticstoolbox-python 1.5.0, verbatim Toolbox parameters."""
    tau = kn.inverse_dynamics(stanford_spec(toolbox_com=True), *STANFORD_STATE)
    np.testing.assert_allclose(tau, [3.782622693e+00, -1.128483198e+02, 6.662205745e+01,
                                     -8.956655192e-01, -5.837765068e+00, 5.795370715e-04],
                               rtol=1e-9)
    tau = kn.inverse_dynamics(stanford_spec(toolbox_com=True, jm=True), *STANFORD_STATE)
    np.testing.assert_allclose(tau, [4.735623e+00, -1.150413e+02, 6.701306e+01, -8.744655e-01,
                                     -5.866865e+00, 8.579537e-03], rtol=1e-6)


def test_stanford_matches_rnea():
    for spec in (stanford_spec(), stanford_spec(jm=True)):
        ch = kn.chain_from_spec(spec)
        assert ch.L == 2 and ch.G == -9.81 and ch.revolute[2] is False
        rng = np.random.default_rng(1981)
        for _ in range(5):
            q, qd, qdd = rm.random_state(spec, rng)
            q[2] = rng.uniform(0.3048, 1.27)
            tau = kn.inverse_dynamics(ch, q, qd, qdd)
            _close(tau, fs.rnea(spec, q, qd, qdd))
            _close(kn.forward_dynamics(ch, q, qd, tau), qdd)


# ---------------------------------------------------------------- operation counts

def _listing_tally(n):
    """mul, add of AUTOSUB + torques, counted loop by loop from the listing (App. 4).

    For an all-revolute chain whose A^k have the sparsity of DH twists 0, +-90 deg (four
    non-zero sin/cos entries, four Ad entries of one multiplication each).
    """
    T = n * (n + 1) // 2
    pw = 9 * n * (n - 1) // 2  # loop 130 iterations
    mul = (4 * n                    # AD
           + 3 * pw                 # PW, PWD
           + 3 * T                  # W
           + 12                     # PV(1,.,1), PS(2,.,1)
           + 51 * (T - 1)           # P, PD, PV, PS, PVD, PSD of links 2..n
           + 6 * T                  # V, S
           + 6 * n + 6 * T + 9 * n  # B; D, E; H
           + 9 * n * n              # Z
           + 12 * n * T             # F: 3 n T terms of 4 multiplications
           + 9 * (n - 1)            # Y
           + 9 * n * n              # K'
           + n * n)                 # K*
    add = (3 * pw + 3 * T + 6 + 63 * (T - 1) + 6 * T + 3 * n + 6 * T + 6 * n + 3 * n
           + 6 * n * n + 6 * n * T + 9 * (n - 1) + 3 * n * n + n * n + 2 * n)
    return mul, add


@pytest.mark.parametrize("n", [1, 2, 3, 6, 8])
def test_op_count_equals_listing_tally(n):
    rng = np.random.default_rng(n)
    rows = [dict(theta=0.0, d=rng.normal(0, 0.3), a=rng.normal(0, 0.3),
                 alpha=float(rng.choice([0.0, math.pi / 2, -math.pi / 2])), joint="revolute",
                 mass=1.0 + i, com=rng.normal(0, 0.1, 3),
                 inertia=np.diag(rng.uniform(0.01, 0.1, 3))) for i in range(n)]
    spec = rm.dh_to_spec(rows, gravity=(0.0, 0.0, -9.81))
    q, qd, qdd = rm.random_state(spec, rng)
    counts = count_ops(kn.inverse_dynamics, spec, q, qd, qdd, scalar=OpFloat)
    mul, add = _listing_tally(n)
    assert counts == {"mul": mul, "add": add, "trig": 2 * n}
    _close(kn.inverse_dynamics(spec, q, qd, qdd, scalar=OpFloat), fs.rnea(spec, q, qd, qdd))


def test_op_counts_of_the_named_arms():
    """Published algorithm at a general state (all of q, qd, qdd non-zero, gravity on)."""
    rng = np.random.default_rng(11)
    for spec, expected in ((intelledex_spec(), {"mul": 4107, "add": 3231, "trig": 12}),
                           (stanford_spec(), {"mul": 4148, "add": 3216, "trig": 10})):
        ch = kn.chain_from_spec(spec)
        for _ in range(2):  # the count does not depend on the state
            q, qd, qdd = (x + 0.1 for x in rm.random_state(spec, rng))
            assert count_ops(kn.inverse_dynamics, ch, q, qd, qdd, scalar=OpFloat) == expected
    assert _listing_tally(6) == (4107, 3231)


# ---------------------------------------------------------------- the instrumented float

def test_opfloat_counting_rules():
    x, y = OpFloat(2.0), OpFloat(3.0)
    with OpCounter() as c:
        z = 0.0 + x          # constants count
        z = z * 1.0 - y / 2.0 + (-x)  # negation is free
        z = abs(z)
        w = OpFloat.sin(x) + OpFloat.cos(y) * OpFloat.sqrt(y)
        assert (x < y) and (y >= 3.0)
    assert c.as_dict() == {"mul": 3, "add": 4, "trig": 3}
    assert float(z) == 1.5 and isinstance(w, OpFloat)
    with OpCounter() as outer:
        with OpCounter() as inner:
            _ = x * y
        _ = x + np.float64(1.0)
    assert inner.as_dict() == {"mul": 1, "add": 0, "trig": 0}
    assert outer.as_dict() == {"mul": 1, "add": 1, "trig": 0}
    assert count_ops(lambda a: a * a * a, x) == {"mul": 2, "add": 0, "trig": 0}
    _ = x * y  # no counter active: nothing to count, no error
