"""``bayes_hierarchical`` -- credible interval for the population difference under an
exchangeable-clusters Dirichlet-multinomial model.

Model.  Cluster ``k``'s cell probabilities ``theta_k ~ Dirichlet(alpha * p)`` given the
population cells ``p = (p11, p10, p01, p00)``; its counts ``y_k | theta_k`` are
multinomial(n_k, theta_k), so ``y_k | alpha, p`` is Dirichlet-multinomial (Mosimann 1962,
Biometrika 49:65-82) -- the data-generating model of ``simlab.generate``.  Priors:
``p ~ Dirichlet(1/2, 1/2, 1/2, 1/2)`` (Jeffreys) and, for the concentration,
``pi(alpha) = 1 / (1 + alpha)^2`` on ``(0, inf)``: the proper prior Albert (2009,
*Bayesian Computation with R*, 2nd ed., ch. 5, beta-binomial model for overdispersion)
puts on the beta-binomial precision, equivalent to a uniform prior on the intra-cluster
correlation ``rho = 1 / (1 + alpha)`` and to a standard logistic law for ``log alpha``.
Target: the population difference ``Delta = p01 - p10`` of ``p = E[theta_k]``, the mean of
the clusters' cell probabilities -- a cluster-level mean (estimand: cluster-weighted).  It
equals the trial-weighted difference when cluster sizes carry no information about
``theta_k`` (the model's exchangeability).  When they do, the model is misspecified and
the estimate is a precision-weighted mean of the cluster differences (weights about
``n_k / (1 + (n_k - 1) rho)``): the cluster-weighted one as ``rho -> 1``, between the two
otherwise (tests/studies/test_estimands.py).  Interval: equal-tailed credible interval
(BDA3 sec. 2.3), lower bound = posterior one-sided level ``alpha`` quantile; estimate:
posterior mean.  No trials ->
inconclusive.

Algorithm (deterministic; exact up to quadrature).  The rising factorial expands in
unsigned Stirling numbers of the first kind, ``Gamma(a + y) / Gamma(a) = sum_t s(y, t) a^t``
(the "number of tables" expansion of Antoniak 1974, Ann. Statist. 2:1152-1174; Teh et al.
2006, JASA 101:1566-1581), so with ``a = alpha p_j`` the likelihood is a polynomial in
``alpha`` and ``p``:

    prod_k DM(y_k | alpha p) ∝ prod_k Gamma(alpha)/Gamma(alpha + n_k)
                               * sum_t alpha^T prod_j S_j(t_j) p_j^(t_j),

``S_j`` the coefficients of ``prod_k x (x+1) ... (x + y_kj - 1)`` and ``T = sum_j t_j``.
Integrating ``p`` against the Dirichlet(1/2) prior and ``alpha`` against ``pi`` gives the
exact posterior as a finite mixture over table counts ``t``:

    p | y  =  sum_t w_t Dirichlet(1/2 + t),
    w_t ∝ A(T) prod_j S_j(t_j) Gamma(1/2 + t_j) / Gamma(2 + T),
    A(T) = int_0^inf pi(alpha) alpha^T prod_k Gamma(alpha) / Gamma(alpha + n_k) d alpha.

Only ``(t10, t01, t11 + t00)`` matter for ``Delta`` (Dirichlet aggregation), and the
Dirichlet-difference machinery of ``methods/fixed/_dirichlet_mixture.py`` (one-dimensional
adaptive Gauss-Kronrod, Newton on the probit scale) gives the quantiles.  Speed (version 2,
94x version 1 at 100 clusters x 10 trials, ``simlab bench speedups``): components with the
same ``t10 + t01`` share their S law up to a factor, so the mixture is stored as one
polynomial per group (``posterior``); incomplete betas of neighbouring pairs follow from
each other by the contiguous recurrences; the group polynomials are interpolated at
Chebyshev points on the bulk of S (checked to 1e-10 in log at interlaced points, exact
elsewhere); ``S_j`` are multiplied out on ratios of consecutive coefficients; ``A(T)``
(``methods.fixed._concentration``) by the trapezoidal rule in ``u = log alpha``
(exponentially convergent for these analytic, exponentially decaying integrands;
Trefethen & Weideman 2014, SIAM Rev. 56:385-458) with
step ``min(0.25, sigma / 2)`` from the curvature of the log-integrand on the window where
the integrand exceeds e^-45 of its peak, each T's sum over the nodes within e^-50 of its
largest term; components below e^-37 of the largest are dropped.  Version 3 (2 to 4.5x
version 2 on the large mixtures of 500 x 10 and 100 x 10, measured in
``tests/methods/test_bayes_hierarchical_v3.py``'s designs and the standard-coarse grid):
with ``_hier_quadrature._X_MIN_PAIRS`` pairs or more, each tail probability interpolates the
groups' pair sums in ``x`` over the bulk of S (``methods/fixed/_hier_quadrature.py``), so
the quadrature's nodes cost a few operations per group instead of one per pair; the
alpha-integral sums visit only the moving window of nodes inside e^-50 of the peak; the
``t11 + t00`` convolution of two concave sequences (the usual case) sums outwards from
each peak by ratios instead of every pair of terms.  Bounds are accurate to about 1e-10
(tests: version 1, ``methods.reference.hierarchical_v1``, within 1e-9 -- about 1e-13
measured; version 2's quadrature on the same mixture within 1e-10; an independent scipy
implementation; brute-force importance sampling of the model; exact reduction to
``bayes_paired`` when no cluster has two trials).  Cost grows with the number of
cluster-cell counts above one.  Version 4 (2026-12-01) fixes versions 2 and 3 when few clusters
hold many trials (20 x 200, one cluster of 4400): a group polynomial's coefficients then span
more than the float range, the plain Horner sum underflowed to a denormal far from the bulk
of S, and the S density overflowed (tail probabilities summing to 2, or a quadrature that
never converged); ``_dirichlet_mixture._log_polys_many`` now keeps ``log G`` and sums exactly
(``tests/methods/test_bayes_hierarchical_underflow.py``).
"""
import math

