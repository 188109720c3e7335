"""``bayes_hierarchical`` version 1's posterior (before the grouped mixture), kept as the
slow reference of the current kernel: the same model, with one polynomial per (t10, t01)
pair evaluated by Horner at every quadrature node, one continued fraction per pair and
node, the Stirling polynomials multiplied out in log space, the concentration integral
summed over every node for every T, and break points at the mean and +-4 sd of S only --
version 1's algorithm, kept here so that ``simlab bench speedups`` times the algorithm that
was replaced.  What version 1 shares with the current code unchanged is shared, not copied:
the adaptive Gauss-Kronrod driver (``methods.fixed._gauss_kronrod``), the tail and Newton
quantile machinery (``methods.fixed._dirichlet_mixture.tail_quadrature``, ``tail_inverse``)
and the window and step of the concentration integral (``methods.fixed._concentration.alpha_nodes``).
``tests/methods/test_bayes_hierarchical_fast.py`` checks the current kernel against it and
``methods.bench_speedups`` times both.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._concentration import alpha_nodes, cluster_sizes
from methods.fixed._dirichlet_mixture import (BREAKS_V1, PP_A, PP_AM1, PP_B, PP_LBETA, PP_SCALE,
                                              dirichlet_component_moments, finish_meta, tail_inverse,
                                              tail_quadrature)
from methods.fixed._gauss_kronrod import NODES
from methods.fixed._special import betacf, lbeta
from methods.fixed.bayes_hierarchical import DROP


@nb.njit(inline="always", cache=True)
def _logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@nb.njit(cache=True)
def cell_terms_v1(tables, r, j):
    """``(L, c0)`` for cell ``j``: ``L[m] = log S_j(c0 + m) + lgamma(1/2 + c0 + m)``,
    ``m = 0 .. y_j - c0``, where ``c0`` = clusters with a count in the cell and ``S_j`` the
    coefficients of prod_k x (x+1) ... (x + y_kj - 1) (unsigned Stirling numbers)."""
    K = tables.shape[1]
    y = 0
    c0 = 0
    for k in range(K):
        v = tables[r, k, j]
        y += v
        if v > 0:
            c0 += 1
    M = y - c0
    P = np.full(M + 1, -math.inf)
    P[0] = 0.0
    deg = 0
    for k in range(K):
        for i in range(1, tables[r, k, j]):
            li = math.log(i)                      # multiply by (x + i)
            P[deg + 1] = P[deg]
            for m in range(deg, 0, -1):
                P[m] = _logaddexp(P[m - 1], li + P[m])
            P[0] = li + P[0]
            deg += 1
    for m in range(M + 1):
        P[m] += math.lgamma(0.5 + c0 + m)
    return P, c0


@nb.njit(cache=True)
def log_alpha_integrals_v1(sizes, counts, Tmin, Tmax):
    """log A(T), T = Tmin .. Tmax (up to one common constant): version 1 sums every node of
    the trapezoidal rule for every T, two passes (the largest exponent, then the sum)."""
    u, L, h = alpha_nodes(sizes, counts, Tmin, Tmax)
    n = u.size
    out = np.empty(Tmax - Tmin + 1)
    lh = math.log(h)
    for T in range(Tmin, Tmax + 1):
        gmax = -math.inf
        for i in range(n):
            gmax = max(gmax, L[i] + T * u[i])
        acc = 0.0
        for i in range(n):
            acc += math.exp(L[i] + T * u[i] - gmax)
        out[T - Tmin] = gmax + math.log(acc) + lh
    return out


@nb.njit(cache=True)
def posterior_v1(tables, r, meta):
    """Mixture description ``(pp, coef, rmin, posterior mean)`` of the posterior of
    Delta for replication r (which must have at least one trial)."""
    L10, c10 = cell_terms_v1(tables, r, 1)
    L01, c01 = cell_terms_v1(tables, r, 2)
    L11, c11 = cell_terms_v1(tables, r, 0)
    L00, c00 = cell_terms_v1(tables, r, 3)
    # rest = 11 + 00: log-space convolution over the split t11 + t00
    nq = L11.size + L00.size - 1
    LV = np.full(nq, -math.inf)
    for i in range(L11.size):
        for j in range(L00.size):
            LV[i + j] = _logaddexp(LV[i + j], L11[i] + L00[j])
    C0 = c10 + c01 + c11 + c00
    N = C0 + (L10.size - 1) + (L01.size - 1) + nq - 1
    sizes, counts = cluster_sizes(tables, r)
    logA = log_alpha_integrals_v1(sizes, counts, C0, N)
    n10 = L10.size
    n01 = L01.size
    lw = np.empty((n10, n01, nq))
    wmax = -math.inf
    for i in range(n10):
        for j in range(n01):
            for q in range(nq):
                T = C0 + i + j + q
                v = L10[i] + L01[j] + LV[q] + logA[T - C0] - math.lgamma(2.0 + T)
                lw[i, j, q] = v
                wmax = max(wmax, v)
    # keep components above e^DROP of the largest; find the q range and the pairs used
    qlo = nq
    qhi = -1
    npair = 0
    Z = 0.0
    pair_used = np.zeros((n10, n01), np.bool_)
    for i in range(n10):
        for j in range(n01):
            for q in range(nq):
                if lw[i, j, q] - wmax > DROP:
                    Z += math.exp(lw[i, j, q] - wmax)
                    qlo = min(qlo, q)
                    qhi = max(qhi, q)
                    if not pair_used[i, j]:
                        pair_used[i, j] = True
                        npair += 1
    lz = wmax + math.log(Z)
    rbase = c11 + c00
    rmin = rbase + qlo
    width = qhi - qlo + 1
    pp = np.empty((npair, 5))
    coef = np.zeros((npair, width))
    ed = 0.0
    ed2 = 0.0
    es = 0.0
    es2 = 0.0
    p = 0
    lc = np.empty(width)
    for i in range(n10):
        for j in range(n01):
            if not pair_used[i, j]:
                continue
            a = 0.5 + c01 + j           # W = p01 / (p10 + p01) ~ Beta(a, b)
            b = 0.5 + c10 + i
            A = a + b
            scale = -math.inf
            for q in range(qlo, qhi + 1):
                lc[q - qlo] = -math.inf
                if lw[i, j, q] - wmax > DROP:
                    w = math.exp(lw[i, j, q] - lz)
                    rest = 1.0 + rbase + q
                    m1, m2, m3, m4 = dirichlet_component_moments(a, b, rest)
                    ed += w * m1
                    ed2 += w * m2
                    es += w * m3
                    es2 += w * m4
                    lc[q - qlo] = lw[i, j, q] - lz - lbeta(A, rest)
                    scale = max(scale, lc[q - qlo])
            for q in range(width):
                if lc[q] > -math.inf:
                    coef[p, q] = math.exp(lc[q] - scale)
            pp[p, PP_A] = a
            pp[p, PP_B] = b
            pp[p, PP_AM1] = A - 1.0
            pp[p, PP_LBETA] = lbeta(a, b)
            pp[p, PP_SCALE] = scale
            p += 1
    finish_meta(meta, ed, ed2, es, es2)
    return pp, coef, rmin, ed


@nb.njit(cache=True)
def _tail_integrand_v1(v, c, upper, pp, coef, rmin):
    """Integrands of the tail probability and of the density of D at -c (lower) or c
    (upper), in the variable v (s = c + (1 - c) v^2, jacobian included)."""
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
    nq = coef.shape[1]
    tail = 0.0
    dens = 0.0
    for p in range(pp.shape[0]):
        lh = 0.0
        if nq > 1:
            h = 0.0
            for q in range(nq - 1, -1, -1):
                h = h * z + coef[p, q]
            if h <= 0.0:
                continue
            lh = math.log(h)
        else:
            lh = math.log(coef[p, 0])
        if upper:
            a = pp[p, PP_B]
            b = pp[p, PP_A]
        else:
            a = pp[p, PP_A]
            b = pp[p, PP_B]
        # log f_S(s) and log(x^a (1-x)^b / B(a, b)), combined into one exponential
        lfs = pp[p, PP_AM1] * ls + rmin * lz + pp[p, PP_SCALE] + lh
        lfront = a * lx + b * l1x - pp[p, PP_LBETA]
        both = math.exp(lfs + lfront)
        if x < (a + 1.0) / (a + b + 2.0):
            tail += both * betacf(a, b, x) / a
        else:
            tail += math.exp(lfs) - both * betacf(b, a, 1.0 - x) / b
        dens += both / (x * (1.0 - x) * 2.0 * s)
    jac = 2.0 * one_c * v
    return tail * jac, dens * jac


@nb.njit(cache=True)
def _panel_v1(nodes, args, f, g):
    """The integrands at one panel's nodes (``methods.fixed._gauss_kronrod``), ``args = (c,
    upper, (pp, coef, rmin))``."""
    c, upper, payload = args
    pp, coef, rmin = payload
    for k in range(NODES):
        f[k], g[k] = _tail_integrand_v1(nodes[k], c, upper, pp, coef, rmin)


# version 1's break points (the mean and +-4 sd of S), the shared adaptive driver and Newton
_tail_v1 = tail_quadrature(_panel_v1, BREAKS_V1)
_tail_at_v1, _quantile_v1 = tail_inverse(_tail_v1)


@nb.njit(cache=True)
def credible_interval_v1(alpha, pp, coef, rmin, meta):
    """Equal-tailed credible interval (alpha quantile, 1 - alpha quantile) of D."""
    lo = _quantile_v1(alpha, False, (pp, coef, rmin), meta)
    hi = _quantile_v1(alpha, True, (pp, coef, rmin), meta)
    return lo, hi


@nb.njit(cache=True)
def intervals_v1(tables, alpha):
    """(lower, upper, estimate) of every replication by version 1 (NaN without trials)."""
    R = tables.shape[0]
    out = np.full((R, 3), np.nan)
    meta = np.empty(4)
    for r in range(R):
        n = 0
        for k in range(tables.shape[1]):
            n += tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if n == 0:
            continue
        pp, coef, rmin, mean = posterior_v1(tables, r, meta)
        out[r, 0], out[r, 1] = credible_interval_v1(alpha, pp, coef, rmin, meta)
        out[r, 2] = mean
    return out
