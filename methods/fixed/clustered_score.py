"""``clustered_score`` -- score-type interval for clustered matched pairs, variance evaluated
under the null-restricted estimate (Tango's restricted MLE, ICC-adjusted).

Tango (1998, Stat Med 17:891-908) inverts, for paired binary data, the score statistic whose
variance is evaluated at the constrained MLE under ``H0: Delta = delta``: with pooled wins
``w = sum n01``, losses ``l = sum n10``, ``N`` pairs,

    q(delta) = (sqrt(B^2 - 8 N C) - B) / (4 N),  B = -(w + l) + (2N - w + l) delta,  C = -l delta (1 - delta),
    sigma2(delta) = 2 q(delta) + delta (1 - delta)           (variance of one pair's difference under H0).

For clusters the variance of ``S = sum D_k`` (``D_k = n01 - n10``) is ``sum_k n_k sigma2 (1 + (n_k -
1) rho)`` for an exchangeable within-cluster correlation rho; the ICC-adjusted clustered
matched-pair tests (Yang, Sun & Hardin 2012, Comput Stat Data Anal 56:1301-1320, recommended
there for small cluster-size variability; Durkalski et al. 2003, Stat Med 22:279-290, for the
Wald form) estimate rho.  Here rho is the moment estimator about the *null* value,
``E (D_k - n_k delta)^2 = n_k sigma2 (1 + (n_k - 1) rho)``, truncated below at 0, which gives the
variance in closed form (derived here; Yang, Sun & Hardin's exact ICC estimator was not checked):

    V(delta) = max( sum_k (D_k - n_k delta)^2,  sigma2(delta) sum_k n_k (1 + (n_k - 1) rho_0) ),
    Z(delta) = (S - N delta) / sqrt(V(delta)),

where ``rho_0`` (option ``icc_floor``, default 0) is the least ICC the analysis assumes: rare
discordant pairs carry almost no information about rho, so a pre-registered floor (e.g. the
design's ``rho_max``) keeps the model term from understating the clustered variance.

Both terms are evaluated under the null (the first is the cluster-robust variance centred at
``delta``, not at the estimate; the second is Tango's model variance), so a sample with no
observed losses still has ``V >= N sigma2(delta) > 0`` at every ``delta < 0``: no zero-variance
pass.  With one trial per cluster (the seed) rho is not identified and ``V`` is the larger of
Tango's model variance and the empirical second moment about ``delta``; with no discordant
pairs the model term wins for ``|delta| < 1/2`` and the bounds are Tango's ``+-z^2 / (N + z^2)``.
By Cauchy-Schwarz ``|Z| <= sqrt(K)`` whenever the robust term is used, so with fewer than
``z^2`` (about 4) clusters of that kind the lower bound is -1.  Estimand: trial-weighted (``S / N``); unequal cluster sizes enter
through ``n_k`` (ratio-estimator residuals), empty clusters are missing and skipped.

Interval: ``{delta : -z <= Z(delta) <= z}`` with ``z = z_{1 - alpha}`` (one-sided alpha; the
``1 - 2 alpha`` interval).  The lower bound is the crossing ``Z = z`` on ``(-1, S/N)`` by
bisection (``TOL``), the upper ``Z = -z`` on ``(S/N, 1)``; ``V`` is a quadratic in ``delta`` so each
evaluation is O(1) after one pass over the clusters.  The decision is the score test itself,
``Z(-margin) >= z``, and the reported bound is clamped to agree with it.  Boundaries: no
trials -> inconclusive; one cluster -> the robust term has one residual, the model term keeps
it positive; every pair a loss -> lower bound -1, fail.
"""
import math

import numba as nb
import numpy as np

from methods.protocol import Estimand, FixedMethod, OptionRange, z_value
from methods.fixed._common import decide, write_inconclusive

TOL = 1e-12


