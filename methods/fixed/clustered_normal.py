"""``clustered_normal`` -- the seed's teaching interval, reproduced flaw and all.

Each independent cluster contributes the mean of its paired differences
``d_k = (n01 - n10) / n_k``; the interval is ``mean(d) +- z * sd(d) / sqrt(K)`` with the
sample SD (ddof = 1) and a normal critical value.  Clusters without trials are missing.
Fewer non-empty clusters than the registered minimum (option ``min_clusters``, the seed's
``minimum_independent_clusters = 30``) -> inconclusive.  When every cluster has the same
difference the SD is zero and the interval collapses to a point: the seed's false pass
(30 customers, loss probability 0.04, margin 0.03: P(pass) = 0.96**30 = 0.29386).

Source: cx_eval_lab evidence-spine chapter, "Statistical non-inferiority" (../shared/seed);
the interval is the textbook large-sample z interval for a mean of cluster summaries
(Donner & Klar 2000, *Design and Analysis of Cluster Randomization Trials*, sec. 6.2).
"""
import math

import numba as nb
import numpy as np

from methods.base import Estimand, FixedMethod, source_files_of, z_value
from methods.fixed import _common
from methods.fixed._common import decide, no_bounds, write_inconclusive


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    min_clusters = consts[1]
    R, K, _ = tables.shape
    for r in range(R):
        s1 = 0.0
        k_used = 0
        for k in range(K):
            n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n == 0:
                continue
            s1 += (tables[r, k, 2] - tables[r, k, 1]) / n
            k_used += 1
        if k_used == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        mean = s1 / k_used
        estimate[r] = mean
        if k_used < 2 or k_used < min_clusters:
            no_bounds(r, lower, upper, status)
            continue
        # two-pass variance: exactly zero when every cluster has the same difference
        ss = 0.0
        for k in range(K):
            n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n == 0:
                continue
            e = (tables[r, k, 2] - tables[r, k, 1]) / n - mean
            ss += e * e
        var = ss / (k_used - 1)
        half = z * math.sqrt(var / k_used)
        lower[r] = mean - half
        upper[r] = mean + half
        status[r] = decide(lower[r], margin)


def prepare(method, confidence, tables):
    return np.array([z_value(confidence), method.options["min_clusters"]], dtype=np.float64)


METHOD = FixedMethod(
    name="clustered_normal",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="cx_eval_lab evidence spine (seed chapter), clustered normal interval; "
             "Donner & Klar (2000) Design and Analysis of Cluster Randomization Trials, sec. 6.2",
    summary="mean of cluster-mean differences, sample SD over clusters, normal critical value",
    kernel=kernel,
    prepare=prepare,
    options={"min_clusters": 30.0},
    source_files=source_files_of(kernel, _common, FixedMethod),
)
