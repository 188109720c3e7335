"""Escalation bookkeeping of the qualifier: ``RoundRunner`` runs a round's tasks through an
executor (the batched engine, ``studies.qualify.batch``, or one task at a time on the
per-scenario path), ``Escalation`` keeps every (method, scenario) count and verdict and decides
which scenarios need more replications."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from methods.qualification import (EXCEEDS, UNDETERMINED, QualificationPolicy, cp_bounds, cp_lower, cp_upper,
                                   verdict_of)

from studies.qualify.tasks import Counts, ScenarioPoint, Task, run_tasks_one_by_one, method_key, task_cost

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

    def __init__(self, executor, batched: bool = True, checkpoint=None):
        self.executor = executor
        self.batched = batched
        self.checkpoint = checkpoint   # ``studies.qualify.checkpoint.Checkpoint``: finished tasks kept on disk

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
        return results


class Escalation:
    """Counts per (method, scenario point) and the cells each method has already failed.
    ``one_verdict``: the whole domain is one question (a certificate): once any scenario
    exceeds, nothing more is escalated or refined for that method.  ``estimand``: the null
    boundary every scenario sits on (the methods share it)."""

    def __init__(self, methods: list, policy: QualificationPolicy, one_verdict: bool = False,
                 estimand: str = "trial_weighted"):
        self.methods = {method_key(m): m for m in methods}
        self.policy = policy
        self.estimand = estimand  # whose null boundary the scenarios sit on (one for all methods)
        self.one_verdict = one_verdict
        self.rows: dict[tuple, dict[tuple, tuple[ScenarioPoint, Counts]]] = {k: {} for k in self.methods}
        self.rejected: dict[tuple, set] = {k: set() for k in self.methods}
        self.replications = 0   # simulated experiments (shared by the methods of a task)
        self.method_replications = 0

    def verdict(self, c: Counts) -> str:
        p = self.policy
        c_s = p.stage_confidence
        return verdict_of(cp_lower(c.n_pass, c.n_reps, c_s), cp_upper(c.n_pass, c.n_reps, c_s),
                          p.threshold)

    def upper(self, c: Counts) -> float:
        """The one-sided Clopper-Pearson upper bound of ``c`` at the stage confidence."""
        return c.upper if c.upper is not None else cp_upper(c.n_pass, c.n_reps, self.policy.stage_confidence)

    def needs(self, key: tuple, spec: ScenarioPoint) -> bool:
        row = self.rows[key].get(spec.point)
        if row is None or row[1].n_reps == 0:
            return True
        if spec.cell in self.rejected[key] or (self.one_verdict and self.rejected[key]):
            return False
        verdict = row[1].verdict if row[1].verdict is not None else self.verdict(row[1])
        return verdict == UNDETERMINED and row[1].n_reps < self.policy.max_replications

    def escalate(self, items: list[tuple[ScenarioPoint, list[tuple]]], runner: RoundRunner, estimands: tuple[str, ...],
                 progress: Callable[[str], None] | None = None, label: str = "") -> None:
        """Evaluate ``items`` (scenario, method keys), growing replications round by round
        while a method's verdict is undetermined in a cell it has not already failed."""
        for spec, keys in items:
            for k in keys:
                self.rows[k].setdefault(spec.point, (spec, Counts()))
        t0 = time.perf_counter()
        last = [t0]
        for r, target in enumerate(self.policy.replication_schedule()):
            tasks = []
            for spec, keys in items:
                need = tuple(k for k in keys if self.needs(k, spec))
                if not need:
                    continue
                start = self.rows[need[0]][spec.point][1].n_reps
                tasks.append(Task(spec, need, start, target))
            if not tasks:
                break

            def tick(done: int, total: int, r=r, target=target) -> None:
                now = time.perf_counter()
                if progress and (now - last[0] > 10.0 or done == total):
                    last[0] = now
                    progress(f"{label}round {r + 1} ({target} reps): {done}/{total} scenarios "
                             f"({now - t0:.0f} s)")

            updated: list[tuple[tuple, ScenarioPoint, Counts]] = []
            for task, res in zip(tasks, runner.run(self.policy, tasks, estimands, tick)):
                self.replications += task.stop - task.start
                for k, (x, inc) in res.items():
                    c = self.rows[k][task.spec.point][1]
                    if c.n_reps != task.start:
                        raise RuntimeError("replication ranges out of step")  # internal invariant
                    c.n_reps, c.n_pass, c.n_inconclusive = task.stop, c.n_pass + x, c.n_inconclusive + inc
                    self.method_replications += task.stop - task.start
                    updated.append((k, task.spec, c))
            self._judge(updated)

    def _judge(self, updated: list[tuple[tuple, ScenarioPoint, Counts]]) -> None:
        """The verdicts of the updated counts (Clopper-Pearson bounds in one vectorised call:
        the same numbers as ``verdict``); a method that exceeds fails that cell."""
        if not updated:
            return
        lo, up = cp_bounds([c.n_pass for _, _, c in updated], [c.n_reps for _, _, c in updated],
                           self.policy.stage_confidence)
        for (k, spec, c), a, b in zip(updated, lo.tolist(), up.tolist()):
            c.verdict, c.upper = verdict_of(a, b, self.policy.threshold), b
            if c.verdict == EXCEEDS:
                self.rejected[k].add(spec.cell)
