"""``agresti_min`` -- Agresti & Min (2005) adjusted Wald interval for paired proportions.

Agresti A, Min Y (2005). Simple improved confidence intervals for comparing matched
proportions. Stat Med 24:729-740 (the "Wald+2" interval): add 1/2 to each of the four
pooled cells, so ``n~ = n + 2`` and ``p~ij = (nij + 1/2) / (n + 2)``, and form the Wald
interval from the adjusted table:

    (p~01 - p~10) +- z * sqrt(((p~10 + p~01) - (p~01 - p~10)^2) / (n + 2)),

centred at ``(n01 - n10) / (n + 2)``.  Bounds are truncated to [-1, 1] (as in Agresti's
own R code for the interval).  The reported ``estimate`` is the unadjusted trial-weighted
difference ``(n01 - n10) / n``.

Boundaries: no trials -> inconclusive (NaN); the pseudo-counts would otherwise invent an
interval from no data.  No discordant pairs (all pass, all fail, ...) -> [-z/(n+2), z/(n+2)],
never degenerate; pass iff z/(n+2) <= margin.  Every pair a loss -> finite bounds, fail.
"""
import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._trial import clip_unit, pooled_kernel, wald_half_width

PSEUDO = 0.5  # added to each of the four cells


@nb.njit(cache=True)
def interval(a, b, c, d, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials; consts = (z,)."""
    z = consts[0]
    m = n + 4.0 * PSEUDO
    p10 = (b + PSEUDO) / m
    p01 = (c + PSEUDO) / m
    centre = p01 - p10
    half = wald_half_width(p10, p01, m, z)
    return clip_unit(centre - half), clip_unit(centre + half), (c - b) / n


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="agresti_min",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Agresti A, Min Y (2005) Simple improved confidence intervals for comparing "
             "matched proportions. Stat Med 24:729-740 (Wald interval after adding 1/2 to each cell)",
    summary="pooled trial pairs; Wald interval on the table with 0.5 added to each cell (n + 2)",
    kernel=kernel,
)
