"""The generated constrained forward dynamics kernel, compiled and called (compile tier): its
qdd and lam against the C++ core at consistent states (loops closed, v in J's null space), its
counts equal to those of the emitted code, a wrong input refused; and the command lines on a
URDF with <loop_joint>s."""

import shutil

import numpy as np
import pytest

import robodyn
from robodyn.codegen import constrained as cc
from _cli import run_cli
from test_opcount_constrained import planar, spatial, two_feet

pytestmark = pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None, reason="no C++ compiler")


def close(actual, expected, rtol=1e-12):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def consistent(system, q_guess, hold, rng):
    q = system.assemble(q_guess, hold=hold)
    v = system.project_velocity(q, rng.standard_normal(system.robot.nv), hold=hold)
    return q, v


CASES = {
    "planar_fourbar": (planar, np.array([0.7, 1.0, 1.5]), ("crank_joint",), 0.0, 1),
    "planar_fourbar_point_proximal": (lambda: planar("point"), np.array([0.7, 1.0, 1.5]),
                                      ("crank_joint",), 1e-3, 4),
    "spatial_fourbar": (spatial, np.array([0.3, 0.2, -0.1, 0.4]), (), 0.0, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_equals_the_core(case, tmp_path, monkeypatch, rng):
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path))
    make, guess, hold, mu, iterations = CASES[case]
    system = make()
    kernel = cc.specialize_constrained(system, mu, iterations)
    assert kernel.code.counts["mul"] > 0
    Q, V, T = [], [], []
    for k in range(4):
        q, v = consistent(system, guess + 0.1 * k, hold, rng)
        tau = rng.standard_normal(system.robot.nv)
        qdd, lam = kernel(q, v, tau)
        qdd_c, lam_c = system.forward_dynamics(q, v, tau, mu, iterations, 0.0)
        close(qdd, qdd_c)
        close(lam, lam_c)
        if mu == 0:  # the loop stays closed: J qdd + gamma = 0
            close(system.jacobian(q) @ qdd, -system.bias_acceleration(q, v), 1e-10)
        Q.append(q), V.append(v), T.append(tau)
    qdd_b, lam_b = kernel(np.array(Q), np.array(V), np.array(T))
    qdd_c, lam_c = system.forward_dynamics(np.array(Q), np.array(V), np.array(T), mu,
                                           iterations, 0.0)
    close(qdd_b, qdd_c)
    close(lam_b, lam_c)
    with pytest.raises(ValueError, match="tau: expected shape"):
        kernel(Q[0], V[0], T[0][:-1])
    with pytest.raises(ValueError, match="q: not finite"):
        kernel(np.full_like(Q[0], np.nan), V[0], T[0])


def test_floating_kernel_equals_the_core(tmp_path, monkeypatch):
    """A free-floating tree with two links welded to the world, Baumgarte kd built in."""
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(7)
    system = two_feet(rng, baumgarte=(0.0, 4.0))
    kernel = cc.specialize_constrained(system)
    robot = system.robot
    for _ in range(3):
        q0 = np.zeros(robot.nq)
        q0[6] = 1.0
        q = robot.integrate(q0, rng.uniform(-1, 1, robot.nv), 1.0)
        v, tau = rng.standard_normal(robot.nv), rng.standard_normal(robot.nv)
        for x, y in zip(kernel(q, v, tau), system.forward_dynamics(q, v, tau)):
            close(x, y)


FOURBAR_URDF = """<robot name="loop_fourbar"><link name="ground"/>
<link name="crank"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
 <inertia ixx="0.001" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="coupler"><inertial><origin xyz="0.25 0 0"/><mass value="1.5"/>
 <inertia ixx="0.001" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="rocker"><inertial><origin xyz="0.2 0 0"/><mass value="1.2"/>
 <inertia ixx="0.001" iyy="0.016" izz="0.016" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="crank_joint" type="continuous"><parent link="ground"/><child link="crank"/>
 <axis xyz="0 0 1"/></joint>
<joint name="coupler_joint" type="continuous"><parent link="crank"/><child link="coupler"/>
 <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/></joint>
<joint name="rocker_joint" type="continuous"><parent link="ground"/><child link="rocker"/>
 <origin xyz="0.6 0 0"/><axis xyz="0 0 1"/></joint>
<loop_joint name="rod" type="revolute"><link1 link="coupler" xyz="0.5 0 0" rpy="0 0 0"/>
 <link2 link="rocker" xyz="0.4 0 0" rpy="0 0 0"/></loop_joint>
</robot>"""


def test_command_lines_on_a_loop_urdf(tmp_path):
    """`robodyn opcount` counts constrained forward dynamics of a URDF with <loop_joint>s
    beside the tree's own; `robodyn codegen` writes its constrained kernel too."""
    path = tmp_path / "fourbar.urdf"
    path.write_text(FOURBAR_URDF)
    system = robodyn.load_urdf(str(path))
    out = run_cli("opcount", str(path), "--mu", "1e-6", "--iterations", "2")
    assert out.returncode == 0, out.stderr
    c = cc.constrained_counts(system, 1e-6, 2)
    line = next(x for x in out.stdout.splitlines() if x.strip().startswith("constrained FD"))
    assert line.split()[2:5] == [str(c["mul"]), str(c["add"]), str(c["trig"])]
    assert f"{system.rows} constraint rows, mu = 1e-06, 2 proximal iterations" in out.stdout
    out = run_cli("codegen", str(path), "-o", str(tmp_path / "gen"), "--mu", "1e-6",
                  "--iterations", "2")
    assert out.returncode == 0, out.stderr
    code = cc.generate_constrained(system, mu=1e-6, iterations=2)
    assert (tmp_path / "gen" / "loop_fourbar_constrained.cpp").read_text() == code.source
