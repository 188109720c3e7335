"""Numba helper shared by the cluster-level sequential kernels: running mean and sum of
squared deviations of the cluster-mean differences ``d_k = (n01 - n10) / n_k`` (Welford
1962, Technometrics 4:419-420), so that identical differences give a variance of exactly 0.
"""
import numba as nb


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
