"""Exact operating characteristics: the method's own kernel on enumerated tables.

For a scenario and a method, :func:`exact_engine` picks the first engine that applies
(``simlab.exact`` explains why each is exact, ``studies.exact.probes`` checks the method):

1. ``unit``    -- every cluster has at most one trial pair and the method ignores the
   order of clusters: the pooled law (``simlab.exact.pooled``) is the law of the
   multiset of cluster tables; one representative K-cluster table per state.
   Any rho, label noise and loss.
2. ``pooled``  -- the method is a function of the pooled table: the same law, each
   state as a one-cluster table.
3. ``moments`` -- the method is a function of the cluster means' sum and sum of
   squares (``clustered_normal``, ``cluster_t``): ``simlab.exact.moments``, one
   representative table per ``(S1, S2)``; fixed cluster sizes, no loss.

:func:`exact_measures` weights the kernel's per-state outputs by the state
probabilities: pass / fail / inconclusive probabilities; coverage and the lower-bound
miss rate among states with an interval; the mean, bias and SD (the "empirical SE") of
finite estimates; the mean of finite widths -- the same definitions the simulator's
tallies use, with no Monte Carlo error.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from methods.judged import needs_calibration
from simlab.exact import ExactUnsupported, cluster_laws
from simlab.exact.cluster_pmf import cluster_sizes, law_has_loss
from simlab.exact.moments import DEFAULT_MAX_BYTES, difference_law, moment_distribution, moment_tables
from simlab.exact.pooled import DEFAULT_MAX_STATES, pooled_distribution, unit_cluster_tables
from simlab.scenario import PairedScenario

from studies.exact.probes import PROBE_REPS, probe, probe_tables

EXACT_MEASURES = ("pass_rate", "fail_rate", "inconclusive_rate", "coverage", "lower_miss_rate", "bias",
                  "empirical_se", "mean_width", "p_interval")
BLOCK = 8192
PILOT = 256
GRID_MAX_SECONDS = 60.0  # exact_grid: an evaluation whose declared cost is over this is dropped
_DIST_CACHE: dict[tuple[str, str], tuple] = {}


@dataclass(frozen=True)
class ExactResult:
    engine: str
    states: int
    true_value: float
    pass_rate: float
    fail_rate: float
    inconclusive_rate: float
    p_interval: float
    coverage: float
    lower_miss_rate: float
    mean_estimate: float
    bias: float
    empirical_se: float
    mean_width: float

    def as_dict(self) -> dict:
        return asdict(self)


def _moments_surely_over_limit(laws) -> bool:
    """Whether ``moment_distribution`` would surely refuse: after the j-th cluster whose
    difference takes two values or more, at least j + 1 states (S1 takes j + 1 values) of 16
    bytes each are kept, and its sparse path refuses once their sum passes
    ``DEFAULT_MAX_BYTES`` (its dense path needs more still).  Decided before the probes,
    which at 10^5 clusters of 3 trials took 48 s only to reach that refusal."""
    spread: dict[int, bool] = {}  # identical clusters share one law object
    n = 0
    for law in laws:
        key = id(law)
        if key not in spread:
            spread[key] = int((difference_law(law)[1] > 0).sum()) >= 2
        n += spread[key]
    return 16 * (n * (n + 1) // 2 + n) > DEFAULT_MAX_BYTES


PROBE_MAX_SECONDS = 2.0  # the probes of one method at one design; beyond it the exact engines are not tried


def probe_seconds(method, sizes: np.ndarray) -> float:
    """What the probes of :func:`exact_engine` cost at clusters of ``sizes`` (``methods.analysis_cost``
    of the probe tables, three batches: the tables and two transforms).  A bootstrap or
    posterior grid at 5000 x 11 probed silently for minutes before any estimate."""
    from methods import analysis_cost

    # the tables the probes run where the cost depends on the counts; a linear cost needs only their shape
    tables = probe_tables(sizes, False) if getattr(method, "cost", None) is not None else \
        np.zeros((PROBE_REPS, len(sizes), 4))
    return 3.0 * analysis_cost(method, tables).seconds


def exact_engine(scenario: PairedScenario, method, alpha: float = 0.025) -> tuple[str | None, str]:
    """``(engine, reason)``: the engine that is exact for this scenario and method, or
    ``(None, why not)``."""
    if needs_calibration(method):
        return None, "the method also reads judge calibration sets, which the exact engines do not enumerate"
    if getattr(method, "calibration", None) == "least-favourable" and cluster_sizes(scenario).max() > 1:
        # it weighs how the pairs fall into clusters (no exact engine here enumerates that), and
        # each probe design would cost a construction of seconds (dm_likelihood_ratio)
        return None, "the method sees the clusters' compositions, which the exact engines do not enumerate"
    try:
        sizes = cluster_sizes(scenario)
        # the unit and pooled engines hold (N + 1)^3 pooled tables or more (pooled_distribution):
        # where that is over their limit, say so before the laws and probes of K clusters (at
        # K = 10^5 x 1 these took 28 s only to reach the same refusal)
        pairs = int(sizes.sum())
        pooled_feasible = (pairs + 1) ** 3 <= DEFAULT_MAX_STATES
        if not pooled_feasible and sizes.max() <= 1:
            return None, (f"pooled table of {pairs} pairs needs at least {(pairs + 1) ** 3:,} DP states "
                          f"(limit {DEFAULT_MAX_STATES:,})")
        laws = cluster_laws(scenario)
    except ExactUnsupported as exc:
        return None, str(exc)
    loss = any(law_has_loss(law) for law in laws)
    probing = probe_seconds(method, sizes)
    if probing > PROBE_MAX_SECONDS:  # a probe is a batch of the method, unbounded and deaf to Ctrl-C
        return None, (f"not probed: running the method on the probes' {PROBE_REPS} tables of this design would "
                      f"take an estimated {probing:.3g} s (its declared cost)")
    why = []
    if sizes.max() <= 1:
        if probe("order", method, alpha, sizes, loss):
            return "unit", "one trial per cluster; method invariant to cluster order"
        why.append("depends on the order of clusters")
    if not pooled_feasible:
        why.append(f"the pooled table of {pairs} pairs is over the exact engine's {DEFAULT_MAX_STATES:,} states")
    elif probe("pooled", method, alpha, sizes, loss):
        return "pooled", "method is a function of the pooled table"
    else:
        why.append("uses more than the pooled table")
    if sizes.max() > 1:
        if loss:
            why.append("cluster sizes vary through pair loss")
        elif _moments_surely_over_limit(laws):
            why.append(f"the cluster-moment engine's states for {int((sizes > 0).sum())} clusters are over its "
                       f"{DEFAULT_MAX_BYTES / 1e6:,.0f} MB")
        elif not probe("order", method, alpha, sizes, False):  # moments forget the order
            why.append("depends on the order of clusters")
        elif probe("moments", method, alpha, sizes, False):
            return "moments", "method is a function of the cluster means' moments; fixed sizes"
        else:
            why.append("uses more than the cluster means' moments")
    return None, "method " + "; ".join(why)


def _distribution(scenario: PairedScenario, engine: str):
    key = (scenario.key, engine)
    if key in _DIST_CACHE:
        return _DIST_CACHE[key]
    laws = cluster_laws(scenario)
    if engine in ("unit", "pooled"):
        tables, probs = pooled_distribution(laws)
        dist = (engine, tables, probs)
    else:
        d, probs, _ = moment_distribution(laws, cluster_sizes(scenario))
        dist = (engine, d, probs)
    if len(_DIST_CACHE) > 32:
        _DIST_CACHE.clear()
    _DIST_CACHE[key] = dist
    return dist


def _state_tables(scenario: PairedScenario, dist, lo: int, hi: int) -> np.ndarray:
    engine, states, _ = dist
    if engine == "unit":
        return unit_cluster_tables(states[lo:hi], scenario.clusters)
    if engine == "pooled":
        return np.ascontiguousarray(states[lo:hi, None, :])
    return moment_tables(states[lo:hi], cluster_sizes(scenario))


def _weighed(r, w: np.ndarray, theta: float) -> np.ndarray:
    """The state-weighted sums :func:`exact_measures` accumulates from one block's results."""
    has_int = ~(np.isnan(r.lower) | np.isnan(r.upper))
    est_ok = np.abs(r.estimate) < 32768.0
    width = r.upper - r.lower
    wid_ok = has_int & (np.abs(width) < 32768.0)
    e = np.where(est_ok, r.estimate, 0.0)
    wd = np.where(wid_ok, width, 0.0)
    return np.array([np.sum(w[r.status == 1]), np.sum(w[r.status == 0]), np.sum(w[r.status == 2]),
                     np.sum(w[has_int]), np.sum(w[has_int & (r.lower <= theta) & (theta <= r.upper)]),
                     np.sum(w[has_int & (r.lower > theta)]),
                     np.sum(w[est_ok]), np.sum(w * e), np.sum(w * e * e), np.sum(w[wid_ok]), np.sum(w * wd)])


