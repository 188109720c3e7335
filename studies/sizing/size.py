"""Sample sizing: the fewest independent clusters K at which a method reaches the target
power for a paired, clustered non-inferiority design, with its false-pass rate within
policy over the nuisance domain at that K.

What the answer K promises (else a ValueError: ``simlab size`` exits 2 with the reason):

1. Power at K meets the target: the lower end of the two-sided ``ci_level``
   Clopper-Pearson interval of the simulated power is at least the target (exact power
   where an exact engine applies cheaply, ``studies.engine.frame``) -- and so at every K of
   a verified stretch ``[K, K + W]``, ``W = max(16, ceil(K / 20))`` (every integer up to
   ``K + 16``, then a grid).  Power is not monotone in K: a method that passes on a zero
   sample variance has high power at K = 2 (two concordant clusters), so the first
   crossing of the target can be a degenerate root far below the real one.  The answer is
   the LAST crossing: one above the largest evaluated K whose power bound lies below the
   target, on a grid from the smallest design to a frame beyond the analytic start.
2. The false-pass rate at K is ``qualified`` by a certificate at exactly that design
   (``studies.qualify.certify``, through ``studies.sizing.gate``: baseline, discordance, rho up to
   ``rho_max``, the policy's label-noise models), its worst case named.  If it exceeds, a
   larger K proposed by a cheap screen (doubling, then bisection; at most 16x the power
   answer) is certified in turn, and power is re-checked at the raised K (the search
   resumes above it if the power misses).  An undetermined certificate is refused: more
   clusters would not settle Monte Carlo error.
3. Power that no K reaches is refused before any simulation (``studies.sizing.analytic``:
   a loss-rate method whose alternative loss rate is not below the margin), and when
   simulated power stays below the target at 64 times the analytic start.

Search.  Analytic start ``k0`` (``studies.sizing.analytic``).  Frame of
``max(2 k0, k0 + 20, 30)`` clusters (x4 until the power bound at the frame's end reaches
the target); power on prefixes of it (common random numbers, ``studies.engine.frame``).
Replications start at ``initial_reps`` and grow x4 (to ``max_reps``) while the answer
exceeds the root of the power point estimate by more than ``max(2, K / 50)`` clusters --
the price of the confidence bound.  The interval at each K is pointwise.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from methods.qualification import EXCEEDS, UNDETERMINED
from simlab.scenario import FixedSize, PairedScenario

from studies.engine.frame import PowerFrame, ci, exact_pass_rate, look_schedule
from studies.sizing.analytic import (analytic_clusters, analytic_pairs, analytic_start, design_effect, restricted_p10,
                              variance_kind)
from studies.sizing.curve import curve_dataset, plot_curve, save_sizing
from studies.sizing.gate import FalsePassGate, cert_payload, undetermined_text

MAX_CLUSTERS = 200_000
FRAME_LIMIT = 64          # refuse when power misses the target at FRAME_LIMIT x the analytic start
STRETCH_ALL = 16          # every K in [K, K + 16] is verified ...
STRETCH_FRACTION = 20     # ... and a grid up to K + K / 20
MAX_RAISE = 16            # the false-pass limit may raise K up to 16x the power answer, then: refused
MIN_SLICE = 20            # replications: the smallest slice of a budgeted step
FRAME_POINTS = 24         # a new frame is evaluated at about this many K (a geometric grid)


class SizingStopped(Exception):
    """A sizing search stopped by its time budget (:class:`StepBudget`) before it finished:
    ``why``, and ``bracket`` -- what it had found (``_Search.bracket``)."""

    def __init__(self, why: str, bracket: dict[str, Any] | None = None):
        super().__init__(why)
        self.why = why
        self.bracket = bracket or {}


class StepBudget:
    """Keeps a sizing search within ``seconds`` (on ``clock``), at the granularity of its power
    evaluations, which are its costly steps (``PowerFrame.evaluate``: replications of a frame
    analysed at a set of K; a step can take many times the one before it, as replications
    grow x4 and the K evaluated multiply).

    A step is priced before it starts, in work units -- the clusters analysed times the
    replications each K lacks, plus the frame's clusters times the replications generated --
    at the rate the latest slice of work measured (the budget's first slice carries one-time
    costs, kernels loaded, and prices nothing).  A step priced over what is left (times
    ``safety``) is not started: :class:`SizingStopped`.  A step that is started runs in slices
    of about ``slice_seconds`` (at most a tenth of what is left; ``first_slice`` replications
    while no rate is measured), and the rest of the step is priced again before each slice,
    so a step that costs more than priced overruns by at most one slice.  The exact powers
    the search computes in a verified stretch are checked too, each priced at what the
    previous one took.

    Slicing changes no count: every table is a pure function of (seed, scenario,
    replication), so a frame brought to n replications in slices counts what one pass
    counts."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.perf_counter, safety: float = 1.2,
                 slice_seconds: float = 2.0, first_slice: int = 100):
        self.clock = clock
        self.deadline = clock() + seconds
        self.safety, self.slice_seconds, self.first_slice = safety, slice_seconds, first_slice
        self.rate: float | None = None     # seconds per work unit, from the latest slice measured
        self.slices = 0

    def left(self) -> float:
        return self.deadline - self.clock()

    def price(self, work: float) -> float | None:
        return None if self.rate is None else work * self.rate

    def check(self, work: float, what: str) -> None:
        """Raise :class:`SizingStopped` unless ``work`` (priced, with the safety factor) fits in
        what is left."""
        self.check_cost(self.price(work), what)

    def check_cost(self, cost: float | None, what: str) -> None:
        """Raise :class:`SizingStopped` unless ``cost`` seconds (None: not known; with the
        safety factor) fit in what is left."""
        left = self.left()
        if left <= 0.0:
            raise SizingStopped(f"the time budget was spent before {what}")
        if cost is not None and cost * self.safety > left:
            raise SizingStopped(f"{what} was estimated at {cost:.1f} s (from the steps measured), over the "
                                f"{left:.1f} s left")

    def slice_reps(self, work_per_rep: float) -> int:
        """Replications in the next slice."""
        if self.rate is None or work_per_rep <= 0:
            return self.first_slice
        seconds = min(self.slice_seconds, self.left() / 10.0)
        return max(MIN_SLICE, int(seconds / (self.rate * work_per_rep)))

    def measured(self, work: float, seconds: float) -> None:
        self.slices += 1
        if self.slices > 1 and work > 0 and seconds > 0:
            self.rate = seconds / work


