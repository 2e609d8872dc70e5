"""xacro expansion (robodyn.xacro): a .xacro file runs no code, reads no environment unless
asked, stays within its folders and packages, and is bounded in nesting, size and time; the
rtb-data robot xacros expand to the same URDF as before. docs/security.md, "A xacro file"."""

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

pytest.importorskip("xacrodoc")

import robodyn.io.urdf as urdf  # noqa: E402
from robodyn.io.sources import expand_xacro  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "xacro"
HEAD = '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">\n'
LINKS = ('  <link name="base"/>\n  <joint name="j" type="revolute"><parent link="base"/>'
         '<child link="{child}"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" '
         'velocity="1"/></joint>\n  <link name="{child}"><inertial><mass value="1"/>'
         '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>\n')


def write(folder, name, body, child="tip"):
    """A xacro file: the header, ``body``, a one-joint robot whose moving link is ``child``."""
    path = Path(folder) / name
    path.write_text(HEAD + body + LINKS.format(child=child) + "</robot>\n")
    return path


def expand(path, args=None, xacro_env=False):
    """The expanded URDF text."""
    if xacro_env:
        return expand_xacro(str(path), args, xacro_env)[0]
    return expand_xacro(str(path), args)[0]


# ---------------------------------------------------------------- the same URDF as before

def rtb_data_dir():
    try:
        import rtbdata
    except ImportError:
        return None
    return Path(rtbdata.__file__).resolve().parent


def test_rtb_data_xacros_expand_to_the_same_urdf():
    """Each rtb-data xacro that expanded with Python's eval expands to the same text."""
    root = rtb_data_dir()
    if root is None:
        pytest.skip("rtb-data is not installed")
    if importlib.metadata.version("rtb-data") != "2.0.0" or \
            importlib.metadata.version("xacro") != "2.1.1":
        pytest.skip("the recorded expansions are of rtb-data 2.0.0 with xacro 2.1.1")
    recorded = json.loads((DATA / "rtb_data_expansions.json").read_text())["sha256"]
    assert len(recorded) == 23
    for rel, digest in recorded.items():
        text, _ = expand_xacro(str(root / rel), None)
        text = text.replace(str(root), "<RTB>")
        assert hashlib.sha256(text.encode()).hexdigest() == digest, rel


def test_the_features_robot_descriptions_use_still_expand(tmp_path):
    """Properties, macros with defaults and blocks, includes with a namespace, conditionals,
    $(arg), $(eval), math, radians and the xacro.* free names of a description."""
    (tmp_path / "part.xacro").write_text(
        HEAD + '  <xacro:property name="width" value="0.5"/>\n</robot>\n')
    path = write(tmp_path, "arm.urdf.xacro", """
  <xacro:arg name="side" default="left"/>
  <xacro:include filename="part.xacro" ns="part"/>
  <xacro:property name="L" value="${part.width * 2}"/>
  <xacro:property name="angle" value="${radians(90) + math.pi - pi}"/>
  <xacro:macro name="tag" params="name:=x *origin">
    <xacro:if value="${L > 0.9 and name != 'y'}"><link name="${name}_${L}"/></xacro:if>
  </xacro:macro>
  <xacro:tag name="m"><origin xyz="0 0 0"/></xacro:tag>
  <link name="$(arg side)_$(eval 2 * 3)_${'%.3f' % angle}_${[1, 2][1]}_${max(1, 2)}"/>
""")
    text = expand(path, {"side": "right"})
    assert '<link name="m_1.0"/>' in text and '<link name="right_6_1.571_2_2"/>' in text


# ---------------------------------------------------------------- no code runs

PAYLOAD = ("[c()._module.__builtins__['open']({sentinel!r}, 'w').close() for x in [()] "
           "for c in x.__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings']"
           " and 'a'")


def test_a_xacro_expression_runs_no_code(tmp_path):
    """The comprehension hides its dunder names from xacro's own screening: with Python's
    eval this writes the sentinel file."""
    sentinel = tmp_path / "written_by_the_xacro"
    path = write(tmp_path, "evil.urdf.xacro",
                 f'  <link name="${{{PAYLOAD.format(sentinel=str(sentinel))}}}"/>\n')
    with pytest.raises(urdf.URDFError, match=rf"^{path}: xacro: .*evil.urdf.xacro:2: .*a "
                                             "comprehension is not allowed"):
        urdf.parse_urdf(path)
    assert not sentinel.exists()


