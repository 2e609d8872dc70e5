"""URDF <loop_joint> (robodyn.io.loop_urdf): reading into a ConstrainedRobot, writing back, errors.

The loops read from a file are checked by their residual at the four-bar's closed-form
configuration (Freudenstein's equation) and by a write-read round trip.
"""

import numpy as np
import pytest

import robodyn
from robodyn.io import loop_urdf
from robodyn.io.urdf import URDFError
import _mechanisms as M

G = M.FOURBAR


def fourbar_file(loop, extra=""):
    """The four-bar tree with `loop` (a <loop_joint> element's text) added."""
    tree = M.fourbar_urdf(G["a"], G["b"], G["c"], G["d"])
    return tree.replace("</robot>", loop + extra + "</robot>")


REVOLUTE = (f'<loop_joint name="knee" type="revolute"><link1 link="rocker_link" '
            f'xyz="{G["c"]} 0 0"/><link2 link="coupler_link" xyz="{G["b"]} 0 0"/>'
            '<axis xyz="0 -1 0"/></loop_joint>')


def test_revolute_loop_joint_closes_the_fourbar():
    system = robodyn.load_urdf(fourbar_file(REVOLUTE))
    assert isinstance(system, robodyn.ConstrainedRobot)
    (c,) = system.constraints
    assert (c.name, c.kind, c.axes, c.body1, c.body2) == (
        "knee", "axes", ("rx", "ry", "x", "y", "z"), "rocker_link", "coupler_link")
    np.testing.assert_allclose(c.frame1[:3, 2], [0, -1, 0], atol=1e-15)
    np.testing.assert_allclose(c.frame1[:3, 3], [G["c"], 0, 0], atol=0)
    ref = system
    for theta2 in (0.0, 1.0, 2.5):
        q = M.fourbar_q(theta2, G)
        np.testing.assert_allclose(ref.residual(q), np.zeros(5), atol=1e-12)
        # open the loop: the closure rows see it
        assert np.abs(ref.residual(q + [0, 0.01, 0])).max() > 1e-3


def test_spherical_fixed_world_and_gains():
    loops = ('<loop_joint name="pin" type="spherical"><link1 link="ground" xyz="0.45 0 0"/>'
             '<link2 link="rocker_link"/><robodyn baumgarte="4 2.5"/></loop_joint>'
             '<loop_joint name="weld" type="fixed"><link1 link="crank_link" rpy="0 0 0.5"/>'
             '<link2 link="coupler_link" xyz="0.1 0 0"/></loop_joint>')
    system = robodyn.load_urdf(fourbar_file(loops))
    pin, weld = system.constraints
    assert (pin.kind, pin.body1, pin.body2, pin.baumgarte) == ("point", None, "rocker_link",
                                                               (4.0, 2.5))
    np.testing.assert_allclose(pin.frame1[:3, 3], [0.45, 0, 0])
    assert (weld.kind, weld.rows, weld.baumgarte) == ("weld", (0, 1, 2, 3, 4, 5), (0.0, 0.0))
    assert system.rows == 9


def test_round_trip():
    loops = (REVOLUTE + '<loop_joint name="pin" type="spherical"><link1 link="ground" '
             'xyz="0.45 0.1 -0.2" rpy="0.1 0.2 0.3"/><link2 link="rocker_link" '
             'rpy="-0.3 0.2 1"/><robodyn baumgarte="4 2.5"/></loop_joint>'
             '<loop_joint name="weld" type="fixed"><link1 link="crank_link" rpy="0 0 0.5"/>'
             '<link2 link="coupler_link" xyz="0.1 0 0"/></loop_joint>')
    first = robodyn.load_urdf(fourbar_file(loops))
    text = first.to_urdf()
    assert text.count("<loop_joint") == 3
    second = robodyn.load_urdf(text)
    assert second.robot.joint_names == first.robot.joint_names
    for a, b in zip(first.constraints, second.constraints):
        assert (a.name, a.kind, a.axes, a.body1, a.body2, a.baumgarte) == \
            (b.name, b.kind, b.axes, b.body1, b.body2, b.baumgarte)
        np.testing.assert_allclose(a.frame1, b.frame1, atol=1e-15)
        np.testing.assert_allclose(a.frame2, b.frame2, atol=1e-15)
    # the revolute loop is written about the z axis of its (turned) frames
    assert '<axis xyz="0 0 1"' in text


def test_write_refuses_what_urdf_cannot_say():
    robot = robodyn.load_urdf(M.fourbar_urdf(G["a"], G["b"], G["c"], G["d"]))
    planar = robodyn.LoopConstraint("rocker_link", "coupler_link", kind="axes",
                                    axes=("x", "z"), name="planar")
    with pytest.raises(ValueError, match="constraint 'planar': axes .* no URDF loop_joint"):
        loop_urdf.write(robodyn.ConstrainedRobot(robot, [planar]))
    clash = robodyn.LoopConstraint("rocker_link", "coupler_link", name="crank")
    with pytest.raises(ValueError, match="constraint 'crank': the name is also a joint's"):
        loop_urdf.write(robodyn.ConstrainedRobot(robot, [clash]))


