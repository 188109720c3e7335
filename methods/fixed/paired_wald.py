"""``paired_wald`` -- Wald interval for the difference of paired proportions.

All clusters are pooled into one paired table and every trial pair is treated as
independent (this method exists to show what ignoring clustering costs).  With
``p10 = n10 / n`` and ``p01 = n01 / n`` the estimate is ``delta = p01 - p10`` and

    delta +- z * sqrt(((p10 + p01) - (p01 - p10)^2) / n),

the large-sample multinomial variance of a difference of correlated proportions
(Newcombe 1998, Stat Med 17:2635-2650, method 1; Fagerland, Lydersen & Laake 2014, Stat Med
33:2850-2875, "Wald interval").  Bounds are truncated to [-1, 1] (as in Agresti & Min 2005).

Boundaries: no trials -> inconclusive (NaN).  No discordant pairs (all pass, all fail, or
any mix of concordant pairs) -> zero variance, interval [0, 0], *pass*: the Wald
degeneracy is reproduced on purpose, not fixed.  Every pair a loss -> [-1, -1], fail.
"""
import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._trial import clip_unit, pooled_kernel, wald_half_width


@nb.njit(cache=True)
def interval(a, b, c, d, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials; consts = (z,)."""
    z = consts[0]
    p10 = b / n
    p01 = c / n
    est = p01 - p10
    half = wald_half_width(p10, p01, n, z)
    return clip_unit(est - half), clip_unit(est + half), est


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="paired_wald",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Wald interval for paired proportions: Newcombe (1998) Stat Med 17:2635-2650, "
             "method 1; Fagerland, Lydersen & Laake (2014) Stat Med 33:2850-2875",
    summary="pooled trial pairs; p01 - p10 +- z sqrt(((p10+p01) - (p01-p10)^2)/n), truncated to [-1, 1]",
    kernel=kernel,
)
