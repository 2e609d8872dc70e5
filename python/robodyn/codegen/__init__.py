"""The code-generation layer: robot-specialised C++ kernels traced from the generic
algorithms (kernels), compiled and handed to a Robot (compiled), their command lines
(command), operation counts (opcount) and the published algorithms they are compared with
(published), and constrained forward dynamics' counts and kernel (constrained).
``robodyn.codegen`` gathers the public names; see kernels for how it works. Imports the I/O
layer and below."""

from .command import bundled_sources, main
from .kernels import *  # noqa: F401,F403
from .kernels import __all__ as _kernels
from .compiled import compile_kernels, specialize, specialize_spec
from .constrained import constrained_counts, generate_constrained, specialize_constrained

__all__ = list(_kernels) + ["specialize", "specialize_spec", "compile_kernels",
                            "bundled_sources", "main", "constrained_counts", "generate_constrained",
                            "specialize_constrained"]
