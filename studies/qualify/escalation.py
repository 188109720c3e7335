"""Escalation bookkeeping of the qualifier: ``Escalation`` keeps every (method, scenario) count
and verdict and decides which scenarios need more replications; a round's tasks are run by
the runner it is given (``studies.qualify.run.RoundRunner``)."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from methods.qualification import (EXCEEDS, UNDETERMINED, QualificationPolicy, cp_bounds, cp_lower, cp_upper,
                                   verdict_of)

from studies.qualify.scenarios import Counts, ScenarioPoint, Task, method_key, task_cost


class DeadlineReached(Exception):
    """A qualification stopped at its time limit (``qualify(deadline=...)``): before a round
    whose estimated time would overrun it, or at a batch's end once it has passed.  What
    finished is kept in the checkpoint, if the run has one."""



class Escalation:
    """Counts per (method, scenario point) and the cells each method has already failed.
    ``one_verdict``: the whole domain is one question (a certificate): once any scenario
    exceeds, nothing more is escalated or refined for that method.  ``estimand``: the null
    boundary every scenario sits on (the methods share it)."""

    def __init__(self, methods: list, policy: QualificationPolicy, one_verdict: bool = False,
                 estimand: str = "trial_weighted", deadline: float | None = None):
        self.methods = {method_key(m): m for m in methods}
        self.policy = policy
        self.estimand = estimand  # whose null boundary the scenarios sit on (one for all methods)
        self.one_verdict = one_verdict
        self.rows: dict[tuple, dict[tuple, tuple[ScenarioPoint, Counts]]] = {k: {} for k in self.methods}
        self.rejected: dict[tuple, set] = {k: set() for k in self.methods}
        self.replications = 0   # simulated experiments (shared by the methods of a task)
        self.method_replications = 0
        self.deadline = deadline  # time.monotonic() by which the run stops (None: no limit)
        self._rate: float | None = None  # seconds per unit of task_cost, measured on the rounds run so far

    def _check_round(self, tasks: list[Task], what: str) -> None:
        """Stop before a round that would overrun the deadline (priced from the rounds before it)."""
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        need = None if self._rate is None else self._rate * sum(task_cost(self.policy, t) for t in tasks)
        if left <= 0 or (need is not None and need > left):
            priced = "" if need is None else f" (estimated {need:.3g} s from the rounds before it)"
            raise DeadlineReached(f"stopped before {what}{priced}: {max(left, 0.0):.0f} s of the time limit left")

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

    def escalate(self, items: list[tuple[ScenarioPoint, list[tuple]]], runner, estimands: tuple[str, ...],
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
            self._check_round(tasks, f"{label}round {r + 1} ({len(tasks)} scenarios at {target} replications)")
            began = time.monotonic()

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
            cost = sum(task_cost(self.policy, t) for t in tasks)
            if cost > 0:
                self._rate = (time.monotonic() - began) / cost

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
