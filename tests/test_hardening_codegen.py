"""Regression tests of the adversarial review (issue 13): each failed on the main of that day.

No code from a URDF: names reach generated C++ only through codegen.embed; the kernel cache
is private and checked.
"""

import os
import re
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robodyn
from robodyn import codegen
from robodyn.codegen import compiled as codegen_specialize
from robodyn.codegen import _kernel_cache as codegen_kernel_cache
from reference import random_models as rm
from _hardening import HAS_CXX, chain_urdf


# ------------------------------------------------------------------ 1. code from a URDF


def _payload(marker):
    return ('arm\nextern "C" int system(const char*); static int x = system("touch '
            + str(marker) + '");\n//')


@pytest.mark.skipif(not HAS_CXX, reason="needs a C++ compiler")
def test_malicious_robot_name_runs_nothing(tmp_path, monkeypatch):
    """The `&#10;` robot name of the report: specialized() compiles and loads the kernels, and
    the shell command in the name does not run (its file is not created)."""
    marker = tmp_path / "pwned"
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path / "cache"))
    name = _payload(marker).replace("\n", "&#10;").replace('"', "&quot;")
    text = chain_urdf(2).replace('<robot name="chain">', f'<robot name="{name}">')
    robot = robodyn.load_urdf(text)
    assert "\n" in robot.name and "system(" in robot.name  # the name is read verbatim
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        special = robot.specialized()
    assert all(special._kernels())  # compiled and loaded
    assert not marker.exists()
    # the same for every name: links, joints and frames carry payloads too
    nasty = lambda tag: _payload(tmp_path / tag) + " */ ??/ \\"  # noqa: E731
    text = chain_urdf(2, robot_name=nasty("robot"), link=lambda i: nasty(f"link{i}"),
                      joint=lambda i: nasty(f"joint{i}"), frame=nasty("frame"))
    robot = robodyn.load_urdf(text)
    gen = codegen.generate(robot)
    for line in gen.source.splitlines():
        assert "system(" not in line or line.startswith("//")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(robot.specialized()._kernels())
    assert not list(tmp_path.glob("robot")) and not list(tmp_path.glob("link*"))
    assert not list(tmp_path.glob("joint*")) and not list(tmp_path.glob("frame"))


def test_cli_codegen_with_malicious_name_writes_inert_files(tmp_path):
    """`robodyn codegen` writes files whose names and text come through embed()."""
    urdf = tmp_path / "evil.urdf"
    name = _payload(tmp_path / "pwned").replace("\n", "&#10;").replace('"', "&quot;")
    urdf.write_text(chain_urdf(2).replace('<robot name="chain">', f'<robot name="../{name}">'))
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "robodyn.cli", "codegen", str(urdf), "-o",
                          str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 2 and all(re.fullmatch(r"[A-Za-z0-9_]+\.(cpp|h)", f) for f in files)
    for f in out.iterdir():
        for line in f.read_text().splitlines():
            assert "system(" not in line or line.startswith("//")


_NASTY = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40) | \
    st.sampled_from(["\n", "*/", "??/", "\\", "a\\", "\"", "\r\n#include <x>", "%0A",
                     "\u2028", "\x00", "a*/b", "??=define", "/*", "x" * 300])


def _placeholder_source(robot_name, link_names, joint_names, frame_name):
    """The source of the 2-link chain with the given names."""
    text = chain_urdf(2, robot_name="R0BOT", link=lambda i: f"L1NK{i}",
                      joint=lambda i: f"J01NT{i}", frame="FR4ME")
    robot = robodyn.load_urdf(text)
    spec = robot.spec
    spec.name = robot_name
    spec.base_name = link_names[0]
    for i, b in enumerate(spec.bodies):
        b.name, b.joint_name = link_names[i + 1], joint_names[i]
    spec.frames[0].name = frame_name
    return robodyn.Robot(spec)


