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
from methods.fixed import _common, _trial
from methods.fixed._common import decide, pooled_counts, write_inconclusive
from methods.fixed._trial import clip_unit, newcombe_phi, square_and_add, wilson_limits


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    for r in range(tables.shape[0]):
        a, b, c, d = pooled_counts(tables, r)
        n = a + b + c + d
        if n == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        x1 = float(a + c)  # candidate passes
        x2 = float(a + b)  # baseline passes
        p1 = x1 / n
        p2 = x2 / n
        l1, u1 = wilson_limits(x1, float(n), z)
        l2, u2 = wilson_limits(x2, float(n), z)
        phi = newcombe_phi(float(a), float(b), float(c), float(d))
        est = (c - b) / n  # = p1 - p2
        estimate[r] = est
        lower[r] = clip_unit(est - square_and_add(p1 - l1, u2 - p2, phi))
        upper[r] = clip_unit(est + square_and_add(u1 - p1, p2 - l2, phi))
        status[r] = decide(lower[r], margin)


METHOD = FixedMethod(
    name="newcombe_hybrid",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Newcombe RG (1998) Improved confidence intervals for the difference between "
             "binomial proportions based on paired data. Stat Med 17:2635-2650, method 10",
    summary="pooled trial pairs; Wilson limits of both margins combined with Newcombe's phi",
    kernel=kernel,
)
