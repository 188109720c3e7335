"""``empirical_bernstein`` -- predictable plug-in empirical-Bernstein interval for the mean
cluster difference (Waudby-Smith & Ramdas 2024, J R Stat Soc B 86:1-27, the PrPl-EB
confidence interval, their Theorem 2 with bets tuned to the sample size).

The simple conservative baseline of ``betting_ci``: same data (cluster differences rescaled to
``x_k = (d_k + 1) / 2`` in [0, 1], empty clusters skipped, table order; see
``methods.fixed._bounded``), same estimand (cluster-weighted), a closed form instead of a root
search.  With predictable bets ``lambda_i = min(c, sqrt(2 log(1/alpha) / (n sigma2_{i-1})))``
(option ``truncation`` = c, default 1/2), predictable means ``mu_{i-1}`` and
``psi_E(lambda) = (-log(1 - lambda) - lambda) / 4``, the process

    prod_i exp(lambda_i (x_i - mu) - 4 (x_i - mu_{i-1})^2 psi_E(lambda_i))

is a nonnegative supermartingale for the true mean ``mu`` (WSR 2024, Theorem 2; any
predictable ``mu_{i-1}`` and ``lambda_i`` in [0, 1) keep this), so by Ville's inequality the
level-alpha lower bound is

    L = sum(lambda_i x_i) / sum(lambda_i) - (log(1/alpha) + sum (x_i - mu_{i-1})^2 (-log(1 - lambda_i) - lambda_i)) / sum(lambda_i),

and the upper bound is the mirror image (``+`` the same half-width; the bets and penalties are
symmetric under ``x -> 1 - x``).  Bounds are clipped to [0, 1] and mapped back by ``d = 2x - 1``.

Boundaries: no non-empty cluster -> inconclusive; one cluster, all pass, all fail or no
discordant pairs -> a valid interval of positive width (the penalty ``log(1/alpha) /
sum(lambda_i)`` never vanishes): it never gives the zero-variance pass.
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod, Theorem
from methods.fixed._bounded import BOUNDED_MEAN_ASSUMPTIONS, scored_bets, truncation_consts
from methods.fixed._common import decide, write_inconclusive


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    log_inv = math.log(1.0 / consts[0])
    c = consts[1]
    K = tables.shape[1]
    xs = np.empty(K)
    lams = np.empty(K)
    mus = np.empty(K)
    for r in range(tables.shape[0]):
        n, est = scored_bets(tables, r, log_inv, c, xs, lams, mus)
        if n == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        estimate[r] = est
        s_lam = 0.0
        s_lx = 0.0
        pen = 0.0
        for i in range(n):
            lam = lams[i]
            s_lam += lam
            s_lx += lam * xs[i]
            e = xs[i] - mus[i]
            pen += e * e * (-math.log1p(-lam) - lam)
        centre = s_lx / s_lam
        half = (log_inv + pen) / s_lam
        lower[r] = 2.0 * max(centre - half, 0.0) - 1.0
        upper[r] = 2.0 * min(centre + half, 1.0) - 1.0
        status[r] = decide(lower[r], margin)


METHOD = FixedMethod(
    name="empirical_bernstein",
    version="1",
    estimand=Estimand.CLUSTER,
    citation="Waudby-Smith & Ramdas (2024) J R Stat Soc B 86:1-27, predictable plug-in empirical-Bernstein "
             "interval (Theorem 2), bets tuned to the sample size; Ville (1939) inequality",
    summary="closed-form empirical-Bernstein interval for the mean cluster difference (rescaled to [0, 1]); "
            "conservative baseline of betting_ci",
    kernel=kernel,
    prepare=truncation_consts,
    options={"truncation": 0.5},
    theorem=Theorem(
        statement="for any law of the cluster differences in [-1, 1] with mean mu, P(lower bound > mu) <= alpha at "
                  "the planned number of clusters (the predictable plug-in empirical-Bernstein supermartingale and "
                  "Ville's inequality)",
        assumptions=BOUNDED_MEAN_ASSUMPTIONS,
        citation="Waudby-Smith & Ramdas (2024) J R Stat Soc B 86:1-27, predictable plug-in empirical-Bernstein "
                 "interval (Theorem 2); Ville (1939)"),
)
