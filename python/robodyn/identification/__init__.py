"""The identification layer: base parameters, least squares and physically consistent fits
(parameters). ``robodyn.identification`` is this package: parameters' public names are its
own. Imports the model layer and below."""

from .parameters import *  # noqa: F401,F403
from .parameters import __all__ as _parameters

__all__ = list(_parameters)
