"""Headless Chromium driven through the DevTools protocol (websocket-client), for the view tests.

The browser is Debian's ``chromium`` (``.ci/run`` installs it), software WebGL (SwiftShader),
its own profile folder, host names unresolvable (``--host-resolver-rules``: only the IP
literal 127.0.0.1 and ``file://`` reach anything), and every request it makes recorded so a
test can assert that nothing left the machine. It runs in its own process group, stopped by
pid within a bound (:meth:`Chromium.close`).
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import numpy as np

BROWSERS = ("chromium", "chromium-browser")


def chromium_path():
    """The chromium executable, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    """One headless browser with one page (``width`` x ``height`` CSS pixels)."""

    def __init__(self, width=1000, height=700, timeout=60.0):
        import websocket

        self.profile = tempfile.mkdtemp(prefix="robodyn-chromium-")
        self.requests = []  # every URL the page asked for
        self._id = 0
        cmd = [chromium_path(), "--headless", "--no-sandbox", "--use-angle=swiftshader",
               "--enable-unsafe-swiftshader", f"--window-size={width},{height}",
               "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
               f"--user-data-dir={self.profile}", "--no-first-run",
               "--no-default-browser-check", "--disable-extensions", "--disable-sync",
               "--disable-background-networking", "--disable-component-update",
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--no-proxy-server",
               "about:blank"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            port = self._devtools_port(timeout)
            deadline = time.monotonic() + timeout
            page = None
            while page is None and time.monotonic() < deadline:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                            timeout=5) as r:
                    pages = [p for p in json.load(r) if p.get("type") == "page"]
                page = pages[0] if pages else time.sleep(0.2)
            if page is None:
                raise RuntimeError("chromium opened no page")
            self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout,
                                                  suppress_origin=True)
            self.send("Page.enable")
            self.send("Network.enable")
            self.send("Runtime.enable")
        except BaseException:
            self.close()
            raise

    def _devtools_port(self, timeout):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.proc.returncode}")
            try:
                with open(path) as f:
                    text = f.read().split()
                if text:
                    return int(text[0])
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"chromium gave no DevTools port in {timeout} s")

    def send(self, method, timeout=60.0, **params):
        """Call a DevTools method; its result (events seen meanwhile are recorded)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Network.requestWillBeSent":
                self.requests.append(msg["params"]["request"]["url"])
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
        raise TimeoutError(f"{method}: no answer in {timeout} s")

    def open(self, url):
        self.send("Page.navigate", url=url)

    def eval(self, expression):
        """The value of a JavaScript expression in the page."""
        got = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                        awaitPromise=True)
        return got.get("result", {}).get("value")

    def wait_for(self, expression, timeout=60.0):
        """Wait until a JavaScript expression is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(f"{expression!r} stayed false for {timeout} s")

    def screenshot(self):
        """The page as an (H, W, 3) uint8 array."""
        from PIL import Image

        data = self.send("Page.captureScreenshot", format="png")["data"]
        return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))

    def click(self, x, y):
        """A left click at (x, y) CSS pixels."""
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=float(x), y=float(y),
                      button="left", clickCount=1)

    def outside_requests(self):
        """The URLs the page asked for that are neither 127.0.0.1, file:, data: nor blob:."""
        local = ("http://127.0.0.1", "ws://127.0.0.1", "file:", "data:", "blob:",
                 "about:")
        return [u for u in self.requests if not u.startswith(local)]

    def close(self, timeout=10.0):
        """Stop the browser (its process group, by pid), then remove its profile."""
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                ws.close()
            except Exception:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def project(points, position, look_at, fov, width, height):
    """Pixel coordinates (k, 2) of world points seen by a z-up pinhole camera at ``position``
    looking at ``look_at`` with vertical field of view ``fov`` (rad), image width x height."""
    f = np.asarray(look_at, float) - np.asarray(position, float)
    f /= np.linalg.norm(f)
    r = np.cross(f, [0.0, 0.0, 1.0])
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    d = np.asarray(points, float) - position
    x, y, z = d @ r, d @ u, d @ f
    s = (height / 2) / np.tan(fov / 2)
    return np.column_stack([width / 2 + s * x / z, height / 2 - s * y / z])


def box_corners(lo, hi):
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                     for z in (lo[2], hi[2])])
