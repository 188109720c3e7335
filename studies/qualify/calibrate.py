"""Calibration at the design: the largest nominal level at which a method keeps its
worst-case false-pass rate at or below ``alpha`` over the nuisance domain of exactly one
design (K clusters of M trials, margin, look schedule, rho up to rho_max), then a
certificate for the calibrated method (``DecisionMethod.calibrated``; its name
``METHOD@alpha=LEVEL`` is what a manifest registers).

Three routes, picked by what applies:

* **exact E+M** (the method declares ``calibration = "exact-em"``: ``dm_score``): the nominal
  level is the E-step level of an exact E+M critical-value table for the design (Lloyd 2008),
  and ``studies.exact.convolution.calibrate_em`` finds the largest one whose exact worst
  false-pass over a dense (discordance, rho) grid is <= ``alpha``; the calibrated method
  ``dm_score@alpha=L`` is then certified by the exact engine that applies at the design
  (threshold ``alpha``) and refused unless qualified.  Nothing random is searched.

* **exact** (``studies.qualify.certify.certification_engine`` finds one: independent pairs,
  or equal-size Dirichlet-multinomial clusters, and a method that sees only the pooled
  discordant counts): the worst case as a function of the nominal level is computed without
  Monte Carlo error at every candidate level, the largest level whose exact worst case is
  <= ``alpha`` is taken, and the certificate at that level is the exact one (with a proven
  bound between nodes for exact-discordant, a dense exact grid for exact-convolution).  Valid
  because nothing random was searched.
* **simulation**: (1) *search* -- every null scenario of the design's nuisance grid (the
  certificate's grid: rho on 0..rho_max, discordance dense near the margin, baseline unless
  the method is provably baseline-free -- ``probes.probe("concordant")`` with perfect
  labels -- and every label-noise model) is simulated once on a *search stream* (seed
  ``seed + SEARCH_OFFSET``); on those same tables the method is decided at every candidate
  level (common random numbers: each scenario's pass count is monotone in the level), and the
  largest level whose worst scenario rate is at most ``target`` (default ``0.96 alpha``: room
  for the certificate's Monte Carlo bound) is kept; a second, finer set of levels between
  the bracketing ones refines it on the same tables.  (2) *certify* -- the calibrated method
  is certified at the design on the policy's own stream (seed ``seed``), which no step of the
  search saw, with threshold ``alpha`` itself (``allowed_excess = 1``): every scenario's staged
  Clopper-Pearson upper bound must be <= alpha.  The level was fixed before a single
  certification draw, so the certificate is the same valid statement it is for any method --
  the search cannot have tuned it to the certification stream's noise -- and it is attempted
  once (no re-testing after more replications).  If it is not ``qualified`` the calibration
  is refused, with the worst scenario named.

* **least-favourable** (the method declares ``calibration = "least-favourable"``:
  ``dm_likelihood_ratio``, whose nominal level is the level its least-favourable mixture is
  built at): the simulation route on a short list of candidate levels around alpha
  (``LFD_LEVEL_FRACTIONS``; each level is a construction of its own, so the list is short),
  a larger search (``LFD_SEARCH_REPLICATIONS``) and a search target of ``0.976 alpha``, then
  the certificate with up to ``LFD_MAX_REPLICATIONS`` per scenario.  A least-favourable test
  holds its false-pass rate near its level on much of the null boundary -- that is what
  least favourable means -- so a certificate at threshold alpha needs fine Monte Carlo
  resolution at many scenarios.  The same two streams make it valid.

A sequential method is calibrated the same way: its nominal level runs through its own
boundary (per-look levels of a wrapper, a spending function's alpha, a likelihood-ratio
threshold 1/alpha), and promotion counts as a pass.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from methods.qualification import QUALIFIED, ScenarioPoint
from simlab.scenario import LabelNoise

SEARCH_OFFSET = 7919          # the search stream's seed is the policy seed + this (a different stream)
DEFAULT_SEARCH_REPLICATIONS = 20_000
COARSE_LEVELS = 12            # exact route: candidate levels, geometric in [alpha / 20, alpha]
FINE_LEVELS = 12              # exact route: then between the bracketing coarse levels
SEARCH_LEVELS = 96            # simulation route: candidate levels, geometric in [alpha / 20, alpha] (ratio 1.032)
# least-favourable route: candidate levels (fractions of alpha; the construction's own Monte Carlo
# error leaves its rates near, not at, its level), search replications, search target and the
# certificate's largest stage (2000 x 4^5: a rate of 0.0246 is then qualified at alpha 0.025)
LFD_LEVEL_FRACTIONS = (0.92, 0.95, 0.98, 1.01, 1.04, 1.07)
LFD_SEARCH_REPLICATIONS = 200_000
LFD_TARGET_FRACTION = 0.976
LFD_MAX_REPLICATIONS = 2_048_000


@dataclass(frozen=True)
class Calibration:
    """The outcome of :func:`calibrate`: the calibrated method, its certificate, and the search."""
    method: Any
    certificate: Any
    nominal_alpha: float
    target: float
    search: dict[str, Any]
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method.label, "statistical_method": manifest_name(self.method),
                "nominal_alpha": self.nominal_alpha, "target": self.target,
                "alpha": self.certificate.alpha, "verdict": self.certificate.verdict,
                "certificate_sha256": self.certificate.certificate_sha256, "engine": self.certificate.engine,
                "search": self.search, "seconds": self.seconds}


def manifest_name(method) -> str | None:
    """The one string a manifest names ``method`` by (``registry.get`` of it has the same identity),
    or None when no name finds it (its options differ from the registered method's)."""
    from methods import registry

    name = registry.reference(method)
    try:
        return name if registry.get(name).identity == method.identity else None
    except KeyError:
        return None


def _calibrate_exact_em(base, design, alpha: float, cert_args: dict, say: Callable[[str], None],
                        t0: float) -> Calibration:
    """The exact E+M route (module docstring): ``calibrate_em``, then the exact certificate."""
    from studies.exact.convolution import calibrate_em
    from studies.qualify.certify import certification_engine, certify

    engine, why = certification_engine(base, design, alpha)
    if engine is None:
        raise ValueError(f"refused: {base.name} is calibrated by its exact E+M table and certified exactly, and no "
                         f"exact engine applies at this design: {why}")
    say(f"calibrate {base.name} at K={design.clusters}, M={design.trials}, margin={design.margin:g}, "
        f"rho <= {design.rho_max:g}: exact E+M, certified by {engine} ({why})")
    em = calibrate_em(base, design.clusters, design.trials, design.margin, design.rho_max, alpha,
                      discordance=tuple(design.discordance), progress=say)
    say(f"E-step level {em.level:.6g}: exact worst false-pass {em.worst:.6g} on {em.grid_points} grid points; "
        "certifying it")
    cert = certify(em.method, design.clusters, design.trials, design.margin, design.rho_max, None, engine="exact",
                   **cert_args)
    if cert.verdict != QUALIFIED:
        w = cert.worst_point
        raise ValueError(f"refused: the calibrated {em.method.label} is {cert.verdict} on its exact certificate "
                         f"({cert.engine}: discordance {w.discordance:g}, rho {w.rho:g}, rate {w.rate:.6g} vs alpha "
                         f"{alpha:g})")
    q, rho = em.worst_point
    search = {"route": "exact-em", "engine": engine, "level": em.level, "level_range": list(em.level_range),
              "worst": em.worst, "worst_point": {"discordance": q, "rho": rho}, "grid_points": em.grid_points,
              "calibrate_seconds": em.seconds, "why": why}
    return Calibration(em.method, cert, em.level, alpha, search, time.perf_counter() - t0)


def _levels(lo: float, hi: float, n: int) -> list[float]:
    return [float(x) for x in np.geomspace(lo, hi, n)]


class _LevelSearch:
    """Row source and tally at once: for every replication, the smallest candidate level at
    which the method passes, by bisection over the sorted levels -- about log2(J) decisions
    per replication instead of J.  Each block of the scenario's rows is split by the level
    its rows are to be decided at next; the tally's verdicts (pass or not) steer the next
    split.  Exact when passing is monotone in the level (a pass at one level stays a pass
    at every larger one -- nested intervals); the certificate re-simulates the calibrated
    method itself, so a method that breaks monotonicity is only calibrated less well, never
    certified wrongly."""

    def __init__(self, rows, n_levels: int):
        self.rows, self.J = rows, n_levels
        self.first = []   # per block: the first passing level index (J = none)

    def blocks(self, start, stop, methods):
        from studies.engine.evaluate import Block

        for base in self.rows.blocks(start, stop, methods):
            n = base.rows
            self.lo, self.hi = np.zeros(n, np.int64), np.full(n, self.J, np.int64)
            while True:
                active = np.flatnonzero(self.lo < self.hi)
                if active.size == 0:
                    break
                mid = (self.lo[active] + self.hi[active]) // 2
                for level in np.unique(mid):
                    rows = active[mid == level]
                    if base.stats is not None:
                        yield Block(base.clusters, stats=np.ascontiguousarray(base.stats[rows]), size=base.size,
                                    tag=rows, alphas=(int(level),))
                    else:  # a judge-corrected method's calibration sets go with their rows
                        cal = None if base.calibration is None else np.ascontiguousarray(base.calibration[rows])
                        yield Block(base.clusters, tables=np.ascontiguousarray(base.tables[rows]), calibration=cal,
                                    tag=rows, alphas=(int(level),))
            self.first.append(self.lo.copy())

    def __call__(self, i, j, c, res, block):
        passed = res.status == 1
        rows = block.tag
        self.hi[rows[passed]] = c
        self.lo[rows[~passed]] = c + 1

    def counts(self) -> np.ndarray:
        """Passes at each level: replications whose first passing level is at or below it."""
        first = np.concatenate(self.first) if self.first else np.zeros(0, np.int64)
        return np.cumsum(np.bincount(first, minlength=self.J + 1)[:self.J])


def _search_task(policy, spec: ScenarioPoint, estimand: str, key: tuple, levels: tuple[float, ...], seed: int,
                 replications: int) -> np.ndarray:
    """Pass counts of the base method at every level on one scenario's search stream (the
    engine's one loop over a bisecting row source)."""
    from simlab.sampling import table_source
    from studies.engine.evaluate import ScenarioRows, evaluate
    from studies.qualify.scenarios import look_schedule, resolve_method, scenario_of

    method = resolve_method(key)
    source = table_source(scenario_of(policy, spec, estimand), seed, policy.sampler)
    search = _LevelSearch(ScenarioRows(source), len(levels))
    evaluate(search, 0, replications, [method], (spec.margin,), levels, search, schedule=look_schedule(policy))
    return search.counts()


def _search(method, policy, estimand: str, levels: list[float], seed: int, replications: int, executor,
            say: Callable[[str], None]) -> tuple[np.ndarray, list[ScenarioPoint]]:
    from studies.qualify.scenarios import grid_specs, method_key

    specs = grid_specs(policy, estimand)
    key = method_key(method)
    payloads = [(policy, s, estimand, key, tuple(levels), seed, replications) for s in specs]
    rates = np.zeros((len(specs), len(levels)))
    done = 0
    for i, counts in executor.imap(_search_task, payloads):
        rates[i] = counts / replications
        done += 1
        if done == len(specs) or done % max(1, len(specs) // 5) == 0:
            say(f"calibration search: {done}/{len(specs)} scenarios x {len(levels)} levels")
    return rates, specs


def _pick(levels: list[float], worst: np.ndarray, target: float) -> int | None:
    ok = [j for j in range(len(levels)) if worst[j] <= target]
    return max(ok) if ok else None


def calibrate(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0, looks: int | None = None, *,
              alpha: float = 0.025, target: float | None = None, label_noise: tuple[LabelNoise, ...] = (LabelNoise(),),
              baseline: tuple[float, float] = (0.5, 1.0), discordance: tuple[float, float] = (0.01, 0.5),
              search_replications: int | None = None, seed: int = 20261129,
              mc_confidence: float = 0.95, min_replications: int = 2000, max_replications: int = 128_000,
              validity_days: int = 365, n_jobs: int = 1, executor=None, sign_key=None,
              progress: Callable[[str], None] | None = None, deadline: float | None = None) -> Calibration:
    """Calibrate ``method`` (a name or method object; an already calibrated method is
    calibrated afresh from its base) at exactly this design; see the module docstring.
    ``deadline`` (``time.monotonic()``): the simulated certification stops there
    (``DeadlineReached``); the search before it is priced by ``calibrate_estimate``."""
    from dataclasses import replace

    from methods import registry
    from methods.qualification import CertifiedDesign
    from studies.engine.executor import as_executor
    from studies.qualify.certify import certification_engine, certify, is_baseline_free, sim_policy

    t0 = time.perf_counter()
    say = progress or (lambda s: None)
    base = registry.get(method) if isinstance(method, str) else method
    base = replace(base, nominal_alpha=None)
    lfd = getattr(base, "calibration", None) == "least-favourable"
    given_target = target is not None
    if target is None:
        target = (LFD_TARGET_FRACTION if lfd else 0.96) * alpha
    target = float(target)
    if search_replications is None:
        search_replications = LFD_SEARCH_REPLICATIONS if lfd else DEFAULT_SEARCH_REPLICATIONS
    if lfd:
        max_replications = max(max_replications, LFD_MAX_REPLICATIONS)
    if not 0.0 < target <= alpha:
        raise ValueError(f"target must lie in (0, alpha] = (0, {alpha}], got {target!r}")
    if base.sequential and looks is None:
        raise ValueError(f"method {base.name!r} is sequential: give looks")
    if not base.sequential and looks is not None:
        raise ValueError(f"method {base.name!r} is fixed-sample: it takes no looks")
    design = CertifiedDesign(clusters=clusters, trials=trials, margin=margin, rho_max=rho_max, looks=looks,
                             label_noise=tuple(label_noise), baseline=tuple(baseline), discordance=tuple(discordance))
    cert_args = dict(label_noise=tuple(label_noise), baseline=tuple(baseline), discordance=tuple(discordance),
                     alpha=alpha, allowed_excess=1.0, mc_confidence=mc_confidence, min_replications=min_replications,
                     max_replications=max_replications, seed=seed, validity_days=validity_days, n_jobs=n_jobs,
                     executor=executor, sign_key=sign_key, progress=progress, deadline=deadline)
    if getattr(base, "calibration", None) == "exact-em":
        return _calibrate_exact_em(base, design, alpha, cert_args, say, t0)
    exact, why = certification_engine(base, design, alpha)
    levels = _levels(alpha / 20.0, alpha, COARSE_LEVELS)
    if exact is not None:
        say(f"calibrate {base.name} at K={clusters}, M={trials}, margin={margin:g}: {exact} ({why})")
        def exact_at(level: float):
            return certify(base.calibrated(level), clusters, trials, margin, rho_max, looks, engine="exact",
                           **{**cert_args, "progress": None})

        certs = [exact_at(lv) for lv in levels]
        ok = [j for j, c in enumerate(certs) if c.verdict == QUALIFIED]
        if not ok:
            raise ValueError(f"refused: even at nominal level {levels[0]:.4g} the exact worst case is not below "
                             f"{alpha:g} ({certs[0].verdict}, upper {certs[0].proven_upper})")
        j = max(ok)
        hi = levels[j + 1] if j + 1 < len(levels) else alpha
        fine = _levels(levels[j], hi, FINE_LEVELS) if hi > levels[j] else [levels[j]]
        best, cert = levels[j], certs[j]
        for lv in fine:
            c = exact_at(lv)
            if c.verdict == QUALIFIED and lv > best:
                best, cert = lv, c
        worst = [max(p.rate for p in c.points) for c in certs]
        search = {"route": exact, "levels": levels, "worst": worst, "fine_levels": fine, "why": why}
        if given_target:  # it was taken silently: the exact route has no Monte Carlo error to leave room for
            search["target_not_used"] = (f"the target {target:g} is not used: on the exact route the level is the "
                                         f"largest whose exact worst case is at most alpha {alpha:g}")
        return Calibration(base.calibrated(best), cert, best, alpha, search, time.perf_counter() - t0)
    # simulation: the certificate's grid, searched on its own stream
    free = is_baseline_free(base, design, alpha)
    policy = sim_policy(design, alpha, 1.0, mc_confidence, min_replications, max_replications, seed,
                        baseline_free=free, estimand=base.estimand.value)
    estimand = base.estimand.value
    search_seed = seed + SEARCH_OFFSET
    ex, owned = as_executor(executor, n_jobs)
    try:
        say(f"calibrate {base.name} at K={clusters}, M={trials}, margin={margin:g}, rho <= {rho_max:g}: search on "
            f"seed {search_seed}, {search_replications:,} replications per scenario")
        levels = ([round(f * alpha, 6) for f in LFD_LEVEL_FRACTIONS] if lfd else
                  _levels(alpha / 20.0, alpha, SEARCH_LEVELS))
        rates, specs = _search(base, policy, estimand, levels, search_seed, search_replications, ex, say)
        worst = rates.max(axis=0)
        j = _pick(levels, worst, target)
        if j is None:
            raise ValueError(f"refused: at every nominal level down to {levels[0]:.4g} the search's worst scenario "
                             f"rate is above the target {target:.4g} ({worst[0]:.4g})")
        level = levels[j]
    finally:
        if owned:
            ex.close()
    i_worst = int(np.argmax(rates[:, j]))
    calibrated = base.calibrated(level)
    say(f"calibrated nominal level {level:.5g}; certifying on the policy's stream (seed {seed}, never searched)")
    cert = certify(calibrated, clusters, trials, margin, rho_max, looks, engine="simulation",
                   baseline_free=free, **cert_args)
    search = {"route": "least-favourable" if lfd else "simulation", "search_seed": search_seed, "search_replications": search_replications,
              "scenarios": len(specs), "baseline_free": free, "levels": levels, "worst": worst.tolist(),
              "worst_scenario": specs[i_worst].model_dump()}
    if cert.verdict != QUALIFIED:
        w = cert.worst_point
        raise ValueError(f"refused: the calibrated {calibrated.label} is {cert.verdict} on the certification stream "
                         f"(worst scenario baseline {w.baseline:g}, discordance {w.discordance:g}, rho {w.rho:g}: "
                         f"{w.n_pass}/{w.n_reps}, upper bound {w.upper:.4g} vs alpha {alpha:g}); lower --target or "
                         "raise --search-reps")
    return Calibration(calibrated, cert, level, target, search, time.perf_counter() - t0)


__all__ = ["COARSE_LEVELS", "Calibration", "DEFAULT_SEARCH_REPLICATIONS", "FINE_LEVELS", "LFD_LEVEL_FRACTIONS",
           "LFD_MAX_REPLICATIONS", "LFD_SEARCH_REPLICATIONS", "LFD_TARGET_FRACTION", "SEARCH_OFFSET", "calibrate",
           "manifest_name"]
