"""``newcombe_hybrid`` -- Newcombe (1998) method 10: hybrid Wilson score interval for paired
proportions.

Newcombe RG (1998). Improved confidence intervals for the difference between binomial
proportions based on paired data. Stat Med 17:2635-2650, method 10.  The pooled marginal
pass rates ``p1 = (n11 + n01) / n`` (candidate) and ``p2 = (n11 + n10) / n`` (baseline) get
Wilson (1927) score limits ``(l1, u1)``, ``(l2, u2)``, which are combined ("square and add")
with the correlation of the two margins:

    L = delta - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2),
    U = delta + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2),

``phi = (n11 n00 - n10 n01) / sqrt(product of the four margins)``, with Newcombe's
adjustment for method 10: when ``n11 n00 > n10 n01`` the numerator becomes
``max(n11 n00 - n10 n01 - n/2, 0)``; ``phi = 0`` when a margin is empty.  (This adjusted
phi reproduces the paper's published method-10 example, (20, 12, 2, 16) -> 0.0562 to
0.3292, and Fagerland et al. 2014's; the unadjusted phi does not.)  Closed form, no search.

Boundaries: no trials -> inconclusive (NaN).  No discordant pairs -> symmetric interval
around 0, never degenerate (all pass or all fail: ``+-z^2 / (n + z^2)``).  The interval
stays inside [-1, 1] by construction (|phi| <= 1); the bounds are clipped to [-1, 1] only
against round-off (every pair a loss gives -1 - 2e-16 otherwise).
"""
import numba as nb

from methods.protocol import Estimand, FixedMethod
from methods.fixed._trial import clip_unit, newcombe_phi, pooled_kernel, square_and_add, wilson_limits


@nb.njit(cache=True)
def interval(a, b, c, d, n, consts):
    """(lower, upper, estimate) of one pooled table with n > 0 trials; consts = (z,)."""
    z = consts[0]
    x1 = float(a + c)  # candidate passes
    x2 = float(a + b)  # baseline passes
    p1 = x1 / n
    p2 = x2 / n
    l1, u1 = wilson_limits(x1, float(n), z)
    l2, u2 = wilson_limits(x2, float(n), z)
    phi = newcombe_phi(float(a), float(b), float(c), float(d))
    est = (c - b) / n  # = p1 - p2
    return (clip_unit(est - square_and_add(p1 - l1, u2 - p2, phi)),
            clip_unit(est + square_and_add(u1 - p1, p2 - l2, phi)), est)


kernel = pooled_kernel(interval)


METHOD = FixedMethod(
    name="newcombe_hybrid",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Newcombe RG (1998) Improved confidence intervals for the difference between "
             "binomial proportions based on paired data. Stat Med 17:2635-2650, method 10",
    summary="pooled trial pairs; Wilson limits of both margins combined with Newcombe's phi",
    kernel=kernel,
)
