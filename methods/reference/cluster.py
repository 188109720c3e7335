"""Slow reference implementations of the cluster-level methods, written from the papers
with numpy / scipy, one function per registered method (see ``methods.reference``).

Each takes one experiment's ``(K, 4)`` table (columns n11, n10, n01, n00; a row of zeros
is a missing cluster), the non-inferiority margin and the two-sided confidence level, and
returns ``(lower, upper, estimate, status)``.  They share nothing with the numba kernels:
different algebra (cluster means through numpy, pair-level design matrices, arm-wise
marginal proportions), so agreement is evidence that both follow the paper.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from methods.reference._tables import cluster_rows, decide


def _nan_result(estimate: float):
    return math.nan, math.nan, estimate, "inconclusive"


def cluster_differences(table) -> np.ndarray:
    """d_k = (n01 - n10) / n_k of each non-empty cluster."""
    t = cluster_rows(table)
    return (t[:, 2] - t[:, 1]) / t.sum(axis=1)


# ---------------------------------------------------------------- cluster-weighted


def clustered_normal(table, margin: float, confidence: float = 0.95, min_clusters: float = 30.0):
    """The seed's interval: mean(d) +- z * sd(d, ddof=1) / sqrt(K) over non-empty clusters."""
    d = cluster_differences(table)
    K = d.size
    if K == 0:
        return _nan_result(math.nan)
    mean = float(np.mean(d))
    if K < 2 or K < min_clusters:
        return _nan_result(mean)
    z = stats.norm.ppf(1.0 - (1.0 - confidence) / 2.0)
    half = float(z * np.std(d, ddof=1) / math.sqrt(K))
    lower, upper = mean - half, mean + half
    return lower, upper, mean, decide(lower, margin)


def cluster_t(table, margin: float, confidence: float = 0.95, min_clusters: float = 2.0):
    """One-sample t interval on the cluster differences: scipy's ``ttest_1samp`` interval
    (a point when every cluster has the same difference)."""
    d = cluster_differences(table)
    K = d.size
    if K == 0:
        return _nan_result(math.nan)
    mean = float(np.mean(d))
    if K < 2 or K < min_clusters:
        return _nan_result(mean)
    if np.all(d == d[0]):
        lower = upper = mean
    else:
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence)
        lower, upper = float(ci.low), float(ci.high)
    return lower, upper, mean, decide(lower, margin)


# ---------------------------------------------------------------- trial-weighted


def pair_level(table) -> tuple[np.ndarray, np.ndarray]:
    """Expand non-empty clusters to pairs: y = candidate - baseline in {-1, 0, 1} and the
    cluster id of each pair."""
    t = cluster_rows(table)
    y, g = [], []
    for k, (n11, n10, n01, n00) in enumerate(t):
        y += [0] * int(n11) + [-1] * int(n10) + [1] * int(n01) + [0] * int(n00)
        g += [k] * int(n11 + n10 + n01 + n00)
    return np.asarray(y, dtype=float), np.asarray(g, dtype=int)


def cr2_variance(y: np.ndarray, X: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS coefficients and their CR2 covariance (Bell & McCaffrey 2002), by the matrix
    formula: (X'X)^-1 sum_k X_k' A_k e_k e_k' A_k X_k (X'X)^-1, A_k = (I - H_kk)^-1/2."""
    XtX_inv = np.linalg.inv(X.T @ X)
    beta = XtX_inv @ X.T @ y
    e = y - X @ beta
    meat = np.zeros((X.shape[1], X.shape[1]))
    for k in np.unique(groups):
        idx = groups == k
        Xk = X[idx]
        Hkk = Xk @ XtX_inv @ Xk.T
        w, V = np.linalg.eigh(np.eye(Xk.shape[0]) - Hkk)
        Ak = V @ np.diag(1.0 / np.sqrt(w)) @ V.T
        u = Xk.T @ Ak @ e[idx]
        meat += np.outer(u, u)
    return beta, XtX_inv @ meat @ XtX_inv


def cluster_robust(table, margin: float, confidence: float = 0.95, min_clusters: float = 2.0):
    """OLS of the per-pair difference on a constant; CR2 covariance; t(K - 1) interval."""
    y, g = pair_level(table)
    if y.size == 0:
        return _nan_result(math.nan)
    K = int(np.unique(g).size)
    estimate = float(y.mean())
    if K < 2 or K < min_clusters:
        return _nan_result(estimate)
    beta, cov = cr2_variance(y, np.ones((y.size, 1)), g)
    se = math.sqrt(max(float(cov[0, 0]), 0.0))
    tq = stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, K - 1)
    lower, upper = float(beta[0]) - tq * se, float(beta[0]) + tq * se
    return lower, upper, float(beta[0]), decide(lower, margin)


def obuchowski_moments(table, under_null: bool = False) -> dict:
    """Obuchowski (1998) eqs. 1-4 arm by arm: ratio estimators p_b, p_c, their empirical
    variances and covariance, and var(p_c - p_b).  ``under_null`` evaluates the variance
    and covariance at the pooled p = (p_b + p_c) / 2 (the test of H0: p_b = p_c)."""
    t = cluster_rows(table)
    n = t.sum(axis=1).astype(float)
    x = (t[:, 0] + t[:, 1]).astype(float)   # baseline passes
    yv = (t[:, 0] + t[:, 2]).astype(float)  # candidate passes
    K, N = n.size, n.sum()
    p_b, p_c = x.sum() / N, yv.sum() / N
    cb, cc = (p_b, p_c) if not under_null else ((p_b + p_c) / 2.0,) * 2
    f = K / (K - 1.0) / N ** 2
    var_b = f * np.sum((x - n * cb) ** 2)
    var_c = f * np.sum((yv - n * cc) ** 2)
    cov = f * np.sum((x - n * cb) * (yv - n * cc))
    return {"K": K, "N": N, "p_baseline": p_b, "p_candidate": p_c, "var_baseline": var_b,
            "var_candidate": var_c, "cov": cov, "var_difference": var_b + var_c - 2.0 * cov}


def obuchowski_chi2(table, under_null: bool = True) -> float:
    """Obuchowski's chi-square statistic (p_c - p_b)^2 / var(p_c - p_b) (1 df)."""
    m = obuchowski_moments(table, under_null=under_null)
    return (m["p_candidate"] - m["p_baseline"]) ** 2 / m["var_difference"]


def obuchowski(table, margin: float, confidence: float = 0.95, min_clusters: float = 2.0):
    """Wald interval p_c - p_b +- z sqrt(var) with Obuchowski's variance at the unrestricted
    estimates."""
    t = cluster_rows(table)
    K = t.shape[0]
    if K == 0:
        return _nan_result(math.nan)
    N = t.sum()
    estimate = float((t[:, 0] + t[:, 2]).sum() / N - (t[:, 0] + t[:, 1]).sum() / N)
    if K < 2 or K < min_clusters:
        return _nan_result(estimate)
    m = obuchowski_moments(t)
    z = stats.norm.ppf(1.0 - (1.0 - confidence) / 2.0)
    half = float(z * math.sqrt(max(m["var_difference"], 0.0)))
    lower, upper = estimate - half, estimate + half
    return lower, upper, estimate, decide(lower, margin)
