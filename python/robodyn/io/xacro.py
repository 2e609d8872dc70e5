"""xacro expansion that runs no code and stays within bounds.

:func:`expand` drives the ``xacro`` package (through ``xacrodoc``, the ``xacro`` extra) with
its evaluation points replaced for the duration of the call:

- every ``${...}`` goes to :mod:`robodyn.io._xacro_eval` (an AST walk over numbers, strings,
  arithmetic, comparisons, conditionals, the properties and an allow-list of math), never to
  Python's ``eval``;
- ``$(...)``: ``arg``, ``find`` and ``eval`` (the same evaluator) are resolved here;
  ``env``, ``optenv``, ``cwd``, ``dirname`` and ``$(find)`` through ROS's package paths only
  with ``allow_env=True``; a package is otherwise found only by walking up from the file to
  a ``package.xml`` naming it;
- an include must be a regular file of at most ``max_bytes`` inside the file's folder, its
  package or a package found by ``$(find)`` (anywhere with ``allow_env=True``), without a DTD;
- macro nesting, include nesting, the expanded size (counted while expanding) and the wall
  time are bounded (:data:`MAX_MACRO_DEPTH`, :data:`MAX_INCLUDE_DEPTH`, ``max_bytes``,
  :data:`TIME_LIMIT`).

xacro keeps its state in module globals, so expansions run one at a time (a lock).
Every refusal is a :class:`robodyn.io.urdf.URDFError` ``"<file>: xacro: <where>: <reason>"``.
"""

from __future__ import annotations

import glob
import io
import os
import re
import threading
import time
import xml.dom
from pathlib import Path

from ..util import safe_io
from ._xacro_eval import ExpressionError, evaluate
from .urdf_source import DTD, MAX_BYTES, URDFError, URDFFileNotFoundError, decode

__all__ = ["expand", "MAX_MACRO_DEPTH", "MAX_INCLUDE_DEPTH", "TIME_LIMIT"]

MAX_MACRO_DEPTH = 100  # macro calls nested inside one another
MAX_INCLUDE_DEPTH = 20  # includes nested inside one another
TIME_LIMIT = 20.0  # seconds of wall time for one expansion

_LOCK = threading.Lock()
_PATCHED = ("safe_eval", "eval_extension", "handle_macro_call", "process_include",
            "get_include_files", "parse", "eval_all", "eval_text", "process_doc")
_NEEDED = _PATCHED + ("Table", "XacroException", "init_stacks", "abs_filename_spec",
                      "substitution_args_context")
_ENV_COMMANDS = ("env", "optenv", "cwd", "dirname")
_GLOB = re.compile(r"[*[?]")


class _Refused(Exception):
    """A refusal; its message is the text after "<file>: xacro: "."""


def expand(path, args=None, *, allow_env=False, max_bytes=MAX_BYTES, time_limit=None):
    """(URDF text, label) of the xacro file ``path`` with ``args`` (name -> value, converted
    with ``str``) as its ``<xacro:arg>`` values. ``allow_env=True`` lets the file read
    environment variables and ROS package paths (``$(env)``, ``$(optenv)``, ``$(find)``
    beyond its own folders, includes anywhere). ``time_limit``: seconds, default
    :data:`TIME_LIMIT`. Raises URDFError, URDFFileNotFoundError, or ImportError without
    xacrodoc."""
    label = os.fsdecode(path)
    time_limit = TIME_LIMIT if time_limit is None else float(time_limit)
    mappings = _check_args(args)
    try:
        import xacro
        from xacrodoc import XacroDoc
    except ImportError:
        raise ImportError(f"{label}: expanding a .xacro file needs the xacrodoc package "
                          "(pip install 'robodyn[xacro]')") from None
    missing = [name for name in _NEEDED if not hasattr(xacro, name)]
    if missing:
        raise URDFError(f"{label}: xacro: this version of the xacro package "
                        f"({getattr(xacro, '__version__', '?')}) lacks {', '.join(missing)}; "
                        "robodyn expands with xacro 2.x")
    top = os.path.abspath(label)
    data = _read(top, label, max_bytes, missing_error=URDFFileNotFoundError)
    text = decode(data, label)
    run = _Expansion(xacro, top, text, allow_env, max_bytes, time_limit)
    with _LOCK:
        saved = {name: getattr(xacro, name) for name in _PATCHED}
        run.original = saved
        try:
            for name in _PATCHED:
                setattr(xacro, name, getattr(run, name))
            xacro.init_stacks(top)
            doc = XacroDoc.from_string(text, subargs=mappings, resolve_packages=False,
                                       rootdir=os.path.dirname(top))
            return doc.to_urdf_string(), label
        except _Refused as e:
            raise URDFError(f"{label}: xacro: {e}") from None
        except MemoryError:
            raise URDFError(f"{label}: xacro: out of memory while expanding (the size limit "
                            f"is {max_bytes} characters, max_bytes=)") from None
        except RecursionError:
            raise URDFError(f"{label}: xacro: the document is nested too deeply") from None
        except Exception as e:  # xacrodoc and xacro raise many types (XacroException, ...)
            raise URDFError(f"{label}: xacro: {_reason(e, xacro)}") from None
        finally:
            for name, value in saved.items():
                setattr(xacro, name, value)
            xacro.init_stacks(None)


