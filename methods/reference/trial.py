"""Slow reference implementations of the trial-level paired methods (see ``methods.reference``).

Each function takes one experiment's ``(K, 4)`` table (columns n11, n10, n01, n00; a row of
zeros is a missing cluster), the non-inferiority margin and the two-sided confidence level,
pools the clusters into one paired table, and returns ``(lower, upper, estimate, status)``
with status "pass" (lower >= -margin), "fail" or "inconclusive" (no trials: NaN bounds).

They are written from the papers and share no code with the numba kernels: the Wald-type
variances go through the multinomial covariance of the cell proportions, Tango's bounds
are found with ``scipy.optimize.brentq``, Wilson limits and Clopper-Pearson limits come from
``statsmodels.stats.proportion.proportion_confint``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats
from statsmodels.stats.proportion import proportion_confint

from methods.reference._tables import cluster_rows, decide


def pooled(table) -> tuple[int, int, int, int]:
    """Pooled (n11, n10, n01, n00) of a (K, 4) or (4,) table of non-negative counts."""
    a, b, c, d = (int(v) for v in cluster_rows(table, keep_empty=True).sum(axis=0))
    return a, b, c, d


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(1.0 - (1.0 - confidence) / 2.0))


_NO_TRIALS = (math.nan, math.nan, math.nan, "inconclusive")


def _wald_from_cells(cells: np.ndarray, z: float) -> tuple[float, float]:
    """Wald interval of p01 - p10 from (possibly pseudo-count-adjusted) cell counts, with the
    variance read off the multinomial covariance Var(p_hat) = (diag(p) - p p^T) / m."""
    m = cells.sum()
    p = cells / m
    cov = (np.diag(p) - np.outer(p, p)) / m
    contrast = np.array([0.0, -1.0, 1.0, 0.0])   # p01 - p10
    centre = float(contrast @ p)
    var = max(float(contrast @ cov @ contrast), 0.0)
    half = z * math.sqrt(var)
    return max(centre - half, -1.0), min(centre + half, 1.0)


def paired_wald(table, margin: float, confidence: float = 0.95):
    """Wald interval (Newcombe 1998, method 1), truncated to [-1, 1]."""
    a, b, c, d = pooled(table)
    n = a + b + c + d
    if n == 0:
        return _NO_TRIALS
    lo, hi = _wald_from_cells(np.array([a, b, c, d], dtype=float), _z(confidence))
    return lo, hi, (c - b) / n, decide(lo, margin)


def agresti_min(table, margin: float, confidence: float = 0.95):
    """Agresti & Min (2005): Wald interval after adding 1/2 to each of the four cells."""
    a, b, c, d = pooled(table)
    n = a + b + c + d
    if n == 0:
        return _NO_TRIALS
    lo, hi = _wald_from_cells(np.array([a, b, c, d], dtype=float) + 0.5, _z(confidence))
    return lo, hi, (c - b) / n, decide(lo, margin)


def bonett_price(table, margin: float, confidence: float = 0.95):
    """Bonett & Price (2012): Laplace estimates (x + 1)/(n + 2) of the two discordant cells;
    the two concordant cells are pooled into the remaining n - b - c of n + 2."""
    a, b, c, d = pooled(table)
    n = a + b + c + d
    if n == 0:
        return _NO_TRIALS
    cells = np.array([n - b - c, b + 1.0, c + 1.0, 0.0])   # total n + 2
    lo, hi = _wald_from_cells(cells, _z(confidence))
    return lo, hi, (c - b) / n, decide(lo, margin)


def tango_constrained_q(delta: float, win: int, loss: int, n: int) -> float:
    """Tango (1998) closed-form MLE of the loss-cell probability q21 under p01 - p10 = delta:
    the positive root of 2n q^2 + B q + C = 0 with B = -(w + l) + (2n - w + l) delta and
    C = -l delta (1 - delta)."""
    A = 2.0 * n
    B = -(win + loss) + (2.0 * n - win + loss) * delta
    C = -loss * delta * (1.0 - delta)
    return (-B + math.sqrt(max(B * B - 4.0 * A * C, 0.0))) / (2.0 * A)


def tango_statistic(delta: float, win: int, loss: int, n: int) -> float:
    """Tango's score statistic (w - l - n delta) / sqrt(n (2 q + delta (1 - delta)))."""
    q = tango_constrained_q(delta, win, loss, n)
    num = win - loss - n * delta
    var = n * (2.0 * q + delta * (1.0 - delta))
    if var <= 0.0:
        return math.copysign(math.inf, num) if num != 0 else 0.0
    return num / math.sqrt(var)


