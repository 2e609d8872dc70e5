"""The C++ headers' layers point one way (docs/design.md "Layers").

Every header of cpp/include/robodyn/ lives in one layer folder; a header includes headers of
its own folder or of a lower one, never of a higher one. The order is declared once, in
LAYERS. Every `robodyn/....hpp` named in the C++ sources, the CMake files and the code
generator's templates is a header that exists (no path from before the headers moved).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "cpp" / "include"

# the layer folders of cpp/include/robodyn/, lowest first: a folder may include its own
# headers and those of the folders before it
LAYERS = (
    "scalar",       # scalar_traits (what an algorithm asks of a scalar), counting, tracing, simd
    "model",        # Model (immutable, built once), Data (the per-call workspace)
    "spatial",      # 3-vector and spatial helpers, link transforms (link, link_turns), joints
    "algorithms",   # kinematics, rnea, crba, aba, kane, factorization, derivatives, regressor, ...
    "constraints",  # closed loops: the loop model, constrained dynamics
    "codegen",      # generated kernels and operation counts (their entry points)
    "simulation",   # control laws, integrators, the fixed-step loop
)

INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*[<"](robodyn/[^">]+)[">]', re.M)
HEADER_PATH = re.compile(r"(?:(?<=include/)|(?<![\w/.\-]))robodyn/[\w/]+\.hpp\b")


def includes(path):
    """The robodyn headers a file includes, as paths relative to cpp/include."""
    return INCLUDE_LINE.findall(path.read_text(encoding="utf-8"))


def layer_violations(include_root=INCLUDE, layers=LAYERS):
    """Every header outside a layer folder and every include that points up or nowhere, one
    line each: "robodyn/FOLDER/NAME.hpp: message"."""
    rank = {name: k for k, name in enumerate(layers)}
    out = []
    for path in sorted((include_root / "robodyn").rglob("*.hpp")):
        rel = path.relative_to(include_root).as_posix()
        parts = rel.split("/")
        if len(parts) != 3 or parts[1] not in rank:
            out.append(f"{rel}: not in a layer folder ({', '.join(layers)})")
            continue
        for target in includes(path):
            folder = target.split("/")[1] if target.count("/") == 2 else None
            if not (include_root / target).is_file():
                out.append(f"{rel}: includes {target}, which does not exist")
            elif folder not in rank:
                out.append(f"{rel}: includes {target}, outside the layer folders")
            elif rank[folder] > rank[parts[1]]:
                out.append(f"{rel}: includes {target} from a higher layer "
                           f"({parts[1]} -> {folder})")
    return out


def test_headers_point_down():
    assert layer_violations() == []


def test_every_layer_folder_is_declared():
    folders = {p.name for p in (INCLUDE / "robodyn").iterdir() if p.is_dir()}
    assert sorted(folders ^ set(LAYERS)) == []


def test_each_layer_is_used_by_the_one_above():
    # the order is not arbitrary: each folder but the lowest two includes the one just below
    # (scalar and model are independent foundations: model does not include scalar)
    used = set()
    for path in (INCLUDE / "robodyn").rglob("*.hpp"):
        src = path.parent.name
        for target in includes(path):
            if target.count("/") == 2 and target.split("/")[1] != src:
                used.add((src, target.split("/")[1]))
    below = {upper: lower for lower, upper in zip(LAYERS[1:], LAYERS[2:])}
    assert sorted((u, l) for u, l in below.items() if (u, l) not in used) == [
        ("codegen", "constraints"),  # codegen.hpp declares entry points over the Model only
    ]


def test_the_check_finds_an_upward_include_and_a_loose_header(tmp_path):
    root = tmp_path / "include"
    for rel, text in {
        "robodyn/model/model.hpp": '#include "robodyn/spatial/spatial.hpp"\n',
        "robodyn/spatial/spatial.hpp": '#include "robodyn/model/model.hpp"\n'
                                       '#include "robodyn/model/gone.hpp"\n',
        "robodyn/loose.hpp": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    assert layer_violations(root, ("model", "spatial")) == [
        "robodyn/loose.hpp: not in a layer folder (model, spatial)",
        "robodyn/model/model.hpp: includes robodyn/spatial/spatial.hpp from a higher layer "
        "(model -> spatial)",
        "robodyn/spatial/spatial.hpp: includes robodyn/model/gone.hpp, which does not exist",
    ]


def _sources():
    patterns = ["cpp/**/*.cpp", "cpp/**/*.hpp", "cpp/**/*.in", "bench/cpp/*", "bench/*.py",
                "python/robodyn/codegen/**/*.py", "CMakeLists.txt", "docs/*.md"]
    for pattern in patterns:
        yield from (p for p in ROOT.glob(pattern) if p.is_file())


def test_every_named_header_exists():
    missing = []
    for path in sorted(set(_sources())):
        for name in HEADER_PATH.findall(path.read_text(encoding="utf-8", errors="replace")):
            if not (INCLUDE / name).is_file():
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert missing == []
