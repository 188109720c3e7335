"""Numba helpers shared by the cluster-level sequential kernels: running mean and sum of
squared deviations of the cluster-mean differences ``d_k = (n01 - n10) / n_k`` (Welford
1962, Technometrics 4:419-420), so that identical differences give a variance of exactly 0,
and the per-look kernel of the rules that decide on them (:func:`welford_kernel`:
``alpha_spending``, ``msprt``).
"""
import math

import numba as nb

from methods.sequential.base import LOOK_CONTINUE
from simlab.numba_cache import cache_closure


@nb.njit(inline="always", cache=True)
def welford_add(tables, r, k, count, mean, m2):
    """Add cluster k of replication r (skipped when empty); returns (count, mean, m2)."""
    n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
    if n == 0:
        return count, mean, m2
    d = (tables[r, k, 2] - tables[r, k, 1]) / n
    count += 1
    delta = d - mean
    mean += delta / count
    m2 += delta * (d - mean)
    return count, mean, m2


def welford_kernel(look):
    """The per-look kernel of a rule on the running cluster-mean differences (``alpha_spending``,
    ``msprt``): per replication and look ``j`` the clusters up to the look are added
    (:func:`welford_add`), the estimate is their mean (NaN with none), a look with fewer than
    2 or than ``consts[0]`` (the ``min_clusters`` option) non-empty clusters, or with zero
    sample variance, continues with no bound; otherwise ``look(j, L, count, mean, m2, margin,
    consts) -> (status, bound)`` (a numba function) decides it."""

    @nb.njit(cache=True)
    def kernel(tables, ends, margin, consts, status, bound, estimate):
        min_clusters = consts[0]
        L = ends.shape[1]
        R = tables.shape[0]
        for r in range(R):
            count = 0
            mean = 0.0
            m2 = 0.0
            k = 0
            for j in range(L):
                e = ends[r, j]
                while k < e:
                    count, mean, m2 = welford_add(tables, r, k, count, mean, m2)
                    k += 1
                estimate[r, j] = mean if count > 0 else math.nan
                if count < 2 or count < min_clusters or m2 <= 0.0:
                    status[r, j] = LOOK_CONTINUE
                    bound[r, j] = math.nan
                    continue
                status[r, j], bound[r, j] = look(j, L, count, mean, m2, margin, consts)

    return cache_closure(kernel)