import numba as nb
import numpy as np

from methods.analysis_cost import AnalysisCost
from methods.protocol import Estimand, FixedMethod
from methods.fixed._common import decide, write_inconclusive
from methods.fixed._concentration import cluster_sizes, log_alpha_integrals
from methods.fixed._dirichlet_mixture import INTERVAL_SECONDS, finish_meta, pair_reciprocals, with_interpolant
from methods.fixed._hier_quadrature import credible_interval
from methods.fixed._special import lbeta

DROP = -37.0           # log of the relative weight below which a component is dropped
_CONV_WINDOW = 50.0
_CONCAVE_SLACK = 1e-9  # a rounding-size bump in a concave sequence moves no term across e^-50
_MAX_SLOPE = 300.0     # consecutive ratios of the convolved sequences stay finite


def prepare(method, alpha, margin, tables):
    """consts = (alpha,)."""
    return np.array([alpha], dtype=np.float64)


@nb.njit(cache=True)
def cell_terms(tables, r, j):
    """``(L, c0)`` for cell ``j``: ``L[m] = log S_j(c0 + m) + lgamma(1/2 + c0 + m)``,
    ``m = 0 .. y_j - c0``, where ``c0`` = clusters with a count in the cell and ``S_j`` the
    coefficients of prod_k x (x+1) ... (x + y_kj - 1) (unsigned Stirling numbers).

    The polynomial is multiplied out one factor ``(x + i)`` at a time on the ratios
    ``rho_m = S(m) / S(m-1)`` of consecutive coefficients, which stay of moderate size
    (no overflow, no logarithm per step): ``(x + i) S`` has ratios
    ``rho'_m = rho_(m-1) (1 + i rho_m) / (1 + i rho_(m-1))`` (``m >= 2``) and
    ``rho'_1 = (1 + i rho_1) / i``, and ``S'(0) = i S(0)``.  Every quantity is positive, so
    each step adds a few roundings of relative size 1e-16 (no cancellation)."""
    K = tables.shape[1]
    y = 0
    c0 = 0
    for k in range(K):
        v = tables[r, k, j]
        y += v
        if v > 0:
            c0 += 1
    M = y - c0
    rho = np.zeros(M + 2)
    l0 = 0.0
    deg = 0
    for k in range(K):
        for i in range(1, tables[r, k, j]):
            fi = float(i)
            rho[deg + 1] = 0.0
            t_hi = 1.0
            for m in range(deg + 1, 1, -1):
                t_lo = 1.0 + fi * rho[m - 1]
                rho[m] = rho[m - 1] * t_hi / t_lo
                t_hi = t_lo
            rho[1] = t_hi / fi
            l0 += math.log(fi)
            deg += 1
    P = np.empty(M + 1)
    acc = l0
    for m in range(M + 1):
        if m > 0:
            acc += math.log(rho[m])
        P[m] = acc + math.lgamma(0.5 + c0 + m)
    return P, c0


