"""The 3-D view in a real browser (tier `view`: the `view` extra, websocket-client and Debian's
chromium, which .ci/run installs): headless Chromium opens the live page of `robodyn view` and
a saved HTML playback, with host names unresolvable and every request recorded. Screenshots
show the robot inside its projected bounding box (the red of the test robot, not a blank
canvas), and those pixels change when a joint slider or the time slider is moved through the
page (a click on the slider, sent through the DevTools protocol); a four-bar's page shows its
loop constraint's green until its toggle hides it. The server and the browser are stopped by
pid within a bound."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("viser")
pytest.importorskip("websocket")

import robodyn  # noqa: E402
from robodyn.view.model import RobotGeometry  # noqa: E402
from robodyn.view.scene import camera_for  # noqa: E402

import _browser  # noqa: E402
import _viewbot  # noqa: E402

if _browser.chromium_path() is None:
    pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)

FOV = 75.0 * np.pi / 180.0  # Viser's initial camera
SHOTS = Path(os.environ.get("ROBODYN_VIEW_SHOTS", "")) if os.environ.get(
    "ROBODYN_VIEW_SHOTS") else None


def _save(img, name):
    """Keep a screenshot when ROBODYN_VIEW_SHOTS names a folder (to look at them)."""
    if SHOTS is not None:
        from PIL import Image

        SHOTS.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(SHOTS / name)


def _box(lo, hi, camera, canvas):
    """The robot's projected bounding box (x0, y0, x1, y1) in page pixels, in the canvas."""
    w, h = canvas["width"], canvas["height"]
    px = _browser.project(_browser.box_corners(lo, hi), camera[0], camera[1], FOV, w, h)
    x0, y0 = np.floor(px.min(axis=0)).astype(int)
    x1, y1 = np.ceil(px.max(axis=0)).astype(int)
    return (max(x0, 0), max(y0, 0), min(x1, int(w)), min(y1, int(h)))


def _shot_until(browser, ok, timeout=60.0):
    """Screenshots until ok(img) (bounded); the last one."""
    deadline = time.monotonic() + timeout
    while True:
        img = browser.screenshot()
        if ok(img) or time.monotonic() > deadline:
            return img
        time.sleep(0.5)


def _settled(read, timeout=30.0):
    """``read()`` once two reads 0.5 s apart agree (the GUI panel has finished its layout)."""
    deadline = time.monotonic() + timeout
    last = read()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = read()
        if now == last:
            return now
        last = now
    return last


def _find_slider(label):
    """JavaScript for the Slider root of the GUI slider labelled ``label`` (None: the playback
    bar's slider of a saved HTML page, the only one there)."""
    if label is None:
        return "document.querySelector('.mantine-Slider-root')"
    return ("(() => { const l = [...document.querySelectorAll('label')].find("
            f"l => l.innerText.trim() === {label!r}); let a = l;"
            " for (let i = 0; a && i < 8; i++, a = a.parentElement) {"
            " const s = a.querySelector('.mantine-Slider-root'); if (s) return s; }"
            " return null; })()")


def _slider(browser, label=None):
    """The page rectangle of a slider's track (:func:`_find_slider`)."""
    return _settled(lambda: browser.wait_for(
        f"(() => {{ const s = {_find_slider(label)}; if (!s) return null;"
        " const r = s.getBoundingClientRect();"
        " return r.width > 0 ? [r.x, r.y, r.width, r.height] : null; })()", timeout=60))


def _slide(browser, fraction, ok, label=None, tries=3):
    """Click a slider's track at ``fraction`` of its width until its value (the hidden input
    Mantine keeps in the slider) satisfies ``ok``; that value."""
    value = None
    for _ in range(tries):
        x, y, w, h = _slider(browser, label)
        browser.click(x + fraction * w, y + h / 2)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            value = float(browser.wait_for(
                f"(() => {{ const s = {_find_slider(label)};"
                " const i = s && s.querySelector('input'); return i ? i.value : null; })()"))
            if ok(value):
                return value
            time.sleep(0.3)
    return value


def _stable_shot(browser, box, timeout=30.0):
    """A screenshot once two taken 0.7 s apart agree inside ``box`` (the frame has settled)."""
    deadline = time.monotonic() + timeout
    last = browser.screenshot()
    while time.monotonic() < deadline:
        time.sleep(0.7)
        now = browser.screenshot()
        if _diff(last, now, box) < 0.3:
            return now
        last = now
    return last


def _checkbox(browser, label):
    """``(centre x, centre y, checked)`` of the GUI checkbox labelled ``label``."""
    return _settled(lambda: browser.wait_for(
        "(() => { const l = [...document.querySelectorAll('label')].find("
        f"l => l.innerText.trim() === {label!r}); if (!l) return null;"
        " const c = document.getElementById(l.htmlFor); if (!c) return null;"
        " const r = c.getBoundingClientRect(); if (r.width === 0) return null;"
        " return [r.x + r.width / 2, r.y + r.height / 2, c.checked ? 1 : 0]; })()", timeout=60))


