"""Slow reference implementations of the resampling and Bayesian methods
(``cluster_bootstrap``, ``cluster_bootstrap_bca``, ``bayes_paired``, ``bayes_hierarchical``),
written from the papers in plain Python / numpy / scipy, one function per method named
after it (see ``methods.reference``): ``NAME(table_K4, margin, confidence=0.95, **options)
-> (lower, upper, estimate, status)``.

They share no code with the numba kernels of ``methods/fixed``:

* bootstrap: the counter-based generator (SplitMix64 finaliser, Steele, Lea & Flood 2014)
  and the table key are re-implemented here with Python integers from their written
  specification (``simlab/rng.py`` and ``methods/fixed/_bootstrap.py`` docstrings), so the
  resampling indices are the same and results can be compared exactly; the bootstrap
  statistics are computed in plain Python loops, bias correction and the jackknife
  acceleration in exact rational arithmetic (``fractions``), normal quantiles by scipy.
* ``bayes_paired``: the posterior CDF of ``D = p01 - p10`` is integrated by scipy's QUADPACK
  over ``p10`` (conditioning on p10 instead of on p10 + p01 as the kernel does):
  ``P(D <= d) = int f_{p10}(x) I_{(x + d)/(1 - x)}(a01, a_rest) dx`` with ``p10 ~
  Beta(a10, a01 + a_rest)`` and ``p01 / (1 - p10) | p10 ~ Beta(a01, a_rest)``; quantiles by
  ``scipy.optimize.brentq``.
* ``bayes_hierarchical``: the same exact mixture posterior, but built from exact integer
  Stirling-number polynomials, every table-count vector ``(t11, t10, t01, t00)`` enumerated
  separately, ``A(T)`` by ``scipy.integrate.quad`` around the mode found by
  ``scipy.optimize.minimize_scalar``, and the CDF by the p10-conditioning integral above.
"""
from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np
from scipy import integrate, optimize, special

from methods.reference._tables import cluster_rows, decide

# ---------------------------------------------------------------- shared helpers


def _alpha(confidence: float) -> float:
    return (1.0 - confidence) / 2.0


# ---------------------------------------------------------------- counter-based generator

_MASK = (1 << 64) - 1


def mix64(z: int) -> int:
    """SplitMix64 finaliser (Steele, Lea & Flood 2014)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def counter_uniform(k1: int, k2: int, rep: int, draw: int) -> float:
    """simlab.rng.uniform from its specification: mix64(mix64(counter ^ k1) ^ k2) >> 11
    times 2^-53, counter = rep << 32 | draw."""
    z = mix64(mix64(((rep << 32) | draw) ^ k1) ^ k2)
    return (z >> 11) * 2.0 ** -53


_SALT = hashlib.sha256(b"simlab|cluster-bootstrap|resampling-key|v1").digest()
STREAM_S1 = int.from_bytes(_SALT[:8], "little")
STREAM_S2 = int.from_bytes(_SALT[8:16], "little")


def resampling_key(rows: np.ndarray) -> int:
    """First key word: the non-empty clusters' counts folded with mix64, then their number."""
    h = STREAM_S1
    for row in rows:
        for c in row:
            h = mix64(h ^ int(c))
    return mix64(h ^ len(rows))


def bootstrap_statistics(table, resamples: int = 999) -> list[Fraction]:
    """The ``resamples`` cluster-bootstrap statistics sum(n01 - n10) / sum(n), exactly
    (as fractions), in resample order."""
    rows = cluster_rows(table)
    m = len(rows)
    d = [int(r[2] - r[1]) for r in rows]
    n = [int(r.sum()) for r in rows]
    k1 = resampling_key(rows)
    out = []
    for b in range(resamples):
        sd = 0
        sn = 0
        for j in range(m):
            i = min(int(counter_uniform(k1, STREAM_S2, b, j) * m), m - 1)
            sd += d[i]
            sn += n[i]
        out.append(Fraction(sd, sn))
    return out


def _order_quantile(sorted_vals: list[float], p: float) -> float:
    """Order statistic of rank (B + 1) p, linear interpolation, clamped (Davison & Hinkley
    1997, eq. 5.18)."""
    B = len(sorted_vals)
    h = (B + 1) * p
    if h <= 1.0:
        return sorted_vals[0]
    if h >= B:
        return sorted_vals[-1]
    lo = math.floor(h)
    return sorted_vals[lo - 1] + (h - lo) * (sorted_vals[lo] - sorted_vals[lo - 1])


def _theta_hat(rows) -> Fraction:
    return Fraction(int((rows[:, 2] - rows[:, 1]).sum()), int(rows.sum()))


def cluster_bootstrap(table, margin: float, confidence: float = 0.95, resamples: int = 999):
    """Percentile interval of the cluster bootstrap (Efron & Tibshirani 1993, eq. 13.5)."""
    rows = cluster_rows(table)
    if len(rows) == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    est = float(_theta_hat(rows))
    if len(rows) < 2:
        return math.nan, math.nan, est, "inconclusive"
    stats = sorted(float(s) for s in bootstrap_statistics(table, resamples))
    a = _alpha(confidence)
    lower = _order_quantile(stats, a)
    upper = _order_quantile(stats, 1.0 - a)
    return lower, upper, est, decide(lower, margin)


