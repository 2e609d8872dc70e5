"""Every way of building a model applies the same physical checks (issue 31, item 7).

A rotational inertia with a negative principal moment is no rigid body (a turn about that
axis would have negative kinetic energy). ``load_urdf`` loads a file that has one as written,
with a warning (shipped files do: example-robot-data's romeo_laas_small); every other way of
building a model refuses one: ``Robot(spec)`` with or without ``check_inertia``, a coupled
(mimic) model, unpickling, ``from_dh``, a campaign's perturbed plant. ``check_inertia=False``
only lets the triangle inequality go (the published Stanford arm breaks it). The principal moments are
checked against ``numpy.linalg.eigvalsh`` of the tensor given, independently of the model.
"""

import math
import pickle
import warnings

import numpy as np
import pytest

import robodyn
from robodyn import urdf
from robodyn.model.robot import Robot, _rebuild
from reference import random_models as RM

INDEFINITE = np.diag([-0.01, 0.1, 0.1])


def negative_spec(check_inertia):
    """The Stanford arm (loaded without the triangle check) with its rotational inertias
    scaled by -0.1, as a campaign's ``model.inertia_scale = -0.1`` makes its plant."""
    spec = robodyn.robots.stanford_arm().spec
    spec.check_inertia = check_inertia
    for b in spec.bodies:
        b.inertia = np.asarray(b.inertia) * -0.1
    return spec


def first_negative(spec):
    """Index of the first body whose inertia has a negative principal moment (numpy)."""
    for i, b in enumerate(spec.bodies):
        if np.linalg.eigvalsh(np.asarray(b.inertia, dtype=float))[0] < -1e-12:
            return i
    return None


@pytest.mark.parametrize("check_inertia", [True, False])
def test_robot_from_spec_refuses_a_negative_principal_moment(check_inertia):
    spec = negative_spec(check_inertia)
    i = first_negative(spec)
    assert i is not None
    with pytest.raises(ValueError, match=rf"body {i} \('{spec.bodies[i].name}'\).*not positive "
                                         "semidefinite"):
        Robot(spec)


def test_check_inertia_false_still_accepts_the_triangle_inequality():
    # the published Stanford arm: link 5 breaks I1 + I2 >= I3, loads as given
    robot = robodyn.robots.stanford_arm()
    moments = np.linalg.eigvalsh(robot.spec.bodies[4].inertia)
    assert moments[0] + moments[1] < moments[2]
    assert robot.spec.check_inertia is False
    Robot(robot.spec)  # rebuilt from its own spec: same answer


def test_unpickling_refuses_a_crafted_spec():
    class Crafted:
        def __reduce__(self):
            return (_rebuild, (Robot, negative_spec(False), False))

    data = pickle.dumps(Crafted())
    with pytest.raises(ValueError, match="not positive semidefinite"):
        pickle.loads(data)
    # a genuine robot still round-trips
    robot = robodyn.robots.stanford_arm()
    back = pickle.loads(pickle.dumps(robot))
    q = np.linspace(0.1, 0.6, 6)
    np.testing.assert_allclose(back.mass_matrix(q), robot.mass_matrix(q), rtol=1e-14)


def test_coupled_model_refuses_a_negative_principal_moment():
    spec = RM.random_chain(3, np.random.default_rng(5))
    spec.bodies[2].mimic = (spec.bodies[1].joint_name, 1.0, 0.0)
    assert type(robodyn.robot(spec)).__name__ == "CoupledRobot"
    spec.bodies[2].inertia = INDEFINITE
    spec.check_inertia = False
    with pytest.raises(ValueError, match=r"body 2 .*not positive semidefinite"):
        robodyn.robot(spec)


def test_from_dh_refuses_a_negative_principal_moment():
    rows = [dict(theta=0.0, d=0.1, a=0.2, alpha=0.0, joint="revolute", mass=1.0,
                 com=(0.1, 0.0, 0.0), inertia=INDEFINITE)]
    with pytest.raises(ValueError, match="positive semidefinite"):
        robodyn.from_dh(rows, check_inertia=False)


def arm_urdf(moments):
    return ('<robot name="arm"><link name="base"/><link name="upper"><inertial><mass value="1"/>'
            '<inertia ixx="{}" ixy="0" ixz="0" iyy="{}" iyz="0" izz="{}"/></inertial></link>'
            '<joint name="shoulder" type="continuous"><parent link="base"/>'
            '<child link="upper"/><axis xyz="0 1 0"/></joint></robot>').format(*moments)


