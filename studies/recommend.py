"""``simlab recommend``: which methods may decide at this design, and how well.

For a design ``(clusters K, trials per cluster M, margin m, rho_max)`` and an alternative
(true difference ``d``, target power):

1. Coverage: every registered fixed-sample method is looked up through the qualification
   coverage rule (``methods.qualification.find_coverage``: a certificate or an on-grid
   record; a stale or tampered one is reported as not covering, with its reason).
2. False pass: the worst case the covering certificate states, or, for a record, the
   worst over the cells it consulted at this design -- the largest false-pass upper bound
   and the rate of that worst scenario (its baseline, discordance and rho named).
3. Power at the alternative (baseline, discordance, ``rho = rho_max`` unless given -- power
   falls as rho grows, so the default is the conservative end): exact where an engine
   applies cheaply (``studies.engine.frame.exact_pass_rate``), else simulated with
   ``power_reps`` replications (MC SE reported).
4. Ranking: covered methods by power (descending; ties by the smaller false-pass bound).
   For the ``top`` of them, the K at which the target power is reached
   (``studies.sizing.size.size``; the false-pass check at that K is run only when
   ``check_false_pass`` -- ``simlab size`` runs it).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

from methods.qualification import (CERT_SUFFIX, RESULTS_DIR, DesignPoint, RecordError, find_coverage,
                                   load_certificate, load_record)
from simlab.scenario import FixedSize, PairedScenario

from studies.engine.frame import PowerFrame, exact_pass_rate


def _record_worst(coverage) -> dict[str, Any] | None:
    """Worst false-pass the covering certificate states, or the worst among the record cells
    ``coverage`` consulted (None without either)."""
    if coverage.record.endswith(CERT_SUFFIX):
        cert = load_certificate(coverage.record)
        w = cert.worst_point
        return {"upper": w.upper, "rate": w.rate, "n_reps": w.n_reps, "baseline": w.baseline,
                "discordance": w.discordance, "rho": w.rho, "clusters": cert.design.clusters, "verdict": cert.verdict,
                "threshold": cert.threshold, "record": Path(coverage.record).name, "cells": 0,
                "engine": cert.engine, "proven_upper": cert.proven_upper}
    if not coverage.record or not coverage.cells:
        return None
    rec = load_record(coverage.record)
    cmap = rec.cell_map()
    cells = [cmap[c] for c in coverage.cells if c in cmap]
    if not cells:
        return None
    worst = max(cells, key=lambda c: c.upper)
    sc = rec.scenarios
    i = worst.worst
    return {"upper": worst.upper, "rate": sc.n_pass[i] / sc.n_reps[i] if sc.n_reps[i] else math.nan,
            "n_reps": sc.n_reps[i], "baseline": sc.baseline[i], "discordance": sc.discordance[i],
            "rho": worst.rho, "clusters": worst.clusters, "verdict": worst.verdict, "threshold": rec.threshold,
            "record": Path(coverage.record).name, "cells": len(cells)}


def _power(method, scenario: PairedScenario, margin: float, alpha: float, reps: int, seed: int) -> dict[str, Any]:
    e = exact_pass_rate(method, scenario, margin, alpha)
    if e is not None:
        return {"value": e, "exact": True, "mc_se": 0.0, "n_reps": 0}
    f = PowerFrame(method, scenario, seed, margin, alpha)
    f.evaluate([scenario.clusters], reps)
    p = f.power(scenario.clusters)
    return {"value": p, "exact": False, "mc_se": math.sqrt(p * (1 - p) / reps), "n_reps": reps}


def recommend(*, clusters: int, trials: int, margin: float, rho_max: float, difference: float = 0.0,
              power: float = 0.8, alpha: float = 0.025, baseline: float = 0.9, discordance: float | None = None,
              rho: float | None = None, methods: list[str] | None = None, top: int = 3,
              directory: str | Path = RESULTS_DIR, seed: int = 20261129, power_reps: int = 4000,
              size_reps: int = 32_000, check_false_pass: bool = False,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The recommendation payload (see the module docstring)."""
    from methods import registry

    from studies.sizing.size import size

    t0 = time.perf_counter()
    if not isinstance(clusters, int) or clusters < 2:
        raise ValueError(f"clusters must be an integer >= 2, got {clusters!r}")
    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials per cluster must be a positive integer, got {trials!r}")
    if not 0.0 <= rho_max < 1.0:
        raise ValueError(f"rho_max must lie in [0, 1), got {rho_max!r}")
    rho = rho_max if rho is None else rho
    if not 0.0 <= rho <= rho_max:
        raise ValueError(f"rho must lie in [0, rho_max] = [0, {rho_max}], got {rho!r}")
    if difference <= -margin:
        raise ValueError(f"true difference {difference!r} must exceed -margin ({-margin}): power is only defined "
                         "under the alternative")
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top!r}")
    if discordance is None:
        discordance = max(2.0 * abs(difference), margin, 0.1)
    alt = PairedScenario.from_rates(baseline, difference, discordance, clusters=clusters,
                                    cluster_size=FixedSize(trials=trials), rho=rho)
    names = methods or registry.names("fixed")
    point = DesignPoint(clusters=clusters, cluster_size=FixedSize(trials=trials), margin=margin, rho=rho_max,
                        confidence=1.0 - 2.0 * alpha)
    rows: list[dict[str, Any]] = []
    for name in names:
        m = registry.get(name)
        row: dict[str, Any] = {"method": name, "estimand": str(getattr(m.estimand, "value", m.estimand)),
                               "covered": False, "coverage": "", "record": "", "false_pass": None, "power": None}
        try:
            cov = find_coverage(m.identity.name, point, directory)
            row.update(covered=cov.covered, coverage=cov.reason, record=Path(cov.record).name if cov.record else "")
            if cov.covered:
                row["false_pass"] = _record_worst(cov)
        except RecordError as exc:  # stale or tampered: it covers nothing, and says why
            row["coverage"] = f"record not usable: {exc}"
        if row["covered"]:
            row["power"] = _power(m, alt, margin, alpha, power_reps, seed)
            if progress:
                progress(f"{name}: covered; power {row['power']['value']:.4f}")
        rows.append(row)
    covered = [r for r in rows if r["covered"]]
    covered.sort(key=lambda r: (-r["power"]["value"], (r["false_pass"] or {}).get("upper", math.inf)))
    for rank, r in enumerate(covered, 1):
        r["rank"] = rank
    for r in covered[:top]:
        try:
            s = size(registry.get(r["method"]), margin=margin, difference=difference, power=power, alpha=alpha,
                     trials=trials, baseline=baseline, discordance=discordance, rho=rho, rho_max=rho_max, seed=seed,
                     max_reps=size_reps, check_false_pass=check_false_pass, progress=progress)
            r["size"] = {"clusters": s.clusters, "power_at_k": s.power_at_k["power"],
                         "power_bound": s.power_at_k["ci_lower"], "exact": s.power_at_k["exact"],
                         "binding": s.binding, "false_pass_checked": check_false_pass,
                         "false_pass": s.false_pass.get("verdict")}
        except ValueError as exc:
            r["size"] = {"refused": str(exc)}
    uncovered = [r for r in rows if not r["covered"]]
    return {"design": {"clusters": clusters, "trials_per_cluster": trials, "margin": margin, "rho_max": rho_max,
                       "alpha": alpha},
            "alternative": {"difference": difference, "baseline": baseline, "discordance": discordance, "rho": rho,
                            "target_power": power},
            "ranked": covered, "not_covered": uncovered, "top": top, "directory": str(directory),
            "seconds": time.perf_counter() - t0}


__all__ = ["recommend"]