class _BudgetedFrame(PowerFrame):
    """A :class:`PowerFrame` whose evaluations are priced and sliced by a :class:`StepBudget`."""

    def __init__(self, *args, budget: StepBudget, bracket: Callable[[], dict[str, Any]], **kw):
        super().__init__(*args, **kw)
        self.budget, self.bracket = budget, bracket

    def _work(self, ks: list[int], start: int, upto: int) -> float:
        have = [self.counts.get(k, [0, 0])[0] for k in ks]
        return float((upto - start) * self.k_frame + sum(k * max(0, upto - max(h, start)) for k, h in zip(ks, have)))

    def evaluate(self, ks, n_reps: int) -> None:
        ks = sorted({int(k) for k in ks})
        if not ks or min(self.counts.get(k, [0, 0])[0] for k in ks) >= n_reps:
            return super().evaluate(ks, n_reps)
        b = self.budget
        done = min(self.counts.get(k, [0, 0])[0] for k in ks)
        what = f"a step of {n_reps:,} replications at {len(ks)} K on the {self.k_frame}-cluster frame"
        first = True
        while done < n_reps:
            try:
                b.check(self._work(ks, done, n_reps), what if first else f"the rest of {what}")
            except SizingStopped as exc:
                exc.bracket = self.bracket()
                raise
            first = False
            per_rep = self.k_frame + sum(k for k in ks if self.counts.get(k, [0, 0])[0] <= done)
            upto = min(n_reps, done + b.slice_reps(per_rep))
            work = self._work(ks, done, upto)
            t = b.clock()
            super().evaluate(ks, upto)
            b.measured(work, b.clock() - t)
            done = upto


