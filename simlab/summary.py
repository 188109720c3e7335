"""Summaries of simulated tables (what ``simlab simulate`` prints)."""
from __future__ import annotations

import numpy as np

from .scenario import CELLS, PairedScenario


def anova_icc(counts: np.ndarray, sizes: np.ndarray) -> float:
    """One-way ANOVA intraclass correlation of a binary outcome in clusters.

    ``counts[i]`` successes out of ``sizes[i]`` trials in cluster i (clusters with
    ``sizes < 1`` are dropped by the caller).  ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)
    with n0 the adjusted mean cluster size (Donner 1986, Int Stat Rev 54:67-82, eq. 2.1;
    Fleiss 1981 for the binary case)."""
    counts = np.asarray(counts, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    keep = sizes > 0
    counts, sizes = counts[keep], sizes[keep]
    k = sizes.size
    n = sizes.sum()
    if k < 2 or n <= k:
        return float("nan")
    p = counts.sum() / n
    ssb = np.sum(counts ** 2 / sizes) - n * p * p
    ssw = counts.sum() - np.sum(counts ** 2 / sizes)
    msb = ssb / (k - 1)
    msw = ssw / (n - k)
    n0 = (n - np.sum(sizes ** 2) / n) / (k - 1)
    denom = msb + (n0 - 1) * msw
    return float((msb - msw) / denom) if denom > 0 else float("nan")


def summarize(scenario: PairedScenario, tables: np.ndarray) -> dict:
    """Descriptive summary of simulated tables against the scenario's true values."""
    R, K, _ = tables.shape
    t = tables.astype(np.int64)
    n = t.sum(axis=2)
    pooled = t.sum(axis=(0, 1))
    total = int(pooled.sum())
    diffs_trial = (t[:, :, 2] - t[:, :, 1]).sum(axis=1) / np.maximum(n.sum(axis=1), 1)
    baseline_pass = (t[:, :, 0] + t[:, :, 1]).ravel()
    icc = anova_icc(baseline_pass, n.ravel()) if R * K > 1 else float("nan")
    return {
        "replications": R,
        "clusters": K,
        "trial_pairs": total,
        "mean_trials_per_cluster": float(n.mean()),
        "empty_cluster_rate": float(np.mean(n == 0)),
        "cell_rates": {c: float(pooled[i] / total) if total else float("nan") for i, c in enumerate(CELLS)},
        "expected_cell_rates": dict(zip(CELLS, map(float, np.average(
            scenario.observed_cell_matrix(), axis=0,
            weights=scenario.expected_sizes() * scenario.retention_rate())))),
        "mean_trial_weighted_difference": float(diffs_trial.mean()),
        "baseline_icc_anova": icc,
        "rho": scenario.rho,
        **scenario.true_values(),
    }
