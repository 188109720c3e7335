"""``cluster_t`` -- the seed's clustered interval with a Student t critical value.

Each independent cluster contributes the mean of its paired differences
``d_k = (n01 - n10) / n_k``; with ``K`` non-empty clusters, mean ``dbar`` and sample SD
``s`` (ddof = 1) the interval is

    dbar +- t_{1 - alpha/2, K - 1} * s / sqrt(K)

the one-sample t interval on cluster summaries (Student 1908, Biometrika 6:1-25; for
cluster-level analysis of clustered data: Donner & Klar 2000, *Design and Analysis of
Cluster Randomization Trials*, sec. 6.2, the t-test applied to cluster means).
Everything else is ``clustered_normal``: missing (empty) clusters are skipped, fewer
non-empty clusters than ``min_clusters`` (default 2, the least a t interval needs) ->
inconclusive.  The t quantile widens the interval for few clusters but does not remove
the seed's flaw: when every cluster has the same difference the SD is zero and the
interval is a point (30 customers who all tie still pass).  Estimand: cluster-weighted.
"""
import math

import numba as nb

from methods.base import Estimand, FixedMethod, source_files_of
from methods.fixed import _cluster, _common, _moments
from methods.fixed._cluster import t_consts
from methods.fixed._common import decide, no_bounds
from methods.fixed._moments import MomentMethod, cluster_mean_var, moments_mean_var


@nb.njit(inline="always", cache=True)
def _interval(r, k_used, mean, var, margin, consts, lower, upper, estimate, status):
    estimate[r] = mean
    if k_used < 2 or k_used < consts[0]:
        no_bounds(r, lower, upper, status)
        return
    half = consts[k_used - 1] * math.sqrt(var / k_used)
    lower[r] = mean - half
    upper[r] = mean + half
    status[r] = decide(lower[r], margin)


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    for r in range(tables.shape[0]):
        k_used, mean, var = cluster_mean_var(tables, r)
        _interval(r, k_used, mean, var, margin, consts, lower, upper, estimate, status)


@nb.njit(cache=True)
def moments_kernel(stats, size, margin, consts, lower, upper, estimate, status):
    for r in range(stats.shape[0]):
        mean, var = moments_mean_var(stats[r, 0], size, stats[r, 1], stats[r, 2])
        _interval(r, stats[r, 0], mean, var, margin, consts, lower, upper, estimate, status)


METHOD = MomentMethod(
    name="cluster_t",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Student (1908) Biometrika 6:1-25, one-sample t interval, applied to cluster means as in "
             "Donner & Klar (2000) Design and Analysis of Cluster Randomization Trials, sec. 6.2",
    summary="mean of cluster-mean differences, sample SD over clusters, t critical value on K-1 df",
    kernel=kernel,
    prepare=t_consts,
    options={"min_clusters": 2.0},
    source_files=source_files_of(kernel, _cluster, _common, _moments, FixedMethod),
    moments_kernel=moments_kernel,
)
