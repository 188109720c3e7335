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
worker count.  Sequential methods (a policy whose domain declares ``looks``) are run with
``looks`` equally spaced looks at ``ceil(j K / looks)`` clusters; promotion counts as a pass.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from methods.protocol import INCONCLUSIVE, PASS
from methods.qualification import (EXCEEDS, QUALIFIED, UNDETERMINED, QualificationPolicy,
                                   QualificationRecord, ScenarioTable, build_record, clip_discordance, cp_bounds,
                                   cp_lower, cp_upper, discordance_limits, file_sha256, nuisance_grid, record_stem,
                                   records_dir, verdict_of)
from methods.qualification.dataset import build_dataset
from simlab.generate import GENERATOR_VERSION
from simlab.scenario import PairedScenario
from studies.runner import estimand_value

from .datasets import check_output_dir, describe, make_attrs, method_identity, save_dataset, save_json

VERDICT_NAMES = (QUALIFIED, EXCEEDS, UNDETERMINED)
VERDICT_CODES = {v: i for i, v in enumerate(VERDICT_NAMES)}
GOLDEN = 0.3819660112501051  # 2 - golden ratio: golden-section step fraction
_MAX_CELLS_PER_CHUNK = 1 << 21  # K * replications per generated chunk (32 MB of int32 tables)


@dataclass(frozen=True)
class Spec:
    """Coordinates of one scenario at the null boundary."""
    clusters: int
    size: int
    rho: float
    margin: float
    noise: int
    baseline: float
    discordance: float
    stage: str = "grid"

    @property
    def cell(self) -> tuple[int, int, float, float, int]:
        return (self.clusters, self.size, self.rho, self.margin, self.noise)

    @property
    def point(self) -> tuple:
        return self.cell + (round(self.baseline, 12), round(self.discordance, 12))


@dataclass
class Counts:
    n_reps: int = 0
    n_pass: int = 0
    n_inconclusive: int = 0

    @property
    def rate(self) -> float:
        return self.n_pass / self.n_reps if self.n_reps else float("nan")


def scenario_of(policy: QualificationPolicy, spec: Spec, estimand: str) -> PairedScenario:
    """The DGM of ``spec``; checks that the estimand's true value sits on the null boundary."""
    dom = policy.domain
    sc = PairedScenario.from_rates(spec.baseline, -spec.margin, spec.discordance, clusters=spec.clusters,
                                   cluster_size=dom.cluster_sizes[spec.size], rho=spec.rho,
                                   label_noise=dom.label_noise[spec.noise])
    true = estimand_value(sc, estimand)
    if estimand == "loss_rate":  # a difference of -m implies a loss rate >= m: inside the null
        if true > -spec.margin + 1e-12:
            raise ValueError(f"scenario {spec}: loss rate {-true} is below the margin {spec.margin} (not a null)")
    elif abs(true + spec.margin) > 1e-12:
        raise ValueError(f"scenario {spec}: true {estimand} difference {true} is not on the null boundary "
                         f"-{spec.margin}")
    return sc


def method_key(method) -> tuple:
    """How a worker process finds the same method: registry name, options, wrapped method."""
    from methods import registry

    inner = getattr(method, "inner", None)
    return (registry.reference(method), tuple(sorted(method.options.items())),
            None if inner is None else registry.reference(inner))


_RESOLVED: dict[tuple, Any] = {}


def resolve_method(key: tuple):
    if key not in _RESOLVED:
        from methods import registry
        name, options, inner = key
        m = registry.get(name)
        if inner is not None:
            m = m.with_inner(inner)
        if options and dict(options) != m.options:
            m = m.with_options(**dict(options))
        _RESOLVED[key] = m
    return _RESOLVED[key]


@dataclass(frozen=True)
class Task:
    """Replications ``start .. stop-1`` of one scenario for some methods."""
    spec: Spec
    methods: tuple[tuple, ...]   # method keys
    start: int
    stop: int