def _check_args(args):
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise TypeError(f"xacro_args: expected a dict of name -> value, not "
                        f"{type(args).__name__}")
    out = {}
    for name, value in args.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"xacro_args: argument names must be non-empty strings, "
                             f"got {name!r}")
        out[name] = value if isinstance(value, str) else str(value)
    return out


def _reason(e, xacro):
    """The message of an exception from xacro: the innermost wrapped cause, on one line."""
    while isinstance(e, xacro.XacroException) and isinstance(getattr(e, "exc", None),
                                                             Exception):
        if isinstance(e.exc, _Refused):
            return str(e.exc)
        e = e.exc
    reason = " ".join(str(e).split()) or type(e).__name__
    prefix = f"<class '{type(e).__module__}.{type(e).__qualname__}'>: "
    return reason[len(prefix):] if reason.startswith(prefix) else reason


def _read(path, label, max_bytes, missing_error=None):
    """The bytes of a regular file of at most max_bytes, read through robodyn.safe_io (the one
    reader of every file: regular files only, opened non-blocking); errors name ``label``."""
    try:
        return safe_io.read_bytes(path, max_bytes, error=_Labelled, hint=" (max_bytes=)")
    except FileNotFoundError:
        if missing_error is not None:
            raise missing_error(f"{label}: file not found") from None
        raise
    except _Labelled as e:
        text = str(e)
        prefix = os.fsdecode(os.fspath(path))
        if text.startswith(prefix):
            text = label + text[len(prefix):]
        raise URDFError(text) from None


class _Labelled(Exception):
    """safe_io's refusal, renamed to the xacro's label before it reaches the caller."""


