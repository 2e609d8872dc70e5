"""Running the real command line in a subprocess, as a user does, and reading its pictures."""

import os
import pathlib
import subprocess
import sys

import numpy as np

import robodyn

# a two-body robot (a body and a leg on a hip) for the floating-base command-line tests
HOPPER_URDF = """<robot name="hopper">
  <link name="body"><inertial><mass value="3"/>
    <inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="leg"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hip" type="revolute"><parent link="body"/><child link="leg"/>
    <origin xyz="0.1 0 -0.05"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
</robot>"""

# the package under test (the worktree's python/ when PYTHONPATH points there)
_PYTHONPATH = str(pathlib.Path(robodyn.__file__).resolve().parents[1])


def run_cli(*argv, timeout=300, cwd=None):
    """``python -m robodyn.cli ARGV`` with this process's robodyn on the path; the
    CompletedProcess (text stdout and stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PYTHONPATH, env.get("PYTHONPATH")) if p)
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run([sys.executable, "-m", "robodyn.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def stderr_lines(proc):
    """The non-empty lines of a process's stderr."""
    return [ln for ln in proc.stderr.splitlines() if ln.strip()]


def image_rgb(path_or_image):
    """(h, w, 3) uint8 pixels of a PNG (or an already open frame)."""
    from PIL import Image

    if isinstance(path_or_image, (str, os.PathLike)):
        with Image.open(path_or_image) as im:
            return np.asarray(im.convert("RGB"))
    return np.asarray(path_or_image.convert("RGB"))


def gif_frames(path):
    """Every frame of an animated GIF as (h, w, 3) uint8 arrays, as a viewer shows them."""
    from PIL import Image, ImageSequence

    with Image.open(path) as im:
        assert im.format == "GIF"
        return [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(im)]


def colour_pixels(rgb, colour, tol=40):
    """Number of pixels within ``tol`` (per channel) of an RGB ``colour`` (0-255)."""
    return int(np.all(np.abs(rgb.astype(int) - np.asarray(colour)) <= tol, axis=-1).sum())