@nb.njit(cache=True)
def _rest_convolution(L11, L00):
    """log-space convolution over the split t11 + t00 (only their sum matters):
    ``LV[q] = log sum_(i+j=q) exp(L11[i] + L00[j])``, every term within e^-_CONV_WINDOW
    of the largest of its ``q`` summed (the others, fewer than ``len`` of < 2e-22 each,
    are below rounding).  Concave sequences (the usual case: log-concave Stirling
    coefficients, Newton's inequalities, times the mildly log-convex gamma factor) take
    ``_concave_convolution``; the others the two-pass sum over every term."""
    if L11.size < 3 or L00.size < 3 or not (_concave(L11) and _concave(L00)):
        return _full_convolution(L11, L00)
    return _concave_convolution(L11, L00)


@nb.njit(cache=True)
def _concave(L):
    """Second differences <= _CONCAVE_SLACK and first differences within +-_MAX_SLOPE (so
    that the ratios of consecutive terms are finite)."""
    for i in range(1, L.size - 1):
        if L[i + 1] - 2.0 * L[i] + L[i - 1] > _CONCAVE_SLACK:
            return False
    for i in range(L.size - 1):
        if not abs(L[i + 1] - L[i]) <= _MAX_SLOPE:
            return False
    return True


@nb.njit(cache=True)
def _full_convolution(L11, L00):
    """Two passes over every (i, j): the largest term of each q, then the sum relative
    to it (no exponential for a term below e^-_CONV_WINDOW)."""
    nq = L11.size + L00.size - 1
    mx = np.full(nq, -math.inf)
    for i in range(L11.size):
        for j in range(L00.size):
            v = L11[i] + L00[j]
            if v > mx[i + j]:
                mx[i + j] = v
    acc = np.zeros(nq)
    for i in range(L11.size):
        for j in range(L00.size):
            d = L11[i] + L00[j] - mx[i + j]
            if d > -_CONV_WINDOW:
                acc[i + j] += math.exp(d)
    LV = np.empty(nq)
    for q in range(nq):
        LV[q] = mx[q] + math.log(acc[q]) if mx[q] > -math.inf else -math.inf
    return LV


