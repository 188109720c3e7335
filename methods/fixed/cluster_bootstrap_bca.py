"""``cluster_bootstrap_bca`` -- bias-corrected and accelerated (BCa) cluster bootstrap interval.

Same resamples and statistic as ``cluster_bootstrap`` (clusters drawn with replacement,
``theta* = sum(n01 - n10) / sum(n)``, ``B`` = option ``resamples``, default 999; estimand:
trial-weighted).  The endpoints are the bootstrap quantiles at the adjusted levels of
Efron (1987, JASA 82:171-185, eq. 2.3; Efron & Tibshirani 1993, eq. 14.10)

    alpha_1 = Phi(z0 + (z0 + z_alpha)     / (1 - a (z0 + z_alpha)))
    alpha_2 = Phi(z0 + (z0 + z_{1-alpha}) / (1 - a (z0 + z_{1-alpha})))

with the bias correction ``z0 = Phi^-1(G)``, ``G`` the share of resamples below
``theta_hat`` (Efron 1987, eq. 2.8; E&T eq. 14.14), ties counted one half -- the
"mean" percentile of score also used by ``scipy.stats.bootstrap`` -- and ``G`` clamped
to ``[1/(2B), 1 - 1/(2B)]`` so ``z0`` stays finite; and the acceleration from the
delete-one-cluster jackknife ``a = sum U^3 / (6 (sum U^2)^1.5)``, ``U_i =
mean(theta_(.)) - theta_(i)`` (Efron 1987, sec. 6; E&T eq. 14.15), zero when all
leave-one-out values are equal.  If ``1 - a (z0 + z) <= 0`` the level takes its limit
from inside the formula's domain (0 for the lower, 1 for the upper endpoint).  Quantiles:
order statistic of rank ``(B + 1) p``, linearly interpolated, clamped to the sample range
(Davison & Hinkley 1997, eq. 5.18).  Fewer than 2 non-empty clusters -> inconclusive.
"""

import numba as nb

from methods.protocol import Estimand, FixedMethod, OptionRange
from methods.fixed import _bootstrap
from methods.fixed._bootstrap import bca_level, cluster_bootstrap_kernel, jackknife_acceleration, order_quantile
from methods.fixed._special import norm_ppf
from methods.fixed.cluster_bootstrap import prepare


@nb.njit(cache=True)
def bca_endpoints(stats, d, n, m, theta, consts):
    """The BCa interval (module docstring) from the sorted statistics and the m clusters."""
    B = stats.size
    below = 0
    ties = 0
    for b in range(B):
        if stats[b] < theta:
            below += 1
        elif stats[b] == theta:
            ties += 1
    g = (below + 0.5 * ties) / B
    g = min(max(g, 0.5 / B), 1.0 - 0.5 / B)
    z0 = norm_ppf(g)
    a = jackknife_acceleration(d, n, m)
    return order_quantile(stats, bca_level(z0, a, consts[3])), order_quantile(stats, bca_level(z0, a, consts[4]))


kernel = cluster_bootstrap_kernel(bca_endpoints)


METHOD = FixedMethod(
    name="cluster_bootstrap_bca",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Efron (1987) JASA 82:171-185, BCa interval (eq. 2.3, bias correction eq. 2.8, jackknife "
             "acceleration sec. 6); Efron & Tibshirani (1993) An Introduction to the Bootstrap, eqs. "
             "14.10, 14.14, 14.15; Davison & Hinkley (1997) sec. 3.8 (resampling clusters)",
    summary="BCa cluster bootstrap of the trial-weighted difference, jackknife-over-clusters acceleration",
    kernel=kernel,
    prepare=prepare,
    options={"resamples": 999.0},
    # declared so the catalogue refuses 1e30 by its range, not by the time it would take
    ranges={"resamples": OptionRange(1.0, 1e7, integer=True)},
    cost=_bootstrap.analysis_cost,
)
