"""Cluster-mean moments: the integer sufficient statistics of ``clustered_normal`` and
``cluster_t``, and the method class that can decide from them without tables.

With ``D_k = n01 - n10`` and ``n_k`` trials in cluster ``k``, the cluster-level methods
need only the mean and sample variance of ``d_k = D_k / n_k`` over the ``k`` non-empty
clusters.  When every non-empty cluster has the same size ``m`` those are functions of
three integers, ``(k, S1 = sum D_k, S2 = sum D_k^2)``:

    mean = S1 / (m k),    var = (k S2 - S1^2) / (m^2 k (k - 1))

(the numerator is exact in int64, so clusters that all share one difference give a
variance of exactly zero -- the seed's false pass).  The table kernels use this formula
whenever the sizes are equal and the two-pass float formula otherwise, and the studies
engine's moment path (``simlab.sampling``) draws ``(k, S1, S2)`` directly: the same
numbers, so both paths give bitwise-identical decisions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numba as nb
import numpy as np

from methods.protocol import BatchResult, FixedMethod, check_alpha, check_margin
from methods.fixed._common import decide, no_bounds
from simlab.sampling.moments import MAX_TRIALS_EXACT


@nb.njit(inline="always", cache=True)
def moments_mean_var(k_used, size, S1, S2):
    """(mean, var) of ``k_used`` cluster differences of clusters with ``size`` trials each
    from ``S1 = sum D_k`` and ``S2 = sum D_k^2`` (NaN mean for k = 0, NaN var for k < 2)."""
    if k_used == 0:
        return math.nan, math.nan
    mean = S1 / (float(size) * k_used)
    if k_used < 2:
        return mean, math.nan
    num = np.int64(k_used) * np.int64(S2) - np.int64(S1) * np.int64(S1)
    return mean, num / (float(size) * size * k_used * (k_used - 1))


@nb.njit(inline="always", cache=True)
def cluster_mean_var(tables, r):
    """(k_used, mean, var) of the cluster differences ``d_k = D_k / n_k`` of replication r.

    Equal non-empty cluster sizes (and ``k m <= MAX_TRIALS_EXACT``): the integer formula of
    ``moments_mean_var``.  Otherwise two passes (mean, then squared deviations; ddof = 1),
    so equal ``d_k`` give a variance of zero up to one rounding of the mean."""
    K = tables.shape[1]
    k_used = 0
    size = -1
    S1 = np.int64(0)
    S2 = np.int64(0)
    s1 = 0.0
    for k in range(K):
        n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if n == 0:
            continue
        D = np.int64(tables[r, k, 2]) - tables[r, k, 1]
        if k_used == 0:
            size = n
        elif n != size:
            size = 0  # unequal sizes
        k_used += 1
        S1 += D
        S2 += D * D
        s1 += D / n
    if k_used == 0:
        return 0, math.nan, math.nan
    if size > 0 and float(size) * k_used <= MAX_TRIALS_EXACT:
        mean, var = moments_mean_var(k_used, size, S1, S2)
        return k_used, mean, var
    mean = s1 / k_used
    if k_used < 2:
        return k_used, mean, math.nan
    ss = 0.0
    for k in range(K):
        n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if n == 0:
            continue
        e = (tables[r, k, 2] - tables[r, k, 1]) / n - mean
        ss += e * e
    return k_used, mean, ss / (k_used - 1)


@nb.njit(inline="always", cache=True)
def _interval(r, k_used, mean, var, margin, crit, lower, upper, estimate, status):
    """``mean +- crit[k_used - 1] sqrt(var / k_used)``; ``crit[0]`` is ``min_clusters``
    (fewer non-empty clusters, or fewer than 2 -> no interval; none at all -> NaN estimate)."""
    estimate[r] = mean
    if k_used < 2 or k_used < crit[0]:
        no_bounds(r, lower, upper, status)
        return
    half = crit[k_used - 1] * math.sqrt(var / k_used)
    lower[r] = mean - half
    upper[r] = mean + half
    status[r] = decide(lower[r], margin)


@nb.njit(cache=True)
def cluster_mean_kernel(tables, margin, crit, lower, upper, estimate, status):
    """Batch kernel of the cluster-mean intervals (``clustered_normal``, ``cluster_t``):
    ``crit = [min_clusters, c_1, ..., c_K]``, ``c_j`` the critical value on ``j`` degrees of
    freedom (the normal ``z`` for every ``j`` in ``clustered_normal``)."""
    for r in range(tables.shape[0]):
        k_used, mean, var = cluster_mean_var(tables, r)
        _interval(r, k_used, mean, var, margin, crit, lower, upper, estimate, status)


@nb.njit(cache=True)
def cluster_mean_moments_kernel(stats, size, margin, crit, lower, upper, estimate, status):
    """``cluster_mean_kernel`` from ``(k_used, S1, S2)`` rows (see ``MomentMethod``)."""
    for r in range(stats.shape[0]):
        mean, var = moments_mean_var(stats[r, 0], size, stats[r, 1], stats[r, 2])
        _interval(r, stats[r, 0], mean, var, margin, crit, lower, upper, estimate, status)


@dataclass(frozen=True, kw_only=True)
class MomentMethod(FixedMethod):
    """A :class:`FixedMethod` that can also decide from cluster moments.

    ``moments_kernel(stats, size, margin, consts, lower, upper, estimate, status)`` reads
    ``stats = int64[R, 3]`` rows ``(k_used, S1, S2)`` of replications whose non-empty
    clusters all have ``size`` trials and writes exactly what ``kernel`` writes for any
    tables with those moments (tested).  ``consts`` come from the same ``prepare``."""
    moments_kernel: Callable | None = None

    DECISION_PATH = FixedMethod.DECISION_PATH + ("batch_moments", "moment_consts")

    def batch_moments(self, stats: np.ndarray, size: int, clusters: int, margin: float,
                      alpha: float = 0.025, consts: np.ndarray | None = None) -> BatchResult:
        """Decide every row of ``stats`` (``int64[R, 3]``, see the class docstring) for a
        design of ``clusters`` clusters; ``consts`` (from :meth:`moment_consts`) may be
        passed to reuse one ``prepare`` across batches."""
        check_margin(margin)
        if stats.ndim != 2 or stats.shape[1] != 3 or stats.dtype != np.int64:
            raise ValueError(f"stats must be int64[R, 3], got {stats.dtype}{stats.shape}")
        if not (isinstance(size, (int, np.integer)) and size >= 1):
            raise ValueError(f"size must be an integer >= 1, got {size!r}")
        if consts is None:
            consts = self.moment_consts(alpha, margin, clusters)
        R = stats.shape[0]
        lower = np.empty(R, np.float64)
        upper = np.empty(R, np.float64)
        estimate = np.empty(R, np.float64)
        status = np.empty(R, np.int8)
        self.moments_kernel(stats, int(size), float(margin), consts, lower, upper, estimate, status)
        return BatchResult(self.name, lower, upper, estimate, status)

    def moment_consts(self, alpha: float, margin: float, clusters: int) -> np.ndarray:
        """``prepare``'s constants for a batch of ``clusters``-cluster designs decided at ``margin``."""
        check_alpha(alpha)
        shape_only = np.empty((0, int(clusters), 4), np.int32)
        return np.ascontiguousarray(self.prepare(self, self.level(alpha), float(margin), shape_only),
                                    dtype=np.float64)
