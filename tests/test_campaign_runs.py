"""Campaigns on Dask (robodyn.campaign): a 2-worker LocalCluster on 127.0.0.1 gives the serial
table, failures are rows, a SIGKILLed `robodyn campaign` resumes to the same table."""

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")

import robodyn  # noqa: E402
from robodyn.campaign import campaigns as cp  # noqa: E402
from _campaign import cluster  # noqa: E402,F401  (the module's LocalCluster fixture)

ROBODYN = shutil.which("robodyn") or str(Path(sys.executable).with_name("robodyn"))


def _campaign(**overrides):
    """Twelve short runs of the Stanford arm: a grid of gains (one rejected by the controller:
    kp < 0, one that diverges without saturation) and control rates, times random model
    errors, noise and initial offsets."""
    options = dict(
        controller={"type": "computed-torque", "kp": 400.0, "kd": 40.0, "saturate": False},
        simulation={"duration": 0.3, "control_rate": 1000.0},
        grid={"controller.kp": [400.0, -1.0, 1e6], "simulation.control_rate": [250.0, 1000.0]},
        random={"model.mass_scale": cp.uniform(0.8, 1.2, per="link"),
                "model.inertia_scale": cp.normal(1.0, 0.05),
                "controller.noise_std": cp.uniform(0.0, 1e-3),
                "initial.q_offset": cp.normal(0.0, 0.01, per="joint")},
        samples=2, seed=11, batch=3, trajectories=True, trajectory_stride=10)
    options.update(overrides)
    return cp.Campaign("stanford_arm", **options)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    c = _campaign()
    out = tmp_path_factory.mktemp("serial")
    return c, c.run(out, "serial"), out


def _assert_tables_equal(a, b, rtol=1e-12):
    assert a.schema == b.schema
    assert a.num_rows == b.num_rows
    for name in a.column_names:
        x, y = a[name].to_pylist(), b[name].to_pylist()
        if pa.types.is_floating(a.schema.field(name).type):
            for u, v in zip(x, y):
                assert (u is None) == (v is None), name
                if u is not None:
                    assert math.isclose(u, v, rel_tol=rtol, abs_tol=1e-300), (name, u, v)
        else:
            assert x == y, name


def test_serial_table(serial):
    c, res, out = serial
    t = res.table
    assert t.num_rows == c.runs == 12 and t["run"].to_pylist() == list(range(12))
    assert res.computed == c.batches == 4 and res.skipped == 0
    status = dict(zip(t["run"].to_pylist(), t["status"].to_pylist()))
    errors = dict(zip(t["run"].to_pylist(), t["error"].to_pylist()))
    kp = t["controller.kp"].to_pylist()
    assert sorted(set(t["simulation.control_rate"].to_pylist())) == [250.0, 1000.0]
    for i in range(12):
        if kp[i] < 0:  # a parameter the controller rejects
            assert status[i] == "failed" and errors[i].startswith("ValueError: kp")
        elif kp[i] == 1e6:  # diverges (a 1 ms loop with wn = 1000 rad/s, model errors)
            assert status[i] == "failed" and "SimulationError" in errors[i]
        else:
            assert status[i] == "ok" and errors[i] == ""
    assert res.failed == 8  # 4 rejected, 4 diverged
    ok = [i for i in range(12) if status[i] == "ok"]
    err = t["max_tracking_error"].to_pylist()
    assert all(err[i] is not None and 0 < err[i] < 0.05 for i in ok)
    assert all(t["max_tracking_error"][i].as_py() is None for i in range(12) if i not in ok)
    # per-link mass scales as drawn, in their bounds
    for j in range(6):
        col = t[f"model.mass_scale_{j}"].to_pylist()
        assert all(0.8 <= v <= 1.2 for v in col)


