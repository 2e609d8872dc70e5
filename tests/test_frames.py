"""The internal link frames chosen at model build (model.cpp): a robot described in arbitrary
link frames costs what its DH description costs and computes the same dynamics.

The test robot is a generic DH chain (from_dh); its copy has every link frame turned about its
joint axis by a random angle and slid along it by a random length, the children's origins, the
inertias and a tool frame rewritten to match: the same physical robot at the same q, written
with general constant rotations (as URDF exporters produce). Its operation counts come back to
the DH ones (the build re-expresses the frames: Rx(alpha) Rz(q + offset) links with (a, 0, d)
offsets), and every quantity agrees with the DH robot's.
"""

import copy
import math

import numpy as np
import pytest

import robodyn
from robodyn import opcount
from robodyn.model.spec import Frame


def rot_axis(axis, t):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(t) * K + (1 - math.cos(t)) * K @ K


def reframed(spec, rng):
    """The same robot with link frame i replaced by F_i' = F_i * (slide along the axis, turn
    about the axis)."""
    out = copy.deepcopy(spec)
    n = len(out.bodies)
    G = []  # F_i' = F_i G_i, G_i a 4x4 screw about body i's joint axis (user frame)
    for b in out.bodies:
        a = np.asarray(b.axis, float) / np.linalg.norm(b.axis)
        g = np.eye(4)
        g[:3, :3] = rot_axis(a, rng.uniform(-math.pi, math.pi))
        g[:3, 3] = rng.uniform(-0.3, 0.3) * a if b.joint_type == "revolute" else 0.0
        G.append(g)
    for i, b in enumerate(out.bodies):
        Gp = G[b.parent] if b.parent >= 0 else np.eye(4)
        # origin' = Gp^-1 origin G_i: the joint's pose between the new frames
        b.origin = np.linalg.inv(Gp) @ b.origin @ G[i]
        Gi = np.linalg.inv(G[i])
        b.axis = Gi[:3, :3] @ np.asarray(b.axis, float)
        b.com = Gi[:3, :3] @ np.asarray(b.com, float) + Gi[:3, 3]
        b.inertia = Gi[:3, :3] @ np.asarray(b.inertia, float) @ Gi[:3, :3].T
    for f in out.frames:
        if f.parent >= 0:
            f.pose = np.linalg.inv(G[f.parent]) @ f.pose
    assert n == len(spec.bodies)
    return out


@pytest.mark.parametrize("n", [3, 6, 9])
def test_arbitrary_link_frames_cost_and_compute_what_dh_frames_do(n):
    rng = np.random.default_rng(100 + n)
    dh = robodyn.from_dh(opcount.generic_dh_rows(n, seed=n))
    spec = copy.deepcopy(dh.spec)
    tool = np.eye(4)
    tool[:3, :3] = rot_axis([1, 2, 3], 0.7)
    tool[:3, 3] = [0.1, 0.2, 0.05]
    spec.frames.append(Frame(name="tool", parent=n - 1, pose=tool))
    ref = robodyn.Robot(spec)
    other = robodyn.Robot(reframed(spec, rng))
    # the copy is really written with general rotations
    assert any(not np.allclose(np.abs(b.origin[:3, :3]), np.round(np.abs(b.origin[:3, :3])))
               for b in other.spec.bodies[1:])
    for alg in ("rnea", "crba", "aba"):
        c_ref, c_other = ref.op_counts(alg), other.op_counts(alg)
        # the same Rx Rz form (a joint angle offset costs one addition); without the
        # re-expression the general rotations cost several times more (9-multiply rotations)
        assert c_other["mul"] == c_ref["mul"], (alg, c_ref, c_other)
        assert c_other["add"] <= c_ref["add"] + n, (alg, c_ref, c_other)
    for k in range(5):
        q, qd, qdd = (rng.uniform(-2, 2, n) for _ in range(3))
        tau = ref.inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(other.inverse_dynamics(q, qd, qdd), tau, rtol=1e-10,
                                   atol=1e-10 * np.abs(tau).max())
        M = ref.mass_matrix(q)
        np.testing.assert_allclose(other.mass_matrix(q), M, rtol=1e-10, atol=1e-10 * np.abs(M).max())
        for method in ("aba", "crba"):
            np.testing.assert_allclose(other.forward_dynamics(q, qd, tau, method=method), qdd,
                                       rtol=1e-8, atol=1e-8)
        # the user's frames are kept: the tool pose (last frame) is the same
        np.testing.assert_allclose(other.forward_kinematics(q)[-1], ref.forward_kinematics(q)[-1],
                                   atol=1e-12)
        np.testing.assert_allclose(other.jacobian(q, "tool"), ref.jacobian(q, "tool"), atol=1e-11)
