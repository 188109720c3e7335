"""Helpers shared by the cluster-level fixed-sample kernels (cluster_t, cluster_robust,
obuchowski): per-replication cluster summaries (numba) and the critical-value tables
their ``prepare`` hooks build once per batch.

Conventions (DESIGN.md): a cluster with zero trials is missing and is skipped; ``D_k =
n01 - n10`` is cluster k's candidate-minus-baseline count, ``n_k`` its trials.
"""
import math

import numba as nb
import numpy as np



@nb.njit(inline="always", cache=True)
def trial_totals(tables, r):
    """(k_used, N, S) of replication r: non-empty clusters, total trials, sum of D_k."""
    k_used = 0
    N = 0
    S = 0
    for k in range(tables.shape[1]):
        n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if n == 0:
            continue
        k_used += 1
        N += n
        S += tables[r, k, 2] - tables[r, k, 1]
    return k_used, N, S


@nb.njit(inline="always", cache=True)
def scaled_residual(tables, r, k, N, S):
    """``N * (D_k - n_k * S / N) = N * D_k - n_k * S`` in exact integer arithmetic, as a float.

    Working with this integer numerator keeps the ratio-estimator residuals free of
    round-off, so a sample whose clusters all share one difference ratio has exactly
    zero variance (and the kernels agree with slow references to the last bits)."""
    n = np.int64(tables[r, k, 0]) + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
    D = np.int64(tables[r, k, 2]) - tables[r, k, 1]
    return float(np.int64(N) * D - n * np.int64(S)), float(n)


def check_min_clusters(method) -> float:
    """The ``min_clusters`` option as a float, validated (finite, >= 0)."""
    v = method.options["min_clusters"]
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
        raise ValueError(f"method {method.name!r}: option min_clusters must be a finite number >= 0, got {v!r}")
    return float(v)


def t_consts(method, alpha: float, margin: float, tables: np.ndarray) -> np.ndarray:
    """``[min_clusters, t_1, ..., t_K]``: element ``j >= 1`` is the two-sided critical value
    ``t_{1 - alpha/2}`` on ``j`` degrees of freedom, for every df a batch with ``K =
    tables.shape[1]`` clusters can need; a kernel with ``k_used`` clusters reads
    ``consts[k_used - 1]`` (df = k_used - 1)."""
    from scipy import stats  # heavy: imported when used
    q = 1.0 - alpha
    K = max(int(tables.shape[1]), 1)
    out = np.empty(K + 1, np.float64)
    out[0] = check_min_clusters(method)
    out[1:] = stats.t.ppf(q, np.arange(1, K + 1))
    return out
