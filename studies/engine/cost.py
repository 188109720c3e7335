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

Every pilot is bounded, whatever the design (K up to 10^6 clusters of M up to 10^5 trials:
10^11 pairs a replication, which no pilot can draw).  A scenario of at most
``PILOT_DIRECT_PAIRS`` pairs (every ordinary design) is piloted as it is.  A larger one is
piloted on copies scaled down (``shrink_scenario``: fewer clusters, ``K' = cap // M``; fewer
trials per cluster only where M alone exceeds the cap -- the trial sampler draws one
uniform per trial pair, linear in M, and the composition sampler, constant in M, applies
only to clusters of a few dozen trials, which are never cut) from ``PILOT_FIRST_PAIRS`` up,
four times the pairs a step, to at most ``PILOT_MAX_PAIRS``, while the next step's one
replication is predicted under ``PILOT_STEP_SECONDS`` (a scenario's set-up can cost 65 us a
pair: the composition laws of 20000 clusters of 50 trials took 40 s).  The cost model then
extrapolates above the largest piloted size along the chord of the two largest steps, as it
interpolates below (``_scaled_pilot``: per replication linearly, or as the power of the pairs
measured where the cost grew clearly faster than linearly -- bayes_hierarchical's posterior
grid grows with the square of the pooled counts; the overhead only where it grew with the
size).  A kernel whose growth only shows above the largest step is under-estimated
(bayes_hierarchical at 5000 x 10: its exponent rises from 1.3 between 312 and 1250 clusters
to 2 between 1250 and 5000; estimated 1 s a replication, measured 3.3 s).
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
PILOT_DIRECT_PAIRS = 20_000  # a scenario of at most this many trial pairs (K x M) is piloted as it is
PILOT_FIRST_PAIRS = 1_000    # a larger one on scaled-down copies: the first of about this many pairs,
PILOT_MAX_PAIRS = 1_000_000  # the last of at most this many (x4 a step; one replication of 10^6 pairs: ~10 ms drawn)
PILOT_STEP_SECONDS = 0.25    # a step is taken only when its one replication is predicted under this
PILOT_SCALED_MIN_SECONDS = 0.1  # a pilot scaled up (x10^5 at 10^11 pairs) times its replications for longer
SUPERLINEAR_EXPONENT = 1.15  # growth between the two largest steps below pairs^1.15 is taken as linear (timer noise)
MAX_EXPONENT = 3.0


@dataclass(frozen=True)
class CostModel:
    """``seconds(pairs, reps) = overhead + per_rep(pairs) * reps`` for one scenario: linear in
    pairs between the two piloted sizes; above the largest (a scaled-down pilot) the
    per-replication cost grows along ``slope`` (or as ``pairs ** exponent``) and the overhead
    along ``overhead_slope`` -- each, where not given, in proportion to the pairs."""
    pairs: tuple[float, float]        # K x M of the cheapest and the costliest piloted scenario
    per_rep: tuple[float, float]      # seconds per replication at those two
    overhead: float                   # seconds per scenario (or task), whatever its size up to pairs[1]
    exponent: float = 1.0             # growth of the per-replication cost above pairs[1] (1: along slope)
    slope: float | None = None        # per-replication seconds a pair above pairs[1]
    overhead_slope: float | None = None  # overhead seconds a pair above pairs[1]

    def _extra(self, pairs: float) -> float:
        """Pairs above the largest piloted size (0 at or below it)."""
        return max(pairs - self.pairs[1], 0.0) if self.pairs[1] > 0 else 0.0

    def per_rep_at(self, pairs: float) -> float:
        (p0, p1), (b0, b1) = self.pairs, self.per_rep
        if self._extra(pairs) > 0:
            if self.exponent > 1.0:
                return max(b1, 0.0) * (pairs / p1) ** self.exponent
            return max(b1, 0.0) + (b1 / p1 if self.slope is None else self.slope) * self._extra(pairs)
        return max(b1 if p1 <= p0 else b0 + (b1 - b0) * (pairs - p0) / (p1 - p0), 0.0)

    def overhead_at(self, pairs: float) -> float:
        if self._extra(pairs) == 0:
            return self.overhead
        slope = self.overhead / self.pairs[1] if self.overhead_slope is None else self.overhead_slope
        return self.overhead + slope * self._extra(pairs)

    def seconds(self, pairs: float, reps: int, calls: int = 1) -> float:
        """``reps`` replications of a scenario of ``pairs`` pairs, run as ``calls`` tasks."""
        return calls * self.overhead_at(pairs) + self.per_rep_at(pairs) * reps


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


