"""The I/O layer: URDF and xacro reading (urdf, urdf_source, xacro), URDF writing
(urdf_write), Denavit-Hartenberg tables (dh), the bundled robots (robots) and the loaders
robodyn re-exports (load_urdf, from_dh). Imports the model layer and below."""

from .loaders import from_dh, load_urdf

__all__ = ["load_urdf", "from_dh"]