@dataclass
class SizingResult:
    inputs: dict[str, Any]
    analytic: dict[str, float]
    clusters: int
    power_clusters: int
    trials_total: int
    power_at_k: dict[str, float]
    power_at_k_minus_1: dict[str, float]
    resolved: bool
    binding: str
    false_pass: dict[str, Any]
    search_log: list[dict[str, Any]]
    curve: Any
    seconds: float
    replications_generated: int
    method_identity: dict[str, str]
    stretch: dict[str, Any] = field(default_factory=dict)
    qualification: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "analytic": self.analytic, "clusters": self.clusters,
                "power_clusters": self.power_clusters, "trials_total": self.trials_total, "power_at_k": self.power_at_k,
                "power_at_k_minus_1": self.power_at_k_minus_1, "resolved": self.resolved,
                "binding_constraint": self.binding, "false_pass": self.false_pass, "stretch": self.stretch,
                "search": self.search_log, "seconds": self.seconds,
                "replications_generated": self.replications_generated, "method": self.method_identity,
                "qualification": self.qualification, "files": self.files,
                "curve": {"clusters": [int(k) for k in self.curve["clusters"].values],
                          "power": [float(p) for p in self.curve["power"].values],
                          "power_mcse": [float(p) for p in self.curve["power_mcse"].values]}}


def _grid(lo: int, hi: int, n: int) -> list[int]:
    if hi < lo:
        return []
    if hi - lo + 1 <= n:
        return list(range(lo, hi + 1))
    g = np.unique(np.round(np.geomspace(max(lo, 1), hi, n)).astype(int))
    return sorted(set(int(x) for x in g) | {lo, hi})


def stretch_of(k: int, k_max: int) -> list[int]:
    """The K verified above an answer: every integer to K + 16, then a grid to K + K/20."""
    top = min(k + max(STRETCH_ALL, math.ceil(k / STRETCH_FRACTION)), k_max)
    return sorted(set(range(k, min(k + STRETCH_ALL, top) + 1)) | set(_grid(min(k + STRETCH_ALL, top), top, 16)))


def _versus_start(k: int, k0: int) -> str:
    """Where the largest frame ``k`` lies against the analytic start ``k0``, in words: a frame capped
    at ``MAX_CLUSTERS`` below a start of 78,488,798 read "0x the analytic start"."""
    if k >= k0:
        return f"{k / k0:.3g}x the analytic start {k0:,}"
    return f"the most clusters sized ({k:,}), below the analytic start {k0:,} ({k0 / k:.3g}x as many)"


def _scenario(baseline: float, difference: float, discordance: float, clusters: int, trials: int,
              rho: float) -> PairedScenario:
    return PairedScenario.from_rates(baseline, difference, discordance, clusters=clusters,
                                     cluster_size=FixedSize(trials=trials), rho=rho)


