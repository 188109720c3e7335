"""Numba helpers shared by fixed-sample kernels."""
import math

import numba as nb

from methods.protocol import FAIL, INCONCLUSIVE, PASS


@nb.njit(inline="always", cache=True)
def decide(lower, margin):
    """Non-inferiority decision: pass iff lower >= -margin (inclusive); NaN -> inconclusive."""
    if math.isnan(lower):
        return INCONCLUSIVE
    return PASS if lower >= -margin else FAIL


@nb.njit(inline="always", cache=True)
def pooled_counts(tables, r):
    """Pooled (n11, n10, n01, n00) of replication r."""
    a = 0
    b = 0
    c = 0
    d = 0
    for k in range(tables.shape[1]):
        a += tables[r, k, 0]
        b += tables[r, k, 1]
        c += tables[r, k, 2]
        d += tables[r, k, 3]
    return a, b, c, d


@nb.njit(inline="always", cache=True)
def write_inconclusive(r, lower, upper, estimate, status):
    """Replication r has no trials: no interval, no estimate."""
    estimate[r] = math.nan
    no_bounds(r, lower, upper, status)


@nb.njit(inline="always", cache=True)
def no_bounds(r, lower, upper, status):
    """Replication r keeps its estimate but gets no interval (e.g. too few clusters)."""
    lower[r] = math.nan
    upper[r] = math.nan
    status[r] = INCONCLUSIVE
