"""Finding and reading the mesh files a URDF names.

A ``filename`` is ``package://PKG/rel``, ``file://PATH``, or a path (relative to the URDF's
folder). ``package://PKG`` is looked up, in this order, in the ``package_path`` folders given
(``--package-path``), ``ROS_PACKAGE_PATH``'s folders, ``AMENT_PREFIX_PATH``'s prefixes
(``PREFIX/share/PKG``) and example-robot-data's share folder (the ``peers`` extra); a folder
of the search path is either the package itself (named PKG) or holds it. The file found must
lie inside that package folder (``..`` and symbolic links cannot leave it); a plain path must
lie inside the URDF's folder or one of the search path's folders. A name that leaves them is
refused (:class:`MeshError`); a file that is not there is a :class:`MeshWarning` and the
caller draws a box instead.

A mesh file is STL, OBJ or COLLADA (DAE), read by trimesh (DAE through pycollada). Before it
is read, its size is checked against ``max_bytes`` and its first bytes against its format (a
binary STL's size is ``84 + 50 * triangles``; an ASCII STL starts with ``solid``; OBJ is text
of OBJ statements; DAE is XML naming COLLADA): a file that is not a mesh is refused without
being read whole. Reads go through :mod:`robodyn.safe_io` (regular files only).
"""

from __future__ import annotations

import io
import os
import struct
import warnings
from pathlib import Path

from ..util import safe_io

__all__ = ["MeshError", "MeshWarning", "MESH_MAX_BYTES", "search_path", "resolve",
           "load_mesh"]

MESH_MAX_BYTES = 32 << 20  # the largest mesh file read: 32 MiB
_HEAD = 4096  # bytes read to recognise a format
_FORMATS = {".stl": "stl", ".obj": "obj", ".dae": "dae"}
_OBJ_WORDS = {b"v", b"vn", b"vt", b"vp", b"f", b"o", b"g", b"s", b"l", b"p", b"mtllib",
              b"usemtl"}


class MeshError(ValueError):
    """A mesh the viewer refuses: outside the allowed folders, or not a mesh."""


class MeshWarning(UserWarning):
    """A mesh that is not there (the link is drawn as a box)."""


def _example_robot_data_roots():
    """example-robot-data's share folders (its package, and the folder of its robots'
    packages), when installed."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        share = Path(distribution("example-robot-data").locate_file("cmeel.prefix/share"))
    except (ImportError, PackageNotFoundError):
        return []
    robots = share / "example-robot-data" / "robots"
    return [p for p in (share, robots) if p.is_dir()]


def search_path(package_path=()):
    """The folders ``package://`` names are looked up in, in order: ``package_path`` (a
    folder or a sequence of them), ``ROS_PACKAGE_PATH``, each ``AMENT_PREFIX_PATH`` prefix's
    ``share``, example-robot-data's share folders."""
    if isinstance(package_path, (str, os.PathLike)):
        package_path = [package_path]
    dirs = [Path(p) for p in package_path]
    dirs += [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    dirs += [Path(p) / "share"
             for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    dirs += _example_robot_data_roots()
    return [d for d in dirs if d.is_dir()]


def _inside(path, folder):
    """Whether the real path of ``path`` lies inside the real path of ``folder``."""
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(folder))
        return True
    except ValueError:
        return False


def _package_dir(name, dirs):
    for d in dirs:
        if d.name == name:
            return d
        if (d / name).is_dir():
            return d / name
    return None


def resolve(filename, base_dir=None, package_path=()):
    """The path of the mesh ``filename`` of a URDF in folder ``base_dir`` (module
    documentation), or None (with a :class:`MeshWarning`) when the file is not there. Raises
    :class:`MeshError` for a name that leaves its package or the allowed folders."""
    dirs = search_path(package_path)
    if filename.startswith("package://"):
        rest = filename[len("package://"):]
        name, _, rel = rest.partition("/")
        if not name or not rel:
            raise MeshError(f"{filename}: expected package://PACKAGE/PATH")
        root = _package_dir(name, dirs)
        if root is None:
            warnings.warn(f"{filename}: package {name!r} not found in the package search path "
                          f"({os.pathsep.join(map(str, dirs)) or 'empty'}); drawn as a box",
                          MeshWarning, stacklevel=2)
            return None
        path = root / rel
        roots = [root]
    else:
        text = filename[len("file://"):] if filename.startswith("file://") else filename
        if "://" in text:
            raise MeshError(f"{filename}: only package://, file:// and paths are read")
        path = Path(text) if os.path.isabs(text) or base_dir is None else Path(base_dir) / text
        roots = ([Path(base_dir)] if base_dir is not None else []) + dirs
    if not any(_inside(path, r) for r in roots):
        raise MeshError(f"{filename}: outside the allowed folders "
                        f"({', '.join(map(str, roots)) or 'none'}); refused")
    if not path.is_file():
        warnings.warn(f"{filename}: no such mesh file ({path}); drawn as a box", MeshWarning,
                      stacklevel=2)
        return None
    return path


def _check_head(head, size, kind, label):
    """Refuse a file whose first bytes (``head``) and size do not fit its format."""
    if kind == "stl":
        if size >= 84 and 84 + 50 * struct.unpack("<I", head[80:84])[0] == size:
            return
        if head.lstrip().lower().startswith(b"solid") and b"\0" not in head:
            return
        raise MeshError(f"{label}: not an STL file (neither a binary STL of 84 + 50 * "
                        "triangles bytes nor ASCII starting with 'solid')")
    if kind == "obj":
        if b"\0" not in head:
            for line in head.splitlines()[:-1] or head.splitlines():
                word = line.strip().split(b" ", 1)[0].split(b"\t", 1)[0]
                if not word or word.startswith(b"#"):
                    continue
                if word in _OBJ_WORDS:
                    return
                break
        raise MeshError(f"{label}: not an OBJ file (no OBJ statement at its start)")
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not (text.startswith(b"<") and b"collada" in head.lower()):
        raise MeshError(f"{label}: not a COLLADA file (no <COLLADA> XML at its start)")


def load_mesh(path, max_bytes=MESH_MAX_BYTES):
    """The trimesh.Trimesh of the mesh file ``path`` (STL, OBJ or DAE; a scene's parts
    concatenated). Raises :class:`MeshError` for an unknown extension, a file over
    ``max_bytes`` or one that is not a mesh (module documentation)."""
    label = os.fsdecode(os.fspath(path))
    kind = _FORMATS.get(Path(label).suffix.lower())
    if kind is None:
        raise MeshError(f"{label}: unsupported mesh format (STL, OBJ and DAE are read)")
    with safe_io.open_regular(path, max_bytes, error=MeshError) as (f, size):
        head = f.read(_HEAD)
        _check_head(head, size, kind, label)
        rest = f.read(max_bytes + 1 - len(head))
    data = head + rest
    if len(data) > max_bytes:
        raise MeshError(f"{label}: more than {max_bytes} bytes")
    import trimesh

    try:
        mesh = trimesh.load(io.BytesIO(data), file_type=kind, force="mesh")
    except Exception as e:  # the mesh library's own errors are many and unrelated
        raise MeshError(f"{label}: cannot read the mesh: {e}") from None
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise MeshError(f"{label}: the file holds no triangles")
    return mesh
