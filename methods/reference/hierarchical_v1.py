"""``bayes_hierarchical`` version 1's posterior (before the grouped mixture), kept as the
slow reference of the current kernel: the same model and quadrature, with one polynomial
per (t10, t01) pair, the Stirling polynomials multiplied out in log space and the
concentration integral summed over every node.  ``tests/methods/test_bayes_hierarchical_fast.py``
checks the current kernel against it and ``methods.bench_speedups`` times both.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._resample import credible_interval, dirichlet_component_moments, finish_meta, lbeta
from methods.fixed.bayes_hierarchical import (_COARSE_H, _COARSE_N, _COARSE_U0, _DROP, _MAX_NODES, _WINDOW,
                                             _logaddexp, cluster_sizes, log_alpha_weight)
from methods.fixed._resample import PP_A, PP_AM1, PP_B, PP_LBETA, PP_SCALE


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
    """log A(T), T = Tmin .. Tmax (up to one common constant), by the trapezoidal rule in
    u = log alpha."""
    U = np.empty(_COARSE_N)
    L0 = np.empty(_COARSE_N)
    for i in range(_COARSE_N):
        U[i] = _COARSE_U0 + i * _COARSE_H
        L0[i] = log_alpha_weight(U[i], sizes, counts)
    ua = math.inf
    ub = -math.inf
    for T in (Tmin, Tmax):
        gmax = -math.inf
        for i in range(_COARSE_N):
            gmax = max(gmax, L0[i] + T * U[i])
        first = -1
        last = -1
        for i in range(_COARSE_N):
            if L0[i] + T * U[i] >= gmax - _WINDOW:
                if first < 0:
                    first = i
                last = i
        ua = min(ua, U[max(first - 1, 0)])
        ub = max(ub, U[min(last + 1, _COARSE_N - 1)])
    kmax = 0.0
    for i in range(1, _COARSE_N - 1):
        if U[i] >= ua and U[i] <= ub:
            kmax = max(kmax, -(L0[i + 1] - 2.0 * L0[i] + L0[i - 1]) / (_COARSE_H * _COARSE_H))
    h = 0.25
    if kmax > 0.0:
        h = min(h, 0.5 / math.sqrt(kmax))
    n = int(math.ceil((ub - ua) / h)) + 1
    if n > _MAX_NODES:
        n = _MAX_NODES
        h = (ub - ua) / (n - 1)
    u = np.empty(n)
    L = np.empty(n)
    for i in range(n):
        u[i] = ua + i * h
        L[i] = log_alpha_weight(u[i], sizes, counts)
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
    # keep components above e^_DROP of the largest; find the q range and the pairs used
    qlo = nq
    qhi = -1
    npair = 0
    Z = 0.0
    pair_used = np.zeros((n10, n01), np.bool_)
    for i in range(n10):
        for j in range(n01):
            for q in range(nq):
                if lw[i, j, q] - wmax > _DROP:
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
                if lw[i, j, q] - wmax > _DROP:
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
        out[r, 0], out[r, 1] = credible_interval(alpha, pp, coef, rmin, meta)
        out[r, 2] = mean
    return out
