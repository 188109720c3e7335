"""Work that survives crashes and is never trusted blindly: checked chunk files and
exclusive locks.

A chunk file (``.npz``) holds one task's integer tallies together with the run key and
task key it belongs to and the sha256 of the tally bytes.  :func:`load_chunk` accepts a
file only when all of them match and the tallies are consistent with the task (every
cell counts exactly the task's replications, split into pass, fail and inconclusive); a
file that fails any check is reported and recomputed, never merged.  Files are written
to a temporary name, fsynced and renamed, so a killed writer leaves no half file.

:func:`exclusive` takes an advisory ``flock`` on a lock file for the life of a run: a
second run on the same output or work directory is refused at once with a message
naming the path and the holder's pid.  The kernel drops the lock when its holder dies,
so a killed run never blocks the next one.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

CHUNK_FORMAT = "simlab-chunk-1"


def _digest(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def save_chunk(path: Path, arr: np.ndarray, run_key: str, task: tuple[int, ...]) -> None:
    """Write ``arr`` with its run key, task key and checksum, atomically and durably."""
    meta = {"format": CHUNK_FORMAT, "run_key": run_key, "task": [int(t) for t in task],
            "dtype": str(arr.dtype), "shape": list(arr.shape), "sha256": _digest(arr)}
    buf = io.BytesIO()
    np.savez(buf, tally=arr, meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(buf.getvalue())
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_chunk(path: Path, run_key: str, task: tuple[int, ...], shape: tuple[int, ...],
               check=None) -> tuple[np.ndarray | None, str]:
    """``(tallies, "")`` when ``path`` is a sound chunk of ``task`` in run ``run_key``
    with ``shape``; else ``(None, why)``.  ``check(arr) -> str`` adds a content check
    (an empty string when the tallies are consistent)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arr = z["tally"]
            meta = json.loads(z["meta"].tobytes().decode())
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile, zlib.error,
            NotImplementedError, struct.error) as exc:
        # a truncated file or a flipped byte in the zip structure (BadZipFile: bad CRC, bad magic,
        # no central directory; NotImplementedError: a 'zip version' or compression byte) is
        # damage to report and recompute, not a crash
        return None, f"damaged or unreadable ({type(exc).__name__}: {exc})"
    if meta.get("format") != CHUNK_FORMAT:
        return None, "not a simlab chunk"
    if meta.get("run_key") != run_key or meta.get("task") != [int(t) for t in task]:
        return None, f"belongs to run {meta.get('run_key')} task {meta.get('task')}"
    if arr.dtype != np.int64 or tuple(arr.shape) != tuple(shape):
        return None, f"shape {arr.dtype}{arr.shape}, expected int64{tuple(shape)}"
    if _digest(arr) != meta.get("sha256"):
        return None, "checksum mismatch"
    why = check(arr) if check is not None else ""
    return (None, why) if why else (arr, "")


@contextlib.contextmanager
def exclusive(path: str | Path, what: str) -> Iterator[Path]:
    """Hold an exclusive lock on ``path`` (created if needed) for the ``with`` block; a
    lock held by another process is a ``ValueError`` naming ``what`` and its pid.  The
    lock file is removed on exit."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise ValueError(f"{what} is in use by another run (pid {holder}, lock {p}); wait for it to "
                             "finish or choose another path") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield p
        finally:
            with contextlib.suppress(OSError):
                os.unlink(p)
    finally:
        os.close(fd)


__all__ = ["save_chunk", "load_chunk", "exclusive", "CHUNK_FORMAT"]