def tango_score(table, margin: float, confidence: float = 0.95):
    """Tango (1998) score interval {delta : |Z(delta)| <= z}, bounds by Brent's method."""
    a, b, c, d = pooled(table)
    n = a + b + c + d
    if n == 0:
        return _NO_TRIALS
    z = _z(confidence)
    win, loss = c, b
    dhat = (win - loss) / n
    f = lambda x, t: tango_statistic(x, win, loss, n) - t   # noqa: E731
    # Z(-1) = +inf unless every pair is a loss; start the bracket just inside -1.
    if loss == n:
        lo = -1.0
    else:
        left = -1.0 + 1e-15
        lo = left if f(left, z) <= 0 else optimize.brentq(f, left, dhat, args=(z,), xtol=1e-14,
                                                          rtol=4 * np.finfo(float).eps, maxiter=500)
    if win == n:
        hi = 1.0
    else:
        right = 1.0 - 1e-15
        hi = right if f(right, -z) >= 0 else optimize.brentq(f, dhat, right, args=(-z,), xtol=1e-14,
                                                             rtol=4 * np.finfo(float).eps, maxiter=500)
    return lo, hi, dhat, decide(lo, margin)


def newcombe_phi(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's (1998) method-10 correlation: (ad - bc) over the root of the product of the
    margins, with ad - bc reduced by n/2 (not below 0) when positive; 0 for an empty margin."""
    n = a + b + c + d
    margins = [a + b, c + d, a + c, b + d]
    if min(margins) == 0:
        return 0.0
    num = a * d - b * c
    if num > 0:
        num = max(num - n / 2.0, 0.0)
    return num / math.sqrt(float(np.prod(np.array(margins, dtype=float))))


def newcombe_hybrid(table, margin: float, confidence: float = 0.95):
    """Newcombe (1998) method 10: Wilson limits of the two margins, square-and-add with phi."""
    a, b, c, d = pooled(table)
    n = a + b + c + d
    if n == 0:
        return _NO_TRIALS
    alpha2 = 1.0 - confidence
    p1, p2 = (a + c) / n, (a + b) / n          # candidate, baseline pass rates
    l1, u1 = proportion_confint(a + c, n, alpha=alpha2, method="wilson")
    l2, u2 = proportion_confint(a + b, n, alpha=alpha2, method="wilson")
    phi = newcombe_phi(a, b, c, d)
    est = p1 - p2
    lower_sq = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    upper_sq = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    lo = max(est - math.sqrt(max(lower_sq, 0.0)), -1.0)   # inside [-1, 1] up to round-off
    hi = min(est + math.sqrt(max(upper_sq, 0.0)), 1.0)
    return lo, hi, (c - b) / n, decide(lo, margin)


def _clopper_pearson(x: int, m: int, alpha2: float) -> tuple[float, float]:
    if m == 0:
        return 0.0, 1.0
    lo, hi = proportion_confint(x, m, alpha=alpha2, method="beta")
    lo = 0.0 if x == 0 else float(lo)
    hi = 1.0 if x == m else float(hi)
    return lo, hi


def exact_discordant(table, margin: float, confidence: float = 0.95):
    """Clopper-Pearson on theta = losses / discordant (given their number) and on
    psi = discordant / n; delta = psi (1 - 2 theta) over the rectangle of the two intervals."""
    a, b, c, d = pooled(table)
    n = a + b + c + d
    if n == 0:
        return _NO_TRIALS
    alpha2 = 1.0 - confidence
    th_lo, th_hi = _clopper_pearson(b, b + c, alpha2)
    ps_lo, ps_hi = _clopper_pearson(b + c, n, alpha2)
    corners_low = [psi * (1 - 2 * th_hi) for psi in (ps_lo, ps_hi)]
    corners_high = [psi * (1 - 2 * th_lo) for psi in (ps_lo, ps_hi)]
    lo, hi = min(corners_low), max(corners_high)
    return lo, hi, (c - b) / n, decide(lo, margin)


INTERVALS = {
    "paired_wald": paired_wald,
    "agresti_min": agresti_min,
    "bonett_price": bonett_price,
    "tango_score": tango_score,
    "newcombe_hybrid": newcombe_hybrid,
    "exact_discordant": exact_discordant,
}
