"""The random parameters of a campaign: a :class:`Sampler` per varied key, built by
:func:`uniform`, :func:`normal`, :func:`loguniform`, :func:`integers` or :func:`choice`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict

import numpy as np

from .schema import SamplerTable, checked

KINDS = ("uniform", "normal", "loguniform", "choice", "integers")


@dataclass(frozen=True)
class Sampler:
    """A random parameter: ``kind`` in uniform, normal, loguniform, choice, integers;
    ``args`` its numbers (or choices); ``per`` None (one value) or "joint"/"link" (one value
    per joint; the links are the joints' moving bodies)."""

    kind: str
    args: tuple
    per: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"sampler: unknown kind {self.kind!r}; expected one of "
                             f"{', '.join(KINDS)}")
        if self.per not in (None, "joint", "link"):
            raise ValueError(f"sampler: per must be 'joint' or 'link', got {self.per!r}")
        if self.kind == "choice":
            if len(self.args) == 0:
                raise ValueError("sampler: choice needs at least one value")
            return
        if len(self.args) != 2:
            raise ValueError(f"sampler: {self.kind} takes two numbers, got {list(self.args)}")
        a, b = (float(x) for x in self.args)
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"sampler: {self.kind} bounds must be finite, got {list(self.args)}")
        if self.kind == "normal" and b < 0:
            raise ValueError(f"sampler: normal standard deviation must be >= 0, got {b}")
        if self.kind in ("uniform", "integers") and b < a:
            raise ValueError(f"sampler: {self.kind} needs low <= high, got {list(self.args)}")
        if self.kind == "loguniform" and not 0 < a <= b:
            raise ValueError(f"sampler: loguniform needs 0 < low <= high, got {list(self.args)}")
        if self.kind == "integers" and not all(
                float(x).is_integer() and -2**63 <= int(x) < 2**63 for x in self.args):
            raise ValueError(f"sampler: integers bounds must be whole numbers within the int64 "
                             f"range (|x| < 9.2e18), got {list(self.args)}")

    def draw(self, rng, n):
        size = None if self.per is None else n
        a = self.args
        if self.kind == "uniform":
            x = rng.uniform(a[0], a[1], size)
        elif self.kind == "normal":
            x = rng.normal(a[0], a[1], size)
        elif self.kind == "loguniform":
            x = np.exp(rng.uniform(math.log(a[0]), math.log(a[1]), size))
        elif self.kind == "integers":
            x = rng.integers(int(a[0]), int(a[1]), size, endpoint=True)
        else:
            k = rng.integers(0, len(a), size)
            return a[int(k)] if size is None else [a[int(j)] for j in k]
        return np.asarray(x).tolist()  # a Python number, or a list per joint

    def to_dict(self):
        d = {self.kind: list(self.args)}
        if self.per:
            d["per"] = self.per
        return d


def uniform(low, high, *, per=None):
    """Uniform on [low, high]."""
    return Sampler("uniform", (float(low), float(high)), per)


def normal(mean, std, *, per=None):
    """Normal with ``mean`` and standard deviation ``std``."""
    return Sampler("normal", (float(mean), float(std)), per)


def loguniform(low, high, *, per=None):
    """Log-uniform on [low, high] (0 < low)."""
    return Sampler("loguniform", (float(low), float(high)), per)


def integers(low, high, *, per=None):
    """Integers uniform in low..high (both included)."""
    return Sampler("integers", (int(low), int(high)), per)


def choice(*values, per=None):
    """One of ``values``, equally likely."""
    return Sampler("choice", tuple(values), per)


def sampler_from(value, key):
    """A Sampler from its TOML form ``{uniform = [a, b], per = "link"}``."""
    if isinstance(value, Sampler):
        value = {value.kind: list(value.args), **({"per": value.per} if value.per else {})}
    d = dict(checked(value, Dict[str, Any], f"random.{key}"))
    checked(d, SamplerTable, f"random.{key}")
    per = d.pop("per", None)
    if len(d) != 1:
        raise ValueError(f"random.{key}: expected one sampler kind "
                         f"({', '.join(KINDS)}), got {sorted(d)}")
    (kind, args), = d.items()
    try:
        return Sampler(kind, tuple(args), per)
    except ValueError as e:
        raise ValueError(f"random.{key}: {e}") from None
