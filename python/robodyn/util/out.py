"""``out=`` buffers for any callable: the core's single-state calls take ``out=`` (and then
allocate nothing); :func:`with_out` gives the same call form to one that does not."""

from __future__ import annotations

import numpy as np

__all__ = ["with_out", "OutAdapter"]


class OutAdapter:
    """Gives ``fn(*args, out=buf)`` semantics to a method that lacks ``out=``."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, out, **kwargs):
        out[:] = self.fn(*args, **kwargs)
        return out


def with_out(fn, *args, **kwargs):
    """``fn`` itself if ``fn(*args, out=buf, **kwargs)`` works (the core's single-state calls
    take ``out=``), else an adapter that copies the result into ``out``."""
    buf = np.empty(np.shape(fn(*args, **kwargs)))
    try:
        fn(*args, out=buf, **kwargs)
    except TypeError:
        return OutAdapter(fn)
    return fn
