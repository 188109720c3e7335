"""Numba quadrature of the posterior of a difference of Dirichlet cells: the helpers of
``bayes_paired`` and ``bayes_hierarchical`` (whose version-3 quadrature,
``methods/fixed/_hier_quadrature.py``, builds on this one).

Both posteriors are finite mixtures of Dirichlet laws for
``(p10, p01, rest)``; component ``i`` is Dirichlet(b_i, a_i, 1 + r_i) with weight ``w_i``.
Under one component, ``S = p10 + p01 ~ Beta(a_i + b_i, 1 + r_i)`` and
``W = p01 / S ~ Beta(a_i, b_i)`` are independent (aggregation and neutrality of the
Dirichlet; Wilks 1962, *Mathematical Statistics*, sec. 7.7), and ``D = p01 - p10 = S (2W - 1)``.
Hence, for ``c >= 0``,

    P(D <= -c) = sum_i w_i  int_c^1 f_i(s) I_{(1 - c/s)/2}(a_i, b_i) ds          (lower tail)
    P(D >=  c) = sum_i w_i  int_c^1 f_i(s) I_{(1 - c/s)/2}(b_i, a_i) ds          (upper tail)

with ``f_i`` the Beta density of ``S`` and ``I`` the regularised incomplete beta function
(continued fraction, Press et al. 2007, *Numerical Recipes* 3rd ed., sec. 6.4, evaluated
with the modified Lentz method).  Components that share ``(a, b)`` are stored as one
"pair" whose ``S`` density is ``s^(A-1) * sum_r coef_r (1-s)^r``.  The one-dimensional
integral is computed by globally adaptive Gauss-Kronrod (7, 15) quadrature
(``methods.fixed._gauss_kronrod``: nodes of QUADPACK's QK15, Piessens et al. 1983; bisection
of the panel with the largest ``|K15 - G7|``; initial break points at the mean and at +-4,
+-8 and +-12 SD of ``S``, version 1 at the mean and +-4 SD) after the substitution
``s = c + (1 - c) v^2``, which removes the square-root endpoint behaviour of ``I`` at
``s = c``.  The same pass integrates the density of ``D``, so quantiles are found by a
safeguarded Newton iteration on the probit scale.  Accuracy: the quadrature stops when
the summed ``|K15 - G7|`` (a generous bound on the 15-point error for these smooth
integrands) is below ``max(1e-11, 1e-10 * value)``; measured against an independent
scipy implementation, tail probabilities agree to about 1e-12 and credible bounds to
about 1e-13 (tests require 1e-6).
"""
import math

import numba as nb
import numpy as np

from methods.fixed._gauss_kronrod import NODES, adaptive
from methods.fixed._special import SQRT2PI, betacf, norm_ppf
from simlab.numba_cache import cache_closure

# --------------------------------------------------------------------------- Dirichlet-difference mixture
#
# The pair form (``bayes_paired``):
#   pp[p, :] = (a, b, A - 1, log B(a, b), log scale) for pair p, with a = W's first Beta
#              parameter (p01 side), b = the second (p10 side), A = a + b;
#   coef[p, q] = scaled coefficient of s^(A-1) (1-s)^(rmin+q) in pair p's weighted S density
#              (density = exp(scale) * s^(A-1) (1-s)^rmin * sum_q coef[p, q] (1-s)^q);
#   meta = (mean of S, sd of S, mean of D, sd of D) of the whole mixture.
# The grouped form ``mix`` (what the quadrature reads; ``grouped_mixture`` converts): pairs
# that share A share their S density up to a factor (``bayes_hierarchical``: every pair
# with the same t10 + t01), so the polynomial is evaluated once per group:
#   mix = (G, gexp, gscale, pa, pb, plbeta, pw, pgroup, rmin, chain, H, cz, cw, cV, R, LG)
#   G[q, g]   coefficient of (1-s)^(rmin+q) of group g (columns: groups, for vector Horner),
#   LG = log G, which keeps the coefficients that underflow in G (``_log_polys_many``),
#   gexp[g]   A - 1 of the group,  gscale[g]  its log scale,
#   pa, pb, plbeta[p]  a, b, log B(a, b) of pair p;  pw[p] its weight relative to exp(gscale),
#   pgroup[p] its group;  rmin;  chain: pairs listed row by row (b fixed, a rising by one)
#   so that I_x(a, b) may follow from its neighbour's (see ``_tail_integrand``);
#   H: float64[groups] scratch;  cz, cw, cV: Chebyshev interpolant of log H_g(z) on the
#   bulk of S (``with_interpolant``; empty: none);  R: ``pair_reciprocals``.

