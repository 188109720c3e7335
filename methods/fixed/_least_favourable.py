"""An approximate least-favourable distribution (ALFD) over the Dirichlet-multinomial null, and
the likelihoods of one experiment's clusters under each hypothesis (``dm_likelihood_ratio``).

Model.  With perfect labels a cluster of ``n`` pairs has wins ``w = n01``, losses ``l = n10`` and
ties ``n - w - l`` distributed Dirichlet-multinomial (Mosimann 1962, Biometrika 49:65-82) with
cell means ``(p01, p10, 1 - q)``, ``q = p01 + p10`` and concentration ``a = (1 - rho) / rho``
(multinomial at ``rho = 0``); by the aggregation property of the Dirichlet the baseline does not
enter (``methods.fixed.em_table.cluster_discordant_law`` is the same law, and the simulator's).
The difference is ``Delta = p01 - p10``; the null boundary at margin ``m`` is ``Delta = -m``,
``q`` in ``[m, 1]``, ``rho`` in ``[0, rho_max]``.

ALFD.  Elliott, Mueller & Watson (2015, Econometrica 83:771-811, section 3 and appendix A.2):
for null points ``theta_i`` and weights ``lambda_i`` the Neyman-Pearson test of the alternative
``f_A`` against the mixture ``sum_i lambda_i f_i`` rejects iff ``f_A > sum_i lambda_i f_i``
(Lehmann & Romano 2005, Testing Statistical Hypotheses, 3rd ed., Theorem 3.8.1); the weights
are iterated, ``lambda_i <- lambda_i exp(s (RP_i - level) / level)``, towards every rejection
probability ``RP_i`` at most ``level``.  ``RP_i`` is estimated by importance sampling on draws
from the equal mixture of the null points (their appendix A.2.1), which the counter-based
streams of ``simlab.rng`` make a pure function of the design: the same weights on every machine,
for any chunking.  The iteration stops near, not at, its fixed point, so the rejection region's
cutoff is then moved until every importance-sampled ``RP_i`` is at most ``level``
(:func:`final_cutoff`).  Whatever the weights, the test is well defined; its validity at a design
is what a certificate establishes, never this construction (importance sampling has its own
Monte Carlo error).

A cluster's likelihood depends on its data only through ``(n, w, l)``, so an experiment's
log-likelihood under hypothesis ``h`` is ``sum_k log P_h(n_k, w_k, l_k)``: a table ``lp[h, n, w,
l]`` precomputed for cluster sizes ``1..M``.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numba as nb
import numpy as np

from simlab import stored_constructions
from simlab.rng import stream_key, uniform

NEG = -1.0e300      # log of an impossible cell: finite, so sums stay well defined
LAMBDA_MIN, LAMBDA_MAX = 1.0e-300, 1.0e300
MAX_TRIALS = 20     # the largest cluster size modelled: the tables grow as M^3, the draws' types as M^2
DRAW_CELLS = 8_000_000    # the importance sample's counts matrix at most (draws x points x types): 32 MB
SHIPPED = Path(__file__).resolve().parent / "constructions"    # the designs the shipped certificates cover
STORE_PREFIX = "alfd"


def cluster_log_pmf(size: int, p01: float, p10: float, rho: float) -> np.ndarray:
    """``out[w, l]`` = log P(w wins, l losses) for one cluster of ``size`` pairs (``NEG`` where
    impossible); ``out`` is ``(size + 1, size + 1)``."""
    p = (p01, p10, 1.0 - p01 - p10)
    out = np.full((size + 1, size + 1), NEG)
    a = (1.0 - rho) / rho if rho > 0.0 else math.inf
    for w in range(size + 1):
        for l in range(size + 1 - w):
            cells = (w, l, size - w - l)
            if any(c > 0 and pj <= 0.0 for c, pj in zip(cells, p)):
                continue
            v = math.lgamma(size + 1) - sum(math.lgamma(c + 1) for c in cells)
            if math.isinf(a):
                v += sum(c * math.log(pj) for c, pj in zip(cells, p) if c > 0)
            else:
                v += math.lgamma(a) - math.lgamma(size + a)
                v += sum(math.lgamma(c + a * pj) - math.lgamma(a * pj) for c, pj in zip(cells, p) if c > 0)
            out[w, l] = v
    return out


def hypothesis_table(M: int, points: np.ndarray) -> np.ndarray:
    """``lp[h, n, w, l]`` for every hypothesis ``(p01, p10, rho)`` in ``points`` and cluster
    sizes ``n = 1..M`` (``n = 0`` unused)."""
    lp = np.full((len(points), M + 1, M + 1, M + 1), NEG)
    for h, (p01, p10, rho) in enumerate(points):
        for n in range(1, M + 1):
            lp[h, n, :n + 1, :n + 1] = cluster_log_pmf(n, p01, p10, rho)
    return lp


def null_points(margin: float, rho_max: float, M: int, q_hi: float, n_q: int, n_rho: int) -> np.ndarray:
    """The ALFD's null grid ``(p01, p10, rho)``: ``q = m + (q_hi - m) t^2`` at ``n_q`` values of
    ``t`` uniform in [0, 1] (dense near the margin, where ``p01`` is small); ``rho`` at ``n_rho``
    values uniform on [0, rho_max], ending at rho_max (``n_rho = 1``: rho_max alone, where the
    least-favourable weight lies when false-pass grows with rho; one value, 0, when ``M = 1``
    or ``rho_max = 0``: rho then has no effect)."""
    t = np.linspace(0.0, 1.0, n_q)
    qs = margin + (q_hi - margin) * t * t
    rhos = [0.0] if (M == 1 or rho_max == 0.0) else (rho_max * np.linspace(1.0, 0.0, n_rho)[::-1]).tolist()
    return np.array([((q - margin) / 2.0, (q + margin) / 2.0, r) for q in qs for r in rhos])


def cluster_types(M: int) -> np.ndarray:
    """int64[T, 2]: the ``(w, l)`` a cluster of ``M`` pairs can have (``w + l <= M``)."""
    return np.array([(w, l) for w in range(M + 1) for l in range(M + 1 - w)], np.int64)


@nb.njit(cache=True)
def _draw_counts(k1, k2, cdf, K, R, out):
    """``out[i * R + r, t]``: replication r of null point i, K clusters, each a categorical draw
    of its type ``t`` from ``cdf[i]`` (inverse cdf on one uniform)."""
    T = cdf.shape[1]
    for i in range(cdf.shape[0]):
        for r in range(R):
            row = i * R + r
            for k in range(K):
                u = uniform(k1, k2, row, k)
                t = 0
                while t < T - 1 and u >= cdf[i, t]:
                    t += 1
                out[row, t] += 1


def unique_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(counts, axis=0, return_counts=True)`` by a lexicographic sort of the columns
    (numpy's sorts the rows as opaque bytes: 50 times slower on 10^6 rows of few types)."""
    if len(counts) == 0:
        return counts, np.zeros(0, np.int64)
    ordered = counts[np.lexsort(counts.T[::-1])]
    first = np.r_[True, np.any(ordered[1:] != ordered[:-1], axis=1)]
    starts = np.flatnonzero(first)
    return ordered[first], np.diff(np.r_[starts, len(ordered)])


