"""Wall-time estimates for long work, made before it starts (so a run that would take a day
is refused in a second, not killed after an hour).

The estimate times a short *pilot* of the real work -- the same methods, margins and
levels, through the same engine -- at the cheapest and the costliest scenario of the
grid, each at two replication counts ``R`` and ``4R``.  The pair gives a per-scenario
overhead ``a`` and a per-replication cost ``b`` (``t(R) = a + b R``).  Between the two
scenarios ``b`` is interpolated linearly in the number of pairs ``K x M``: exact for the
linear-cost kernels (every closed-form method and the samplers), an *over*-estimate for
the superlinear ones (bootstraps at fixed B are linear too; ``bayes_hierarchical`` grows
about as ``K^2.7``, so the chord lies above the curve).  The total divides by the
executor's workers.  Kernels are compiled (or loaded from numba's cache) by a one-
replication warm-up outside the timing.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Collection, Sequence

PILOT_MIN_SECONDS = 0.02   # the replications' part of a timing must be at least this long (timer noise)
PILOT_MAX_REPLICATIONS = 1 << 16  # R's cap (the pilot then runs 4R)
PILOT_SLOW_SECONDS = 1.0   # one replication this slow is timed alone: the pilot never runs for minutes
PILOT_BUDGET_SECONDS = 2.0  # no pilot timing longer than this is started (trial_bootstrap at 100 x 1500 took 15 s)


@dataclass(frozen=True)
class CostModel:
    """``seconds(pairs, reps) = overhead + per_rep(pairs) * reps`` for one scenario."""
    pairs: tuple[float, float]        # K x M of the cheapest and the costliest piloted scenario
    per_rep: tuple[float, float]      # seconds per replication at those two
    overhead: float                   # seconds per scenario (or task), whatever its size

    def per_rep_at(self, pairs: float) -> float:
        (p0, p1), (b0, b1) = self.pairs, self.per_rep
        return max(b1 if p1 <= p0 else b0 + (b1 - b0) * (pairs - p0) / (p1 - p0), 0.0)

    def seconds(self, pairs: float, reps: int, calls: int = 1) -> float:
        """``reps`` replications of a scenario of ``pairs`` pairs, run as ``calls`` tasks."""
        return calls * self.overhead + self.per_rep_at(pairs) * reps


@dataclass(frozen=True)
class TimeEstimate:
    """Estimated wall seconds: ``low`` is what the work certainly costs (e.g. a
    qualification's first round), ``high`` what it costs if every adaptive step is taken."""
    low: float
    high: float
    workers: int

    def describe(self) -> str:
        low, high = _duration(self.low), _duration(self.high)
        if high == "under 1 s":
            return high
        if low == high or math.isclose(self.low, self.high, rel_tol=0.05):
            return f"about {low}"
        return f"{low} to {high}"


def _duration(s: float) -> str:
    if s < 1:
        return "under 1 s"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _timed(run: Callable[[int], object], reps: int) -> float:
    t0 = time.perf_counter()
    run(reps)
    return time.perf_counter() - t0


def _pilot(run: Callable[[int], object]) -> tuple[float, float]:
    """``(a, b)`` of ``t(R) = a + b R`` for ``run(R)``, replications 0..R-1, from timings at two
    replication counts.  R grows (x4) until the extra replications of the larger count cost at
    least the smaller count's time (and ``PILOT_MIN_SECONDS``): only then is ``b`` measured
    rather than the noise of a large per-call overhead ``a`` (a scenario's set-up can cost
    0.1 s, the replications 1 us each).  The pilot stays short: it never starts a timing that
    would take over ``PILOT_BUDGET_SECONDS`` (going from R to 4R), and one replication slower
    than ``PILOT_SLOW_SECONDS`` is timed alone (all of it then counts per replication).  Where
    the budget stops it, ``b`` keeps its floor of a quarter of the larger timing's mean, an
    over-estimate only for a scenario whose set-up outweighs its replications."""
    run(1)  # compile or load the kernels outside the timing
    one = _timed(run, 1)
    if one >= PILOT_SLOW_SECONDS:
        return 0.0, one
    r0, t0 = 1, one
    r1 = 4 if 4 * one <= PILOT_BUDGET_SECONDS else 2
    t1 = _timed(run, r1)
    while (t1 - t0 < max(PILOT_MIN_SECONDS, t0) and r0 < PILOT_MAX_REPLICATIONS
           and 4 * t1 <= PILOT_BUDGET_SECONDS):
        r0, t0 = r1, t1
        r1 = 4 * r1
        t1 = _timed(run, r1)
    b = max((t1 - t0) / (r1 - r0), t1 / r1 / 4, 0.0)  # noise guard: never below a quarter of the mean
    return max(t0 - b * r0, 0.0), b


def fit(cheap: Callable[[int], object], cheap_pairs: float, costly: Callable[[int], object],
        costly_pairs: float) -> CostModel:
    """Pilot ``cheap`` and ``costly`` (each ``run(R)``; the same callable when the grid has
    one size) and return the interpolating cost model."""
    a1, b1 = _pilot(costly)
    if costly is cheap or costly_pairs <= cheap_pairs:
        return CostModel((costly_pairs, costly_pairs), (b1, b1), a1)
    a0, b0 = _pilot(cheap)
    return CostModel((cheap_pairs, costly_pairs), (b0, b1), max(a0, a1))


def study_estimate(spec, workers: int, chunk_size: int) -> TimeEstimate:
    """Wall seconds of ``runner.run_study(spec)`` on ``workers`` workers (on the device
    ``studies.engine.device`` selects, like the run itself)."""
    from studies.engine.runner import evaluate_scenario

    points = [sc for _, sc in spec.points()]
    pairs = [sc.clusters * sc.cluster_size.mean() for sc in points]
    lo, hi = points[pairs.index(min(pairs))], points[pairs.index(max(pairs))]

    def runner(sc) -> Callable[[int], object]:
        return lambda r: evaluate_scenario(sc, spec.methods, spec.margins, spec.alphas, replications=r,
                                           seed=spec.seed, sampler=spec.sampler)

    model = fit(runner(lo), min(pairs), runner(hi), max(pairs))
    n = spec.n_replications
    chunks = math.ceil(n / chunk_size)
    wall = sum(model.seconds(p, n, chunks) for p in pairs) / max(workers, 1)
    return TimeEstimate(wall, wall, workers)


def scenario_estimate(scenario, methods: Sequence, margins: Sequence[float], alphas: Sequence[float],
                      replications: int, seed: int, sampler: str = "auto") -> TimeEstimate:
    """Wall seconds of ``runner.evaluate_scenario`` over ``replications`` of one scenario in
    this process (``simlab false-pass``)."""
    from studies.engine.runner import evaluate_scenario

    a, b = _pilot(lambda r: evaluate_scenario(scenario, methods, margins, alphas, replications=r, seed=seed,
                                              sampler=sampler))
    wall = a + b * replications
    return TimeEstimate(wall, wall, 1)


def sequential_study_estimate(spec, workers: int) -> TimeEstimate:
    """Wall seconds of ``sequential.run_sequential_study(spec)`` on ``workers`` workers (the
    simulation; ``exact_sequential_seconds`` models the exact engines on top)."""
    from studies.engine.sequential import sequential_task

    points = [sc for _, sc in spec.points()]
    pairs = [sc.clusters * sc.cluster_size.mean() for sc in points]
    lo, hi = points[pairs.index(min(pairs))], points[pairs.index(max(pairs))]

    def runner(sc) -> Callable[[int], object]:
        return lambda r: sequential_task(sc, spec.methods, spec.schedule, spec.margins, spec.alpha, spec.seed,
                                          spec.sampler, 0, r)

    model = fit(runner(lo), min(pairs), runner(hi), max(pairs))
    n = spec.replications
    chunks = math.ceil(n / spec.chunk_size)
    wall = sum(model.seconds(p, n, chunks) for p in pairs) / max(workers, 1)
    return TimeEstimate(wall, wall, workers)


def qualify_estimate(methods: Sequence, policy, workers: int, finished: Collection[tuple] = ()) -> TimeEstimate:
    """Wall seconds of ``qualify.qualify(methods, policy)``: ``low`` the first round over
    every grid scenario (always run), ``high`` every scenario escalated to the policy's
    largest replication count (refinement scenarios not counted: each adds at most one
    scenario's cost per line searched).  ``finished``: ``(point, start, stop)`` of the tasks
    a checkpoint already holds (``qualify_checkpoint.finished_ranges``), which a resumed run
    reads back and so are not counted.  The pilot runs the per-scenario engine, whose
    per-scenario overhead the batched default shares across K: for closed-form methods,
    where that overhead dominates, the estimate is high; for costly kernels it is close.
    Methods whose estimands have different null boundaries run on separate grids, so
    their estimates add."""
    from simlab.estimands import is_difference
    from studies.qualify.run import method_estimand

    groups: dict[bool, list] = {}
    for m in methods:
        groups.setdefault(is_difference(method_estimand(m, policy)), []).append(m)
    low = high = 0.0
    finished = set(finished)
    for group in groups.values():
        lo, hi = _qualify_seconds(group, policy, finished)
        low, high = low + lo, high + hi
    return TimeEstimate(low / max(workers, 1), high / max(workers, 1), workers)


def _qualify_seconds(methods: Sequence, policy, finished: set) -> tuple[float, float]:
    from studies.qualify.run import method_estimand
    from studies.qualify.scenarios import Task, grid_specs, method_key
    from studies.qualify.tasks import run_task

    keys = tuple(method_key(m) for m in methods)
    estimands = tuple(sorted({method_estimand(m, policy) for m in methods}))
    specs = grid_specs(policy, estimands[0])
    pairs = [s.clusters * policy.domain.cluster_sizes[s.size].mean() for s in specs]
    # the pilot's costliest scenario has the largest K x M and, among those, the largest
    # discordance: methods whose cost grows with the counts (bayes_hierarchical: tenfold from
    # discordance 0.01 to 0.5 at 500 x 10) are then over- rather than under-estimated
    order = range(len(specs))
    lo = specs[min(order, key=lambda i: (pairs[i], specs[i].discordance))]
    hi = specs[max(order, key=lambda i: (pairs[i], specs[i].discordance))]

    def runner(spec) -> Callable[[int], object]:
        return lambda r: run_task(policy, Task(spec, keys, 0, r), estimands)

    model = fit(runner(lo), min(pairs), runner(hi), max(pairs))
    schedule = policy.replication_schedule()
    stages = list(zip([0] + schedule[:-1], schedule))   # a scenario's tasks, round by round
    low = high = 0.0
    for spec, p in zip(specs, pairs):
        for r, (start, stop) in enumerate(stages):
            if (spec.point, start, stop) not in finished:
                cost = model.seconds(p, stop - start)
                high += cost
                low += cost if r == 0 else 0.0
    return low, high


# ---------------------------------------------------------------- memory
# Memory model of studies.engine.runner.run_study (bytes), from its data structures: every grid
# point is a (coords, PairedScenario) pair built up front (2.9 KiB each, measured with
# tracemalloc on a 10^4-point 3-field grid); each task keeps an int64 tally [methods, margins,
# alphas, NF] plus its dict entry; the dataset holds 53 variables, 417 B per (point,
# method, margin, alpha) measured, built and then serialised (x3); each worker holds one
# chunk of int32 tables [chunk, K, 4].
POINT_BYTES = 4 * 1024
TASK_OVERHEAD_BYTES = 400
DATASET_BYTES_PER_CELL = 420 * 3


def _largest_clusters(spec) -> int:
    return max([int(k) for k in spec.grid.get("clusters", [])] or [int(spec.scenario.clusters or 1)])


def study_memory(spec, chunk: int, workers: int) -> float:
    """Peak bytes of ``run_study(spec)`` with ``chunk`` replications per task on ``workers``."""
    from studies.engine.tally import NF

    points = math.prod(spec.shape) if spec.shape else 1
    cells = len(spec.methods) * len(spec.margins) * len(spec.alphas)
    n = spec.n_replications
    tasks = points * math.ceil(n / chunk)
    per_chunk_tables = min(chunk, n) * _largest_clusters(spec) * 4 * 4
    return (points * POINT_BYTES + tasks * (cells * NF * 8 + TASK_OVERHEAD_BYTES)
            + points * cells * DATASET_BYTES_PER_CELL + max(workers, 1) * per_chunk_tables)


def sequential_study_memory(spec, workers: int) -> float:
    """Peak bytes of ``run_sequential_study(spec)``: the grid points and each worker's tables
    (int32 plus the per-look arrays, 32 B per cluster row)."""
    points = math.prod(spec.shape) if spec.shape else 1
    return points * POINT_BYTES + max(workers, 1) * min(spec.replications, spec.chunk_size) * _largest_clusters(spec) * 32


# ---------------------------------------------------------------- exact sequential enumeration
CHUNK_TABLE_BYTES = 64 << 20  # studies.exact.sequential evaluates states in 64 MB chunks of tables
# Each state at look j is decided on a representative table of n_j cluster rows: measured
# 22 ns per cluster row per method (binomial, looks 5000 vs 20000, repeated_fixed +
# likelihood_ratio).  Check: trinomial, one look at 800, bonferroni: 6.1 s and 71 MB peak RSS
# measured against 6.4 s and 82 MB modelled.
SECONDS_PER_STATE_ROW = 2.5e-8


def exact_sequential_memory(looks: tuple[int, ...], trinomial: bool) -> float:
    """Peak bytes of the exact path enumeration (simlab.exact.sequential): per look a status
    region over every state (n+1 binomial, (n+1)^2 trinomial, int8, kept, plus int64 state
    indices while it is built), and the forward probabilities (float64) over the last look's states."""
    last = looks[-1] + 1
    if trinomial:
        return 2.0 * sum((n + 1) ** 2 for n in looks) + 12.0 * last * (last + 1) + 16.0 * last ** 2 + CHUNK_TABLE_BYTES
    return 2.0 * sum(n + 1 for n in looks) + 24.0 * last + 16.0 * last + CHUNK_TABLE_BYTES


def exact_sequential_seconds(looks: tuple[int, ...], trinomial: bool, n_methods: int, n_laws: int) -> float:
    """Time of the enumeration: every state of every look decided on an n-row table."""
    rows = sum(((n + 1) * (n + 2) / 2 if trinomial else n + 1) * n for n in looks)
    return SECONDS_PER_STATE_ROW * rows * n_methods * n_laws
