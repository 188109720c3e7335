"""``cluster_bootstrap`` -- percentile cluster bootstrap interval for the trial-weighted difference.

The customer (cluster) is the resampling unit: each of ``B`` resamples (option
``resamples``, default 999) draws the ``m`` non-empty clusters with replacement and
recomputes the trial-weighted difference

    theta* = sum(n01 - n10) / sum(n)      over the resampled clusters,

the statistic whose sample value ``theta_hat = sum(n01 - n10) / sum(n)`` is the estimate
(estimand: trial-weighted).  The interval is the percentile interval
``(theta*_(alpha), theta*_(1 - alpha))``, ``alpha`` the one-sided level (Efron 1979,
Ann. Statist. 7:1-26; Efron & Tibshirani 1993, *An Introduction to the Bootstrap*,
eq. 13.5; resampling whole clusters: Davison & Hinkley 1997, *Bootstrap Methods and their
Application*, sec. 3.8, strategy 1 "randomize clusters only").  The quantile of the
sorted ``B`` statistics is the order statistic of rank ``(B + 1) p``, linearly
interpolated (Davison & Hinkley 1997, eq. 5.18).

Randomness is the counter-based generator keyed by the table itself (see
``methods/fixed/_bootstrap.py``): one table always gets the same interval, whatever its
replication index, chunk or worker, and ``cluster_bootstrap_bca`` sees the very same
resamples.  Fewer than 2 non-empty clusters -> inconclusive.  When every cluster has the
same difference ratio all resamples agree and the interval is a point -- the bootstrap
inherits the seed's zero-variance flaw.
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod, OptionRange
from methods.fixed import _bootstrap
from methods.fixed._bootstrap import cluster_bootstrap_kernel, order_quantile


def resamples_option(method) -> int:
    """Validated ``resamples`` option (a whole number in [1, 10**7])."""
    b = method.options["resamples"]
    if not (isinstance(b, (int, float, np.integer, np.floating)) and math.isfinite(b) and b == int(b)
            and 1 <= b <= 10_000_000):
        raise ValueError(f"method {method.name!r}: option 'resamples' must be a whole number in "
                         f"[1, 10000000], got {b!r}")
    return int(b)


def prepare(method, alpha, margin, tables):
    """consts = (B, alpha, 1 - alpha, z_alpha, z_{1 - alpha})."""
    from scipy.special import ndtri
    return np.array([resamples_option(method), alpha, 1.0 - alpha, ndtri(alpha), ndtri(1.0 - alpha)],
                    dtype=np.float64)


@nb.njit(cache=True)
def percentile_endpoints(stats, d, n, m, theta, consts):
    """The percentile interval: the (alpha, 1 - alpha) quantiles of the sorted statistics."""
    return order_quantile(stats, consts[1]), order_quantile(stats, consts[2])


kernel = cluster_bootstrap_kernel(percentile_endpoints)


METHOD = FixedMethod(
    name="cluster_bootstrap",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Efron (1979) Ann. Statist. 7:1-26; Efron & Tibshirani (1993) An Introduction to the Bootstrap, "
             "eq. 13.5 (percentile interval); Davison & Hinkley (1997) Bootstrap Methods and their "
             "Application, sec. 3.8 (resampling clusters) and eq. 5.18 (order statistic (B+1)p)",
    summary="percentile cluster bootstrap of the trial-weighted difference, B counter-based resamples",
    kernel=kernel,
    prepare=prepare,
    options={"resamples": 999.0},
    # declared so the catalogue refuses 1e30 by its range, not by the time it would take
    ranges={"resamples": OptionRange(1.0, 1e7, integer=True)},
    cost=_bootstrap.analysis_cost,
)
