"""The package's layers point one way (docs/design.md "Layers").

An AST walk over python/robodyn (every import statement, the ones inside functions too):
a module imports only its own subpackage, a lower layer or the compiled core; never a higher
layer, a sibling of its own rank, the package root, a private name (``_x``) of another module
or a private module of another subpackage. ``ALLOWED`` lists the few exceptions, each with
its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "robodyn"

# subpackage -> rank; a module may import a subpackage of lower rank (or its own)
LAYERS = {
    "util": 0,            # safe file reading, messages
    "model": 1,           # Robot, ModelSpec, coupled joints, Lie groups, momentum
    "constraints": 2,     # closed loops: LoopConstraint, ConstrainedRobot
    "io": 3,              # URDF / xacro / DH readers and writers, the bundled robots
    "control": 4,         # control laws, reference trajectories
    "sim": 5,             # simulate, integrators, results, plots
    "codegen": 5,         # generated kernels, operation counts, published algorithms
    "identification": 5,  # base parameters, least squares
    "campaign": 6,        # Dask campaigns and datasets
    "ros": 7,             # ROS 2 nodes
    "view": 8,            # the 3-D browser viewer
    "cli": 9,             # the command line
}
CORE = "robodyn._core"  # the compiled core: below every layer

# (importing module, imported module): public methods that hand over to a higher layer
# through a one-line import inside the method (keep this list short)
ALLOWED = {
    # Robot.to_urdf(): the URDF writer
    ("robodyn.model.robot", "robodyn.io.urdf_write"),
    # Robot.specialized(): generated kernels
    ("robodyn.model.robot", "robodyn.codegen.compiled"),
    ("robodyn.model.forces.robot", "robodyn.codegen.compiled"),
    # Robot.show(), SimulationResult.show() / save_html(): the 3-D view in the browser
    ("robodyn.model.robot", "robodyn.view"),
    ("robodyn.sim.results", "robodyn.view"),
    # ConstrainedRobot.to_urdf(): the <loop_joint> writer
    ("robodyn.constraints.system", "robodyn.io.loop_urdf"),
    # ConstrainedRobot.show(): the robot and its loop constraints in the browser
    ("robodyn.constraints.system", "robodyn.view"),
    # ConstrainedRobot.with_forces(): its subclass with force elements
    ("robodyn.constraints.system", "robodyn.constraints.forces"),
}


def _module_name(path, package):
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted, package):
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    base = package / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() or \
        dotted == CORE


def _imports(path, package):
    """(line, imported module, imported name or None) of every import in the file."""
    name = _module_name(path, package)
    is_pkg = path.name == "__init__.py"
    here = name if is_pkg else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "robodyn":
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "robodyn":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if _is_module(sub, package):
                    yield node.lineno, sub, None
                else:
                    yield node.lineno, module, alias.name


def _layer(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else None


def violations(package=PACKAGE, layer_of=_layer, ranks=LAYERS, allowed=ALLOWED):
    """Every import that breaks a rule: "file:line: importer -> imported: rule"."""
    out = []
    for path in sorted(package.rglob("*.py")):
        src = _module_name(path, package)
        if src == "robodyn":
            continue  # the package root gathers the public names
        src_layer = layer_of(src)
        for line, module, name in _imports(path, package):
            where = f"{path.relative_to(package.parent)}:{line}: {src} -> {module}"
            if (src, module) in allowed:
                continue
            if module == "robodyn":
                out.append(f"{where}: imports the package root")
                continue
            if not _is_module(module, package):
                out.append(f"{where}: no such module")
                continue
            if name and name.startswith("_") and not name.startswith("__") and module != src:
                out.append(f"{where}: imports the private name {name}")
            if module == CORE:
                continue
            home = src if path.name == "__init__.py" else src.rpartition(".")[0]
            if module.rpartition(".")[2].startswith("_") and \
                    module.rpartition(".")[0] != home:
                out.append(f"{where}: imports a private module of another package")
            dst_layer = layer_of(module)
            if dst_layer != src_layer and (dst_layer is None or src_layer is None
                                           or ranks[dst_layer] >= ranks[src_layer]):
                out.append(f"{where}: imports a higher or sibling layer "
                           f"({src_layer} -> {dst_layer})")
    return out


def test_every_subpackage_has_a_layer():
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert sorted(packages - set(LAYERS)) == []


def test_no_module_outside_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert loose == []


def test_imports_point_down():
    assert violations() == []


def test_the_check_sees_a_bad_import(tmp_path):
    import shutil

    copy = tmp_path / "robodyn"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "data", "__pycache__"))
    robot = copy / "model" / "robot.py"
    robot.write_text(robot.read_text() + "\n\ndef f():\n    from ..sim import simulation\n"
                     "    from .. import __version__\n    from .spec import _x\n")
    found = violations(copy)
    assert len(found) == 3
    assert "higher or sibling layer (model -> sim)" in found[0]
    assert "package root" in found[1]
    assert "private name _x" in found[2]


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
