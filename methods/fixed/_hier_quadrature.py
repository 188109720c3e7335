"""Tail probabilities and quantiles of ``bayes_hierarchical``'s grouped Dirichlet-difference
mixture when it has many pairs (version 3 of the method; below ``_X_MIN_PAIRS`` pairs,
version 2's ``_dirichlet_mixture.grouped_credible_interval`` is faster and is used).

The mathematics is that of ``methods/fixed/_dirichlet_mixture.py``: a mixture of Dirichlet laws,
``P(D <= -c) = sum_g int H_g(s) Q_g(x(s)) ds`` with ``x = (1 - c/s)/2``, ``H_g`` the S
density of group ``g`` and ``Q_g(x) = sum_(p in g) w_p I_x(a_p, b_p)`` its pairs' weighted
incomplete betas; adaptive Gauss-Kronrod (7, 15) after ``s = c + (1 - c) v^2``; safeguarded
Newton on the probit scale; the same tolerances.  Version 2 summed every pair at every
quadrature node (about 166 nodes per tail probability, up to 10^5 pairs at 500 x 10).
Version 3:

* **Interpolates Q_g in x** (``x_interpolant``).  For one tail, the nodes in the bulk of
  S map to a short x-interval (S is concentrated), where ``Q_g / W_g`` and ``log dQ_g``
  (``dQ_g`` the pairs' beta-density terms, for Newton's derivative) are analytic: a
  Chebyshev interpolant of degree 8 to 64, checked at interlaced points against the exact
  sums, replaces the pair sums at those nodes by a few operations per group.  Nodes off
  the interpolant take the exact sums, unless a bound (``I <= 1``) shows them negligible.
* **Sums pairs without a continued fraction per row** (``group_sums``).  Pairs come row
  by row (``b`` fixed, ``a`` rising by one) in runs (*segments*) of consecutive ``a``; a
  segment's first pair follows from the previous segment's by the contiguous recurrences
  (DLMF 8.17.20-21) in ``b`` and then in ``a``, up or down; only the first segment, or one
  more than ``_MAX_STEPS`` steps away, needs a continued fraction.  Within a segment the
  front terms ``T = x^a (1-x)^b / B(a, b)`` are ``T_base y^k C_k`` over blocks of
  ``_BLOCK`` pairs (``C_k``, a product of ``(a + b)/a`` below ``(2 (a + b))^_BLOCK``,
  precomputed in ``chain_plan``), so they do not form one serial chain.  Each recurrence
  step adds or subtracts a term of at most 1: the absolute error of ``I`` stays at
  rounding level, as in version 2.

Tests (``tests/methods/test_bayes_hierarchical_v3.py``): group sums against scipy's
incomplete beta, tail probabilities against version 2's on the same mixture and against
the exact sums at bulk nodes, intervals against version 1.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._dirichlet_mixture import (BREAKS, INTERP_SDS, barycentric, grouped_credible_interval,
                                              incomplete_beta_front, panel_log_h, tail_inverse, tail_quadrature)
from methods.fixed._gauss_kronrod import NODES

_BLOCK = 16         # pairs per block of independent front terms
_MAX_STEPS = 24     # recurrence steps from one segment start to the next before a fresh continued fraction


@nb.njit(cache=True)
def chain_plan(mix):
    """The x-independent part of the pair sums: ``(seg, C, W, longest)``.

    ``seg[s] = (first pair, pairs)`` of each segment (a run of pairs with equal ``b`` and
    ``a`` rising by one); ``C[p]`` the product of ``(a + b)/a`` over the pairs from the
    base of ``p``'s block (every ``_BLOCK`` pairs from the segment's first) up to ``p``,
    excluded; ``W[g]`` the total pair weight of group ``g`` (``sum pw``: the bound of its
    pair sum, as ``0 <= I <= 1``); ``longest`` the most pairs in a segment."""
    pa, pb, pw, pg = mix[3], mix[4], mix[6], mix[7]
    n = pa.size
    starts = np.empty(n + 1, np.int64)
    m = 0
    for p in range(n):
        if p == 0 or pb[p] != pb[p - 1] or pa[p] != pa[p - 1] + 1.0:
            starts[m] = p
            m += 1
    starts[m] = n
    seg = np.empty((m, 2), np.int64)
    C = np.empty(n)
    for s in range(m):
        p0 = starts[s]
        p1 = starts[s + 1]
        seg[s, 0] = p0
        seg[s, 1] = p1 - p0
        for p in range(p0, p1):
            if (p - p0) % _BLOCK == 0:
                C[p] = 1.0
            else:
                C[p] = C[p - 1] * (pa[p - 1] + pb[p - 1]) / pa[p - 1]
    W = np.zeros(mix[0].shape[1])
    for p in range(n):
        W[pg[p]] += pw[p]
    longest = 0
    for s in range(m):
        longest = max(longest, seg[s, 1])
    return seg, C, W, longest


@nb.njit(cache=True)
def _step_to(a, b, pa0, pb0, I, T, y_a, y_b, sigma, x, lx, l1x, upper, lbeta_ab):
    """(I, T) at pair (a, b) from those at (pa0, pb0) by the contiguous recurrences:
    ``b`` up first, then ``a`` up or down; a fresh continued fraction when the path is
    long.  ``sigma`` = -1 (lower tail, I = I_x(a, b)) or +1 (upper tail, I = I_x(b, a));
    ``y_a``, ``y_b``: the factor of T when a, b rises by one (x, 1 - x; swapped upper)."""
    db = b - pb0
    da = a - pa0
    if db < 0.0 or abs(da) + db > _MAX_STEPS:
        if upper:
            return incomplete_beta_front(b, a, x, lx, l1x, lbeta_ab)
        return incomplete_beta_front(a, b, x, lx, l1x, lbeta_ab)
    ca = pa0
    cb = pb0
    while cb < b:                       # (ca, cb) -> (ca, cb + 1)
        I -= sigma * T / cb
        T *= y_b * (ca + cb) / cb
        cb += 1.0
    while ca < a:                       # (ca, cb) -> (ca + 1, cb)
        I += sigma * T / ca
        T *= y_a * (ca + cb) / ca
        ca += 1.0
    while ca > a:                       # (ca, cb) -> (ca - 1, cb)
        T *= (ca - 1.0) / (y_a * (ca + cb - 1.0))
        ca -= 1.0
        I -= sigma * T / ca
    return I, T


@nb.njit(cache=True)
def group_sums(x, lx, l1x, upper, mix, plan, Q, dQ, ypow):
    """``Q[g] = sum_p pw_p I_p`` and ``dQ[g] = sum_p pw_p T_p`` over the pairs of each
    group at ``x`` (0 < x < 1): ``I_p = I_x(a, b)`` (lower tail) or ``I_x(b, a)`` (upper),
    ``T_p = x^a (1-x)^b / B(a, b)`` (or with a, b swapped), given ``lx = log x`` and
    ``l1x = log(1 - x)``; ``ypow``: ``_BLOCK`` floats."""
    pa, pb, plbeta, pw, pgroup, R = mix[3], mix[4], mix[5], mix[6], mix[7], mix[14]
    seg, C, longest = plan[0], plan[1], plan[3]
    if upper:
        sigma = 1.0
        y_a = 1.0 - x
        y_b = x
    else:
        sigma = -1.0
        y_a = x
        y_b = 1.0 - x
    ypow[0] = 1.0
    for k in range(1, min(ypow.size, longest)):
        ypow[k] = ypow[k - 1] * y_a
    for g in range(Q.size):
        Q[g] = 0.0
        dQ[g] = 0.0
    I0 = 0.0
    T0 = 0.0
    for si in range(seg.shape[0]):
        p0 = seg[si, 0]
        if si == 0:
            if upper:
                I0, T0 = incomplete_beta_front(pb[p0], pa[p0], x, lx, l1x, plbeta[p0])
            else:
                I0, T0 = incomplete_beta_front(pa[p0], pb[p0], x, lx, l1x, plbeta[p0])
        else:
            q = seg[si - 1, 0]
            I0, T0 = _step_to(pa[p0], pb[p0], pa[q], pb[q], I0, T0, y_a, y_b, sigma, x, lx, l1x, upper,
                              plbeta[p0])
        I = I0
        Tb = T0                                # front term at the block's base
        p1 = p0 + seg[si, 1]
        for base in range(p0, p1, _BLOCK):
            T = Tb
            for p in range(base, min(base + _BLOCK, p1)):
                T = Tb * ypow[p - base] * C[p]
                g = pgroup[p]
                Q[g] += pw[p] * I
                dQ[g] += pw[p] * T
                I += sigma * T * R[p, 0]
            Tb = T * y_a * R[min(base + _BLOCK, p1) - 1, 2]


# ---------------------------------------------------------------- interpolant in x
#
# For one tail (one c), the quadrature nodes in the bulk of S (mean +- INTERP_SDS sd, where
# the S densities are interpolated too) map to x = (1 - c/s)/2 in a short interval [xa, xb]
# (S is concentrated, so x moves little).  There, Q_g(x) / W_g (W_g = the group's total pair
# weight, so the ratio lies in [0, 1]) and log dQ_g(x) are analytic (positive combinations of
# incomplete betas and beta densities), so Chebyshev interpolation converges geometrically
# (Trefethen 2013, *Approximation Theory and Approximation Practice*, ch. 8).  Q_g is
# interpolated itself, not its logarithm: its rounding error from the recurrences is absolute
# (about 1e-16 W_g), which the logarithm would blow up where Q_g is tiny and spread over the
# interpolant.  The degree doubles from _X_DEGREE0 until, at the interlaced check points, every
# Q_g / W_g is within _X_TOL_TAIL of the exact sum and every log dQ_g within _X_TOL_DENSITY;
# else there is no interpolant and every node takes the exact sums.  As
# sum_g int H_g W_g ds = 1, the tail probability then moves by at most about _X_TOL_TAIL
# (the quadrature's own tolerance is max(1e-11, 1e-10 * value)).

_X_DEGREE0 = 8
_X_MIN_PAIRS = 2048       # below, version 2's quadrature is faster (measured; ``credible_interval``)
_X_MAX_DEGREE = 64
_X_TOL_TAIL = 1e-12       # largest |error of Q_g| / W_g at the check points
_X_TOL_DENSITY = 1e-8     # largest error of log dQ_g (the density only steers Newton's steps)


@nb.njit(cache=True)
def _sums_at(xs, upper, mix, plan, ypow):
    """Q_g / W_g and log dQ_g at the points ``xs`` (rows) for every group."""
    W = plan[2]
    ng = mix[0].shape[1]
    RQ = np.empty((xs.size, ng))
    LD = np.empty((xs.size, ng))
    Q = np.empty(ng)
    dQ = np.empty(ng)
    for k in range(xs.size):
        group_sums(xs[k], math.log(xs[k]), math.log1p(-xs[k]), upper, mix, plan, Q, dQ, ypow)
        for g in range(ng):
            RQ[k, g] = Q[g] / W[g]
            LD[k, g] = math.log(dQ[g]) if dQ[g] > 0.0 else -math.inf
    return RQ, LD


@nb.njit(cache=True)
def x_interpolant(c, upper, mix, meta, plan, ypow):
    """``(xz, xw, VQ, VD)``: barycentric Chebyshev interpolants of Q_g / W_g and log dQ_g in
    x over the bulk nodes' interval, for the tail at c; empty ``xz`` when none."""
    ng = mix[0].shape[1]
    none = (np.empty(0), np.empty(0), np.empty((0, ng)), np.empty((0, ng)))
    s_lo = max(meta[0] - INTERP_SDS * meta[1], c)
    s_hi = min(meta[0] + INTERP_SDS * meta[1], 1.0)
    if not (s_hi > s_lo) or s_lo <= 0.0 or mix[11].size == 0:
        return none
    xa = 0.5 * (1.0 - c / s_lo)
    xb = 0.5 * (1.0 - c / s_hi)
    if not (xb > xa) or xa <= 0.0 or xb >= 1.0:
        return none
    mid = 0.5 * (xa + xb)
    half = 0.5 * (xb - xa)
    n = _X_DEGREE0
    zs = np.empty(2 * n + 1)
    for k in range(2 * n + 1):
        zs[k] = mid + half * math.cos(math.pi * k / (2 * n))
    VQ, VD = _sums_at(zs, upper, mix, plan, ypow)
    aq = np.empty(ng)
    ad = np.empty(ng)
    while True:
        cz = np.empty(n + 1)
        cw = np.empty(n + 1)
        cQ = np.empty((n + 1, ng))
        cD = np.empty((n + 1, ng))
        for k in range(n + 1):
            cz[k] = mid + half * math.cos(math.pi * k / n)
            cw[k] = (1.0 if k % 2 == 0 else -1.0) * (0.5 if k == 0 or k == n else 1.0)
            cQ[k] = VQ[2 * k]
            cD[k] = VD[2 * k]
        err_q = 0.0
        err_d = 0.0
        for k in range(n):
            xk = mid + half * math.cos(math.pi * (2 * k + 1) / (2 * n))
            barycentric(cz, cw, cQ, xk, aq)
            barycentric(cz, cw, cD, xk, ad)
            for g in range(ng):           # NaN (log 0) fails both
                err_q = max(err_q, abs(aq[g] - VQ[2 * k + 1, g]))
                err_d = max(err_d, abs(ad[g] - VD[2 * k + 1, g]))
        if err_q <= _X_TOL_TAIL and err_d <= _X_TOL_DENSITY:
            return cz, cw, cQ, cD
        if n >= _X_MAX_DEGREE:
            return none
        n *= 2
        zs = np.empty(n)
        for k in range(n):
            zs[k] = mid + half * math.cos(math.pi * (2 * k + 1) / (2 * n))
        oQ, oD = _sums_at(zs, upper, mix, plan, ypow)
        WQ = np.empty((2 * n + 1, ng))
        WD = np.empty((2 * n + 1, ng))
        for k in range(2 * n + 1):
            if k % 2 == 0:
                WQ[k] = VQ[k // 2]
                WD[k] = VD[k // 2]
            else:
                WQ[k] = oQ[k // 2]
                WD[k] = oD[k // 2]
        VQ = WQ
        VD = WD


# ---------------------------------------------------------------- the integrand and the quadrature

_NEGLIGIBLE = 1e-20   # a node whose tail integrand is provably below this counts as 0


@nb.njit(cache=True)
def _tail_integrand(v, c, upper, mix, plan, xi, lh, work):
    """Integrands of the tail probability and of the density of D at -c (lower) or c
    (upper), in the variable v (s = c + (1 - c) v^2, jacobian included); ``lh[g]`` is
    log H_g(1 - s); ``xi`` the interpolant in x (``x_interpolant``); ``work`` scratch
    ``(Q, dQ, ypow)``.  Off the interpolant, a node whose bound ``sum_g H_g W_g`` (as
    I <= 1) is below _NEGLIGIBLE is 0, without its pair sums; so is the density there
    (it only steers Newton's steps)."""
    G, gexp, gscale, rmin, H = mix[0], mix[1], mix[2], mix[8], mix[10]
    W = plan[2]
    xz, xw, RQ, LD = xi
    Q, dQ, ypow = work
    one_c = 1.0 - c
    s = c + one_c * v * v
    z = one_c * (1.0 - v) * (1.0 + v)          # 1 - s without cancellation
    if s <= 0.0 or z <= 0.0:
        return 0.0, 0.0
    x = one_c * v * v / (2.0 * s)              # (1 - c/s) / 2
    if x <= 0.0:
        return 0.0, 0.0
    ls = math.log(s)
    lz = math.log(z)
    jac = 2.0 * one_c * v
    tail = 0.0
    dens = 0.0
    if xz.size > 0 and xz[xz.size - 1] <= x <= xz[0]:
        barycentric(xz, xw, RQ, x, Q)
        barycentric(xz, xw, LD, x, dQ)
        for g in range(G.shape[1]):
            if lh[g] > -math.inf:
                h = gexp[g] * ls + rmin * lz + gscale[g] + lh[g]     # log of the group's S density
                tail += math.exp(h) * W[g] * Q[g]
                dens += math.exp(h + dQ[g])
    else:
        bound = 0.0
        for g in range(G.shape[1]):
            H[g] = math.exp(gexp[g] * ls + rmin * lz + gscale[g] + lh[g]) if lh[g] > -math.inf else 0.0
            bound += H[g] * W[g]
        if bound * jac < _NEGLIGIBLE:
            return 0.0, 0.0
        group_sums(x, math.log(x), math.log((s + c) / (2.0 * s)), upper, mix, plan, Q, dQ, ypow)
        for g in range(G.shape[1]):
            tail += H[g] * Q[g]
            dens += H[g] * dQ[g]
    dens /= x * (1.0 - x) * 2.0 * s
    return tail * jac, dens * jac


@nb.njit(cache=True)
def _panel(nodes, args, f, g):
    """The integrands at one panel's nodes (``_gauss_kronrod``), ``args = (c, upper, (mix,
    plan, xi, work))``."""
    c, upper, payload = args
    mix, plan, xi, work = payload
    LH = panel_log_h(nodes, c, mix)
    for k in range(NODES):
        f[k], g[k] = _tail_integrand(nodes[k], c, upper, mix, plan, xi, LH[k], work)


_tail = tail_quadrature(_panel, BREAKS)


@nb.njit(cache=True)
def tail_probability(c, upper, mix, meta, plan):
    """(P(D <= -c), density of D at -c) when ``upper`` is False, (P(D >= c), density of
    D at c) when True; 0 <= c: ``_dirichlet_mixture.tail_quadrature`` of this module's
    integrand, with the interpolant in x of this tail."""
    if c >= 1.0:
        return 0.0, 0.0
    if c < 0.0:
        c = 0.0
    ng = mix[0].shape[1]
    work = (np.empty(ng), np.empty(ng), np.empty(_BLOCK))
    xi = x_interpolant(c, upper, mix, meta, plan, work[2])
    return _tail(c, upper, (mix, plan, xi, work), meta)


@nb.njit(cache=True)
def _planned_tail(c, upper, payload, meta):
    """:func:`tail_probability` with ``payload = (mix, plan)``."""
    return tail_probability(c, upper, payload[0], meta, payload[1])


_tail_at, _quantile = tail_inverse(_planned_tail)


@nb.njit(cache=True)
def quantile(level, upper, mix, meta, plan):
    """d with P(D <= d) = level (``upper`` False) or P(D > d) = level (``upper`` True): the
    safeguarded Newton iteration on the probit scale of
    ``methods.fixed._dirichlet_mixture.tail_inverse`` on this module's tail probabilities."""
    return _quantile(level, upper, (mix, plan), meta)


@nb.njit(cache=True)
def credible_interval(alpha, mix, meta):
    """Equal-tailed credible interval (alpha quantile, 1 - alpha quantile) of D: version
    2's quadrature (``_dirichlet_mixture.grouped_credible_interval``) below _X_MIN_PAIRS pairs,
    where the interpolant in x would cost more than it saves, this module's above."""
    if mix[3].size < _X_MIN_PAIRS:
        return grouped_credible_interval(alpha, mix, meta)
    plan = chain_plan(mix)
    return quantile(alpha, False, mix, meta, plan), quantile(alpha, True, mix, meta, plan)
