"""robodyn.view without a browser: URDF visuals, mesh resolution and its refusals, inertia boxes,
the poses drawn, and the saved HTML file (the `view` extra: viser, trimesh)."""

import os
import re
import warnings

import numpy as np
import pytest

pytest.importorskip("trimesh")

import robodyn  # noqa: E402
from robodyn import safe_io  # noqa: E402
from robodyn.view import meshes  # noqa: E402
from robodyn.view.meshes import MeshError, MeshWarning  # noqa: E402
from robodyn.view.model import RobotGeometry, inertia_box  # noqa: E402
from robodyn.view.visuals import read_visuals  # noqa: E402

import _viewbot  # noqa: E402


@pytest.fixture
def viewbot(tmp_path):
    return _viewbot.write(tmp_path)


def test_visuals_read_shapes_poses_and_colours(viewbot):
    urdf, _ = viewbot
    v = read_visuals(urdf)
    assert list(v) == ["base", "l1", "l2"]
    (box,), (cyl,), (mesh, sphere) = v["base"], v["l1"], v["l2"]
    assert box.kind == "box" and np.array_equal(box.size, [0.3, 0.3, 0.1])
    assert cyl.kind == "cylinder" and (cyl.radius, cyl.length) == (0.04, 0.4)
    assert np.array_equal(cyl.origin[:3, 3], [0, 0, 0.2])
    assert mesh.filename == "package://viewbot/meshes/arm.stl"
    assert sphere.kind == "sphere" and sphere.radius == 0.05
    assert box.rgba == cyl.rgba == mesh.rgba == (0.9, 0.1, 0.1, 1.0)  # named and inline


def test_visual_rpy_matches_the_urdf_convention():
    text = ('<robot name="r"><link name="a"><visual><origin xyz="1 2 3" rpy="0.1 0.2 0.3"/>'
            '<geometry><box size="1 1 1"/></geometry></visual></link></robot>')
    (v,) = read_visuals(text)["a"]
    r, p, y = 0.1, 0.2, 0.3
    Rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    Ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    Rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    np.testing.assert_allclose(v.origin[:3, :3], Rz @ Ry @ Rx, rtol=0, atol=1e-15)
    assert np.array_equal(v.origin[:3, 3], [1, 2, 3])


def test_bad_visual_is_a_clear_error():
    text = ('<robot name="r"><link name="a"><visual><geometry><box size="1 x 1"/></geometry>'
            '</visual></link></robot>')
    with pytest.raises(ValueError, match=r"link 'a' <visual> 0 <box>.*size"):
        read_visuals(text)


def test_package_uri_found_through_package_path_and_ros_package_path(viewbot, monkeypatch):
    _, packages = viewbot
    uri = "package://viewbot/meshes/arm.stl"
    expected = packages / "viewbot" / "meshes" / "arm.stl"
    assert meshes.resolve(uri, package_path=[packages]) == expected
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(packages / "viewbot"))  # the package itself
    assert meshes.resolve(uri) == expected
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    share = packages.parent / "prefix" / "share"
    share.mkdir(parents=True)
    os.symlink(packages / "viewbot", share / "viewbot")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(packages.parent / "prefix"))
    assert meshes.resolve(uri).resolve() == expected.resolve()


def test_missing_mesh_is_a_warning_and_a_box(viewbot):
    urdf, packages = viewbot
    (packages / "viewbot" / "meshes" / "arm.stl").unlink()
    robot = robodyn.load_urdf(str(urdf))
    with pytest.warns(MeshWarning, match="no such mesh file"):
        geo = RobotGeometry.build(robot, urdf, [packages])
    part = geo.parts[geo.names.index("l2")][0]
    assert part.kind == "box" and part.dims == (0.05, 0.05, 0.05)
    with pytest.warns(MeshWarning, match="package 'viewbot' not found"):
        geo = RobotGeometry.build(robot, urdf, [])
    assert geo.parts[geo.names.index("l2")][0].kind == "box"


