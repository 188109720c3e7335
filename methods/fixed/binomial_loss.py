"""``binomial_loss`` -- the seed's exact binomial test of the loss rate against the margin.

Every trial pair is treated as an independent Bernoulli "loss" event: a loss is a pair in
which the baseline passes and the candidate fails (cell ``n10``).  With ``x`` losses in
``n`` trial pairs the null ``H0: p_loss >= margin`` is rejected at one-sided level
``alpha`` when ``P(X <= x | n, margin) <= alpha`` -- the exact binomial test of the seed's
Sequential Decisions Lab.  Its dual is the one-sided Clopper--Pearson upper limit
``U(x)``, the root in ``p`` of ``P(X <= x | n, p) = alpha`` (Clopper & Pearson 1934,
Biometrika 26:404-413, eq. for the upper limit; equivalently ``U = Beta^{-1}(1 - alpha;
x + 1, n - x)``), and the test rejects exactly when ``U <= margin``.

Interval: ``[-U, -L]`` where ``L`` solves ``P(X >= x | n, p) = alpha`` (``L = 0`` when
``x = 0``; ``U = 1`` when ``x = n``; closed forms ``U = 1 - alpha^(1/n)`` at ``x = 0`` and
``L = alpha^(1/n)`` at ``x = n``).  When the baseline always passes (the seed's setting:
cells ``(1 - q, q, 0, 0)``) the difference candidate - baseline is exactly ``-p_loss`` and
``[-U, -L]`` is its Clopper--Pearson interval.  With candidate wins (``n01 > 0``) the
difference is ``p01 - p10 >= -p_loss``, so ``-U`` is still a valid (conservative) lower
bound and the pass rule keeps its level; ``-L`` then bounds ``-p_loss``, not the
difference.  The estimate is ``-x / n``.

Independence of trials is an assumption: with clustered data (repeated trials of one case)
the test is anti-conservative -- the seed's dependence counterexample.

Both limits are root-found (safeguarded Newton on the exact CDF from the Wilson limit,
derivative ``dF/dp = -(n - x) b(x; n, p) / (1 - p)``) to ~1e-13 relative and then nudged
outwards until they hold in floating point (``F(x; n, U) <= alpha``), so ``pass``
(``-U >= -margin``) implies the exact test rejects.
"""
import math

import numba as nb
from numba import types
from numba.typed import Dict
import numpy as np

from methods.protocol import Estimand, FixedMethod
from methods.fixed._common import decide, write_inconclusive


@nb.njit(inline="always", cache=True)
def log_choose(n, x):
    return math.lgamma(n + 1.0) - math.lgamma(x + 1.0) - math.lgamma(n - x + 1.0)


@nb.njit(cache=True)
def _sum_down(x, n, p, lc):
    """(P(X <= x), P(X = x)) summing from x downwards (accurate when x <= n p);
    ``lc = log C(n, x)``."""
    pmf = math.exp(lc + x * math.log(p) + (n - x) * math.log1p(-p))
    t = 1.0
    s = 1.0
    r = (1.0 - p) / p
    for i in range(x, 0, -1):
        t *= i / (n - i + 1.0) * r
        s += t
        if t < 1e-17 * s:
            break
    return pmf * s, pmf


@nb.njit(cache=True)
def _sum_up(x, n, p, lc):
    """(P(X >= x), P(X = x)) summing from x upwards (accurate when x >= n p);
    ``lc = log C(n, x)``."""
    pmf = math.exp(lc + x * math.log(p) + (n - x) * math.log1p(-p))
    t = 1.0
    s = 1.0
    r = p / (1.0 - p)
    for i in range(x, n):
        t *= (n - i) / (i + 1.0) * r
        s += t
        if t < 1e-17 * s:
            break
    return pmf * s, pmf


@nb.njit(cache=True)
def _cdf(x, n, p, lc):
    if x >= n:
        return 1.0, math.exp(n * math.log(p))
    if x <= n * p:
        f, pmf = _sum_down(x, n, p, lc)
        return min(1.0, f), pmf
    u, pmf1 = _sum_up(x + 1, n, p, lc + math.log((n - x) / (x + 1.0)))
    return max(0.0, 1.0 - u), pmf1 * (x + 1.0) * (1.0 - p) / ((n - x) * p)


@nb.njit(cache=True)
def _sf(x, n, p, lc):
    if x >= n * p:
        u, pmf = _sum_up(x, n, p, lc)
        return min(1.0, u), pmf
    f, pmf1 = _sum_down(x - 1, n, p, lc + math.log(x / (n - x + 1.0)))
    return max(0.0, 1.0 - f), pmf1 * (n - x + 1.0) * p / (x * (1.0 - p))


@nb.njit(cache=True)
def binom_cdf_pmf(x, n, p):
    """``(P(X <= x), P(X = x))`` for X ~ Binomial(n, p), 0 <= x <= n, 0 < p < 1, summed from
    ``x`` towards the nearer tail with the term-ratio recurrence (no overflow, one lgamma
    anchor)."""
    return _cdf(x, n, p, log_choose(n, x))


@nb.njit(cache=True)
def binom_sf_pmf(x, n, p):
    """``(P(X >= x), P(X = x))``, 1 <= x <= n, 0 < p < 1 (the mirror of binom_cdf_pmf)."""
    return _sf(x, n, p, log_choose(n, x))