def test_only_a_urdf_that_has_a_negative_principal_moment_loads_one(tmp_path):
    """A shipped file with one (example-robot-data's romeo_laas_small) loads as written, with
    the warning naming the link (strict refuses, check_inertia=False is silent), and its
    robot pickles; a negative moment put into the spec of any other model is refused."""
    path = tmp_path / "arm.urdf"
    path.write_text(arm_urdf((-0.01, 0.1, 0.1)))
    with pytest.warns(urdf.URDFWarning, match="link 'upper'.*positive semi-definite"):
        robot = robodyn.load_urdf(path)
    with pytest.raises(urdf.URDFError, match=rf"^{path}: link 'upper'.*positive semi-definite"):
        robodyn.load_urdf(path, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = robodyn.load_urdf(path, check_inertia=False)
    for r in (robot, quiet):
        assert r.spec.accept_indefinite_inertia is True
        back = pickle.loads(pickle.dumps(r))
        np.testing.assert_array_equal(back.mass_matrix([0.3]), r.mass_matrix([0.3]))
    # a physical file: its spec made indefinite is refused, loaded with or without the check
    path.write_text(arm_urdf((0.1, 0.1, 0.1)))
    for options in ({}, {"check_inertia": False}):
        spec = robodyn.load_urdf(path, **options).spec
        assert spec.accept_indefinite_inertia is False
        spec.bodies[0].inertia = -spec.bodies[0].inertia
        with pytest.raises(ValueError, match=r"body 0 \('upper'\).*not positive semidefinite"):
            Robot(spec)


def test_tolerance_is_the_models_one():
    # just inside / just outside max(INERTIA_RTOL * largest |moment|, INERTIA_ATOL)
    for scale in (1.0, 1e-9):
        tol = max(urdf.INERTIA_RTOL * scale, urdf.INERTIA_ATOL)
        for excess, ok in ((0.5 * tol, True), (2.0 * tol, False)):
            spec = RM.random_chain(2, np.random.default_rng(1))
            spec.check_inertia = False
            spec.bodies[1].inertia = np.diag([-excess, scale, scale])
            if ok:
                Robot(spec)
            else:
                with pytest.raises(ValueError, match="not positive semidefinite"):
                    Robot(spec)


def test_campaign_plant_with_a_negative_inertia_scale_fails_its_run():
    cp = pytest.importorskip("robodyn.campaign")
    pytest.importorskip("dask")
    c = cp.Campaign("stanford_arm", model={"inertia_scale": -0.1},
                    simulation={"duration": 0.05, "control_rate": 1000.0}, samples=1)
    row, traj = c.run_one(0)
    assert row["status"] == "failed"
    assert "not positive semidefinite" in row["error"]
    assert traj is None
    row, _ = cp.Campaign("stanford_arm", model={"inertia_scale": 0.9},
                         simulation={"duration": 0.05}, samples=1).run_one(0)
    assert row["status"] == "ok", row["error"]
    assert math.isfinite(row["max_tracking_error"])


def test_overflowing_results_are_not_finite_and_large_ones_are_right():
    """docs/security.md: finite inputs whose results overflow give non-finite results (qd =
    1e155 rad/s squares to 1e310), never wrong finite numbers; results below the threshold are
    right. Without damping and friction, tau(q, s v, 0) - g(q) = s^2 (tau(q, v, 0) - g(q))."""
    spec = RM.random_chain(4, np.random.default_rng(7), damping=False, friction=False)
    robot = Robot(spec)
    rng = np.random.default_rng(8)
    q, v = rng.uniform(-1, 1, 4), rng.uniform(0.5, 1.0, 4)
    z = np.zeros(4)
    g = robot.gravity_torques(q)
    c = robot.inverse_dynamics(q, v, z) - g  # C(q, v) v, order 1
    assert np.all(np.abs(c) > 1e-6)
    s = 1e150
    for method in ("rnea", "kane"):
        big = robot.inverse_dynamics(q, s * v, z, method=method)
        np.testing.assert_allclose(big, s * s * c, rtol=1e-9)
    np.testing.assert_allclose(robot.bias_torques(q, s * v), s * s * c, rtol=1e-9)
    s = 1e155
    with np.errstate(all="ignore"):
        outputs = {"rnea": robot.inverse_dynamics(q, s * v, z),
                   "kane": robot.inverse_dynamics(q, s * v, z, method="kane"),
                   "bias": robot.bias_torques(q, s * v)}
        for method in ("aba", "crba", "kane"):
            try:
                outputs[f"fd {method}"] = robot.forward_dynamics(q, s * v, z, method=method)
            except ValueError as e:  # a refusal is as good as a non-finite result
                assert "finite" in str(e) or "overflow" in str(e), e
    for name, out in outputs.items():
        # every entry whose true value (s^2 c) overflows is not finite
        assert not np.any(np.isfinite(out)), (name, out)
