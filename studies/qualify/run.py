"""The qualifier: search a policy's domain for the worst false-pass rate of a method.

1. Grid: every discrete cell (K, cluster size, rho, margin, label noise) x every
   (baseline, discordance) grid point, all at the null boundary (true difference =
   -margin).  Each scenario gets ``min_replications``; while its Clopper-Pearson interval
   (each stage's bound at the Bonferroni-adjusted ``policy.stage_confidence``, so the
   staged acceptance is a valid level ``1 - mc_confidence`` statement:
   ``methods.qualification.verdicts``) straddles the threshold (verdict ``undetermined``) its replications grow by
   ``replication_growth`` up to ``max_replications`` (more replications where a verdict is
   close).  Several methods qualified together share every simulated table (common random
   numbers); each stops when its own verdict is decided.
2. Refinement: in every cell not already rejected whose worst upper bound is at least
   ``refine_fraction * threshold``, a golden-section search (Kiefer 1953, Proc AMS 4:502-506;
   the bracketing form of Press et al., *Numerical Recipes* 3rd ed., sec. 10.2) maximises the
   estimated false-pass rate first over baseline (discordance held, clipped to feasibility),
   then over discordance, ``refine_evaluations`` new scenarios per axis, within the grid
   neighbours of the cell's worst scenario.
3. Every evaluated scenario is stored in an xarray dataset (netCDF, ``results/qualification/``)
   and summarised in the qualification record (``methods.qualification``) beside it.

Randomness: a scenario's tables are ``simlab.sampling.table_source(scenario, policy.seed,
policy.sampler)`` -- exactly the tables a study of that scenario and seed evaluates, each
replication a pure function of (seed, scenario, replication index).  Replication ranges are
extended, never redrawn, so the whole qualification is reproducible from the policy, for any
worker count.  Engines: the batched one (``studies.qualify.batch``, the default:
scenarios share laws and alias tables and are decided in batched kernel calls) and the
per-scenario one (``studies.qualify.tasks.run_task``, ``batched=False``) give the same
counts.  Sequential methods (a policy whose domain declares ``looks``) are run with
``looks`` equally spaced looks at ``ceil(j K / looks)`` clusters; promotion counts as a pass.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from methods.qualification import (EXCEEDS, QUALIFIED, UNDETERMINED, QualificationPolicy,
                                   QualificationRecord, ScenarioTable, build_record, cp_bounds, file_hash,
                                   record_stem, records_dir, verdict_of)
from methods.qualification.dataset import build_qualification_dataset
from simlab.estimands import is_difference
from simlab.generate import GENERATOR_VERSION

from studies.datasets import check_output_dir, describe, make_attrs, method_identity, save_dataset, save_json
from studies.qualify.escalation import DeadlineReached, Escalation
from studies.qualify.refine import GOLDEN, LineSearch, refine
from studies.qualify.scenarios import Counts, ScenarioPoint, Task, grid_specs, method_key, resolve_method, scenario_of, task_cost
from studies.qualify.tasks import run_task, run_tasks_one_by_one

VERDICT_NAMES = (QUALIFIED, EXCEEDS, UNDETERMINED)
VERDICT_CODES = {v: i for i, v in enumerate(VERDICT_NAMES)}


# ---------------------------------------------------------------- provenance and output


def software_info() -> dict[str, str]:
    """What the qualification record stores of the software (``studies.datasets``)."""
    from studies.datasets import code_revision, package_versions

    v = package_versions()
    info = {k: v[k] for k in ("python", "numpy", "numba", "scipy", "xarray")}
    info["generator_version"] = GENERATOR_VERSION
    rev = code_revision()
    if rev != "unknown":
        info["code_revision"] = rev
    return info


def scenario_table(policy: QualificationPolicy, rows: list[tuple[ScenarioPoint, Counts]]) -> ScenarioTable:
    mcc, thr = policy.stage_confidence, policy.threshold
    lo, up = cp_bounds([c.n_pass for _, c in rows], [c.n_reps for _, c in rows], mcc)
    lo, up = [float(v) for v in lo], [float(v) for v in up]
    return ScenarioTable(
        clusters=tuple(s.clusters for s, _ in rows), size=tuple(s.size for s, _ in rows),
        rho=tuple(s.rho for s, _ in rows), margin=tuple(s.margin for s, _ in rows),
        noise=tuple(s.noise for s, _ in rows), baseline=tuple(s.baseline for s, _ in rows),
        discordance=tuple(s.discordance for s, _ in rows), stage=tuple(s.stage for s, _ in rows),
        n_reps=tuple(c.n_reps for _, c in rows), n_pass=tuple(c.n_pass for _, c in rows),
        n_inconclusive=tuple(c.n_inconclusive for _, c in rows), lower=tuple(lo), upper=tuple(up),
        verdict=tuple(verdict_of(a, b, thr) for a, b in zip(lo, up)))


@dataclass
class QualifyOutcome:
    record: QualificationRecord
    record_path: Path | None
    dataset_path: Path | None


@dataclass
class QualifyRun:
    outcomes: list[QualifyOutcome]
    grid_scenarios: int
    refine_scenarios: int
    replications: int            # simulated experiments generated (shared across methods)
    method_replications: int     # replications x methods evaluated
    seconds: float

    def stats(self) -> dict[str, Any]:
        s = max(self.seconds, 1e-9)
        n = self.grid_scenarios + self.refine_scenarios
        return {"scenarios": n, "grid_scenarios": self.grid_scenarios, "refine_scenarios": self.refine_scenarios,
                "replications": self.replications, "method_replications": self.method_replications,
                "seconds": self.seconds, "scenarios_per_s": n / s, "replications_per_s": self.replications / s}


CHECKPOINT_BATCHES_PER_WORKER = 16  # batches per worker and round when a checkpoint is kept


def _batches(policy: QualificationPolicy, tasks: list[Task], n_batches: int) -> list[list[tuple[int, Task]]]:
    """Split into batches of roughly equal estimated cost (largest first, greedy)."""
    n_batches = max(1, min(n_batches, len(tasks)))
    order = sorted(range(len(tasks)), key=lambda i: -task_cost(policy, tasks[i]))
    loads = [0.0] * n_batches
    out: list[list[tuple[int, Task]]] = [[] for _ in range(n_batches)]
    for i in order:
        j = int(np.argmin(loads))
        out[j].append((i, tasks[i]))
        loads[j] += task_cost(policy, tasks[i])
    return [b for b in out if b]


class RoundRunner:
    """Runs tasks through an executor (``studies.engine.executor``: serial, joblib processes or
    dask), in batches (``batched``: law-sharing batches for the batched engine; else
    cost-balanced batches of the per-scenario path); results come back in task order and
    depend only on each task's own replication range (any backend, worker count or
    batching, same answer).  With a ``checkpoint``, finished tasks are read back from it
    and each batch's results are appended to it as the batch ends."""

    def __init__(self, executor, batched: bool = True, checkpoint=None, deadline: float | None = None):
        self.executor = executor
        self.batched = batched
        self.checkpoint = checkpoint   # ``studies.qualify.checkpoint.Checkpoint``: finished tasks kept on disk
        self.deadline = deadline       # time.monotonic() after which no further batch is awaited

    def run(self, policy, tasks: list[Task], estimands: tuple[str, ...],
            tick: Callable[[int, int], None] | None = None) -> list[dict[tuple, tuple[int, int]]]:
        results: list = [None] * len(tasks)
        if self.checkpoint is not None:
            for i, t in enumerate(tasks):
                results[i] = self.checkpoint.lookup(t)
        todo = [i for i, r in enumerate(results) if r is None]
        done = len(tasks) - len(todo)
        if tick and done:
            tick(done, len(tasks))
        sub = [tasks[i] for i in todo]
        if not sub:
            return results
        if self.batched:  # scenarios that share laws travel together, decided in batched calls
            from studies.qualify.batch import law_batches, run_batch

            workers = self.executor.workers
            # A checkpoint keeps only finished batches: cut finer so that an interrupted
            # run loses at most ~1/16 of a worker's share (counts do not depend on batching).
            floor = CHECKPOINT_BATCHES_PER_WORKER * workers if self.checkpoint is not None else None
            fn, batches = run_batch, law_batches(policy, sub, workers, min_batches=floor)
        elif self.executor.workers == 1 or len(sub) < 4:
            fn, batches = run_tasks_one_by_one, [[(i, t)] for i, t in enumerate(sub)]
        else:
            fn, batches = run_tasks_one_by_one, _batches(policy, sub, max(self.executor.workers * 16, len(sub) // 32))
        for _, part in self.executor.imap(fn, [(policy, b, estimands) for b in batches]):
            for j, r in part:
                results[todo[j]] = r
            if self.checkpoint is not None:
                self.checkpoint.save([(sub[j], r) for j, r in part])
            done += len(part)
            if tick:
                tick(done, len(tasks))
            if self.deadline is not None and time.monotonic() > self.deadline and done < len(tasks):
                raise DeadlineReached(f"stopped at the time limit with {done}/{len(tasks)} scenarios of a round done")
        return results


def method_estimand(method, policy: QualificationPolicy) -> str:
    return method.estimand.value if policy.estimand == "method" else policy.estimand


def qualify(methods: list, policy: QualificationPolicy, *, n_jobs: int = 1, out_dir: str | Path | None = "default",
            progress: Callable[[str], None] | None = None, one_verdict: bool = False, executor=None,
            batched: bool = True, checkpoint: str | Path | None = None,
            deadline: float | None = None) -> QualifyRun:
    """Qualify ``methods`` under ``policy`` (all on the same simulated tables; sequential
    methods need a policy with ``domain.looks``: promotion counts as a pass, the overall
    one-sided level is ``policy.alpha``);
    writes ``<name>.<policy hash>.nc`` and ``.json`` per method into ``out_dir`` (None: keep
    the records in memory; their dataset reference is then empty).  ``n_jobs`` local
    processes, or ``executor`` (``studies.engine.executor``; e.g. a dask cluster): the records
    are the same for every backend.  ``batched=False``: the per-scenario engine (the same
    counts; kept for the benchmark and tests).  ``checkpoint``: a directory where finished
    tasks are kept (``studies.qualify.checkpoint``); run again with the same one, a stopped
    qualification resumes and ends with the same records.  ``deadline`` (``time.monotonic()``):
    :class:`~studies.qualify.escalation.DeadlineReached` is raised before a round whose time,
    priced from the rounds before it, would overrun it, or once a batch ends past it (what
    finished stays in the checkpoint)."""
    from studies.engine.executor import as_executor

    for m in methods:
        kind = m.kind
        if kind == "sequential" and policy.domain.looks is None:
            raise ValueError(f"method {m.name!r} is sequential: the policy's domain must declare looks "
                             "(e.g. the built-in policy 'sequential')")
        if kind == "fixed" and policy.domain.looks is not None:
            raise ValueError(f"method {m.name!r} is fixed-sample but the policy declares {policy.domain.looks} looks; "
                             "qualify fixed-sample methods under a policy without looks")
        if kind not in ("fixed", "sequential"):
            raise ValueError(f"method {m.name!r} has unknown kind {kind!r}")
    keys = [method_key(m) for m in methods]
    if len(set(keys)) != len(keys) or len({m.name for m in methods}) != len(methods):
        raise ValueError("a method is listed twice")
    if out_dir == "default":
        out_dir = records_dir()
    families: dict[bool, list] = {}
    for m in methods:  # a difference and a loss rate have different null boundaries: separate grids
        families.setdefault(is_difference(method_estimand(m, policy)), []).append(m)
    if len(families) > 1:
        runs = [qualify(group, policy, n_jobs=n_jobs, out_dir=out_dir, progress=progress, one_verdict=one_verdict,
                        executor=executor, batched=batched, checkpoint=checkpoint, deadline=deadline)
                for group in families.values()]
        by_name = {o.record.method.name: o for r in runs for o in r.outcomes}
        return QualifyRun([by_name[m.identity.name] for m in methods], sum(r.grid_scenarios for r in runs),
                          sum(r.refine_scenarios for r in runs), sum(r.replications for r in runs),
                          sum(r.method_replications for r in runs), sum(r.seconds for r in runs))
    t0 = time.perf_counter()
    estimands = tuple(sorted({method_estimand(m, policy) for m in methods}))
    specs = grid_specs(policy, estimands[0])
    for spec in specs[:1]:
        for e in estimands:
            scenario_of(policy, spec, e)  # fail fast on an estimand mismatch
    if out_dir is not None:
        check_output_dir(out_dir)
    ex, owned = as_executor(executor, n_jobs)
    if progress:
        progress(f"grid: {len(specs)} scenarios x {len(methods)} method(s) on {ex.describe()}")
    escalation = Escalation(methods, policy, one_verdict, estimands[0], deadline=deadline)
    saved = None
    with contextlib.ExitStack() as stack:
        if checkpoint is not None:
            from studies.engine.durable import exclusive
            from studies.qualify.checkpoint import Checkpoint, checkpoint_path

            path = checkpoint_path(checkpoint, policy)
            stack.enter_context(exclusive(path.with_name(path.name + ".lock"), f"checkpoint {path}"))
            saved = Checkpoint(checkpoint, policy, methods)
            if progress:
                progress(saved.describe())
        if owned:
            stack.enter_context(ex)
        runner = RoundRunner(ex, batched=batched, checkpoint=saved, deadline=deadline)
        escalation.escalate([(s, list(keys)) for s in specs], runner, estimands, progress, "grid ")
        n_refine = refine(escalation, runner, estimands, progress)
    if saved is not None and progress:
        progress(f"{saved.read_back} tasks read back from the checkpoint")
    software = software_info()
    outcomes = []
    for key, m in zip(keys, methods):
        rows = sorted(escalation.rows[key].values(), key=lambda sc: (sc[0].stage != "grid",) + sc[0].point)
        outcomes.append(write_record(m, key, method_estimand(m, policy), policy, scenario_table(policy, rows),
                                     software, out_dir))
    return QualifyRun(outcomes, len(specs), n_refine, escalation.replications, escalation.method_replications,
                      time.perf_counter() - t0)


def write_record(method, key: tuple, estimand: str, policy: QualificationPolicy, scen: ScenarioTable,
                 software: dict[str, str], out_dir: str | Path | None, created=None) -> QualifyOutcome:
    """The record of ``method`` over ``scen`` and, with ``out_dir``, its dataset (``.nc``) and
    record (``.json``) files, written atomically; ``created`` keeps a record's original date
    (a re-stamped record keeps its validity window)."""
    label = getattr(method, "label", method.name)
    ds_path = rec_path = None
    sha, fname = "", ""
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = record_stem(label, policy)
        ds_path, rec_path = out / f"{stem}.nc", out / f"{stem}.json"
        ds = build_qualification_dataset(policy, method.identity.as_dict(), scen, software)
        ds.attrs.update(make_attrs("qualification", title=ds.attrs["title"], spec_json=json.dumps(policy.canonical()),
                                   spec_hash=policy.sha256, methods=[method_identity(method, label)], seed=policy.seed))
        save_dataset(describe(ds), ds_path, compress=True)
        sha, fname = file_hash(ds_path), ds_path.name
    record = build_record(method.identity.as_dict(), method.kind, estimand, policy, scen, fname, sha, software,
                          created=created, method_key=key)
    if rec_path is not None:
        save_json(record.to_json(), rec_path)
    return QualifyOutcome(record, rec_path, ds_path)


def summary_payload(record: QualificationRecord, path: Path | None = None) -> dict[str, Any]:
    """A JSON-friendly summary of a record (for the CLI)."""
    w = record.worst_case
    dom = record.policy.domain
    return {
        "method": record.method.model_dump(), "record": str(path) if path else None,
        "record_sha256": record.record_sha256, "policy_sha256": record.policy_sha256,
        "threshold": record.threshold, "confidence": record.confidence, "scenarios": len(record.scenarios),
        "cells_qualified": record.qualified.cells_qualified, "cells_total": record.qualified.cells_total,
        "worst_case": {**w.model_dump(), "trials": dom.cluster_sizes[w.size].model_dump(mode="json")},
        "summary": record.qualified.summary, "dataset": record.dataset.model_dump(),
        "created": record.created, "valid_until": record.valid_until,
    }


def iter_cells(record: QualificationRecord) -> Iterable[dict[str, Any]]:
    dom = record.policy.domain
    for c in record.cells:
        yield {"clusters": c.clusters, "trials": dom.cluster_sizes[c.size].model_dump(mode="json"), "rho": c.rho,
               "margin": c.margin, "noise": c.noise, "worst_upper": c.upper, "verdict": c.verdict,
               "n_scenarios": c.n_scenarios}


__all__ = ["ScenarioPoint", "Counts", "Task", "Escalation", "RoundRunner", "GOLDEN", "LineSearch", "qualify", "run_task", "refine",
           "scenario_of", "method_key", "resolve_method", "summary_payload", "QualifyRun", "QualifyOutcome",
           "QUALIFIED", "EXCEEDS", "UNDETERMINED"]
