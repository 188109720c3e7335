"""Chunked runs that resume: a study's ``(scenario, replication range)`` tasks through one
executor, each finished chunk kept on disk until the whole run is written.

Fixed-sample studies (``studies.engine.runner``) and sequential studies
(``studies.engine.sequential``) both run here.  With a ``work_dir`` every finished task's
integer tallies are saved as a checked chunk file (``studies.engine.durable``) under a
sub-folder named by the run key (spec hash, method identities, samplers, chunking), locked
against a second run; a rerun of the same spec reads the sound chunks back and computes
only the rest.  A chunk that fails a check (unreadable or damaged file, another run or
task, wrong shape, checksum, counts that do not add up to the task's replications) is
reported to ``on_rejected(path, why)`` by name and recomputed -- never merged.  The chunks
are removed only after the caller has written its output (:meth:`ChunkedRun.finish`).
"""
from __future__ import annotations

import contextlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from studies.engine import tally as _tally


@dataclass
class RunInfo:
    """What happened in a chunked run (also stored in the dataset's attrs)."""
    tasks: int = 0
    computed: int = 0
    resumed: int = 0
    started: str = ""
    finished: str = ""
    seconds: float = 0.0
    work_dir: str | None = None


def timestamp() -> str:
    """Local time with its UTC offset, as study datasets record it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def replication_check(task: tuple[int, int, int], fields: dict[str, int]):
    """A chunk's tallies must count exactly the task's replications in every cell: ``fields``
    names the replication count and the outcome counts that must add up to it."""
    n = task[2] - task[1]
    total, parts = fields["n_reps"], [fields[k] for k in fields if k != "n_reps"]

    def check(arr: np.ndarray) -> str:
        if np.any(arr[..., total] != n):
            return f"counts {int(arr[..., total].min())}..{int(arr[..., total].max())} replications, the task has {n}"
        if np.any(arr[..., parts].sum(axis=-1) != n) or np.any(arr[..., parts] < 0):
            return "inconsistent counts"
        return ""
    return check


def study_check(task: tuple[int, int, int]):
    """``replication_check`` for fixed-sample tallies (``studies.engine.tally``)."""
    F = _tally.F
    return replication_check(task, {"n_reps": F["n_reps"], "n_pass": F["n_pass"], "n_fail": F["n_fail"],
                                    "n_inconclusive": F["n_inconclusive"]})


def _chunk_path(run_dir: Path, task: tuple[int, int, int]) -> Path:
    return run_dir / f"t{task[0]:05d}_{task[1]}_{task[2]}.npz"


# a writer's temporary (studies.engine.durable.save_chunk, studies.datasets.save_json) left by a killed run
_TEMPORARY = re.compile(r"\.(run\.json|t\d{5}_\d+_\d+\.npz)\.\d+\.tmp")


def _run_record_problem(meta: Path, key: str) -> str | None:
    """Why ``run.json`` is not this run's record of its spec (None when it is)."""
    try:
        doc = json.loads(meta.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        return f"damaged ({type(exc).__name__}: {exc})"
    if not isinstance(doc, dict) or doc.get("run_key") != key:
        return "not this run's record (another run key)"
    return None


class ChunkedRun:
    """Run ``tasks`` (``(scenario index, start, stop)``) with ``fn(*payload)`` -> int64 tallies
    of ``shape``, summed over a scenario's chunks by ``add`` (the fixed-point-aware
    ``studies.engine.tally.add`` by default; plain integer addition for tallies without
    fixed-point sums); see the module docstring.  Use as a context manager around the run and
    the caller's output write, then call :meth:`finish`."""

    def __init__(self, key: str, tasks: Sequence[tuple[int, int, int]], shape: tuple[int, ...],
                 check: Callable[[tuple[int, int, int]], Callable[[np.ndarray], str]], *,
                 work_dir: str | Path | None = None, resume: bool = True, keep_chunks: bool = False,
                 on_rejected: Callable[[Path, str], Any] | None = None, spec_json: str | None = None,
                 add: Callable[[np.ndarray, np.ndarray], np.ndarray] = _tally.add,
                 on_note: Callable[[str], Any] | None = None):
        self.key, self.tasks, self.shape, self.check, self.add = key, list(tasks), shape, check, add
        self.work_dir, self.resume, self.keep_chunks = work_dir, resume, keep_chunks
        self.on_rejected, self.spec_json, self.on_note = on_rejected, spec_json, on_note
        self._blocked: set[tuple[int, int, int]] = set()  # tasks whose chunk path holds a folder (or such)
        self.results: dict[tuple[int, int, int], np.ndarray] = {}
        self.info = RunInfo(started=timestamp(), tasks=len(self.tasks))
        self.run_dir: Path | None = None
        self._t0 = time.perf_counter()
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "ChunkedRun":
        from studies.datasets import save_json
        from studies.engine.durable import exclusive, load_chunk, not_a_file

        if self.work_dir is None:
            return self
        self.run_dir = Path(self.work_dir) / self.key
        meta = self.run_dir / "run.json"
        # checked before any work: a file in the folder's place was a bare "File exists", and a folder
        # named run.json stopped the run at its end, when the chunks were removed
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise ValueError(f"work dir {self.work_dir}: {self.run_dir} is a file, not this run's chunk folder; "
                             "remove it or choose another work directory")
        if meta.exists() and not meta.is_file():
            raise ValueError(f"work dir {self.work_dir}: {meta} is not a file (this run's record of its spec); "
                             "remove it or choose another work directory")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._stack.enter_context(exclusive(self.run_dir / ".lock", f"work directory {self.run_dir}"))
        self.info.work_dir = str(self.run_dir)
        if self.spec_json is not None:
            why = _run_record_problem(meta, self.key) if meta.exists() else None
            if why and self.on_note is not None:   # a damaged one was passed over without a word
                self.on_note(f"{meta}: {why}; written again (the chunks are checked one by one)")
            if why or not meta.exists():
                save_json({"run_key": self.key, "spec": json.loads(self.spec_json)}, meta)
        for t in self.tasks:
            f = _chunk_path(self.run_dir, t)
            what = not_a_file(f)
            if what:  # not ours to remove, and a chunk cannot be saved over it: computed, kept in memory only
                self._blocked.add(t)
                if self.on_rejected is not None:
                    self.on_rejected(f, f"not a chunk file ({what}); left alone")
            elif self.resume and f.exists():
                arr, why = load_chunk(f, self.key, t, self.shape, self.check(t))
                if arr is not None:
                    self.results[t] = arr
                elif self.on_rejected is not None:
                    self.on_rejected(f, why)
        self.info.resumed = len(self.results)
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    @property
    def todo(self) -> list[tuple[int, int, int]]:
        return [t for t in self.tasks if t not in self.results]

    def run(self, executor, fn: Callable, payloads: Sequence[tuple], advance: Callable[..., Any] = lambda n, resumed=False: None,
            on_task_done: Callable[[int, int], Any] | None = None) -> None:
        """Compute the tasks still to do (``payloads`` in the order of :attr:`todo`) and
        save each chunk as it arrives."""
        from studies.engine.durable import save_chunk

        todo = self.todo
        found = sum(e - s for (_, s, e) in self.results)
        if found:   # resumed: done, but not part of this run's rate
            advance(found, resumed=True)
        for i, arr in executor.imap(fn, payloads):
            t = todo[i]
            if self.run_dir is not None and t not in self._blocked:
                save_chunk(_chunk_path(self.run_dir, t), arr, self.key, t)
            self.results[t] = arr
            self.info.computed += 1
            advance(t[2] - t[1])
            if on_task_done is not None:
                on_task_done(len(self.results), len(self.tasks))

    def totals(self, n_points: int) -> list[np.ndarray]:
        """The tallies of every scenario, summed over its chunks (integer addition: any order)."""
        out = [np.zeros(self.shape, np.int64) for _ in range(n_points)]
        for (si, _s, _e), arr in sorted(self.results.items()):
            out[si] = self.add(out[si], arr)
        self.info.finished = timestamp()
        self.info.seconds = time.perf_counter() - self._t0
        return out

    def finish(self) -> None:
        """Remove the chunks (after the output is durable), unless ``keep_chunks``: only the files
        this run writes (chunks, run.json, a killed writer's temporaries); anything else in the
        folder is left, and named to ``on_note`` (it ended a finished run with a raw errno)."""
        from studies.engine.durable import not_a_file

        if self.run_dir is None or self.keep_chunks:
            return
        ours = {_chunk_path(self.run_dir, t).name for t in self.tasks} | {"run.json"}
        if len(self.tasks) >= MANY_CHUNKS and self.on_note is not None:   # seconds on a slow disk: said
            self.on_note(f"removing the run's {len(self.tasks):,} chunk files from {self.run_dir}")
        left = []
        for f in sorted(self.run_dir.iterdir()):
            if f.name == ".lock":
                continue
            what = not_a_file(f)
            if what or not (f.name in ours or _TEMPORARY.fullmatch(f.name)):
                left.append(f"{f.name} ({what or 'a file simlab did not write'})")
                continue
            try:
                f.unlink()
            except OSError as exc:  # the output is written: a chunk that will not go is no failure
                left.append(f"{f.name} (not removed: {(exc.strerror or type(exc).__name__).lower()})")
        self._stack.close()
        with contextlib.suppress(OSError):  # another run may have started in it meanwhile
            self.run_dir.rmdir()
        if left and self.on_note is not None:
            self.on_note(f"work dir {self.run_dir} kept: it holds {', '.join(left)}; "
                         "remove them to let the folder go")


MANY_CHUNKS = 1000   # a run of this many chunk files says so before it removes them (3 ms each here)

__all__ = ["ChunkedRun", "RunInfo", "replication_check", "study_check", "timestamp"]
