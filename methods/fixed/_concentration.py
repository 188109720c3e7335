"""The concentration integrals of ``bayes_hierarchical``'s posterior (its module docstring):

    A(T) = int_0^inf pi(alpha) alpha^T prod_k Gamma(alpha) / Gamma(alpha + n_k) d alpha,

by the trapezoidal rule in ``u = log alpha`` (exponentially convergent for these analytic,
exponentially decaying integrands; Trefethen & Weideman 2014, SIAM Rev. 56:385-458), with
clusters grouped by size.  :func:`alpha_nodes` (window and step) is shared with version 1
(``methods.reference.hierarchical_v1``), whose sums over the nodes visit every node for every T.
"""
import math

import numba as nb
import numpy as np

_WINDOW = 45.0         # log-integrand window of the alpha integral
_COARSE_H = 0.5
_COARSE_U0 = -80.0
_COARSE_N = 321        # coarse grid u = -80 .. 80
_MAX_NODES = 20000
_SUM_WINDOW = 50.0     # at most _MAX_NODES terms below e^-50 each: < 1e-17 of the sum


@nb.njit(cache=True)
def _stirling_corr(z):
    z2 = 1.0 / (z * z)
    return (1.0 / 12.0 - z2 * (1.0 / 360.0 - z2 * (1.0 / 1260.0 - z2 * (1.0 / 1680.0 - z2 / 1188.0)))) / z


@nb.njit(cache=True)
def log_rising(a, n):
    """log Gamma(a + n) - log Gamma(a) for a > 0 and integer n >= 0, without the
    cancellation of two large lgamma values (Stirling series for a >= 10)."""
    if n <= 64:
        s = 0.0
        for i in range(n):
            s += math.log(a + i)
        return s
    if a < 10.0:
        return math.lgamma(a + n) - math.lgamma(a)
    b = a + n
    return (a - 0.5) * math.log1p(n / a) + n * math.log(b) - n + _stirling_corr(b) - _stirling_corr(a)


@nb.njit(cache=True)
def log_alpha_weight(u, sizes, counts):
    """log of pi(alpha) alpha prod_k Gamma(alpha)/Gamma(alpha + n_k) at alpha = e^u: the
    integrand of A(T) in u = log alpha, without its factor alpha^T = e^(T u); clusters
    grouped by size."""
    a = math.exp(u)
    if u > 0.0:
        sp = u + math.log1p(math.exp(-u))
    else:
        sp = math.log1p(math.exp(u))
    val = u - 2.0 * sp              # pi(alpha) d alpha = alpha / (1 + alpha)^2 du
    for g in range(sizes.size):
        val -= counts[g] * log_rising(a, sizes[g])
    return val


@nb.njit(cache=True)
def alpha_nodes(sizes, counts, Tmin, Tmax):
    """``(u, L, h)``: the trapezoidal nodes ``u`` (step ``h``) in ``u = log alpha`` of the integrals
    A(T), T = Tmin .. Tmax, and the log-integrand ``L = log_alpha_weight(u)`` there.

    The window: the points of the coarse grid ``u = -80 .. 80`` (step 1/2) where ``L + T u``
    for T = Tmin or T = Tmax lies within e^-_WINDOW of its peak, widened by one coarse step;
    the step ``min(0.25, sigma / 2)`` with ``sigma = kmax^(-1/2)``, ``kmax`` the largest
    curvature ``-L''`` on the window (second differences); at most ``_MAX_NODES`` nodes."""
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
    return u, L, h


@nb.njit(cache=True)
def log_alpha_integrals(sizes, counts, Tmin, Tmax):
    """log A(T), T = Tmin .. Tmax (up to one common constant), by the trapezoidal rule in
    u = log alpha."""
    u, L, h = alpha_nodes(sizes, counts, Tmin, Tmax)
    n = u.size
    # The terms exp(L_i + T u_i - g_T), g_T the largest exponent, for T = Tmin .. Tmax.  A
    # term inside the window (above e^-_SUM_WINDOW of the largest; the others cannot move
    # the sum) at T - 1 and T follows by one product, exp(u_i) exp(g_(T-1) - g_T); only
    # terms entering the window cost an exponential.  The exponent is concave in u
    # (log-convex rising factorials), so its peak is tracked from the last T's rightwards,
    # and so is the window of terms inside (an interval around the peak): only the window
    # is visited, not every node for every T.
    out = np.empty(Tmax - Tmin + 1)
    lh = math.log(h)
    eu = np.empty(n)
    for i in range(n):
        eu[i] = math.exp(u[i])
    term = np.zeros(n)
    inside = np.zeros(n, np.bool_)
    ipk = 0
    g_prev = 0.0
    lo = 0          # the window [lo, hi) of terms inside: an interval (the exponent is concave)
    hi = 0          # whose ends move right with T, as the peak does
    for T in range(Tmin, Tmax + 1):
        while ipk + 1 < n and L[ipk + 1] + T * u[ipk + 1] >= L[ipk] + T * u[ipk]:
            ipk += 1
        gmax = L[ipk] + T * u[ipk]
        step = math.exp(g_prev - gmax)
        if T == Tmin:
            lo = ipk
            while lo > 0 and L[lo - 1] + T * u[lo - 1] - gmax > -_SUM_WINDOW:
                lo -= 1
            hi = ipk + 1
        while lo < ipk and not (L[lo] + T * u[lo] - gmax > -_SUM_WINDOW):
            inside[lo] = False
            lo += 1
        hi = max(hi, ipk + 1)
        while hi < n and L[hi] + T * u[hi] - gmax > -_SUM_WINDOW:
            hi += 1
        acc = 0.0
        for i in range(lo, hi):
            e = L[i] + T * u[i] - gmax
            if e > -_SUM_WINDOW:
                if inside[i]:
                    term[i] = term[i] * eu[i] * step
                else:
                    term[i] = math.exp(e)
                    inside[i] = True
                acc += term[i]
            else:
                inside[i] = False
        g_prev = gmax
        out[T - Tmin] = gmax + math.log(acc) + lh
    return out


@nb.njit(cache=True)
def cluster_sizes(tables, r):
    """Distinct non-zero cluster sizes of replication r and how many clusters have each."""
    K = tables.shape[1]
    ns = np.empty(K, np.int64)
    m = 0
    for k in range(K):
        nk = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if nk > 0:
            ns[m] = nk
            m += 1
    ns = np.sort(ns[:m])
    sizes = np.empty(m, np.int64)
    counts = np.empty(m, np.float64)
    g = 0
    for i in range(m):
        if g > 0 and sizes[g - 1] == ns[i]:
            counts[g - 1] += 1.0
        else:
            sizes[g] = ns[i]
            counts[g] = 1.0
            g += 1
    return sizes[:g], counts[:g]
