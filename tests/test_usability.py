"""What a user meets first: docstrings, the command line's manners (pipes, --version, names,
units, exit codes), pictures of the robot, and the package's import structure."""

import ast
import inspect
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from test_layers import ALLOWED

import robodyn
from robodyn.cli import commands as cli
from robodyn.cli import simulate as cli_simulate

PACKAGE = pathlib.Path(robodyn.__file__).resolve().parent
ROBODYN = shutil.which("robodyn")


def run_cli(*argv, timeout=120):
    """The installed console script, as a user runs it."""
    if ROBODYN is None:
        pytest.skip("the robodyn console script is not on PATH")
    return subprocess.run([ROBODYN, *argv], capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------------------------
# docstrings


def _doc_text(obj, name):
    """The docstring without pybind11's generated signature lines."""
    doc = inspect.getdoc(obj) or ""
    lines = [ln for ln in doc.splitlines()
             if not ln.startswith(f"{name}(") and not ln.startswith("Overloaded function")]
    return " ".join(ln.strip() for ln in lines).strip()


def _public_members(cls):
    for name, _ in inspect.getmembers(cls):
        if not name.startswith("_"):
            yield name, inspect.getattr_static(cls, name)


@pytest.mark.parametrize("cls", [robodyn.Robot, robodyn.SimulationResult,
                                 robodyn.control.ComputedTorque, robodyn.control.PDGravity,
                                 robodyn.control.Feedforward, robodyn.trajectories.Trajectory],
                         ids=lambda c: c.__name__)
def test_every_public_method_has_a_docstring(cls):
    missing = []
    for name, member in _public_members(cls):
        if isinstance(member, property):
            obj = member
        elif callable(member) or isinstance(member, (staticmethod, classmethod)):
            obj = getattr(cls, name)
        else:
            continue  # plain attributes (constants)
        if len(_doc_text(obj, name)) < 12:
            missing.append(name)
    assert not missing, f"{cls.__name__}: no docstring for {', '.join(missing)}"


def test_kinematics_docstrings_say_frame_and_row_order():
    jac = _doc_text(robodyn.Robot.jacobian, "jacobian")
    assert "[angular; linear]" in jac and "base" in jac and "Pinocchio" in jac
    assert "Christoffel" in _doc_text(robodyn.Robot.coriolis_matrix, "coriolis_matrix")
    assert "base" in _doc_text(robodyn.Robot.forward_kinematics, "forward_kinematics")
    assert "armature" in _doc_text(robodyn.Robot.kinetic_energy, "kinetic_energy")
    assert "gravity" in _doc_text(robodyn.Robot.potential_energy, "potential_energy")


def test_public_module_functions_have_docstrings():
    import importlib

    missing = []
    for mod_name in ("robodyn", "robodyn.io.robots", "robodyn.control.trajectories",
                     "robodyn.control", "robodyn.sim.simulation", "robodyn.sim.plotting",
                     "robodyn.codegen.opcount", "robodyn.codegen", "robodyn.io.urdf",
                     "robodyn.io.dh"):
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name, None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                    len(_doc_text(obj, name)) < 20:
                missing.append(f"{mod_name}.{name}")
    assert not missing, f"no docstring: {', '.join(missing)}"


# ---------------------------------------------------------------------------------------------
# the command line


def test_broken_pipe_exits_quietly():
    if ROBODYN is None:
        pytest.skip("the robodyn console script is not on PATH")
    # the reader takes one line and goes away, as `robodyn info ... | head -1` does
    proc = subprocess.Popen([ROBODYN, "info", "stanford_arm", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    try:
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert first.strip() == b"{"
    assert rc == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err


def test_broken_pipe_through_a_shell_pipeline():
    if ROBODYN is None or shutil.which("head") is None:
        pytest.skip("needs the console script and head")
    proc = subprocess.run(f"'{ROBODYN}' info stanford_arm --json | head -1; "
                          "echo status=${PIPESTATUS[0]}", shell=True, capture_output=True,
                          text=True, timeout=60, executable=shutil.which("bash") or "/bin/sh")
    assert "status=0" in proc.stdout, proc.stdout + proc.stderr
    assert "Broken pipe" not in proc.stderr


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"robodyn {robodyn.__version__}"


def test_one_name_resolver_for_every_command(tmp_path):
    names = robodyn.robots.names()
    assert names[:2] == robodyn.robots.available()
    with pytest.raises(ValueError, match="unknown robot 'nope'.*stanford_arm"):
        robodyn.robots.resolve("nope")
    with pytest.raises(FileNotFoundError, match="no such URDF file"):
        robodyn.robots.resolve(str(tmp_path / "missing.urdf"))
    path = tmp_path / "arm.urdf"
    path.write_text(robodyn.robots.intelledex_605().to_urdf())
    assert robodyn.robots.resolve(path).n == 6
    for command in (["info"], ["id"], ["show", "-o", str(tmp_path / "x.png")]):
        proc = run_cli(*command, "nope")
        assert proc.returncode == 2 and "unknown robot 'nope'" in proc.stderr, proc.stderr
    if "ur5" not in names:
        pytest.skip("example-robot-data is not installed")
    ur5 = robodyn.robots.resolve("ur5")
    assert ur5.n == 6
    proc = run_cli("info", "ur5", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n"] == 6


def test_load_urdf_of_a_robot_name_points_to_robots_load():
    with pytest.raises(FileNotFoundError, match=r"robodyn\.robots\.load\('stanford_arm'\)"):
        robodyn.load_urdf("stanford_arm")


def test_id_table_has_units_and_prints_exact_zeros_as_zero():
    proc = run_cli("id", "stanford_arm", "--q", "0.3")
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split() for ln in proc.stdout.splitlines()[2:] if ln.strip()]
    assert len(rows) == 6
    # q, qd, qdd, tau each followed by its unit; the prismatic joint in m and N
    assert rows[0][1:3] == ["0.3", "rad"] and rows[0][-2:][1] == "m"
    assert rows[2][1:3] == ["0.3", "m"] and rows[2][-1] == "N"
    # the last joint turns about the tool axis: no gravity torque, printed as an exact 0
    robot = robodyn.robots.stanford_arm()
    g = robot.gravity_torques(np.full(6, 0.3))
    assert abs(g[5]) < 1e-12 * np.max(np.abs(g))
    assert rows[5][-3:] == ["0", "N", "m"]


def test_info_has_units_per_joint():
    proc = run_cli("info", "stanford_arm")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    prismatic = [ln for ln in lines if "prismatic" in ln]
    assert len(prismatic) == 1 and prismatic[0].rstrip().endswith("m, m/s, N, kg")
    assert any(ln.rstrip().endswith("rad, rad/s, N m, kg m^2") for ln in lines)


def test_default_gains_agree_everywhere():
    from robodyn import control

    robot = robodyn.robots.stanford_arm()
    ct = control.ComputedTorque(robot)
    assert np.all(ct.kp == control.COMPUTED_TORQUE_KP) and np.all(ct.kd == 40.0)
    args = cli.build_parser().parse_args(["simulate", "stanford_arm"])
    ref = cli.default_reference(robot, 1.0)
    made = cli_simulate.make_controller(args, robot, ref)
    assert np.all(made.kp == control.COMPUTED_TORQUE_KP)
    assert np.all(made.kd == control.COMPUTED_TORQUE_KD)
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md")
    if readme.is_file():
        assert "kp=400.0, kd=40.0" in readme.read_text()


def _singular_urdf():
    """Two joints; the outer link is a point mass that sits on the first joint's axis when the
    second joint is at zero, so the mass matrix is singular there (the model is valid)."""
    return """<robot name="fold">
      <link name="base"/>
      <link name="a"><inertial><mass value="1e-9"/><inertia ixx="0" iyy="0" izz="0" ixy="0"
        ixz="0" iyz="0"/></inertial></link>
      <link name="b"><inertial><origin xyz="0 0 1"/><mass value="1"/><inertia ixx="0"
        iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j1" type="continuous"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/></joint>
      <joint name="j2" type="continuous"><parent link="a"/><child link="b"/>
        <axis xyz="1 0 0"/></joint>
    </robot>"""


def test_failure_in_the_middle_of_a_simulation_exits_1(tmp_path):
    path = tmp_path / "fold.urdf"
    path.write_text(_singular_urdf())
    try:
        robot = robodyn.load_urdf(str(path))
    except ValueError as exc:
        pytest.skip(f"the model rejects the singular configuration up front: {exc}")
    with pytest.raises(ValueError):
        robot.forward_dynamics(np.zeros(2), np.zeros(2), np.zeros(2))
    # starts at q2 = 0.2 rad and swings through q2 = 0 under gravity (z up: the mass hangs
    # from the base along z, gravity pulls it over to q2 = pi)
    q0 = "0 -0.2"
    proc = run_cli("simulate", str(path), "--controller", "none", "--q0", q0,
                   "--duration", "3", "--quiet", "--joint-limits", "ignore")
    if proc.returncode == 0:
        pytest.skip("the motion did not reach the singular configuration")
    assert proc.returncode == 1, proc.stderr
    assert "simulation failed after t =" in proc.stderr or "diverged" in proc.stderr
    # a bad option is still a usage error
    assert run_cli("simulate", str(path), "--dt", "-1").returncode == 2


def test_bench_headers_without_pinocchio():
    proc = run_cli("bench", "intelledex_605", "--peers", "none", "--rounds", "3", "--pool",
                   "4", "--batch", "0", "--no-specialized", "--quantities", "id",
                   timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ratio to Pinocchio" not in proc.stdout
    assert "no ratios" in proc.stdout


def test_show_draws_the_robot(tmp_path):
    from PIL import Image

    out = tmp_path / "arm.png"
    proc = run_cli("show", "stanford_arm", "--q", "0.3", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size[0] > 300 and im.size[1] > 300


# ---------------------------------------------------------------------------------------------
# the import structure (STYLE.md rule 13)


def _imports(path):
    """Package-internal modules a file imports (anywhere, lazy imports included)."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = ["robodyn", *rel.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
        pkg = parts
    else:
        pkg = parts[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("robodyn"):
                found.add(name)
            if name.split(".")[0] in ("tests", "reference", "conftest"):
                found.add(name)
    return found


def _module_graph():
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).with_suffix("")
        name = ".".join(["robodyn", *rel.parts])
        name = name[: -len(".__init__")] if name.endswith(".__init__") else name
        modules[name] = path
    graph = {}
    for name, path in modules.items():
        graph[name] = {m for m in _imports(path) if m in modules and m != name} | {
            m for m in _imports(path) if not m.startswith("robodyn")}
    return graph


def test_package_code_imports_neither_the_cli_nor_test_code():
    graph = _module_graph()
    for name, deps in graph.items():
        if name == "robodyn.cli":
            continue
        assert "robodyn.cli" not in deps, f"{name} imports the command line"
        assert not any(not d.startswith("robodyn") for d in deps), f"{name} imports test code"
    assert not any(p.name in ("kane_nie.py", "opfloat.py")
                   for p in (PACKAGE.parent / "tests" / "reference").glob("*.py")) \
        if (PACKAGE.parent / "tests").is_dir() else True


def test_no_import_cycles_between_package_modules():
    graph = _module_graph()
    # robodyn/__init__ re-exports its submodules; cycles through the package itself are the
    # normal Python package pattern, so leave it out
    graph = {k: {d for d in v if d.startswith("robodyn.") and d in graph}
             for k, v in graph.items() if k != "robodyn"}
    # the few public methods that hand over to a higher layer through a one-line import inside
    # the method (Robot.show, Robot.to_urdf, ...) are listed once, in test_layers.ALLOWED; an
    # import inside a method runs after both modules are loaded, so it is not an import cycle
    for importer, imported in ALLOWED:
        graph.get(importer, set()).discard(imported)
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_the_benchmark_loads_only_when_bench_runs():
    code = ("import sys, robodyn.cli as c; p = c.build_parser(); "
            "p.parse_args(['bench', 'stanford_arm']); "
            "assert 'peers' not in sys.modules, 'bench loaded'; "
            "c.main(['info', 'stanford_arm']); "
            "assert 'peers' not in sys.modules, 'bench loaded'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_published_algorithm_ships_with_the_package():
    from robodyn.codegen.published import kane_nie, opfloat

    assert pathlib.Path(kane_nie.__file__).parent == PACKAGE / "codegen" / "published"
    assert callable(kane_nie.inverse_dynamics) and callable(opfloat.count_ops)
    from robodyn import opcount

    assert opcount.published_module() == (kane_nie, opfloat)


# ---------------------------------------------------------------------------------------------
# documentation in step with the running code


DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def test_notation_quotes_the_counts_robodyn_opcount_prints():
    if not (DOCS / "notation.md").is_file():
        pytest.skip("docs/ is not next to the tests")
    from robodyn import opcount

    text = " ".join((DOCS / "notation.md").read_text().split())
    for name, label in (("intelledex_605", "Intelledex 605"), ("stanford_arm", "Stanford arm")):
        c = opcount.published_counts(robodyn.robots.load(name).spec)["kane"]
        mul_add = f"{c['mul']} mul / {c['add']} add" if name == "intelledex_605" else \
            f"{c['mul']} / {c['add']} / {c['trig']}"
        assert f"{label} {mul_add}" in text, f"docs/notation.md: {label} {mul_add}"


def test_opcounts_doc_has_the_figures_the_code_quotes():
    if not (DOCS / "opcounts.md").is_file():
        pytest.skip("docs/ is not next to the tests")
    from robodyn import opcount

    text = (DOCS / "opcounts.md").read_text()
    for rows in opcount.QUOTED.values():
        for _, _, mul, add in rows:
            assert f"| {mul} | {add} |" in text
    for label, cm, ca in opcount.FEATHERSTONE.values():
        assert opcount.formula(cm).replace("n^2", "n²") in text
        assert opcount.formula(ca).replace("n^2", "n²") in text
    assert "Table 10.1" in text and "Featherstone (2008)" in text


def test_animation_gif_is_written(tmp_path):
    from PIL import Image

    robot = robodyn.robots.stanford_arm()
    ref = robodyn.trajectories.stanford_demo(0.4, robot=robot)
    res = robodyn.simulate(robot, robodyn.control.ComputedTorque(robot), ref, duration=0.4)
    path = res.animate(tmp_path / "run.gif", fps=10)
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == 5  # 0.4 s at 10 frames per second
    proc = run_cli("simulate", "intelledex_605", "--duration", "0.2", "--quiet", "--animate",
                   str(tmp_path / "cli.gif"), "--fps", "20")
    assert proc.returncode == 0, proc.stderr
    with Image.open(tmp_path / "cli.gif") as im:
        assert im.format == "GIF" and im.n_frames == 5


_HOPPER = """<robot name="hopper">
  <link name="body"><inertial><mass value="3"/>
    <inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="leg"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hip" type="revolute"><parent link="body"/><child link="leg"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
</robot>
"""


def test_codegen_floating_base_as_a_console_script(tmp_path):
    """`robodyn codegen URDF --floating-base -o DIR` as a user runs it: the kernels of the
    free-floating robot (nq = 8, nv = 7) are written, with its operation counts printed; a
    bundled fixed-base robot with --floating-base is a usage error naming the reason."""
    urdf = tmp_path / "hopper.urdf"
    urdf.write_text(_HOPPER)
    res = run_cli("codegen", str(urdf), "--floating-base", "-o", str(tmp_path / "out"),
                  timeout=300)
    assert res.returncode == 0, res.stderr
    header = (tmp_path / "out" / "hopper.h").read_text()
    robot = robodyn.load_urdf(str(urdf), floating_base=True)
    assert (robot.nq, robot.nv) == (8, 7)
    assert f"ROBODYN_HOPPER_NQ = {robot.nq}, ROBODYN_HOPPER_NV = {robot.nv}" in header
    assert (tmp_path / "out" / "hopper.cpp").stat().st_size > 0
    assert "inverse_dynamics" in res.stdout and "forward_dynamics" in res.stdout
    res = run_cli("codegen", "stanford_arm", "--floating-base", "-o", str(tmp_path / "no"))
    assert res.returncode == 2
    assert "fixed base" in res.stderr and not (tmp_path / "no").exists()