def test_metrics_from_an_independent_simulation(serial):
    """Row i's metrics recomputed from robodyn.simulate with the parameters of the row."""
    c, res, out = serial
    from robodyn import control
    from robodyn.cli import default_reference

    row = res.table.to_pylist()[1]  # kp 400 at 250 Hz, the second random draw
    assert row["status"] == "ok" and row["controller.kp"] == 400.0
    assert row["simulation.control_rate"] == 250.0
    nominal = robodyn.robots.stanford_arm()
    spec = nominal.spec
    for j, b in enumerate(spec.bodies):
        b.mass *= row[f"model.mass_scale_{j}"]
        b.inertia = b.inertia * row["model.inertia_scale"]
    plant = robodyn.Robot(spec)
    ref = default_reference(nominal, 0.3)
    ctrl = control.ComputedTorque(nominal, 400.0, 40.0, saturate=False,
                                  noise_std=row["controller.noise_std"], seed=c.noise_seed(1))
    q0 = ref(0.0)[0] + np.array([row[f"initial.q_offset_{j}"] for j in range(6)])
    sim = robodyn.simulate(plant, ctrl, ref, duration=0.3, control_rate=250.0, q0=q0)
    e = np.abs(sim.q_ref - sim.q)
    assert row["max_tracking_error"] == pytest.approx(e.max(), rel=1e-12)
    assert row["final_tracking_error"] == pytest.approx(e[-1].max(), rel=1e-12)
    assert row["tau_peak"] == pytest.approx(np.abs(sim.tau).max(), rel=1e-12)
    power = np.abs(sim.tau[:-1] * 0.5 * (sim.qd[:-1] + sim.qd[1:])).sum(axis=1)
    assert row["energy"] == pytest.approx(np.sum(power * np.diff(sim.t)), rel=1e-12)
    vmax = plant.velocity_limits
    assert row["velocity_limit_violations"] == int(np.any(np.abs(sim.qd) > vmax, axis=1).sum())
    traj = cp.read_trajectories(out, run=1)
    np.testing.assert_array_equal(traj["t"].to_numpy(), sim.t[::10])
    np.testing.assert_array_equal(traj["q_2"].to_numpy(), sim.q[::10, 2])


def test_same_seed_same_table_and_different_seed_differs(serial, tmp_path):
    c, res, out = serial
    again = _campaign().run(tmp_path / "a", "serial")
    _assert_tables_equal(res.table, again.table, rtol=0.0)
    other = _campaign(seed=12).run(tmp_path / "b", "serial")
    assert other.table["model.mass_scale_0"].to_pylist() != res.table["model.mass_scale_0"].to_pylist()


def test_local_cluster_equals_serial(serial, cluster, tmp_path):
    """The same campaign on a 2-worker LocalCluster (given by its address) equals the serial run,
    failed rows included; trajectories too."""
    c, res, out = serial
    dist = _campaign().run(tmp_path / "d", cluster.scheduler_address, progress=False)
    assert dist.computed == c.batches
    _assert_tables_equal(res.table, dist.table)
    a = cp.read_trajectories(out).sort_by([("run", "ascending"), ("t", "ascending")])
    b = cp.read_trajectories(tmp_path / "d").sort_by([("run", "ascending"), ("t", "ascending")])
    assert a.equals(b)


def test_specialised_campaign_on_the_cluster(cluster, tmp_path):
    """specialized=True: the campaign's robot travels specialised, each worker specialises it
    once; the table equals the serial one, and the generic code's to rounding."""
    options = dict(grid={"controller.kp": [400.0, 900.0]}, random={}, samples=1, batch=1,
                   trajectories=False)
    special = _campaign(specialized=True, **options)
    assert special.robot.is_specialized()
    dist = special.run(tmp_path / "d", cluster.scheduler_address, progress=False)
    ref = special.run(tmp_path / "s", "serial")
    _assert_tables_equal(ref.table, dist.table)
    generic = _campaign(**options).run(tmp_path / "g", "serial")
    assert generic.table.column_names == ref.table.column_names
    for a, b in zip(generic.table.to_pylist(), ref.table.to_pylist()):
        assert a["status"] == b["status"] == "ok"
        assert b["max_tracking_error"] == pytest.approx(a["max_tracking_error"], rel=1e-9)
        assert b["energy"] == pytest.approx(a["energy"], rel=1e-9)


def test_resume_skips_written_batches_and_refuses_another_campaign(serial, tmp_path):
    c, res, out = serial
    target = tmp_path / "r"
    shutil.copytree(out, target)
    (target / "runs" / "part-000001.parquet").unlink()
    (target / "runs" / ".tmp-999-1-part-000002.parquet").write_bytes(b"partial")
    again = _campaign().run(target, "serial")
    assert again.computed == 1 and again.skipped == c.batches - 1
    assert not list((target / "runs").glob(".tmp-*"))
    _assert_tables_equal(res.table, again.table, rtol=0.0)
    with pytest.raises(ValueError, match="different campaign"):
        _campaign(seed=99).run(target, "serial")


