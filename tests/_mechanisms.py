"""Closed-loop mechanisms for the constraint tests, with their closed-form kinematics.

The planar four-bar moves in the x-z plane (joint axes along -y, so a positive angle turns x
towards z, gravity along -z): ground pivots O2 = (0, 0, 0) and O4 = (d, 0, 0), crank a (joint
"crank", absolute angle theta2), coupler b (joint "coupler", relative angle theta3 - theta2),
rocker c (joint "rocker" on the ground at O4, absolute angle theta4); the coupler's tip is held
to the rocker's tip by a planar closure (rows x and z of the rocker's tip frame).
"""

import math

import numpy as np

import robodyn

FOURBAR = dict(a=0.2, b=0.5, c=0.4, d=0.45)  # a Grashof crank-rocker, m


def _rod(name, length):
    """A slender rod along x: 2 kg/m, mass centre at mid-length."""
    m = 2.0 * length
    i = m * length**2 / 12
    return (f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/>'
            f'<mass value="{m}"/><inertia ixx="{1e-4 * m}" iyy="{i}" izz="{i}" ixy="0" '
            'ixz="0" iyz="0"/></inertial></link>')


def fourbar_urdf(a, b, c, d, damping=0.0):
    """The four-bar's spanning tree (crank -> coupler, rocker on the ground) as URDF text."""
    joint = ('<joint name="{n}" type="continuous"><parent link="{p}"/><child link="{ch}"/>'
             '<origin xyz="{x} 0 0"/><axis xyz="0 -1 0"/>'
             f'<dynamics damping="{damping}"/></joint>')
    return ('<robot name="fourbar"><link name="ground"/>' + _rod("crank_link", a)
            + _rod("coupler_link", b) + _rod("rocker_link", c)
            + joint.format(n="crank", p="ground", ch="crank_link", x=0)
            + joint.format(n="coupler", p="crank_link", ch="coupler_link", x=a)
            + joint.format(n="rocker", p="ground", ch="rocker_link", x=d)
            + '</robot>')


def tip(length):
    T = np.eye(4)
    T[0, 3] = length
    return T


def fourbar(actuated=("crank",), baumgarte=(0.0, 0.0), damping=0.0, **dims):
    """(ConstrainedRobot, dims) of the planar four-bar."""
    g = dict(FOURBAR, **dims)
    robot = robodyn.load_urdf(fourbar_urdf(g["a"], g["b"], g["c"], g["d"], damping))
    loop = robodyn.LoopConstraint("rocker_link", "coupler_link", frame1=tip(g["c"]),
                                  frame2=tip(g["b"]), kind="axes", axes=("x", "z"),
                                  baumgarte=baumgarte, name="coupler_rocker")
    return robodyn.ConstrainedRobot(robot, [loop], actuated=actuated), g


def freudenstein(theta2, a, b, c, d, branch=-1):
    """(theta3, theta4): coupler and rocker absolute angles for crank angle theta2, closed form
    (Freudenstein's equation K1 cos t4 - K2 cos t2 + K3 = cos(t2 - t4), Norton's half-angle
    solution; branch -1 is the open circuit)."""
    k1, k2, k3 = d / a, d / c, (a * a - b * b + c * c + d * d) / (2 * a * c)
    A = math.cos(theta2) - k1 - k2 * math.cos(theta2) + k3
    B = -2 * math.sin(theta2)
    C = k1 - (k2 + 1) * math.cos(theta2) + k3
    theta4 = 2 * math.atan2(-B + branch * math.sqrt(B * B - 4 * A * C), 2 * A)
    x = d + c * math.cos(theta4) - a * math.cos(theta2)
    z = c * math.sin(theta4) - a * math.sin(theta2)
    return math.atan2(z, x), theta4


def fourbar_q(theta2, g, branch=-1):
    """The tree's joint angles (crank, coupler relative, rocker) at crank angle theta2."""
    t3, t4 = freudenstein(theta2, g["a"], g["b"], g["c"], g["d"], branch)
    return np.array([theta2, t3 - theta2, t4])