@nb.njit(cache=True)
def _concave_convolution(L11, L00):
    """For concave L11, L00, i -> L11[i] + L00[q - i] is concave: from its peak (whose
    position does not decrease with q: a moving pointer) the terms fall off on both sides,
    and each follows from its neighbour by a product of precomputed ratios
    exp(+-(L[k+1] - L[k])), summed outwards until below e^-_CONV_WINDOW of the peak."""
    n1 = L11.size
    n0 = L00.size
    e1 = np.empty(n1 - 1)      # exp(L11[i+1] - L11[i]) and its reciprocal
    r1 = np.empty(n1 - 1)
    e0 = np.empty(n0 - 1)
    r0 = np.empty(n0 - 1)
    for i in range(n1 - 1):
        e1[i] = math.exp(L11[i + 1] - L11[i])
        r1[i] = math.exp(L11[i] - L11[i + 1])
    for j in range(n0 - 1):
        e0[j] = math.exp(L00[j + 1] - L00[j])
        r0[j] = math.exp(L00[j] - L00[j + 1])
    floor = math.exp(-_CONV_WINDOW)
    nq = n1 + n0 - 1
    LV = np.empty(nq)
    ipk = 0
    for q in range(nq):
        lo = max(0, q - n0 + 1)
        hi = min(q, n1 - 1)
        i = max(ipk, lo)
        while i < hi and L11[i + 1] + L00[q - i - 1] > L11[i] + L00[q - i]:
            i += 1
        ipk = i
        acc = 1.0
        t = 1.0
        k = i
        while k < hi:             # term k+1 = term k * e^(L11[k+1]-L11[k]) * e^(L00[q-k-1]-L00[q-k])
            t *= e1[k] * r0[q - k - 1]
            k += 1
            if t < floor:
                break
            acc += t
        t = 1.0
        k = i
        while k > lo:             # term k-1 = term k * e^(L11[k-1]-L11[k]) * e^(L00[q-k+1]-L00[q-k])
            t *= r1[k - 1] * e0[q - k]
            k -= 1
            if t < floor:
                break
            acc += t
        LV[q] = L11[i] + L00[q - i] + math.log(acc)
    return LV


