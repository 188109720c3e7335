"""``trial_bootstrap`` -- naive paired percentile bootstrap over trial pairs, clusters ignored
(a practitioner rule, here to be measured, not recommended).

All trial pairs of all clusters are pooled into one sample of ``N`` paired differences
``y in {-1, 0, 1}`` (``n10`` pairs of -1, ``n01`` of +1, the rest 0); each of ``B`` resamples
(option ``resamples``, default 999) draws ``N`` pairs with replacement and recomputes the mean
difference; the interval is the percentile interval ``(theta*_(alpha), theta*_(1 - alpha))``
(Efron 1979, Ann. Statist. 7:1-26; Efron & Tibshirani 1993, *An Introduction to the
Bootstrap*, eq. 13.5), quantiles by the order statistic of rank ``(B + 1) p`` (Davison &
Hinkley 1997, eq. 5.18).  It treats every pair as independent, which is what a team does when
it bootstraps its per-sample results without a cluster key.  Estimand: trial-weighted.

Randomness: the counter-based generator of ``methods.fixed._bootstrap`` with the pooled
sample as the "clusters" of size one, keyed by the pooled counts (``pooled_key``): one table
always gets the same interval, whatever its replication, chunk or worker.  Boundaries: fewer
than 2 pairs -> inconclusive; no discordant pairs (all pass, all fail, ...) -> every resample
is 0, interval [0, 0], *pass* (the seed's zero-variance flaw, reproduced on purpose).
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod, OptionRange
from methods.fixed._common import decide, no_bounds, pooled_counts
from methods.fixed._bootstrap import BOOT_SALT1, bootstrap_statistics, order_quantile
from methods.fixed.cluster_bootstrap import resamples_option
from simlab.rng import mix64

POOLED_SALT = np.uint64(0x747269616C2D6274)  # "trial-bt": keeps this stream apart from the cluster bootstrap's


@nb.njit(cache=True)
def pooled_key(a, b, c, d):
    h = mix64(BOOT_SALT1 ^ POOLED_SALT)
    h = mix64(h ^ np.uint64(a))
    h = mix64(h ^ np.uint64(b))
    h = mix64(h ^ np.uint64(c))
    return mix64(h ^ np.uint64(d))


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    B = int(consts[0])
    stats = np.empty(B, np.float64)
    n_max = 0
    for r in range(tables.shape[0]):
        a, b, c, d = pooled_counts(tables, r)
        n_max = max(n_max, a + b + c + d)
    y = np.zeros(n_max, np.int64)
    ones = np.ones(n_max, np.int64)
    for r in range(tables.shape[0]):
        a, b, c, d = pooled_counts(tables, r)
        n = a + b + c + d
        estimate[r] = (c - b) / n if n > 0 else math.nan
        if n < 2:
            no_bounds(r, lower, upper, status)
            continue
        y[:b] = -1
        y[b:b + c] = 1
        y[b + c:n] = 0
        bootstrap_statistics(pooled_key(a, b, c, d), y, ones, n, stats)
        stats.sort()
        lower[r] = order_quantile(stats, consts[1])
        upper[r] = order_quantile(stats, consts[2])
        status[r] = decide(lower[r], margin)


# Cost model (methods.analysis_cost): ``resamples`` draws of every trial pair per replication;
# measured 4.0 ns per pair draw at 1000 x 11, B = 999 (an idle core): model 8 ns, as for a busy one.
SECONDS_PER_PAIR_DRAW = 8e-9


def analysis_cost(method, t, linear):
    """Resamples x trial pairs draws (the pairs of every replication)."""
    from methods.analysis_cost import AnalysisCost

    draws = float(method.options.get("resamples", 999.0)) * float(t.sum())
    return AnalysisCost(method.name, linear.bytes, linear.seconds + SECONDS_PER_PAIR_DRAW * draws,
                        f"resamples x trial pairs ({draws:.3g} pair draws)")


def prepare(method, alpha, margin, tables):
    """consts = (B, alpha, 1 - alpha)."""
    return np.array([resamples_option(method), alpha, 1.0 - alpha], dtype=np.float64)


METHOD = FixedMethod(
    name="trial_bootstrap",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Efron (1979) Ann. Statist. 7:1-26; Efron & Tibshirani (1993) An Introduction to the Bootstrap, "
             "eq. 13.5 (percentile interval); Davison & Hinkley (1997) eq. 5.18; resampling trial pairs as if "
             "independent (practitioner rule)",
    summary="practitioner rule: percentile bootstrap over pooled trial pairs, clusters ignored",
    kernel=kernel,
    prepare=prepare,
    options={"resamples": 999.0},
    # declared so the catalogue refuses 1e30 by its range, not by the time it would take
    ranges={"resamples": OptionRange(1.0, 1e7, integer=True)},
    cost=analysis_cost,
)
