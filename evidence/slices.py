"""Protected slices: non-inferiority on each registered slice, under a multiplicity rule.

The manifest registers a field (sample metadata in Inspect; the trial rows' ``slice`` column)
and the protected values.  Each slice's hypothesis ``H0_s: Delta_s <= -margin`` is tested by
the registered method on the per-cluster tables of that slice's cases, with the family-wise
error over the slices held at the one-sided level ``alpha`` by

- **Holm** (Holm 1979, Scand J Statist 6:65-70): with ``r`` hypotheses not yet rejected, test
  each at ``alpha / r``; reject (establish) every one that passes, and repeat with the smaller
  ``r`` until none passes.  For tests that pass at every level above the one at which they
  pass first (an interval whose lower bound falls as the level falls), rejecting all that pass
  at ``alpha / r`` at once is Holm's step-down on the p-values, without computing them;
- **fixed-sequence gatekeeping** (Maurer, Hothorn & Lehmacher 1995, in *Biometrie in der
  chemisch-pharmazeutischen Industrie* 6:3-18; Westfall & Krishen 2001, J Stat Plan Inference
  99:25-40): test the slices in the registered order, each at ``alpha``; stop at the first not
  established -- the rest are not tested.

A slice not established blocks when its last test failed and holds when it was
inconclusive, not tested, or the slice has no trials; per-slice results (cases, clusters,
levels used, bounds, decision) go into the comparison and so into the packet."""
from __future__ import annotations

import numpy as np

from .manifest import Manifest


def _test(method, tables, margin: float, alpha: float) -> dict:
    r = method.analyze(tables, margin, alpha=alpha)
    return {"level": alpha, "status": "fail" if r.status == "stop_for_harm" else r.status,
            "estimate": r.estimate, "lower": r.lower, "upper": r.upper}


def slice_comparisons(method, experiment, manifest: Manifest, tables_of, alpha: float) -> dict:
    """Per-slice results under the registered rule; ``tables_of(cases mask)`` gives a slice's tables."""
    rule = manifest.protected_slices
    if method.kind != "fixed":
        raise ValueError(f"protected slices need a fixed-sample method; {method.name} is {method.kind}")
    if experiment.case_slice is None:
        raise ValueError(f"the manifest protects slices of {rule.field!r}, but the trials give no slice values")
    out: dict[str, dict] = {}
    masks = {}
    for value in rule.values:
        mask = experiment.case_slice == value
        masks[value] = mask
        tables = tables_of(mask)
        used = tables[tables.sum(axis=1) > 0]
        out[value] = {"value": value, "cases": int(mask.sum()), "clusters": int(len(used)),
                      "pairs": int(used.sum()), "tests": [], "decision": "not_tested"}
    pending = [v for v in rule.values if out[v]["cases"]]
    for v in rule.values:
        if not out[v]["cases"]:
            out[v]["decision"] = "no_trials"
    if rule.rule == "holm":
        while pending:
            level = alpha / len(pending)
            passed = []
            for v in pending:
                t = _test(method, tables_of(masks[v]), manifest.margin, level)
                out[v]["tests"].append(t)
                if t["status"] == "pass":
                    passed.append(v)
            for v in passed:
                out[v]["decision"] = "established"
            pending = [v for v in pending if v not in passed]
            if not passed:
                break
    else:
        for v in rule.values:
            if out[v]["decision"] == "no_trials":
                break
            t = _test(method, tables_of(masks[v]), manifest.margin, alpha)
            out[v]["tests"].append(t)
            if t["status"] != "pass":
                break
            out[v]["decision"] = "established"
    for v in rule.values:
        if out[v]["decision"] not in ("established", "no_trials"):
            out[v]["decision"] = f"not_established_{out[v]['tests'][-1]['status']}" if out[v]["tests"] else "not_tested"
    return {"field": rule.field, "rule": rule.rule, "family_alpha": alpha, "slices": [out[v] for v in rule.values],
            "unlisted_cases": int(np.sum(~np.isin(experiment.case_slice.astype(str), list(rule.values))))}


def slice_findings(slices: dict | None) -> list[tuple[str, str, str]]:
    """Receipt findings: a slice not established blocks (a failed test) or holds (otherwise)."""
    if not slices:
        return []
    out = []
    name = "Holm" if slices["rule"] == "holm" else "fixed-sequence gatekeeping"
    for s in slices["slices"]:
        d = s["decision"]
        if d == "established":
            continue
        where = f"protected slice {slices['field']}={s['value']!r}"
        if d == "no_trials":
            out.append(("evidence_ready", "hold", f"{where} has no trials: its non-inferiority cannot be shown"))
        elif d == "not_tested":
            out.append(("evidence_ready", "hold", f"{where} not tested: an earlier slice in the registered order was "
                                                  f"not established ({name})"))
        else:
            t = s["tests"][-1]
            low = "none" if t["lower"] is None or t["lower"] != t["lower"] else f"{t['lower']:.4g}"
            action = "block" if t["status"] == "fail" else "hold"
            out.append(("evidence_ready", action, f"{where}: non-inferiority not established at one-sided level "
                                                  f"{t['level']:.4g} ({name}; lower bound {low})"))
    return out
