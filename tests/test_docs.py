"""Every code block of README.md and docs/*.md runs verbatim.

A ```python block runs as written, alone, in a fresh interpreter whose working directory is
an empty temporary folder. A word after the language in the fence line names the test tier
the block needs (```python peers, ```python ros, ```python campaign): such a block runs in
that tier only. In ```sh blocks every `robodyn ...` command (also after `&&`) runs the same way;
other commands there (pip, ROS 2 launchers that run until Ctrl-C) are not run. ```text,
```toml and ```xml blocks are shown, not run. The README's first block is the two commands a
new user runs (the fresh-start tool runs them from there).
"""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)(.*)$")
TIERS = {"peers", "ros", "campaign", "compile", "slow", "view"}
NEEDS = {"peers": "pinocchio", "ros": "rclpy", "campaign": "distributed",
         "view": "viser"}  # skip without
SHOWN = {"text", "toml", "xml", "console-output"}
README_COMMANDS = ['pip install . && robodyn simulate stanford_arm',
                   'pip install ".[test]" && python -m pytest -q -m fast tests']


def blocks(path):
    """(language, tags, first line number, text) of every fenced block of a Markdown file."""
    found, current = [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if current is None and match:
            current = (match.group(1), match.group(2).split(), number, [])
        elif current is not None and line.startswith("```"):
            found.append((*current[:3], "\n".join(current[3]) + "\n"))
            current = None
        elif current is not None:
            current[3].append(line)
    assert current is None, f"{path.name}: unclosed code block at line {current[2]}"
    return found


def _param(path, language, tags, line, text):
    marks = [getattr(pytest.mark, tag) for tag in tags if tag in TIERS]
    return pytest.param(path, language, tags, text, id=f"{path.name}:{line}", marks=marks)


CASES = [_param(p, *b) for p in PAGES for b in blocks(p)]


def _env():
    """The interpreter's environment with this checkout's python/ first (as the tests see it)."""
    import robodyn

    env = dict(os.environ)
    src = str(pathlib.Path(robodyn.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("MPLBACKEND", "Agg")
    return env


def robodyn_commands(text):
    """The `robodyn ...` commands of a shell block, as argument lists (line continuations and
    `&&` chains followed; comments dropped)."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words and words[0] == "robodyn":
                commands.append(words[1:])
    return commands


@pytest.mark.parametrize("path, language, tags, text", CASES)
def test_code_block_runs(path, language, tags, text, tmp_path):
    for tag in tags:
        if tag in NEEDS:
            pytest.importorskip(NEEDS[tag])
    if language == "python":
        proc = subprocess.run([sys.executable, "-c", text], cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{path.name}:\n{text}\n{proc.stderr[-3000:]}"
    elif language == "sh":
        for args in robodyn_commands(text):
            proc = subprocess.run([sys.executable, "-m", "robodyn.cli", *args], cwd=tmp_path,
                                  env=_env(), capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"robodyn {shlex.join(args)}:\n{proc.stderr[-3000:]}"
    else:
        assert language in SHOWN, f"{path.name}: a ```{language} block: tag it " \
                                  f"python, sh or one of {sorted(SHOWN)}"


def test_readme_first_block_is_the_two_commands():
    language, tags, line, text = blocks(ROOT / "README.md")[0]
    assert text.splitlines() == README_COMMANDS


def test_shell_blocks_are_parsed():
    text = "pip install . && robodyn simulate stanford_arm   # comment\nrobodyn-ros2 --x\n" \
           "robodyn info \\\n  intelledex_605 --json\n"
    assert robodyn_commands(text) == [["simulate", "stanford_arm"],
                                      ["info", "intelledex_605", "--json"]]
