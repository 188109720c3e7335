"""The batched qualification engine (``qualify(..., batched=True)``, the default).

The per-scenario engine (``studies.qualify.tasks.run_task``) builds, for every scenario
of a round, its validated ``PairedScenario``, the law of each of its clusters, their
grouping and alias tables, the methods' constants, then draws and decides its
replications -- a few milliseconds of Python and numpy around a fraction of a
millisecond of numba.  Here a batch of tasks (``law_batches``: tasks sorted so that the
scenarios that differ only in ``K`` travel together) is run at once:

* scenarios that differ only in ``K`` share one validated scenario (checked at every
  ``K`` against the null boundary as ``scenario_of`` checks it), one cluster law and its
  joint alias tables (``simlab.sampling.shared.SharedComposition``); a scenario's content
  key, hence its stream, comes from the canonical JSON of the shared scenario with only
  ``clusters`` changed -- the bytes ``PairedScenario.canonical_json`` writes;
* the scenarios of one ``(methods, K, cluster size, margin)`` group are drawn in one
  numba call and decided in one kernel call per method (moment path: ``(k, S1, S2)`` rows;
  table path: ``tables[R, K, 4]``), in chunks of bounded memory; each scenario's counts
  are the sums over its own rows;
* scenarios without a shared exact law (random cluster sizes; label noise with rho > 0
  and several trials; the ``trial`` sampler), and every scenario of a task whose methods
  read judge calibration sets (``methods.judged``), draw from their own ``table_source``
  (tables and calibration counts) and are decided with the rest of their group; such a
  group also has one calibration layout (per-arm or shared sets).

Every row is replication ``rep`` of its own scenario's stream, drawn exactly as that
scenario's ``CompositionSource`` / ``TrialSource`` draws it, and every method decides
each row on its own (the kernels' contract: a row's result does not depend on the other
rows of the batch), so the counts equal the per-scenario engine's bitwise for any
batching, worker count or backend (``tests/studies/test_qualify_batch.py``).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from methods.protocol import INCONCLUSIVE, PASS
from methods.qualification import QualificationPolicy
from simlab.exact import ExactUnsupported
from simlab.sampling import table_source
from simlab.sampling.shared import SharedComposition, recording, shared_law
from simlab.sampling.sources import composition_key
from simlab.estimands import true_value

from studies.engine.evaluate import Block, MethodError, evaluate, takes_calibration
from studies.qualify.scenarios import ScenarioPoint, Task, check_null, look_schedule, refusal, resolve_method, scenario_of, task_cost

TASKS_PER_BATCH = 256   # tasks per batch on one worker (bounds the shared tables' memory)
MOMENT_ROWS = 1 << 18   # (k, S1, S2) rows per moment chunk (6 MB)
# clusters x replications drawn per moment chunk: at K = 10^6 one chunk of MOMENT_ROWS rows was
# a single kernel call of 80 s, through which a SIGTERM or Ctrl-C waited (counts do not depend
# on the chunking)
MOMENT_DRAWS = 1 << 24
TABLE_CELLS = 1 << 21   # clusters x replications per table chunk (32 MB of int32 tables)
_CONSTS: dict[tuple, np.ndarray] = {}  # (method id, alpha, K) -> moment constants (kept across batches)


def _law_order(spec: ScenarioPoint) -> tuple:
    """Scenarios that differ only in K, then in rho (one-trial clusters: the same law), adjacent."""
    return (spec.margin, spec.size, spec.noise, spec.baseline, spec.discordance, spec.rho, spec.clusters)


def law_batches(policy: QualificationPolicy, tasks: list[Task], workers: int = 1,
                min_batches: int | None = None) -> list[list[tuple[int, Task]]]:
    """Contiguous runs of the tasks sorted by scenario without ``K`` (then ``K``): a batch
    is closed before it would cost more than 1/n of the whole (estimated), so each batch
    costs at most that or holds a single task; n is about one per ``TASKS_PER_BATCH``
    tasks, at least ``min_batches`` (default: 4 per worker when there are several)."""
    if not tasks:
        return []
    if min_batches is None:
        min_batches = 4 * workers if workers > 1 else 1
    order = sorted(range(len(tasks)), key=lambda i: _law_order(tasks[i].spec))
    n = min(len(tasks), max(math.ceil(len(tasks) / TASKS_PER_BATCH), min_batches))
    costs = [task_cost(policy, tasks[i]) for i in order]
    budget = sum(costs) / n
    out: list[list[tuple[int, Task]]] = [[]]
    load = 0.0
    for i, c in zip(order, costs):
        if out[-1] and load + c > budget:
            out.append([])
            load = 0.0
        out[-1].append((i, tasks[i]))
        load += c
    return out


class _Shared:
    """What the scenarios of one spec without ``K`` share: the validated scenario, the
    cluster law (None: each scenario draws from its own source) and the canonical JSON
    around the ``clusters`` value."""

    def __init__(self, policy: QualificationPolicy, spec: ScenarioPoint, estimands: tuple[str, ...], meas: dict):
        self.clusters = spec.clusters
        self.scenario = scenario_of(policy, spec, estimands[0])
        for e in estimands[1:]:
            check_null(self.scenario, spec, e)
        self.law = None
        if policy.sampler != "trial":
            if spec.noise not in meas:  # the recording depends on the label-noise model only
                meas[spec.noise] = recording(self.scenario)
            try:
                self.law = shared_law(self.scenario, meas[spec.noise])
            except ExactUnsupported:
                pass  # table_source decides: the trial generator, or the composition sampler's error
        text = self.scenario.canonical_json()
        parts = text.split(b'"clusters":%d,' % spec.clusters)
        if len(parts) != 2:
            self.law = None
        else:
            self.prefix, self.suffix = parts

    def key(self, clusters: int) -> str:
        """``PairedScenario.key`` of the shared scenario with ``clusters`` clusters."""
        return hashlib.sha256(self.prefix + b'"clusters":%d,' % clusters + self.suffix).hexdigest()


class BatchRun:
    """One batch of tasks: ``add`` them, then ``run`` returns their counts."""

    def __init__(self, policy: QualificationPolicy, estimands: tuple[str, ...]):
        self.policy, self.estimands = policy, estimands
        self.store = SharedComposition()
        self.shared: dict[tuple, _Shared] = {}
        self.meas: dict[int, np.ndarray | None] = {}
        self.groups: dict[tuple, list] = {}
        self.counts: dict[int, dict[tuple, list[int]]] = {}
        self.true: dict[tuple, float] = {}

    def add(self, index: int, task: Task) -> None:
        spec, policy = task.spec, self.policy
        lk = _law_order(spec)[:-1]
        if lk not in self.shared:
            self.shared[lk] = _Shared(policy, spec, self.estimands, self.meas)
        sh = self.shared[lk]
        methods = [resolve_method(k) for k in task.methods]
        judged = takes_calibration(methods)
        if sh.law is None or judged:  # its own source, exactly as run_task builds it
            sc = scenario_of(policy, spec, self.estimands[0])
            for e in self.estimands[1:]:
                check_null(sc, spec, e)
            handle, size = table_source(sc, policy.seed, policy.sampler), None
        else:
            if spec.clusters != sh.clusters:
                for e in self.estimands:
                    check_null(sh.scenario, spec, e, self._true(sh, spec, e))
            handle = self.store.add(sh.law, spec.clusters, *composition_key(sh.key(spec.clusters), policy.seed))
            size = self.store.moment_size[handle]
        if size is not None and all(getattr(m, "moments_kernel", None) is not None for m in methods):
            g = ("moments", task.methods, spec.clusters, size, spec.margin)
        else:
            arms = handle.calibration.arms if judged and handle.calibration is not None else 0
            g = ("tables", task.methods, spec.clusters, None, spec.margin, arms)
        self.groups.setdefault(g, []).append((index, task, handle))
        self.counts[index] = {k: [0, 0] for k in task.methods}

    def _true(self, sh: _Shared, spec: ScenarioPoint, estimand: str) -> float:
        """``simlab.estimands.true_value`` of the shared scenario with ``spec.clusters`` clusters.  The true
        estimands read only the cells, the cluster-size law and K (not rho, not the
        recording), so the scenarios that share those share the value."""
        key = (sh.scenario.cells, spec.size, spec.clusters, estimand)
        if key not in self.true:
            self.true[key] = true_value(sh.scenario.model_copy(update={"clusters": spec.clusters}), estimand)
        return self.true[key]

    def run(self) -> list[tuple[int, dict[tuple, tuple[int, int]]]]:
        for g, items in self.groups.items():
            if g[0] == "moments":
                self._moments(g, items)
            else:
                self._tables(g, items)
        return [(i, {k: (v[0], v[1]) for k, v in c.items()}) for i, c in self.counts.items()]

    def _moments(self, g: tuple, items: list) -> None:
        _, keys, K, size, margin = g
        self._evaluate(keys, margin, _GroupRows(self, K, items, size), items)

    def _tables(self, g: tuple, items: list) -> None:
        _, keys, K, _, margin, arms = g
        self._evaluate(keys, margin, _GroupRows(self, K, items, None, arms), items)

    def _evaluate(self, keys: tuple, margin: float, rows: "_GroupRows", items: list) -> None:
        methods = [resolve_method(k) for k in keys]

        def tally(i, j, c, res, block):
            pieces = block.tag
            starts = np.array([p[4] for p in pieces], np.int64)  # every piece holds at least one row
            for col, code in enumerate((PASS, INCONCLUSIVE)):
                for p, v in zip(pieces, np.add.reduceat(res.status == code, starts, dtype=np.int64).tolist()):
                    self.counts[p[0]][keys[i]][col] += v

        try:
            evaluate(rows, 0, rows.total, methods, (margin,), (self.policy.alpha,), tally,
                     schedule=look_schedule(self.policy), consts=_CONSTS)
        except MethodError as exc:
            raise refusal(keys[exc.index], items[0][1].spec, exc.reason) from None


class _GroupRows:
    """The rows of one group's tasks (scenarios of one K), drawn together in chunks: each
    block's ``tag`` lists its pieces ``(index, handle, first replication, count, row)``;
    ``arms`` > 0: the calibration sets (of that many arms) of the same rows go with them."""

    def __init__(self, run: BatchRun, clusters: int, items: list, size: int | None, arms: int = 0):
        self.run, self.clusters, self.items, self.size, self.arms = run, clusters, items, size, arms
        self.total = sum(t.stop - t.start for _, t, _ in items)

    def _chunks(self, cap: int):
        pieces, rows = [], 0
        for index, task, handle in self.items:
            s = task.start
            while s < task.stop:
                n = min(task.stop - s, cap - rows)
                pieces.append((index, handle, s, n, rows))
                s, rows = s + n, rows + n
                if rows == cap:
                    yield pieces, rows
                    pieces, rows = [], 0
        if pieces:
            yield pieces, rows

    def blocks(self, start: int, stop: int, methods):
        K, store = self.clusters, self.run.store
        if self.size is not None:
            cap = min(MOMENT_ROWS, max(1, MOMENT_DRAWS // K))
            buf = np.empty((min(cap, self.total), 3), np.int64)
            for pieces, rows in self._chunks(cap):
                yield Block(K, stats=store.fill_moments(buf[:rows], [p[1:] for p in pieces]), size=self.size,
                            tag=pieces)
            return
        cap = max(1, TABLE_CELLS // K)
        buf = np.empty((min(cap, self.total), K, 4), np.int32)
        cal_buf = np.empty((buf.shape[0], self.arms, 4), np.int32) if self.arms else None
        for pieces, rows in self._chunks(cap):
            tables = buf[:rows]
            cal = None if cal_buf is None else cal_buf[:rows]
            shared = [p[1:] for p in pieces if isinstance(p[1], int)]
            if shared:
                store.fill(tables, shared)
            for _, source, first, n, row in pieces:
                if not isinstance(source, int):
                    source.fill(tables[row:row + n], first)
                    if cal is not None:
                        source.fill_calibration(cal[row:row + n], first)
            yield Block(K, tables=tables, tag=pieces, calibration=cal)


def run_batch(policy: QualificationPolicy, batch: list[tuple[int, Task]],
              estimands: tuple[str, ...]) -> list[tuple[int, dict[tuple, tuple[int, int]]]]:
    """The counts of every task of ``batch`` (``(index, task)`` pairs), as ``run_task``
    gives them, computed together."""
    if len(_CONSTS) > 4096:
        _CONSTS.clear()
    run = BatchRun(policy, estimands)
    for i, t in batch:
        run.add(i, t)
    return run.run()


__all__ = ["BatchRun", "law_batches", "run_batch", "TASKS_PER_BATCH"]
