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
import stat
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
    try:
        with open(tmp, "wb") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # a failed write or rename (a folder in the chunk's place) leaves no temporary
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def chunk_file_seconds(directory: Path, trials: int = 4) -> float:
    """Measured seconds to write one chunk durably (:func:`save_chunk`: fsync'd) and remove it
    again, in ``directory`` (made if missing; the disk the run uses).  A run pays it once per
    task: at --chunk-size 1 on this machine's disk 7 ms a task, 28 s of a 1 s simulation."""
    import tempfile
    import time

    directory.mkdir(parents=True, exist_ok=True)
    probe = Path(tempfile.mkdtemp(prefix=".simlab-probe-", dir=directory))
    try:
        arr = np.zeros((2, 8), np.int64)
        t0 = time.perf_counter()
        for i in range(trials):
            p = probe / f"t{i}.npz"
            save_chunk(p, arr, "probe", (i,))
            p.unlink()
        return (time.perf_counter() - t0) / trials
    finally:
        with contextlib.suppress(OSError):
            for f in probe.iterdir():
                f.unlink()
            probe.rmdir()


def not_a_file(path: Path) -> str:
    """What ``path`` is when it exists and is not a regular file ("a directory", "a symbolic link"
    ...), else "" (a regular file, or nothing there)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    for test, what in ((stat.S_ISREG, ""), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "a device"


_ZIP_MAGIC = b"PK\x03\x04"  # every .npz starts with it (a zip archive's first file header)


def _unreadable(path: Path, exc: BaseException) -> str:
    """Plain words for why ``np.load`` could not read a chunk (the library's text named internals,
    and numpy's allow_pickle hint invited loading an untrusted file unsafely)."""
    if isinstance(exc, OSError) and exc.filename is not None:  # the open itself failed
        return f"cannot be read ({(exc.strerror or type(exc).__name__).lower()})"
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_ZIP_MAGIC))
    except OSError:
        head = b""
    if len(head) < len(_ZIP_MAGIC) and _ZIP_MAGIC.startswith(head):
        return "cut short"
    if head != _ZIP_MAGIC:
        return "not a simlab chunk"
    if isinstance(exc, EOFError) or (isinstance(exc, zipfile.BadZipFile) and "not a zip file" in str(exc)):
        return "cut short"  # the zip's directory, at its end, is missing
    if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc):
        return "checksum mismatch (a changed byte)"
    if isinstance(exc, KeyError):
        return "not a simlab chunk"
    if isinstance(exc, ValueError) and ("pickle" in str(exc) or "Object arrays" in str(exc)):
        return "holds objects, not counts"
    return "a broken zip or array structure (a changed byte)"


def load_chunk(path: Path, run_key: str, task: tuple[int, ...], shape: tuple[int, ...],
               check=None) -> tuple[np.ndarray | None, str]:
    """``(tallies, "")`` when ``path`` is a sound chunk of ``task`` in run ``run_key``
    with ``shape``; else ``(None, why)``.  ``check(arr) -> str`` adds a content check
    (an empty string when the tallies are consistent)."""
    what = not_a_file(path)
    if what:  # np.load of a folder was "IsADirectoryError: [Errno 21] ..."
        return None, f"not a chunk file ({what})"
    try:
        with np.load(path, allow_pickle=False) as z:
            arr = z["tally"]
            meta = json.loads(z["meta"].tobytes().decode())
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile, zlib.error,
            NotImplementedError, struct.error) as exc:
        # a truncated file or a flipped byte in the zip structure (BadZipFile: bad CRC, bad magic,
        # no central directory; NotImplementedError: a 'zip version' or compression byte) is
        # damage to report and recompute, not a crash
        return None, f"damaged or unreadable: {_unreadable(path, exc)}"
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


__all__ = ["save_chunk", "load_chunk", "not_a_file", "exclusive", "CHUNK_FORMAT"]
