"""Slow references of the new cluster-level methods (``betting_ci``, ``empirical_bernstein``,
``clustered_score``), written from the papers with numpy / scipy and sharing nothing with the
kernels: capitals as cumulative products over arrays, bounds by ``scipy.optimize.brentq`` on
the continuous capital; Tango's constrained MLE by numerical maximisation of the multinomial
likelihood rather than its closed form.  Signature as in ``methods.reference``."""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from methods.reference._tables import cluster_rows, decide


def unit_scores(table) -> np.ndarray:
    """x_k = (d_k + 1) / 2 of the non-empty clusters in table order."""
    t = cluster_rows(table)
    return ((t[:, 2] - t[:, 1]) / t.sum(axis=1) + 1.0) / 2.0


def plugin(x: np.ndarray, alpha: float, cap: float) -> tuple[np.ndarray, np.ndarray]:
    """WSR predictable plug-in bets tuned to n = len(x), and the predictable means mu_{i-1}."""
    n = x.size
    i = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(x)) / (i + 1)
    sig2 = (0.25 + np.cumsum((x - mu) ** 2)) / (i + 1)
    sig_prev = np.concatenate([[0.25], sig2[:-1]])
    mu_prev = np.concatenate([[0.5], mu[:-1]])
    lam = np.minimum(np.sqrt(2.0 * math.log(1.0 / alpha) / (n * sig_prev)), cap)
    return lam, mu_prev


def _max_log_capital(x, lam, m, c):
    bet = np.minimum(lam, c / m) if m > 0 else lam
    return float(np.max(np.cumsum(np.log1p(bet * (x - m)))))


def _betting_lower_x(x, lam, alpha, c):
    f = lambda m: _max_log_capital(x, lam, m, c) - math.log(1.0 / alpha)  # noqa: E731
    if f(0.0) < 0.0:
        return 0.0
    if f(1.0) >= 0.0:
        return 1.0
    return optimize.brentq(f, 0.0, 1.0, xtol=1e-14)


def betting_ci(table, margin: float, confidence: float = 0.95, truncation: float = 0.5):
    x = unit_scores(table)
    if x.size == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    alpha = (1.0 - confidence) / 2.0
    lam, _ = plugin(x, alpha, math.inf)
    lo = 2.0 * _betting_lower_x(x, lam, alpha, truncation) - 1.0
    hi = 1.0 - 2.0 * _betting_lower_x(1.0 - x, lam, alpha, truncation)
    return lo, hi, float(np.mean(2.0 * x - 1.0)), decide(lo, margin)


def empirical_bernstein(table, margin: float, confidence: float = 0.95, truncation: float = 0.5):
    x = unit_scores(table)
    if x.size == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    alpha = (1.0 - confidence) / 2.0
    lam, mu_prev = plugin(x, alpha, truncation)
    psi_e = (-np.log(1.0 - lam) - lam) / 4.0
    v = 4.0 * (x - mu_prev) ** 2
    centre = np.sum(lam * x) / np.sum(lam)
    half = (math.log(1.0 / alpha) + np.sum(v * psi_e)) / np.sum(lam)
    lo = 2.0 * max(centre - half, 0.0) - 1.0
    hi = 2.0 * min(centre + half, 1.0) - 1.0
    return lo, hi, float(np.mean(2.0 * x - 1.0)), decide(lo, margin)


def tango_constrained_loss_probability(delta: float, wins: float, losses: float, n: float) -> float:
    """argmax over q of  losses log q + wins log(q + delta) + rest log(1 - 2q - delta)
    (p10 = q, p01 = q + delta), by bounded scalar optimisation."""
    rest = n - wins - losses
    lo = max(0.0, -delta)
    hi = (1.0 - delta) / 2.0
    if hi - lo < 1e-15:
        return lo

    def nll(q):
        s = 0.0
        for cnt, p in ((losses, q), (wins, q + delta), (rest, 1.0 - 2.0 * q - delta)):
            if cnt > 0:
                s -= cnt * math.log(max(p, 1e-300))
        return s

    res = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13})
    return float(res.x)


def clustered_score_z(table, delta: float, icc_floor: float = 0.0) -> float:
    t = cluster_rows(table)
    n = t.sum(axis=1).astype(float)
    D = (t[:, 2] - t[:, 1]).astype(float)
    N, S = n.sum(), D.sum()
    q = tango_constrained_loss_probability(delta, float(t[:, 2].sum()), float(t[:, 1].sum()), N)
    model = np.sum(n * (1.0 + (n - 1.0) * icc_floor)) * (2.0 * q + delta * (1.0 - delta))
    robust = float(np.sum((D - n * delta) ** 2))
    v = max(model, robust)
    return (S - N * delta) / math.sqrt(v) if v > 0 else math.copysign(math.inf, S - N * delta)


def clustered_score(table, margin: float, confidence: float = 0.95, icc_floor: float = 0.0):
    t = cluster_rows(table)
    if t.shape[0] == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    z = stats.norm.isf((1.0 - confidence) / 2.0)
    dhat = float((t[:, 2] - t[:, 1]).sum() / t.sum())
    f = lambda d, target: clustered_score_z(t, d, icc_floor) - target  # noqa: E731
    eps = 1e-12
    lo = -1.0 if f(-1.0 + eps, z) < 0 else optimize.brentq(f, -1.0 + eps, dhat, args=(z,), xtol=1e-13)
    hi = 1.0 if f(1.0 - eps, -z) > 0 else optimize.brentq(f, dhat, 1.0 - eps, args=(-z,), xtol=1e-13)
    status = "pass" if clustered_score_z(t, -margin, icc_floor) >= z else "fail"
    return lo, hi, dhat, status
