"""link.hpp's Xup (the link transform of every kind) against the dense 6x6 Plücker transform.

cpp/tests/test_link.cpp builds a tree with every LinkKind (revolute and prismatic with a
permutation, a rotation about x and a general constant rotation, a DH link, a free-flyer), and
six floating trees (one per joint axis +-x, +-y, +-z) whose revolute and prismatic links take
each of the 24 signed permutations with det +1 as their constant rotation (it checks that they
do, as RevPerm / PrisPerm links). On every body, with the kind read at run time, as
with_link's compile-time constant and with crba's dispatch (with_step: the case's kind,
relabelling and parent joint type checked against the body's), it checks E, E^T, x . r, x cross r, A r, X m, X^T f, the
forces of runs of 1-7 columns moved in place (forces_to_parent), E B E^T, the rigid-inertia,
the 6x6 and the aba's (add_transport, with and without kZ2) inertia transports against
X = [[E^T, 0], [-E^T [r], E^T]] built from the cached pose, and that d.r is valid for every
kind at cache level 1. Compiled here like test_noalloc.cpp (cached by a hash of compiler,
flags, sources and headers).
"""

import subprocess

import pytest

from test_noalloc import ROOT, build_cpp_test

SOURCE = ROOT / "cpp" / "tests" / "test_link.cpp"


@pytest.fixture(scope="module")
def link_binary(request, tmp_path_factory):
    return build_cpp_test(request, tmp_path_factory, SOURCE)


def test_xup_matches_the_dense_transform_for_every_link_kind(link_binary):
    res = subprocess.run([str(link_binary)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "ok"
