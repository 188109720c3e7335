"""``obuchowski`` -- Wald interval for the difference of clustered correlated proportions
with the variance of Obuchowski (1998).

Obuchowski, N. A. (1998). On the comparison of correlated proportions for clustered data.
Statistics in Medicine 17:1495-1507.  With ``K`` clusters, ``n_k`` pairs in cluster k,
``N = sum n_k``, and ``x_k`` (baseline passes, n11 + n10) and ``y_k`` (candidate passes,
n11 + n01) per cluster, the proportions are ratio estimators (eq. 1)

    p_b = sum x_k / N,   p_c = sum y_k / N,

with the empirical variances and covariance of eqs. 2-3

    var(p) = K / (K - 1) * sum_k (x_k - n_k p)^2 / N^2,
    cov(p_b, p_c) = K / (K - 1) * sum_k (x_k - n_k p_b)(y_k - n_k p_c) / N^2,

and ``var(p_c - p_b) = var(p_b) + var(p_c) - 2 cov`` (eq. 4).  Because ``y_k - x_k = D_k
= n01 - n10`` this collapses to

    var(dhat) = K / (K - 1) * sum_k (D_k - n_k dhat)^2 / N^2,   dhat = p_c - p_b.

(The equation numbers follow the paper as used by the published implementations we read;
the paper's chi-square test of H0: p_b = p_c evaluates the variance under H0, which is
the simplification of Yang, Sun & Hardin 2010, Biometrical Journal 52:638-652:
``X^2 = (K-1)/K (sum D_k)^2 / sum D_k^2``.  A Wald interval uses the unrestricted
estimates above.)  Interval ``dhat +- z_{1-alpha/2} sqrt(var)``, unclipped -- it is
``K/(K-1)`` times the CR0 cluster sandwich with a normal reference, no small-sample
correction beyond that factor.  Empty clusters are missing; fewer than
``max(2, min_clusters)`` non-empty clusters -> inconclusive.  A sample in which every
cluster has the same ratio D_k / n_k (e.g. no discordant pairs) has zero variance and the
interval is a point.

Estimand: trial-weighted (ratio estimators).
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod, z_value
from methods.fixed import _cluster, _common
from methods.fixed._cluster import check_min_clusters, scaled_residual, trial_totals
from methods.fixed._common import decide, no_bounds, write_inconclusive


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    min_clusters = consts[1]
    R, K, _ = tables.shape
    for r in range(R):
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
        # residual D_k - n_k dhat = I_k / N with I_k an exact integer
        acc = 0.0
        for k in range(K):
            num, n = scaled_residual(tables, r, k, N, S)
            if n == 0.0:
                continue
            acc += num * num
        var = k_used / (k_used - 1.0) * acc / (Nf * Nf * Nf * Nf)
        half = z * math.sqrt(var)
        lower[r] = est - half
        upper[r] = est + half
        status[r] = decide(lower[r], margin)


def prepare(method, alpha, margin, tables):
    return np.array([z_value(alpha), check_min_clusters(method)], dtype=np.float64)


METHOD = FixedMethod(
    name="obuchowski",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Obuchowski (1998) Statistics in Medicine 17:1495-1507, eqs. 1-4 (ratio estimators, "
             "empirical variance/covariance of clustered correlated proportions); Wald interval",
    summary="trial-weighted difference, Obuchowski clustered variance (K/(K-1) x CR0), normal critical value",
    kernel=kernel,
    prepare=prepare,
    options={"min_clusters": 2.0},
)
