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
leaves numba's own behaviour untouched."""
from __future__ import annotations

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
