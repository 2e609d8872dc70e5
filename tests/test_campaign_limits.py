"""A campaign's scheduler connection, size bounds and messages: a peer that is not a Dask
scheduler (an HTTP server, a socket that accepts and never answers) gives one line naming
the address within the connect timeout; a campaign too large to start is refused at once,
naming the key and what to change; the errors of bad samplers and control rates name the
parameter."""

import os
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from robodyn.campaign import campaigns as cp  # noqa: E402

ROBODYN = shutil.which("robodyn") or str(Path(sys.executable).with_name("robodyn"))
CONNECT_TIMEOUT = 4  # s: Dask's connect timeout in the child (30 s by default)

_TOML = """
robot = "stanford_arm"
samples = 2
[simulation]
duration = 0.05
"""


class _Http(socketserver.BaseRequestHandler):
    """A web server's answer to bytes it cannot parse: an HTTP 400 response, then close."""

    def handle(self):
        self.request.settimeout(10)
        try:
            self.request.recv(4096)
            self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                 b"Connection: close\r\n\r\n")
        except OSError:
            pass


@pytest.fixture
def http_peer():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Http)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def silent_peer():
    """Accepts connections (the kernel's backlog) and never reads or answers."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    try:
        yield f"tcp://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@pytest.mark.parametrize("peer", ["http_peer", "silent_peer"])
def test_cli_scheduler_that_is_not_dask(tmp_path, peer, request):
    address = request.getfixturevalue(peer)
    config = tmp_path / "c.toml"
    config.write_text(_TOML)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": f"{CONNECT_TIMEOUT}s"}
    t0 = time.monotonic()
    p = subprocess.run([ROBODYN, "campaign", str(config), "--scheduler", address, "--quiet",
                        "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, env=env)
    elapsed = time.monotonic() - t0
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1, p.stderr
    assert address in lines[0] and "Traceback" not in p.stderr
    assert ("not a Dask scheduler" in lines[0] if peer == "http_peer"
            else "within" in lines[0] or "cannot connect" in lines[0]), lines[0]
    # the connect timeout and the interpreter's start (imports of robodyn and distributed)
    assert elapsed < CONNECT_TIMEOUT + 15, elapsed


def test_huge_campaigns_are_refused_at_once():
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"batch: 30000000 runs in batches of 1 make 30000000 "
                                         r"batches .* raise batch to at least 300\b"):
        cp.Campaign("stanford_arm", samples=30_000_000, batch=1)
    with pytest.raises(ValueError, match=r"samples: 1000000000000000 samples .* over the limit"):
        cp.Campaign("stanford_arm", samples=10**15, batch=10**9)
    assert time.perf_counter() - t0 < 5.0


def test_resume_lists_the_runs_folder_once(tmp_path, monkeypatch):
    c = cp.Campaign("stanford_arm", samples=3, batch=1, simulation={"duration": 0.02})
    c.run(tmp_path, "serial", progress=False)
    calls = [0]
    real = Path.is_file

    def counting(self):
        calls[0] += 1
        return real(self)

    monkeypatch.setattr(Path, "is_file", counting)
    assert c._prepare(tmp_path, False) == []
    assert calls[0] < 3


@pytest.mark.parametrize("value", [{"integers": [0, 1e20]}, {"integers": [0, 2.5]}])
def test_integer_sampler_bounds_name_the_key(value):
    with pytest.raises(ValueError, match=r"random\.controller\.delay: .*int64"):
        cp.Campaign("stanford_arm", random={"controller.delay": value})
    with pytest.raises(ValueError, match=r"random\.controller\.delay: .*int64"):
        cp.Campaign("stanford_arm", random={"controller.delay": _raw_sampler(value["integers"])})


def _raw_sampler(args):
    """A Sampler built without its checks (as a pickle could carry it)."""
    s = object.__new__(cp.Sampler)
    object.__setattr__(s, "kind", "integers")
    object.__setattr__(s, "args", tuple(args))
    object.__setattr__(s, "per", None)
    return s


def test_control_rate_over_max_steps_says_what_to_change(tmp_path):
    c = cp.Campaign("stanford_arm", samples=1, simulation={"duration": 0.01, "dt": 1e-3,
                                                           "control_rate": 1e12})
    row, _ = c.run_one(0)
    assert row["status"] == "failed"
    assert "control_rate: 1e+12 Hz" in row["error"] and "lower the control rate" in row["error"]
