"""Robot-specialised robots: the generated kernels of a robot compiled (or found compiled into
the extension), loaded, checked against the generic code and handed to the Robot
(:meth:`robodyn.Robot.use_kernels`). See robodyn.codegen."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import warnings

import numpy as np

from .. import _core
from ..model.spec import fingerprint
from ._kernel_cache import install, load, open_cache, open_entry
from .kernels import (FORMAT_VERSION, FUNCTIONS, OPCOUNT_ALGORITHMS, CodeSizeError, c_identifier,
                      embed, generate)

__all__ = ["specialize", "specialize_spec", "compile_kernels", "load_library", "rebuild"]


def _compiler():
    """The C++ compiler command: $ROBODYN_CXX, $CXX, else c++/g++/clang++ on the PATH."""
    for var in ("ROBODYN_CXX", "CXX"):
        value = os.environ.get(var)
        if value:
            return value
    for cand in ("c++", "g++", "clang++"):
        path = shutil.which(cand)
        if path:
            return path
    return None


_CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared"]
_LOADED = {}  # library SHA-256 -> ctypes.CDLL, kept for the life of the process


def _cache_key(gen, cxx):
    return hashlib.sha256("\0".join([str(FORMAT_VERSION), cxx, *_CXXFLAGS, gen.source])
                          .encode()).hexdigest()[:24]


def _compile_into(cxx):
    """A function compiling the source file ``src`` into the library ``out`` with ``cxx``."""
    def run(src, out):
        cmd = [*cxx.split(), *_CXXFLAGS, "-o", str(out), str(src)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as e:
            raise RuntimeError(f"C++ compiler {cxx!r} could not be run: {e}") from None
        if res.returncode != 0 or not out.is_file():
            raise RuntimeError(f"compiling the generated kernels failed ({' '.join(cmd)}):\n"
                               + res.stderr[-2000:])
    return run


def _cached_library(gen):
    """(path, fd, SHA-256) of the compiled kernels of ``gen`` in the cache: the cached library
    when robodyn._kernel_cache trusts it, else compiled again into place. The caller closes
    fd."""
    cxx = _compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler found (set ROBODYN_CXX or CXX)")
    key = _cache_key(gen, cxx)
    stem = c_identifier(gen.robot_name)[:48]
    cache, cache_fd = open_cache()
    try:
        entry = open_entry(cache_fd, stem, key, gen.sha256)
        if entry is None:
            entry = install(cache, cache_fd, stem, key, gen.source,
                                          _compile_into(cxx))
    finally:
        os.close(cache_fd)
    return (cache / f"{stem}-{key}.so", *entry)


def compile_kernels(gen):
    """Compile ``gen`` into a shared library in the cache (if not there yet); returns its path.

    The cache folder is private (0700, owned by the user). Next to each library a record
    (``.sha256``) holds the cache key and the SHA-256 of the source it was compiled from and
    of the library itself; a cached library is used only when it and its record are this
    user's own private files and both hashes match (else it is compiled again; see
    robodyn._kernel_cache). Raises RuntimeError when no compiler is available or compilation
    fails."""
    path, fd, _ = _cached_library(gen)
    os.close(fd)
    return path


def _load_kernels(gen):
    """The compiled kernels of ``gen`` loaded (ctypes.CDLL), from the very file whose bytes
    were checked; kept loaded for the life of the process."""
    path, fd, digest = _cached_library(gen)
    lib = _LOADED.get(digest)
    if lib is not None:
        os.close(fd)
        return lib
    lib = load(fd, path)
    _LOADED[digest] = lib
    return lib


def load_library(gen):
    """The compiled library of generated code ``gen`` (anything with ``robot_name``,
    ``source`` and ``sha256``, e.g. a Generated or a constrained kernel's code): compiled into
    the cache if needed (:func:`compile_kernels`), loaded with ctypes from the very file whose
    bytes were checked, kept loaded for the life of the process."""
    return _load_kernels(gen)


def _builtin(gen):
    for name, sha, *addresses in _core._builtin_kernels():
        if sha == gen.sha256:
            return addresses
    return None


def _check_against_generic(special, generic, rng_seed=1988):
    """Compare the kernels with the generic algorithms at a few random states (1e-9)."""
    rng = np.random.default_rng(rng_seed)
    n = generic.n
    lo, hi = generic.position_limits
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    for _ in range(4):
        q = rng.uniform(lo, hi)
        if generic.nq != n:
            # a free-flyer base (q[0:7]): a position and a random unit quaternion
            quat = rng.standard_normal(4)
            q[3:7] = quat / np.linalg.norm(quat)
        qd, x = rng.standard_normal(n), rng.standard_normal(n)
        pairs = [("inverse_dynamics", special.inverse_dynamics(q, qd, x),
                  generic.inverse_dynamics(q, qd, x)),
                 ("mass_matrix", special.mass_matrix(q), generic.mass_matrix(q)),
                 ("gravity", special.gravity_torques(q), generic.gravity_torques(q)),
                 ("forward_dynamics", special.forward_dynamics(q, qd, x),
                  generic.forward_dynamics(q, qd, x))]
        for what, got, ref in pairs:
            scale = max(1.0, float(np.max(np.abs(ref))))
            err = float(np.max(np.abs(got - ref)))
            if not err <= 1e-9 * scale:
                raise RuntimeError(f"generated {what} of '{generic.name}' differs from the "
                                   f"generic code by {err:.3g} (scale {scale:.3g})")


def specialize(robot):
    """A new Robot (same model) whose inverse dynamics, mass matrix, gravity torques and forward
    dynamics run generated, robot-specific code; its ``op_counts`` report the generated code.

    The bundled robots use the kernels compiled into the extension; any other robot is compiled
    with the system C++ compiler (cached on disk, and the loaded kernels per process: the same
    model specialised again, or unpickled specialised, reuses them). Without a working compiler,
    or for a model whose code would exceed :data:`MAX_OPERATIONS` (checked before tracing),
    warns (RuntimeWarning) and returns a Robot running the generic code. The kernels are checked
    against the generic code at a few random states before they are first used (RuntimeError if
    they differ).
    """
    return specialize_spec(robot.spec, type(robot))


# loaded kernels of this process: model fingerprint -> (addresses, library, op counts)
_SPECIALIZED = {}


def specialize_spec(spec, Robot):
    """:func:`specialize` for a :class:`robodyn.ModelSpec`, building robots of class ``Robot``
    (robodyn.Robot or robodyn.coupling.CoupledRobot)."""
    key = fingerprint(spec)
    known = _SPECIALIZED.get(key)
    if known is None:
        generic = Robot(spec)
        lib = None
        try:
            gen = generate(generic)
            addresses = _builtin(gen)
            if addresses is None:
                lib = _load_kernels(gen)
                addresses = [ctypes.cast(getattr(lib, gen.symbol(f)), ctypes.c_void_p).value
                             for f in FUNCTIONS]
        except (CodeSizeError, MemoryError, RuntimeError, OSError, AttributeError) as e:
            warnings.warn(f"robodyn: no specialised code for '{embed(generic.name, 'text')}' "
                          f"({str(e) or type(e).__name__}); using the generic algorithms",
                          RuntimeWarning, stacklevel=3)
            return generic
        known = ([int(a) for a in addresses], lib,
                 {f: dict(k.counts) for f, k in gen.kernels.items()})
        special = _specialized_robot(Robot, spec, known)
        _check_against_generic(special, generic)
        _SPECIALIZED[key] = known
        return special
    return _specialized_robot(Robot, spec, known)


def _specialized_robot(cls, spec, known):
    addresses, lib, counts = known
    special = cls(spec)
    special.use_kernels(addresses, {a: counts[f] for a, f in OPCOUNT_ALGORITHMS.items()},
                        library=lib, rebuild=rebuild)
    return special


def rebuild(cls, spec, specialized=True):
    """Unpickling a specialised robot: specialised again (or plain when ``specialized`` is
    False) from the per-process cache of loaded kernels, so workers compile or load once."""
    return specialize_spec(spec, cls) if specialized else cls(spec)
