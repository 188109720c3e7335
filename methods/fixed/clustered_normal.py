"""``clustered_normal`` -- the seed's teaching interval, reproduced flaw and all.

Each independent cluster contributes the mean of its paired differences
``d_k = (n01 - n10) / n_k``; the interval is ``mean(d) +- z * sd(d) / sqrt(K)`` with the
sample SD (ddof = 1) and a normal critical value.  Clusters without trials are missing.
Fewer non-empty clusters than the registered minimum (option ``min_clusters``, the seed's
``minimum_independent_clusters = 30``) -> inconclusive.  When every cluster has the same
difference the SD is zero and the interval collapses to a point: the seed's false pass
(30 customers, loss probability 0.04, margin 0.03: P(pass) = 0.96**30 = 0.29386).

With equal cluster sizes the mean and variance are computed from the integer moments
``(K, sum D_k, sum D_k^2)`` (``methods.fixed._moments``), which is also what the studies
engine's moment path samples.

Source: cx_eval_lab evidence-spine chapter, "Statistical non-inferiority" (../shared/seed);
the interval is the textbook large-sample z interval for a mean of cluster summaries
(Donner & Klar 2000, *Design and Analysis of Cluster Randomization Trials*, sec. 6.2).
"""
import math

import numba as nb
import numpy as np

from methods.base import Estimand, FixedMethod, source_files_of, z_value
from methods.fixed import _common, _moments
from methods.fixed._common import decide, no_bounds, write_inconclusive
from methods.fixed._moments import MomentMethod, cluster_mean_var, moments_mean_var


@nb.njit(inline="always", cache=True)
def _interval(r, k_used, mean, var, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    min_clusters = consts[1]
    if k_used == 0:
        write_inconclusive(r, lower, upper, estimate, status)
        return
    estimate[r] = mean
    if k_used < 2 or k_used < min_clusters:
        no_bounds(r, lower, upper, status)
        return
    half = z * math.sqrt(var / k_used)
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


def prepare(method, confidence, tables):
    return np.array([z_value(confidence), method.options["min_clusters"]], dtype=np.float64)


METHOD = MomentMethod(
    name="clustered_normal",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="cx_eval_lab evidence spine (seed chapter), clustered normal interval; "
             "Donner & Klar (2000) Design and Analysis of Cluster Randomization Trials, sec. 6.2",
    summary="mean of cluster-mean differences, sample SD over clusters, normal critical value",
    kernel=kernel,
    prepare=prepare,
    options={"min_clusters": 30.0},
    source_files=source_files_of(kernel, _common, _moments, FixedMethod),
    moments_kernel=moments_kernel,
)