@pytest.mark.parametrize("expression, refused", [
    ("().__class__", r"attribute access \(.__class__ of a tuple\)"),
    ("'a'.join(['b'])", r"attribute access \(.join of a str\)"),
    ("getattr(1, 'real')", r"name 'getattr' is not defined"),
    ("python.type(1)", r"name 'python' is not defined"),
    ("xacro.load_yaml('/etc/passwd')", r"name 'xacro' is not defined"),
    ("(lambda: 1)()", "a lambda is not allowed"),
    ("f'x'", "an f-string is not allowed"),
    ("math.__dict__", r"math.__dict__ is not allowed"),
    ("2 ** 2 ** 2 ** 2 ** 2", "4096 bits"),
    ("'%999999999d' % 1", "width or precision"),
    ("'ab' * 10 ** 9", "size limit"),
])
def test_expressions_outside_the_allow_list_are_refused_naming_file_and_line(
        tmp_path, expression, refused):
    path = write(tmp_path, "bad.urdf.xacro",
                 f"  <!-- line 2 -->\n  <link name=\"${{{expression}}}\"/>\n")
    with pytest.raises(urdf.URDFError) as info:
        urdf.parse_urdf(path)
    message = str(info.value)
    assert message.startswith(f"{path}: xacro: {path.resolve()}:3: ${{"), message
    assert "\n" not in message
    assert re.search(refused, message), message


def test_the_environment_is_read_only_when_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBODYN_TEST_SECRET", "hunter2")
    for command in ("env ROBODYN_TEST_SECRET", "optenv ROBODYN_TEST_SECRET none"):
        path = write(tmp_path, "env.urdf.xacro", "", child=f"$({command})")
        with pytest.raises(urdf.URDFError, match=r"env.urdf.xacro:3: \$\(.*env ROBODYN_TEST_"
                                                 r"SECRET.*\): reading the environment .* is off "
                                                 r"\(pass xacro_env=True"):
            urdf.parse_urdf(path)
        assert urdf.parse_urdf(path, xacro_env=True).bodies[0].name == "hunter2"
    cwd = write(tmp_path, "cwd.urdf.xacro", '  <link name="$(cwd)"/>\n')
    with pytest.raises(urdf.URDFError, match="is off"):
        urdf.parse_urdf(cwd)
    with pytest.raises(ValueError, match="xacro_env: given for a source that is not"):
        urdf.parse_urdf(DATA.parent / "good_urdf" / "gripper.urdf", xacro_env=True)