def test_package_uri_leaving_its_package_is_refused(viewbot, tmp_path):
    _, packages = viewbot
    (tmp_path / "secret.stl").write_bytes(b"solid x\nendsolid x\n")
    with pytest.raises(MeshError, match="outside the allowed folders"):
        meshes.resolve("package://viewbot/../../secret.stl", package_path=[packages])
    os.symlink(tmp_path / "secret.stl", packages / "viewbot" / "meshes" / "link.stl")
    with pytest.raises(MeshError, match="outside the allowed folders"):
        meshes.resolve("package://viewbot/meshes/link.stl", package_path=[packages])
    with pytest.raises(MeshError, match="outside the allowed folders"):
        meshes.resolve("/etc/passwd.stl", base_dir=packages)
    with pytest.raises(MeshError, match="only package://"):
        meshes.resolve("http://example.com/a.stl", base_dir=packages)


def test_mesh_loads_with_its_vertices(viewbot):
    _, packages = viewbot
    mesh = meshes.load_mesh(packages / "viewbot" / "meshes" / "arm.stl")
    np.testing.assert_allclose(mesh.bounds, [[-0.04, -0.04, -0.15], [0.04, 0.04, 0.15]],
                               rtol=1e-6)


def _count_reads(monkeypatch):
    """Record the bytes every file opened by safe_io.open_regular hands out."""
    got = []
    real = safe_io.open_regular

    class Counting:
        def __init__(self, f):
            self.f = f

        def read(self, n=-1):
            data = self.f.read(n)
            got.append(len(data))
            return data

    from contextlib import contextmanager

    @contextmanager
    def counting(*args, **kwargs):
        with real(*args, **kwargs) as (f, size):
            yield Counting(f), size

    monkeypatch.setattr(safe_io, "open_regular", counting)
    return got


@pytest.mark.parametrize("name,head", [("a.stl", b"\x00" * 84), ("a.obj", b"\x7fELF\x02\x01"),
                                       ("a.dae", b"PK\x03\x04zip"), ("b.stl", b"<html>")])
def test_non_mesh_refused_without_reading_it_whole(tmp_path, monkeypatch, name, head):
    path = tmp_path / name
    path.write_bytes(head + os.urandom(4 << 20))  # 4 MiB that is not a mesh
    got = _count_reads(monkeypatch)
    with pytest.raises(MeshError, match="not an? (STL|OBJ|COLLADA)"):
        meshes.load_mesh(path)
    assert sum(got) <= 4096


def test_mesh_over_the_size_bound_and_devices_refused(viewbot, tmp_path):
    _, packages = viewbot
    path = packages / "viewbot" / "meshes" / "arm.stl"
    with pytest.raises(MeshError, match="exceed the limit of 100"):
        meshes.load_mesh(path, max_bytes=100)
    os.mkfifo(tmp_path / "fifo.stl")
    with pytest.raises(MeshError, match="not a regular file"):
        meshes.load_mesh(tmp_path / "fifo.stl")
    with pytest.raises(MeshError, match="unsupported mesh format"):
        meshes.load_mesh(tmp_path / "a.glb")


def test_inertia_box_has_the_principal_moments():
    rng = np.random.default_rng(3)
    for _ in range(20):
        m = rng.uniform(0.1, 10)
        dims = rng.uniform(0.01, 1.0, 3)
        a, b, c = dims
        I_local = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        got, R = inertia_box(m, Q @ I_local @ Q.T)
        # the box of those edges along R has the same inertia tensor
        A, B, C = got
        I_box = m / 12 * np.diag([B * B + C * C, A * A + C * C, A * A + B * B])
        np.testing.assert_allclose(R @ I_box @ R.T, Q @ I_local @ Q.T, rtol=1e-10,
                                   atol=1e-12 * m)
        np.testing.assert_allclose(sorted(got), sorted(dims), rtol=1e-8)
        assert np.linalg.det(R) > 0