def exact_measures(scenario: PairedScenario, method, margin: float, alpha: float = 0.025,
                   engine: str | None = None, max_seconds: float | None = None) -> ExactResult:
    """Exact operating characteristics of ``method`` (a ``FixedMethod``) on ``scenario``.

    Raises :class:`ExactUnsupported` when no engine applies, or when ``max_seconds`` is
    given and the method's declared cost of its states (:func:`declared_seconds`) is over it
    (slow Bayesian or resampling kernels on large state spaces).  The budget is decided from
    declared costs, never from a clock, so whether a value is exact does not depend on the
    machine's load (it did: the first states were timed)."""
    if engine is None:
        engine, why = exact_engine(scenario, method, alpha)
        if engine is None:
            raise ExactUnsupported(f"no exact engine for {method.name!r} here: {why}")
    if max_seconds is not None:
        states, declared = state_count(scenario, engine), declared_seconds(scenario, method, engine)
        if declared > max_seconds:
            raise ExactUnsupported(f"exact evaluation of {method.name!r} over about {states:,.0f} states has a declared "
                                   f"cost of about {declared:.3g} s (budget {max_seconds:g} s)")
    dist = _distribution(scenario, engine)
    probs = dist[2]
    theta = method.true_value(scenario)
    acc = np.zeros(11)
    bounds = [0] + list(range(min(PILOT, probs.size), probs.size, BLOCK)) + [probs.size]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        acc += _weighed(method.batch(_state_tables(scenario, dist, lo, hi), margin, alpha), probs[lo:hi], theta)
    p_pass, p_fail, p_inc, p_int, p_cov, p_miss, p_est, s_e, s_e2, p_wid, s_w = acc
    mean = s_e / p_est if p_est > 0 else math.nan
    var = max(s_e2 / p_est - mean * mean, 0.0) if p_est > 0 else math.nan
    return ExactResult(
        engine=engine, states=int(probs.size), true_value=float(theta),
        pass_rate=float(p_pass), fail_rate=float(p_fail), inconclusive_rate=float(p_inc),
        p_interval=float(p_int),
        coverage=float(p_cov / p_int) if p_int > 0 else math.nan,
        lower_miss_rate=float(p_miss / p_int) if p_int > 0 else math.nan,
        mean_estimate=float(mean), bias=float(mean - theta), empirical_se=float(math.sqrt(var)),
        mean_width=float(s_w / p_wid) if p_wid > 0 else math.nan)