def test_includes_stay_in_the_file_folder_and_its_packages(tmp_path):
    """An include elsewhere (a file the process can read that is not part of the robot
    description) is refused; xacro_env=True allows it."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    secret = outside / "secret.xml"
    secret.write_text(HEAD + '  <link name="SECRET"/>\n</robot>\n')
    robot = tmp_path / "robot"
    robot.mkdir()
    for spec_text in (str(secret), "../elsewhere/secret.xml", "../elsewhere/*.xml"):
        path = write(robot, "inc.urdf.xacro", f'  <xacro:include filename="{spec_text}"/>\n')
        with pytest.raises(urdf.URDFError, match=r"inc.urdf.xacro:2: include .*secret.xml|"
                                                 r"inc.urdf.xacro:2: include .*elsewhere: "
                                                 r"outside the file's folder and packages"):
            urdf.parse_urdf(path)
        assert '<link name="SECRET"/>' in expand(path, xacro_env=True)


def test_a_glob_include_inside_the_folder_expands(tmp_path):
    (tmp_path / "parts").mkdir()
    for name in ("a", "b"):
        (tmp_path / "parts" / f"{name}.xacro").write_text(
            HEAD + f'  <link name="part_{name}"/>\n</robot>\n')
    path = write(tmp_path, "glob.urdf.xacro", '  <xacro:include filename="parts/*.xacro"/>\n')
    text = expand(path)
    assert '<link name="part_a"/>' in text and '<link name="part_b"/>' in text


def test_find_walks_up_to_the_package_and_no_further(tmp_path, monkeypatch):
    """$(find pkg) is the folder above the file whose package.xml names pkg; ROS's package
    paths (ROS_PACKAGE_PATH) are searched only with xacro_env=True."""
    package = tmp_path / "my_robot"
    (package / "urdf").mkdir(parents=True)
    (package / "package.xml").write_text("<package><name>my_robot</name></package>")
    (package / "urdf" / "part.xacro").write_text(
        HEAD + '  <link name="from_my_robot"/>\n</robot>\n')
    other = tmp_path / "ros" / "other_pkg"
    other.mkdir(parents=True)
    (other / "package.xml").write_text("<package><name>other_pkg</name></package>")
    (other / "part.xacro").write_text(HEAD + '  <link name="from_other"/>\n</robot>\n')
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ros"))
    own = write(package / "urdf", "own.urdf.xacro",
                '  <xacro:include filename="$(find my_robot)/urdf/part.xacro"/>\n')
    assert '<link name="from_my_robot"/>' in expand(own)
    ros = write(package / "urdf", "ros.urdf.xacro",
                '  <xacro:include filename="$(find other_pkg)/part.xacro"/>\n')
    with pytest.raises(urdf.URDFError, match=r"ros.urdf.xacro:2: \$\(find other_pkg\): "
                                             "Package not found: other_pkg .*xacro_env=True"):
        urdf.parse_urdf(ros)
    assert '<link name="from_other"/>' in expand(ros, xacro_env=True)


def test_find_of_a_missing_package_with_env_says_not_found(tmp_path, monkeypatch):
    """With xacro_env=True a package in neither ROS_PACKAGE_PATH nor ament's index (set or
    unset) is a clear "Package not found", whichever of rospkg and ament is installed."""
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path))
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    path = write(tmp_path, "missing.urdf.xacro",
                 '  <xacro:include filename="$(find nowhere_pkg)/part.xacro"/>\n')
    with pytest.raises(urdf.URDFError, match=r"Package not found: nowhere_pkg"):
        expand(path, xacro_env=True)


# ---------------------------------------------------------------- bounds

DOUBLING_MACRO = """  <xacro:macro name="d" params="n">
    <xacro:if value="${n > 0}"><xacro:d n="${n-1}"/><xacro:d n="${n-1}"/></xacro:if>
    <frame a="{pad}"/>
  </xacro:macro>
  <xacro:d n="40"/>
"""


def test_a_doubling_macro_is_stopped_by_the_time_limit(tmp_path, monkeypatch):
    monkeypatch.setattr("robodyn.io.xacro.TIME_LIMIT", 1.0)
    path = write(tmp_path, "doubling.urdf.xacro", DOUBLING_MACRO.replace("{pad}", "x"))
    start = time.monotonic()
    with pytest.raises(urdf.URDFError, match=r"time limit of 1 s \(robodyn.xacro.TIME_LIMIT\)"):
        urdf.parse_urdf(path)
    assert time.monotonic() - start < 5.0


def test_a_doubling_macro_is_stopped_by_the_size_counted_while_expanding(tmp_path):
    path = write(tmp_path, "doubling.urdf.xacro", DOUBLING_MACRO.replace("{pad}", "x" * 100_000))
    tracemalloc.start()
    try:
        with pytest.raises(urdf.URDFError, match=r"exceeds the size limit of 1000000 "
                                                 r"characters \(max_bytes=; counted while"):
            urdf.parse_urdf(path, max_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100e6


def test_a_doubling_string_is_stopped_while_expanding(tmp_path):
    """A property that doubles a string 40 times (32 TB) is refused once past max_bytes, and
    the message names the limit (a MemoryError had an empty message)."""
    lines = ['  <xacro:property name="s0" value="abcdefgh"/>\n']
    lines += [f'  <xacro:property name="s{i}" value="${{s{i - 1} + s{i - 1}}}"/>\n'
              for i in range(1, 41)]
    path = write(tmp_path, "string.urdf.xacro", "".join(lines) + '  <link name="${s40}"/>\n')
    start = time.monotonic()
    with pytest.raises(urdf.URDFError, match=r"size limit of 100000 characters"):
        urdf.parse_urdf(path, max_bytes=100_000)
    assert time.monotonic() - start < 5.0


def test_macro_and_include_nesting_are_bounded(tmp_path):
    recursive = write(tmp_path, "recursive.urdf.xacro", """
  <xacro:macro name="d" params="n"><xacro:d n="${n + 1}"/></xacro:macro>
  <xacro:d n="0"/>
