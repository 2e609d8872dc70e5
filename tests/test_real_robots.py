"""Every URDF shipped in example-robot-data (and the Robotics Toolbox's rtb-data) loads with
load_urdf's defaults and equals Pinocchio (fixed base, continuous joints as (cos, sin) in
Pinocchio's q) on inverse dynamics, mass matrix, forward dynamics and link poses at random
states, 1e-9 relative. The files are found through the installed packages (the `peers`
extra); the test skips without them. `python tests/test_real_robots.py` prints the table.
"""

import pathlib
import sys
import time
import warnings

import numpy as np
import pytest

import robodyn
from robodyn import urdf
from robodyn.io.sources import expand_xacro

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _load import example_robot_data_dir  # noqa: E402

RTOL = 1e-9
STATES = 2  # random states per robot: the whole sweep stays at a few seconds


def rtb_data_dir():
    """The rtb-data package directory, or None if it is not installed."""
    try:
        import rtbdata
    except ImportError:
        return None
    return pathlib.Path(rtbdata.__file__).resolve().parent


def shipped_urdfs():
    """(label, path) of every .urdf file of example-robot-data and rtb-data."""
    out = []
    root = example_robot_data_dir()
    if root is not None:
        out += [(f"erd/{p.relative_to(root)}", p) for p in sorted(root.rglob("*.urdf"))]
    root = rtb_data_dir()
    if root is not None:
        out += [(f"rtb/{p.relative_to(root)}", p) for p in sorted(root.rglob("*.urdf"))]
    return out


# The shipped files that cannot be a fixed-base robot, with the reason robodyn gives
REFUSED = {
    # an empty <robot> without a name (Pinocchio refuses it too)
    "erd/ur_description/urdf/ur3.urdf": "robot: missing required attribute 'name'",
    # one rigid body and no joint: no degrees of freedom on a fixed base (Pinocchio: nq = 0)
    "erd/hector_description/robots/quadrotor_base.urdf": "robot: no moving joint",
    "erd/iris_description/robots/iris_simple.urdf": "robot: no moving joint",
    # rtb-data's data/test.urdf holds the 6 bytes "hello\n" (Pinocchio refuses it too)
    "rtb/data/test.urdf": "not well-formed XML",
}


def _pin_state(model, joints, q, qd, x):
    pq, pv, px = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    for i, j in enumerate(joints):
        if j.nq == 2:  # continuous joint: (cos, sin)
            pq[j.idx_q:j.idx_q + 2] = np.cos(q[i]), np.sin(q[i])
        else:
            pq[j.idx_q] = q[i]
    iv = np.array([j.idx_v for j in joints], dtype=int)
    pv[iv], px[iv] = qd, x
    return pq, pv, px, iv


def _rel(got, expected):
    scale = float(np.max(np.abs(expected)))
    return float(np.max(np.abs(np.asarray(got) - expected))) / max(scale, 1e-300)