@nb.njit(cache=True)
def _log_likelihoods(counts, lpt, out):
    """``out[u, h] = sum_t counts[u, t] lpt[h, t]`` over the types a row has."""
    for u in range(counts.shape[0]):
        for h in range(lpt.shape[0]):
            s = 0.0
            for t in range(counts.shape[1]):
                c = counts[u, t]
                if c > 0:
                    s += c * lpt[h, t]
            out[u, h] = s


@nb.njit(cache=True)
def iterate(e, isw, alt, rows, lam, fixed, level, step, n_it):
    """EMW's weight iteration, ``n_it`` steps in place on ``lam``: ``RP = fixed + sum over the
    rows u in ``rows`` with alt_u > log(e_u . lam) of isw_u``; ``lam <- lam exp(step (RP -
    level) / level)`` (the exponent capped at 50; ``lam`` kept in [LAMBDA_MIN, LAMBDA_MAX], so
    that a weight that underflowed can grow again).  Returns the last ``RP``."""
    G = e.shape[1]
    rp = np.empty(G)
    for _ in range(n_it):
        rp[:] = fixed
        for u in rows:
            s = 0.0
            for g in range(G):
                s += e[u, g] * lam[g]
            if s <= 0.0 or alt[u] > math.log(s):
                for g in range(G):
                    rp[g] += isw[u, g]
        for g in range(G):
            lam[g] = min(max(lam[g] * math.exp(min(step * (rp[g] - level) / level, 50.0)), LAMBDA_MIN), LAMBDA_MAX)
    return rp


