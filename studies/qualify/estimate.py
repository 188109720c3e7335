"""Wall-time estimates of certifying and calibrating at one design (``simlab certify`` /
``simlab calibrate --max-seconds``), made before the work with the pilots of
``studies.engine.cost``: the simulation engine is the qualifier on the certificate's one-cell
policy; the exact engines run the method's kernel once on every discordant state."""
from __future__ import annotations

import math
import time

from studies.engine.cost import PILOT_DIRECT_PAIRS, TimeEstimate, cut_design, qualify_estimate

CERTIFY_PILOT_PAIRS = PILOT_DIRECT_PAIRS  # a certificate's simulation beyond this many pairs (K x M) is piloted scaled down


def _decision_seconds(method, clusters: int, trials: int, margin: float, alpha: float) -> float:
    """Seconds per replication of ``method``'s decision on tables of ``clusters`` clusters of
    ``trials`` pairs (batches of at most ~10^6 cells, timed for at least 0.2 s after a
    warm-up call that compiles or loads the kernel)."""
    import numpy as np

    n = max(1, min(4096, 250_000 // max(clusters, 1)))
    tables = np.zeros((n, clusters, 4), np.int32)
    tables[:, :, 0] = trials - trials // 2
    tables[:, :, 3] = trials // 2
    tables[:, ::3, 1] = 1          # a few discordant pairs: not the zero-variance shortcut of some kernels
    method.decide(tables[:1], margin, alpha)
    done, t0 = 0, time.perf_counter()
    while True:
        method.decide(tables, margin, alpha)
        done += n
        if time.perf_counter() - t0 >= 0.2:
            return (time.perf_counter() - t0) / done


def certify_estimate(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0,
                     looks: int | None = None, *, baseline: tuple[float, float] = (0.5, 1.0),
                     discordance: tuple[float, float] = (0.01, 0.5), engine: str = "auto", alpha: float = 0.025,
                     allowed_excess: float = 1.1, mc_confidence: float = 0.95, min_replications: int = 2000,
                     max_replications: int = 128_000, seed: int = 20261129, workers: int = 1,
                     label_noise: tuple = ()) -> TimeEstimate:
    """Wall seconds of ``studies.qualify.certify.certify`` with these arguments (its defaults;
    ``label_noise``: the judge models searched, each a node of the simulation, as
    ``certify_label_noise`` certifies them).
    Simulation engine: the qualifier's estimate on the certificate's one-cell policy (``low``:
    the first round over every nuisance scenario, which certification always runs).  Exact
    engines: the method's kernel on every discordant state, ``(N + 1)(N + 2) / 2`` for ``N =
    K M`` pairs (at most ``studies.exact.discordant.MAX_STATES``), timed on representative
    tables; for exact-convolution plus its node search, one timed node times the most nodes it
    evaluates (at 300 x 3 the nodes were 17 s of a 19 s certificate, which the states alone had
    put under 1 s); ``high`` = twice it (the exact-discordant route at 2.9 million states measured
    10 s of kernel in 10.3 s of CPU here).  A simulated design of over ``CERTIFY_PILOT_PAIRS``
    pairs is estimated at ``pilot_design``'s cut and scaled up linearly in the pairs: the
    qualifier's set-up and the linear kernels are linear in K; a kernel superlinear in the
    counts (bayes_hierarchical) is under-estimated there (the qualifier's pilot has no
    measured-growth check: its per-replication cost is floored where set-up dominates)."""
    from methods.qualification.certificate import CertifiedDesign
    from methods.registry import get
    from studies.qualify.certify import certification_engine, is_baseline_free, sim_policy

    method = get(method) if isinstance(method, str) else method
    design = CertifiedDesign(clusters=clusters, trials=trials, margin=margin, rho_max=rho_max, looks=looks,
                             baseline=tuple(baseline), discordance=tuple(discordance),
                             **({"label_noise": tuple(label_noise)} if label_noise else {}))
    exact, why = (None, "") if engine == "simulation" else certification_engine(method, design, alpha)
    if engine == "exact" and exact is None:   # refused before any pilot, as certify refuses it
        from studies.exact.applicability import exact_refusal
        raise ValueError(exact_refusal(method.name, why))
    if exact is not None:
        n = clusters * trials
        seconds = _decision_seconds(method, clusters, trials, margin, method.level(alpha)) * (n + 1) * (n + 2) / 2
        if exact == "exact-convolution":
            from studies.exact.convolution import MAX_NODES, node_seconds
            seconds += MAX_NODES * node_seconds(clusters, trials)
        return TimeEstimate(seconds, 2.0 * seconds, 1)
    baseline_free = is_baseline_free(method, design, alpha)
    k, m = pilot_design(clusters, trials)   # a pilot at 10^6 x 1 took minutes; one replication of 10^6 x 10^5, 20 min
    if (k, m) != (clusters, trials):
        design = design.model_copy(update={"clusters": k, "trials": m,
                                           "looks": None if looks is None else min(looks, k)})
    policy = sim_policy(design, alpha, allowed_excess, mc_confidence, min_replications, max_replications, seed,
                        baseline_free=baseline_free, estimand=method.estimand.value)
    est = qualify_estimate([method], policy, workers)
    scale = clusters * trials / (k * m)
    return TimeEstimate(est.low * scale, est.high * scale, est.workers)


def pilot_design(clusters: int, trials: int) -> tuple[int, int]:
    """``(K', M')`` a certificate of ``clusters`` x ``trials`` is piloted at: itself up to
    ``CERTIFY_PILOT_PAIRS`` pairs, otherwise fewer clusters (at least 2) and, where two clusters
    are still too many pairs, fewer trials (clusters this large are simulated by the trial
    sampler, linear in the trials)."""
    if clusters * trials <= CERTIFY_PILOT_PAIRS:
        return clusters, trials
    return cut_design(clusters, trials, CERTIFY_PILOT_PAIRS)


def calibrate_estimate(method, clusters: int, trials: int, margin: float, rho_max: float = 0.0,
                       looks: int | None = None, *, search_replications: int | None = None, workers: int = 1,
                       **certify_args) -> TimeEstimate:
    """Wall seconds of ``studies.qualify.calibrate.calibrate``: ``low`` is what it certainly
    costs.  Exact routes: a certificate at every one of the coarse candidate levels (then as
    many fine ones: ``high``).  Simulation: the search simulates every nuisance scenario of the
    certificate's grid once at ``search_replications`` (at least ``search_replications /
    first round`` times the certificate's first round: deciding each table at every
    candidate level comes on top) and then certifies once."""
    from dataclasses import replace

    from methods.registry import get
    from studies.qualify.calibrate import (COARSE_LEVELS, DEFAULT_SEARCH_REPLICATIONS, FINE_LEVELS,
                                           LFD_LEVEL_FRACTIONS, LFD_MAX_REPLICATIONS, LFD_SEARCH_REPLICATIONS)

    method = get(method) if isinstance(method, str) else method
    base = replace(method, nominal_alpha=None)
    if getattr(base, "calibration", None) == "least-favourable":
        # the search: its first round's cost at the search's replications, about log2 of the
        # levels decisions a table; the certificate: up to its largest stage
        reps = search_replications or LFD_SEARCH_REPLICATIONS
        certify_args = {**certify_args, "max_replications": max(certify_args.get("max_replications", 128_000),
                                                                LFD_MAX_REPLICATIONS)}
        cert = certify_estimate(base, clusters, trials, margin, rho_max, looks, workers=workers, **certify_args)
        search = cert.low * reps / certify_args.get("min_replications", 2000) * max(
            1.0, math.log2(len(LFD_LEVEL_FRACTIONS)))
        return TimeEstimate(search + cert.low, search + cert.high, cert.workers)
    search_replications = search_replications or DEFAULT_SEARCH_REPLICATIONS
    cert = certify_estimate(base, clusters, trials, margin, rho_max, looks, workers=workers, **certify_args)
    min_reps = certify_args.get("min_replications", 2000)
    if getattr(base, "calibration", None) == "exact-em":
        return TimeEstimate(cert.low, cert.high * 2.0, cert.workers)
    from methods.qualification.certificate import CertifiedDesign
    from studies.qualify.certify import certification_engine

    design = CertifiedDesign(clusters=clusters, trials=trials, margin=margin, rho_max=rho_max, looks=looks,
                             baseline=tuple(certify_args.get("baseline", (0.5, 1.0))),
                             discordance=tuple(certify_args.get("discordance", (0.01, 0.5))))
    if certification_engine(base, design, certify_args.get("alpha", 0.025))[0] is not None:
        return TimeEstimate(COARSE_LEVELS * cert.low, (COARSE_LEVELS + FINE_LEVELS) * cert.high, cert.workers)
    search = cert.low * search_replications / min_reps
    return TimeEstimate(search + cert.low, search + cert.high, cert.workers)


__all__ = ["CERTIFY_PILOT_PAIRS", "calibrate_estimate", "certify_estimate", "pilot_design"]
