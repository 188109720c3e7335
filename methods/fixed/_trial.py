"""Numba helpers shared by the trial-level paired methods, and their batch kernel
(:func:`pooled_kernel`: each method supplies its interval of one pooled table).

Those methods pool every cluster into one paired 2x2 table and treat each trial pair as
independent: ``a = n11`` (both pass), ``b = n10`` (baseline pass, candidate fail: a loss),
``c = n01`` (baseline fail, candidate pass: a win), ``d = n00``, ``n = a + b + c + d``.
The trial-weighted difference is ``delta = (c - b) / n`` (candidate rate minus baseline rate).

In the papers' notation (cells a, b, c, d of "test 1 x test 2", difference
``p1 - p2 = (b - c) / n``) the candidate is test 1: the papers' ``b`` is our ``n01`` and
their ``c`` is our ``n10``.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._common import decide, pooled_counts, write_inconclusive
from simlab.numba_cache import cache_closure


TANGO_TOL = 1e-10  # absolute tolerance of the Tango bounds (root of the score statistic)


def pooled_kernel(interval):
    """The batch kernel of a method that pools every cluster into one paired table: for each
    replication, the pooled counts ``a, b, c, d`` (``n11, n10, n01, n00``) and ``n``; no trials
    -> inconclusive; otherwise ``interval(a, b, c, d, n, consts) -> (lower, upper, estimate)``,
    a numba function, and the decision on the lower bound (a NaN lower bound: inconclusive)."""

    @nb.njit(cache=True)
    def kernel(tables, margin, consts, lower, upper, estimate, status):
        for r in range(tables.shape[0]):
            a, b, c, d = pooled_counts(tables, r)
            n = a + b + c + d
            if n == 0:
                write_inconclusive(r, lower, upper, estimate, status)
                continue
            lower[r], upper[r], estimate[r] = interval(a, b, c, d, n, consts)
            status[r] = decide(lower[r], margin)

    return cache_closure(kernel)


@nb.njit(inline="always", cache=True)
def clip_unit(x):
    """Truncate a bound of a difference of proportions to [-1, 1]."""
    if x < -1.0:
        return -1.0
    if x > 1.0:
        return 1.0
    return x


@nb.njit(inline="always", cache=True)
def wald_half_width(p_loss, p_win, m, z):
    """z * sqrt(((p_loss + p_win) - (p_win - p_loss)^2) / m): the multinomial Wald half-width
    of p_win - p_loss from m pairs; round-off below zero is clamped to zero."""
    v = (p_loss + p_win) - (p_win - p_loss) * (p_win - p_loss)
    if v < 0.0:
        v = 0.0
    return z * math.sqrt(v / m)


@nb.njit(inline="always", cache=True)
def wilson_limits(x, m, z):
    """Wilson (1927) score limits for x successes out of m > 0 (no continuity correction):
    (2x + z^2 -+ z sqrt(z^2 + 4x(1 - x/m))) / (2(m + z^2))."""
    z2 = z * z
    root = z * math.sqrt(z2 + 4.0 * x * (1.0 - x / m))
    den = 2.0 * (m + z2)
    lo = (2.0 * x + z2 - root) / den
    hi = (2.0 * x + z2 + root) / den
    if lo < 0.0:
        lo = 0.0
    if hi > 1.0:
        hi = 1.0
    return lo, hi


@nb.njit(inline="always", cache=True)
def tango_score(delta, win, loss, n):
    """Tango (1998, Stat Med 17:891) score statistic at difference ``delta``.

    With ``B = -(win + loss) + (2n - win + loss) delta`` and
    ``C = -loss * delta * (1 - delta)``, the constrained MLE of the loss-cell probability is
    ``q = (sqrt(B^2 - 8nC) - B) / (4n)`` and
    ``Z(delta) = (win - loss - n delta) / sqrt(n (2q + delta (1 - delta)))``.
    A zero variance gives +-inf by the sign of the numerator (0 when it is 0 too).
    """
    bq = -(win + loss) + (2.0 * n - win + loss) * delta
    cq = -loss * delta * (1.0 - delta)
    disc = bq * bq - 8.0 * n * cq
    if disc < 0.0:
        disc = 0.0
    q = (math.sqrt(disc) - bq) / (4.0 * n)
    var = n * (2.0 * q + delta * (1.0 - delta))
    num = win - loss - n * delta
    if var <= 0.0:
        if num > 0.0:
            return math.inf
        if num < 0.0:
            return -math.inf
        return 0.0
    return num / math.sqrt(var)


@nb.njit(inline="always", cache=True)
def _tango_root(lo, hi, target, win, loss, n):
    """Root of Z(delta) = target in (lo, hi), where Z(lo) > target > Z(hi) (Z decreases).

    Illinois false position (Dowell & Jarratt 1971) on a bracket that always contains the
    root; a bisection step whenever an end value is infinite (Z(-1) = +inf) or the step
    falls outside the bracket.  Stops when the bracket is narrower than 2 * TANGO_TOL and
    returns its midpoint, so the error is at most TANGO_TOL."""
    f_lo = tango_score(lo, win, loss, n) - target
    f_hi = tango_score(hi, win, loss, n) - target
    side = 0
    for _ in range(400):
        if hi - lo <= 2.0 * TANGO_TOL:
            break
        x = 0.5 * (lo + hi)
        if math.isfinite(f_lo) and math.isfinite(f_hi):
            xs = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            if lo < xs < hi:
                x = xs
        fx = tango_score(x, win, loss, n) - target
        if fx > 0.0:
            lo = x
            f_lo = fx
            if side == 1:
                f_hi *= 0.5
            side = 1
        elif fx < 0.0:
            hi = x
            f_hi = fx
            if side == -1:
                f_lo *= 0.5
            side = -1
        else:
            return x
    return 0.5 * (lo + hi)


@nb.njit(inline="always", cache=True)
def tango_bounds(win, loss, n, z):
    """Tango score interval {delta : |Z(delta)| <= z} for n > 0 pairs.

    Z(-1) = +inf unless every pair is a loss and Z(1) = -inf unless every pair is a win;
    Z(delta_hat) = 0.  The lower bound solves Z = z on (-1, delta_hat), the upper
    Z = -z on (delta_hat, 1); when delta_hat is -1 (1) the lower (upper) bound is -1 (1)."""
    dhat = (win - loss) / n
    if loss == n:
        lo = -1.0
    else:
        lo = _tango_root(-1.0, dhat, z, win, loss, n)
    if win == n:
        hi = 1.0
    else:
        hi = _tango_root(dhat, 1.0, -z, win, loss, n)
    return lo, hi


@nb.njit(inline="always", cache=True)
def newcombe_phi(a, b, c, d):
    """Newcombe (1998, Stat Med 17:2635, method 10) correlation of the two marginal
    proportions: phi = (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)) with ad - bc replaced by
    max(ad - bc - n/2, 0) when ad > bc; 0 when a margin is empty."""
    n = a + b + c + d
    prod = (a + b) * (c + d) * (a + c) * (b + d)
    if prod <= 0.0:
        return 0.0
    num = a * d - b * c
    if num > 0.0:
        num = num - 0.5 * n
        if num < 0.0:
            num = 0.0
    return num / math.sqrt(prod)


@nb.njit(inline="always", cache=True)
def square_and_add(dx, dy, phi):
    """sqrt(dx^2 - 2 phi dx dy + dy^2), clamped at zero against round-off."""
    v = dx * dx - 2.0 * phi * dx * dy + dy * dy
    if v < 0.0:
        v = 0.0
    return math.sqrt(v)


@nb.njit(inline="always", cache=True)
def cp_lookup(consts, x, m):
    """Clopper-Pearson (lower, upper) for x of m from the table built by
    ``exact_discordant.prepare`` (layout documented there)."""
    size = int(consts[0])
    if m >= size or consts[1 + m] < 0.0:
        raise ValueError("exact_discordant: the prepared Clopper-Pearson table does not cover "
                         "this table; prepare it from the same tables")
    xmin = int(consts[1 + size + m])
    xmax = int(consts[1 + 2 * size + m])
    if x < xmin or x > xmax:
        raise ValueError("exact_discordant: the prepared Clopper-Pearson table does not cover "
                         "this table; prepare it from the same tables")
    off = int(consts[1 + m]) + 2 * (x - xmin)
    return consts[off], consts[off + 1]


@nb.njit(cache=True)
def cp_ranges(tables):
    """For ``exact_discordant.prepare``: the counts each size needs Clopper-Pearson limits
    for.  Per replication the pairs (losses, discordant) and (discordant, n) are needed;
    returns ``xmin[S], xmax[S]`` over the sizes 0 .. S-1 (``xmax = -1``: size absent)."""
    R, K, _ = tables.shape
    loss = np.empty(R, np.int64)
    disc = np.empty(R, np.int64)
    tot = np.empty(R, np.int64)
    size = 1
    for r in range(R):
        b = 0
        c = 0
        n = 0
        for k in range(K):
            b += tables[r, k, 1]
            c += tables[r, k, 2]
            n += tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        loss[r] = b
        disc[r] = b + c
        tot[r] = n
        if n + 1 > size:
            size = n + 1
    xmin = np.full(size, np.iinfo(np.int64).max, np.int64)
    xmax = np.full(size, -1, np.int64)
    for r in range(R):
        m = disc[r]
        if loss[r] < xmin[m]:
            xmin[m] = loss[r]
        if loss[r] > xmax[m]:
            xmax[m] = loss[r]
        m = tot[r]
        if disc[r] < xmin[m]:
            xmin[m] = disc[r]
        if disc[r] > xmax[m]:
            xmax[m] = disc[r]
    return xmin, xmax