def prepare(method, alpha, margin, tables):
    """``[z_{1 - alpha}, icc_floor]`` (the one place that turns the level into the critical value)."""
    f = method.options["icc_floor"]
    if not (isinstance(f, (int, float)) and 0.0 <= f <= 1.0):
        raise ValueError(f"method {method.name!r}: option icc_floor must lie in [0, 1], got {f!r}")
    return np.array([z_value(alpha), f], dtype=np.float64)


@nb.njit(inline="always", cache=True)
def restricted_pair_variance(delta, w, l, N):
    """Tango's ``sigma2(delta) = 2 q + delta (1 - delta)`` at the constrained MLE ``q``."""
    b = -(w + l) + (2.0 * N - w + l) * delta
    cc = -l * delta * (1.0 - delta)
    disc = b * b - 8.0 * N * cc
    q = (math.sqrt(disc if disc > 0.0 else 0.0) - b) / (4.0 * N)
    return 2.0 * q + delta * (1.0 - delta)


@nb.njit(inline="always", cache=True)
def score(delta, S, N, w, l, s2, snd, sn2, weight):
    """``Z(delta)``; ``s2 = sum D_k^2``, ``snd = sum n_k D_k``, ``sn2 = sum n_k^2``,
    ``weight = sum n_k (1 + (n_k - 1) rho_0)``."""
    robust = s2 - 2.0 * delta * snd + delta * delta * sn2
    model = weight * restricted_pair_variance(delta, w, l, N)
    v = robust if robust > model else model
    num = S - N * delta
    if v <= 0.0:
        return math.inf if num > 0.0 else (-math.inf if num < 0.0 else 0.0)
    return num / math.sqrt(v)


@nb.njit(cache=True)
def crossing(lo, hi, target, S, N, w, l, s2, snd, sn2, weight):
    """Bisection for ``Z = target`` with ``Z(lo) >= target > Z(hi)``."""
    while hi - lo > TOL:
        mid = 0.5 * (lo + hi)
        if score(mid, S, N, w, l, s2, snd, sn2, weight) >= target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    z = consts[0]
    floor = consts[1]
    for r in range(tables.shape[0]):
        N = 0.0
        S = 0.0
        w = 0.0
        l = 0.0
        s2 = 0.0
        snd = 0.0
        sn2 = 0.0
        for k in range(tables.shape[1]):
            n = float(tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3])
            if n == 0.0:
                continue
            d = float(tables[r, k, 2] - tables[r, k, 1])
            N += n
            S += d
            w += tables[r, k, 2]
            l += tables[r, k, 1]
            s2 += d * d
            snd += n * d
            sn2 += n * n
        if N == 0.0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        dhat = S / N
        estimate[r] = dhat
        wt = N + floor * (sn2 - N)
        if l == N or score(-1.0, S, N, w, l, s2, snd, sn2, wt) < z:
            lo = -1.0
        else:
            lo = crossing(-1.0, dhat, z, S, N, w, l, s2, snd, sn2, wt)
        if score(-margin, S, N, w, l, s2, snd, sn2, wt) >= z:
            lo = max(lo, -margin)
        elif lo >= -margin:
            lo = np.nextafter(-margin, -math.inf)
        if w == N or score(1.0, S, N, w, l, s2, snd, sn2, wt) > -z:
            hi = 1.0
        else:
            hi = crossing(dhat, 1.0, -z, S, N, w, l, s2, snd, sn2, wt)
        lower[r] = lo
        upper[r] = hi
        status[r] = decide(lo, margin)


METHOD = FixedMethod(
    name="clustered_score",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Tango (1998) Stat Med 17:891-908 (score statistic, constrained MLE); ICC adjustment for clustered "
             "matched pairs as in Yang, Sun & Hardin (2012) Comput Stat Data Anal 56:1301-1320 and Durkalski et "
             "al. (2003) Stat Med 22:279-290; variance max(cluster-robust about delta, Tango model variance)",
    summary="clustered score interval, variance under the null-restricted estimate (robust about delta, never "
            "below Tango's restricted variance)",
    kernel=kernel,
    prepare=prepare,
    options={"icc_floor": 0.0},
    ranges={"icc_floor": OptionRange(0.0, 1.0)},
)
