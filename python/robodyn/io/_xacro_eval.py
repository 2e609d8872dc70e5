"""The evaluator of xacro ``${...}`` expressions: numbers, strings, arithmetic, comparisons,
conditionals, the properties and a short list of math functions, nothing else.

An expression is parsed with :func:`ast.parse` (mode ``"eval"``) and its tree is walked here;
Python's ``eval`` never sees it. Every node kind, name, attribute and call outside the lists
below is refused with :class:`ExpressionError` naming it. Values are plain data (``bool``,
``int``, ``float``, ``str``, ``None``, lists, tuples, dicts and xacro's property namespaces),
so the operators that run are the built-in ones of those types, and each is bounded: an
integer holds at most :data:`MAX_INT_BITS` bits, a string or list at most ``max_size``
items, and the walk stops at a deadline.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import time

__all__ = ["ExpressionError", "FUNCTIONS", "CONSTANTS", "evaluate"]

MAX_INT_BITS = 4096  # the largest integer an expression may form (about 1233 digits)


class ExpressionError(ValueError):
    """An expression that is refused or fails; the message names the construct."""


# the callable names; also reachable as math.<name> where math has one
FUNCTIONS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin,
    "acos": math.acos, "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh,
    "cosh": math.cosh, "tanh": math.tanh, "exp": math.exp, "log": math.log,
    "log10": math.log10, "log2": math.log2, "sqrt": math.sqrt, "radians": math.radians,
    "degrees": math.degrees, "hypot": math.hypot, "fabs": math.fabs, "floor": math.floor,
    "ceil": math.ceil, "fmod": math.fmod, "copysign": math.copysign,
    "abs": abs, "min": min, "max": max, "round": round, "int": int, "float": float,
    "str": str, "bool": bool, "len": len,
}
CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan,
             "True": True, "False": False, "true": True, "false": False, "None": None}
_MATH_NAMES = {k: v for k, v in {**FUNCTIONS, **CONSTANTS}.items()
               if k in math.__dict__ and not k.startswith("_")}
_CALLABLE_IDS = {id(f) for f in FUNCTIONS.values()}


class _MathNamespace(dict):
    """The value of the name ``math``: its allowed functions and constants, by attribute."""


MATH = _MathNamespace(_MATH_NAMES)

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_,
          ast.Invert: operator.invert}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
# what a refused node is called in the message
_REFUSED = {
    ast.Attribute: "attribute access", ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string",
    ast.NamedExpr: "an assignment expression (:=)", ast.Starred: "a starred expression",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield",
    ast.Set: "a set display", ast.Slice: "a slice",
}
_FORMAT_FIELD = re.compile(r"%[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")


def _is_namespace(value):
    # xacro's property tables (an include's ns=, the scope chain) are dict subclasses with a
    # parent; they are read by key, never by Python attribute lookup
    return hasattr(value, "parent") and isinstance(value, dict)


def _is_data(value):
    return (value is None or isinstance(value, (bool, int, float, str, list, tuple, dict))
            and not callable(value))


def _kind(value):
    if _is_namespace(value) or isinstance(value, _MathNamespace):
        return "a namespace"
    return type(value).__name__


class _Walker:
    """One evaluation: the names, the size budget and the deadline."""

    def __init__(self, lookup, max_size, deadline):
        self.lookup = lookup
        self.max_size = max_size
        self.deadline = deadline
        self.steps = 0

    def size(self, value, what):
        if isinstance(value, complex):
            raise ExpressionError(f"{what} is a complex number")
        if isinstance(value, (str, list, tuple, dict)) and len(value) > self.max_size:
            raise ExpressionError(f"{what} would have {len(value)} items, over the expansion "
                                  f"size limit of {self.max_size} characters")
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise ExpressionError(f"{what}: an integer over {MAX_INT_BITS} bits")
        return value

    def visit(self, node):
        self.steps += 1
        if self.steps % 256 == 0 and time.monotonic() > self.deadline:
            raise ExpressionError("the expansion time limit was reached")
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            what = _REFUSED.get(type(node), f"a {type(node).__name__} node")
            raise ExpressionError(f"{what} is not allowed in a xacro expression")
        return method(node)

    def visit_Expression(self, node):
        return self.visit(node.body)

    def visit_Constant(self, node):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return self.size(node.value, "a literal")
        raise ExpressionError(f"a {type(node.value).__name__} literal is not allowed in a "
                              "xacro expression")

    def visit_Name(self, node):
        value = self.lookup(node.id)
        if not (_is_data(value) or _is_namespace(value) or isinstance(value, _MathNamespace)
                or id(value) in _CALLABLE_IDS):
            raise ExpressionError(f"the name {node.id!r} is {_kind(value)}, not a number, "
                                  "string, list or dict")
        return value

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        if isinstance(base, _MathNamespace):
            if node.attr in base:
                return base[node.attr]
            raise ExpressionError(f"math.{node.attr} is not allowed (allowed: "
                                  f"{', '.join(sorted(MATH))})")
        if _is_namespace(base):  # ns.property of an include with ns=
            if dict.__contains__(base, node.attr):
                value = base[node.attr]
                if _is_data(value) or _is_namespace(value):
                    return value
                raise ExpressionError(f".{node.attr} is {_kind(value)}")
            raise ExpressionError(f"the namespace has no property {node.attr!r}")
        raise ExpressionError(f"attribute access (.{node.attr} of a {_kind(base)}) is not "
                              "allowed in a xacro expression")

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        if not isinstance(base, (str, list, tuple, dict)):
            raise ExpressionError(f"indexing a {_kind(base)} is not allowed")
        key = self.visit(node.slice)
        if _is_namespace(base):
            if isinstance(key, str) and dict.__contains__(base, key):
                value = base[key]
                if _is_data(value) or _is_namespace(value):
                    return value
            raise ExpressionError(f"the namespace has no property {key!r}")
        if isinstance(base, dict):
            try:
                return base[key]
            except (KeyError, TypeError):
                raise ExpressionError(f"no key {key!r}") from None
        if isinstance(key, bool) or not isinstance(key, int):
            raise ExpressionError(f"an index must be an int, not {_kind(key)}")
        try:
            return base[key]
        except IndexError:
            raise ExpressionError(f"index {key} out of range") from None

    def visit_List(self, node):
        return self.size([self.visit(e) for e in node.elts], "a list")

    def visit_Tuple(self, node):
        return self.size(tuple(self.visit(e) for e in node.elts), "a tuple")

    def visit_Dict(self, node):
        if any(k is None for k in node.keys):
            raise ExpressionError("a ** in a dict display is not allowed")
        out = {}
        for k, v in zip(node.keys, node.values):
            key = self.visit(k)
            if isinstance(key, (list, dict)):
                raise ExpressionError(f"a dict key cannot be a {_kind(key)}")
            out[key] = self.visit(v)
        return self.size(out, "a dict")

    def visit_BinOp(self, node):
        a, b = self.visit(node.left), self.visit(node.right)
        op = type(node.op)
        self.check_binary(op, a, b)
        return self.size(self.apply(_BINARY[op], a, b), "the result")

    def check_binary(self, op, a, b):
        """Refuse, before computing it, a result that would exceed the bounds."""
        for v in (a, b):
            if not _is_data(v) or _is_namespace(v):
                raise ExpressionError(f"an operator on {_kind(v)} is not allowed")
        ints = (isinstance(a, int) and not isinstance(a, bool),
                isinstance(b, int) and not isinstance(b, bool))
        if op is ast.Pow and all(ints) and b > 0 and abs(a) > 1:
            if a.bit_length() * b > MAX_INT_BITS:
                raise ExpressionError(f"{a} ** {b} would exceed {MAX_INT_BITS} bits")
        if op is ast.LShift and isinstance(b, int) and b > MAX_INT_BITS:
            raise ExpressionError(f"<< {b} would exceed {MAX_INT_BITS} bits")
        if op is ast.Mult:
            for seq, n in ((a, b), (b, a)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) \
                        and len(seq) * max(n, 0) > self.max_size:
                    raise ExpressionError(f"repeating {len(seq)} items {n} times exceeds the "
                                          f"expansion size limit of {self.max_size}")
            if all(ints) and a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
                raise ExpressionError(f"a product over {MAX_INT_BITS} bits")
        if op is ast.Add and isinstance(a, (str, list, tuple)) \
                and isinstance(b, (str, list, tuple)) and len(a) + len(b) > self.max_size:
            raise ExpressionError(f"joining {len(a)} and {len(b)} items exceeds the expansion "
                                  f"size limit of {self.max_size}")
        if op is ast.Mod and isinstance(a, str):
            for width, precision in _FORMAT_FIELD.findall(a):
                for n in (width, precision):
                    if n == "*" or (n and int(n) > 1000):
                        raise ExpressionError(f"a % format field of width or precision "
                                              f"{n!r} is not allowed (at most 1000)")

    @staticmethod
    def apply(function, *args):
        try:
            return function(*args)
        except (ArithmeticError, TypeError, ValueError) as e:
            raise ExpressionError(str(e) or type(e).__name__) from None

    def visit_UnaryOp(self, node):
        value = self.visit(node.operand)
        if not _is_data(value):
            raise ExpressionError(f"an operator on {_kind(value)} is not allowed")
        return self.apply(_UNARY[type(node.op)], value)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        value = None
        for operand in node.values:
            value = self.visit(operand)
            if bool(value) != is_and:
                return value
        return value

    def visit_Compare(self, node):
        left = self.visit(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                raise ExpressionError(f"the comparison {type(op).__name__} is not allowed")
            right = self.visit(right_node)
            if not self.apply(_COMPARE[type(op)], left, right):
                return False
            left = right
        return True

    def visit_IfExp(self, node):
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def visit_Call(self, node):
        function = self.visit(node.func)
        name = ast.unparse(node.func)[:60]
        if id(function) not in _CALLABLE_IDS:
            raise ExpressionError(f"calling {name} is not allowed: only "
                                  f"{', '.join(sorted(FUNCTIONS))} may be called")
        if node.keywords:
            raise ExpressionError(f"{name}(): keyword arguments are not allowed")
        args = [self.visit(a) for a in node.args]
        for a in args:
            if not _is_data(a) or _is_namespace(a):
                raise ExpressionError(f"{name}(): an argument is {_kind(a)}")
        return self.size(self.apply(function, *args), f"{name}()")


def evaluate(expression, lookup, *, max_size, deadline):
    """The value of the xacro expression text ``expression``.

    ``lookup(name)`` returns a property's value or raises ``KeyError``; names it does not
    know are looked up in :data:`FUNCTIONS`, :data:`CONSTANTS` and ``math``. ``max_size``
    bounds every string, list and dict formed; ``deadline`` is a ``time.monotonic()``
    instant. Raises :class:`ExpressionError`."""
    def resolve(name):
        try:
            return lookup(name)
        except KeyError:
            pass
        if name in FUNCTIONS:
            return FUNCTIONS[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name == "math":
            return MATH
        raise ExpressionError(f"name {name!r} is not defined")

    text = expression.strip()
    if len(text) > max_size:
        raise ExpressionError(f"an expression of {len(text)} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ExpressionError(f"invalid syntax: {e.msg}") from None
    except (MemoryError, RecursionError, ValueError):
        raise ExpressionError("an expression too large or too deeply nested to parse") from None
    try:
        return _Walker(resolve, max_size, deadline).visit(tree)
    except ExpressionError:
        raise
    except RecursionError:
        raise ExpressionError("an expression too deeply nested") from None
    except MemoryError:
        raise ExpressionError("an expression whose value does not fit in memory") from None
    except (ArithmeticError, LookupError, TypeError, ValueError) as e:  # of built-in data
        raise ExpressionError(str(e) or type(e).__name__) from None