ITERATIONS = (100, 200, 300)   # EMW's iteration (their appendix A.2.1): steps of 2, then of 0.5
STEPS = (2.0, 2.0, 0.5)
SET_ASIDE = 30.0


def final_cutoff(stat: np.ndarray, isw: np.ndarray, fixed: np.ndarray, level: float) -> float:
    """The smallest cutoff ``c`` (reject iff ``stat > c``) at which every null point's
    importance-sampled rejection probability is at most ``level``: rows enter in decreasing
    ``stat``; ``fixed`` is the probability of the rows set aside as rejected.  When those alone
    exceed the level at a point, no cutoff holds it: ``inf`` (the test never passes)."""
    if fixed.max() > level:
        return math.inf
    order = np.argsort(-stat, kind="stable")
    lo, hi = 0, len(order)               # the largest k whose first k rows keep every point <= level
    while lo < hi:
        k = (lo + hi + 1) // 2
        if (fixed + isw[order[:k]].sum(axis=0)).max() <= level:
            lo = k
        else:
            hi = k - 1
    if len(order) == 0:
        return 0.0
    if lo == 0:
        return float(stat[order[0]])
    if lo == len(order):
        return float(stat[order[-1]]) - 1.0
    return 0.5 * float(stat[order[lo - 1]] + stat[order[lo]])


