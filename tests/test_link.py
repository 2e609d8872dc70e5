"""link.hpp's Xup (the link transform of every kind) against the dense 6x6 Plücker transform.

cpp/tests/test_link.cpp builds a tree with every LinkKind (revolute and prismatic with a
permutation, a rotation about x and a general constant rotation, a DH link, a free-flyer) and
checks E, E^T, x cross r, A r, X m, X^T f, E B E^T, the rigid-inertia and the 6x6 inertia
transports against X = [[E^T, 0], [-E^T [r], E^T]] built from the cached pose, and that d.r is
valid for every kind at cache level 1. Compiled here like test_noalloc.cpp (cached by a hash
of compiler, flags, sources and headers).
"""

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from test_noalloc import ROOT, build_key, compiler, eigen_include

SOURCE = ROOT / "cpp" / "tests" / "test_link.cpp"


@pytest.fixture(scope="module")
def link_binary(request, tmp_path_factory):
    cxx = compiler()
    if cxx is None:
        pytest.skip("no C++ compiler found")
    eigen = eigen_include()
    assert eigen is not None, "Eigen headers not found (cmeel-eigen or /usr/include/eigen3)"
    flags = ["-std=c++17", "-O1", "-I", str(ROOT / "cpp" / "include"), "-I", str(eigen)]
    sources = [SOURCE, ROOT / "cpp" / "src" / "model.cpp"]
    key = build_key(cxx, flags, sources)
    cache = getattr(request.config, "cache", None)
    cache_dir = cache.mkdir("robodyn_link") if cache is not None else None
    if cache_dir is not None and (cache_dir / f"test_link-{key}").is_file():
        return cache_dir / f"test_link-{key}"
    build = tmp_path_factory.mktemp("link")
    objects = [build / (s.stem + ".o") for s in sources]

    def compile_one(pair):
        src, obj = pair
        return subprocess.run([cxx, *flags, "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True, timeout=900)

    with ThreadPoolExecutor(len(sources)) as pool:
        results = list(pool.map(compile_one, zip(sources, objects)))
    for res in results:
        assert res.returncode == 0, f"compilation failed:\n{res.stderr[-4000:]}"
    exe = build / "test_link"
    res = subprocess.run([cxx, *map(str, objects), "-o", str(exe)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f"link failed:\n{res.stderr[-4000:]}"
    if cache_dir is None:
        return exe
    for old in cache_dir.glob("test_link-*"):
        old.unlink(missing_ok=True)
    target = cache_dir / f"test_link-{key}"
    shutil.copy2(exe, build / "staged")
    os.replace(build / "staged", target)
    return target


def test_xup_matches_the_dense_transform_for_every_link_kind(link_binary):
    res = subprocess.run([str(link_binary)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "ok"