class _Search:
    """Power side of the search on one frame (grown when an answer needs more clusters)."""

    def __init__(self, method, alt: dict, margin: float, alpha: float, target: float, level: float,
                 looks: int | None, seed: int, sampler: str, k_lo: int, k0: int, limit: int,
                 budget: StepBudget | None = None):
        self.method, self.alt, self.margin, self.alpha = method, alt, margin, alpha
        self.budget = budget
        self.previous: PowerFrame | None = None
        self.found: tuple[int, int, float] | None = None   # the latest answer: (K, replications, power bound)
        self.target, self.level, self.looks, self.seed, self.sampler = target, level, looks, seed, sampler
        self.k_lo, self.k0, self.limit = k_lo, k0, limit
        self.frame: PowerFrame | None = None
        self.generated = 0
        self.exact: dict[int, float | None] = {}
        self.exact_seconds: float | None = None    # what the latest exact power took

    def new_frame(self, k_frame: int) -> PowerFrame:
        if self.frame is not None:
            self.generated += self.frame.replications_generated
            self.previous = self.frame
        a = self.alt
        sc = _scenario(a["baseline"], a["difference"], a["discordance"], k_frame, a["trials"], a["rho"])
        args = (self.method, sc, self.seed, self.margin, self.alpha, self.looks, self.sampler)
        self.frame = PowerFrame(*args) if self.budget is None else \
            _BudgetedFrame(*args, budget=self.budget, bracket=self.bracket)
        return self.frame

    def bracket(self) -> dict[str, Any]:
        """What the search has found so far (for a search stopped before its end):
        ``answer`` -- the latest K whose stretch was verified (power bound at or above the
        target at ``n_reps`` replications; a valid answer, not yet refined) -- or else
        ``reaches``, the smallest evaluated K from which every evaluated K's power bound
        reaches the target (its stretch not verified); and ``below``, the largest evaluated
        K whose power is below the target with confidence (the upper end of its interval
        below it)."""
        out: dict[str, Any] = {}
        frames = [f for f in (self.frame, self.previous) if f is not None and f.counts]
        below = [k for f in frames for k, (n, x) in f.counts.items() if n and ci(x, n, self.level)[1] < self.target]
        if below:
            out["below"] = max(below)
        if self.found is not None:
            k, reps, bound = self.found
            out.update(answer=k, n_reps=reps, power_bound=bound)
        elif frames:
            f = frames[0]
            tail = None
            for k in sorted((k for k, (n, _) in f.counts.items() if n), reverse=True):
                if f.lower(k, self.level) < self.target:
                    break
                tail = k
            if tail is not None:
                out.update(reaches=tail, n_reps=f.counts[tail][0], power_bound=f.lower(tail, self.level))
        return out

    def ok(self, k: int) -> bool:
        return self.frame.lower(k, self.level) >= self.target

    def last_crossing(self, reps: int, k_from: int) -> int:
        """Smallest K >= k_from above the largest evaluated K (>= k_from) whose power bound
        misses the target, refined until the two are adjacent."""
        f = self.frame
        while True:
            ev = sorted(k for k in f.counts if k >= k_from)
            bad = [k for k in ev if not self.ok(k)]
            lo = max(bad) if bad else k_from - 1
            if bad and f.counts[lo][0] < reps:  # judged at fewer replications: bring it up first
                f.evaluate([lo], reps)
                continue
            hi = min(k for k in ev if k > lo)
            if hi - lo <= 1:
                return hi
            f.evaluate(_grid(lo + 1, hi - 1, 40), reps)

    def point_root(self, k_from: int) -> int:
        ev = sorted(k for k in self.frame.counts if k >= k_from)
        bad = [k for k in ev if self.frame.power(k) < self.target]
        return min((k for k in ev if k > max(bad, default=k_from - 1)), default=ev[-1])

    def exact_power(self, k: int) -> float | None:
        if k not in self.exact:
            a = self.alt
            sc = _scenario(a["baseline"], a["difference"], a["discordance"], k, a["trials"], a["rho"])
            b = self.budget
            if b is not None and self.looks is None:  # priced at what the previous one took (0.3 s each
                try:                                  # to find no engine applies, at 900 x 3)
                    b.check_cost(self.exact_seconds, f"the exact power at K={k}")
                except SizingStopped as exc:
                    exc.bracket = self.bracket()
                    raise
            t = time.perf_counter() if b is None else b.clock()
            self.exact[k] = exact_pass_rate(self.method, sc, self.margin, self.alpha) if self.looks is None else None
            self.exact_seconds = (time.perf_counter() if b is None else b.clock()) - t
        return self.exact[k]

    def grow(self, k_frame: int, reps: int, k_from: int, log: list, say) -> None:
        """A new frame of ``k_frame`` clusters (at most ``limit``), its grid evaluated from ``k_from``."""
        k_frame = min(k_frame, self.limit)
        f = self.new_frame(k_frame)
        f.evaluate(_grid(k_from, k_frame, FRAME_POINTS) + [min(max(self.k0, k_from), k_frame)], reps)
        log.append({"stage": "frame", "k_frame": k_frame, "n_reps": reps})
        say(f"frame K={k_frame}: power at K_frame {f.power(k_frame):.4f} ({reps} reps)")

    def answer(self, reps: int, k_from: int, log: list, say) -> int:
        """The last crossing at or above ``k_from`` whose stretch is verified (frame grown as needed)."""
        while True:
            f = self.frame
            if k_from + STRETCH_ALL > f.k_frame:
                self.grow(2 * (k_from + STRETCH_ALL), reps, k_from, log, say)
                continue
            f.evaluate([f.k_frame], reps)
            if not self.ok(f.k_frame):
                if f.k_frame >= self.limit:
                    raise ValueError(f"unreachable power: simulated power {f.power(f.k_frame):.4f} (bound "
                                     f"{f.lower(f.k_frame, self.level):.4f}) < {self.target} at K={f.k_frame:,}, "
                                     f"{_versus_start(f.k_frame, self.k0)}; {self.method.name} "
                                     "does not reach the target at this design")
                self.grow(4 * f.k_frame, reps, k_from, log, say)
                continue
            k = self.last_crossing(reps, k_from)
            ks = stretch_of(k, 10 ** 9)
            if ks[-1] > f.k_frame:
                self.grow(2 * ks[-1], reps, k_from, log, say)
                continue
            f.evaluate(ks, reps)
            missed = [j for j in ks if not self.ok(j)]
            if not missed:
                missed = [j for j in ks[:STRETCH_ALL + 1] if (e := self.exact_power(j)) is not None and e < self.target]
                if missed:  # exact power below the target in the stretch: search above it
                    log.append({"stage": "exact stretch", "k": k, "missed": missed})
                    k_from = max(missed) + 1
                    continue
                say(f"K={k}: power bound {f.lower(k, self.level):.4f} >= {self.target} on K..{ks[-1]} ({reps} reps)")
                self.found = (k, reps, f.lower(k, self.level))
                return k
            log.append({"stage": "stretch", "k": k, "n_reps": reps, "missed": missed[:8]})
            say(f"K={k}: power bound below the target at K={missed[0]} in its stretch; searching above")