def jackknife_acceleration(rows) -> float:
    """Efron (1987) sec. 6 / Efron & Tibshirani (1993) eq. 14.15, delete-one-cluster, exact."""
    D = int((rows[:, 2] - rows[:, 1]).sum())
    N = int(rows.sum())
    loo = [Fraction(D - int(r[2] - r[1]), N - int(r.sum())) for r in rows]
    mean = sum(loo) / len(loo)
    u = [mean - t for t in loo]
    s2 = sum(x * x for x in u)
    if s2 == 0:
        return 0.0
    s3 = sum(x * x * x for x in u)
    return float(s3) / (6.0 * float(s2) ** 1.5)


def cluster_bootstrap_bca(table, margin: float, confidence: float = 0.95, resamples: int = 999):
    """BCa interval (Efron 1987, eq. 2.3), z0 from the share of resamples below theta_hat
    (ties one half, clamped to [1/(2B), 1 - 1/(2B)]), jackknife acceleration."""
    rows = cluster_rows(table)
    if len(rows) == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    theta = _theta_hat(rows)
    if len(rows) < 2:
        return math.nan, math.nan, float(theta), "inconclusive"
    exact = bootstrap_statistics(table, resamples)
    B = len(exact)
    below = sum(1 for s in exact if s < theta)
    ties = sum(1 for s in exact if s == theta)
    g = (below + 0.5 * ties) / B
    g = min(max(g, 0.5 / B), 1.0 - 0.5 / B)
    z0 = float(special.ndtri(g))
    acc = jackknife_acceleration(rows)
    stats = sorted(float(s) for s in exact)

    def level(z):
        w = z0 + z
        den = 1.0 - acc * w
        if den <= 0.0:
            return 0.0 if w < 0.0 else 1.0
        return float(special.ndtr(z0 + w / den))

    a = _alpha(confidence)
    lower = _order_quantile(stats, level(float(special.ndtri(a))))
    upper = _order_quantile(stats, level(float(special.ndtri(1.0 - a))))
    return lower, upper, float(theta), decide(lower, margin)


# ---------------------------------------------------------------- Dirichlet-difference mixtures


def dirichlet_difference_cdf(d: float, a10, a01, ar, w) -> float:
    """P(p01 - p10 <= d) under sum_c w_c Dirichlet(p10 = a10_c, p01 = a01_c, rest = ar_c),
    by conditioning on p10 (scipy QUADPACK)."""
    if d <= -1.0:
        return 0.0
    if d >= 1.0:
        return 1.0
    a10, a01, ar, w = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (a10, a01, ar, w))
    lb = special.betaln(a10, a01 + ar)
    lo = max(0.0, -d)
    span = 1.0 - lo

    if len(w) == 1:       # one component: scalar arithmetic (much faster in Python)
        s10, s01, sr, slb = float(a10[0]), float(a01[0]), float(ar[0]), float(lb[0])

        def f(y):
            x = lo + span * y * y
            if x <= 0.0 or x >= 1.0:
                return 0.0
            z = min(max((x + d) / (1.0 - x), 0.0), 1.0)
            dens = math.exp((s10 - 1.0) * math.log(x) + (s01 + sr - 1.0) * math.log1p(-x) - slb)
            return dens * float(special.betainc(s01, sr, z)) * 2.0 * span * y
    else:
        def f(y):
            x = lo + span * y * y
            if x <= 0.0 or x >= 1.0:
                return 0.0
            z = min(max((x + d) / (1.0 - x), 0.0), 1.0)
            dens = np.exp((a10 - 1.0) * math.log(x) + (a01 + ar - 1.0) * math.log1p(-x) - lb)
            return float(np.sum(w * dens * special.betainc(a01, ar, z))) * 2.0 * span * y

    tot = a10 + a01 + ar
    m = float(np.sum(w * a10 / tot))
    sd = math.sqrt(max(float(np.sum(w * (a10 * (tot - a10) / (tot * tot * (tot + 1.0)) + (a10 / tot) ** 2)))
                       - m * m, 0.0))
    pts = sorted({math.sqrt((p - lo) / span) for p in (m - 4 * sd, m - sd, m, m + sd, m + 4 * sd, (1.0 - d) / 2.0)
                  if lo < p < 1.0})
    val = integrate.quad(f, 0.0, 1.0, points=pts or None, epsabs=1e-13, epsrel=1e-11, limit=500)[0]
    return min(max(val, 0.0), 1.0)


def _credible_interval(a10, a01, ar, w, confidence: float) -> tuple[float, float]:
    a = _alpha(confidence)
    lo = optimize.brentq(lambda d: dirichlet_difference_cdf(d, a10, a01, ar, w) - a, -1.0, 1.0,
                         xtol=1e-13, rtol=1e-15, maxiter=500)
    hi = optimize.brentq(lambda d: dirichlet_difference_cdf(d, a10, a01, ar, w) - (1.0 - a), -1.0, 1.0,
                         xtol=1e-13, rtol=1e-15, maxiter=500)
    return lo, hi