def test_node_poses_are_forward_kinematics(viewbot):
    urdf, packages = viewbot
    robot = robodyn.load_urdf(str(urdf))
    geo = RobotGeometry.build(robot, urdf, [packages])
    q = np.array([0.7, -0.4])
    T = geo.poses(robot, q)[0]
    fk = np.asarray(robot.forward_kinematics(q))
    for k, name in enumerate(geo.names):
        expected = np.eye(4) if geo.index[k] < 0 else fk[geo.index[k]]
        np.testing.assert_array_equal(T[k], expected)
    # the sphere on l2 in the world, by hand: base z 0.05, joint 2 at 0.45 about y
    c1, s1, c2, s2 = np.cos(0.7), np.sin(0.7), np.cos(-0.4), np.sin(-0.4)
    top = np.array([c1 * s2 * 0.3, s1 * s2 * 0.3, 0.45 + c2 * 0.3])
    l2 = geo.names.index("l2")
    np.testing.assert_allclose(T[l2] @ geo.parts[l2][1].origin[:, 3], np.r_[top, 1],
                               rtol=1e-12)
    lo, hi = geo.bounds(robot, q)
    assert np.all(lo <= top - 0.05 + 1e-12) and np.all(hi >= top + 0.05 - 1e-12)


def test_floating_base_nodes_move_with_the_base():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = robodyn.robots.load("lynch_satellite")
    geo = RobotGeometry.build(robot, None)
    assert geo.floating and -1 not in geo.index
    q = np.zeros(robot.nq)
    q[:3], q[3:7] = [1.0, 2.0, 3.0], [0, 0, np.sin(0.5), np.cos(0.5)]
    T = geo.poses(robot, q)[0]
    np.testing.assert_allclose(T[0][:3, 3], [1, 2, 3], rtol=1e-15)
    np.testing.assert_allclose(T[0][:3, :3] @ [1, 0, 0], [np.cos(1), np.sin(1), 0], atol=1e-15)


def test_saved_html_holds_everything(viewbot, tmp_path):
    pytest.importorskip("viser")
    urdf, packages = viewbot
    robot = robodyn.load_urdf(str(urdf))
    ref = robodyn.trajectories.smooth([0, 0], [1.5, 1.0], 0.5)
    res = robodyn.simulate(robot, robodyn.control.ComputedTorque(robot), ref, duration=0.5)
    path = res.save_html(tmp_path / "run.html", urdf=urdf, package_path=[packages], fps=20)
    text = open(path, encoding="utf-8").read()
    assert "window.__VISER_EMBED_DATA__" in text
    # nothing to fetch: no script, style, image or font from a URL
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"""(import|fetch)\(\s*["']https?:""", text)
    assert 0.7e6 < os.path.getsize(path) < 2e6
    with pytest.raises(ValueError, match="fps"):
        res.save_html(tmp_path / "x.html", urdf=urdf, package_path=[packages], fps=0)


def test_talos_ten_second_html_size(tmp_path):
    """The figure of docs/view.md: a 10 s run of Talos (floating base, 52 meshes) saved as
    HTML at 30 frames per second is about 3.4 MB, every mesh found."""
    pytest.importorskip("viser")
    ur5 = robodyn.robots.example_robot_data_urdf("ur5")
    if ur5 is None:
        pytest.skip("example-robot-data is not installed")
    urdf = ur5.parents[2] / "talos_data" / "robots" / "talos_reduced.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", robodyn.urdf.URDFWarning)
        robot = robodyn.load_urdf(str(urdf), floating_base=True)
    robot.gravity = [0.0, 0.0, 0.0]
    q0 = np.zeros(robot.nq)
    q0[2], q0[6] = 1.0, 1.0
    qd0 = np.zeros(robot.nv)
    qd0[:6] = [0.3, 0.2, 0.5, 0.0, 0.0, 0.1]
    res = robodyn.simulate(robot, None, None, duration=10.0, q0=q0, qd0=qd0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)  # every mesh is found
        path = res.save_html(tmp_path / "talos.html", urdf=urdf)
    size = os.path.getsize(path)
    assert 3.0e6 < size < 3.8e6, size


