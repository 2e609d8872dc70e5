"""The text of a URDF document: its encoding, the XML root with DTDs refused, and the errors
of every URDF reader (urdf, xacro, sources)."""

from __future__ import annotations

import codecs
import os
import re
import xml.etree.ElementTree as ET


__all__ = ["URDFError", "URDFFileNotFoundError", "URDFWarning", "MAX_BYTES", "DEFAULT_GRAVITY",
           "DTD", "source_label", "decode", "parse_xml"]

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
MAX_BYTES = 64 * 1024 * 1024  # default size limit of a URDF (file or text): 64 MiB
DTD = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)  # refused before expat sees the text

_DECLARED_ENCODING = re.compile(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)


class URDFError(ValueError):
    """A URDF that cannot be loaded; the message names the file, the element and the reason."""


class URDFFileNotFoundError(URDFError, FileNotFoundError):
    """The URDF path does not exist (catchable as ValueError or FileNotFoundError)."""


class URDFWarning(UserWarning):
    """A URDF that loads, with something its user should know (a non-physical inertia on a
    moving link, mimic joints loaded as independent joints). Said once per file;
    ``strict=True`` makes it a :class:`URDFError`."""



# ---------------------------------------------------------------- reading the document

def source_label(source):
    """The file label of error messages: the path as given, or "<string>" for XML text."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<string>"
    if isinstance(source, str) and (source.lstrip().startswith("<") or not source.strip()):
        return "<string>"
    try:
        return os.fsdecode(os.fspath(source))
    except TypeError:
        return "<string>"


def decode(data, label):
    """Bytes to text: a BOM, else the XML declaration's encoding, else UTF-8."""
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            break
    else:
        declared = _DECLARED_ENCODING.match(data)
        if declared:
            encoding = declared.group(1).decode("ascii")
    try:
        return data.decode(encoding)
    except LookupError:
        raise URDFError(f"{label}: unknown encoding {encoding!r}") from None
    except UnicodeError as e:
        where = f" (byte {e.start})" if isinstance(e, UnicodeDecodeError) else ""
        raise URDFError(f"{label}: not valid {encoding} text{where}") from None


def parse_xml(text, label):
    """The root element, refusing DTDs and entities before expat sees the text."""
    if not text.strip():
        raise URDFError(f"{label}: empty input")
    if DTD.search(text):
        raise URDFError(f"{label}: DTD/entities are not allowed (<!DOCTYPE or <!ENTITY found)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise URDFError(f"{label}: invalid character at position {e.start}") from None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise URDFError(f"{label}: not well-formed XML: {e}") from None
    if root.tag != "robot":
        raise URDFError(f"{label}: the root element is <{root.tag}>, expected <robot>")
    return root


# ---------------------------------------------------------------- attributes and numbers