def size_estimate(method, *, margin: float, difference: float, power: float = 0.8, alpha: float = 0.025,
                  trials: int = 1, baseline: float = 0.9, discordance: float | None = None, rho: float = 0.0,
                  looks: int | None = None, seed: int = 20261129, initial_reps: int = 2000,
                  max_clusters: int = MAX_CLUSTERS, sampler: str = "auto",
                  before_preparing: Callable[[float, str], object] | None = None):
    """What :func:`size` certainly costs (``studies.engine.cost.TimeEstimate``; ``high`` is
    ``low`` too: how far the search escalates depends on what it finds): its first step,
    power on a frame of ``max(2 k0, k0 + 20, 30)`` clusters (``k0`` the analytic start) at
    ``initial_reps`` replications on every K it evaluates (:func:`frame_seconds`) -- the certificate at the answer
    and any larger replication count come on top.  Fixed-sample methods (a sequential
    method's frame decides every look: None).  A method that builds something for each design
    (``studies.engine.cost.preparation``) builds it for each K the first frame evaluates: that is
    added, and told first to ``before_preparing(seconds, what)``, which may raise to refuse
    before the pilot."""
    from methods import MethodRef
    from methods.registry import reference
    from studies.engine.cost import TimeEstimate, preparation

    if looks is not None or method.sequential:
        return None
    discordance = max(2.0 * abs(difference), margin, 0.1) if discordance is None else discordance
    k0 = max(analytic_start(method, margin, difference, discordance, alpha, power, trials, rho)["clusters"], 2)
    frame = min(max(2 * k0, k0 + 20, 30), FRAME_LIMIT * k0, max_clusters)
    ref = MethodRef(name=reference(method), options=dict(method.options))
    sc = _scenario(baseline, difference, discordance, frame, trials, rho)
    ks = _grid(2, frame, FRAME_POINTS) + [min(k0, frame)]   # what the first frame evaluates (``grow``)
    built = preparation(sc, [ref], prefixes=ks)
    prepare = sum(c.seconds for c in built)
    if built and before_preparing is not None:
        before_preparing(prepare, f"{len(built)} designs of the first frame, {built[-1].driver} at its largest")
    wall = frame_seconds(method, sc, ks, initial_reps, seed, margin, alpha, sampler)
    return TimeEstimate(wall + prepare, wall + prepare, 1)