def _pilot(run: Callable[[int], object], one: float | None = None) -> tuple[float, float]:
    a, b, _ = _pilot_measured(run, one)
    return a, b


def _pilot_measured(run: Callable[[int], object], one: float | None = None,
                    min_seconds: float = PILOT_MIN_SECONDS) -> tuple[float, float, bool]:
    """``(a, b)`` of ``t(R) = a + b R`` for ``run(R)``, replications 0..R-1, from timings at two
    replication counts.  R grows (x4) until the extra replications of the larger count cost at
    least the smaller count's time (and ``PILOT_MIN_SECONDS``): only then is ``b`` measured
    rather than the noise of a large per-call overhead ``a`` (a scenario's set-up can cost
    0.1 s, the replications 1 us each).  The pilot stays short: it never starts a timing that
    would take over ``PILOT_BUDGET_SECONDS`` (going from R to 4R), and one replication slower
    than ``PILOT_SLOW_SECONDS`` is timed alone (all of it then counts per replication).  Where
    the budget stops it, ``b`` keeps its floor of a quarter of the larger timing's mean, an
    over-estimate only for a scenario whose set-up outweighs its replications.  ``one``: one
    replication's time, already measured with the kernels loaded (no warm-up then);
    ``min_seconds``: the least time of the replications' part (``PILOT_MIN_SECONDS``).  The
    third value: whether ``b`` was measured (the replications outweighed the noise), not a floor."""
    if one is None:
        run(1)  # compile or load the kernels outside the timing
        one = _timed(run, 1)
    if one >= PILOT_SLOW_SECONDS:
        return 0.0, one, False
    r0, t0 = 1, one
    r1 = 4 if 4 * one <= PILOT_BUDGET_SECONDS else 2
    t1 = _timed(run, r1)
    while (t1 - t0 < max(min_seconds, t0) and r0 < PILOT_MAX_REPLICATIONS
           and 4 * t1 <= PILOT_BUDGET_SECONDS):
        r0, t0 = r1, t1
        r1 = 4 * r1
        t1 = _timed(run, r1)
    slope, floor = (t1 - t0) / (r1 - r0), t1 / r1 / 4   # noise guard: b never below a quarter of the mean
    b = max(slope, floor, 0.0)
    return max(t0 - b * r0, 0.0), b, t1 - t0 >= max(min_seconds, t0) and slope >= floor


@dataclass(frozen=True)
class PilotFit:
    """One piloted scenario: ``overhead + per_rep * R`` seconds at ``pairs`` pairs (the size
    piloted, below the scenario's own where it was scaled down), and how the costs grow above
    it (``CostModel``'s ``exponent``, ``slope``, ``overhead_slope``)."""
    overhead: float
    per_rep: float
    pairs: float
    exponent: float = 1.0
    slope: float | None = None
    overhead_slope: float | None = None


def _exponent(t0: float, p0: float, t1: float, p1: float) -> float:
    """Growth exponent of a cost from ``t0`` at ``p0`` pairs to ``t1`` at ``p1``, in [1, MAX_EXPONENT]."""
    if t0 <= 0 or t1 <= 0 or p1 <= p0:
        return 1.0
    return min(max(math.log(t1 / t0) / math.log(p1 / p0), 1.0), MAX_EXPONENT)