def compare(path, rng, states=STATES):
    """Load `path` with robodyn (mimic joints independent, as Pinocchio loads them) and with
    Pinocchio; the worst relative error per quantity and the robodyn load time."""
    import pinocchio as pin

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", urdf.URDFWarning)
        robot = robodyn.load_urdf(path, mimic="independent")
    load_time = time.perf_counter() - start
    if str(path).endswith(".xacro"):  # Pinocchio reads the same expansion
        model = pin.buildModelFromXML(expand_xacro(str(path), None)[0])
    else:
        model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    names = robot.joint_names
    assert sorted(names) == sorted(model.names[1:]), path
    joints = [model.joints[model.getJointId(name)] for name in names]
    spec = robot.spec
    damping = np.array([b.damping for b in spec.bodies])
    friction = np.array([b.friction for b in spec.bodies])
    lo, hi = robot.position_limits
    errors = {"id": 0.0, "M": 0.0, "fd": 0.0, "poses": 0.0}
    links = robot.link_names
    frame_ids = [model.getFrameId(link, pin.FrameType.BODY) for link in links]
    for _ in range(states):
        q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi))
        qd, qdd = rng.standard_normal((2, robot.n))
        pq, pv, pa, iv = _pin_state(model, joints, q, qd, qdd)
        joint_terms = damping * qd + friction * np.sign(qd)
        expected = pin.rnea(model, data, pq, pv, pa)[iv]
        errors["id"] = max(errors["id"],
                           _rel(robot.inverse_dynamics(q, qd, qdd) - joint_terms, expected))
        M = pin.crba(model, data, pq)
        M = np.triu(M) + np.triu(M, 1).T
        errors["M"] = max(errors["M"], _rel(robot.mass_matrix(q), M[np.ix_(iv, iv)]))
        tau = rng.standard_normal(robot.n) * np.maximum(1.0, np.abs(expected))
        _, _, pt, _ = _pin_state(model, joints, q, qd, tau)
        expected = pin.aba(model, data, pq, pv, pt)[iv]
        try:
            qdd = robot.forward_dynamics(q, qd, tau + joint_terms)
        except ValueError as e:  # a joint that moves no mass: M is singular in both libraries
            assert "not positive definite" in str(e)
            w = np.linalg.eigvalsh(M)
            assert w[0] <= 1e-12 * w[-1] or not np.all(np.isfinite(expected))
            errors["fd"] = None
        else:
            if errors["fd"] is not None:
                errors["fd"] = max(errors["fd"], _rel(qdd, expected))
        pin.framesForwardKinematics(model, data, pq)
        T = robot.forward_kinematics(q)
        for k, fid in enumerate(frame_ids):
            if fid < len(model.frames):
                errors["poses"] = max(errors["poses"],
                                      _rel(T[k], data.oMf[fid].homogeneous))
    return errors, load_time, robot, [str(w.message) for w in caught]


CASES = shipped_urdfs()


def shipped_xacros():
    """(label, path) of the robot files among rtb-data's xacros (not the macro libraries)."""
    root = rtb_data_dir()
    if root is None:
        return []
    return [(f"rtb/{p.relative_to(root)}", p) for p in sorted(root.rglob("*.xacro"))
            if not p.name.endswith("_macro.xacro") and not p.name.startswith("common_")
            and "accessories" not in p.parts]


XACROS = shipped_xacros()


@pytest.fixture(scope="module")
def pin():
    return pytest.importorskip("pinocchio")


@pytest.mark.skipif(not CASES, reason="example-robot-data / rtb-data are not installed")
@pytest.mark.parametrize("label, path", CASES, ids=[c[0] for c in CASES])
def test_shipped_urdf_loads_and_equals_pinocchio(label, path, pin, rng):
    if label in REFUSED:  # refused with a named error
        with pytest.raises(urdf.URDFError) as info:
            robodyn.load_urdf(path)
        assert str(info.value).startswith(f"{path}: ") and REFUSED[label] in str(info.value)
        return
    robodyn.load_urdf(path)  # the defaults (mimic joints coupled) load it too
    errors, _, _, _ = compare(path, rng)
    for quantity, error in errors.items():
        if error is not None:  # None: forward dynamics undefined (singular M), checked
            assert error <= RTOL, f"{label}: {quantity} differs from Pinocchio by {error:.3g}"


@pytest.mark.skipif(not XACROS, reason="rtb-data is not installed")
def test_rtb_data_xacro_arms_load_or_are_refused_with_a_reason(pin, rng):
    """Each robot xacro of rtb-data expands (xacrodoc) and equals Pinocchio on the same
    expansion, or is refused naming the reason: most KUKA, ABB and Frankie files include ROS
    packages that rtb-data does not ship (kuka_kr16_support, ...), and the bare macro files
    hold no link."""
    pytest.importorskip("xacrodoc")
    loaded = 0
    for label, path in XACROS:
        try:
            robodyn.load_urdf(path)
        except urdf.URDFError as e:
            message = str(e)
            assert message.startswith(f"{path}: ")
            # with the ros extra installed, xacro looks packages up through ament instead, and
            # says that no ROS prefix is set
            assert ("Package not found" in message or "no <link> elements" in message
                    or "AMENT_PREFIX_PATH" in message), message
            continue
        errors, _, _, _ = compare(path, rng, states=1)
        for quantity, error in errors.items():
            if error is not None:
                assert error <= RTOL, f"{label}: {quantity} differs by {error:.3g}"
        loaded += 1
    assert loaded >= 15


