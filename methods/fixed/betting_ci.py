"""``betting_ci`` -- fixed-time betting confidence interval for the mean cluster difference
(Waudby-Smith & Ramdas 2024, J R Stat Soc B 86:1-27, "Estimating means of bounded random
variables by betting"; arXiv 2010.09686).

Clusters are the independent units; cluster k's difference ``d_k = (n01 - n10) / n_k`` is
rescaled to ``x_k = (d_k + 1) / 2`` in [0, 1] as the paper requires (``methods.fixed._bounded``;
empty clusters are missing and skipped).  Estimand: cluster-weighted (the mean of the
``d_k``; with equal cluster sizes also the trial-weighted difference).  For a candidate mean
``m`` the capital of the gambler who bets that the mean exceeds ``m`` is

    K_t^+(m) = prod_{i <= t} (1 + min(lambda_i, c / m) (x_i - m)),

with WSR's predictable plug-in bets tuned to the sample size ``n`` (``_bounded.plugin_bets``,
``lambda_i = sqrt(2 log(1/alpha) / (n sigma2_{i-1}))``) and truncation ``c / m`` (option
``truncation`` = c, default 1/2), which keeps every factor >= 1 - c > 0.  For ``m = mu`` it is a
nonnegative martingale with ``K_0 = 1``, so by Ville's inequality
``P(max_{t <= n} K_t^+(mu) >= 1/alpha) <= alpha`` and

    L = inf{ m in [0, 1] : max_{t <= n} K_t^+(m) < 1/alpha }

is a level-alpha lower confidence bound ("the capital stays below 1/alpha").  The upper
bound is the same construction on ``1 - x`` (the "-" capital).  Together they are WSR's
hedged capital interval at ``theta = 1/2`` and two-sided level ``2 alpha``: ``max(K^+/2,
K^-/2) >= 1/(2 alpha)`` iff ``K^+ >= 1/alpha`` or ``K^- >= 1/alpha``.

Root search, justified: each factor is positive and nonincreasing in ``m`` (for ``m <= c /
lambda_i`` it is ``1 + lambda_i (x_i - m)``, beyond it ``1 - c + c x_i / m``, and the two
agree at the switch), so every ``K_t^+(m)`` and their running maximum are nonincreasing and
continuous; ``{m : max_t K_t^+(m) >= 1/alpha}`` is the interval ``[0, L]`` and bisection on
[0, 1] brackets ``L`` (``TOL``; the product is evaluated directly and the scan stops as soon
as the capital reaches 1/alpha, which also keeps it from overflowing).  The decision does
not depend on the bisection: promote iff ``max_t K_t^+(m0) >= 1/alpha`` at ``m0 = (1 -
margin) / 2`` (equivalent to ``2L - 1 >= -margin`` by monotonicity and continuity), and the
reported bound is clamped to agree with it.

The capital depends on the order of the clusters (table order, which must not depend on the
outcomes).  Ville's inequality needs ``E[x_t | x_1..x_{t-1}] = mu`` at every step, so the guarantee
holds for independent clusters with the same mean (exchangeable clusters, e.g. iid draws of
customers, whatever their within-cluster dependence) in an order fixed independently of the
outcomes; it does not hold for an arbitrary fixed order when the clusters' means differ (an
order correlated with the means, such as largest mean first, can lift the capital at the
average mean), so there the order must be independent of the clusters' means.

Boundaries: no non-empty cluster -> inconclusive; one cluster -> a valid, wide interval; all
pass / all fail / no discordant pairs -> every ``x_k = 1/2``: the interval is around 0 with
positive width (the plug-in variance starts at 1/4 and the bets stay finite).
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod, OptionRange, Theorem
from methods.fixed._bounded import BOUNDED_MEAN_ASSUMPTIONS, scored_bets, truncation_consts
from methods.fixed._common import decide, write_inconclusive

TOL = 1e-12  # bisection bracket width on the [0, 1] scale


@nb.njit(cache=True)
def reaches(xs, lams, n, m, c, thr, sign):
    """Does ``max_{t <= n} K_t(m) >= thr``?  ``sign = 1``: the ``+`` capital on ``x``;
    ``sign = -1``: the ``+`` capital on ``1 - x`` (the ``-`` capital on ``x``)."""
    cap = c / m if m > 0.0 else math.inf
    k = 1.0
    for i in range(n):
        x = xs[i] if sign > 0 else 1.0 - xs[i]
        lam = lams[i] if lams[i] < cap else cap
        k *= 1.0 + lam * (x - m)
        if k >= thr:
            return True
    return False


@nb.njit(cache=True)
def lower_x(xs, lams, n, c, thr, sign):
    """``inf{m : max_t K_t(m) < thr}`` by bisection (within TOL, on the conservative side)."""
    if not reaches(xs, lams, n, 0.0, c, thr, sign):
        return 0.0
    lo = 0.0
    hi = 1.0
    while hi - lo > TOL:
        mid = 0.5 * (lo + hi)
        if reaches(xs, lams, n, mid, c, thr, sign):
            lo = mid
        else:
            hi = mid
    return lo


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    alpha = consts[0]
    c = consts[1]
    thr = 1.0 / alpha
    log_inv = math.log(thr)
    m0 = 0.5 * (1.0 - margin)
    K = tables.shape[1]
    xs = np.empty(K)
    lams = np.empty(K)
    mus = np.empty(K)
    for r in range(tables.shape[0]):
        n, est = scored_bets(tables, r, log_inv, math.inf, xs, lams, mus)
        if n == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        estimate[r] = est
        lo = 2.0 * lower_x(xs, lams, n, c, thr, 1) - 1.0
        if reaches(xs, lams, n, m0, c, thr, 1):
            lo = max(lo, -margin)
        elif lo >= -margin:
            lo = np.nextafter(-margin, -math.inf)
        lower[r] = lo
        upper[r] = 1.0 - 2.0 * lower_x(xs, lams, n, c, thr, -1)
        status[r] = decide(lo, margin)


METHOD = FixedMethod(
    name="betting_ci",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Waudby-Smith & Ramdas (2024) J R Stat Soc B 86:1-27, hedged capital process with predictable "
             "plug-in bets tuned to the sample size, truncated at c/m; Ville (1939) inequality",
    summary="fixed-time betting interval for the mean cluster difference (rescaled to [0, 1]); valid for any "
            "within-cluster dependence",
    kernel=kernel,
    prepare=truncation_consts,
    options={"truncation": 0.5},
    ranges={"truncation": OptionRange(0.0, 1.0)},  # the catalogue's closed check; the code refuses the open ends
    theorem=Theorem(
        statement="for any law of the cluster differences in [-1, 1] with mean mu, P(lower bound > mu) <= alpha at "
                  "the planned number of clusters: the capital at mu is a nonnegative martingale with mean one, and "
                  "Ville's inequality bounds the chance that it ever reaches 1/alpha",
        assumptions=BOUNDED_MEAN_ASSUMPTIONS,
        citation="Waudby-Smith & Ramdas (2024) J R Stat Soc B 86:1-27 (betting confidence sets, hedged capital); "
                 "Ville (1939)"),
)
