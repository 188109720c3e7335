"""The power ceiling at a design: how much power any test that keeps its false-pass rate at or
below alpha over a grid of null laws can have at one alternative.

Model: Dirichlet-multinomial clusters (Mosimann 1962, Biometrika 49:65-82) with perfect labels.
A cluster of ``M`` pairs shows ``w`` wins, ``l`` losses and ``M - w - l`` ties; by the
aggregation property of the Dirichlet their law depends on the cell means ``(p01, p10, 1 - q)``
and the ICC ``rho`` only (not on the baseline), and an experiment's ``K`` clusters enter the
likelihood through the counts of the ``(w, l)`` types.  Null grid: difference ``p01 - p10 =
-m``, discordance ``q = m + (q_hi - m) t^2`` at ``n_q`` values of ``t`` uniform on [0, 1] (dense
near the margin), ``rho`` at ``n_rho`` values uniform on ``[0, rho_max]``.  Alternative:
difference 0 at discordance ``q_A`` and ICC ``rho_A``.

The bound (Lehmann & Romano 2005, Testing Statistical Hypotheses, 3rd ed., Theorem 3.8.1;
Elliott, Mueller & Watson 2015, Econometrica 83:771-811, Lemma 1): for any mixture ``Lambda``
of the null laws, a test with rejection rate <= alpha at every grid point has rate <= alpha
under the mixture, so its power at the alternative is at most that of the Neyman-Pearson test
of the alternative against the mixture at level alpha.  Any ``Lambda`` gives a valid bound; the
least-favourable one gives the smallest, and EMW's iteration (their appendix A.2.1: importance
sampling from the equal mixture of the grid's laws, ``lambda_i <- lambda_i exp(s (RP_i -
alpha) / alpha)``, steps of 2 then 0.5) approximates it.  The search for ``Lambda`` may be as
rough as it likes: the bound is then evaluated on fresh streams, and every estimate is pushed
the conservative way -- the critical value ``c`` is the mixture's upper ``alpha + 2 se``
quantile (``se`` the binomial standard error of the mixture level), the power is the randomised
Neyman-Pearson test's at that level (its share of the atom ``S = c`` from ``e^c`` times the
level the atom must make up, the mixture's tail above ``c`` taken 2 standard errors low; at most
the power counting the whole atom), and two standard errors are added to it.  A test valid over
the whole null domain (rho anywhere in ``[0, rho_max]``, every discordance) is valid on the
grid, so the ceiling holds for it too.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numba as nb
import numpy as np
from scipy.special import logsumexp

from simlab.exact.cluster_pmf import cluster_law
from simlab.rng import stream_key, uniform

ITERATIONS = ((300, 2.0), (300, 0.5))
DEFAULT_SEED = 20261206


@dataclass(frozen=True)
class PowerBound:
    """The ceiling and what it was computed from (``as_dict`` for JSON)."""
    clusters: int
    trials: int
    margin: float
    rho_max: float
    alpha: float
    discordance: float
    rho: float
    bound: float                 # the ceiling: estimate + 2 standard errors, conservative critical value
    estimate: float              # P_A(LR >= critical value) on the alternative's stream
    standard_error: float
    nearly_optimal_power: float  # the power of EMW's test f_A > sum lambda_i f_i (a check on the bound's tightness)
    nearly_optimal_worst: float  # its largest rejection rate over the grid (importance-sampling estimate)
    mixture: tuple               # ((discordance, rho, weight), ...) the weights above 1e-3
    tied: float                  # the alternative's mass on the critical value's atom, rejected only in part
    grid_points: int
    draws: int
    replications: int
    seconds: float

    def as_dict(self) -> dict:
        return {**asdict(self), "mixture": [{"discordance": q, "rho": r, "weight": w} for q, r, w in self.mixture]}


def type_probabilities(size: int, p01: float, p10: float, rho: float) -> np.ndarray:
    """``P(w, l)`` of one cluster of ``size`` pairs, flattened as ``w (size + 1) + l``."""
    tables, probs = cluster_law((1.0 - p01 - p10, p10, p01, 0.0), size, rho)
    out = np.zeros((size + 1) * (size + 1))
    np.add.at(out, tables[:, 2] * (size + 1) + tables[:, 1], probs)
    return out


def null_grid(margin: float, rho_max: float, trials: int, q_hi: float, n_q: int, n_rho: int) -> list[tuple[float, float]]:
    """``(discordance, rho)`` of the null grid (module docstring); one rho when it has no effect."""
    t = np.linspace(0.0, 1.0, n_q)
    rhos = [0.0] if (trials == 1 or rho_max == 0.0) else np.linspace(0.0, rho_max, n_rho).tolist()
    return [(float(margin + (q_hi - margin) * x * x), float(r)) for x in t for r in rhos]


@nb.njit(cache=True)
def _draw_type_counts(k1, k2, cdf, clusters, first_rep, out):
    """``out[r]``: the type counts of replication ``first_rep + r``'s ``clusters`` clusters, each
    type drawn by inverse cdf from one uniform of the counter-based stream."""
    T = cdf.shape[0]
    for r in range(out.shape[0]):
        for k in range(clusters):
            u = uniform(k1, k2, first_rep + r, k)
            t = 0
            while t < T - 1 and u >= cdf[t]:
                t += 1
            out[r, t] += 1


def _counts(probs: np.ndarray, clusters: int, reps: int, seed: int, key: str) -> np.ndarray:
    cdf = np.cumsum(probs / probs.sum())
    k1, k2 = stream_key(seed, key)
    out = np.zeros((reps, len(probs)), np.int64)
    _draw_type_counts(k1, k2, cdf, clusters, 0, out)
    return out


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(p > 0.0, np.log(np.where(p > 0.0, p, 1.0)), -np.inf)


def _loglik(counts: np.ndarray, logp: np.ndarray) -> np.ndarray:
    """``counts @ logp.T`` with ``0 * log 0 = 0`` (a type a law cannot produce, counted: -inf)."""
    finite = np.where(np.isfinite(logp), logp, 0.0)
    out = counts @ finite.T
    impossible = (counts > 0).astype(np.int64) @ (~np.isfinite(logp)).T.astype(np.int64)
    return np.where(impossible > 0, -np.inf, out)


def least_favourable_weights(null_logp: np.ndarray, alt_logp: np.ndarray, clusters: int, alpha: float, draws: int,
                             seed: int) -> tuple[np.ndarray, np.ndarray]:
    """EMW's approximate least-favourable weights over the null laws (rows of ``null_logp``),
    unnormalised (their sum is the critical value of the test ``f_A > sum_i lambda_i f_i``), and
    that test's importance-sampling rejection rate at each null law."""
    G = len(null_logp)
    rows = np.concatenate([_counts(np.exp(lp), clusters, draws, seed, f"power_bound.alfd|{i}")
                           for i, lp in enumerate(null_logp)])
    rows, mult = np.unique(rows, axis=0, return_counts=True)
    l0 = _loglik(rows, null_logp)
    top = l0.max(axis=1)
    e = np.exp(l0 - top[:, None])
    isw = e / e.mean(axis=1)[:, None] * (mult / mult.sum())[:, None]   # importance weights per null law
    alt = _loglik(rows, alt_logp[None, :])[:, 0] - top
    lam = np.full(G, 1.0 / G)
    for n_it, step in ITERATIONS:
        for _ in range(n_it):
            with np.errstate(divide="ignore"):
                rp = (alt > np.log(e @ lam)) @ isw
            lam = lam * np.exp(np.minimum(step * (rp - alpha) / alpha, 50.0))
    with np.errstate(divide="ignore"):
        rp = (alt > np.log(e @ lam)) @ isw
    return lam, rp


