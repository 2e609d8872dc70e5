"""bench/bench_call_layer.py, the measurement of robodyn's call layer against pybind11 and
nanobind: its comparison modules (bench/call_layer/, built here: the `compile` tier) compute
robodyn's inverse dynamics bit for bit and refuse what robodyn's fast call refuses. Skipped
without nanobind, a tool of the benchmark and not a dependency of robodyn."""

import pathlib
import shutil
import sys

import numpy as np
import pytest

pytest.importorskip("nanobind")

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


@pytest.fixture(scope="module")
def layer():
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found")
    import bench_call_layer as L

    L.build_modules(log=lambda *a: None)
    return L


def _satellite(L):
    """The bundled Lynch satellite on a free-floating base, with its bench case file."""
    import cpp_cases
    import peers

    import robodyn

    text = robodyn.robots.urdf_path("lynch_satellite").read_text()
    robot = robodyn.load_urdf(text, floating_base=True)
    return robot, cpp_cases.write_case(peers.Case("satellite", robot, text), L.BUILD / "cases")


def _robots(L):
    yield L.load_robot("chain7")
    yield _satellite(L)


def test_every_entry_point_equals_robodyn_bit_for_bit(layer):
    for robot, path in _robots(layer):
        table, core = layer.entries(robot, path)
        pool, _ = layer.states(robot, 8, np.random.default_rng(3))
        computed = 0
        for e in table:
            if e.empty:
                continue
            for q, qd, qdd in pool:
                want = robot.inverse_dynamics(q, qd, qdd)
                got = np.full(robot.nv, np.nan)
                if e.out:
                    e.fn(q, qd, qdd, out=got)
                else:
                    got = e.fn(q, qd, qdd)
                np.testing.assert_array_equal(got, want, err_msg=f"{robot.name}: {e.label}")
                computed += 1
        assert computed == 8 * len(pool)


def test_entry_points_refuse_what_robodyn_refuses(layer):
    robot, path = _satellite(layer)
    table, _ = layer.entries(robot, path)
    (q, qd, qdd), = layer.states(robot, 1, np.random.default_rng(4))[0]
    nan = qd.copy()
    nan[2] = np.nan
    not_unit = q.copy()
    not_unit[3:7] *= 1.01
    for args in ((q[:-1], qd, qdd), (q, nan, qdd), (not_unit, qd, qdd)):
        with pytest.raises(ValueError):
            robot.inverse_dynamics(*args)
        for e in table:
            if e.label.startswith(("robodyn", "pybind11 dispatch", "nanobind dispatch",
                                   "METH_FASTCALL")):
                continue
            kw = {"out": np.empty(robot.nv)} if e.out else {}
            with pytest.raises(ValueError):
                e.fn(*args, **kw)


def test_bench_prints_the_table_and_refuses_an_unknown_robot(layer, capsys):
    assert layer.main(["chain6", "--rounds", "1", "--calls", "8"]) == 0
    out = capsys.readouterr().out
    assert "| nanobind nb::ndarray |" in out and "| C++ rnea alone |" in out
    assert layer.main(["no_such_robot", "--rounds", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert "no_such_robot" in err and len(err.splitlines()) == 1
    with pytest.raises(SystemExit):
        layer.main(["chain6", "--calls", "0"])