@lru_cache(maxsize=16)
def alfd_weights(K: int, M: int, margin: float, rho_max: float, level: float, alt_points: tuple, alt_weights: tuple,
                 q_hi: float, n_q: int, n_rho: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(points, log_lambda, cutoff)``: the null grid, its ALFD log-weights and the test's
    cutoff for ``K`` clusters of ``M`` pairs at ``level`` (module docstring), for the
    alternative mixture ``alt_points`` (``(p01, p10, rho)``) with weights ``alt_weights``;
    ``draws`` importance-sampling draws per null point from the stream ``seed`` (fewer when the
    counts would exceed ``DRAW_CELLS``: large clusters).  Cached: a
    process builds each design's weights once."""
    points = null_points(margin, rho_max, M, q_hi, n_q, n_rho)
    G = len(points)
    types = cluster_types(M)
    draws = min(draws, max(200, DRAW_CELLS // (G * len(types))))     # fewer where a cluster has many types
    lp0 = hypothesis_table(M, points)[:, M, types[:, 0], types[:, 1]]          # full clusters of M pairs
    lpa = hypothesis_table(M, np.asarray(alt_points, float))[:, M, types[:, 0], types[:, 1]]
    prob = np.exp(np.maximum(lp0, -745.0)) * (lp0 > NEG / 2)
    cdf = np.cumsum(prob / prob.sum(axis=1, keepdims=True), axis=1)
    k1, k2 = stream_key(seed, f"dm_likelihood_ratio.alfd|{K}|{M}|{margin!r}|{rho_max!r}|{q_hi!r}|{n_q}|{n_rho}")
    counts = np.zeros((G * draws, len(types)), np.int32)
    _draw_counts(k1, k2, cdf, K, draws, counts)
    rows, mult = unique_rows(counts)
    l0 = np.empty((len(rows), G))
    _log_likelihoods(rows, lp0, l0)
    la = np.empty((len(rows), len(alt_points)))
    _log_likelihoods(rows, lpa, la)
    top = l0.max(axis=1)
    e = np.exp(l0 - top[:, None])                              # row u's null likelihoods / their max
    mix = e.mean(axis=1)                                       # the proposal: the equal mixture
    isw = e / mix[:, None] * (mult / mult.sum())[:, None]      # importance weights for each null point
    lw = np.log(np.asarray(alt_weights, float))
    am = (la + lw).max(axis=1)
    alt = np.log(np.exp(la + lw - am[:, None]).sum(axis=1)) + am - top
    lam = np.full(G, 1.0 / G)
    fixed = np.zeros(G)            # rejection probability of the rows set aside as rejected
    rows = np.arange(len(alt))
    for n_it, step in zip(ITERATIONS, STEPS):
        iterate(e, isw, alt, rows, lam, fixed, level, step, n_it)
        # A row decided by a likelihood factor beyond e^SET_ASIDE is set aside for the rest of
        # the iteration (a shortcut: the final cutoff below sees every row again).
        with np.errstate(divide="ignore"):
            stat = alt[rows] - np.log(e[rows] @ lam)
        far = np.abs(stat) > SET_ASIDE
        fixed = fixed + (stat[far] > 0) @ isw[rows[far]]
        rows = rows[~far]
    with np.errstate(divide="ignore"):
        stat = alt - np.log(e @ lam)
    return points, np.log(lam), final_cutoff(stat, isw, np.zeros(G), level)


@lru_cache(maxsize=16)
def stored_alfd_weights(identity: str, *arguments) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`alfd_weights` of ``arguments``, taken from the persistent store
    (:mod:`simlab.stored_constructions`: the user's, then :data:`SHIPPED`) when an entry for the
    method ``identity`` (which hashes this construction's code) and these arguments is there,
    else built and stored.  The entry is the exact float64 result of the same deterministic
    build, so a decision never depends on which path produced it."""
    names = ("K", "M", "margin", "rho_max", "level", "alt_points", "alt_weights", "q_hi", "n_q", "n_rho", "draws",
             "seed")
    args = {n: [list(p) for p in v] if n == "alt_points" else list(v) if n == "alt_weights" else v
            for n, v in zip(names, arguments)}
    key = stored_constructions.entry_key("dm_likelihood_ratio.alfd_weights", identity, args)
    found = stored_constructions.load(STORE_PREFIX, key, (SHIPPED,))
    if found is not None:
        return found["points"], found["log_lambda"], float(found["cutoff"][0])
    points, log_lam, cutoff = alfd_weights(*arguments)
    stored_constructions.save(STORE_PREFIX, key, {"identity": identity, **args},
                              {"points": points, "log_lambda": log_lam, "cutoff": [cutoff]})
    return points, log_lam, cutoff


def stored_arguments() -> list[dict]:
    """The arguments of every stored mixture (user store and :data:`SHIPPED`)."""
    return stored_constructions.stored_arguments(STORE_PREFIX, (SHIPPED,))


@nb.njit(cache=True)
def log_mixture(tables, r, lp, log_w):
    """``log sum_h exp(log_w[h] + sum_k lp[h, n_k, w_k, l_k])`` over replication r's non-empty
    clusters (``lp[h, n, w, l]``)."""
    H = lp.shape[0]
    vals = np.empty(H)
    top = -math.inf
    for h in range(H):
        s = log_w[h]
        for k in range(tables.shape[1]):
            n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n > 0:
                s += lp[h, n, tables[r, k, 2], tables[r, k, 1]]
        vals[h] = s
        if s > top:
            top = s
    if top == -math.inf:
        return top
    acc = 0.0
    for h in range(H):
        acc += math.exp(vals[h] - top)
    return top + math.log(acc)