""")
    with pytest.raises(urdf.URDFError, match=r"recursive.urdf.xacro:3: <xacro:d>: macros nested "
                                             r"deeper than 100 \(robodyn.xacro.MAX_MACRO_DEPTH"):
        urdf.parse_urdf(recursive)
    itself = write(tmp_path, "itself.urdf.xacro",
                   '  <xacro:include filename="itself.urdf.xacro"/>\n')
    with pytest.raises(urdf.URDFError, match=r"includes nested deeper than 20 "
                                             r"\(robodyn.xacro.MAX_INCLUDE_DEPTH\)"):
        urdf.parse_urdf(itself)


def test_included_files_are_regular_bounded_and_without_dtd(tmp_path):
    fifo = tmp_path / "fifo.xacro"
    os.mkfifo(fifo)
    path = write(tmp_path, "fifo.urdf.xacro", '  <xacro:include filename="fifo.xacro"/>\n')
    with pytest.raises(urdf.URDFError, match="fifo.xacro: cannot read the file: not a regular"):
        urdf.parse_urdf(path)
    (tmp_path / "big.xacro").write_text(HEAD + " " * 5000 + "</robot>")
    path = write(tmp_path, "big.urdf.xacro", '  <xacro:include filename="big.xacro"/>\n')
    with pytest.raises(urdf.URDFError, match=r"big.xacro: \d+ bytes exceed the limit of 4000"):
        urdf.parse_urdf(path, max_bytes=4000)
    (tmp_path / "dtd.xacro").write_text('<!DOCTYPE r [<!ENTITY a "b">]>' + HEAD + "</robot>")
    path = write(tmp_path, "dtd.urdf.xacro", '  <xacro:include filename="dtd.xacro"/>\n')
    with pytest.raises(urdf.URDFError, match="DTD or entity declaration"):
        urdf.parse_urdf(path)
    (tmp_path / "top.urdf.xacro").write_text('<!DOCTYPE r [<!ENTITY a "b">]>' + HEAD + "</robot>")
    with pytest.raises(urdf.URDFError, match="DTD or entity declaration"):
        urdf.parse_urdf(tmp_path / "top.urdf.xacro")


# ---------------------------------------------------------------- the command line

def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "robodyn.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_cli_refuses_the_payload_in_one_line_and_allows_env_on_request(tmp_path):
    pytest.importorskip("robodyn._core")
    sentinel = tmp_path / "written_by_the_xacro"
    evil = write(tmp_path, "evil.urdf.xacro",
                 f'  <link name="${{{PAYLOAD.format(sentinel=str(sentinel))}}}"/>\n')
    res = run_cli("info", evil)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "comprehension" in res.stderr
    assert not sentinel.exists()
    env = write(tmp_path, "env.urdf.xacro", "", child="$(env ROBODYN_TEST_SECRET)")
    secret = {"ROBODYN_TEST_SECRET": "hunter2"}
    res = run_cli("info", env, "--json", env=secret)
    assert res.returncode != 0 and "--xacro-allow-env" in res.stderr
    res = run_cli("info", env, "--json", "--xacro-allow-env", env=secret)
    assert res.returncode == 0, res.stderr
    assert "hunter2" in res.stdout


def test_a_campaign_passes_the_callers_choice_and_its_toml_cannot_set_it(tmp_path,
                                                                         monkeypatch):
    pytest.importorskip("robodyn._core")
    campaign = pytest.importorskip("robodyn.campaign")
    monkeypatch.setenv("ROBODYN_TEST_SECRET", "hunter2")
    path = write(tmp_path, "env.urdf.xacro", "", child="$(env ROBODYN_TEST_SECRET)")
    with pytest.raises(urdf.URDFError, match="reading the environment"):
        campaign.Campaign.from_dict({"robot": str(path)})
    loaded = campaign.Campaign.from_dict({"robot": str(path)}, xacro_env=True)
    assert loaded.robot.spec.bodies[0].name == "hunter2"
    with pytest.raises(ValueError, match="unknown key.*xacro_env"):
        campaign.Campaign.from_dict({"robot": str(path), "xacro_env": True})