def frame_seconds(method, scenario: PairedScenario, ks: list[int], reps: int, seed: int, margin: float, alpha: float,
                  sampler: str = "auto") -> float:
    """Seconds of ``PowerFrame(method, scenario).evaluate(ks, reps)``: the frame's tables drawn
    (its ``K_frame`` clusters a replication) and the method run on each prefix K of ``ks`` --
    work of ``sum(ks)`` clusters a replication, not the frame's K alone.  A frame of 200,000 clusters was
    priced "under 1 s" from one scenario of that K on the moment path (no tables); its 25 prefixes
    on drawn tables took 32 s.  Every part of it is linear in the frame's pairs (the draw, each
    prefix's analysis, the table source's set-up), so the frame is piloted once, cut to at most
    ``PILOT_DIRECT_PAIRS`` pairs with its prefixes cut in proportion, and scaled up in proportion:
    the stepped pilot (``scaled_pilot``) read timer noise of 2 busy cores as growth and put this
    frame anywhere from 9 s to 631 s."""
    from studies.engine.cost import PILOT_DIRECT_PAIRS, pilot_model, scenario_pairs

    trials = scenario.cluster_size.mean()
    frame = scenario.clusters

    def make(target: float):
        k = int(min(frame, max(2, target // max(trials, 1.0))))
        small = scenario if k == frame else type(scenario).model_validate({**scenario.model_dump(), "clusters": k})
        cut = sorted({max(1, min(k, round(j * k / frame))) for j in ks})

        def run(r: int) -> None:
            PowerFrame(method, small, seed, margin, alpha, None, sampler).evaluate(cut, r)

        piloted.append(scenario_pairs(small))
        return run, piloted[-1]

    piloted: list[float] = []
    pairs = scenario_pairs(scenario)
    model = pilot_model(make, min(pairs, PILOT_DIRECT_PAIRS))
    return model.seconds(piloted[-1], reps) * max(1.0, pairs / piloted[-1])


def size(method, *, margin: float, difference: float, power: float = 0.8, alpha: float = 0.025,
         trials: int = 1, baseline: float = 0.9, discordance: float | None = None, rho: float = 0.0,
         rho_max: float | None = None, looks: int | None = None, seed: int = 20261129, ci_level: float = 0.95,
         initial_reps: int = 2000, max_reps: int = 1 << 20, max_clusters: int = MAX_CLUSTERS, policy=None,
         check_false_pass: bool = True, sampler: str = "auto",
         progress: Callable[[str], None] | None = None, executor=None,
         budget: StepBudget | None = None) -> SizingResult:
    """Minimum K keeping the promises of the module docstring; ValueError when none can.
    ``executor`` (``studies.engine.executor``: joblib processes or a dask cluster) runs the
    false-pass certificate's simulation; the power search runs here.  Same answer for
    every backend.  ``budget`` (:class:`StepBudget`): the power evaluations are priced and
    sliced against it, and the search raises :class:`SizingStopped` (with what it had found)
    rather than start or continue one that does not fit; the answer is the same whenever
    the search completes (the false-pass certificate is not budgeted; once the answer is
    complete, what is only reported is cut rather than stopped: the power curve's last
    evaluation to the K already evaluated, the power at K - 1 to the simulated one)."""
    from methods.qualification import QualificationPolicy, standard_domain

    t0 = time.perf_counter()
    if policy is None:
        policy = QualificationPolicy(domain=standard_domain(), alpha=alpha)
    if discordance is None:
        discordance = max(2.0 * abs(difference), margin, 0.1)
    if not 0.0 < discordance <= 1.0:
        raise ValueError(f"discordance must lie in (0, 1], got {discordance!r}: with no discordant pairs every "
                         "experiment shows a zero difference with zero variance, a degenerate design")
    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials per cluster must be a positive integer, got {trials!r}")
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must lie in [0, 1), got {rho!r}")
    rho_max = rho if rho_max is None else rho_max
    if not rho <= rho_max < 1.0:
        raise ValueError(f"rho_max must lie in [rho, 1) = [{rho}, 1), got {rho_max!r}")
    if initial_reps < 100 or max_reps < initial_reps:
        raise ValueError(f"need 100 <= initial_reps <= max_reps, got {initial_reps}, {max_reps}")
    if not alpha < power < 1.0:  # a level-alpha test passes with about alpha's chance on no data: nothing to size
        raise ValueError(f"power must lie in (alpha, 1) = ({alpha:g}, 1), got {power!r}")
    if looks is not None and not method.sequential:
        raise ValueError(f"looks applies to sequential methods; {method.name!r} is fixed-sample")
    _scenario(baseline, difference, discordance, 2, trials, rho)  # validates the alternative
    an = analytic_start(method, margin, difference, discordance, alpha, power, trials, rho)
    k0 = max(an["clusters"], looks or 2)
    k_lo = max(2, looks or 2)
    log: list[dict[str, Any]] = []

    def say(msg: str) -> None:
        if progress:
            progress(msg)

    alt = {"baseline": baseline, "difference": difference, "discordance": discordance, "trials": trials, "rho": rho}
    s = _Search(method, alt, margin, alpha, power, ci_level, looks, seed, sampler, k_lo, k0,
                min(FRAME_LIMIT * k0, max_clusters), budget)
    reps = initial_reps

    # 1. a frame beyond the analytic start (grown by ``answer`` until its last K reaches the target)
    s.grow(max(2 * k0, k0 + 20, 30), reps, k_lo, log, say)

    # 2. the last crossing, its stretch verified; replications grow while the bound costs too much
    while True:
        k_power = s.answer(reps, k_lo, log, say)
        gap = k_power - s.point_root(k_lo)
        log.append({"stage": "resolve", "k": k_power, "n_reps": reps, "power": s.frame.power(k_power),
                    "point_root_gap": gap})
        if gap <= max(2, k_power // 50) or reps >= max_reps:
            break
        reps = min(4 * reps, max_reps)
        s.frame.evaluate(_grid(max(k_lo, k_power - 2 * gap - 4), stretch_of(k_power, s.frame.k_frame)[-1], 40), reps)
    resolved = s.ok(k_power)

    # 3. the false-pass rate over the nuisance domain at K; power re-checked after any raise
    binding = "power"
    fp: dict[str, Any] = {"checked": False}
    k_final = k_power
    fp_generated = 0
    if check_false_pass:
        gate = FalsePassGate(method, trials=trials, margin=margin, rho_max=rho_max, alpha=alpha, policy=policy,
                             seed=seed, looks=looks, sampler=sampler, cap=min(max_clusters, MAX_RAISE * k_power),
                             log=log, say=say, executor=executor)
        first = None
        for _ in range(8):
            cert = gate.certificate(k_final)
            first = first or cert
            if cert.verdict == UNDETERMINED:
                raise ValueError(undetermined_text(cert))
            if cert.verdict == EXCEEDS:  # a larger K, proposed by the screen, is certified next round
                k_final = gate.raise_from(k_final)
                binding = "false_pass"
                continue
            fp = {**cert_payload(cert), "checked": True}
            if first is not cert:
                fp["at_power_k"] = cert_payload(first)
            if k_final == k_power or (k_final <= s.frame.k_frame and all(
                    s.ok(j) for j in _evaluated(s, stretch_of(k_final, s.frame.k_frame), reps))):
                break
            k_next = s.answer(reps, k_final, log, say)  # power re-checked above the raised K
            if k_next == k_final:
                break
            k_final = k_next
        else:
            raise ValueError("no K meets both the power target and the false-pass limit after 8 alternations")
        fp_generated = gate.generated

    # 4. what is reported at the answer
    power_at = _report(s, k_final, ci_level)
    if power_at["power"] < power or (power_at["exact"] is False and power_at["ci_lower"] < power):
        raise ValueError(f"internal check failed: power at K={k_final} is {power_at['power']:.4f} < {power}")
    try:
        below = _report(s, k_final - 1, ci_level) if k_final - 1 >= k_lo and k_final - 1 in s.frame.counts else {}
    except SizingStopped:  # the answer is complete: K - 1 is reported as simulated
        below = s.frame.point(k_final - 1, ci_level)
    f = s.frame
    curve_ks = sorted(set(_grid(k_lo, f.k_frame, 30)) | {k for k in (k_final, k_final - 1, k_power) if k_lo <= k <= f.k_frame})
    try:
        f.evaluate(curve_ks, min(reps, max(initial_reps, 4000)))
    except SizingStopped:  # the answer is complete: the curve is drawn from the K evaluated so far
        curve_ks = [k for k in curve_ks if f.counts.get(k, [0, 0])[0] > 0]
    curve = curve_dataset(f, curve_ks, ci_level)
    inputs = {"method": method.name, "margin": margin, "difference": difference, "power": power, "alpha": alpha,
              "trials_per_cluster": trials, "baseline": baseline, "discordance": discordance, "rho": rho,
              "rho_max": rho_max, "looks": looks, "seed": seed, "ci_level": ci_level, "initial_reps": initial_reps,
              "max_reps": max_reps, "sampler": f.sampler}
    from studies.datasets import make_attrs, method_identity

    curve.attrs.update(make_attrs(
        "sizing", title=f"power curve of {method.name} (common random numbers: prefixes of one frame)",
        spec_json=_json(inputs), methods=[method_identity(method)], seed=seed, ci_level=ci_level,
        inputs=_json(inputs), analytic=_json(an), chosen_clusters=k_final, power_clusters=k_power,
        k_frame=f.k_frame, sampler=f.sampler))
    ks = stretch_of(k_final, f.k_frame)
    stretch = {"from": ks[0], "to": ks[-1], "evaluated": len(ks),
               "min_power_bound": min(f.lower(j, ci_level) for j in ks if j in f.counts)}
    return SizingResult(inputs=inputs, analytic=an, clusters=k_final, power_clusters=k_power,
                        trials_total=k_final * trials, power_at_k=power_at, power_at_k_minus_1=below,
                        resolved=resolved, binding=binding, false_pass=fp, search_log=log, curve=curve,
                        seconds=time.perf_counter() - t0,
                        replications_generated=s.generated + f.replications_generated + fp_generated,
                        method_identity=method.identity.as_dict(), stretch=stretch)


def _evaluated(s: _Search, ks: list[int], reps: int) -> list[int]:
    s.frame.evaluate(ks, reps)
    return ks


def _report(s: _Search, k: int, level: float) -> dict[str, Any]:
    pt = s.frame.point(k, level)
    e = s.exact_power(k)
    if e is not None:
        pt = {**pt, "simulated": pt["power"], "power": e, "exact": True}
    return pt


def _json(x) -> str:
    import json
    return json.dumps(x, default=float)


__all__ = ["analytic_pairs", "analytic_clusters", "analytic_start", "restricted_p10", "design_effect", "variance_kind",
           "size", "SizingResult", "SizingStopped", "StepBudget", "PowerFrame", "look_schedule", "plot_curve",
           "save_sizing", "stretch_of", "EXCEEDS"]