PP_A, PP_B, PP_AM1, PP_LBETA, PP_SCALE = 0, 1, 2, 3, 4

# initial break points of the tail integrals, in sd(S) from mean(S) (``tail_breaks``)
BREAKS = (-12.0, -8.0, -4.0, 0.0, 4.0, 8.0, 12.0)  # +-12: the edges of the bulk (``with_interpolant``)
BREAKS_V1 = (-4.0, 0.0, 4.0)   # version 1's (methods.reference.hierarchical_v1)


@nb.njit(cache=True)
def grouped_mixture(pp, coef, rmin):
    """The grouped form of a pair-form mixture: one group per pair, no chaining."""
    npair = pp.shape[0]
    G = np.ascontiguousarray(coef.T)
    LG = np.full(G.shape, -math.inf)
    for q in range(G.shape[0]):
        for g in range(npair):
            if G[q, g] > 0.0:
                LG[q, g] = math.log(G[q, g])
    pgroup = np.arange(npair)
    return (G, pp[:, PP_AM1].copy(), pp[:, PP_SCALE].copy(), pp[:, PP_A].copy(), pp[:, PP_B].copy(),
            pp[:, PP_LBETA].copy(), np.ones(npair), pgroup, float(rmin), False, np.empty(npair),
            np.empty(0), np.empty(0), np.empty((0, npair)), pair_reciprocals(pp[:, PP_A], pp[:, PP_B]), LG)


@nb.njit(cache=True)
def pair_reciprocals(pa, pb):
    """R[p] = (1/a, 1/b, (a+b)/a, (a+b)/b) of each pair: the chained steps multiply."""
    R = np.empty((pa.size, 4))
    for p in range(pa.size):
        R[p, 0] = 1.0 / pa[p]
        R[p, 1] = 1.0 / pb[p]
        R[p, 2] = (pa[p] + pb[p]) / pa[p]
        R[p, 3] = (pa[p] + pb[p]) / pb[p]
    return R


_HORNER_FLOOR = 1e-260   # a shifted Horner sum at least this large lost nothing to underflow


@nb.njit(cache=True)
def _log_polys_many(G, LG, zs):
    """log sum_q G[q, g] z^q for every group g and every z (0 <= z <= 1) of ``zs`` (-inf
    where the sum is 0); ``LG = log G``.

    A group's coefficients can span far more than the float range (few clusters with many
    trials: the beta normalisers 1/B(A, r) in them change by e^1000 along q), so ``G``
    holds zeros where ``LG`` is finite, and a plain Horner sum underflows to a denormal
    whose logarithm is wrong by hundreds (the S density then overflows).  Horner therefore
    runs from each group's first coefficient ``lo`` (powers below it are exactly zero) and
    adds ``lo log z``.  All terms are >= 0, so what storage or Horner lost is below 1e-308
    per term: a shifted sum of at least _HORNER_FLOOR is exact to rounding.  Below it, the
    log-sum-exp of ``LG[q] + (q - lo) log z`` over the group's coefficients decides."""
    n = zs.size
    width, ng = G.shape
    lo = np.zeros(ng, np.int64)
    for g in range(ng):
        q = 0
        while q < width and LG[q, g] == -math.inf:
            q += 1
        lo[g] = q
    V = np.zeros((n, ng))
    for q in range(width - 1, -1, -1):   # Horner, all nodes and groups side by side
        for k in range(n):
            z = zs[k]
            for g in range(ng):
                V[k, g] = V[k, g] * (z if q >= lo[g] else 1.0) + G[q, g]
    for k in range(n):
        z = zs[k]
        lz = math.log(z) if z > 0.0 else -math.inf
        for g in range(ng):
            if lo[g] == width:
                V[k, g] = -math.inf
            elif z <= 0.0:
                V[k, g] = LG[0, g]            # only the constant term is left
            elif V[k, g] >= _HORNER_FLOOR:
                V[k, g] = math.log(V[k, g]) + lo[g] * lz
            else:
                top = -math.inf
                for q in range(lo[g], width):
                    top = max(top, LG[q, g] + (q - lo[g]) * lz)
                acc = 0.0
                for q in range(lo[g], width):
                    acc += math.exp(LG[q, g] + (q - lo[g]) * lz - top)
                V[k, g] = top + math.log(acc) + lo[g] * lz
    return V