def bayes_paired(table, margin: float, confidence: float = 0.95):
    """Equal-tailed credible interval of p01 - p10 under the Jeffreys Dirichlet posterior
    of the pooled cells (Gelman et al. 2013, BDA3 sec. 3.4)."""
    rows = cluster_rows(table)
    n11, n10, n01, n00 = (int(v) for v in rows.sum(axis=0)) if len(rows) else (0, 0, 0, 0)
    n = n11 + n10 + n01 + n00
    if n == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    lo, hi = _credible_interval([n10 + 0.5], [n01 + 0.5], [n11 + n00 + 1.0], [1.0], confidence)
    return lo, hi, (n01 - n10) / (n + 2.0), decide(lo, margin)


# ---------------------------------------------------------------- hierarchical


def stirling_polynomial(counts) -> list[int]:
    """Integer coefficients (lowest degree first) of prod_k x (x+1) ... (x + y_k - 1)."""
    poly = [1]
    for y in counts:
        for i in range(int(y)):          # factor (x + i)
            new = [0] * (len(poly) + 1)
            for m, c in enumerate(poly):
                new[m] += i * c
                new[m + 1] += c
            poly = new
    return poly


def _log_alpha_integrand(u: float, T: int, sizes) -> float:
    a = math.exp(u)
    val = u - 2.0 * np.logaddexp(0.0, u) + T * u
    for n in sizes:
        val -= float(np.sum(np.log(a + np.arange(n))))
    return val


def log_alpha_integral(T: int, sizes) -> float:
    """log int_0^inf alpha^T prod_k Gamma(alpha)/Gamma(alpha + n_k) d alpha / (1 + alpha)^2."""
    opt = optimize.minimize_scalar(lambda u: -_log_alpha_integrand(u, T, sizes), bounds=(-60.0, 60.0),
                                   method="bounded", options={"xatol": 1e-10})
    u0 = float(opt.x)
    top = _log_alpha_integrand(u0, T, sizes)
    val = integrate.quad(lambda u: math.exp(_log_alpha_integrand(u, T, sizes) - top), u0 - 80.0, u0 + 80.0,
                         points=[u0 - 2.0, u0, u0 + 2.0], epsabs=0.0, epsrel=1e-13, limit=500)[0]
    return top + math.log(val)


def hierarchical_mixture(table):
    """Exact posterior of (p10, p01, rest) as arrays (a10, a01, a_rest, weight); components
    below 1e-18 of the largest are dropped."""
    rows = cluster_rows(table)
    sizes = [int(r.sum()) for r in rows]
    polys = [stirling_polynomial(rows[:, j]) for j in range(4)]   # index = t_j
    logS = [[math.log(c) if c > 0 else -math.inf for c in p] for p in polys]
    cache: dict[int, float] = {}
    comps: dict[tuple[int, int, int], list[float]] = {}
    for t11, l11 in enumerate(logS[0]):
        for t10, l10 in enumerate(logS[1]):
            for t01, l01 in enumerate(logS[2]):
                for t00, l00 in enumerate(logS[3]):
                    if -math.inf in (l11, l10, l01, l00):
                        continue
                    T = t11 + t10 + t01 + t00
                    if T not in cache:
                        cache[T] = log_alpha_integral(T, sizes)
                    lw = (l11 + l10 + l01 + l00 + cache[T] - special.gammaln(2.0 + T)
                          + sum(special.gammaln(0.5 + t) for t in (t11, t10, t01, t00)))
                    comps.setdefault((t10, t01, t11 + t00), []).append(lw)
    keys = list(comps)
    lws = np.array([special.logsumexp(comps[k]) for k in keys])
    keep = lws > lws.max() + math.log(1e-18)      # dropped mass < 1e-18 per component
    keys = [k for k, kp in zip(keys, keep) if kp]
    lws = lws[keep]
    w = np.exp(lws - special.logsumexp(lws))
    t10 = np.array([k[0] for k in keys], float)
    t01 = np.array([k[1] for k in keys], float)
    rest = np.array([k[2] for k in keys], float)
    return t10 + 0.5, t01 + 0.5, rest + 1.0, w


def bayes_hierarchical(table, margin: float, confidence: float = 0.95):
    """Equal-tailed credible interval of the population p01 - p10: clusters
    Dirichlet-multinomial(alpha p), p ~ Dirichlet(1/2), pi(alpha) = 1/(1 + alpha)^2."""
    rows = cluster_rows(table)
    if len(rows) == 0:
        return math.nan, math.nan, math.nan, "inconclusive"
    a10, a01, ar, w = hierarchical_mixture(table)
    mean = float(np.sum(w * (a01 - a10) / (a10 + a01 + ar)))
    lo, hi = _credible_interval(a10, a01, ar, w, confidence)
    return lo, hi, mean, decide(lo, margin)
