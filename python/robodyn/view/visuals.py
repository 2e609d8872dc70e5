"""The ``<visual>`` elements of a URDF: what each link looks like.

robodyn's URDF reader keeps only what the dynamics need (docs/urdf.md) and drops geometry, so
the viewer reads the same file again, through the same bounded reader (a ``.xacro`` expanded
the same way, the same size limit), and keeps, per link, each visual's pose in the link frame,
its shape (box, cylinder, sphere or mesh) and its colour (its own ``<material><color>`` or a
named top-level ``<material>``). Nothing named by the file is opened here: a mesh is a
filename, resolved and read by :mod:`robodyn.view.meshes`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..io.sources import read_source
from ..io.urdf_elements import Reader, pose
from ..io.urdf_source import MAX_BYTES, URDFWarning, parse_xml

__all__ = ["Visual", "read_visuals"]

DEFAULT_RGBA = (0.55, 0.57, 0.62, 1.0)


@dataclass
class Visual:
    """One ``<visual>`` of a link: ``kind`` "box" (``size`` its three edges), "cylinder"
    (``radius``, ``length`` along z), "sphere" (``radius``) or "mesh" (``filename`` as written,
    ``scale`` (3,)); ``origin`` (4, 4) its pose in the link frame; ``rgba`` in [0, 1] or None
    when the file gives no colour."""

    link: str
    kind: str
    origin: np.ndarray
    size: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0
    length: float = 0.0
    filename: str = ""
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    rgba: tuple | None = None


def _rgba(reader, material, named, where):
    """The colour of a <material>: its <color rgba>, else the named top-level material's."""
    if material is None:
        return None
    color = material.find("color")
    if color is not None and color.get("rgba") is not None:
        values = _four(reader, color, where)
        return tuple(float(np.clip(v, 0.0, 1.0)) for v in values)
    return named.get(material.get("name", ""))


def _four(reader, el, where):
    """The four numbers of an rgba attribute (a clear error otherwise)."""
    text = el.get("rgba", "")
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        values = []
    if len(values) != 4 or not all(np.isfinite(values)):
        raise reader.error(f"{where} <color>", f"rgba: expected four numbers, got {text!r}")
    return values


def _geometry(reader, link, visual, where):
    """The Visual of one <visual> element (None when it has no geometry)."""
    geometry = visual.find("geometry")
    if geometry is None or len(geometry) == 0:
        return None
    shape = geometry[0]
    origin = pose(reader, visual.find("origin"), where)
    v = Visual(link=link, kind=shape.tag, origin=origin)
    at = f"{where} <{shape.tag}>"
    if shape.tag == "box":
        v.size = np.abs(np.asarray(reader.vector(shape, "size", at, None), dtype=float))
    elif shape.tag == "cylinder":
        v.radius = abs(reader.number(shape, "radius", at))
        v.length = abs(reader.number(shape, "length", at))
    elif shape.tag == "sphere":
        v.radius = abs(reader.number(shape, "radius", at))
    elif shape.tag == "mesh":
        v.filename = reader.attr(shape, "filename", at).strip()
        if shape.get("scale") is not None:
            v.scale = np.asarray(reader.vector(shape, "scale", at, None), dtype=float)
    else:
        warnings.warn(f"{reader.label}: {at}: not drawn (box, cylinder, sphere and mesh are)",
                      URDFWarning, stacklevel=4)
        return None
    return v


def read_visuals(source, *, xacro_args=None, xacro_env=False, max_bytes=MAX_BYTES):
    """``{link name: [Visual, ...]}`` of a URDF (path, ``.xacro`` path or XML text), links in
    file order (a link without a visual maps to an empty list). Errors are
    :class:`robodyn.urdf.URDFError` naming the file and element."""
    text, label = read_source(source, xacro_args, max_bytes, xacro_env)
    root = parse_xml(text, label)
    reader = Reader(label)
    named = {}
    for material in root.findall("material"):
        got = _rgba(reader, material, {}, f"<material name={material.get('name')!r}>")
        if got is not None:
            named[material.get("name", "")] = got
    out = {}
    for link in root.findall("link"):
        name = reader.name(link, "<link>")
        items = out.setdefault(name, [])
        for k, visual in enumerate(link.findall("visual")):
            where = f"link {name!r} <visual> {k}"
            v = _geometry(reader, name, visual, where)
            if v is not None:
                v.rgba = _rgba(reader, visual.find("material"), named, where)
                items.append(v)
    return out