def mixture_bound(null_logp: np.ndarray, alt_logp: np.ndarray, lam: np.ndarray, clusters: int, alpha: float,
                  replications: int, seed: int) -> tuple[float, float, float, float]:
    """``(ceiling estimate, its standard error, P_A(S > log sum lam), P_A(S = c))`` for the likelihood ratio ``S``
    of the alternative against the mixture ``lam / sum lam`` of the null laws, ``c`` the
    mixture's upper ``alpha + 2 se`` quantile, on fresh streams of ``seed`` (module docstring);
    the ceiling estimate is the randomised Neyman-Pearson power (below); the third is the power
    of the test ``f_A > sum_i lam_i f_i`` itself (EMW's nearly optimal test when ``lam`` are
    their weights); the last is the alternative's mass on the critical value's own atom, which
    the ceiling rejects only in part (most of the alternative's mass where the statistic is
    discrete: few clusters, one pair each)."""
    total = float(lam.sum())
    lam = lam / total
    with np.errstate(divide="ignore"):
        log_lam = np.log(lam)

    def statistic(counts):
        return _loglik(counts, alt_logp[None, :])[:, 0] - logsumexp(_loglik(counts, null_logp) + log_lam, axis=1)

    # the mixture's law, stratified: law i gets ceil(lambda_i R) draws, each weighted lambda_i / n_i
    sizes = np.ceil(lam * replications).astype(np.int64)
    stats, weights = [], []
    for i in np.flatnonzero(sizes):
        s = statistic(_counts(np.exp(null_logp[i]), clusters, int(sizes[i]), seed, f"power_bound.null|{i}"))
        stats.append(s)
        weights.append(np.full(len(s), lam[i] / sizes[i]))
    s0, w0 = np.concatenate(stats), np.concatenate(weights)
    order = np.argsort(-s0, kind="stable")
    tail = np.cumsum(w0[order])                          # mixture P(S >= s_(j)), largest first
    level = alpha + 2.0 * math.sqrt(alpha * (1.0 - alpha) / replications)
    j = int(np.searchsorted(tail, level, side="right"))  # the first statistic whose upper tail exceeds it
    critical = s0[order][min(j, len(order) - 1)]
    sa = statistic(_counts(np.exp(alt_logp), clusters, replications, seed, "power_bound.alternative"))
    # Two upper bounds on the power of any test phi with mixture level <= level, the smaller taken:
    # (a) P_A(S >= c), ties counted as rejections (P_mix(S >= c) exceeds the level);
    # (b) for any k > 0, E_A phi = E_mix[phi e^S] <= k level + E_mix[(e^S - k)^+]
    #     = P_A(S > log k) + k (level - P_mix(S > log k)), at k = e^c: the randomised Neyman-Pearson
    #     test's power, which rejects the atom S = c only in part.  (a) alone was nearly all tied
    #     atom where the statistic is discrete (0.98 at one pair), (b) is then the real ceiling.
    #     P_mix(S > c) is taken 2 standard errors low, the conservative side.
    est = float(np.mean(sa >= critical))
    tied = 0.0
    if math.isfinite(critical):
        tol = 1e-9 * max(1.0, abs(critical))
        above = float(w0[s0 > critical + tol].sum())
        above_se = math.sqrt(max(above * (1.0 - above), 0.25 / replications) / replications)
        strict = float(np.mean(sa > critical + tol))
        tied = est - strict
        est = min(est, strict + math.exp(min(critical, 700.0)) * max(0.0, level - above + 2.0 * above_se))
    return (est, math.sqrt(max(est * (1.0 - est), 0.25 / replications) / replications),
            float(np.mean(sa > math.log(total))), tied)


