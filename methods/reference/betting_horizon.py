"""Slow reference of ``betting_ci_horizon``, written from the formulas (Waudby-Smith & Ramdas
2024 capital process and predictable variance; the horizon-aware bet of Voráček & Orabona 2025)
with numpy / scipy and sharing nothing with the kernels: the predictable variance by cumulative
sums, the bets in a plain loop over clusters, the capital as a cumulative sum of ``log1p`` terms
and the bounds by ``scipy.optimize.brentq`` on the continuous log capital.  Signature as in
``methods.reference``."""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from methods.reference._tables import decide
from methods.reference.bounded import plugin, unit_scores


def predictable_variance(y: np.ndarray) -> np.ndarray:
    """sigma2_{i-1} for i = 1..n: WSR's variance with one fake observation at 1/2."""
    i = np.arange(1, y.size + 1)
    mu = (0.5 + np.cumsum(y)) / (i + 1.0)
    sig2 = (0.25 + np.cumsum((y - mu) ** 2)) / (i + 1.0)
    return np.concatenate([[0.25], sig2[:-1]])


def horizon_bets(y: np.ndarray, reference: float, c: float, alpha: float) -> np.ndarray:
    """The remaining log-target over the remaining clusters, steered by the capital at ``reference``."""
    n = y.size
    s2 = predictable_variance(y)
    target = math.log(1.0 / alpha)
    bets = np.empty(n)
    log_capital = 0.0
    for i in range(n):
        remaining = target - log_capital if log_capital < target else target
        bets[i] = math.sqrt(2.0 * remaining / ((n - i) * s2[i]))
        log_capital += math.log1p(min(bets[i], c / reference) * (y[i] - reference))
    return bets


def max_log_capital(y: np.ndarray, bets: np.ndarray, m: float, c: float) -> float:
    b = np.minimum(bets, c / m) if m > 0.0 else bets
    return float(np.max(np.cumsum(np.log1p(b * (y - m)))))


def lower_root(y: np.ndarray, bets: np.ndarray, c: float, alpha: float) -> float:
    """inf{m in [0, 1] : max_t K_t(m) < 1/alpha} (the log capital is continuous and monotone in m)."""
    f = lambda m: max_log_capital(y, bets, m, c) - math.log(1.0 / alpha)  # noqa: E731
    if f(0.0) < 0.0:
        return 0.0
    if f(1.0) >= 0.0:
        return 1.0
    return optimize.brentq(f, 0.0, 1.0, xtol=1e-14, rtol=1e-14, maxiter=500)


def betting_ci_horizon(table, margin: float, confidence: float = 0.95, truncation: float = 0.99,
                       horizon: float = 1.0):
    x = unit_scores(table)
    if x.size == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    alpha = (1.0 - confidence) / 2.0
    m0 = (1.0 - margin) / 2.0
    if horizon:
        up, down = horizon_bets(x, m0, truncation, alpha), horizon_bets(1.0 - x, m0, truncation, alpha)
    else:
        up = down = plugin(x, alpha, math.inf)[0]
    lo = 2.0 * lower_root(x, up, truncation, alpha) - 1.0
    if max_log_capital(x, up, m0, truncation) >= math.log(1.0 / alpha):
        lo = max(lo, -margin)
    elif lo >= -margin:
        lo = float(np.nextafter(-margin, -math.inf))
    hi = 1.0 - 2.0 * lower_root(1.0 - x, down, truncation, alpha)
    return lo, hi, float(np.mean(2.0 * x - 1.0)), decide(lo, margin)