def _cli(*argv, timeout=120):
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1])] + sys.path))
    return subprocess.run([sys.executable, "-m", "robodyn.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_simulate_view_and_html_from_the_command_line(tmp_path):
    pytest.importorskip("viser")
    html = tmp_path / "run.html"
    proc = _cli("simulate", "intelledex_605", "--duration", "0.2", "--html", html, "--view",
                "--seconds", "1")
    assert proc.returncode == 0, proc.stderr
    assert "robodyn view: http://127.0.0.1:" in proc.stdout and f"wrote {html}" in proc.stdout
    assert html.stat().st_size > 0.8e6 and "Traceback" not in proc.stderr
    proc = _cli("view", "intelledex_605", "--q", "1", "2")
    assert proc.returncode == 2 and "--q: expected 6 values" in proc.stderr
    proc = _cli("view", "--run", "3")
    assert proc.returncode == 2 and "--run: needs --campaign DIR" in proc.stderr


def test_campaign_run_played_back(tmp_path):
    pytest.importorskip("viser")
    pytest.importorskip("pyarrow")
    from robodyn.campaign import Campaign, read_trajectories
    from robodyn.view.command import campaign_result

    c = Campaign("intelledex_605", simulation={"duration": 0.2},
                 grid={"controller.kp": [100.0, 400.0]}, samples=1, trajectories=True)
    c.run(tmp_path / "out", "serial", progress=False)
    robot = robodyn.robots.load("intelledex_605")
    res = campaign_result(tmp_path / "out", 1, robot)
    table = read_trajectories(tmp_path / "out", run=1).to_pydict()
    np.testing.assert_array_equal(res.q[:, 2], table["q_2"])
    np.testing.assert_array_equal(res.q_ref[:, 5], table["q_ref_5"])
    assert res.robot is robot
    proc = _cli("view", "--campaign", tmp_path / "out", "--run", "1", "--seconds", "1")
    assert proc.returncode == 0, proc.stderr
    assert "robodyn view: http://127.0.0.1:" in proc.stdout
    proc = _cli("view", "--campaign", tmp_path / "out", "--run", "7", "--seconds", "1")
    assert proc.returncode == 2 and "no trajectory of run 7" in proc.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_view_stops_cleanly_on_ctrl_c_and_sigterm(sig):
    pytest.importorskip("viser")
    import signal
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1])] + sys.path))
    import sysconfig

    # the console script, as a user starts it (its entry point with this checkout's robodyn)
    exe = Path(sysconfig.get_path("scripts")) / "robodyn"
    if not exe.exists():
        pytest.skip("the robodyn console script is not installed")
    proc = subprocess.Popen([str(exe), "view", "intelledex_605"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("robodyn view: http://127.0.0.1:"), line
        proc.send_signal(getattr(signal, sig))
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0 and err == "", err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_unknown_geometry_is_skipped_with_a_warning():
    text = ('<robot name="r"><link name="a"><visual><geometry><capsule radius="1" length="2"/>'
            '</geometry></visual><visual><geometry><sphere radius="0.5"/></geometry></visual>'
            '</link></robot>')
    with pytest.warns(robodyn.urdf.URDFWarning, match=r"<capsule>: not drawn"):
        v = read_visuals(text)
    assert [x.kind for x in v["a"]] == ["sphere"]


def test_server_binds_127_0_0_1_only():
    pytest.importorskip("viser")
    import socket

    from robodyn.view import Viewer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = robodyn.robots.load("intelledex_605")
    with Viewer(robot) as v:
        port = v.server.get_port()
        assert v.server.get_host() == "127.0.0.1" and v.url == f"http://127.0.0.1:{port}/"
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        # another address of this machine (127.0.0.2 is loopback too) is not served
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", port), timeout=5).close()
