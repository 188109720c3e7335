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

from methods.conventions import OptionRange
from methods.protocol import Estimand, FixedMethod, z_value
from methods.fixed._cluster import check_min_clusters, ratio_kernel


@nb.njit(inline="always", cache=True)
def squared_residual(num, n, Nf):
    """Cluster k's term times N^2: the residual D_k - n_k dhat = I_k / N, I_k = ``num`` an
    exact integer."""
    return num * num


@nb.njit(cache=True)
def half_width(acc, k_used, Nf, consts):
    """``z sqrt(var(dhat))``, the variance of eqs. 1-4 (module docstring) from the summed
    terms; consts = (min_clusters, z)."""
    var = k_used / (k_used - 1.0) * acc / (Nf * Nf * Nf * Nf)
    return consts[1] * math.sqrt(var)


kernel = ratio_kernel(squared_residual, half_width)


def prepare(method, alpha, margin, tables):
    """consts = (min_clusters, z); ``ratio_kernel`` reads min_clusters first."""
    return np.array([check_min_clusters(method), z_value(alpha)], dtype=np.float64)


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
    ranges={"min_clusters": OptionRange(0.0, integer=True)},  # a count of clusters
)