def pilot_steps(pairs: float) -> list[float]:
    """The sizes (pairs) a scenario of ``pairs`` pairs over ``PILOT_DIRECT_PAIRS`` may be
    piloted at, ascending by x4 from about ``PILOT_FIRST_PAIRS`` to ``min(pairs, PILOT_MAX_PAIRS)``."""
    steps = [float(min(pairs, PILOT_MAX_PAIRS))]
    while steps[0] / 4 >= PILOT_FIRST_PAIRS:
        steps.insert(0, steps[0] / 4)
    return steps


def _scaled_pilot(make: Callable[[float], tuple[Callable[[int], object], float]], pairs: float) -> PilotFit:
    """Pilot the work of ``pairs`` pairs on scaled-down copies: ``make(p)`` returns ``(run,
    actual pairs)`` of the work cut to about ``p`` pairs.  One replication is timed at each of
    ``pilot_steps(pairs)`` in turn (the kernels loaded at the first, outside the timing) until
    the next is predicted over ``PILOT_STEP_SECONDS`` (growth as measured, at least linear);
    the largest reached is piloted (``_pilot``), and where it is below ``pairs`` so is the one
    before it: the model extrapolates along the chord of the two (as it interpolates below).
    Per replication: where both were measured (not ``_pilot``'s floor: a set-up of 0.5 s
    floors ``b`` at ~1/64 of it, which against a measured ``b`` reads as growth to the 2.5th
    power), its slope, between a quarter of and the whole of the largest step's cost per pair
    (a fixed cost a replication does not grow: the sequential engine's 3 ms at 10^6 pairs
    scaled in proportion put 10^11 pairs at 1.5 times their 360 s), or the power
    ``(pairs / piloted) ** e`` where it grew clearly faster (``SUPERLINEAR_EXPONENT``, at most
    ``MAX_EXPONENT``) and the steps stopped for time, not at ``PILOT_MAX_PAIRS``; otherwise in
    proportion.  The overhead grows only where it grew clearly (at least doubled, by over
    ``PILOT_MIN_SECONDS``: per-cluster set-up such as the composition laws), at most in
    proportion; a fixed overhead of a few ms scaled x10^5 was 500 s."""
    made: dict[int, tuple[Callable[[int], object], float]] = {}

    def step(i: int) -> tuple[Callable[[int], object], float]:
        if i not in made:
            made[i] = make(targets[i])
        return made[i]

    targets = pilot_steps(pairs)
    step(0)[0](1)  # compile or load the kernels outside the timing
    times = [_timed(step(0)[0], 1)]
    while len(times) < len(targets):
        i = len(times) - 1
        e = _exponent(times[i - 1], step(i - 1)[1], times[i], step(i)[1]) if i else 1.0
        if times[i] * (targets[i + 1] / targets[i]) ** e > PILOT_STEP_SECONDS:
            break
        times.append(_timed(step(i + 1)[0], 1))
    i = len(times) - 1
    run, done = step(i)
    if done >= pairs:
        return PilotFit(*_pilot(run, one=times[i]), done)
    # scaled up by pairs / done: its replications are timed for longer (PILOT_SCALED_MIN_SECONDS)
    a, b, measured = _pilot_measured(run, one=times[i], min_seconds=PILOT_SCALED_MIN_SECONDS)
    if i == 0:
        return PilotFit(a, b, done)
    below = step(i - 1)[1]
    a0, b0, measured0 = _pilot_measured(step(i - 1)[0], one=times[i - 1], min_seconds=PILOT_SCALED_MIN_SECONDS)
    if not (measured and measured0) or done <= below:
        return PilotFit(a, b, done)
    # a power only where the steps stopped for time: a kernel cheap at PILOT_MAX_PAIRS (10^6
    # pairs drawn in ~5 ms) read 1.17-1.18 from timer noise, x7 at 10^11 pairs
    e = _exponent(b0, below, b, done) if len(times) < len(targets) else 1.0
    slope = min(max((b - b0) / (done - below), b / done / 4), b / done)
    grew = a - a0 >= max(PILOT_MIN_SECONDS, a0)
    overhead_slope = min((a - a0) / (done - below), a / done) if grew else 0.0
    return PilotFit(a, b, done, e if e >= SUPERLINEAR_EXPONENT else 1.0, slope, overhead_slope)