def test_toml_campaign_equals_python_campaign(serial, tmp_path):
    c, res, out = serial
    toml = tmp_path / "c.toml"
    toml.write_text(_TOML)
    from_file = cp.Campaign.from_toml(toml)
    assert from_file.fingerprint() == c.fingerprint()


_TOML = """
[campaign]
robot = "stanford_arm"
samples = 2
seed = 11
batch = 3
trajectories = true
trajectory_stride = 10

[controller]
type = "computed-torque"
kp = 400.0
kd = 40.0
saturate = false

[simulation]
duration = 0.3
control_rate = 1000.0

[grid]
"controller.kp" = [400.0, -1.0, 1e6]
"simulation.control_rate" = [250.0, 1000.0]

[random]
"model.mass_scale" = { uniform = [0.8, 1.2], per = "link" }
"model.inertia_scale" = { normal = [1.0, 0.05] }
"controller.noise_std" = { uniform = [0.0, 1e-3] }
"initial.q_offset" = { normal = [0.0, 0.01], per = "joint" }
"""


@pytest.mark.parametrize("text,match", [
    ('robot = "stanford_arm"\n[grid]\n"controller.kq" = [1.0]\n', "controller.kq"),
    ('robot = "stanford_arm"\n[random]\n"controller.kp" = { gauss = [1, 2] }\n', "gauss"),
    ('robot = "stanford_arm"\n[random]\n"controller.kp" = { uniform = [2, 1] }\n', "low <= high"),
    ('robot = "stanford_arm"\nsamples = 0\n', "samples"),
    ('robot = "stanford_arm"\nseed = "1"\n', "seed"),
    ('robot = "stanford_arm"\ncontroller = 3\n', "controller: expected a table"),
    ('robot = "no_such_robot"\n', "no_such_robot"),
    ('robot = "stanford_arm"\n[grid]\n"controller.kp" = [[1, 2]]\n', "6 entries"),
    ('robot = "stanford_arm"\nspeed = 3\n', "speed"),
    ('robot = "stanford_arm"\n[controller]\ntype = "lqr"\n', "lqr"),
    ('robot = "stanford_arm"\n[grid\n', "not valid TOML"),
])
def test_bad_campaign_files(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        cp.Campaign.from_toml(path)


def test_cli_usage_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('robot = "stanford_arm"\n[grid]\n"controller.kq" = [1.0]\n')
    for args, match in ((["campaign", str(bad)], "controller.kq"),
                        (["campaign", str(tmp_path / "missing.toml")], "no such campaign file")):
        p = subprocess.run([ROBODYN, *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and match in p.stderr, p.stderr


_KILL_TOML = """
[campaign]
name = "resume"
robot = "intelledex_605"
seed = 5
samples = 16
batch = 1
output = "out"

[simulation]
duration = 1.0

[random]
"controller.kp" = { uniform = [200.0, 600.0] }
"model.mass_scale" = { uniform = [0.9, 1.1], per = "link" }
"""


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_cli_resumes_after_sigkill(tmp_path):
    """`robodyn campaign` on its embedded local cluster, SIGKILLed (client, nannies and workers:
    its process group) once a few batches are written; the rerun (here in-process, --serial)
    computes the rest, and the table equals the serial one."""
    config = tmp_path / "resume.toml"
    config.write_text(_KILL_TOML)
    runs = tmp_path / "out" / "runs"
    proc = subprocess.Popen([ROBODYN, "campaign", str(config), "--workers", "2", "--quiet"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if len(list(runs.glob("part-*.parquet"))) >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None or _group_alive(proc.pid):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        proc.stderr.close()
    deadline = time.monotonic() + 30
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(proc.pid)
    written = len(list(runs.glob("part-*.parquet")))
    assert 3 <= written < 16
    p = subprocess.run([ROBODYN, "campaign", str(config), "--serial"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"{16 - written} batches computed, {written} already there" in p.stdout
    assert not list(runs.glob(".tmp-*"))
    campaign = cp.Campaign.from_toml(config)
    reference = campaign.run(tmp_path / "serial", "serial")
    _assert_tables_equal(reference.table, cp.read_results(tmp_path / "out"))
    assert reference.failed == 0