BAD = {
    "unknown link": ('<loop_joint name="k" type="spherical"><link1 link="ghost"/>'
                     '<link2 link="crank_link"/></loop_joint>',
                     r"loop_joint 'k' <link1>: no link named 'ghost'"),
    "bad type": ('<loop_joint name="k" type="prismatic"><link1 link="rocker_link"/>'
                 '<link2 link="crank_link"/></loop_joint>',
                 r"loop_joint 'k': type: expected one of spherical, fixed, revolute, got "
                 r"'prismatic'"),
    "no type": ('<loop_joint name="k"><link1 link="rocker_link"/><link2 link="crank_link"/>'
                '</loop_joint>', r"loop_joint 'k': missing required attribute 'type'"),
    "no link2": ('<loop_joint name="k" type="fixed"><link1 link="rocker_link"/></loop_joint>',
                 r"loop_joint 'k': expected one <link2> element, found 0"),
    "both on the base": ('<loop_joint name="k" type="fixed"><link1 link="ground"/>'
                         '<link2 link="ground" xyz="1 0 0"/></loop_joint>',
                         r"both on the fixed base"),
    "same link": ('<loop_joint name="k" type="fixed"><link1 link="crank_link"/>'
                  '<link2 link="crank_link"/></loop_joint>', r"the same link 'crank_link'"),
    "joint name": ('<loop_joint name="rocker" type="fixed"><link1 link="crank_link"/>'
                   '<link2 link="rocker_link"/></loop_joint>',
                   r"loop_joint 'rocker': duplicate joint name"),
    "bad xyz": ('<loop_joint name="k" type="fixed"><link1 link="crank_link" xyz="1 nan 0"/>'
                '<link2 link="rocker_link"/></loop_joint>',
                r"loop_joint 'k' <link1>: attribute 'xyz': 'nan' is not finite"),
    "zero axis": ('<loop_joint name="k" type="revolute"><link1 link="crank_link"/>'
                  '<link2 link="rocker_link"/><axis xyz="0 0 0"/></loop_joint>',
                  r"loop_joint 'k' <axis>: the axis is zero"),
    "bad gains": ('<loop_joint name="k" type="fixed"><link1 link="crank_link"/>'
                  '<link2 link="rocker_link"/><robodyn baumgarte="1"/></loop_joint>',
                  r"must hold 2 numbers"),
    "negative gains": ('<loop_joint name="k" type="fixed"><link1 link="crank_link"/>'
                       '<link2 link="rocker_link"/><robodyn baumgarte="1 -2"/></loop_joint>',
                       r"gains must be >= 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_loop_joints_are_clear_errors(case):
    loop, message = BAD[case]
    with pytest.raises(URDFError, match=r"^<string>: .*" + message):
        robodyn.load_urdf(fourbar_file(loop))


def test_a_cycle_of_joints_is_still_refused():
    # a fourth <joint> closing the loop makes the rocker link's parent ambiguous
    cycle = ('<joint name="close" type="continuous"><parent link="coupler_link"/>'
             '<child link="rocker_link"/><axis xyz="0 1 0"/></joint>')
    with pytest.raises(URDFError, match="two parents"):
        robodyn.load_urdf(fourbar_file(cycle))


def test_parse_urdf_reads_the_tree():
    spec = robodyn.urdf.parse_urdf(fourbar_file(REVOLUTE))
    assert [b.joint_name for b in spec.bodies] == ["crank", "coupler", "rocker"]


@pytest.mark.parametrize("command", ["info", "simulate"])
def test_command_line_refuses_loops_clearly(command, tmp_path, capsys):
    from robodyn import cli

    path = tmp_path / "fourbar.urdf"
    path.write_text(fourbar_file(REVOLUTE))
    assert cli.main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert "closes loops with <loop_joint> elements" in err and "Traceback" not in err


def test_opcount_counts_loops(tmp_path, capsys):
    """`robodyn opcount` counts a URDF's constrained forward dynamics; the revolute loop of a
    planar four-bar has structurally zero rows, so mu = 0 is refused in one line naming the
    options that count it."""
    from robodyn import cli

    path = tmp_path / "fourbar.urdf"
    path.write_text(fourbar_file(REVOLUTE))
    assert cli.main(["opcount", str(path)]) == 2
    err = capsys.readouterr().err
    assert "rank deficient" in err and "--mu" in err and "Traceback" not in err
    assert cli.main(["opcount", str(path), "--mu", "1e-3", "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    assert "5 constraint rows, mu = 0.001, 2 proximal iterations" in out
    assert "constrained FD" in out
