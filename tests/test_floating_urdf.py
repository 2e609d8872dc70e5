"""Floating-base URDF (root joint and flag, errors, a mimic coupling without a free base) and the
command line.
"""

import warnings

import numpy as np
import pytest

import robodyn
from _floating import close, floating_state, quat_matrix


# ---------------------------------------------------------------- URDF

URDF = """<robot name="hopper">
  <link name="world"/>
  <link name="body"><inertial><origin xyz="0.01 0 0.02"/><mass value="3"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>
  <link name="leg"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.001"/></inertial></link>
  <link name="foot"/>
  <joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>
  <joint name="hip" type="revolute"><parent link="body"/><child link="leg"/>
    <origin xyz="0 0.1 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
  <joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/></joint>
</robot>"""


def test_urdf_floating_root_joint_and_flag(rng):
    a = robodyn.load_urdf(URDF)
    assert (a.nq, a.nv) == (8, 7) and a.joint_names == ["free", "hip"]
    fixed_text = URDF.replace('<link name="world"/>', "").replace(
        '<joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>',
        "")
    b = robodyn.load_urdf(fixed_text, floating_base=True)
    assert (b.nq, b.nv) == (8, 7) and b.joint_names == ["root_joint", "hip"]
    c = robodyn.load_urdf(fixed_text)
    assert (c.nq, c.nv) == (1, 1)
    q, v, acc = floating_state(a, rng)
    close(a.inverse_dynamics(q, v, acc), b.inverse_dynamics(q, v, acc), 1e-13)
    # the round trip through to_urdf keeps the free base
    d = robodyn.load_urdf(b.to_urdf())
    assert (d.nq, d.nv) == (8, 7)
    close(d.inverse_dynamics(q, v, acc), b.inverse_dynamics(q, v, acc), 1e-12)
    close(d.forward_kinematics(q), b.forward_kinematics(q), 1e-12)
    # floating_base=True on a file with a floating root joint: the same model
    e = robodyn.load_urdf(URDF, floating_base=True)
    close(e.mass_matrix(q), a.mass_matrix(q), 1e-14)
    # the base link's frame moves with q
    T = b.forward_kinematics(q)
    close(T[b.link_names.index("body")][:3, 3], q[:3], 1e-14)
    close(T[b.link_names.index("body")][:3, :3], quat_matrix(*q[3:7]), 1e-14)


def test_urdf_floating_errors():
    from robodyn.io.urdf import URDFError

    nested = URDF.replace('<joint name="hip" type="revolute"', '<joint name="hip" type="floating"')
    nested = nested.replace('name="free" type="floating"', 'name="free" type="fixed"')
    with pytest.raises(URDFError, match="floating joint must have the root link"):
        robodyn.load_urdf(nested)
    twice = URDF.replace('<joint name="hip" type="revolute"', '<joint name="hip" type="floating"')
    with pytest.raises(URDFError, match="only one floating joint"):
        robodyn.load_urdf(twice)
    # a mimic coupling on a free base: refused with the way out (independent joints)
    mimic = URDF.replace('<link name="foot"/>', '''<link name="foot"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>''')
    mimic = mimic.replace('''<joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/></joint>''', '''<joint name="ankle" type="revolute"><parent link="leg"/>
    <child link="foot"/><origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/><mimic joint="hip"/></joint>''')
    with pytest.raises(NotImplementedError, match="mimic='independent'"):
        robodyn.load_urdf(mimic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert robodyn.load_urdf(mimic, mimic="independent").nv == 8


def test_coupled_robot_sizes_and_configuration_space(rng):
    """A robot with a mimic coupling (no free base): nq = nv = n, the independent joints, and
    momentum / centre of mass at the expanded state."""
    fixed = URDF.replace('name="free" type="floating"', 'name="free" type="fixed"')
    mimic = fixed.replace('<link name="foot"/>', '''<link name="foot"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>''')
    mimic = mimic.replace('''<joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/></joint>''', '''<joint name="ankle" type="revolute"><parent link="leg"/>
    <child link="foot"/><origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/>
    <mimic joint="hip" multiplier="2" offset="0.1"/></joint>''')
    robot = robodyn.load_urdf(mimic)
    full = robot.full_robot()
    assert (robot.nq, robot.nv, robot.n) == (1, 1, 1) and (full.nq, full.nv) == (2, 2)
    q, v = np.array([0.3]), np.array([-0.7])
    close(robot.integrate(q, v, 0.5), q + 0.5 * v, 1e-15)
    close(robot.difference(q, q + 0.2), [0.2], 1e-15)
    qf, vf = np.array([0.3, 0.7]), np.array([-0.7, -1.4])
    close(robot.momentum(q, v), full.momentum(qf, vf), 1e-14)
    close(robot.center_of_mass(q), full.center_of_mass(qf), 1e-14)


# ---------------------------------------------------------------- command line

def test_cli_floating(tmp_path, capsys):
    """robodyn info / id / simulate on a free-floating robot (a bundled one, and a URDF with
    --floating-base), through the installed console script's entry point main(argv)."""
    import json
    import subprocess
    import sys

    from robodyn.cli import main

    path = tmp_path / "hopper.urdf"
    path.write_text(URDF.replace('<link name="world"/>', "").replace(
        '<joint name="free" type="floating"><parent link="world"/><child link="body"/></joint>',
        ""))
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["floating_base"] is False
    assert main(["info", str(path), "--floating-base", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["nq"], info["nv"], info["floating_base"]) == (8, 7, True)
    q = "0.1 0.2 0.3 0 0 0 1 0.4"
    assert main(["id", str(path), "--floating-base", "--q", q, "--qd", "0", "--qdd", "0",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    robot = robodyn.load_urdf(str(path), floating_base=True)
    qv = np.array([float(x) for x in q.split()])
    close(out["tau"], robot.gravity_torques(qv), 1e-12)
    assert len(out["q"]) == 8 and len(out["tau"]) == 7
    assert main(["id", str(path), "--floating-base", "--q", "1 2 3 4 5 6 7 8"]) != 0
    assert "quaternion" in capsys.readouterr().err
    # a passive simulation of the bundled satellite from its initial state (as a process)
    proc = subprocess.run([sys.executable, "-m", "robodyn.cli", "simulate", "lynch_satellite",
                           "--duration", "0.2", "--controller", "none"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "momentum drift" in proc.stdout and "passive" in proc.stderr
    assert main(["simulate", "lynch_satellite", "--controller", "pd-gravity"]) != 0