def exact_grid(points, refs, resolved, margins, alphas, max_seconds: float | None = GRID_MAX_SECONDS,
               advance=None) -> dict[str, np.ndarray]:
    """Exact measures over a study grid: arrays ``[point, method, margin, alpha]``
    (NaN where no engine applies or it would exceed ``max_seconds`` per evaluation) and
    ``engine[point, method]`` ('' where none).  ``advance(1)`` after each (point, method)."""

    P, M = len(points), len(refs)
    out = {name: np.full((P, M, len(margins), len(alphas)), np.nan) for name in EXACT_MEASURES}
    engines = np.full((P, M), "", dtype=object)
    for p, (_, scenario) in enumerate(points):
        for i, method in enumerate(resolved):
            for c, alpha in enumerate(alphas):
                engine, _ = exact_engine(scenario, method, alpha)
                if engine is None:
                    continue
                if max_seconds is not None and declared_seconds(scenario, method, engine) > max_seconds:
                    continue   # decided once for every margin (the declared cost does not depend on it)
                for j, margin in enumerate(margins):
                    try:
                        res = exact_measures(scenario, method, margin, alpha, engine)
                    except ExactUnsupported:
                        engine = None
                        break
                    for name in EXACT_MEASURES:
                        out[name][p, i, j, c] = getattr(res, name)
                if engine is not None:
                    engines[p, i] = engine
            if advance is not None:
                advance(1)
    out["engine"] = engines
    return out


