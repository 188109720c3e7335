"""Numba helpers shared by fixed-sample kernels."""
import math

import numba as nb

from methods.base import FAIL, INCONCLUSIVE, PASS


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