@pytest.fixture(scope="module")
def base_source():
    names = ["R0BOT", ["L1NK0", "L1NK1", "L1NK2"], ["J01NT1", "J01NT2"], "FR4ME"]
    return codegen.generate(_placeholder_source(*names)).source


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(robot=_NASTY, l1=_NASTY, l2=_NASTY, j1=_NASTY, j2=_NASTY, fr=_NASTY)
def test_names_enter_only_through_embed(base_source, robot, l1, l2, j1, j2, fr):
    """The source generated with arbitrary names is the placeholder source with each name
    replaced by embed(name) (identifier or text): identical modulo escaping. And the escaped
    text is inert: one line, no comment end, no trailing backslash, no trigraph, no quote."""
    r = _placeholder_source(robot, ["L1NK0", l1, l2], [j1, j2], fr)
    got = codegen.generate(r).source
    want = base_source
    for placeholder, name in (("R0BOT", robot), ("L1NK1", l1), ("L1NK2", l2),
                              ("J01NT1", j1), ("J01NT2", j2), ("FR4ME", fr)):
        want = want.replace(f"robodyn_{placeholder}_", f"robodyn_{codegen.embed(name, 'identifier')}_")
        want = want.replace(f"'{placeholder}'", f"'{codegen.embed(name, 'text')}'")
    assert got == want
    for name in (robot, l1, l2, j1, j2, fr):
        ident = codegen.embed(name, "identifier")
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident)
        text = codegen.embed(name, "text")
        assert all(" " <= ch <= "~" for ch in text)
        for bad in ("*/", "/*", "\\", "??", '"'):
            assert bad not in text


@pytest.mark.skipif(not HAS_CXX, reason="needs a C++ compiler")
def test_generated_source_with_hostile_names_compiles(tmp_path):
    """The hostile names compile to the same object code as plain ones (-fsyntax-only and a
    full compile of one)."""
    names = ["a\nb */ ??/ \\", "\"; system(\"x\"); //", "\\", "%%%", "\u00e9\u4e2d\U0001F600"]
    r = _placeholder_source(names[0], ["b", names[1], names[2]], [names[3], names[4]], "??/")
    gen = codegen.generate(r)
    src = tmp_path / "k.cpp"
    src.write_text(gen.source)
    res = subprocess.run([*codegen_specialize._compiler().split(), "-std=c++17", "-fsyntax-only",
                          "-Wall", str(src)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr  # e.g. no "multi-line comment" or trigraph warnings


@pytest.mark.skipif(not HAS_CXX, reason="needs a C++ compiler")
def test_kernel_cache_private_and_checked(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(cache))
    robot = robodyn.Robot(rm.random_chain(3, np.random.default_rng(5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        special = robot.specialized()
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700  # tightened
    (lib,) = cache.glob("*.so")
    record = lib.with_suffix(".sha256").read_text()
    assert f"source={codegen.generate(robot).sha256}" in record
    q = np.full(3, 0.3)
    ref = special.inverse_dynamics(q, q, q)

    # a library replaced behind the record's back is not loaded: it is compiled again
    calls = []
    real_run = codegen_specialize.subprocess.run

    def counting_run(*a, **k):
        calls.append(a)
        return real_run(*a, **k)

    monkeypatch.setattr(codegen_specialize.subprocess, "run", counting_run)
    codegen_specialize._LOADED.clear()
    # (a new file, not rewritten in place: the loaded library stays mapped in this process)
    fake = lib.with_name("fake.so")
    fake.write_bytes(b"\x7fELF not what was compiled")
    os.replace(fake, lib)
    assert codegen.compile_kernels(codegen.generate(robot)) == lib
    assert len(calls) == 1 and lib.read_bytes()[:4] == b"\x7fELF"
    assert lib.stat().st_size > 100
    # a record naming another source: compiled again
    lib.with_suffix(".sha256").write_text(record.replace("source=", "source=0"))
    codegen.compile_kernels(codegen.generate(robot))
    assert len(calls) == 2
    # intact: served from the cache
    codegen.compile_kernels(codegen.generate(robot))
    assert len(calls) == 2
    np.testing.assert_array_equal(robot.specialized().inverse_dynamics(q, q, q), ref)


def test_kernel_cache_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBODYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(codegen_specialize.os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(RuntimeError, match="another user"):
        codegen_kernel_cache.private_cache()
