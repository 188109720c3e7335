"""One scenario, one method: the false-pass rate, exactly when possible.

:func:`false_pass` is the one-line version of a study (``simlab false-pass``): the
probability that ``method`` passes on ``scenario`` -- a false pass when the true value
of the method's estimand is ``<= -margin``, power otherwise -- from an exact engine
(``studies.exact.fixed``; MC SE 0) when one applies and its declared cost is within ``max_exact_seconds``,
otherwise from ``replications`` simulated experiments with its MC SE and
Clopper-Pearson bounds.
"""
from __future__ import annotations

from typing import Callable

from simlab.exact import ExactUnsupported
from simlab.scenario import PairedScenario

from studies.engine.measures import NULL_TOL, rate_summary
from studies.engine.runner import evaluate_scenario
from studies.engine.spec import MethodRef


def false_pass(scenario: PairedScenario, method: str | MethodRef, margin: float = 0.03, alpha: float = 0.025,
               replications: int = 100_000, seed: int = 20261129, exact: str = "auto",
               max_exact_seconds: float = 60.0, mc_confidence: float = 0.95, device: str | None = None,
               before_simulating: Callable[[float], object] | None = None, progress: bool = False,
               before_preparing: Callable[[float, str], object] | None = None) -> dict:
    """``exact``: 'auto' (exact if possible), 'never' (simulate), 'only' (error if not exact).
    ``device``: where a simulation runs ('cpu' or 'gpu'; default: ``studies.engine.device``'s selection).
    ``before_simulating(seconds)``: told the simulation's estimated wall time before it starts
    (``studies.engine.cost.scenario_estimate``; it may raise to refuse the work).
    ``before_preparing(seconds, what)``: told, before that estimate's pilot, of a method's declared
    first-replication cost over a second (``studies.engine.cost.preparation``: a construction the
    pilot would otherwise pay unannounced); it may raise to refuse the work.
    ``progress``: show progress of the simulation (it runs in chunks; the counts are the same)."""
    from studies.exact.fixed import exact_engine, exact_measures

    if exact not in ("auto", "never", "only"):
        raise ValueError(f"exact must be 'auto', 'never' or 'only', got {exact!r}")
    ref = method if isinstance(method, MethodRef) else MethodRef(name=method)
    m = ref.resolve("fixed")
    theta = m.true_value(scenario)
    is_null = bool(theta <= -margin + NULL_TOL)
    out = {"method": ref.key, "method_name": m.name, "version": m.version,
           "source_sha256": m.identity.source_sha256, "options": dict(m.options),
           "estimand": str(getattr(m.estimand, "value", m.estimand)), "true_value": theta,
           "true_difference_trial": scenario.true_difference_trial(),
           "true_difference_cluster": scenario.true_difference_cluster(),
           "margin": float(margin), "alpha": float(alpha), "is_null": is_null,
           "measure": "false_pass_rate" if is_null else "power",
           "scenario": scenario.model_dump(mode="json"), "scenario_key": scenario.key}
    why = "exact computation not requested"
    if exact != "never":
        engine, why = exact_engine(scenario, m, alpha)
        if engine is not None:
            try:
                r = exact_measures(scenario, m, margin, alpha, engine, max_seconds=max_exact_seconds)
            except ExactUnsupported as exc:
                why = str(exc)
            else:
                return {**out, "value": r.pass_rate, "mc_se": 0.0, "exact": True, "engine": engine,
                        "states": r.states, "inconclusive_rate": r.inconclusive_rate, "coverage": r.coverage,
                        "replications": None, "seed": None}
        if exact == "only":
            raise ValueError(f"no exact result for {ref.key!r} on this scenario: {why}")
    if before_simulating is not None:
        from studies.engine.cost import preparation, scenario_estimate

        if before_preparing is not None:
            for cost in preparation(scenario, [ref]):
                before_preparing(cost.seconds, cost.driver)
        before_simulating(scenario_estimate(scenario, [ref], [margin], [alpha], replications, seed).low)
    c = _simulate(scenario, ref, margin, alpha, replications, seed, device, progress)
    rate = rate_summary(c.count("n_pass", ref.key), c.count("n_reps", ref.key), mc_confidence)
    inc = c.count("n_inconclusive", ref.key) / max(c.count("n_reps", ref.key), 1)
    return {**out, "value": rate["value"], "mc_se": rate["mc_se"], "cp_lower": rate["cp_lower"],
            "cp_upper": rate["cp_upper"], "exact": False, "engine": None, "why_not_exact": why,
            "inconclusive_rate": inc, "replications": int(replications), "seed": int(seed),
            "sampler": c.sampler}


PROGRESS_CHUNKS = 100  # a simulation with progress runs in this many chunks (integer tallies: the same counts)


def _simulate(scenario, ref, margin, alpha, replications, seed, device, progress):
    from simlab.progress import progress_bar

    with progress_bar(replications, f"simulating {ref.key}", enabled=progress) as advance:
        counts = evaluate_scenario(scenario, [ref], [margin], [alpha], replications, seed, device=device,
                                   chunks=PROGRESS_CHUNKS if progress else 1, on_chunk=advance)
    return counts
