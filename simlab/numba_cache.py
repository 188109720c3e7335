"""Key numba's on-disk cache on the source of every kernel, not only the decorated file.

numba's cache index checks only the timestamp of the file that defines a ``cache=True``
function, yet simlab's kernels inline helpers from other files (``methods/fixed/_common.py``,
``_trial.py``, ``simlab/rng.py``...).  After an edit to such a helper, numba would load the
stale machine code beside a method identity that already hashes the new source.  So the
cache directory is named after a digest of every ``.py`` file in the packages that hold
kernels (``simlab`` and ``methods``): any edit moves the cache to a fresh directory.  The
front door ``simlab/cli`` holds no kernel and no kernel reaches it (``tests/test_layers.py``),
so it is left out: an edit to a command does not recompile every kernel.

``NUMBA_CACHE_DIR`` (if set) is the parent of that directory; otherwise the user cache
(``$XDG_CACHE_HOME`` or ``~/.cache``) ``/simlab/numba``.  ``SIMLAB_NUMBA_CACHE=plain``
leaves numba's own behaviour untouched.

**Closures.**  A kernel made by a factory (``pooled_kernel(interval)``) is a ``cache=True``
closure over other jitted functions.  numba keys such a closure's cache entry on the pickle
of its captured values, and a captured dispatcher pickles with a random per-process uuid
(numba issue #6264), so the entry is never found again: every process recompiled twelve
methods' kernels (0.8 s to several seconds each).  :func:`cache_closure` keys them instead on
what the captured values are -- a jitted function by its module, name, bytecode and, if it
is a closure itself, its own captured values; an array by its bytes; a number by its repr.
Within one cache directory (one digest of the sources) that names the same code in every
process; different parameters of one factory still get different entries."""
from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

_KERNEL_PACKAGES = ("simlab", "methods")
_NO_KERNELS = (("simlab", "cli"),)  # the front door: commands only, never imported by a kernel
_PREFIX = "simlab-"


def source_digest(root: Path | None = None) -> str:
    """sha256 over the relative paths and bytes of every ``.py`` file of the kernel packages
    (the front door excepted)."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    h = hashlib.sha256()
    for pkg in _KERNEL_PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if path.relative_to(root).parts[:2] in _NO_KERNELS:
                continue
            h.update(path.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def _describe(value, depth: int = 0) -> bytes:
    """A stable byte description of a closure's captured value (``TypeError`` where there is
    none: numba's own key is used then)."""
    if depth > 16:
        raise TypeError("closures nested too deeply")
    py_func = getattr(value, "py_func", None)
    if py_func is not None and callable(value):
        parts = [f"jit:{py_func.__module__}.{py_func.__qualname__}".encode(), py_func.__code__.co_code,
                 repr(getattr(value, "targetoptions", {})).encode()]
        for cell in py_func.__closure__ or ():
            parts.append(_describe(cell.cell_contents, depth + 1))
        return b"(" + b"\0".join(parts) + b")"
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__}:{value!r}".encode()
    if isinstance(value, tuple):
        return b"tuple(" + b",".join(_describe(v, depth + 1) for v in value) + b")"
    import numpy as np

    if isinstance(value, np.ndarray):
        return f"array:{value.dtype.str}:{value.shape}:".encode() + np.ascontiguousarray(value).tobytes()
    if isinstance(value, np.generic):
        return f"{value.dtype.str}:{value.item()!r}".encode()
    raise TypeError(f"no stable description of a captured {type(value).__name__}")


@functools.lru_cache(maxsize=None)
def _closure_cache_class():
    from numba.core.caching import FunctionCache   # numba is imported by then: a kernel exists

    class ClosureCache(FunctionCache):
        """numba's function cache with the closure's captured values keyed by :func:`_describe`."""

        def _index_key(self, sig, codegen):
            try:
                cells = b"".join(_describe(c.cell_contents) for c in self._py_func.__closure__ or ())
            except TypeError:
                return super()._index_key(sig, codegen)
            return (sig, codegen.magic_tuple(), (hashlib.sha256(self._py_func.__code__.co_code).hexdigest(),
                                                 hashlib.sha256(cells).hexdigest()))

    return FunctionCache, ClosureCache


def cache_closure(dispatcher):
    """Give a ``cache=True`` closure kernel an on-disk cache key that the next process finds
    (module docstring); returns the dispatcher.  Without simlab's cache directory
    (``SIMLAB_NUMBA_CACHE=plain``) numba's own behaviour is kept."""
    function_cache, closure_cache = _closure_cache_class()
    if os.environ.get("SIMLAB_NUMBA_CACHE") != "plain" and type(getattr(dispatcher, "_cache", None)) is function_cache:
        dispatcher._cache = closure_cache(dispatcher.py_func)
    return dispatcher


def configure() -> str | None:
    """Point numba's cache at the directory of the current sources; return it."""
    if os.environ.get("SIMLAB_NUMBA_CACHE") == "plain":
        return None
    base = os.environ.get("NUMBA_CACHE_DIR")
    if base and Path(base).name.startswith(_PREFIX):
        return base  # a parent process of ours configured it already
    if not base:
        base = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "simlab" / "numba")
    directory = str(Path(base) / f"{_PREFIX}{source_digest()[:16]}")
    os.environ["NUMBA_CACHE_DIR"] = directory
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba imported first: its config has already read the variable
        config.CACHE_DIR = directory
    return directory

def is_compiled(dispatcher) -> bool:
    """Whether a jitted function runs without compiling first: it has machine code in this
    process, or (``cache=True``) an index in the on-disk cache of the current sources.  A first
    use after an install or an edit compiles (seconds for most kernels, minutes for the largest),
    and the commands say so before it starts rather than sit silent."""
    if getattr(dispatcher, "overloads", None):
        return True
    cache = getattr(dispatcher, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    if index is None:     # not cached on disk (or not a numba dispatcher): it compiles whenever it is loaded
        return not hasattr(dispatcher, "py_func")
    return os.path.isfile(index)


__all__ = ["cache_closure", "configure", "is_compiled", "source_digest"]