@nb.njit(cache=True)
def _tail(x, n, p, upper_limit_side, lc):
    """Tail probability whose root defines the limit, and its derivative in p:
    upper limit -> F = P(X <= x), dF/dp = -(n - x) b(x) / (1 - p);
    lower limit -> G = P(X >= x), dG/dp = x b(x) / p."""
    if upper_limit_side:
        f, pmf = _cdf(x, n, p, lc)
        return f, -(n - x) * pmf / (1.0 - p)
    g, pmf = _sf(x, n, p, lc)
    return g, x * pmf / p


@nb.njit(cache=True)
def _solve(x, n, alpha, p, upper_limit_side):
    """Root in p of log(tail) = log(alpha) by safeguarded Newton on the log scale (in p for
    the upper limit, in log p for the lower one, where the tails are close to linear), then
    nudged outwards until ``tail <= alpha`` holds in floating point (the conservative side)."""
    la = math.log(alpha)
    lc = log_choose(n, x)
    lo = 0.0
    hi = 1.0
    if not (0.0 < p < 1.0):
        p = 0.5
    f = 1.0
    for _ in range(200):
        f, df = _tail(x, n, p, upper_limit_side, lc)
        above = f > alpha
        # the tail decreases in p for the upper limit and increases for the lower limit
        if above == upper_limit_side:
            lo = p
        else:
            hi = p
        if f > 0.0 and df != 0.0:
            if upper_limit_side:
                newp = p - (math.log(f) - la) * f / df
            else:  # Newton in log p: log P(X >= x) is close to linear in log p
                newp = p * math.exp(-(math.log(f) - la) * f / (df * p))
        else:
            newp = 0.5 * (lo + hi)
        if abs(newp - p) <= 1e-13 * p:
            break
        if not (lo < newp < hi):
            newp = 0.5 * (lo + hi)
        p = newp
    # p is the last point evaluated (tail f); move outwards until tail <= alpha
    step = max(1e-300, 1e-13 * p)
    for _ in range(200):
        if f <= alpha or p <= 0.0 or p >= 1.0:
            break
        p = p + step if upper_limit_side else p - step
        step *= 2.0
        if 0.0 < p < 1.0:
            f, _df = _tail(x, n, p, upper_limit_side, lc)
    return min(max(p, 0.0), 1.0)


@nb.njit(inline="always", cache=True)
def _wilson(x, n, z, sign):
    z2 = z * z
    ph = x / n
    return (ph + z2 / (2.0 * n) + sign * z * math.sqrt(ph * (1.0 - ph) / n + z2 / (4.0 * n * n))) / (1.0 + z2 / n)


@nb.njit(cache=True)
def upper_limit(x, n, alpha, z):
    """One-sided Clopper--Pearson upper limit: smallest p with P(X <= x | n, p) <= alpha
    (``z`` = the normal quantile z_{1-alpha}, used only for the Wilson starting value)."""
    if x >= n:
        return 1.0
    if x == 0:
        return _solve(0, n, alpha, -math.expm1(math.log(alpha) / n), True)
    return _solve(x, n, alpha, _wilson(x, n, z, 1.0), True)


@nb.njit(cache=True)
def lower_limit(x, n, alpha, z):
    """One-sided Clopper--Pearson lower limit: largest p with P(X >= x | n, p) <= alpha."""
    if x <= 0:
        return 0.0
    if x >= n:
        return _solve(n, n, alpha, math.exp(math.log(alpha) / n), False)
    return _solve(x, n, alpha, _wilson(x, n, z, -1.0), False)


_PAIR = types.UniTuple(types.float64, 2)


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    alpha = consts[0]
    z = consts[1]
    R, K, _ = tables.shape
    # the limits depend on (x, n) only and replications repeat them: memoise within the batch
    # (a pure function of its key, so results are bitwise those of recomputing)
    memo = Dict.empty(key_type=types.int64, value_type=_PAIR)
    for r in range(R):
        n = 0
        x = 0
        for k in range(K):
            n += tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            x += tables[r, k, 1]
        if n == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        estimate[r] = -x / n
        key = np.int64(n) * np.int64(4294967296) + np.int64(x)
        if key in memo:
            u, lo = memo[key]
        else:
            u = upper_limit(x, n, alpha, z)
            lo = lower_limit(x, n, alpha, z)
            memo[key] = (u, lo)
        lower[r] = -u
        upper[r] = -lo
        status[r] = decide(lower[r], margin)


def prepare(method, alpha, margin, tables):
    from scipy import special  # -ndtri is norm.isf's own kernel: the same bits, without importing scipy.stats
    return np.array([alpha, -special.ndtri(alpha)], dtype=np.float64)


METHOD = FixedMethod(
    name="binomial_loss",
    version="1",
    estimand=Estimand.LOSS_RATE,
    citation="cx_eval_lab evidence spine (seed chapter), Sequential Decisions Lab: exact binomial test of "
             "the loss rate against the margin; Clopper & Pearson (1934) Biometrika 26:404-413",
    summary="exact binomial test of the loss rate (n10 / n) against the margin; Clopper-Pearson bounds; "
            "trials assumed independent",
    kernel=kernel,
    prepare=prepare,
)
