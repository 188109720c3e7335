"""The statistical comparison: the registered method's single-analysis entry on tables
rebuilt from the raw trials -- the same kernel the qualification ran (``analyze`` runs the
batch kernel with R = 1) -- plus the ICC bound the qualification's ``rho_max`` is checked
against, each arm's pass^k / pass@k with cluster-level intervals, and the protected slices
under their multiplicity rule.  A method whose ``unit`` is ``case_all_trials`` (the pass^k
comparison) analyses per-cluster tables of cases by "all k trials passed"; every other
method the trial-pair tables.  Nothing here accepts a caller-supplied result."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import EvidenceError
from .experiment import PairedExperiment
from simlab.hashing import content_hash
from .icc import icc_upper_bound
from .manifest import Manifest
from .reliability import reliability
from .slices import slice_comparisons

STATUSES = ("pass", "fail", "inconclusive")
_SEQUENTIAL = {"promote": "pass", "stop_for_harm": "fail", "no_promotion": "fail", "continue": "inconclusive"}


def registered_method(manifest: Manifest):
    """The manifest's method from the registry; its estimand must be the registered one.  A
    judge-corrected method needs the manifest's ``judge`` block (and runs with its
    ``min_calibration``); a registered judge needs a method that reads the calibration."""
    from methods import registry
    from methods.judged import needs_calibration

    try:
        method = registry.get(manifest.statistical_method)
    except KeyError as exc:
        raise ValueError(f"manifest statistical_method: {exc.args[0]}") from None
    if needs_calibration(method) and manifest.judge is None:
        raise EvidenceError(f"manifest judge: {method.name} corrects for judge error and needs the registered judge "
                            "and calibration set (the judge block)", option="manifest")
    if manifest.judge is not None:
        if not needs_calibration(method):
            raise EvidenceError(f"manifest judge: a judge is registered but statistical_method {method.name!r} does "
                                "not read its calibration (judge-labelled outcomes would be taken as truth); register "
                                "a judge-corrected method such as judge_corrected", option="manifest")
        method = method.with_options(min_calibration=manifest.judge.min_calibration)
    if method.estimand.value != manifest.estimand:
        raise ValueError(f"manifest estimand {manifest.estimand!r} differs from {method.name}'s estimand "
                         f"{method.estimand.value!r}: the method does not estimate what was registered")
    if method.kind == "sequential" and manifest.sequential_policy.kind != "group_sequential":
        raise ValueError(f"{method.name} is sequential: the manifest must register a group_sequential look schedule")
    if method.kind == "fixed" and manifest.sequential_policy.kind != "fixed_sample":
        raise ValueError(f"{method.name} is a fixed-sample method: the manifest registers interim looks")
    return method


def one_sided_alpha(confidence: float) -> float:
    """The project's level convention (``methods.protocol``): a two-sided interval at confidence c has one-sided level (1 - c) / 2."""
    return (1.0 - confidence) / 2.0


def run_fixed(method, tables: np.ndarray, margin: float, confidence: float, calibration: np.ndarray | None = None):
    """The one call into a fixed method's single analysis (level convention lives here);
    a judge-corrected method gets the registered calibration counts."""
    from methods.judged import needs_calibration

    if needs_calibration(method):
        return method.analyze(tables, margin, alpha=one_sided_alpha(confidence), calibration=calibration)
    return method.analyze(tables, margin, alpha=one_sided_alpha(confidence))


def unit_of(method) -> str:
    return getattr(method, "unit", "trial_pair")


def analysis_tables(method, experiment: PairedExperiment, cases: np.ndarray | None = None) -> np.ndarray:
    """The per-cluster tables the method analyses (of some cases, or all)."""
    if unit_of(method) == "case_all_trials":
        return experiment.case_tables(cases)
    return experiment.trial_tables(cases)


def _num(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


_JUDGE_KEYS = ("raw_estimate", "raw_lower", "raw_upper", "reason", "calibration_sets", "sensitivity", "specificity",
               "calibration_items")


def compare(experiment: PairedExperiment, manifest: Manifest, calibration: np.ndarray | None = None) -> dict:
    """Comparison summary (JSON-ready, content-hashable) recomputed from the paired tables;
    ``calibration``: the registered judge calibration counts (``evidence.judge``)."""
    method = registered_method(manifest)
    tables = analysis_tables(method, experiment)
    alpha = one_sided_alpha(manifest.confidence)
    if method.kind == "sequential":
        from methods.sequential.base import LookSchedule

        schedule = LookSchedule(looks=manifest.sequential_policy.looks, unit="clusters")
        result = method.analyze(tables, schedule, manifest.margin, alpha=one_sided_alpha(manifest.confidence))
        detail = result.as_dict()
        status, lower, estimate = _SEQUENTIAL[result.decision], detail["bound"], detail["estimate"]
        upper = None
    else:
        result = run_fixed(method, tables, manifest.margin, manifest.confidence, calibration)
        detail = result.as_dict()
        status = "fail" if result.status == "stop_for_harm" else result.status
        lower, upper, estimate = detail["lower"], detail["upper"], detail["estimate"]
    icc = icc_upper_bound(tables, level=1.0 - alpha)
    out = {
        "method": method.identity.as_dict(), "kind": method.kind, "estimand": method.estimand.value,
        "unit": unit_of(method),
        "status": status, "estimate": _num(estimate), "lower": _num(lower), "upper": _num(upper),
        "margin": manifest.margin, "confidence": manifest.confidence, "clusters": experiment.clusters,
        "pairs": experiment.pairs, "cases": experiment.cases,
        "trials_per_cluster": sorted({int(x) for x in experiment.trials_per_cluster()})[:50],
        "units_per_cluster": sorted({int(x) for x in tables.sum(axis=1)})[:50],
        "tables_sha256": content_hash(tables.tolist()), "icc": icc.as_dict(), "detail": _clean(detail),
        "reliability": _clean(reliability(experiment.case_passes, experiment.case_trials, experiment.case_cluster,
                                          experiment.clusters, alpha)),
    }
    if manifest.judge is not None:  # the spine asks for all of these beside the corrected estimate
        minimum = manifest.judge.min_calibration
        out["judge"] = _clean({**{k: detail.get(k) for k in _JUDGE_KEYS},
                               "reason": _judge_reason(detail.get("reason"), calibration, minimum),
                               "min_calibration": minimum,
                               "calibration_counts": np.asarray(calibration).tolist(),
                               "candidate_passes_overridden": experiment.candidate_passes_overridden})
    if manifest.protected_slices is not None:
        out["slices"] = _clean(slice_comparisons(method, experiment, manifest,
                                                 lambda mask: analysis_tables(method, experiment, mask), alpha))
    return out


def _judge_reason(reason: str | None, calibration, min_calibration: int) -> str | None:
    """The method's reason, naming each calibration set below the registered minimum and its
    size: a set too small for the registered bound is an analysed run whose comparison is
    inconclusive (issue 30, item 2), and the receipt says which set and by how much."""
    from methods.judged import REASONS, SMALL_CALIBRATION

    from .judge import calibration_shortfall

    short = calibration_shortfall(calibration, min_calibration)
    if short is None:
        return reason
    small = REASONS[SMALL_CALIBRATION]
    return f"{small}: {short}" if reason in (None, "", small) else f"{reason}; {small}: {short}"


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return _num(value)