@nb.njit(cache=True)
def posterior(tables, r, meta):
    """Grouped mixture ``mix`` (``methods.fixed._dirichlet_mixture``) of the posterior of Delta for
    replication r (at least one trial), its moments in ``meta``, and the posterior mean.

    Component ``(i, j, q)`` (``t10 = c10 + i``, ``t01 = c01 + j``, ``t11 + t00 = c11 + c00
    + q``) has log weight ``L10[i] + L01[j] + phi(i + j, q)``: everything but the first two
    terms depends on ``sigma = i + j`` only, and so does ``A = a + b`` of its S law.  The
    pairs of one ``sigma`` therefore share one polynomial in ``1 - s`` (a group), the
    normaliser and moments are per-group sums, and the quadrature evaluates one polynomial
    per group instead of one per pair.  Dropping: a pair whose best component is below
    e^DROP of the largest component is dropped, and a group keeps every ``q`` that some
    kept pair of it needs at that level (at least what the per-component rule keeps)."""
    L10, c10 = cell_terms(tables, r, 1)
    L01, c01 = cell_terms(tables, r, 2)
    L11, c11 = cell_terms(tables, r, 0)
    L00, c00 = cell_terms(tables, r, 3)
    LV = _rest_convolution(L11, L00)
    nq = LV.size
    C0 = c10 + c01 + c11 + c00
    n10 = L10.size
    n01 = L01.size
    nsig = n10 + n01 - 1
    N = C0 + nsig - 1 + nq - 1
    sizes, counts = cluster_sizes(tables, r)
    logA = log_alpha_integrals(sizes, counts, C0, N)
    lg = np.empty(N + 3)                      # lgamma of the integers used below
    lg[0] = math.inf
    for k in range(1, N + 3):
        lg[k] = math.lgamma(float(k))
    rbase = c11 + c00
    A0 = 1 + c10 + c01                         # A of group sigma: A0 + sigma
    phi = np.empty((nsig, nq))
    phimax = np.full(nsig, -math.inf)
    for g in range(nsig):
        for q in range(nq):
            v = LV[q] + logA[g + q] - lg[2 + C0 + g + q]
            phi[g, q] = v
            phimax[g] = max(phimax[g], v)
    wmax = -math.inf
    for i in range(n10):
        for j in range(n01):
            wmax = max(wmax, L10[i] + L01[j] + phimax[i + j])
    keep = np.zeros((n10, n01), np.bool_)
    lsig = np.full(nsig, -math.inf)            # best kept pair of each group
    for i in range(n10):
        for j in range(n01):
            if L10[i] + L01[j] + phimax[i + j] - wmax > DROP:
                keep[i, j] = True
                lsig[i + j] = max(lsig[i + j], L10[i] + L01[j])
    qlo = nq
    qhi = -1
    gid = np.full(nsig, -1)
    ng = 0
    for g in range(nsig):
        if lsig[g] == -math.inf:
            continue
        gid[g] = ng
        ng += 1
        for q in range(nq):
            if lsig[g] + phi[g, q] - wmax > DROP:
                qlo = min(qlo, q)
                qhi = max(qhi, q)
    width = qhi - qlo + 1
    # per-group sums over q: normaliser and the two moment sums (E 1/a0, E 1/(a0 (a0 + 1)))
    Phi = np.zeros(nsig)
    M1 = np.zeros(nsig)
    M2 = np.zeros(nsig)
    LG = np.full((width, ng), -math.inf)     # log G: G's small coefficients underflow (_log_polys_many)
    gsc = np.full(nsig, -math.inf)
    for g in range(nsig):
        if gid[g] < 0:
            continue
        A = float(A0 + g)
        for q in range(qlo, qhi + 1):
            if lsig[g] + phi[g, q] - wmax > DROP:
                e = math.exp(phi[g, q] - phimax[g])
                a0 = A + 1.0 + rbase + q
                Phi[g] += e
                M1[g] += e / a0
                M2[g] += e / (a0 * (a0 + 1.0))
                psi = phi[g, q] - (lg[A0 + g] + lg[1 + rbase + q] - lg[A0 + g + 1 + rbase + q])
                gsc[g] = max(gsc[g], psi)
        for q in range(qlo, qhi + 1):
            if lsig[g] + phi[g, q] - wmax > DROP:
                psi = phi[g, q] - (lg[A0 + g] + lg[1 + rbase + q] - lg[A0 + g + 1 + rbase + q])
                LG[q - qlo, gid[g]] = psi - gsc[g]
    Z = 0.0
    for i in range(n10):
        for j in range(n01):
            if keep[i, j]:
                Z += math.exp(L10[i] + L01[j] + phimax[i + j] - wmax) * Phi[i + j]
    lz = wmax + math.log(Z)
    npair = 0
    for i in range(n10):
        for j in range(n01):
            if keep[i, j]:
                npair += 1
    pa = np.empty(npair)
    pb = np.empty(npair)
    plb = np.empty(npair)
    pu = np.empty(npair)
    pg = np.empty(npair, np.int64)
    gexp = np.empty(ng)
    gscale = np.full(ng, -math.inf)
    ed = 0.0
    ed2 = 0.0
    es = 0.0
    es2 = 0.0
    p = 0
    for i in range(n10):                       # rows: b fixed, a rising by one (chained)
        for j in range(n01):
            if not keep[i, j]:
                continue
            g = i + j
            a = 0.5 + c01 + j
            b = 0.5 + c10 + i
            A = a + b
            W = math.exp(L10[i] + L01[j] + phimax[g] - lz)
            ed += W * (a - b) * M1[g]
            ed2 += W * (A + (a - b) * (a - b)) * M2[g]
            es += W * A * M1[g]
            es2 += W * A * (A + 1.0) * M2[g]
            pa[p] = a
            pb[p] = b
            plb[p] = lbeta(a, b)
            pu[p] = L10[i] + L01[j] - lz + gsc[g]
            pg[p] = gid[g]
            gexp[gid[g]] = A - 1.0
            gscale[gid[g]] = max(gscale[gid[g]], pu[p])
            p += 1
    pw = np.empty(npair)
    for p in range(npair):
        pw[p] = math.exp(pu[p] - gscale[pg[p]])
    finish_meta(meta, ed, ed2, es, es2)
    mix = (np.exp(LG), gexp, gscale, pa, pb, plb, pw, pg, float(rbase + qlo), True, np.empty(ng),
           np.empty(0), np.empty(0), np.empty((0, ng)), pair_reciprocals(pa, pb), LG)
    return with_interpolant(mix, meta), ed


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    alpha = consts[0]
    meta = np.empty(4)
    for r in range(tables.shape[0]):
        n = 0
        for k in range(tables.shape[1]):
            n += tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if n == 0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        mix, mean = posterior(tables, r, meta)
        estimate[r] = mean
        lo, hi = credible_interval(alpha, mix, meta)
        lower[r] = lo
        upper[r] = hi
        status[r] = decide(lo, margin)


