"""``likelihood_ratio`` -- the seed's worked likelihood-ratio rule for Bernoulli losses.

Each trial pair is a Bernoulli loss (cell ``n10``: baseline passes, candidate fails) with
rate ``p``.  At a look with ``x`` losses in ``n`` trial pairs the log-likelihood ratio of a
fixed alternative ``p1`` (option ``alternative``, default 0.01) against the margin
``p0 = margin`` is

    log LR_n = x log(p1 / p0) + (n - x) log((1 - p1) / (1 - p0)),

and the rule promotes at the first look where ``log LR_n >= log(1 / alpha)``.  Under
``p = p0`` the ratio is a nonnegative martingale with mean 1, so by Ville's inequality
P(ever promote) <= alpha however often one looks (Wald 1945, Ann Math Stat 16:117-186:
the upper boundary of the SPRT; Ville 1939); for ``p > p0`` it is a
supermartingale.  Seed: looks 50, ..., 500, alpha = 0.05, p1 = 0.01, true loss 0.03 ->
P(promote) = 0.02396.  The rule has no harm boundary.

Bound: for ``p0 > max(p1, x/n)`` the map ``p0 -> log LR`` is convex and increasing, so the
set of margins the rule would reject is ``[U, 1)`` with ``U`` the root of
``log LR(U) = log(1/alpha)``; ``-U`` is the lower confidence-sequence bound for the
difference (Ville again, one null at a time).  It is found by Newton's method from the
margin when the rule promotes (monotone from above by convexity, never crossing below the
root in floating point), so ``promote`` iff ``-U >= -margin`` holds exactly (``U = 1`` when
``x = n``: no margin is ever rejected).  As with ``binomial_loss``, ``-U``
bounds ``-p_loss``, which equals the difference when the baseline always passes and is
below it otherwise; trials are assumed independent.
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand
from methods.sequential.base import LOOK_CONTINUE, LOOK_PROMOTE, SequentialMethod


@nb.njit(inline="always", cache=True)
def log_lr(x, n, p1, p0):
    return x * math.log(p1 / p0) + (n - x) * math.log((1.0 - p1) / (1.0 - p0))


@nb.njit(cache=True)
def upper_rejected(x, n, p1, c, margin, promoted):
    """Smallest null rate U > max(p1, x/n) with log LR(U) >= c (1.0 when none).

    On that range ``log LR`` is convex and increasing in the null rate, so Newton's method
    started from a point with ``log LR >= c`` (the margin when promoted, else a point found
    by halving the distance to 1) stays on that side and decreases monotonically to U."""
    if x >= n:
        return 1.0
    if promoted:
        p = margin
    else:
        p = max(margin, max(p1, x / n))
        found = False
        for _ in range(200):
            p = 0.5 * (p + 1.0)
            if p >= 1.0:
                break
            if log_lr(x, n, p1, p) >= c:
                found = True
                break
        if not found:
            return 1.0
    for _ in range(100):
        f = log_lr(x, n, p1, p) - c
        d = (n - x) / (1.0 - p) - x / p
        if d <= 0.0:
            break
        newp = p - f / d
        if newp >= p or log_lr(x, n, p1, newp) < c:
            break
        p = newp
    return p


@nb.njit(cache=True)
def kernel(tables, ends, margin, consts, status, bound, estimate):
    c = consts[0]      # log(1 / alpha)
    p1 = consts[1]     # alternative loss rate
    R, K, _ = tables.shape
    L = ends.shape[1]
    for r in range(R):
        n = 0
        x = 0
        k = 0
        for j in range(L):
            e = ends[r, j]
            while k < e:
                n += tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
                x += tables[r, k, 1]
                k += 1
            if n == 0:
                status[r, j] = LOOK_CONTINUE
                bound[r, j] = math.nan
                estimate[r, j] = math.nan
                continue
            promoted = log_lr(x, n, p1, margin) >= c
            status[r, j] = LOOK_PROMOTE if promoted else LOOK_CONTINUE
            bound[r, j] = -upper_rejected(x, n, p1, c, margin, promoted)
            estimate[r, j] = -x / n


def prepare(method, alpha, margin, schedule):
    p1 = method.options["alternative"]
    if not (0.0 < p1 < margin):
        raise ValueError(f"likelihood_ratio: option alternative ({p1}) must lie in (0, margin = {margin})")
    return np.array([math.log(1.0 / alpha), p1], dtype=np.float64)


METHOD = SequentialMethod(
    name="likelihood_ratio",
    version="1",
    estimand=Estimand.TRIAL,
    citation="cx_eval_lab evidence spine (seed chapter), Sequential Decisions Lab worked likelihood-ratio "
             "rule; Wald (1945) Ann Math Stat 16:117-186; Ville (1939) Etude critique de la notion de collectif",
    summary="log LR of loss rate alternative vs the margin; promote when it reaches log(1/alpha)",
    kernel=kernel,
    prepare=prepare,
    options={"alternative": 0.01},
)
