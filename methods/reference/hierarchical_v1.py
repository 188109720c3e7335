"""``bayes_hierarchical`` version 1's posterior (before the grouped mixture), kept as the
slow reference of the current kernel: the same model, with one polynomial per (t10, t01)
pair evaluated by Horner at every quadrature node, one continued fraction per pair and
node, the Stirling polynomials multiplied out in log space and the concentration integral
summed over every node -- version 1's code, frozen here (``methods.fixed._dirichlet_mixture`` has
moved on), so that ``simlab bench speedups`` times the algorithm that was replaced.  ``tests/methods/test_bayes_hierarchical_fast.py``
checks the current kernel against it and ``methods.bench_speedups`` times both.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._dirichlet_mixture import (_BREAKS_V1, _QUAD_EPSABS, _QUAD_EPSREL, _QUAD_LIMIT, _ROOT_BRACKET,
                                              _ROOT_STEP, _WG, _WGK, _XGK, dirichlet_component_moments, finish_meta)
from methods.fixed._special import SQRT2PI, betacf, lbeta, norm_ppf
from methods.fixed.bayes_hierarchical import (_COARSE_H, _COARSE_N, _COARSE_U0, _DROP, _MAX_NODES, _WINDOW,
                                             _logaddexp, cluster_sizes, log_alpha_weight)
from methods.fixed._dirichlet_mixture import PP_A, PP_AM1, PP_B, PP_LBETA, PP_SCALE


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
def _qk15_v1(a, b, c, upper, pp, coef, rmin):
    """Gauss-Kronrod (7, 15) on [a, b] (QUADPACK QK15 nodes): (tail, |K15 - G7| of the
    tail, density).  |K15 - G7| is the error of the 7-point rule, so it bounds the error
    of the 15-point value generously on these smooth integrands."""
    centr = 0.5 * (a + b)
    hlgth = 0.5 * (b - a)
    fc, gc = _tail_integrand_v1(centr, c, upper, pp, coef, rmin)
    resg = fc * _WG[3]
    resk = fc * _WGK[7]
    resd = gc * _WGK[7]
    for j in range(3):
        jtw = 2 * j + 1
        absc = hlgth * _XGK[jtw]
        f1, g1 = _tail_integrand_v1(centr - absc, c, upper, pp, coef, rmin)
        f2, g2 = _tail_integrand_v1(centr + absc, c, upper, pp, coef, rmin)
        resg += _WG[j] * (f1 + f2)
        resk += _WGK[jtw] * (f1 + f2)
        resd += _WGK[jtw] * (g1 + g2)
    for j in range(4):
        jtwm1 = 2 * j
        absc = hlgth * _XGK[jtwm1]
        f1, g1 = _tail_integrand_v1(centr - absc, c, upper, pp, coef, rmin)
        f2, g2 = _tail_integrand_v1(centr + absc, c, upper, pp, coef, rmin)
        resk += _WGK[jtwm1] * (f1 + f2)
        resd += _WGK[jtwm1] * (g1 + g2)
    return resk * hlgth, abs((resk - resg) * hlgth), resd * hlgth


@nb.njit(cache=True)
def tail_probability_v1(c, upper, pp, coef, rmin, meta):
    """(P(D <= -c), density of D at -c) when ``upper`` is False, (P(D >= c), density of
    D at c) when True; 0 <= c.  Globally adaptive: the sub-interval with the largest
    |K15 - G7| is bisected until their sum is below max(1e-11, 1e-10 * value)."""
    if c >= 1.0:
        return 0.0, 0.0
    if c < 0.0:
        c = 0.0
    one_c = 1.0 - c
    # initial break points at the bulk of S's mixture law, mapped to v
    brk = np.empty(len(_BREAKS_V1) + 2)
    nb_ = 1
    brk[0] = 0.0
    for kk in _BREAKS_V1:
        s = meta[0] + kk * meta[1]
        if s > c and s < 1.0:
            v = math.sqrt((s - c) / one_c)
            if v > brk[nb_ - 1] + 1e-12 and v < 1.0 - 1e-12:
                brk[nb_] = v
                nb_ += 1
    brk[nb_] = 1.0
    nb_ += 1
    ia = np.empty(_QUAD_LIMIT)
    ib = np.empty(_QUAD_LIMIT)
    ir = np.empty(_QUAD_LIMIT)
    ie = np.empty(_QUAD_LIMIT)
    idn = np.empty(_QUAD_LIMIT)
    n = 0
    for i in range(nb_ - 1):
        res, err, dn = _qk15_v1(brk[i], brk[i + 1], c, upper, pp, coef, rmin)
        ia[n] = brk[i]
        ib[n] = brk[i + 1]
        ir[n] = res
        ie[n] = err
        idn[n] = dn
        n += 1
    tot = 0.0
    dtot = 0.0
    while True:
        tot = 0.0
        dtot = 0.0
        etot = 0.0
        imax = 0
        for i in range(n):
            tot += ir[i]
            dtot += idn[i]
            etot += ie[i]
            if ie[i] > ie[imax]:
                imax = i
        if etot <= max(_QUAD_EPSABS, _QUAD_EPSREL * abs(tot)) or n >= _QUAD_LIMIT:
            break
        a0 = ia[imax]
        b0 = ib[imax]
        m0 = 0.5 * (a0 + b0)
        if m0 <= a0 or m0 >= b0:   # interval cannot be split further
            ie[imax] = 0.0
            continue
        r1, e1, d1 = _qk15_v1(a0, m0, c, upper, pp, coef, rmin)
        r2, e2, d2 = _qk15_v1(m0, b0, c, upper, pp, coef, rmin)
        ib[imax] = m0
        ir[imax] = r1
        ie[imax] = e1
        idn[imax] = d1
        ia[n] = m0
        ib[n] = b0
        ir[n] = r2
        ie[n] = e2
        idn[n] = d2
        n += 1
    return min(max(tot, 0.0), 1.0), max(dtot, 0.0)


@nb.njit(cache=True)
def mixture_cdf_v1(d, pp, coef, rmin, meta):
    """(P(D <= d), density of D at d)."""
    if d <= -1.0:
        return 0.0, 0.0
    if d >= 1.0:
        return 1.0, 0.0
    if d <= 0.0:
        return tail_probability_v1(-d, False, pp, coef, rmin, meta)
    t, f = tail_probability_v1(d, True, pp, coef, rmin, meta)
    return 1.0 - t, f


@nb.njit(cache=True)
def mixture_sf_v1(d, pp, coef, rmin, meta):
    """(P(D > d), density of D at d)."""
    if d <= -1.0:
        return 1.0, 0.0
    if d >= 1.0:
        return 0.0, 0.0
    if d >= 0.0:
        return tail_probability_v1(d, True, pp, coef, rmin, meta)
    t, f = tail_probability_v1(-d, False, pp, coef, rmin, meta)
    return 1.0 - t, f


@nb.njit(cache=True)
def mixture_quantile_v1(level, upper, pp, coef, rmin, meta):
    """d with P(D <= d) = level (``upper`` False) or P(D > d) = level (``upper`` True).

    Safeguarded Newton iteration on the probit scale, g(d) = Phi^-1(T(d)) - Phi^-1(level)
    with T the tail probability (nearly linear in d, so two or three steps usually
    suffice), started at the normal approximation; the bracket [lo, hi], initially
    [-1, 1], is kept and a step that leaves it is replaced by bisection.  Returns after a
    Newton step below 1e-9 (quadratic convergence leaves an error far below 1e-12), or
    when bisection has shrunk the bracket below 1e-13."""
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
        if upper:
            t, f = mixture_sf_v1(d, pp, coef, rmin, meta)
        else:
            t, f = mixture_cdf_v1(d, pp, coef, rmin, meta)
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


@nb.njit(cache=True)
def credible_interval_v1(alpha, pp, coef, rmin, meta):
    """Equal-tailed credible interval (alpha quantile, 1 - alpha quantile) of D."""
    lo = mixture_quantile_v1(alpha, False, pp, coef, rmin, meta)
    hi = mixture_quantile_v1(alpha, True, pp, coef, rmin, meta)
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