def power_bound(clusters: int, trials: int, margin: float, rho_max: float = 0.1, discordance: float | None = None,
                alpha: float = 0.025, rho: float | None = None, q_hi: float = 0.5, n_q: int = 30, n_rho: int = 3,
                draws: int = 4000, replications: int = 400_000, seed: int = DEFAULT_SEED,
                progress: Callable[[str], None] | None = None) -> PowerBound:
    """The power ceiling at ``clusters x trials`` for true difference 0 at ``discordance``
    (default the margin) and ICC ``rho`` (default ``rho_max``); see the module docstring."""
    t0 = time.perf_counter()
    say = progress or (lambda s: None)
    q_a = margin if discordance is None else float(discordance)
    rho_a = rho_max if rho is None else float(rho)
    if not (0.0 < margin < q_hi <= 1.0):
        raise ValueError(f"margin must lie in (0, q_hi) and q_hi in (margin, 1], got margin {margin!r}, q_hi {q_hi!r}")
    if not 0.0 < q_a <= 1.0:
        raise ValueError(f"discordance must lie in (0, 1], got {q_a!r}")
    if not (0.0 <= rho_max < 1.0 and 0.0 <= rho_a <= rho_max):
        raise ValueError(f"need 0 <= rho <= rho_max < 1, got rho {rho_a!r}, rho_max {rho_max!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    if min(clusters, trials, n_q, n_rho, draws, replications) < 1:
        raise ValueError("clusters, trials, n_q, n_rho, draws and replications must be >= 1")
    grid = null_grid(margin, rho_max, trials, q_hi, n_q, n_rho)
    null_logp = np.array([_log(type_probabilities(trials, (q - margin) / 2, (q + margin) / 2, r)) for q, r in grid])
    alt_logp = _log(type_probabilities(trials, q_a / 2, q_a / 2, rho_a))
    say(f"power bound at {clusters} x {trials}, margin {margin:g}: least-favourable mixture over {len(grid)} null "
        f"laws ({draws:,} draws each)")
    lam, rates = least_favourable_weights(null_logp, alt_logp, clusters, alpha, draws, seed)
    say(f"critical value on the mixture ({replications:,} fresh draws), power on the alternative ({replications:,})")
    est, se, near, tied = mixture_bound(null_logp, alt_logp, lam, clusters, alpha, replications, seed + 1)
    kept = tuple((q, r, float(w)) for (q, r), w in zip(grid, lam / lam.sum()) if w > 1e-3)
    return PowerBound(clusters, trials, float(margin), float(rho_max), float(alpha), q_a, rho_a,
                      min(1.0, est + 2.0 * se), est, se, near, float(rates.max()), kept, tied, len(grid), draws,
                      replications, time.perf_counter() - t0)


__all__ = ["PowerBound", "least_favourable_weights", "mixture_bound", "null_grid", "power_bound", "type_probabilities"]