def test_sweep_covers_both_packages():
    labels = [label for label, _ in CASES]
    if example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    assert sum(label.startswith("erd/") for label in labels) >= 69
    if rtb_data_dir() is not None:
        assert sum(label.startswith("rtb/") for label in labels) >= 8


def test_shipped_non_physical_inertias_warn_and_keep_m_positive_definite(rng):
    """Why a non-physical inertia on a moving link is a warning (docs/urdf.md): real files
    ship them (7 of example-robot-data's 69: the Allegro hands, HyQ, PR2, the Romeos, Alex),
    and they do not break the dynamics: each such file loads with one warning naming the
    links, is refused with strict=True, and its mass matrix is positive definite (unless the
    same warning reports a joint that moves no mass, Romeo's hands)."""
    root = example_robot_data_dir()
    if root is None:
        pytest.skip("example-robot-data is not installed")
    flagged = []
    for label, path in CASES:
        if not label.startswith("erd/") or label in REFUSED:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", urdf.URDFWarning)
            robot = robodyn.load_urdf(path)
        messages = [str(w.message) for w in caught if w.category is urdf.URDFWarning]
        if not any("<inertial> <inertia>" in m for m in messages):
            continue
        flagged.append(label)
        assert len(messages) == 1 and messages[0].startswith(f"{path}: ")
        with pytest.raises(urdf.URDFError, match=r"<inertial> <inertia>: (principal|inertia)"):
            robodyn.load_urdf(path, strict=True)
        if "mass matrix is singular" in messages[0]:
            continue
        lo, hi = robot.position_limits
        for _ in range(10):
            q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi))
            M = np.asarray(robot.mass_matrix(q))
            np.linalg.cholesky(M)  # positive definite, or LinAlgError
    assert len(flagged) >= 5, flagged


def main():
    """The closing-note table: per file, loaded / compared / refused, worst errors."""
    rng = np.random.default_rng(2026)
    worst = {}
    loaded = compared = 0
    refused = []
    largest = max(CASES, key=lambda c: c[1].stat().st_size)
    for label, path in CASES:
        try:
            errors, seconds, robot, messages = compare(path, rng, states=5)
        except Exception as e:  # noqa: BLE001 - a report, not a test
            refused.append((label, str(e).replace(str(path), "<file>")))
            continue
        loaded += 1
        compared += 1
        for k, v in errors.items():
            if v is not None and v > worst.get(k, (0.0, ""))[0]:
                worst[k] = (v, label)
        note = ("  warning: " + " | ".join(m.split("\n", 1)[1].strip().replace("\n", ";")
                                           for m in messages)[:200]) if messages else ""
        print(f"{label:70s} n={robot.n:3d} load {seconds * 1e3:7.2f} ms  "
              + "  ".join(f"{k} {'n/a' if v is None else f'{v:.1e}'}"
                          for k, v in errors.items()) + note)
    print(f"\n{len(CASES)} files: {loaded} loaded, {compared} compared, {len(refused)} refused")
    for label, why in refused:
        print(f"  refused {label}: {why}")
    for k, (v, label) in worst.items():
        print(f"worst {k}: {v:.2e} ({label})")
    xacro_ok, xacro_refused = 0, []
    for label, path in XACROS:
        try:
            errors, _, _, _ = compare(path, rng, states=2)
        except Exception as e:  # noqa: BLE001 - a report, not a test
            xacro_refused.append((label, str(e).replace(str(path), "<file>")[:120]))
            continue
        xacro_ok += 1
        for k, v in errors.items():
            if v is not None and v > worst.get(k, (0.0, ""))[0]:
                worst[k] = (v, label)
    print(f"{len(XACROS)} rtb-data robot xacros: {xacro_ok} expanded, loaded and compared, "
          f"{len(xacro_refused)} refused")
    for label, why in xacro_refused:
        print(f"  refused {label}: {why}")
    for k, (v, label) in worst.items():
        print(f"worst {k} (all): {v:.2e} ({label})")
    times = []
    for _ in range(7):
        start = time.process_time()
        robodyn.load_urdf(largest[1])
        times.append(time.process_time() - start)
    print(f"largest file {largest[0]} ({largest[1].stat().st_size} bytes): load median "
          f"{sorted(times)[3] * 1e3:.1f} ms CPU time")


if __name__ == "__main__":
    main()