@nb.njit(cache=True)
def barycentric(cz, cw, cV, z, out):
    """out[g] = the interpolant of column g of cV (values at the nodes cz) at z."""
    ng = cV.shape[1]
    for g in range(ng):
        out[g] = 0.0
    den = 0.0
    for k in range(cz.size):
        d = z - cz[k]
        if d == 0.0:
            for g in range(ng):
                out[g] = cV[k, g]
            return
        c = cw[k] / d
        den += c
        for g in range(ng):
            out[g] += c * cV[k, g]
    for g in range(ng):
        out[g] /= den


INTERP_TOL = 1e-10     # largest error of the interpolated log H_g allowed at the check points
INTERP_SDS = 12.0      # the interpolant covers mean(S) +- 12 sd(S); beyond it: exact Horner
INTERP_MAX_DEGREE = 128


@nb.njit(cache=True)
def with_interpolant(mix, meta):
    """``mix`` with a Chebyshev interpolant of every group's log H_g(z), z = 1 - s, on the
    bulk of S (mean +- INTERP_SDS sd), so that the quadrature's integrand costs a few
    hundred operations instead of a degree-``width`` Horner per group.  log H_g is analytic
    there (a polynomial with positive coefficients), so interpolation at Chebyshev points
    converges geometrically (Trefethen 2013, *Approximation Theory and Approximation
    Practice*, ch. 8; barycentric form, ch. 5); the degree doubles from 12 until the
    interpolant agrees with the exact value within INTERP_TOL at the interlaced Chebyshev
    points of the first kind (else no interpolant: the exact path everywhere).  An error
    d in log H changes the S density by the factor e^d: tail probabilities move by about
    d times themselves (1e-10 relative), credible bounds by far less than 1e-9."""
    G, gexp, gscale, pa, pb, plb, pw, pg, rmin, chain, H, _, _, _, R, LG = mix
    ng = G.shape[1]
    zlo = 1.0 - min(meta[0] + INTERP_SDS * meta[1], 1.0)
    zhi = 1.0 - max(meta[0] - INTERP_SDS * meta[1], 0.0)
    if not (zhi > zlo) or G.shape[0] < 64:
        return mix
    mid = 0.5 * (zlo + zhi)
    half = 0.5 * (zhi - zlo)
    approx = np.empty(ng)
    # exact values at the 2nd-kind points of degree 2n: the even ones are degree n's nodes,
    # the odd ones its check points (1st-kind points of degree n), so each doubling reuses
    # every value computed so far
    n = 12
    zs = np.empty(2 * n + 1)
    for k in range(2 * n + 1):
        zs[k] = mid + half * math.cos(math.pi * k / (2 * n))
    V = _log_polys_many(G, LG, zs)
    while True:
        cz = np.empty(n + 1)
        cw = np.empty(n + 1)
        cV = np.empty((n + 1, ng))
        for k in range(n + 1):
            cz[k] = mid + half * math.cos(math.pi * k / n)
            cw[k] = (1.0 if k % 2 == 0 else -1.0) * (0.5 if k == 0 or k == n else 1.0)
            cV[k] = V[2 * k]
        err = 0.0
        for k in range(n):
            barycentric(cz, cw, cV, mid + half * math.cos(math.pi * (2 * k + 1) / (2 * n)), approx)
            for g in range(ng):
                err = max(err, abs(approx[g] - V[2 * k + 1, g]))   # NaN (log 0) fails too
        if err <= INTERP_TOL:
            return (G, gexp, gscale, pa, pb, plb, pw, pg, rmin, chain, H, cz, cw, cV, R, LG)
        if n >= INTERP_MAX_DEGREE:
            return mix
        n *= 2
        zs = np.empty(n)
        for k in range(n):
            zs[k] = mid + half * math.cos(math.pi * (2 * k + 1) / (2 * n))
        odd = _log_polys_many(G, LG, zs)
        W = np.empty((2 * n + 1, ng))
        for k in range(2 * n + 1):
            W[k] = V[k // 2] if k % 2 == 0 else odd[k // 2]
        V = W


@nb.njit(inline="always", cache=True)
def incomplete_beta_front(a, b, x, lx, l1x, lbeta_ab):
    """(I_x(a, b), x^a (1-x)^b / B(a, b)) by the continued fraction."""
    front = math.exp(a * lx + b * l1x - lbeta_ab)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * betacf(a, b, x) / a, front
    return 1.0 - front * betacf(b, a, 1.0 - x) / b, front


@nb.njit(cache=True)
def _tail_integrand(v, c, upper, mix, lh):
    """Integrands of the tail probability and of the density of D at -c (lower) or c
    (upper), in the variable v (s = c + (1 - c) v^2, jacobian included); ``lh[g]`` is
    log H_g(1 - s) (``panel_log_h``).

    With ``chain``, a pair one step along its row (first Beta parameter + 1) or the first
    pair of the next row (second parameter + 1) takes I_x and the front term
    T = x^a (1-x)^b / B(a, b) from its neighbour (DLMF 8.17.20-21:
    I_x(a+1, b) = I_x(a, b) - T / a,  I_x(a, b+1) = I_x(a, b) + T / b), so one continued
    fraction serves a whole grid of pairs; the absolute error of I stays at rounding level
    (every step adds or subtracts a term of at most 1)."""
    G, gexp, gscale, pa, pb, plbeta, pw, pgroup, rmin, chain, H, cz, cw, cV, R, _ = mix
    one_c = 1.0 - c
    s = c + one_c * v * v
    z = one_c * (1.0 - v) * (1.0 + v)          # 1 - s without cancellation
    if s <= 0.0 or z <= 0.0:
        return 0.0, 0.0
    x = one_c * v * v / (2.0 * s)              # (1 - c/s) / 2
    if x <= 0.0:
        return 0.0, 0.0
    lx = math.log(x)
    l1x = math.log((s + c) / (2.0 * s))        # log(1 - x)
    ls = math.log(s)
    lz = math.log(z)
    for g in range(G.shape[1]):                # the group's S density factor
        H[g] = math.exp(gexp[g] * ls + rmin * lz + gscale[g] + lh[g]) if lh[g] > -math.inf else 0.0
    tail = 0.0
    dens = 0.0
    pI = 0.0     # I and T of the previous pair and of the first pair of the previous row
    pT = 0.0
    rI = 0.0
    rT = 0.0
    r0 = 0       # index of that first pair
    lx1 = x if upper else 1.0 - x       # factor of T when b (pair form) rises by one
    lx2 = 1.0 - x if upper else x       # ... when a rises by one
    for p in range(pa.shape[0]):
        if chain and p > 0 and pb[p] == pb[p - 1] and pa[p] == pa[p - 1] + 1.0:
            # one step along the row: a (pair form) + 1; R[q] = (1/a, 1/b, A/a, A/b)
            if upper:
                I = pI + pT * R[p - 1, 0]
            else:
                I = pI - pT * R[p - 1, 0]
            T = pT * lx2 * R[p - 1, 2]
        elif chain and p > 0 and pa[p] == pa[r0] and pb[p] == pb[r0] + 1.0:
            # the next row: b (pair form) + 1
            if upper:
                I = rI - rT * R[r0, 1]
            else:
                I = rI + rT * R[r0, 1]
            T = rT * lx1 * R[r0, 3]
        elif upper:
            I, T = incomplete_beta_front(pb[p], pa[p], x, lx, l1x, plbeta[p])
        else:
            I, T = incomplete_beta_front(pa[p], pb[p], x, lx, l1x, plbeta[p])
        if p == 0 or pb[p] != pb[p - 1]:   # first pair of a row
            r0 = p
            rI = I
            rT = T
        pI = I
        pT = T
        f = pw[p] * H[pgroup[p]]
        tail += f * I
        dens += f * T
    dens /= x * (1.0 - x) * 2.0 * s
    jac = 2.0 * one_c * v
    return tail * jac, dens * jac


@nb.njit(cache=True)
def panel_log_h(vs, c, mix):
    """log H_g(1 - s) of every group at the nodes ``vs``: interpolated on the bulk of S,
    the other nodes exactly and together (``_log_polys_many``)."""
    G = mix[0]
    cz, cw, cV = mix[11], mix[12], mix[13]
    n = vs.size
    LH = np.empty((n, G.shape[1]))
    zs = np.empty(n)
    rows = np.empty(n, np.int64)
    m = 0
    for k in range(n):
        z = (1.0 - c) * (1.0 - vs[k]) * (1.0 + vs[k])
        if cz.size > 0 and cz[cz.size - 1] <= z <= cz[0]:
            barycentric(cz, cw, cV, z, LH[k])
        else:
            zs[m] = z
            rows[m] = k
            m += 1
    if m > 0:
        V = _log_polys_many(G, mix[15], zs[:m])
        for i in range(m):
            LH[rows[i]] = V[i]
    return LH


# ---------------------------------------------------------------- tail probabilities and quantiles
#
# Shared by every form of the mixture (this module's grouped form, ``_hier_quadrature``'s
# interpolated pair sums, version 1's pair form in ``methods.reference.hierarchical_v1``): each
# supplies the integrand at one panel's nodes, ``panel(nodes, (c, upper, payload), f, g)``.


@nb.njit(cache=True)
def tail_breaks(c, meta, breaks):
    """``(brk, n)``: the initial break points of the tail integral at -+c in v (s = c + (1 - c)
    v^2): 0, then mean(S) + k sd(S) for each k of ``breaks`` that lies in (c, 1), mapped to v,
    then 1."""
    one_c = 1.0 - c
    brk = np.empty(len(breaks) + 2)
    nb_ = 1
    brk[0] = 0.0
    for kk in breaks:
        s = meta[0] + kk * meta[1]
        if s > c and s < 1.0:
            v = math.sqrt((s - c) / one_c)
            if v > brk[nb_ - 1] + 1e-12 and v < 1.0 - 1e-12:
                brk[nb_] = v
                nb_ += 1
    brk[nb_] = 1.0
    nb_ += 1
    return brk, nb_


def tail_quadrature(panel, breaks):
    """The numba function ``tail(c, upper, payload, meta)``: (P(D <= -c), density of D at -c)
    when ``upper`` is False, (P(D >= c), density of D at c) when True, 0 <= c, for the
    integrand ``panel(nodes, (c, upper, payload), f, g)`` (``_gauss_kronrod``), from the break
    points ``breaks`` (:func:`tail_breaks`).  Globally adaptive: the sub-interval with the
    largest |K15 - G7| is bisected until their sum is below max(1e-11, 1e-10 * value)."""
    integrate = adaptive(panel)

    @nb.njit(cache=True)
    def tail(c, upper, payload, meta):
        if c >= 1.0:
            return 0.0, 0.0
        if c < 0.0:
            c = 0.0
        brk, nbrk = tail_breaks(c, meta, breaks)
        tot, dtot = integrate((c, upper, payload), brk, nbrk)
        return min(max(tot, 0.0), 1.0), max(dtot, 0.0)

    return cache_closure(tail)


_ROOT_STEP = 1e-9
_ROOT_BRACKET = 1e-13


def tail_inverse(tail):
    """``(tail_at, quantile)`` for a numba ``tail(c, upper, payload, meta)`` (:func:`tail_quadrature`):

    ``tail_at(d, upper, payload, meta)`` = (P(D <= d), density of D at d) when ``upper`` is
    False, (P(D > d), density) when True;

    ``quantile(level, upper, payload, meta)`` = d with P(D <= d) = level (``upper`` False) or
    P(D > d) = level (``upper`` True), by a safeguarded Newton iteration on the probit scale,
    g(d) = Phi^-1(T(d)) - Phi^-1(level) with T the tail probability (nearly linear in d, so
    two or three steps usually suffice), started at the normal approximation; the bracket
    [lo, hi], initially [-1, 1], is kept and a step that leaves it is replaced by bisection.
    Returns after a Newton step below 1e-9 (quadratic convergence leaves an error far below
    1e-12), or when bisection has shrunk the bracket below 1e-13."""

    @nb.njit(cache=True)
    def tail_at(d, upper, payload, meta):
        if d <= -1.0:
            return (1.0, 0.0) if upper else (0.0, 0.0)
        if d >= 1.0:
            return (0.0, 0.0) if upper else (1.0, 0.0)
        if upper:
            if d >= 0.0:
                return tail(d, True, payload, meta)
            t, f = tail(-d, False, payload, meta)
        else:
            if d <= 0.0:
                return tail(-d, False, payload, meta)
            t, f = tail(d, True, payload, meta)
        return 1.0 - t, f

    @nb.njit(cache=True)
    def quantile(level, upper, payload, meta):
        target = norm_ppf(level)
        sign = -1.0 if upper else 1.0        # T increases (lower) or decreases (upper) with d
        lo = -1.0
        hi = 1.0
        mu = meta[2]
        sd = meta[3]
        d = mu - sign * norm_ppf(1.0 - level) * sd
        if not (d > lo and d < hi):
            d = 0.5 * (lo + hi)
        for _ in range(200):
            t, f = tail_at(d, upper, payload, meta)
            if t <= 0.0 or t >= 1.0:
                g = -math.inf if t <= 0.0 else math.inf
            else:
                g = norm_ppf(t) - target
            if g == 0.0:
                return d
            # root lies where sign * g changes from negative to positive
            if sign * g > 0.0:
                hi = d
            else:
                lo = d
            nd = 0.5 * (lo + hi)                 # bisection unless Newton does better
            if math.isfinite(g) and f > 0.0:
                zt = norm_ppf(t)
                step = -g / (sign * f * SQRT2PI * math.exp(0.5 * zt * zt))
                if abs(step) <= _ROOT_STEP:
                    return min(max(d + step, lo), hi)
                if d + step > lo and d + step < hi:
                    nd = d + step
            if hi - lo <= _ROOT_BRACKET:
                return nd
            d = nd
        return d

    return cache_closure(tail_at), cache_closure(quantile)


# ---------------------------------------------------------------- the grouped mixture's


@nb.njit(cache=True)
def _grouped_panel(nodes, args, f, g):
    """The integrands at one panel's nodes (``_gauss_kronrod``), ``args = (c, upper, mix)``."""
    c, upper, mix = args
    LH = panel_log_h(nodes, c, mix)
    for k in range(NODES):
        f[k], g[k] = _tail_integrand(nodes[k], c, upper, mix, LH[k])


_grouped_tail = tail_quadrature(_grouped_panel, BREAKS)
_grouped_tail_at, _grouped_quantile = tail_inverse(_grouped_tail)


@nb.njit(cache=True)
def tail_probability(c, upper, mix, meta):
    """(P(D <= -c), density of D at -c) when ``upper`` is False, (P(D >= c), density of
    D at c) when True; 0 <= c (:func:`tail_quadrature`)."""
    return _grouped_tail(c, upper, mix, meta)


@nb.njit(cache=True)
def grouped_cdf(d, mix, meta):
    """(P(D <= d), density of D at d) of a grouped mixture."""
    return _grouped_tail_at(d, False, mix, meta)


@nb.njit(cache=True)
def grouped_sf(d, mix, meta):
    """(P(D > d), density of D at d) of a grouped mixture."""
    return _grouped_tail_at(d, True, mix, meta)


@nb.njit(cache=True)
def mixture_cdf(d, pp, coef, rmin, meta):
    """(P(D <= d), density of D at d) of a pair-form mixture."""
    return grouped_cdf(d, grouped_mixture(pp, coef, rmin), meta)


@nb.njit(cache=True)
def mixture_sf(d, pp, coef, rmin, meta):
    """(P(D > d), density of D at d) of a pair-form mixture."""
    return grouped_sf(d, grouped_mixture(pp, coef, rmin), meta)


@nb.njit(cache=True)
def mixture_quantile(level, upper, mix, meta):
    """d with P(D <= d) = level (``upper`` False) or P(D > d) = level (``upper`` True) of a
    grouped mixture (:func:`tail_inverse`)."""
    return _grouped_quantile(level, upper, mix, meta)


@nb.njit(cache=True)
def dirichlet_component_moments(a, b, rest):
    """(E D, E D^2, E S, E S^2) of D = p01 - p10, S = p10 + p01 under
    Dirichlet(p10 = b, p01 = a, rest)."""
    a0 = a + b + rest
    ed = (a - b) / a0
    var = (a * (a0 - a) + b * (a0 - b) + 2.0 * a * b) / (a0 * a0 * (a0 + 1.0))
    A = a + b
    es = A / a0
    vs = A * rest / (a0 * a0 * (a0 + 1.0))
    return ed, var + ed * ed, es, vs + es * es


@nb.njit(cache=True)
def finish_meta(meta, ed, ed2, es, es2):
    meta[0] = es
    meta[1] = math.sqrt(max(es2 - es * es, 0.0))
    meta[2] = ed
    meta[3] = math.sqrt(max(ed2 - ed * ed, 0.0))


@nb.njit(cache=True)
def grouped_credible_interval(alpha, mix, meta):
    """Equal-tailed credible interval (alpha quantile, 1 - alpha quantile) of D."""
    lo = mixture_quantile(alpha, False, mix, meta)
    hi = mixture_quantile(alpha, True, mix, meta)
    return lo, hi


@nb.njit(cache=True)
def credible_interval(alpha, pp, coef, rmin, meta):
    """:func:`grouped_credible_interval` of a pair-form mixture."""
    return grouped_credible_interval(alpha, grouped_mixture(pp, coef, rmin), meta)


# Cost model (methods.analysis_cost): each table's interval is two Brent roots of adaptive
# Gauss-Kronrod integrals, 3.1-3.4e-4 s a table measured on 2 busy cores (bayes_paired at 30 x 3
# and 30 x 1, bayes_hierarchical at 30 x 1, small counts); linear in the cells it is 1.2e-6.
INTERVAL_SECONDS = 3.5e-4


def interval_seconds(tables) -> float:
    """Declared seconds of the credible intervals of ``tables[R, K, 4]`` (one per table)."""
    return INTERVAL_SECONDS * tables.shape[0]


def interval_cost(method, t, linear):
    """``methods.analysis_cost`` model of a method whose time is its per-table quadrature."""
    from methods.analysis_cost import AnalysisCost

    return AnalysisCost(method.name, linear.bytes, linear.seconds + interval_seconds(t),
                        "the tables (one credible-interval quadrature each)")
