"""Helpers shared by the cluster-level fixed-sample kernels (cluster_t, cluster_robust,
obuchowski): per-replication cluster summaries (numba), the batch kernel of the two
ratio-estimator methods (:func:`ratio_kernel`) and the critical-value tables their
``prepare`` hooks build once per batch.

Conventions (``simlab.scenario``): a cluster with zero trials is missing and is skipped; ``D_k =
n01 - n10`` is cluster k's candidate-minus-baseline count, ``n_k`` its trials.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._common import decide, no_bounds, write_inconclusive
from simlab.numba_cache import cache_closure


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


def ratio_kernel(residual_term, half_width):
    """The batch kernel of a trial-weighted cluster method (``cluster_robust``,
    ``obuchowski``): per replication the ratio estimate ``dhat = S / N`` (``trial_totals``;
    no non-empty cluster -> inconclusive), no bounds with fewer than ``max(2, consts[0])``
    non-empty clusters (``consts[0]`` = the ``min_clusters`` option), else the unclipped
    interval ``dhat -+ half_width(acc, k_used, N, consts)`` with ``acc`` the sum over the
    non-empty clusters of ``residual_term(I_k, n_k, N)``, ``I_k = N D_k - n_k S`` the exact
    scaled residual (:func:`scaled_residual`); both are numba functions of the method."""

    @nb.njit(cache=True)
    def kernel(tables, margin, consts, lower, upper, estimate, status):
        min_clusters = consts[0]
        for r in range(tables.shape[0]):
            k_used, N, S = trial_totals(tables, r)
            if k_used == 0:
                write_inconclusive(r, lower, upper, estimate, status)
                continue
            Nf = float(N)
            est = S / Nf
            estimate[r] = est
            if k_used < 2 or k_used < min_clusters:
                no_bounds(r, lower, upper, status)
                continue
            acc = 0.0
            for k in range(tables.shape[1]):
                num, n = scaled_residual(tables, r, k, N, S)
                if n == 0.0:
                    continue
                acc += residual_term(num, n, Nf)
            half = half_width(acc, k_used, Nf, consts)
            lower[r] = est - half
            upper[r] = est + half
            status[r] = decide(lower[r], margin)

    return cache_closure(kernel)


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
    from scipy import special  # stdtrit is t.ppf's own kernel: the same bits, without importing scipy.stats
    q = 1.0 - alpha
    K = max(int(tables.shape[1]), 1)
    out = np.empty(K + 1, np.float64)
    out[0] = check_min_clusters(method)
    out[1:] = special.stdtrit(np.arange(1, K + 1), q)
    return out
