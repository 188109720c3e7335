"""Reliability over repeated trials, per arm: pass^k and pass@k with cluster-level intervals.

For a case run ``n`` times with ``c`` passes, the unbiased estimators of the chance that
``k <= n`` fresh trials *all* pass (pass^k, tau-bench's reliability metric: Yao, Shinn,
Razavi & Narasimhan 2024, "tau-bench: A Benchmark for Tool-Agent-User Interaction in
Real-World Domains", arXiv:2406.12045, sec. 3) and that *at least one* passes (pass@k: Chen et
al. 2021, "Evaluating Large Language Models Trained on Code", arXiv:2107.03374, eq. 1) are

    pass^k = C(c, k) / C(n, k),        pass@k = 1 - C(n - c, k) / C(n, k).

An arm's value is the mean over cases.  Cases of one customer are not independent, so the
interval is built over clusters: with cluster totals ``Y_j`` (sum of the cases' values) and
case counts ``m_j``, the ratio estimator ``theta = sum Y_j / sum m_j`` has the linearised
(cluster-robust, CR1) variance

    V = K / (K - 1) * sum_j (Y_j - theta m_j)^2 / (sum_j m_j)^2

(Cochran 1977, *Sampling Techniques*, 3rd ed., eq. 6.13 with the K/(K-1) small-sample
factor; Cameron & Miller 2015, J Human Resources 50:317-372, sec. VI.B), and the interval is
``theta -+ t_{1 - alpha, K - 1} sqrt(V)``, clipped to [0, 1], at the manifest's confidence.
With fewer than two clusters there is no interval.  These are descriptive per-arm figures;
a *decision* on pass^k goes through a registered, qualified comparison method
(``methods.fixed.pass_hat_k``)."""
from __future__ import annotations

import math

import numpy as np


def estimator_table(n: int, k: int, kind: str) -> np.ndarray:
    """``table[c]``: the per-case estimate for ``c = 0..n`` passes out of ``n`` trials."""
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in 1..{n}, got {k}")
    total = math.comb(n, k)
    if kind == "pass^k":
        return np.array([math.comb(c, k) / total for c in range(n + 1)])
    if kind == "pass@k":
        return np.array([1.0 - math.comb(n - c, k) / total for c in range(n + 1)])
    raise ValueError(f"unknown reliability metric {kind!r}")


def cluster_ratio_interval(values: np.ndarray, cluster: np.ndarray, n_clusters: int,
                           alpha: float) -> dict:
    """Ratio estimate of the mean of per-case ``values`` and its cluster-level interval."""
    from scipy import special  # t quantile (light; scipy.stats is not needed)

    y = np.bincount(cluster, weights=values, minlength=n_clusters)
    m = np.bincount(cluster, minlength=n_clusters).astype(np.float64)
    y, m = y[m > 0], m[m > 0]
    K, M = len(m), float(m.sum())
    theta = float(y.sum() / M) if M else math.nan
    if K < 2:
        return {"estimate": theta, "lower": None, "upper": None, "clusters": K, "cases": int(M)}
    var = K / (K - 1) * float(np.sum((y - theta * m) ** 2)) / M ** 2
    half = float(special.stdtrit(K - 1, 1.0 - alpha)) * math.sqrt(var)
    return {"estimate": theta, "lower": max(0.0, theta - half), "upper": min(1.0, theta + half),
            "clusters": K, "cases": int(M)}


def reliability(case_passes: np.ndarray, case_trials: np.ndarray, case_cluster: np.ndarray, n_clusters: int,
                alpha: float) -> dict:
    """pass^k and pass@k of each arm for every k = 1..n (n = trials per case, equal for all cases)."""
    sizes = set(int(x) for x in case_trials)
    if len(sizes) != 1:
        raise ValueError("pass^k needs the same number of trials for every case")
    n = sizes.pop()
    out: dict = {"trials_per_case": n, "confidence_one_sided_alpha": alpha,
                 "method": "unbiased per-case estimators (tau-bench pass^k; Chen et al. pass@k), cluster ratio "
                           "estimator with CR1 variance and t on K-1 df"}
    for j, arm in enumerate(("baseline", "candidate")):
        passes = case_passes[:, j]
        out[arm] = {kind: {str(k): cluster_ratio_interval(estimator_table(n, k, kind)[passes], case_cluster,
                                                          n_clusters, alpha) for k in range(1, n + 1)}
                    for kind in ("pass^k", "pass@k")}
    return out