def _inside(path, roots):
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class _Expansion:
    """One expansion: its bounds and counters, and the replacements of xacro's functions
    (each named as the function it replaces)."""

    def __init__(self, xacro, top, text, allow_env, max_bytes, time_limit):
        self.xacro = xacro
        self.time_limit = time_limit
        self.deadline = time.monotonic() + time_limit
        self.top = top
        self.allow_env = allow_env
        self.max_bytes = max_bytes
        self.texts = {top: text}  # every file read, for the line numbers of messages
        self.original = {}
        self.macro_depth = 0
        self.include_depth = 0
        self.spent = 0  # characters produced by the current pass (xacrodoc runs until fixed)
        self.roots = [os.path.realpath(os.path.dirname(top))]
        package = self.package_root()
        if package is not None:
            self.roots.append(package)

    # ---------------------------------------------------------------- bounds and messages

    def charge(self, n):
        self.spent += n
        if self.spent > self.max_bytes:
            raise _Refused(f"the expansion exceeds the size limit of {self.max_bytes} "
                           "characters (max_bytes=; counted while expanding)")
        if time.monotonic() > self.deadline:
            raise _Refused(f"the expansion exceeds the time limit of {self.time_limit:g} s "
                           "(robodyn.xacro.TIME_LIMIT)")

    def where(self, snippet):
        """"file:line" of the first occurrence of snippet (the current file first)."""
        stack = self.xacro.filestack or [self.top]
        current = os.path.abspath(stack[-1] or self.top)
        order = [current] + [p for p in self.texts if p != current]
        for path in order:
            index = self.texts.get(path, "").find(snippet)
            if index >= 0:
                return f"{path}:{self.texts[path].count(chr(10), 0, index) + 1}"
        return current

    # ---------------------------------------------------------------- ${...}

    def lookup(self, symbols):
        def get(name):
            table = symbols
            while isinstance(table, self.xacro.Table):
                if dict.__contains__(table, name):
                    return table[name]
                table = table.parent
            raise KeyError(name)
        return get

    def safe_eval(self, expr, globals, locals=None):
        budget = max(self.max_bytes - self.spent, 0)
        try:
            return evaluate(expr, self.lookup(globals), max_size=budget,
                            deadline=self.deadline)
        except ExpressionError as e:
            snippet = " ".join(expr.split())
            snippet = snippet if len(snippet) <= 80 else snippet[:77] + "..."
            raise _Refused(f"{self.where(expr.strip())}: ${{{snippet}}}: {e}") from None

    def eval_text(self, text, symbols):
        result = self.original["eval_text"](text, symbols)
        self.charge(len(result) if isinstance(result, str) else 8)
        return result

    # ---------------------------------------------------------------- $(...)

    def eval_extension(self, s):
        inner = s[2:-1]
        words = inner.split()
        command, args = (words[0], words[1:]) if words else ("", [])
        if command in _ENV_COMMANDS:
            if not self.allow_env:
                raise _Refused(f"{self.where(s)}: {s}: reading the environment or the "
                               "working directory is off (pass xacro_env=True, or "
                               "--xacro-allow-env on the command line)")
            return self.original["eval_extension"](s)
        if command == "arg":
            if len(args) != 1:
                raise _Refused(f"{self.where(s)}: {s}: $(arg) takes one name")
            values = self.xacro.substitution_args_context.get("arg") or {}
            if args[0] not in values:
                raise self.xacro.XacroException(f"Undefined substitution argument {args[0]}")
            return values[args[0]]
        if command == "find":
            if len(args) != 1:
                raise _Refused(f"{self.where(s)}: {s}: $(find) takes one package name")
            return self.find(args[0], s)
        if command == "eval":
            return str(self.eval_substitution(inner[len("eval"):], s))
        raise _Refused(f"{self.where(s)}: {s}: unknown substitution (allowed: arg, find, eval; "
                       f"{', '.join(_ENV_COMMANDS)} with xacro_env=True)")

    def eval_substitution(self, expr, s):
        from xacro.substitution_args import convert_value

        values = self.xacro.substitution_args_context.get("arg") or {}

        def get(name):
            return convert_value(values[name], "auto")
        try:
            return evaluate(expr, get, max_size=max(self.max_bytes - self.spent, 0),
                            deadline=self.deadline)
        except ExpressionError as e:
            raise _Refused(f"{self.where(s)}: {s}: {e}") from None

    def package_root(self):
        """The nearest folder above the file holding a package.xml or manifest.xml."""
        for folder in Path(self.top).resolve().parents:
            if (folder / "package.xml").is_file() or (folder / "manifest.xml").is_file():
                return os.path.realpath(folder)
        return None

    def find(self, pkg, s):
        """$(find pkg): the folder above the file whose package.xml names pkg (or that holds
        a manifest.xml), as xacrodoc's walk-up finds it; ROS's paths with allow_env."""
        from xml.dom import minidom

        for folder in Path(self.top).resolve().parents:
            manifest = folder / "package.xml"
            if manifest.is_file():
                doc = minidom.parseString(_read(str(manifest), str(manifest), 1 << 20))
                names = doc.getElementsByTagName("name")
                if (len(names) == 1 and names[0].firstChild is not None
                        and names[0].firstChild.data == pkg):
                    self.roots.append(os.path.realpath(folder))
                    return folder.as_posix()
            if (folder / "manifest.xml").is_file():
                self.roots.append(os.path.realpath(folder))
                return folder.as_posix()
        if self.allow_env:
            from xacrodoc.packages import PackageFinder

            finder = PackageFinder()  # ament's index when installed, else rospkg's defaults
            ros_paths = [p for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
            if ros_paths:
                finder.look_in(ros_paths)  # searched first, ament or not
            try:
                found = finder.get_path(pkg)
            except OSError as e:  # ament with AMENT_PREFIX_PATH unset
                raise self.xacro.XacroException(
                    f"Package not found: {pkg} (ROS_PACKAGE_PATH: "
                    f"{os.pathsep.join(ros_paths) or 'unset'}; {e})") from None
            except Exception as e:  # rospkg, ament and xacrodoc raise their own types
                raise self.xacro.XacroException(f"{type(e).__name__}: {e}") from None
            self.roots.append(os.path.realpath(found))
            return found
        raise _Refused(f"{self.where(s)}: {s}: Package not found: {pkg} (looked for a "
                       "package.xml naming it in the folders above the file; ROS package "
                       "paths are searched only with xacro_env=True)")

    # ---------------------------------------------------------------- structure

    def process_doc(self, doc, mappings=None, **kwargs):
        self.spent = 0
        self.macro_depth = 0
        return self.original["process_doc"](doc, mappings, **kwargs)

    def eval_all(self, node, macros, symbols):
        self.charge(len(node.nodeName) + 3)
        for child in node.childNodes:  # comments are copied with macro bodies unevaluated
            if child.nodeType in (xml.dom.Node.COMMENT_NODE, xml.dom.Node.CDATA_SECTION_NODE):
                self.charge(len(child.data))
        return self.original["eval_all"](node, macros, symbols)

    def handle_macro_call(self, node, macros, symbols):
        if not node.tagName.startswith("xacro:"):
            return self.original["handle_macro_call"](node, macros, symbols)
        self.macro_depth += 1
        try:
            if self.macro_depth > MAX_MACRO_DEPTH:
                raise _Refused(f"{self.where('<' + node.tagName)}: <{node.tagName}>: macros "
                               f"nested deeper than {MAX_MACRO_DEPTH} "
                               "(robodyn.xacro.MAX_MACRO_DEPTH)")
            return self.original["handle_macro_call"](node, macros, symbols)
        finally:
            self.macro_depth -= 1

    def process_include(self, elt, macros, symbols, func):
        self.include_depth += 1
        try:
            if self.include_depth > MAX_INCLUDE_DEPTH:
                raise _Refused(f"{self.where('<xacro:include')}: includes nested deeper than "
                               f"{MAX_INCLUDE_DEPTH} (robodyn.xacro.MAX_INCLUDE_DEPTH)")
            return self.original["process_include"](elt, macros, symbols, func)
        finally:
            self.include_depth -= 1

    def get_include_files(self, filename_spec, symbols):
        spec = self.xacro.abs_filename_spec(str(self.xacro.eval_text(filename_spec, symbols)))
        if _GLOB.search(spec):
            base = os.path.dirname(spec[:_GLOB.search(spec).start()] + "x")
            self.check_inside(base, filename_spec)
            names = []
            for name in glob.iglob(spec):
                names.append(name)
                if len(names) > 1000 or time.monotonic() > self.deadline:
                    raise _Refused(f"{self.where(filename_spec)}: include {filename_spec!r} "
                                   "matches too many files")
            filenames = sorted(names)
        else:
            filenames = [spec]
        for filename in filenames:
            self.check_inside(filename, filename_spec)
            yield filename

    def check_inside(self, filename, spec):
        if not self.allow_env and not _inside(filename, self.roots):
            raise _Refused(f"{self.where(spec)}: include {filename}: outside the file's folder "
                           "and packages (includes elsewhere need xacro_env=True)")

    def parse(self, inp, filename=None):
        if inp is None:
            path = os.path.abspath(filename)
            try:
                data = _read(path, filename, self.max_bytes)
            except FileNotFoundError as e:
                self.xacro.filestack.pop()  # as xacro does: the message names the include
                raise self.xacro.XacroException(f"No such file or directory: {filename}",
                                                exc=e) from None
            except URDFError as e:
                raise _Refused(f"include {e}") from None
            self.charge(len(data))
            text = data.decode("utf-8", "replace")
            self.texts[path] = text
            if DTD.search(text):
                raise _Refused(f"include {filename}: a DTD or entity declaration (<!DOCTYPE, "
                               "<!ENTITY) is not allowed")
            inp = io.BytesIO(data)
        elif isinstance(inp, str) and DTD.search(inp):
            raise _Refused("a DTD or entity declaration (<!DOCTYPE, <!ENTITY) is not allowed")
        return self.original["parse"](inp, filename)
