"""Shared helpers of the hardening tests (test_hardening_*.py): a chain URDF with chosen
names, a Python subprocess, whether a C++ compiler is present.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

from robodyn.codegen import compiled as codegen_specialize


ROOT = Path(__file__).resolve().parents[1]
HAS_CXX = codegen_specialize._compiler() is not None


def chain_urdf(n, robot_name="chain", link=lambda i: f"l{i}", joint=lambda i: f"j{i}",
               frame=None, com_z="0.05"):
    """A URDF text of an n-link chain, with names from the given functions (XML-escaped)."""
    from xml.sax.saxutils import quoteattr

    parts = [f"<robot name={quoteattr(robot_name)}>", f"<link name={quoteattr(link(0))}/>"]
    for i in range(1, n + 1):
        parts.append(
            f'<link name={quoteattr(link(i))}><inertial><origin xyz="0 0 {com_z}"/>'
            '<mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" '
            'izz="0.005"/></inertial></link>')
        axis = "0 0 1" if i % 2 else "0 1 0"
        parts.append(
            f'<joint name={quoteattr(joint(i))} type="revolute"><parent link={quoteattr(link(i - 1))}/>'
            f'<child link={quoteattr(link(i))}/><origin xyz="0.01 0 0.1" rpy="0 0 0"/>'
            f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="10" velocity="5"/>'
            "</joint>")
    if frame is not None:
        parts.append(f"<link name={quoteattr(frame)}/>")
        parts.append(f'<joint name="tool_joint" type="fixed"><parent link={quoteattr(link(n))}/>'
                     f'<child link={quoteattr(frame)}/></joint>')
    parts.append("</robot>")
    return "\n".join(parts)


def run_python(code, timeout=60, **kw):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, **kw)