# ---------------------------------------------------------------- what exact_grid costs, before it runs
# The exact law's DP, per step of a state over a cluster value (measured on 2 busy cores, study
# cluster_valid, rho 0.1): the cluster-moment DP at 100 x 3 took 2.5-4.4 s for 1.3e8 steps (with its
# back-pointers and expansion: 20-35 ns a step); the pooled DP at 30 x 3, 0.15 s for 1.8e7 (8 ns).
MOMENT_DP_SECONDS = 3.5e-8
POOLED_DP_SECONDS = 1e-8
_PER_STATE: dict[tuple, float] = {}


def _laws_by_id(laws) -> dict[int, tuple]:
    return {id(law): law for law in laws}   # identical clusters share one law object


def state_count(scenario: PairedScenario, engine: str) -> float:
    """States of ``engine``'s exact law at ``scenario``, before it is built (an upper estimate:
    states whose probability underflows are dropped by the DP).  ``unit``/``pooled``: the pooled
    tables of its N pairs over the c cells some cluster can fill, ``C(N + c - 1, c - 1)`` (with
    pair loss the totals below N too, ``C(N + c, c)``) -- 129,766 at 30 x 3 with every cell
    possible, 4,186 with one never filled, as built.  ``moments``: the ``(S1, S2)`` pairs of n
    clusters' scaled differences in ``[vmin, vmax]``: for each S1, the S2 of its parity between
    ``S1^2 / n`` and the chord ``n (vmin^2 + (S1/n - vmin)(vmin + vmax))`` -- 180,000 against
    172,259 built at 100 x 3, 2,025 against 1,802 at 30 x 3 with one-sided differences."""
    laws = cluster_laws(scenario)
    if engine in ("unit", "pooled"):
        used = np.zeros(4, bool)
        total = 0
        for law in laws:
            tables, probs = law
            used |= (tables[probs > 0] > 0).any(axis=0)
            total += int(tables.sum(axis=1).max())
        c = int(used.sum())
        if any(law_has_loss(law) for law in _laws_by_id(laws).values()):
            return float(math.comb(total + c, c))
        return float(math.comb(total + c - 1, c - 1)) if c else 1.0
    sizes = cluster_sizes(scenario)
    active = np.flatnonzero(sizes > 0)
    n = active.size
    if n == 0:
        return 1.0
    scale = _common_size(sizes[active])
    lo, hi = math.inf, -math.inf
    spread = {}
    for k in active:
        key = (id(laws[k]), int(sizes[k]))
        if key not in spread:
            d_vals, d_probs = difference_law(laws[k])
            v = d_vals[d_probs > 0] * (scale // int(sizes[k]))
            spread[key] = (float(v.min()), float(v.max())) if v.size else (0.0, 0.0)
        lo, hi = min(lo, spread[key][0]), max(hi, spread[key][1])
    s = np.arange(n * lo, n * hi + 1)
    chord = n * (lo * lo + (s / n - lo) * (lo + hi))
    return float(np.sum(np.floor(np.maximum(chord - s * s / n, 0.0) / 2.0) + 1.0))


def _common_size(sizes) -> int:
    out = 1
    for m in np.unique(sizes):
        out = out * int(m) // math.gcd(out, int(m))
    return out


def distribution_seconds(scenario: PairedScenario, engine: str) -> float:
    """What building ``engine``'s exact law at ``scenario`` (``_distribution``) costs: the DP's
    steps (every state so far times each value of the next cluster) at the rates measured."""
    laws = cluster_laws(scenario)
    if engine in ("unit", "pooled"):
        four_d = any(law_has_loss(law) for law in _laws_by_id(laws).values())
        steps, cur = 0.0, 0
        for tables, probs in laws:
            steps += (math.comb(cur + 4, 4) if four_d else math.comb(cur + 3, 3)) * int(np.count_nonzero(probs))
            cur += int(tables.sum(axis=1).max())
        return POOLED_DP_SECONDS * steps
    sizes = cluster_sizes(scenario)
    active = np.flatnonzero(sizes > 0)
    scale = _common_size(sizes[active]) if active.size else 1
    values = {}
    steps = 0.0
    for step, k in enumerate(active):
        if id(laws[k]) not in values:
            values[id(laws[k])] = int(np.count_nonzero(difference_law(laws[k])[1] > 0))
        steps += (2 * step * scale + 1) * (step * scale * scale + 1) * values[id(laws[k])]
    return MOMENT_DP_SECONDS * steps


def declared_seconds(scenario: PairedScenario, method, engine: str) -> float:
    """What ``exact_measures`` declares an evaluation of ``engine``'s law costs: its states
    (:func:`state_count`, an upper estimate) times one table's declared cost
    (``methods.analysis_cost`` of the probe tables at these cluster sizes).  No clock: the same
    on every machine, so the exact budget of a grid or a command decides alike everywhere
    (measured against the kernels on 2 cores: 0.2-3.4 times the time taken, once the Bayesian
    quadratures declared their per-table cost).  A one-off part of the method's cost (a
    calibrated level's E+M table) is counted once, not per state
    (``methods.analysis_cost.fixed_and_per_table``)."""
    from methods import fixed_and_per_table

    once, per = fixed_and_per_table(method, probe_tables(cluster_sizes(scenario), False))
    return once + per * max(state_count(scenario, engine) - 1, 0)


def state_seconds(scenario: PairedScenario, method, engine: str, margin: float, alpha: float) -> float:
    """Seconds a state of ``engine``'s law costs ``exact_measures``: its representative table built,
    the method's kernel run on it and its outputs weighed, timed on about ``PILOT`` states made from
    the probe tables (the method's declared cost keeps the pilot near half a second).  Cached per
    method, engine and design."""
    sizes = cluster_sizes(scenario)
    laws = cluster_laws(scenario)
    loss = any(law_has_loss(law) for law in _laws_by_id(laws).values())
    key = (id(method), method.identity.source_sha256, engine, tuple(int(s) for s in sizes), loss, float(alpha))
    if key in _PER_STATE:
        return _PER_STATE[key]
    declared = probe_seconds(method, sizes) / (3 * PROBE_REPS)
    n = int(min(PILOT, max(PROBE_REPS, 0.5 / max(declared, 1e-12))))
    tables = probe_tables(sizes, loss if engine != "moments" else False)
    tables = np.tile(tables, (-(-n // len(tables)), 1, 1))[:n]
    if engine == "moments":
        states = tables[:, :, 2].astype(np.int64) - tables[:, :, 1]
    else:
        states = tables.sum(axis=1).astype(np.int32)
    dist = (engine, states, np.full(n, 1.0 / n))
    theta = method.true_value(scenario)
    method.batch(_state_tables(scenario, dist, 0, 1), margin, alpha)   # loaded outside the timing
    t0 = time.perf_counter()
    _weighed(method.batch(_state_tables(scenario, dist, 0, n), margin, alpha), dist[2], theta)
    _PER_STATE[key] = (time.perf_counter() - t0) / n
    return _PER_STATE[key]


def exact_grid_seconds(points, resolved, margins, alphas, max_seconds: float | None = GRID_MAX_SECONDS) -> float:
    """What :func:`exact_grid` will take on this process, priced before it runs: at each point,
    for each method and level, the engine that applies (``exact_engine``: its probes run here,
    bounded and cached, so the grid does not pay them again); each law built once (its DP's
    steps, :func:`distribution_seconds`), and each evaluation its states (:func:`state_count`)
    times what one costs (:func:`state_seconds`), for every margin.  An evaluation whose
    declared cost is over ``max_seconds`` is dropped by the grid before its law is built
    (:func:`declared_seconds`): priced at nothing."""
    total, built = 0.0, set()
    for _, scenario in points:
        for method in resolved:
            for alpha in alphas:
                engine, _ = exact_engine(scenario, method, alpha)
                if engine is None:
                    continue
                if max_seconds is not None and declared_seconds(scenario, method, engine) > max_seconds:
                    continue
                if (scenario.key, engine) not in built:
                    built.add((scenario.key, engine))
                    total += distribution_seconds(scenario, engine)
                total += state_seconds(scenario, method, engine, margins[0], alpha) * state_count(scenario, engine) \
                    * len(margins)
    return total