def run_task(policy: QualificationPolicy, task: Task, estimands: tuple[str, ...]) -> dict[tuple, tuple[int, int]]:
    """Pass and inconclusive counts of each method on the task's replication range (on the
    studies engine's moment path when every method can take it: the same counts)."""
    from studies.runner import MOMENT_BATCH, moment_path
    from simlab.sampling import table_source

    spec = task.spec
    scenario = scenario_of(policy, spec, estimands[0])
    for e in estimands[1:]:
        scenario_of(policy, spec, e)
    source = table_source(scenario, policy.seed, policy.sampler)
    methods = [(k, resolve_method(k)) for k in task.methods]
    out = {k: [0, 0] for k, _ in methods}
    n = task.stop - task.start
    if moment_path(source, [m for _, m in methods]):
        consts = {k: m.moment_consts(policy.alpha, spec.clusters) for k, m in methods}
        buf = np.empty((min(MOMENT_BATCH, n), 3), np.int64)
        for s in range(task.start, task.stop, MOMENT_BATCH):
            stats = source.fill_moments(buf[:min(MOMENT_BATCH, task.stop - s)], s)
            for k, m in methods:
                with _naming(k, spec):
                    r = m.batch_moments(stats, source.moment_size, spec.clusters, spec.margin, policy.alpha,
                                        consts[k])
                _add_status(r.status, out[k])
        return {k: (v[0], v[1]) for k, v in out.items()}
    chunk = max(1, _MAX_CELLS_PER_CHUNK // spec.clusters)
    buf = np.empty((min(chunk, n), spec.clusters, 4), np.int32)
    schedule = None
    if any(m.sequential for _, m in methods):
        from methods.sequential.base import LookSchedule
        schedule = LookSchedule(looks=policy.domain.look_schedule(spec.clusters))
    for s in range(task.start, task.stop, chunk):
        tables = source.fill(buf[:min(chunk, task.stop - s)], s)
        for k, m in methods:
            with _naming(k, spec):
                _count(m, tables, spec, policy, schedule, out[k])
    return {k: (v[0], v[1]) for k, v in out.items()}


@contextlib.contextmanager
def _naming(key: tuple, spec: Spec):
    """A method's refusal of a domain point, as an error naming the method and the point."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"method {key[0]!r} cannot run at K={spec.clusters}, margin={spec.margin:g} of this "
                         f"policy's domain: {exc}") from None


def _add_status(status: np.ndarray, acc: list[int]) -> None:
    acc[0] += int(np.count_nonzero(status == PASS))
    acc[1] += int(np.count_nonzero(status == INCONCLUSIVE))


def _count(m, tables, spec: Spec, policy: QualificationPolicy, schedule, acc: list[int]) -> None:
    if m.sequential:
        from methods.sequential.base import PROMOTE
        dec = m.batch(tables, schedule, spec.margin, policy.alpha).decision
        acc[0] += int(np.count_nonzero(dec == PROMOTE))
    else:
        _add_status(m.batch(tables, spec.margin, policy.alpha).status, acc)


def _run_batch(policy, batch, estimands):
    return [(i, run_task(policy, t, estimands)) for i, t in batch]


def _cost(policy: QualificationPolicy, task: Task) -> float:
    return (task.stop - task.start) * task.spec.clusters * (
        policy.domain.cluster_sizes[task.spec.size].mean() + 2.0 * len(task.methods))


def _batches(policy: QualificationPolicy, tasks: list[Task], n_batches: int) -> list[list[tuple[int, Task]]]:
    """Split into batches of roughly equal estimated cost (largest first, greedy)."""
    n_batches = max(1, min(n_batches, len(tasks)))
    order = sorted(range(len(tasks)), key=lambda i: -_cost(policy, tasks[i]))
    loads = [0.0] * n_batches
    out: list[list[tuple[int, Task]]] = [[] for _ in range(n_batches)]
    for i in order:
        j = int(np.argmin(loads))
        out[j].append((i, tasks[i]))
        loads[j] += _cost(policy, tasks[i])
    return [b for b in out if b]


class Pool:
    """Runs tasks through an executor (``studies.executor``: serial, joblib processes or
    dask), in cost-balanced batches; results come back in task order and depend only on
    each task's own replication range (any backend and worker count, same answer)."""

    def __init__(self, executor):
        self.executor = executor

    def run(self, policy, tasks: list[Task], estimands: tuple[str, ...],
            tick: Callable[[int, int], None] | None = None) -> list[dict[tuple, tuple[int, int]]]:
        results: list = [None] * len(tasks)
        done = 0
        if self.executor.workers == 1 or len(tasks) < 4:
            batches = [[(i, t)] for i, t in enumerate(tasks)]
        else:
            batches = _batches(policy, tasks, max(self.executor.workers * 16, len(tasks) // 32))
        for _, part in self.executor.imap(_run_batch, [(policy, b, estimands) for b in batches]):
            for i, r in part:
                results[i] = r
            done += len(part)
            if tick:
                tick(done, len(tasks))
        return results


class Book:
    """Counts per (method, scenario point) and the cells each method has already failed.
    ``one_verdict``: the whole domain is one question (a certificate): once any scenario
    exceeds, nothing more is escalated or refined for that method."""

    def __init__(self, methods: list, policy: QualificationPolicy, one_verdict: bool = False):
        self.methods = {method_key(m): m for m in methods}
        self.policy = policy
        self.one_verdict = one_verdict
        self.rows: dict[tuple, dict[tuple, tuple[Spec, Counts]]] = {k: {} for k in self.methods}
        self.rejected: dict[tuple, set] = {k: set() for k in self.methods}
        self.replications = 0   # simulated experiments (shared by the methods of a task)
        self.method_replications = 0

    def verdict(self, c: Counts) -> str:
        p = self.policy
        c_s = p.stage_confidence
        return verdict_of(cp_lower(c.n_pass, c.n_reps, c_s), cp_upper(c.n_pass, c.n_reps, c_s),
                          p.threshold)

    def needs(self, key: tuple, spec: Spec) -> bool:
        row = self.rows[key].get(spec.point)
        if row is None or row[1].n_reps == 0:
            return True
        if spec.cell in self.rejected[key] or (self.one_verdict and self.rejected[key]):
            return False
        return self.verdict(row[1]) == UNDETERMINED and row[1].n_reps < self.policy.max_replications

    def escalate(self, items: list[tuple[Spec, list[tuple]]], pool: Pool, estimands: tuple[str, ...],
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

            for task, res in zip(tasks, pool.run(self.policy, tasks, estimands, tick)):
                self.replications += task.stop - task.start
                for k, (x, inc) in res.items():
                    c = self.rows[k][task.spec.point][1]
                    if c.n_reps != task.start:
                        raise RuntimeError("replication ranges out of step")  # internal invariant
                    c.n_reps, c.n_pass, c.n_inconclusive = task.stop, c.n_pass + x, c.n_inconclusive + inc
                    self.method_replications += task.stop - task.start
                    if self.verdict(c) == EXCEEDS:
                        self.rejected[k].add(task.spec.cell)


# ---------------------------------------------------------------- refinement


@dataclass
class LineSearch:
    """Golden-section search for the maximum of the false-pass rate along one axis of one
    (method, cell): ``x`` is baseline (axis 0) or discordance (axis 1)."""
    method: tuple
    cell: tuple
    axis: int
    lo: float
    hi: float
    fixed: float              # discordance held (axis 0) or baseline held (axis 1)
    budget: int
    points: dict[float, float] = field(default_factory=dict)
    min_step: float = 1e-4

    def spec(self, x: float, policy: QualificationPolicy) -> Spec | None:
        k, s, r, m, n = self.cell
        if self.axis == 0:
            d = policy.domain.discordance
            q = clip_discordance(self.fixed, x, m, d.lo, d.hi)
            if q is None:  # no feasible discordance at this baseline
                return None
            return Spec(k, s, r, m, n, round(x, 12), round(q, 12), "refine")
        return Spec(k, s, r, m, n, round(self.fixed, 12), round(x, 12), "refine")

    def propose(self) -> float | None:
        if self.budget <= 0 or not self.points or max(self.points.values()) <= 0.0:
            return None
        best = max(sorted(self.points), key=lambda x: self.points[x])
        xs = sorted(set(self.points) | {self.lo, self.hi})
        j = xs.index(best)
        left = best - xs[j - 1] if j > 0 else 0.0
        right = xs[j + 1] - best if j + 1 < len(xs) else 0.0
        if max(left, right) < self.min_step:
            return None
        x = best + GOLDEN * right if right >= left else best - GOLDEN * left
        return round(x, 12)


def _neighbours(grid: list[float], x: float, lo: float, hi: float) -> tuple[float, float]:
    below = [g for g in grid if g < x - 1e-12]
    above = [g for g in grid if g > x + 1e-12]
    return (max(below) if below else lo, min(above) if above else hi)


def _searches(book: Book, axis: int) -> list[LineSearch]:
    policy = book.policy
    dom, thr, mcc = policy.domain, policy.threshold, policy.stage_confidence
    out = []
    for key, rows in book.rows.items():
        cells: dict[tuple, list[tuple[Spec, Counts]]] = {}
        for spec, c in rows.values():
            cells.setdefault(spec.cell, []).append((spec, c))
        for cell, members in cells.items():
            if cell in book.rejected[key] or (book.one_verdict and book.rejected[key]):
                continue
            worst_spec, worst_c = max(members, key=lambda sc: (cp_upper(sc[1].n_pass, sc[1].n_reps, mcc), sc[1].rate))
            if worst_c.n_pass == 0 or cp_upper(worst_c.n_pass, worst_c.n_reps, mcc) < policy.refine_fraction * thr:
                continue
            margin = cell[3]
            if axis == 0:
                lo, hi = _neighbours(list(dom.baseline.grid), worst_spec.baseline, dom.baseline.lo, dom.baseline.hi)
                ls = LineSearch(key, cell, 0, lo, hi, worst_spec.discordance, policy.refine_evaluations)
                for spec, c in members:
                    q = clip_discordance(worst_spec.discordance, spec.baseline, margin, dom.discordance.lo,
                                         dom.discordance.hi)
                    if lo - 1e-12 <= spec.baseline <= hi + 1e-12 and q is not None \
                            and abs(q - spec.discordance) <= 1e-9:
                        ls.points[round(spec.baseline, 12)] = c.rate
            else:
                b = worst_spec.baseline
                lim = discordance_limits(b, margin, dom.discordance.lo, dom.discordance.hi)
                if lim is None or lim[1] - lim[0] < 1e-9:
                    continue
                grid_q = sorted({clip_discordance(q, b, margin, dom.discordance.lo, dom.discordance.hi)
                                 for q in dom.discordance.grid})
                lo, hi = _neighbours(grid_q, worst_spec.discordance, lim[0], lim[1])
                ls = LineSearch(key, cell, 1, lo, hi, b, policy.refine_evaluations)
                for spec, c in members:
                    if abs(spec.baseline - b) <= 1e-12 and lo - 1e-12 <= spec.discordance <= hi + 1e-12:
                        ls.points[round(spec.discordance, 12)] = c.rate
            out.append(ls)
    return out


def refine(book: Book, pool: Pool, estimands: tuple[str, ...], progress: Callable[[str], None] | None = None) -> int:
    """Golden-section refinement around each refinable cell's worst scenario: baseline
    first, then discordance.  Returns the number of new scenarios evaluated."""
    policy = book.policy
    new_points: set[tuple] = set()
    for axis in (0, 1):
        searches = _searches(book, axis)
        step = 0
        while True:
            proposals: dict[tuple, tuple[Spec, list[tuple]]] = {}
            owners: list[tuple[LineSearch, float, Spec]] = []
            for ls in searches:
                while True:  # skip points that are infeasible or already evaluated
                    x = ls.propose()
                    if x is None:
                        break
                    spec = ls.spec(x, policy)
                    ls.budget -= 1
                    if spec is None:
                        ls.points[x] = 0.0
                        continue
                    row = book.rows[ls.method].get(spec.point)
                    if row is not None:
                        ls.points[x] = row[1].rate
                        continue
                    _, keys = proposals.setdefault(spec.point, (spec, []))
                    if ls.method not in keys:
                        keys.append(ls.method)
                    owners.append((ls, x, spec))
                    break
            if not proposals:
                break
            step += 1
            book.escalate(list(proposals.values()), pool, estimands, progress,
                          f"refine {'baseline' if axis == 0 else 'discordance'} step {step}, ")
            new_points.update(proposals)
            for ls, x, spec in owners:
                ls.points[x] = book.rows[ls.method][spec.point][1].rate
    return len(new_points)


# ---------------------------------------------------------------- provenance and output


def software_info() -> dict[str, str]:
    """What the qualification record stores of the software (``studies.datasets``)."""
    from .datasets import code_revision, package_versions

    v = package_versions()
    info = {k: v[k] for k in ("python", "numpy", "numba", "scipy", "xarray")}
    info["generator_version"] = GENERATOR_VERSION
    rev = code_revision()
    if rev != "unknown":
        info["code_revision"] = rev
    return info


def scenario_table(policy: QualificationPolicy, rows: list[tuple[Spec, Counts]]) -> ScenarioTable:
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


def method_estimand(method, policy: QualificationPolicy) -> str:
    return method.estimand.value if policy.estimand == "method" else policy.estimand


def qualify(methods: list, policy: QualificationPolicy, *, n_jobs: int = 1, out_dir: str | Path | None = "default",
            progress: Callable[[str], None] | None = None, one_verdict: bool = False, executor=None) -> QualifyRun:
    """Qualify ``methods`` under ``policy`` (all on the same simulated tables; sequential
    methods need a policy with ``domain.looks``: promotion counts as a pass, the overall
    one-sided level is ``policy.alpha``);
    writes ``<name>.<policy hash>.nc`` and ``.json`` per method into ``out_dir`` (None: keep
    the records in memory; their dataset reference is then empty).  ``n_jobs`` local
    processes, or ``executor`` (``studies.executor``; e.g. a dask cluster): the records
    are the same for every backend."""
    from .executor import as_executor

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
    t0 = time.perf_counter()
    estimands = tuple(sorted({method_estimand(m, policy) for m in methods}))
    dom = policy.domain
    specs = [Spec(k, s, r, m, n, b, q) for (k, s, r, m, n) in dom.cells() for (b, q) in nuisance_grid(dom, m)]
    for spec in specs[:1]:
        for e in estimands:
            scenario_of(policy, spec, e)  # fail fast on an estimand mismatch
    if out_dir is not None:
        check_output_dir(out_dir)
    ex, owned = as_executor(executor, n_jobs)
    if progress:
        progress(f"grid: {len(specs)} scenarios x {len(methods)} method(s) on {ex.describe()}")
    book = Book(methods, policy, one_verdict)
    with contextlib.ExitStack() as stack:
        if owned:
            stack.enter_context(ex)
        pool = Pool(ex)
        book.escalate([(s, list(keys)) for s in specs], pool, estimands, progress, "grid ")
        n_refine = refine(book, pool, estimands, progress)
    software = software_info()
    outcomes = []
    for key, m in zip(keys, methods):
        rows = sorted(book.rows[key].values(), key=lambda sc: (sc[0].stage != "grid",) + sc[0].point)
        scen = scenario_table(policy, rows)
        ds_path = rec_path = None
        sha, fname = "", ""
        if out_dir is not None:
            out = Path(out_dir)
            out.mkdir(parents=True, exist_ok=True)
            stem = record_stem(getattr(m, "label", m.name), policy)
            ds_path, rec_path = out / f"{stem}.nc", out / f"{stem}.json"
            ds = build_dataset(policy, m.identity.as_dict(), scen, software)
            ds.attrs.update(make_attrs("qualification", title=ds.attrs["title"],
                                       spec_json=json.dumps(policy.canonical()), spec_hash=policy.sha256,
                                       methods=[method_identity(m, getattr(m, "label", m.name))],
                                       seed=policy.seed))
            save_dataset(describe(ds), ds_path, compress=True)
            sha, fname = file_sha256(ds_path), ds_path.name
        record = build_record(m.identity.as_dict(), m.kind, method_estimand(m, policy),
                              policy, scen, fname, sha, software, method_key=key)
        if rec_path is not None:
            save_json(record.to_json(), rec_path)
        outcomes.append(QualifyOutcome(record, rec_path, ds_path))
    return QualifyRun(outcomes, len(specs), n_refine, book.replications, book.method_replications,
                      time.perf_counter() - t0)


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


__all__ = ["Spec", "Counts", "Task", "Book", "Pool", "qualify", "run_task", "refine", "summary_payload",
           "QualifyRun", "QualifyOutcome", "QUALIFIED", "EXCEEDS", "UNDETERMINED"]
