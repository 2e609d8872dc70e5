"""robodyn.view's loop constraints and force elements: where they are drawn (against the links'
forward kinematics times the attachment poses, by hand, and against the C++ residual and spring
lengths), the viewer's markers and toggles, a loop URDF on the command line, and a constrained
run's saved page."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trimesh")

import robodyn  # noqa: E402
from robodyn.view.elements import loop_points, spring_points  # noqa: E402


def _link(name, mass, length):
    i = mass * length ** 2 / 12
    return (f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>'
            f'<inertia ixx="0.001" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'<visual><origin xyz="{length / 2} 0 0"/><geometry><box size="{length} 0.04 0.04"/>'
            '</geometry></visual></link>')


def _joint(name, parent, child, x):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{x} 0 0"/><axis xyz="0 0 1"/>'
            '<limit lower="-9" upper="9" effort="9" velocity="9"/></joint>')


def fourbar_urdf(loop=True):
    """A planar four-bar's URDF (ground - crank - coupler, ground - rocker), closed by a
    revolute <loop_joint> between the coupler's end and the rocker's end when ``loop``."""
    closing = ('<loop_joint name="rod" type="revolute"><link1 link="coupler" xyz="0.5 0 0"/>'
               '<link2 link="rocker" xyz="0.4 0 0"/><axis xyz="0 0 1"/></loop_joint>')
    return ('<robot name="fourbar"><link name="ground"/>' + _link("crank", 1.0, 0.2)
            + _link("coupler", 1.5, 0.5) + _link("rocker", 1.2, 0.4)
            + _joint("crank_joint", "ground", "crank", 0)
            + _joint("coupler_joint", "crank", "coupler", 0.2)
            + _joint("rocker_joint", "ground", "rocker", 0.6) + (closing if loop else "")
            + "</robot>")


def _pose(xyz, rpy=(0.0, 0.0, 0.0)):
    T = np.eye(4)
    a, b, c = rpy
    Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    Ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    Rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    T[:3, :3] = Rz @ Ry @ Rx
    T[:3, 3] = xyz
    return T


def _system():
    robot = robodyn.load_urdf(fourbar_urdf(loop=False))
    rod = robodyn.LoopConstraint("coupler", "rocker", _pose([0.5, 0, 0]), _pose([0.4, 0, 0]),
                                 kind="axes", axes=("x", "y"), name="rod")
    pin = robodyn.LoopConstraint("crank", None, _pose([0.1, 0.02, 0.03], (0.3, -0.2, 0.5)),
                                 _pose([0.05, -0.1, 0.2]), kind="point", name="pin")
    return robot, robodyn.ConstrainedRobot(robot, [rod, pin])


def _by_hand(robot, q, body, T):
    """The world origin of pose T on link ``body`` (None: the world) at q."""
    if body is None:
        return T[:3, 3]
    fk = np.asarray(robot.forward_kinematics(q))[list(robot.link_names).index(body)]
    return (fk @ T)[:3, 3]


def test_loop_points_are_the_constraint_frames_world_origins():
    robot, system = _system()
    Q = np.random.default_rng(3).uniform(-2, 2, (5, 3))
    P = loop_points(system, Q)
    assert P.shape == (5, 2, 2, 3)
    for f, q in enumerate(Q):
        for i, c in enumerate(system.constraints):
            np.testing.assert_allclose(P[f, i, 0], _by_hand(robot, q, c.body1, c.frame1),
                                       rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(P[f, i, 1], _by_hand(robot, q, c.body2, c.frame2),
                                       rtol=1e-12, atol=1e-14)
        # the point constraint's rows are origin 1 minus origin 2 in frame 1's axes: the line
        # drawn is as long as the residual
        res = system.split(system.residual(q))["pin"]
        assert np.linalg.norm(P[f, 1, 0] - P[f, 1, 1]) == pytest.approx(
            np.linalg.norm(res), rel=1e-12)
    np.testing.assert_allclose(loop_points(system, Q[2])[0], P[2], rtol=0, atol=0)


def test_closed_loop_draws_coinciding_markers():
    robot, _ = _system()
    system = robodyn.load_urdf(fourbar_urdf())
    from robodyn.constraints.assembly import assemble

    q = assemble(system, np.array([0.7, 1.0, 1.5]), hold=["crank_joint"])
    P = loop_points(system, q)[0, 0]
    assert np.linalg.norm(P[0] - P[1]) < 1e-12
    assert np.linalg.norm(P[0] - _by_hand(robot, q, "rocker", _pose([0.4, 0, 0]))) < 1e-12


def test_spring_points_are_the_attachments_world_positions():
    base, _ = _system()
    robot = base.with_forces([
        robodyn.Spring("coupler", [0.3, 0.02, 0.0], "rocker", [0.2, -0.01, 0.05], k=10.0),
        robodyn.RotationalSpring("crank_joint", k=1.0),
        robodyn.Spring(0, [0.1, 0.0, 0.0], None, [0.3, 0.4, 0.5], k=5.0)])
    Q = np.random.default_rng(4).uniform(-2, 2, (4, 3))
    P = spring_points(robot, Q)
    assert P.shape == (4, 2, 2, 3)
    for f, q in enumerate(Q):
        np.testing.assert_allclose(P[f, 0, 0], _by_hand(base, q, "coupler",
                                                        _pose([0.3, 0.02, 0.0])), rtol=1e-12)
        np.testing.assert_allclose(P[f, 0, 1], _by_hand(base, q, "rocker",
                                                        _pose([0.2, -0.01, 0.05])), rtol=1e-12)
        np.testing.assert_allclose(P[f, 1, 0], _by_hand(base, q, "crank", _pose([0.1, 0, 0])),
                                   rtol=1e-12)
        np.testing.assert_array_equal(P[f, 1, 1], [0.3, 0.4, 0.5])
        # the springs' lengths as the C++ force set measures them (springs first)
        lengths = robot.element_states(q, np.zeros(3))[:2, 0]
        np.testing.assert_allclose(np.linalg.norm(P[f, :, 0] - P[f, :, 1], axis=1), lengths,
                                   rtol=1e-12)
    assert spring_points(base, Q).shape == (4, 0, 2, 3)


def test_viewer_draws_and_moves_the_loops_and_springs():
    pytest.importorskip("viser")
    from robodyn.view import Viewer

    robot, system = _system()
    with Viewer(system, [0.7, 1.0, 1.5]) as v:
        assert v.robot is robot and v.system is system and v.elements.kinds == ["loops"]
        v.set_joint(0, 0.3)
        np.testing.assert_allclose(v.elements._lines["loops"].points,
                                   loop_points(system, v.q)[0], rtol=1e-6)
        np.testing.assert_allclose(v.elements._spheres[1][1].position,
                                   loop_points(system, v.q)[0, 1, 1], rtol=1e-12)
        v.elements.show("loops", False)
        assert not any(h.visible for h in v.elements.handles["loops"])
    forced = robot.with_forces([robodyn.Spring("coupler", [0.5, 0, 0], "rocker", [0.4, 0, 0])])
    with Viewer(forced) as v:
        assert v.system is None and v.elements.kinds == ["springs"]
        v.set_q([0.2, 0.4, 0.6])
        np.testing.assert_allclose(v.elements._lines["springs"].points,
                                   spring_points(forced, [0.2, 0.4, 0.6])[0], rtol=1e-6)
    with Viewer(robodyn.load_urdf(fourbar_urdf())) as v:  # the neutral pose drawn open
        assert v.elements.kinds == ["loops"] and np.array_equal(v.q, np.zeros(3))
        np.testing.assert_allclose(v.elements._lines["loops"].points[0],
                                   [[0.7, 0, 0], [1.0, 0, 0]], atol=1e-7)


def test_constrained_run_saved_as_html(tmp_path):
    pytest.importorskip("viser")
    from robodyn.constraints.assembly import assemble

    robot, pinned = _system()
    system = robodyn.ConstrainedRobot(robot, pinned.constraints[:1])  # the planar pin only
    q0 = assemble(system, np.array([0.7, 1.0, 1.5]), hold=["crank_joint"])
    res = robodyn.simulate(system, duration=0.2, dt=1e-3, q0=q0)
    path = res.save_html(tmp_path / "run.html", robot=system, fps=20)
    text = open(path, encoding="utf-8").read()
    assert "window.__VISER_EMBED_DATA__" in text and os.path.getsize(path) > 0.5e6
    assert res.system is system  # what save_html and show draw without robot=
    assert os.path.getsize(res.save_html(tmp_path / "own.html", fps=20)) > 0.5e6


def test_loop_urdf_viewed_from_the_command_line(tmp_path):
    pytest.importorskip("viser")
    urdf = tmp_path / "fourbar.urdf"
    urdf.write_text(fourbar_urdf())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1])] + sys.path))

    def cli(*argv):
        return subprocess.run([sys.executable, "-m", "robodyn.cli", *map(str, argv)],
                              capture_output=True, text=True, timeout=120, env=env)

    proc = cli("view", urdf, "--q", "0.7", "1.0", "1.5", "--seconds", "0")
    assert proc.returncode == 0 and "robodyn view: http://127.0.0.1:" in proc.stdout, \
        proc.stderr
    proc = cli("view", urdf, "--q", "1", "2")
    assert proc.returncode == 2 and "--q: expected 3 values" in proc.stderr
    proc = cli("simulate", urdf, "--duration", "0.1")  # the other commands still refuse it
    assert proc.returncode == 2 and "<loop_joint>" in proc.stderr
