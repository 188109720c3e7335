"""Slow references of the practitioner rules (``lmeval_ztest``, ``trial_bootstrap``,
``inspect_cluster_se``): the published formulas applied literally to expanded per-trial or
per-sample score vectors (numpy), not to counts.  Signature as in ``methods.reference``."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from methods.reference._tables import cluster_rows, decide
from methods.reference.resample import STREAM_S1, STREAM_S2, mix64, counter_uniform


def _arm_scores(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-trial 0/1 scores of baseline and candidate (paired, same order) and cluster ids."""
    base, cand, ids = [], [], []
    for k, (n11, n10, n01, n00) in enumerate(t):
        base += [1] * int(n11) + [1] * int(n10) + [0] * int(n01) + [0] * int(n00)
        cand += [1] * int(n11) + [0] * int(n10) + [1] * int(n01) + [0] * int(n00)
        ids += [k] * int(n11 + n10 + n01 + n00)
    return np.asarray(base, float), np.asarray(cand, float), np.asarray(ids)


def _mean_stderr(arr: np.ndarray) -> float:
    """lm_eval/api/metrics.py mean_stderr: sample SD (n - 1) over sqrt(n)."""
    mu = arr.mean()
    return math.sqrt(np.sum((arr - mu) ** 2) / (arr.size - 1)) / math.sqrt(arr.size)


def lmeval_ztest(table, margin: float, confidence: float = 0.95):
    b, c, _ = _arm_scores(cluster_rows(table))
    if b.size == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    est = float(c.mean() - b.mean())
    if b.size < 2:
        return math.nan, math.nan, est, "inconclusive"
    se = math.hypot(_mean_stderr(b), _mean_stderr(c))
    z = stats.norm.isf((1.0 - confidence) / 2.0)
    return est - z * se, est + z * se, est, decide(est - z * se, margin)


def pooled_key(a: int, b: int, c: int, d: int) -> int:
    """``trial_bootstrap``'s key from its specification, in Python integers: mix64 folds of
    (S1 ^ POOLED_SALT), then the pooled counts n11, n10, n01, n00."""
    from methods.fixed.trial_bootstrap import POOLED_SALT
    h = mix64(STREAM_S1 ^ int(POOLED_SALT))
    for v in (a, b, c, d):
        h = mix64(h ^ v)
    return h


def trial_bootstrap(table, margin: float, confidence: float = 0.95, resamples: int = 999):
    """Regenerates the kernel's resamples draw by draw with the Python-integer generator of
    ``methods.reference.resample`` and takes percentile quantiles with numpy."""
    t = cluster_rows(table)
    a, b, c, d = (int(v) for v in t.sum(axis=0)) if t.size else (0, 0, 0, 0)
    n = a + b + c + d
    if n < 2:
        return math.nan, math.nan, ((c - b) / n if n else math.nan), "inconclusive"
    y = np.array([-1] * b + [1] * c + [0] * (n - b - c), float)
    k1 = pooled_key(a, b, c, d)
    stats_ = np.empty(resamples)
    for r in range(resamples):
        idx = [min(int(counter_uniform(k1, STREAM_S2, r, j) * n), n - 1) for j in range(n)]
        stats_[r] = y[idx].mean()
    stats_.sort()
    alpha = (1.0 - confidence) / 2.0

    def q(p):  # Davison & Hinkley eq. 5.18, rank (B + 1) p clamped to [1, B]
        h = min(max((resamples + 1) * p, 1.0), float(resamples))
        lo = int(math.floor(h))
        return stats_[lo - 1] + (h - lo) * (stats_[min(lo, resamples - 1)] - stats_[lo - 1])

    lo, hi = q(alpha), q(1.0 - alpha)
    return lo, hi, (c - b) / n, decide(lo, margin)


def inspect_stderr(values: np.ndarray, clusters: np.ndarray) -> float:
    """Inspect's stderr(cluster=...) literally: sum over clusters of the outer product of the
    centred scores, times C / (C - 1), square root, over the number of scores."""
    mean = values.mean()
    total = 0.0
    uniq = np.unique(clusters)
    for cid in uniq:
        e = values[clusters == cid] - mean
        total += np.outer(e, e).sum()
    return math.sqrt(total * uniq.size / (uniq.size - 1)) / values.size


def inspect_cluster_se(table, margin: float, confidence: float = 0.95):
    t = cluster_rows(table)
    C = t.shape[0]
    if C == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    n = t.sum(axis=1)
    sb = (t[:, 0] + t[:, 1]) / n  # per-sample epoch means (Inspect's default mean reducer)
    sc = (t[:, 0] + t[:, 2]) / n
    est = float(sc.mean() - sb.mean())
    if C < 2:
        return math.nan, math.nan, est, "inconclusive"
    ids = np.arange(C)
    se = math.hypot(inspect_stderr(sb, ids), inspect_stderr(sc, ids))
    z = stats.norm.isf((1.0 - confidence) / 2.0)
    return est - z * se, est + z * se, est, decide(est - z * se, margin)
