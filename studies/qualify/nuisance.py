"""Worst-case false-pass rate of a method at ONE design, over the nuisance domain.

The design is ``(clusters K, trials per cluster M, margin m, looks)``; the nuisance is the
baseline pass rate ``b``, the discordance ``q``, the intra-cluster correlation ``rho`` in
``[0, rho_max]`` and the label-noise model.  This is the check ``simlab size`` (and
``simlab recommend``) runs at the K it answers, over the same nuisance domain a
certificate covers (issue 11, items 2 and 5); ``studies.qualify.certify`` may share it.

Null scenarios sit on the null boundary of the estimand the method targets: a difference
of ``-m`` (``p10 = (q + m)/2``, ``p01 = (q - m)/2``), or a loss rate of ``m`` (``p10 = m``,
``p01 = q - m``), at every feasible discordance ``q`` -- built by the one builder,
``simlab.estimands.null_scenario``, that qualification and certification use too.

Grid (stated, not a proof of the supremum): every baseline and discordance of the
policy's domain grid (discordances clipped into the feasible interval of each baseline,
deduplicated), ``rho`` on the domain's rho grid up to ``rho_max`` plus ``rho_max`` itself
(only ``rho = 0`` when ``M = 1``: a Dirichlet-multinomial cluster of one trial is a
categorical draw with the mean cells, so rho has no effect), every label-noise model.

Each scenario's rate comes from an exact engine when one applies cheaply
(``studies.engine.frame.exact_pass_rate``: no Monte Carlo error; verdict ``qualified`` iff
rate <= threshold), else by simulation with the policy's replication schedule.  The
Clopper-Pearson bound after each of the ``S`` stages is taken at confidence
``1 - (1 - mc_confidence) / S`` (Bonferroni over the stages), so stopping at the first
stage that decides is still a level ``1 - mc_confidence`` statement per scenario.
The design's verdict is ``exceeds`` when one scenario exceeds, else ``undetermined`` when
one is undetermined, else ``qualified``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from methods.qualification import (EXCEEDS, QUALIFIED, UNDETERMINED, NuisancePoint, QualificationPolicy, nuisance_grid,
                                   combine_verdicts, cp_lower, cp_upper, verdict_of)
from simlab.estimands import null_scenario
from simlab.scenario import FixedSize, LabelNoise, PairedScenario

from studies.engine.frame import PowerFrame, exact_pass_rate

SCREEN_REPLICATIONS = 32_000


@dataclass(frozen=True)
class ScenarioFalsePass:
    baseline: float
    discordance: float
    rho: float
    noise: int
    difference: float
    loss_rate: float
    rate: float
    lower: float
    upper: float
    n_reps: int
    n_pass: int
    exact: bool
    verdict: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DesignFalsePass:
    """The design's verdict, its worst scenario (largest rate; largest upper bound), and all
    scenarios evaluated."""
    verdict: str
    threshold: float
    worst: ScenarioFalsePass
    worst_point: NuisancePoint
    worst_upper: ScenarioFalsePass
    scenarios: tuple[ScenarioFalsePass, ...]
    clusters: int
    trials: int
    margin: float
    rho_max: float
    replications_generated: int

    def as_dict(self, scenarios: bool = False) -> dict:
        out = {"verdict": self.verdict, "threshold": self.threshold, "clusters": self.clusters,
               "trials": self.trials, "margin": self.margin, "rho_max": self.rho_max,
               "worst": self.worst.as_dict(), "worst_upper": self.worst_upper.as_dict(),
               "n_scenarios": len(self.scenarios), "replications_generated": self.replications_generated,
               "rule": "grid of the policy domain's baselines x discordances x rho <= rho_max; exact engine "
                       "where cheap, else Clopper-Pearson with Bonferroni over replication stages"}
        if scenarios:
            out["scenarios"] = [s.as_dict() for s in self.scenarios]
        return out


def estimand_of(method) -> str:
    return str(getattr(method.estimand, "value", method.estimand))


def nuisance_points(policy: QualificationPolicy, margin: float, trials: int, rho_max: float,
                    estimand: str) -> list[NuisancePoint]:
    """The grid described in the module docstring."""
    dom = policy.domain
    if not 0.0 <= rho_max < 1.0:
        raise ValueError(f"rho_max must lie in [0, 1), got {rho_max!r}")
    rhos = [0.0] if trials == 1 else sorted({r for r in dom.rho.grid if r <= rho_max} | {float(rho_max)})
    pairs = nuisance_grid(dom, margin, estimand)
    if not pairs:
        raise ValueError(f"margin {margin}: no (baseline, discordance) of the domain lies on the null boundary")
    return [NuisancePoint(b, q, r, n) for r in rhos for (b, q) in pairs for n in range(len(dom.label_noise))]


def null_point_scenario(estimand: str, point: NuisancePoint, margin: float, clusters: int, trials: int,
                        noise: LabelNoise) -> PairedScenario:
    """``simlab.estimands.null_scenario`` at ``point`` (the one builder of null scenarios)."""
    return null_scenario(estimand, point.baseline, point.discordance, margin, clusters=clusters,
                         cluster_size=FixedSize(trials=trials), rho=point.rho, label_noise=noise)


def scenario_false_pass(method, scenario: PairedScenario, point: NuisancePoint, margin: float, alpha: float,
                        policy: QualificationPolicy, seed: int, looks: int | None = None,
                        sampler: str = "auto", screen: bool = False) -> tuple[ScenarioFalsePass, int]:
    """One scenario's false-pass rate and verdict (exact, or adaptive simulation with
    Bonferroni-adjusted stage bounds); also the replications generated.  ``screen``: stop
    escalating (verdict ``undetermined``) once the rate itself is above the threshold, or
    beyond ``SCREEN_REPLICATIONS`` -- enough for a search that only accepts ``qualified``
    designs (the bounds keep the full schedule's Bonferroni level, so a screen's
    ``qualified`` is as valid as the full check's)."""
    thr = policy.allowed_excess * alpha
    diff = scenario.true_difference_trial()
    loss = scenario.true_loss_rate()
    exact = None if looks is not None else exact_pass_rate(method, scenario, margin, alpha)
    if exact is not None:
        v = QUALIFIED if exact <= thr else EXCEEDS
        return ScenarioFalsePass(point.baseline, point.discordance, point.rho, point.noise, diff, loss, exact,
                                 exact, exact, 0, 0, True, v), 0
    stages = policy.replication_schedule()
    conf = policy.stage_confidence
    if screen:  # a screen never needs the last, most expensive stages to say "not qualified"
        stages = [n for n in stages if n <= SCREEN_REPLICATIONS] or stages[:1]
    frame = PowerFrame(method, scenario, seed, margin, alpha, looks, sampler)
    k = scenario.clusters
    verdict, lo, up = UNDETERMINED, 0.0, 1.0
    for n in stages:
        frame.evaluate([k], n)
        nn, x = frame.counts[k]
        lo, up = cp_lower(x, nn, conf), cp_upper(x, nn, conf)
        verdict = verdict_of(lo, up, thr)
        if verdict != UNDETERMINED or (screen and x / nn > thr):
            break
    return ScenarioFalsePass(point.baseline, point.discordance, point.rho, point.noise, diff, loss, x / nn, lo, up,
                             nn, x, False, verdict), frame.replications_generated


def design_false_pass(method, *, clusters: int, trials: int, margin: float, rho_max: float, alpha: float,
                      policy: QualificationPolicy, seed: int, looks: int | None = None, sampler: str = "auto",
                      screen: bool = False, first: NuisancePoint | None = None, progress=None) -> DesignFalsePass:
    """Worst case of the false-pass rate over the nuisance grid at this design.  ``screen``
    (for searches that accept only ``qualified`` designs): stop at the first scenario that
    is not qualified, escalating no scenario whose rate is already above the threshold;
    ``first``: a point to evaluate first (e.g. the worst case at another K)."""
    est = estimand_of(method)
    points = nuisance_points(policy, margin, trials, rho_max, est)
    if first is not None and first in points:
        points.remove(first)
        points.insert(0, first)
    out: list[ScenarioFalsePass] = []
    generated = 0
    for i, pt in enumerate(points):
        sc = null_point_scenario(est, pt, margin, clusters, trials, policy.domain.label_noise[pt.noise])
        r, g = scenario_false_pass(method, sc, pt, margin, alpha, policy, seed, looks, sampler, screen)
        out.append(r)
        generated += g
        if progress:
            progress(f"false pass K={clusters}: {i + 1}/{len(points)} b={pt.baseline:g} q={pt.discordance:g} "
                     f"rho={pt.rho:g}: {r.rate:.4g} ({r.verdict})")
        if r.verdict == EXCEEDS or (screen and r.verdict != QUALIFIED):
            break  # the design's verdict is decided
    verdict = combine_verdicts([r.verdict for r in out])
    return DesignFalsePass(verdict=verdict, threshold=policy.allowed_excess * alpha,
                           worst=max(out, key=lambda r: r.rate),
                           worst_point=points[max(range(len(out)), key=lambda i: out[i].rate)], worst_upper=max(out, key=lambda r: r.upper),
                           scenarios=tuple(out), clusters=clusters, trials=trials, margin=margin, rho_max=rho_max,
                           replications_generated=generated)


__all__ = ["ScenarioFalsePass", "DesignFalsePass", "nuisance_points",
           "scenario_false_pass", "design_false_pass", "estimand_of", "null_point_scenario"]
