"""docs/security.md keeps itself true: every statement names the test that checks it.

The page is split into statements (a paragraph or a list item); in every section that does
not open with a placeholder note, each statement (other than a placeholder note, the table or
a lead-in ending with a colon) names at least one test as `file.py::test_name` or says
"(no test: <why>)". Every named test must exist: a function ``test_name`` defined in
``tests/file.py``."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "security.md"
REF = re.compile(r"`(test_\w+\.py)::(test_\w+)`")

# every input surface the page must cover (issue 31)
SURFACES = ["URDF", "xacro", "TOML", "CSV", "Pickles", "Dataset", "kernel cache", "ROS",
            "Command-line", "Arrays", "Identification"]


def sections():
    """(heading, [statement, ...]) for each '## ' section of the page."""
    out = []
    for part in re.split(r"^## ", PAGE.read_text(), flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        statements, current = [], []
        for line in body.splitlines():
            starts_item = line.startswith("- ")
            if not line.strip() or starts_item:
                if current:
                    statements.append(" ".join(current))
                current = [line[2:]] if starts_item else []
            else:
                current.append(line.strip())
        if current:
            statements.append(" ".join(current))
        out.append((heading.strip(), statements))
    return out


def defined_tests(filename):
    tree = ast.parse((ROOT / "tests" / filename).read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_named_test_exists():
    refs = REF.findall(PAGE.read_text())
    assert len(refs) > 40
    missing = []
    cache = {}
    for filename, name in refs:
        if not (ROOT / "tests" / filename).is_file():
            missing.append(f"{filename} (no such file)")
            continue
        if filename not in cache:
            cache[filename] = defined_tests(filename)
        if name not in cache[filename]:
            missing.append(f"{filename}::{name}")
    assert not missing, missing


def test_every_statement_names_a_test():
    unbacked = []
    for heading, statements in sections():
        if statements and "Placeholder" in statements[0]:
            continue  # a section being written elsewhere
        for s in statements:
            if "Placeholder" in s or s.startswith("|") or s.endswith(":"):
                continue  # a note of text to come, the table, a lead-in to a list
                continue
            if not REF.search(s) and "(no test: " not in s:
                unbacked.append(f"{heading}: {s[:80]}")
    assert not unbacked, unbacked


def test_every_input_surface_has_a_section():
    headings = [h for h, _ in sections()]
    for surface in SURFACES:
        assert any(surface.lower() in h.lower() for h in headings), surface
