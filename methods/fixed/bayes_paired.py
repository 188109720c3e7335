"""``bayes_paired`` -- Jeffreys-Dirichlet credible interval for the paired difference p01 - p10.

Trial-level model: every trial pair is an independent draw from the four cells
``(p11, p10, p01, p00)``; the pooled counts are multinomial, the prior is Jeffreys'
Dirichlet(1/2, 1/2, 1/2, 1/2) (Jeffreys 1946, Proc. R. Soc. A 186:453-461; the Jeffreys
prior of the multinomial), so the posterior is Dirichlet(n11 + 1/2, n10 + 1/2,
n01 + 1/2, n00 + 1/2) (Gelman et al. 2013, *Bayesian Data Analysis* 3rd ed., sec. 3.4,
the multinomial model).  The interval is the equal-tailed 100 (1 - 2 alpha) % credible
interval of ``D = p01 - p10`` (BDA3 sec. 2.3): the lower bound is the posterior
one-sided level ``alpha`` quantile, the upper bound the ``1 - alpha`` quantile.  The
estimate is the posterior mean ``(n01 - n10) / (n + 2)`` (estimand: trial-weighted).

The quantiles are exact up to numerical integration, not Monte Carlo: the marginal of
``(p10, p01, rest)`` is Dirichlet(n10 + 1/2, n01 + 1/2, n11 + n00 + 1), under which
``S = p10 + p01 ~ Beta(n10 + n01 + 1, n11 + n00 + 1)`` and ``W = p01 / S ~ Beta(n01 + 1/2,
n10 + 1/2)`` are independent, so ``P(D <= d)`` is the one-dimensional integral
``int f_S(s) I_{(1 + d/s)/2}(n01 + 1/2, n10 + 1/2) ds``; see ``methods/fixed/_dirichlet_mixture.py``
(adaptive Gauss-Kronrod, Brent root; bounds accurate to about 1e-10).  At ``d = 0`` this
is Altham's (1971, Biometrika 58:561-576) closed form ``P(p01 <= p10) =
I_{1/2}(n01 + 1/2, n10 + 1/2)``.  Clusters are ignored (pooled): like the other
trial-level methods it exists to show what ignoring clustering costs.  No trials ->
inconclusive.
"""

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod
from methods.fixed._dirichlet_mixture import (PP_A, PP_AM1, PP_B, PP_LBETA, PP_SCALE, credible_interval,
                                              dirichlet_component_moments, finish_meta, interval_cost)
from methods.fixed._special import lbeta
from methods.fixed._trial import pooled_kernel


def prepare(method, alpha, margin, tables):
    """consts = (alpha,)."""
    return np.array([alpha], dtype=np.float64)


@nb.njit(cache=True)
def posterior(n11, n10, n01, n00, pp, coef, meta):
    """Fill the one-pair mixture description of Dirichlet(n + 1/2) for D; return rmin."""
    a = n01 + 0.5
    b = n10 + 0.5
    rmin = n11 + n00
    pp[0, PP_A] = a
    pp[0, PP_B] = b
    pp[0, PP_AM1] = a + b - 1.0
    pp[0, PP_LBETA] = lbeta(a, b)
    pp[0, PP_SCALE] = -lbeta(a + b, rmin + 1.0)
    coef[0, 0] = 1.0
    ed, ed2, es, es2 = dirichlet_component_moments(a, b, rmin + 1.0)
    finish_meta(meta, ed, ed2, es, es2)
    return rmin


@nb.njit(cache=True)
def interval(n11, n10, n01, n00, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials; consts = (alpha,)."""
    pp = np.empty((1, 5))
    coef = np.empty((1, 1))
    meta = np.empty(4)
    rmin = posterior(n11, n10, n01, n00, pp, coef, meta)
    lo, hi = credible_interval(consts[0], pp, coef, rmin, meta)
    return lo, hi, (n01 - n10) / (n + 2.0)


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="bayes_paired",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Jeffreys (1946) Proc. R. Soc. A 186:453-461 (prior); Gelman et al. (2013) Bayesian Data "
             "Analysis 3rd ed., sec. 3.4 (Dirichlet-multinomial posterior) and sec. 2.3 (central "
             "posterior interval); Altham (1971) Biometrika 58:561-576 (posterior of matched proportions)",
    summary="equal-tailed credible interval of p01 - p10 under the Jeffreys Dirichlet posterior of the "
            "pooled cells (exact quadrature)",
    kernel=kernel,
    prepare=prepare,
    cost=interval_cost,
)