def _model(cheap: PilotFit | None, costly: PilotFit) -> CostModel:
    growth = (costly.exponent, costly.slope, costly.overhead_slope)
    if cheap is None:
        return CostModel((costly.pairs, costly.pairs), (costly.per_rep, costly.per_rep), costly.overhead, *growth)
    return CostModel((cheap.pairs, costly.pairs), (cheap.per_rep, costly.per_rep),
                     max(cheap.overhead, costly.overhead), *growth)


def fit(cheap: Callable[[int], object], cheap_pairs: float, costly: Callable[[int], object],
        costly_pairs: float) -> CostModel:
    """Pilot ``cheap`` and ``costly`` (each ``run(R)``; the same callable when the grid has
    one size) as they are and return the interpolating cost model."""
    hi = PilotFit(*_pilot(costly), costly_pairs)
    if costly is cheap or costly_pairs <= cheap_pairs:
        return _model(None, hi)
    return _model(PilotFit(*_pilot(cheap), cheap_pairs), hi)


def scenario_pairs(scenario) -> float:
    """Trial pairs of a replication of ``scenario`` (expected, for random cluster sizes)."""
    return scenario.clusters * scenario.cluster_size.mean()


def cut_design(clusters: int, trials: float, pairs: float) -> tuple[int, int]:
    """``(K', M')`` of a design of ``clusters`` x ``trials`` cut to at most about ``pairs`` pairs:
    fewer clusters (``pairs // M``, at least 2 where it has 2), and, where two clusters are still
    too many pairs, fewer trials a cluster (``pairs // K'``)."""
    k = min(clusters, max(2, int(pairs // max(trials, 1.0))))
    return k, int(min(trials, max(1, pairs // k)))


def shrink_scenario(scenario, pairs: float):
    """``scenario`` cut to about ``pairs`` trial pairs a replication (itself when it has no
    more): ``K' = pairs // M`` clusters (at least 2, where it has 2), the same cells, rho,
    label noise and loss; where ``K' M`` still exceeds ``pairs``, fewer trials a cluster
    (fixed sizes: ``pairs // K'``; explicit sizes: evenly spaced clusters, their sizes cut in
    proportion).  A cluster's cost is linear in its trials for the trial sampler (one uniform
    a pair, one more with recording error) -- the only sampler of clusters of over a few dozen
    trials -- so the cut costs ``pairs`` / its pairs of the scenario's."""
    import numpy as np
    from simlab.scenario import ExplicitSizes, FixedSize

    if scenario_pairs(scenario) <= pairs:
        return scenario
    size = scenario.cluster_size
    k, m = cut_design(scenario.clusters, size.mean(), pairs)
    update: dict = {"clusters": k}
    if isinstance(size, FixedSize) and m < size.trials:
        update["cluster_size"] = {"kind": "fixed", "trials": m}
    elif isinstance(size, ExplicitSizes):
        keep = np.linspace(0, scenario.clusters - 1, k).round().astype(np.int64)
        sizes = np.asarray(size.sizes, dtype=np.int64)[keep]
        if sizes.sum() > pairs:
            sizes = np.floor(sizes * (pairs / sizes.sum())).astype(np.int64)
        update["cluster_size"] = {"kind": "explicit", "sizes": tuple(int(m) for m in sizes)}
        if scenario.cluster_cells is not None:
            update["cluster_cells"] = tuple(scenario.cluster_cells[j] for j in keep)
    return type(scenario).model_validate({**scenario.model_dump(), **update})


def scaled_pilot(make: Callable[[float], tuple[Callable[[int], object], float]], pairs: float) -> PilotFit:
    """Pilot work of ``pairs`` trial pairs a replication: as it is (``make(pairs)``) up to
    ``PILOT_DIRECT_PAIRS`` pairs, else on scaled-down copies (``make(p)``: ``(run, actual
    pairs)`` of the work cut to about ``p`` pairs; ``_scaled_pilot``)."""
    if pairs <= PILOT_DIRECT_PAIRS:
        run, done = make(pairs)
        return PilotFit(*_pilot(run), done)
    return _scaled_pilot(make, pairs)


def pilot_model(make: Callable[[float], tuple[Callable[[int], object], float]], pairs: float) -> CostModel:
    """The cost model of work of one size from its ``scaled_pilot``."""
    return _model(None, scaled_pilot(make, pairs))


def scenario_pilot(runner: Callable[[object, object], Callable[[int], object]], scenario) -> PilotFit:
    """Pilot ``runner(piloted, scenario)`` (a ``run(R)`` of the work on ``piloted``, which is
    ``scenario`` or a scaled-down copy of it) -- as it is up to ``PILOT_DIRECT_PAIRS`` pairs."""
    def make(target: float) -> tuple[Callable[[int], object], float]:
        small = shrink_scenario(scenario, target)
        return runner(small, scenario), scenario_pairs(small)

    return scaled_pilot(make, scenario_pairs(scenario))


def fit_scenarios(runner: Callable[[object, object], Callable[[int], object]], points: Sequence) -> CostModel:
    """The cost model of a grid of scenarios from pilots (``scenario_pilot``) of its cheapest and
    its costliest (by pairs)."""
    pairs = [scenario_pairs(sc) for sc in points]
    lo, hi = points[pairs.index(min(pairs))], points[pairs.index(max(pairs))]
    costly = scenario_pilot(runner, hi)
    return _model(None if max(pairs) <= min(pairs) else scenario_pilot(runner, lo), costly)


def study_estimate(spec, workers: int, chunk_size: int) -> TimeEstimate:
    """Wall seconds of ``runner.run_study(spec)`` on ``workers`` workers (on the device
    ``studies.engine.device`` selects, like the run itself)."""
    from studies.engine.runner import evaluate_scenario

    points = [sc for _, sc in spec.points()]
    pairs = [scenario_pairs(sc) for sc in points]

    def runner(sc, _) -> Callable[[int], object]:
        return lambda r: evaluate_scenario(sc, spec.methods, spec.margins, spec.alphas, replications=r,
                                           seed=spec.seed, sampler=spec.sampler)

    model = fit_scenarios(runner, points)
    n = spec.n_replications
    chunks = math.ceil(n / chunk_size)
    wall = sum(model.seconds(p, n, chunks) for p in pairs) / max(workers, 1)
    return TimeEstimate(wall, wall, workers)


def study_exact_estimate(spec) -> TimeEstimate:
    """Wall seconds of the exact results ``runner.run_study(spec, exact=True)`` adds after the
    simulation: ``studies.exact.fixed.exact_grid`` runs in this process, one evaluation after
    another whatever the workers, and is priced by ``exact_grid_seconds`` (the engines' probes
    run here, the laws' DP steps and each evaluation's states at a piloted cost a state).  The
    cluster_valid spec's exact part took 95-106 s on 2 busy cores against a simulation of 60 s;
    it was "on top" of the estimate, which a run over --max-seconds then overran."""
    from studies.exact.fixed import exact_grid_seconds

    resolved = [ref.resolve("fixed") for ref in spec.methods]
    wall = exact_grid_seconds(spec.points(), resolved, spec.margins, spec.alphas)
    return TimeEstimate(wall, wall, 1)


def study_floor_estimate(spec, workers: int, chunk_size: int) -> TimeEstimate | None:
    """A floor under ``study_estimate`` for a grid too large to build before it is priced (over
    ``EAGER_POINTS``; None for smaller ones): every point costed as its cheapest
    (``GridSpec.cheapest_point``, piloted alone).  Building a grid of 10^5 points took 12 s
    and 0.6 GB before its estimate; this refuses such a grid in about a second."""
    from studies.engine.runner import evaluate_scenario
    from studies.engine.spec import EAGER_POINTS

    points = math.prod(spec.shape) if spec.shape else 1
    if points <= EAGER_POINTS:
        return None
    try:
        cheapest = spec.cheapest_point()
    except ValueError:   # not a valid scenario: the full build names it
        return None

    def runner(sc, _) -> Callable[[int], object]:
        return lambda r: evaluate_scenario(sc, spec.methods, spec.margins, spec.alphas, replications=r,
                                           seed=spec.seed, sampler=spec.sampler)

    model = _model(None, scenario_pilot(runner, cheapest))
    n = spec.n_replications
    floor = points * model.seconds(scenario_pairs(cheapest), n, math.ceil(n / chunk_size)) / max(workers, 1)
    return TimeEstimate(floor, floor, workers)


PREPARE_NOTE_SECONDS = 1.0  # a method's first replication declared slower than this is said (and bounded) first


def preparation(scenario, methods: Sequence, prefixes: Sequence[int] | None = None) -> list:
    """The declared costs (``methods.analysis_cost``) over ``PREPARE_NOTE_SECONDS`` of each
    method's first replication of ``scenario``'s design: what a pilot pays in its untimed warm-up
    before it can time anything -- ``dm_likelihood_ratio`` builds its least-favourable mixture
    for each new design there (about 25 s at 59 x 3), so a caller can refuse or announce it
    before the pilot.  ``prefixes``: at each of these cluster counts instead (a power frame's
    designs).  Nothing is drawn (one replication of 10^6 clusters of 10^5 trials takes minutes):
    the design is the scenario's clusters of its mean cluster size."""
    from methods import as_method_refs

    trials = max(1, round(scenario.cluster_size.mean()))
    ks = [scenario.clusters] if prefixes is None else sorted(set(prefixes))
    return [c for ref in as_method_refs(methods) for k in ks
            for c in design_preparation(ref.resolve("fixed"), k, trials)]


def design_preparation(method, clusters: int, trials: int) -> list:
    """:func:`preparation` at a design: ``method`` (fixed-sample, with a declared cost model; a
    method linear in the cells has nothing to prepare) on one table of ``clusters`` clusters of
    ``trials`` pairs each (what a method builds per design depends on the design only)."""
    import numpy as np

    from methods import analysis_cost

    if getattr(method, "sequential", False) or getattr(method, "cost", None) is None:
        return []
    table = np.zeros((1, int(clusters), 4))
    table[..., 0] = trials
    return _slow([analysis_cost(method, table)])


def _slow(costs: list) -> list:
    return [c for c in costs if c.seconds > PREPARE_NOTE_SECONDS]


def study_preparation(spec) -> list:
    """:func:`preparation` of each of ``spec``'s designs (scenarios of one cluster count and
    cluster-size law share what a method builds per design): each is paid at least once, in the
    pilot or in a worker."""
    if all(getattr(ref.resolve("fixed"), "cost", None) is None for ref in spec.methods):
        return []  # linear in the cells: nothing built per design (and a huge grid is not walked)
    seen, costs = set(), []
    for _, sc in spec.points():
        key = (sc.clusters, sc.cluster_size.model_dump_json())
        if key not in seen:
            seen.add(key)
            costs += preparation(sc, spec.methods)
    return costs


def scenario_estimate(scenario, methods: Sequence, margins: Sequence[float], alphas: Sequence[float],
                      replications: int, seed: int, sampler: str = "auto") -> TimeEstimate:
    """Wall seconds of ``runner.evaluate_scenario`` over ``replications`` of one scenario in
    this process (``simlab false-pass``)."""
    from studies.engine.runner import evaluate_scenario

    model = _model(None, scenario_pilot(lambda sc, _: lambda r: evaluate_scenario(
        sc, methods, margins, alphas, replications=r, seed=seed, sampler=sampler), scenario))
    wall = model.seconds(scenario_pairs(scenario), replications)
    return TimeEstimate(wall, wall, 1)


def sequential_study_estimate(spec, workers: int) -> TimeEstimate:
    """Wall seconds of ``sequential.run_sequential_study(spec)`` on ``workers`` workers (the
    simulation; ``exact_sequential_seconds`` models the exact engines on top)."""
    from studies.engine.sequential import sequential_task

    points = [sc for _, sc in spec.points()]
    pairs = [scenario_pairs(sc) for sc in points]

    def runner(sc, full) -> Callable[[int], object]:
        schedule = scaled_schedule(spec.schedule, full, sc)
        return lambda r: sequential_task(sc, spec.methods, schedule, spec.margins, spec.alpha, spec.seed,
                                          spec.sampler, 0, r)

    model = fit_scenarios(runner, points)
    n = spec.replications
    chunks = math.ceil(n / spec.chunk_size)
    wall = sum(model.seconds(p, n, chunks) for p in pairs) / max(workers, 1)
    return TimeEstimate(wall, wall, workers)


def scaled_schedule(schedule, full, piloted):
    """``schedule``'s looks on ``piloted``, a scaled-down copy of ``full``: each look's count
    cut in proportion (clusters, or pairs for a schedule in trials), rounded up, repeats dropped."""
    if piloted is full:
        return schedule
    if schedule.unit == "clusters":
        ratio = piloted.clusters / full.clusters
    else:
        ratio = scenario_pairs(piloted) / max(scenario_pairs(full), 1.0)
    looks = sorted({max(1, math.ceil(n * ratio)) for n in schedule.looks})
    return type(schedule)(looks=tuple(looks), unit=schedule.unit)


def qualify_preparation(methods: Sequence, policy) -> list:
    """:func:`design_preparation` of each method at each of the policy's designs (clusters, cluster
    size, margin: ``dm_likelihood_ratio``'s mixture depends on all three), each paid at least once."""
    sizes = policy.domain.cluster_sizes
    designs = sorted({(k, s, m) for k, s, _, m, _ in policy.domain.cells()})
    return [c for method in methods for k, s, _ in designs
            for c in design_preparation(method, k, max(1, round(sizes[s].mean())))]


def qualify_estimate(methods: Sequence, policy, workers: int, finished: Collection[tuple] = (),
                     before_preparing: Callable[[float, str], object] | None = None) -> TimeEstimate:
    """Wall seconds of ``qualify.qualify(methods, policy)``: ``low`` the first round over
    every grid scenario (always run), ``high`` every scenario escalated to the policy's
    largest replication count (refinement scenarios not counted: each adds at most one
    scenario's cost per line searched).  ``finished``: ``(point, start, stop)`` of the tasks
    a checkpoint already holds (``qualify_checkpoint.finished_ranges``), which a resumed run
    reads back and so are not counted.  The pilot runs the per-scenario engine, whose
    per-scenario overhead the batched default shares across K: for closed-form methods,
    where that overhead dominates, the estimate is high; for costly kernels it is close.
    Methods whose estimands have different null boundaries run on separate grids, so
    their estimates add.  What a method builds for each design (:func:`qualify_preparation`)
    is added, and told first to ``before_preparing(seconds, what)``, which may raise to
    refuse before the pilot pays for any of it."""
    from simlab.estimands import is_difference
    from studies.qualify.run import method_estimand

    built = qualify_preparation(methods, policy)
    prepare = sum(c.seconds for c in built)
    if built and before_preparing is not None:
        before_preparing(prepare / max(workers, 1), f"preparation at {len(built)} designs ({built[-1].method}, "
                                                    f"the last: {built[-1].driver})")
    groups: dict[bool, list] = {}
    for m in methods:
        groups.setdefault(is_difference(method_estimand(m, policy)), []).append(m)
    low = high = prepare
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
