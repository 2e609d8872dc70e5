"""Shared helpers of the URDF tests (test_urdf_input.py, test_urdf_fixtures.py,
test_urdf_example_robots.py): the fixture directories, parsing with the mimic warning
silenced, comparisons of two specs' dynamics.
"""

import warnings

import numpy as np

from _load import DATA, urdf_module
from reference import featherstone as F

urdf = urdf_module()
GOOD = DATA / "good_urdf"
BAD = DATA / "bad_urdf"


def parse(source, **kwargs):
    """parse_urdf with the mimic warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return urdf.parse_urdf(source, **kwargs)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def rotation_rpy(roll, pitch, yaw):
    """Rz(yaw) Ry(pitch) Rx(roll) built from Rodrigues rotations (independent of urdf.py)."""
    ex, ey, ez = np.eye(3)
    return F.rot(ez, yaw) @ F.rot(ey, pitch) @ F.rot(ex, roll)


def random_state(n, rng):
    return rng.uniform(-1.5, 1.5, n), rng.standard_normal(n), rng.standard_normal(n)


def same_dynamics(a, b, rng, states=3, tol=1e-10, reordered=False):
    """a and b: same rnea, crba and fk at random states, joints and frames matched by name.

    Unless `reordered`, the joints and frames must also be in the same order.
    """
    names = [x.joint_name for x in a.bodies]
    b_names = [x.joint_name for x in b.bodies]
    assert sorted(names) == sorted(b_names)
    if not reordered:
        assert names == b_names
        assert [f.name for f in a.frames] == [f.name for f in b.frames]
    perm = [b_names.index(name) for name in names]  # b index of each a joint
    b_links = [x.name for x in b.bodies] + [f.name for f in b.frames]
    links = [x.name for x in a.bodies] + [f.name for f in a.frames]
    link_perm = [b_links.index(name) for name in links]
    close(a.gravity, b.gravity, 0.0)
    n = len(names)
    for _ in range(states):
        q, qd, qdd = random_state(n, rng)
        qb, qdb, qddb = np.zeros(n), np.zeros(n), np.zeros(n)
        qb[perm], qdb[perm], qddb[perm] = q, qd, qdd
        close(F.rnea(a, q, qd, qdd), F.rnea(b, qb, qdb, qddb)[perm], tol)
        close(F.crba(a, q), F.crba(b, qb)[np.ix_(perm, perm)], tol)
        poses, b_poses = F.fk(a, q), F.fk(b, qb)
        for k, pose in enumerate(poses):
            close(pose, b_poses[link_perm[k]], tol)
