"""An instrumented float that counts the arithmetic an algorithm really executes.

Counting rules (the ones docs and `robodyn opcount` state, see docs/opcounts.md):

- ``mul``: multiplications and divisions;
- ``add``: additions and subtractions; negation, ``abs`` and comparisons are free;
- ``trig``: ``OpFloat.sin``, ``OpFloat.cos`` and ``OpFloat.sqrt`` calls.

Every binary operation with at least one :class:`OpFloat` operand counts, including one with a
plain float constant (``0.0 + x``, ``2.0 * x``): nothing is skipped for being zero or one unless
the code under test skips it itself. Operations between two plain floats are invisible, so an
algorithm that wants its structural constants counted converts them with ``scalar(x)`` first.

Usage::

    with OpCounter() as c:
        tau = inverse_dynamics(chain, q, qd, qdd, scalar=OpFloat)
    c.as_dict()                     # {"mul": ..., "add": ..., "trig": ...}

    count_ops(inverse_dynamics, chain, q, qd, qdd, scalar=OpFloat)   # the same, one call

Counters nest: an operation is counted by every counter that is active.
"""

from __future__ import annotations

import math

__all__ = ["OpFloat", "OpCounter", "count_ops"]

_ACTIVE: list["OpCounter"] = []


class OpCounter:
    """Counts the operations of every OpFloat while active (use as a context manager)."""

    __slots__ = ("mul", "add", "trig")

    def __init__(self):
        self.mul = 0
        self.add = 0
        self.trig = 0

    def __enter__(self):
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        _ACTIVE.remove(self)
        return False

    def as_dict(self) -> dict:
        return {"mul": self.mul, "add": self.add, "trig": self.trig}

    def __repr__(self):
        return f"OpCounter(mul={self.mul}, add={self.add}, trig={self.trig})"


def _tick_mul():
    for c in _ACTIVE:
        c.mul += 1


def _tick_add():
    for c in _ACTIVE:
        c.add += 1


def _tick_trig():
    for c in _ACTIVE:
        c.trig += 1


def _val(x):
    if isinstance(x, OpFloat):
        return x.v
    if isinstance(x, (int, float)):  # includes bool and numpy float64 (a float subclass)
        return float(x)
    return None


class OpFloat:
    """A float whose +, -, *, / and sin, cos, sqrt are counted by the active OpCounters."""

    __slots__ = ("v",)
    __array_ufunc__ = None  # make numpy scalars defer to our reflected operators

    def __init__(self, v=0.0):
        self.v = v.v if isinstance(v, OpFloat) else float(v)

    # additions and subtractions
    def __add__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_add()
        return OpFloat(self.v + o)

    def __radd__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_add()
        return OpFloat(o + self.v)

    def __sub__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_add()
        return OpFloat(self.v - o)

    def __rsub__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_add()
        return OpFloat(o - self.v)

    # multiplications and divisions
    def __mul__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_mul()
        return OpFloat(self.v * o)

    def __rmul__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_mul()
        return OpFloat(o * self.v)

    def __truediv__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_mul()
        return OpFloat(self.v / o)

    def __rtruediv__(self, other):
        o = _val(other)
        if o is None:
            return NotImplemented
        _tick_mul()
        return OpFloat(o / self.v)

    def __pow__(self, n):
        """Integer powers only, counted as n - 1 multiplications (x**0 = 1 is free)."""
        if not isinstance(n, int) or n < 0:
            raise TypeError("OpFloat supports only non-negative integer powers")
        if n == 0:
            return OpFloat(1.0)
        out = OpFloat(self.v)
        for _ in range(n - 1):
            out = out * self
        return out

    # free operations
    def __neg__(self):
        return OpFloat(-self.v)

    def __pos__(self):
        return self

    def __abs__(self):
        return OpFloat(abs(self.v))

    def __float__(self):
        return self.v

    def __bool__(self):
        return self.v != 0.0

    def __lt__(self, other):
        return self.v < _val(other)

    def __le__(self, other):
        return self.v <= _val(other)

    def __gt__(self, other):
        return self.v > _val(other)

    def __ge__(self, other):
        return self.v >= _val(other)

    def __eq__(self, other):
        o = _val(other)
        return NotImplemented if o is None else self.v == o

    def __ne__(self, other):
        o = _val(other)
        return NotImplemented if o is None else self.v != o

    def __hash__(self):
        return hash(self.v)

    def __repr__(self):
        return f"OpFloat({self.v!r})"

    # transcendental functions (counted as "trig")
    @staticmethod
    def sin(x):
        _tick_trig()
        return OpFloat(math.sin(float(x)))

    @staticmethod
    def cos(x):
        _tick_trig()
        return OpFloat(math.cos(float(x)))

    @staticmethod
    def sqrt(x):
        _tick_trig()
        return OpFloat(math.sqrt(float(x)))


def count_ops(fn, *args, **kwargs) -> dict:
    """Run fn(*args, **kwargs) under a fresh OpCounter; return {"mul", "add", "trig"}.

    The caller is responsible for making fn compute with OpFloat (for the Kane reference:
    pass ``scalar=OpFloat``).
    """
    with OpCounter() as c:
        fn(*args, **kwargs)
    return c.as_dict()
