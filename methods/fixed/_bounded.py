"""Shared pieces of the bounded-mean intervals (``betting_ci``, ``empirical_bernstein``):
cluster scores rescaled to [0, 1] and the predictable plug-in bets of Waudby-Smith & Ramdas
(2024, J R Stat Soc B 86:1-27, "Estimating means of bounded random variables by betting").

Each non-empty cluster k (table order; empty clusters are missing and skipped) gives
``d_k = (n01 - n10) / n_k`` in [-1, 1]; the papers need observations in [0, 1], so the
methods work with ``x_k = (d_k + 1) / 2`` and map bounds back by ``d = 2x - 1``.  The
independent units are the clusters, whatever their sizes: the estimand is the mean of the
cluster differences (cluster-weighted), and validity needs only independent clusters with a
common mean of ``d_k`` (any within-cluster dependence, any cluster-size distribution that
does not depend on the outcomes).

Plug-in bets tuned to the sample size (WSR 2024, sec. 3 / 4, the "PrPl" choice with ``t`` in
the CS rate replaced by the planned size ``n``):

    lambda_i = min(c, sqrt(2 log(1/alpha) / (n sigma2_{i-1}))),
    mu_i = (1/2 + sum_{j<=i} x_j) / (i + 1),  sigma2_i = (1/4 + sum_{j<=i} (x_j - mu_j)^2) / (i + 1),

``mu_0 = 1/2``, ``sigma2_0 = 1/4`` (one fake observation).  ``n`` is the number of non-empty
clusters of the experiment, fixed before the data are seen when missingness does not depend
on the outcomes.  ``alpha`` is one-sided: the lower bound alone is a level-alpha bound (and
the pair of one-sided bounds is the ``1 - 2 alpha`` interval).
"""
import math

import numba as nb
import numpy as np


def truncation_consts(method, alpha: float, margin: float, tables) -> np.ndarray:
    """``[alpha, c]``: the one-sided level and the validated ``truncation`` option c in (0, 1)."""
    c = method.options["truncation"]
    if not (isinstance(c, (int, float)) and 0.0 < c < 1.0):
        raise ValueError(f"method {method.name!r}: option truncation must lie in (0, 1), got {c!r}")
    return np.array([alpha, c], dtype=np.float64)


@nb.njit(inline="always", cache=True)
def unit_scores(tables, r, xs):
    """Fill ``xs[:n]`` with ``x_k = (d_k + 1) / 2`` of replication r's non-empty clusters in
    table order; return ``(n, sum of d_k)``."""
    n = 0
    sd = 0.0
    for k in range(tables.shape[1]):
        m = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if m == 0:
            continue
        d = (tables[r, k, 2] - tables[r, k, 1]) / m
        xs[n] = 0.5 * (d + 1.0)
        sd += d
        n += 1
    return n, sd


@nb.njit(inline="always", cache=True)
def plugin_bets(xs, n, log_inv_alpha, c, lams, mus):
    """Predictable plug-in bets ``lams[:n]`` tuned to ``n`` and the predictable means
    ``mus[i] = mu_{i-1}`` (both use only x_1 .. x_{i-1})."""
    sum_x = 0.0
    sum_sq = 0.0
    sig2 = 0.25
    mu = 0.5
    for i in range(n):
        lam = math.sqrt(2.0 * log_inv_alpha / (n * sig2))
        lams[i] = lam if lam < c else c
        mus[i] = mu
        sum_x += xs[i]
        mu = (0.5 + sum_x) / (i + 2.0)
        sum_sq += (xs[i] - mu) * (xs[i] - mu)
        sig2 = (0.25 + sum_sq) / (i + 2.0)


@nb.njit(inline="always", cache=True)
def scored_bets(tables, r, log_inv_alpha, c, xs, lams, mus):
    """Replication r's scores ``xs[:n]``, bets and predictable means; returns ``(n, mean d_k)``
    (``n = 0``: no non-empty cluster, nothing filled, NaN mean)."""
    n, sd = unit_scores(tables, r, xs)
    if n == 0:
        return 0, math.nan
    plugin_bets(xs, n, log_inv_alpha, c, lams, mus)
    return n, sd / n


# The assumptions every bounded-mean guarantee here rests on (their theorems assume nothing
# about the law of d_k beyond its range): stated once, declared by each method's ``theorem``.
BOUNDED_MEAN_ASSUMPTIONS = (
    "independent clusters are the units; any dependence among the trials within a cluster",
    "every cluster's difference d_k = (n01 - n10) / n_k, in [-1, 1], has the same mean mu (exchangeable "
    "clusters), or the clusters enter in an order that does not depend on their means",
    "the number of clusters and their order are fixed independently of the outcomes (a missing cluster is "
    "missing completely at random)",
    "the recorded outcomes are the outcomes (no judge label noise): the estimand is the mean cluster difference "
    "of what is recorded",
)
