"""``bonett_price`` -- Bonett & Price (2012) adjusted Wald interval for paired proportions.

Bonett DG, Price RM (2012). Adjusted Wald confidence interval for a difference of binomial
proportions based on paired data. Journal of Educational and Behavioral Statistics
37(4):479-488, doi:10.3102/1076998611411915.  One pseudo-count is added to each
*discordant* cell only (Laplace estimates):

    p~10 = (n10 + 1) / (n + 2),   p~01 = (n01 + 1) / (n + 2),
    (p~01 - p~10) +- z * sqrt(((p~10 + p~01) - (p~01 - p~10)^2) / (n + 2)),

centred at ``(n01 - n10) / (n + 2)``: the paper's adjusted Wald interval as restated by
Fagerland, Lydersen & Laake (2014, Stat Med 33:2850, "Wald with Bonett-Price adjustment")
and implemented by Bonett in ``statpsych::ci.prop.ps`` (the paper itself is paywalled).
Bounds are truncated to [-1, 1].  The reported ``estimate`` is the unadjusted
``(n01 - n10) / n``.

Boundaries: no trials -> inconclusive (NaN).  No discordant pairs -> [-h, h] with
h = z sqrt(2) / (n + 2), never degenerate.  Every pair a loss -> fail.
"""
import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._trial import clip_unit, pooled_kernel, wald_half_width


@nb.njit(cache=True)
def interval(a, b, c, d, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials; consts = (z,)."""
    z = consts[0]
    m = n + 2.0
    p10 = (b + 1.0) / m
    p01 = (c + 1.0) / m
    centre = p01 - p10
    half = wald_half_width(p10, p01, m, z)
    return clip_unit(centre - half), clip_unit(centre + half), (c - b) / n


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="bonett_price",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Bonett DG, Price RM (2012) Adjusted Wald confidence interval for a difference of "
             "binomial proportions based on paired data. J Educ Behav Stat 37(4):479-488",
    summary="pooled trial pairs; Wald interval with Laplace estimates (n10+1)/(n+2), (n01+1)/(n+2)",
    kernel=kernel,
)
