"""Run studies: every method on the same simulated tables, tallied in integers.

* :func:`evaluate_scenario` -- one scenario, a replication range, all methods, every
  margin and alpha level -> :class:`ScenarioCounts` (integer tallies).  Tallies of
  disjoint replication ranges add (``a.merge(b)``) to exactly the tallies of their union,
  so sequential-MC users may grow a study a block at a time.
* :func:`run_study` -- a :class:`~studies.engine.spec.StudySpec` -> ``xarray.Dataset``:
  ``(scenario, chunk)`` tasks through one executor (``studies.engine.executor``: serial, joblib
  processes or a dask cluster), finished chunks saved on disk (``work_dir``, checked
  chunk files of ``studies.engine.durable``) so an interrupted run resumes without recomputing
  them, the output written atomically before the chunks go, an optional progress bar.

Common random numbers: within a task one buffer of tables is generated per batch and
every method (and margin, alpha) is evaluated on it.  When every method of the
study decides from cluster moments and the scenario's clusters share one size, the
buffer holds each replication's ``(k, sum D, sum D^2)`` instead (``moment_path``): the
same draws, the same decisions, no tables written.  Bitwise reproducibility:
replication ``r`` depends only on ``(seed, scenario, r)`` and tallies are integers, so
the result is the same for any ``n_jobs``, backend, chunk size and batch size.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from simlab.rng import MAX_REPLICATIONS
from simlab.sampling import COMPOSITION_VERSION, TableSource, source_name, table_source
from simlab.scenario import PairedScenario

from studies.engine import device as _device
from studies.engine import tally as _tally
from studies.engine.measures import measures as _measures
from studies.engine.evaluate import ScenarioRows, evaluate
from studies.engine.spec import MethodRef, StudySpec, as_method_refs



@dataclass
class ScenarioCounts:
    """Integer tallies of one scenario: ``tally[method, margin, alpha, field]``."""
    methods: tuple[str, ...]
    margins: tuple[float, ...]
    alphas: tuple[float, ...]
    theta: np.ndarray            # float64[method]: targeted true value
    tally: np.ndarray            # int64[method, margin, alpha, NF]
    sampler: str = ""
    ranges: list[tuple[int, int]] = field(default_factory=list)

    def merge(self, other: "ScenarioCounts") -> "ScenarioCounts":
        """Tallies of both replication ranges (they must not overlap)."""
        if (self.methods, self.margins, self.alphas) != (other.methods, other.margins, other.alphas):
            raise ValueError("cannot merge counts of different methods, margins or alpha levels")
        for a0, a1 in self.ranges:
            for b0, b1 in other.ranges:
                if a0 < b1 and b0 < a1:
                    raise ValueError(f"replication ranges overlap: [{a0}, {a1}) and [{b0}, {b1})")
        return ScenarioCounts(self.methods, self.margins, self.alphas, self.theta,
                              _tally.add(self.tally, other.tally), self.sampler,
                              sorted(self.ranges + other.ranges))

    @staticmethod
    def concat(parts: Sequence["ScenarioCounts"]) -> "ScenarioCounts":
        """Counts of several method groups of one scenario side by side (methods axis);
        groups may cover different replication counts (each its first ``n``)."""
        if not parts:
            raise ValueError("nothing to concatenate")
        first = parts[0]
        for p in parts[1:]:
            if (p.margins, p.alphas) != (first.margins, first.alphas):
                raise ValueError("cannot concatenate counts of different margins or alpha levels")
        methods = tuple(m for p in parts for m in p.methods)
        if len(set(methods)) != len(methods):
            raise ValueError(f"duplicate methods: {methods}")
        return ScenarioCounts(methods, first.margins, first.alphas,
                              np.concatenate([p.theta for p in parts]),
                              np.concatenate([p.tally for p in parts], axis=0), first.sampler,
                              sorted({r for p in parts for r in p.ranges}))

    def measures(self, mc_confidence: float = 0.95) -> dict[str, np.ndarray]:
        """Measures with MC SEs, arrays shaped ``[method, margin, alpha]``."""
        theta = self.theta[:, None, None]
        margin = np.asarray(self.margins)[None, :, None]
        return _measures(self.tally, theta, margin, mc_confidence)

    def count(self, field_name: str, method: str, margin: float | None = None,
              alpha: float | None = None) -> int:
        i = self.methods.index(method)
        j = 0 if margin is None else self.margins.index(margin)
        c = 0 if alpha is None else self.alphas.index(alpha)
        return int(self.tally[i, j, c, _tally.F[field_name]])


def _resolve(methods) -> tuple[tuple[MethodRef, ...], list]:
    refs = as_method_refs(methods)
    if not refs:
        raise ValueError("give at least one method")
    keys = [r.key for r in refs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate method labels: {keys}")
    return refs, [r.resolve("fixed") for r in refs]


def _evaluate_range(source: TableSource, methods, thetas, margins, alphas, start: int, stop: int,
                    batch: int | None = None, moments: bool = True, device: str = "cpu") -> np.ndarray:
    out = np.zeros((len(methods), len(margins), len(alphas), _tally.NF), np.int64)
    if device == "gpu":  # the moment path on the device (a clear error where it cannot apply)
        from studies.engine.gpu import evaluate_moments_gpu

        evaluate_moments_gpu(source, methods, thetas, margins, alphas, start, stop, out, batch)
        return out

    def tally(i, j, c, res, block):
        _tally.tally_batch(res.status, res.estimate, res.lower, res.upper, float(thetas[i]), out[i, j, c])

    evaluate(ScenarioRows(source, moments=moments, batch=batch), start, stop, methods, margins, alphas, tally)
    return out


def evaluate_scenario(scenario: PairedScenario, methods: Sequence, margins: Sequence[float] = (0.03,),
                      alphas: Sequence[float] = (0.025,), replications: int = 10_000, seed: int = 20261129,
                      start: int = 0, sampler: str = "auto", batch: int | None = None,
                      moments: bool = True, device: str | None = None, chunks: int = 1,
                      on_chunk: Callable[[int], Any] | None = None) -> ScenarioCounts:
    """Evaluate ``methods`` (names, ``MethodRef`` or ``{name, options, label}``) on
    replications ``start .. start + replications - 1`` of ``scenario`` under ``seed``.
    ``moments=False`` forces the table path where the moment path would apply (the
    results are the same; for tests and benchmarks).  ``device``: 'cpu' or 'gpu' (default:
    ``studies.engine.device``'s selection; the same counts on either).  ``chunks``: run the
    range in this many consecutive parts from one table source, calling ``on_chunk(n)``
    after each (for progress; integer tallies, so the same counts)."""
    device = _device.resolve(device)
    if replications < 0 or start < 0 or start + replications > MAX_REPLICATIONS:
        raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {start}..{start + replications}")
    refs, resolved = _resolve(methods)
    margins, alphas = tuple(float(m) for m in margins), tuple(float(c) for c in alphas)
    thetas = np.array([m.true_value(scenario) for m in resolved])
    source = table_source(scenario, seed, sampler)  # built once: at 2000 clusters it is 40 ms
    stop = start + replications
    step = max(1, -(-replications // max(1, int(chunks))))
    # no replications: one empty part (the tally's zeros)
    parts = [(lo, min(lo + step, stop)) for lo in range(start, stop, step)] or [(start, stop)]
    t = None
    for lo, hi in parts:
        part = _evaluate_range(source, resolved, thetas, margins, alphas, lo, hi, batch, moments, device)
        t = part if t is None else _tally.add(t, part)
        if on_chunk is not None:
            on_chunk(hi - lo)
    return ScenarioCounts(tuple(r.key for r in refs), margins, alphas, thetas, t, source.name,
                          [(start, stop)])


# ---------------------------------------------------------------- whole studies

# a worker's recent table sources: the chunks of one scenario reach a worker one after another,
# and each built its source again (12 ms at 10 x 2; --chunk-size 1 spent most of a run there)
_SOURCES: OrderedDict[tuple, TableSource] = OrderedDict()
_SOURCES_KEPT = 8


def _source(scenario: PairedScenario, seed: int, sampler: str) -> TableSource:
    """``table_source(scenario, seed, sampler)``, kept for the next chunk of the same scenario
    (a source is a pure function of its arguments: the same tables either way)."""
    key = (scenario.key, seed, sampler)
    src = _SOURCES.get(key)
    if src is None:
        src = _SOURCES[key] = table_source(scenario, seed, sampler)
        while len(_SOURCES) > _SOURCES_KEPT:
            _SOURCES.popitem(last=False)
    else:
        _SOURCES.move_to_end(key)
    return src


def _study_task(scenario: PairedScenario, refs: tuple[MethodRef, ...], margins, alphas, seed: int, sampler: str,
          start: int, stop: int, moments: bool = True, device: str = "cpu") -> np.ndarray:
    resolved = [r.resolve("fixed") for r in refs]
    thetas = [m.true_value(scenario) for m in resolved]
    return _evaluate_range(_source(scenario, seed, sampler), resolved, thetas, margins, alphas,
                           start, stop, moments=moments, device=device)


def run_key(spec: StudySpec, chunk_size: int) -> str:
    """Identity of a run's chunk files: spec hash, method implementations, samplers, chunking."""
    from simlab.generate import GENERATOR_VERSION

    refs = spec.methods
    ids = [r.resolve("fixed").identity.as_dict() for r in refs]
    blob = json.dumps({"spec": spec.hash, "methods": ids, "composition": COMPOSITION_VERSION,
                       "generator": GENERATOR_VERSION, "chunk": int(chunk_size)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def run_study(spec: StudySpec, n_jobs: int = 1, chunk_size: int | None = None, work_dir: str | Path | None = None,
              resume: bool = True, keep_chunks: bool = False, progress: bool | None = None,
              on_task_done: Callable[[int, int], Any] | None = None, exact: bool | None = None,
              moments: bool = True, device: str | None = None, executor=None, out: str | Path | None = None,
              on_rejected: Callable[[Path, str], Any] | None = None, on_note: Callable[[str], Any] | None = None):
    """Run ``spec`` and return its ``xarray.Dataset`` (see ``studies.engine.study_dataset``).

    ``n_jobs``: local worker processes (-1 = all cores), or ``executor`` (a
    ``studies.engine.executor.Executor``: serial, joblib or dask; the caller keeps it open).
    ``chunk_size``: replications per task (default ``spec.chunk_size``).  ``work_dir``,
    ``resume``, ``keep_chunks``, ``on_rejected``, ``on_note``: finished chunks kept on disk so that an
    interrupted run resumes (``studies.engine.chunks``).  ``out``: write the dataset there
    (atomically; the path is checked and locked before any work); the chunks are removed only
    after that write.  ``progress``: rich progress bar on an interactive terminal (None =
    only for long runs).  ``on_task_done(done, total)`` is called after each finished chunk
    is saved.  ``exact``: add exact results where an exact engine applies (default
    ``spec.exact``).  ``moments=False``: never take the moment path (same results; for
    benchmarks).  ``device``: 'cpu' or 'gpu' (default: ``studies.engine.device``'s
    selection); on the GPU the tasks run one after another in this process, whatever
    ``n_jobs`` or ``executor``."""
    from simlab.progress import progress_bar
    from studies.datasets import check_output_path, save_dataset
    from studies.engine.chunks import ChunkedRun, study_check
    from studies.engine.durable import exclusive
    from studies.engine.executor import SerialExecutor, as_executor
    from studies.engine.study_dataset import build_study_dataset

    device = _device.resolve(device)
    chunk = int(chunk_size or spec.chunk_size)
    if chunk < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk}")
    if out is not None:
        out = check_output_path(out)
    refs, resolved = _resolve(spec.methods)
    points = spec.points()
    n = spec.n_replications
    tasks = [(si, s, min(s + chunk, n)) for si in range(len(points)) for s in range(0, n, chunk)]
    shape = (len(refs), len(spec.margins), len(spec.alphas), _tally.NF)
    key = run_key(spec, chunk) if work_dir is not None else ""
    with contextlib.ExitStack() as stack:
        if out is not None:
            stack.enter_context(exclusive(out.with_name(f".{out.name}.lock"), f"output {out}"))
        run = stack.enter_context(ChunkedRun(key, tasks, shape, study_check, work_dir=work_dir, resume=resume,
                                             keep_chunks=keep_chunks, on_rejected=on_rejected,
                                             spec_json=spec.to_json(), on_note=on_note))
        total_work = n * len(points) * len(refs) * len(spec.margins) * len(spec.alphas)
        show = progress if progress is not None else total_work > 20_000_000
        payloads = [(points[si][1], refs, spec.margins, spec.alphas, spec.seed, spec.sampler, s, e, moments,
                     device) for si, s, e in run.todo]
        ex, owned = (SerialExecutor(), True) if device == "gpu" else as_executor(executor, n_jobs)
        if owned:
            stack.enter_context(ex)
        with progress_bar(n * len(points), f"study {spec.name}", enabled=bool(show)) as advance:
            run.run(ex, _study_task, payloads, advance, on_task_done)
        totals = run.totals(len(points))
        counts = [ScenarioCounts(tuple(r.key for r in refs), tuple(spec.margins), tuple(spec.alphas),
                                 np.array([m.true_value(scenario) for m in resolved]), tot,
                                 source_name(scenario, spec.sampler), [(0, n)])
                  for (_, scenario), tot in zip(points, totals)]
        exact_rows = None
        if exact if exact is not None else spec.exact:
            from studies.exact.fixed import exact_grid

            with progress_bar(len(points) * len(refs), f"study {spec.name}: exact values",
                              enabled=bool(show)) as advance:
                exact_rows = exact_grid(points, refs, resolved, spec.margins, spec.alphas, advance=advance)
        ds = build_study_dataset(spec, points, counts, resolved, refs, exact_rows, run.info)
        if out is not None:
            save_dataset(ds, out)  # durable (fsync + rename) before any chunk goes
        run.finish()
    return ds
