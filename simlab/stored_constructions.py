"""A persistent store of costly deterministic constructions, so that a machine builds each
once rather than every process building it again (the least-favourable mixture of
``methods.fixed.dm_likelihood_ratio`` takes about a minute at 100 x 3).

An entry is a pure function of its ``key``: the caller's ``content_hash`` of everything the
construction depends on (the method's implementation identity, which hashes the code that
builds it, and the construction's arguments).  So an entry can never be stale: new code or new
arguments give a new key, and an old entry is simply not found.

Where.  Entries are read from the user store (``$SIMLAB_CACHE_DIR`` or ``$XDG_CACHE_HOME`` /
``~/.cache``, then ``simlab/constructions``), then from the read-only directories a caller ships
(``methods/fixed/constructions``: what the shipped certificates certify), and written to the user
store (atomically; a store that cannot be written only costs the rebuild).
``SIMLAB_CACHE_DIR=off`` disables the user store (the shipped directories are still read).

Format.  One JSON file per entry, ``<prefix>-<key hex>.json``: the key, the arguments (for a
reader), the arrays as lists of ``float.hex`` strings (exact for every float64, infinities
included) with their shapes, and a self-hash.  A file that does not parse, names another key or
fails its self-hash is reported once (a warning naming the file) and ignored: the construction is
rebuilt, never taken from a damaged file.
"""
from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from simlab.hashing import content_hash, hex_digest, self_hash_ok, with_self_hash

ENV_VAR = "SIMLAB_CACHE_DIR"
HASH_FIELD = "entry_sha256"


def user_store() -> Path | None:
    """The writable store, or None when ``$SIMLAB_CACHE_DIR`` is ``off``."""
    base = os.environ.get(ENV_VAR)
    if base == "off":
        return None
    root = Path(base) if base else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "simlab"
    return root / "constructions"


def entry_key(what: str, identity: str, arguments: dict) -> str:
    """The key of a construction ``what`` by code of ``identity`` with these arguments."""
    return content_hash({"what": what, "identity": identity, "arguments": arguments})


def _path(directory: Path, prefix: str, key: str) -> Path:
    return directory / f"{prefix}-{hex_digest(key)}.json"


def _read(path: Path, key: str) -> dict[str, np.ndarray] | None:
    try:
        entry = json.loads(path.read_text())
        if entry.get("key") != key or not self_hash_ok(entry, HASH_FIELD):
            raise ValueError("its key or self-hash does not match its content")
        return {name: np.array([float.fromhex(v) for v in a["values"]], dtype=np.float64).reshape(a["shape"])
                for name, a in entry["arrays"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        warnings.warn(f"stored construction {path} ignored ({exc}); rebuilding it", RuntimeWarning, stacklevel=3)
        return None


def load(prefix: str, key: str, shipped: tuple[Path, ...] = ()) -> dict[str, np.ndarray] | None:
    """The arrays stored under ``key`` (the user store first, then ``shipped``), or None."""
    store = user_store()
    for directory in ((store,) if store is not None else ()) + tuple(shipped):
        path = _path(directory, prefix, key)
        if path.is_file():
            found = _read(path, key)
            if found is not None:
                return found
    return None


def stored_arguments(prefix: str, shipped: tuple[Path, ...] = ()) -> list[dict]:
    """The arguments of every entry named ``prefix`` in the stores (for cost estimates, which
    must know whether a build is needed without knowing every argument; unreadable files are
    left to :func:`load` to report)."""
    store = user_store()
    out = []
    for directory in ((store,) if store is not None else ()) + tuple(shipped):
        for path in sorted(directory.glob(f"{prefix}-*.json")) if directory.is_dir() else ():
            try:
                out.append(json.loads(path.read_text())["arguments"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out


def save(prefix: str, key: str, arguments: dict, arrays: dict[str, Any], directory: Path | None = None) -> Path | None:
    """Write an entry to ``directory`` (default: the user store); return its path, or None when
    the store is off or cannot be written (the caller has the construction either way)."""
    directory = directory if directory is not None else user_store()
    if directory is None:
        return None
    entry = {"key": key, "arguments": arguments,
             "arrays": {name: {"shape": list(np.shape(a)),
                               "values": [float(v).hex() for v in np.asarray(a, dtype=np.float64).ravel()]}
                        for name, a in arrays.items()}}
    path, temporary = _path(directory, prefix, key), None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as f:
            temporary = Path(f.name)
            json.dump(with_self_hash(entry, HASH_FIELD), f, indent=1)
        os.chmod(temporary, 0o644)        # a store is shared like a cache, not a secret (tempfile makes 0600)
        os.replace(temporary, path)       # atomic: a concurrent reader sees the old entry or the whole new one
    except OSError as exc:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        warnings.warn(f"could not store a construction in {directory} ({exc}); it is rebuilt next time",
                      RuntimeWarning, stacklevel=2)
        return None
    return path


__all__ = ["ENV_VAR", "entry_key", "load", "save", "stored_arguments", "user_store"]
