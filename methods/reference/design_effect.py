"""Slow reference of ``dm_score`` and of its exact E+M table, written from the formulas with
numpy / scipy and sharing nothing with the kernels: Tango's constrained MLE by numerical
maximisation of the multinomial likelihood (``bounded.tango_constrained_loss_probability``),
the cluster law from the Dirichlet-multinomial probability function in gamma functions
(Mosimann 1962, eq. 2.1), the pooled law by repeated direct 2-D convolution (no FFT), quantiles
by sorting, the critical value by ``np.interp``, bounds by ``scipy.optimize.brentq``.  Only for
small designs (the direct convolution costs K (M + 1)^2 N^2).  Signature as in
``methods.reference``."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import optimize, signal, stats
from scipy.special import gammaln

from methods.reference._tables import cluster_rows
from methods.reference.bounded import tango_constrained_loss_probability

NODES = 61


def dm_cluster_law(trials: int, p10: float, p01: float, rho: float) -> np.ndarray:
    """P[l, w] of one cluster's (n10, n01): multinomial (rho = 0) or Dirichlet-multinomial over
    (p10, p01, rest) with concentration (1 - rho)/rho, from the probability function."""
    probs = (p10, p01, 1.0 - p10 - p01)
    out = np.zeros((trials + 1, trials + 1))
    for l in range(trials + 1):
        for w in range(trials + 1 - l):
            x = (l, w, trials - l - w)
            if any(xi > 0 and pi <= 0.0 for xi, pi in zip(x, probs)):
                continue
            log_p = gammaln(trials + 1) - sum(gammaln(xi + 1) for xi in x)
            if rho == 0.0:
                log_p += sum(xi * math.log(pi) for xi, pi in zip(x, probs) if xi > 0)
            else:
                a = (1.0 - rho) / rho
                log_p += gammaln(a) - gammaln(a + trials) + sum(
                    gammaln(xi + a * pi) - gammaln(a * pi) for xi, pi in zip(x, probs) if xi > 0)
            out[l, w] = math.exp(log_p)
    return out


def pooled_law(clusters: int, law: np.ndarray) -> np.ndarray:
    """The K-fold convolution of ``law`` by direct 2-D convolution."""
    out = np.ones((1, 1))
    for _ in range(clusters):
        out = signal.convolve2d(out, law)
    return np.clip(out, 0.0, None)


def deal(losses: int, wins: int, clusters: int, trials: int) -> np.ndarray:
    """A (K, 4) table of K clusters of M pairs holding these pooled losses and wins (pair by
    pair: losses, then wins, then concordant pairs)."""
    kinds = [1] * losses + [2] * wins + [0] * (clusters * trials - losses - wins)
    return np.array([[kinds[k * trials:(k + 1) * trials].count(j) for j in range(4)] for k in range(clusters)])


def restricted_discordance(delta: float, wins: float, losses: float, n: float) -> float:
    """p~10 + p~01 under Delta = delta (p01 = p10 + delta), by numerical maximisation."""
    return 2.0 * tango_constrained_loss_probability(delta, wins, losses, n) + delta


def dm_z(table, delta: float, rho_max: float = 0.1, robust: float = 0.0) -> float:
    t = cluster_rows(table)
    n = t.sum(axis=1).astype(float)
    D = (t[:, 2] - t[:, 1]).astype(float)
    N, S = n.sum(), D.sum()
    q = restricted_discordance(delta, float(t[:, 2].sum()), float(t[:, 1].sum()), N)
    v = np.sum(n * (1.0 + (n - 1.0) * rho_max)) * (q - delta * delta)
    if robust:
        v = max(v, float(np.sum((D - n * delta) ** 2)))
    return (S - N * delta) / math.sqrt(v) if v > 0 else math.copysign(math.inf, S - N * delta)


@lru_cache(maxsize=8)
def em_table(clusters: int, trials: int, margin: float, rho: float, level: float, q_hi: float = 0.5):
    """The E-step table from scratch: at each node the midpoint between the smallest attained
    value of Z(-m) whose upper tail is <= level and the next smaller one (the largest value + 1
    when none qualifies).  Returns (u nodes, table)."""
    N = clusters * trials
    states = [(l, w) for l in range(N + 1) for w in range(N + 1 - l)]
    z = np.array([dm_z(deal(l, w, clusters, trials), -margin, rho) for l, w in states])
    order = np.argsort(-z, kind="stable")
    u_nodes = np.linspace(0.0, math.sqrt(q_hi - margin), NODES)
    out = []
    for u in u_nodes:
        q = margin + u * u
        law = pooled_law(clusters, dm_cluster_law(trials, (q + margin) / 2, max((q - margin) / 2, 0.0), rho))
        p = np.array([law[l, w] for l, w in states])[order]
        zs = z[order]
        tail, cut, i = 0.0, zs[-1] - 1.0, 0
        while i < zs.size:
            j = i
            while j + 1 < zs.size and zs[j + 1] == zs[i]:
                j += 1
            if tail + p[i:j + 1].sum() > level:
                cut = 0.5 * (zs[i - 1] + zs[i]) if i > 0 else zs[0] + 1.0
                break
            tail += p[i:j + 1].sum()
            i = j + 1
        out.append(cut)
    return u_nodes, np.array(out)


def dm_score(table, margin: float, confidence: float = 0.95, rho_max: float = 0.1, robust: float = 0.0,
             em_level: float = 0.0, design_clusters: float = 0, design_trials: float = 0, design_margin: float = 0.0,
             design_alpha: float = 0.0, em_q_hi: float = 0.5):
    t = cluster_rows(table)
    if t.shape[0] == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    dhat = float((t[:, 2] - t[:, 1]).sum() / t.sum())
    if em_level > 0.0:
        if margin != design_margin:
            return math.nan, math.nan, dhat, "inconclusive"
        u, tab = em_table(int(design_clusters), int(design_trials), design_margin, rho_max, em_level, em_q_hi)
        qt = restricted_discordance(-margin, float(t[:, 2].sum()), float(t[:, 1].sum()), float(t.sum()))
        c = float(np.interp(math.sqrt(max(qt - margin, 0.0)), u, tab))
    else:
        c = float(stats.norm.isf((1.0 - confidence) / 2.0))
    f = lambda d, target: dm_z(t, d, rho_max, robust) - target  # noqa: E731
    eps = 1e-12
    lo = -1.0 if f(-1.0 + eps, c) < 0 else optimize.brentq(f, -1.0 + eps, dhat, args=(c,), xtol=1e-13)
    hi = 1.0 if f(1.0 - eps, -c) > 0 else optimize.brentq(f, dhat, 1.0 - eps, args=(-c,), xtol=1e-13)
    status = "pass" if dm_z(t, -margin, rho_max, robust) >= c else "fail"
    return lo, hi, dhat, status