def _canvas(browser):
    return browser.wait_for(
        "(() => { const c = document.querySelector('canvas');"
        " if (!c) return null; const r = c.getBoundingClientRect();"
        " return r.height > 0 ? {width: r.width, height: r.height} : null; })()", timeout=60)


def _changed(a, b, box):
    """The fraction of the pixels in ``box`` that differ by more than 40 in some channel."""
    x0, y0, x1, y1 = box
    d = np.abs(a[y0:y1, x0:x1].astype(int) - b[y0:y1, x0:x1].astype(int)).max(axis=2)
    return float((d > 40).mean())


def _diff(a, b, box):
    x0, y0, x1, y1 = box
    return float(np.abs(a[y0:y1, x0:x1].astype(int) - b[y0:y1, x0:x1].astype(int)).mean())


def test_live_page_shows_the_robot_a_joint_slider_moves_it_a_toggle_shows_overlays(tmp_path):
    urdf, packages = _viewbot.write(tmp_path)
    robot = robodyn.load_urdf(str(urdf))
    geo = RobotGeometry.build(robot, urdf, [packages])
    camera = camera_for(*geo.bounds(robot, np.zeros(2)))
    # the box swept by the arm as joint 2 turns (the slider goes to 90 % of its range)
    boxes = [geo.bounds(robot, [0.0, a]) for a in np.linspace(0.0, 2.4, 7)]
    lo, hi = np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1])] + sys.path))
    server = subprocess.Popen(
        [sys.executable, "-m", "robodyn.cli", "view", str(urdf), "--package-path",
         str(packages), "--seconds", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, start_new_session=True)
    try:
        line = server.stdout.readline()  # "robodyn view: http://127.0.0.1:PORT/ ..."
        assert line.startswith("robodyn view: http://127.0.0.1:"), line
        url = line.split()[2]
        with _browser.Chromium(1000, 700) as browser:
            browser.open(url)
            canvas = _canvas(browser)
            box = _box(lo, hi, camera, canvas)
            start = _box(*geo.bounds(robot, np.zeros(2)), camera, canvas)
            _shot_until(browser, lambda img: _viewbot.red_fraction(img, start) > 0.1)
            before = _stable_shot(browser, box)
            _save(before, "live_before.png")
            assert _viewbot.red_fraction(before, start) > 0.1  # the robot, not a blank canvas
            assert _slide(browser, 0.9, lambda v: v > 2.0, "j2") > 2.0  # joint j2 to ~2.4 rad
            after = _shot_until(browser, lambda img: _diff(before, img, box) > 3.0, 30)
            after = _stable_shot(browser, box)
            _save(after, "live_after.png")
            assert _diff(before, after, box) > 3.0
            assert _viewbot.red_fraction(after, box) > 0.05
            px, py, shown = _checkbox(browser, "Inertia boxes")  # an overlay's toggle
            assert not shown
            browser.click(px, py)
            boxes = _shot_until(browser, lambda img: _changed(after, img, box) > 0.005, 30)
            _save(boxes, "live_inertia_boxes.png")
            assert _changed(after, boxes, box) > 0.005
            assert browser.outside_requests() == []
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=20)
        assert server.returncode == 0, err
        assert "Traceback" not in err
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def test_saved_html_plays_back_offline_and_the_time_slider_moves_the_robot(tmp_path):
    urdf, packages = _viewbot.write(tmp_path)
    robot = robodyn.load_urdf(str(urdf))
    ref = robodyn.trajectories.smooth([0.0, 0.0], [2.0, 1.6], 1.0)
    res = robodyn.simulate(robot, robodyn.control.ComputedTorque(robot), ref, duration=1.0)
    path = res.save_html(tmp_path / "run.html", urdf=urdf, package_path=[packages])
    geo = RobotGeometry.build(robot, urdf, [packages])
    boxes = [geo.bounds(robot, q) for q in res.q[::50]]
    lo, hi = np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)
    mid = [geo.bounds(robot, res.q[k]) for k in (0, len(res.q) // 2, len(res.q) - 1)]
    camera = camera_for(np.min([b[0] for b in mid], axis=0), np.max([b[1] for b in mid], axis=0))
    with _browser.Chromium(1000, 700) as browser:
        browser.open(Path(path).resolve().as_uri())
        canvas = _canvas(browser)
        box = _box(lo, hi, camera, canvas)
        # t near 0 (the arm upright), which pauses the playback
        assert _slide(browser, 0.02, lambda t: t < 0.1) < 0.1
        # the page draws the scene some time after it loads (longer on a busy machine)
        _shot_until(browser, lambda img: _viewbot.red_fraction(img, box) > 0.05, 30)
        early = _stable_shot(browser, box)
        _save(early, "html_early.png")
        assert _viewbot.red_fraction(early, box) > 0.05
        assert _slide(browser, 0.98, lambda t: t > 0.9) > 0.9  # t near 1 s: both joints turned
        late = _shot_until(browser, lambda img: _diff(early, img, box) > 3.0, 30)
        _save(late, "html_late.png")
        assert _diff(early, late, box) > 3.0
        assert _viewbot.red_fraction(late, box) > 0.05
        assert browser.outside_requests() == []


def test_live_playback_time_slider_moves_the_robot(tmp_path):
    urdf, packages = _viewbot.write(tmp_path)
    robot = robodyn.load_urdf(str(urdf))
    geo = RobotGeometry.build(robot, urdf, [packages])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1])] + sys.path))
    csv = tmp_path / "run.csv"
    server = subprocess.Popen(
        [sys.executable, "-m", "robodyn.cli", "simulate", str(urdf), "--duration", "1",
         "--csv", str(csv), "--quiet", "--view", "--package-path", str(packages),
         "--seconds", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env, start_new_session=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("robodyn view: http://127.0.0.1:"), line + server.stderr.read()
        url = line.split()[2]
        q = np.loadtxt(csv, delimiter=",", skiprows=1)[:, 1:3]
        boxes = [geo.bounds(robot, qk) for qk in q[::50]]
        lo, hi = np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)
        mid = [geo.bounds(robot, q[k]) for k in (0, len(q) // 2, len(q) - 1)]
        camera = camera_for(np.min([b[0] for b in mid], axis=0),
                            np.max([b[1] for b in mid], axis=0))
        with _browser.Chromium(1000, 700) as browser:
            browser.open(url)
            canvas = _canvas(browser)
            box = _box(lo, hi, camera, canvas)
            px, py, playing = _checkbox(browser, "play")
            assert playing
            browser.click(px, py)  # pause
            deadline = time.monotonic() + 30
            while _checkbox(browser, "play")[2] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not _checkbox(browser, "play")[2]
            assert _slide(browser, 0.02, lambda t: t < 0.1, "time (s)") < 0.1
            early = _stable_shot(browser, box)
            _save(early, "playback_early.png")
            assert _viewbot.red_fraction(early, box) > 0.05
            time.sleep(1.0)
            still = browser.screenshot()  # paused: nothing moves
            assert _diff(early, still, box) < 1.0
            assert _slide(browser, 0.98, lambda t: t > 0.9, "time (s)") > 0.9
            late = _shot_until(browser, lambda img: _diff(early, img, box) > 3.0, 30)
            _save(late, "playback_late.png")
            assert _diff(early, late, box) > 3.0
            assert browser.outside_requests() == []
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=20)
        assert server.returncode == 0 and "Traceback" not in err, err
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def _green_fraction(img, box):
    """The fraction of the pixels in ``box`` of the loop constraints' green, shaded."""
    x0, y0, x1, y1 = box
    patch = img[y0:y1, x0:x1].astype(int)
    return float(((patch[..., 1] - patch[..., 0] > 60) & (patch[..., 1] - patch[..., 2] > 30))
                 .mean()) if patch.size else 0.0


def test_four_bar_live_page_shows_its_loop_constraint(tmp_path):
    from test_view_elements import fourbar_urdf

    urdf = tmp_path / "fourbar.urdf"
    urdf.write_text(fourbar_urdf())
    system = robodyn.load_urdf(str(urdf))
    q = np.array([0.7, 1.0, 1.5])  # open: frame 1 and frame 2 apart, the line between them
    geo = RobotGeometry.build(system.robot, urdf)
    lo, hi = geo.bounds(system.robot, q)
    camera = camera_for(lo, hi)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(robodyn.__file__).parents[1])] + sys.path))
    server = subprocess.Popen(
        [sys.executable, "-m", "robodyn.cli", "view", str(urdf), "--q", *map(str, q),
         "--seconds", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env, start_new_session=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("robodyn view: http://127.0.0.1:"), line
        with _browser.Chromium(1000, 700) as browser:
            browser.open(line.split()[2])
            box = _box(lo, hi, camera, _canvas(browser))
            shown = _shot_until(browser, lambda img: _green_fraction(img, box) > 0.002)
            _save(shown, "fourbar_loops.png")
            assert _green_fraction(shown, box) > 0.002  # the markers and the line
            px, py, checked = _checkbox(browser, "Loop constraints")
            assert checked
            browser.click(px, py)
            hidden = _shot_until(browser, lambda img: _green_fraction(img, box) < 1e-4, 30)
            _save(hidden, "fourbar_loops_hidden.png")
            assert _green_fraction(hidden, box) < 1e-4
            assert browser.outside_requests() == []
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=20)
        assert server.returncode == 0 and "Traceback" not in err, err
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
