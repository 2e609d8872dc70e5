"""Generated code is bounded before anything is traced (robodyn.codegen.MAX_OPERATIONS): a
model beyond the bound is refused by generate() with its size named, specialized() and
unpickling a specialised robot warn and fall back to the generic code, and a long chain traces
only its cheap formulations (not the O(n^3) forward dynamics by mass matrix and Cholesky).

The fall-back cases run in a subprocess under a memory and time limit: before the bound, a
200-body chain ran for minutes and ended in std::bad_alloc.
"""

import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import robodyn
import robodyn.cli
from robodyn import codegen
from robodyn.codegen import kernels as codegen_kernels, compiled as codegen_specialize  # noqa: E402,F401
from reference import random_models as rm

TESTS = Path(__file__).resolve().parent
PYTHON_DIR = Path(robodyn.__file__).resolve().parents[1]


def _chain(n):
    return robodyn.Robot(rm.random_chain(n, np.random.default_rng(n)))


def _run_limited(code, timeout=120, memory=2 << 30):
    """Run ``code`` in a fresh interpreter with at most ``memory`` bytes of address space."""
    prelude = textwrap.dedent(f"""
        import resource, sys, warnings
        resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
        sys.path[:0] = [{str(PYTHON_DIR)!r}, {str(TESTS)!r}]
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout)


def test_generate_refuses_beyond_the_bound_naming_the_size():
    robot = _chain(200)
    t0 = time.perf_counter()
    with pytest.raises(codegen.CodeSizeError, match=r"mass_matrix would take [\d,]+ operations "
                       r"\(crba\), over the limit of 60,000") as info:
        codegen.generate(robot)
    assert time.perf_counter() - t0 < 5.0
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)
    # the bound is a parameter; a small robot over a tiny bound is refused too
    with pytest.raises(codegen.CodeSizeError, match="over the limit of 10"):
        codegen.generate(_chain(3), max_operations=10)


def test_cli_codegen_beyond_the_bound_is_one_line(tmp_path, capsys):
    urdf = tmp_path / "chain.urdf"
    urdf.write_text(_chain(5).to_urdf())
    code = robodyn.cli.main(["codegen", str(urdf), "-o", str(tmp_path), "--max-operations", "50"])
    err = capsys.readouterr().err
    assert code != 0 and "over the limit of 50" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_long_chain_traces_only_its_cheap_formulations(monkeypatch):
    traced = []
    real = codegen_kernels.trace

    def recording(robot, algorithm):
        traced.append(algorithm)
        return real(robot, algorithm)

    monkeypatch.setattr(codegen_kernels, "trace", recording)
    gen = codegen.generate(_chain(24))
    # O(n^3) by mass matrix + Cholesky (or Kane + LDL^T): not traced, ABA is
    assert "forward_dynamics" not in traced and "kane_forward" not in traced
    assert gen.kernels["forward_dynamics"].traced == "aba"
    q, qd, x = np.random.default_rng(2).standard_normal((3, 24))
    k = gen.kernels["forward_dynamics"]
    ref = _chain(24).forward_dynamics(q, qd, x)
    np.testing.assert_allclose(codegen.evaluate(k.graph, k.outputs, q, qd, x)[0], ref,
                               rtol=1e-8, atol=1e-8 * np.abs(ref).max())


def test_specialized_beyond_the_bound_warns_and_falls_back():
    res = _run_limited("""
        import time, numpy as np, robodyn
        from reference import random_models as rm
        robot = robodyn.Robot(rm.random_chain(200, np.random.default_rng(200)))
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            special = robot.specialized()
        print("seconds", time.perf_counter() - t0)
        print("specialized", special.is_specialized())
        print("warned", [str(w.message) for w in caught if w.category is RuntimeWarning])
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "specialized False" in res.stdout
    assert "over the limit of 60,000" in res.stdout and "generic algorithms" in res.stdout
    assert float(res.stdout.split("seconds")[1].split()[0]) < 10.0


class _Crafted:
    """Pickles as a specialised Robot of the given model (a file anyone can write)."""

    def __init__(self, spec):
        self.spec = spec

    def __reduce__(self):
        from robodyn.codegen.compiled import rebuild as _rebuild

        return (_rebuild, (robodyn.Robot, self.spec, True))


def test_unpickling_a_crafted_specialised_robot_falls_back(tmp_path):
    path = tmp_path / "robot.pkl"
    path.write_bytes(pickle.dumps(_Crafted(_chain(200).spec)))
    res = _run_limited(f"""
        import pickle, time
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            robot = pickle.loads(open({str(path)!r}, "rb").read())
        print("seconds", time.perf_counter() - t0)
        print("robot", robot.n, robot.is_specialized())
        print("warned", [str(w.message) for w in caught if w.category is RuntimeWarning])
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "robot 200 False" in res.stdout
    assert "over the limit of 60,000" in res.stdout
    assert float(res.stdout.split("seconds")[1].split()[0]) < 10.0