# Cost model (methods.analysis_cost): the posterior is a mixture over table counts (t10, t01,
# t11 + t00); with M_j = y_j - c_j (pooled count of cell j less the clusters where it is
# positive), version 3 stores it as (M10 + M01 + 1) groups by (M11 + M00 + 1) values of
# t11 + t00 (the grid: float64 log weights, the group polynomials and their logarithms) and
# (M10 + 1)(M01 + 1) pairs.  Measured (CPU time, NUMBA_NUM_THREADS=1) 0.3-3.7e-7 s and 15-16.5 B
# per grid cell from 100 x 10 to one cluster of 40,000 trials: model 5e-7 s and 24 B per cell
# plus 100 B per pair.  The Stirling coefficients S_j cost 0.7-0.9 ns per squared pooled count
# (one cluster of 1e5 trials: 6.9 s): model 1e-9 s per y_j^2.  Each table's interval quadrature
# adds its fixed cost (``_dirichlet_mixture.INTERVAL_SECONDS``), which dominates at small counts.
BYTES_PER_CELL = 24.0
BYTES_PER_PAIR = 100.0
SECONDS_PER_CELL = 5e-7
SECONDS_PER_SQUARED_COUNT = 1e-9


def analysis_cost(method, t, linear):
    y = t.sum(axis=1)                       # [R, 4] pooled counts
    c = (t > 0).sum(axis=1)                 # [R, 4] clusters with a positive count
    m = np.maximum(y - c, 0.0)
    cells = (m[:, 1] + m[:, 2] + 1) * (m[:, 0] + m[:, 3] + 1)
    pairs = (m[:, 1] + 1) * (m[:, 2] + 1)
    memory = BYTES_PER_CELL * cells + BYTES_PER_PAIR * pairs
    seconds = SECONDS_PER_CELL * cells + SECONDS_PER_SQUARED_COUNT * (y ** 2).sum(axis=1)
    seconds = seconds + INTERVAL_SECONDS   # each table's quadrature, whatever its grid
    R = t.shape[0]
    worst = float(cells.max()) if R else 0.0
    return AnalysisCost(method.name, linear.bytes + (float(memory.max()) if R else 0.0),
                        linear.seconds + float(seconds.sum()),
                        f"the posterior's grid ({worst:.3g} cells: the counts of n10 + n01 times those of "
                        "n11 + n00, above one per cluster)")


METHOD = FixedMethod(
    name="bayes_hierarchical",
    version="4",
    estimand=Estimand.CLUSTER,
    citation="Dirichlet-multinomial clusters (Mosimann 1962, Biometrika 49:65-82) with Jeffreys "
             "Dirichlet(1/2) population cells and the 1/(1+alpha)^2 concentration prior of Albert (2009) "
             "Bayesian Computation with R, ch. 5; exact mixture posterior via the Stirling-number expansion "
             "(Antoniak 1974, Ann. Statist. 2:1152-1174); central credible interval (Gelman et al. 2013, "
             "BDA3 sec. 2.3)",
    summary="equal-tailed credible interval of the population p01 - p10, clusters exchangeable "
            "(Dirichlet-multinomial, uniform prior on the ICC), exact mixture posterior",
    kernel=kernel,
    prepare=prepare,
    cost=analysis_cost,
)
