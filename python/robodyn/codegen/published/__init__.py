"""Published algorithms, transcribed as written, for operation counts and cross-checks.

- :mod:`robodyn.published.kane_nie`: Nie (1988), Ch. III, the recursive Kane algorithm as the
  thesis prints it (O(n^3), scalar loops in the listing's order); ``robodyn opcount`` counts its
  arithmetic for the published column and the tests use it as an independent oracle.
- :mod:`robodyn.published.opfloat`: an instrumented float that counts the arithmetic an
  algorithm executes (mul, add, trig).

Pure Python (NumPy for array storage only); nothing here is on a hot path.
"""

__all__ = ["kane_nie", "opfloat"]
