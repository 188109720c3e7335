"""``dm_score`` -- Tango's score statistic for the paired difference with the variance inflated
by the Dirichlet-multinomial design effect at a registered ICC, and an E+M critical value that
is exact at the design of the data (``dm_score@alpha=L``).

Statistic.  Pooled wins ``w = sum n01``, losses ``l = sum n10``, ``N = sum n_k`` pairs (empty
clusters are missing and skipped), ``S = w - l``.  Tango's (1998, Stat Med 17:891-908) constrained
MLE of the loss probability under ``H0: Delta = d`` is closed form,

    p~10(d) = (sqrt(B^2 - 8 N C) - B) / (4 N),  B = -(w + l) + (2N - w + l) d,  C = -l d (1 - d),

(the formula of ``tango_score`` and ``clustered_score``, validated on Tango's worked examples),
``sigma2~(d) = 2 p~10 + d (1 - d)`` is the variance of one pair's difference under H0 and
``q~(d) = sigma2~(d) + d^2`` the restricted discordance.  Under the Dirichlet-multinomial cluster
model (Mosimann 1962, Biometrika 49:65-82: ``Var X_j = n p_j (1 - p_j) (n + a)/(1 + a)`` with
``a = (1 - rho)/rho``, the same factor in every covariance) a cluster's difference ``D_k = n01 -
n10`` has ``Var D_k = n_k (1 + (n_k - 1) rho) (q - Delta^2)`` exactly, so with the ICC registered
as ``rho_max`` (option, default 0.1)

    V(d) = sigma2~(d) * sum_k n_k (1 + (n_k - 1) rho_max),     Z(d) = (S - N d) / sqrt(V(d)),

which is the exact null variance of ``S`` at ``rho = rho_max``, evaluated at the restricted
estimate (and an over-estimate for smaller rho).  ``robust = 1`` takes
``V = max(sum_k (D_k - n_k d)^2, V_model)``, the cluster-robust second moment about ``d`` (the
variance of ``clustered_score`` with ``icc_floor = rho_max``); its ``Z`` is never larger when
``S - N d > 0``, and the critical value below depends on ``q~`` only, which both share, so its
pass set is contained in the model variant's whenever every critical value is positive (which
``prepare`` checks): a certificate of the model variant bounds it.

Decision: pass iff ``Z(-m) >= c`` at the margin ``m`` the batch is decided at.  Uncalibrated,
``c = z_{1 - alpha}``.  Calibrated (``dm_score@alpha=L``, ``nominal_alpha = L``: the level the
kernel runs at whatever alpha it is asked for), ``c = c(q~(-m))`` is the E+M critical-value table
of Lloyd (2008, Aust N Z J Stat 50:329-345) at E-step level ``L`` for the design of the data: at
61 nodes uniform in ``sqrt(q - m)`` on ``[m, em_q_hi]`` the exact upper-``L`` quantile of ``Z(-m)``
under the null law at discordance ``q`` and ``rho = rho_max`` for K clusters of M pairs
(``methods.fixed.em_table``), linear in ``sqrt(q~ - m)`` between nodes.  The design of a
replication is read from its own table, so no row depends on the others (any chunking gives the
same results): ``K`` its non-empty clusters (an empty cluster is a missing one, as everywhere) and
``M`` the largest of their sizes.  When every non-empty cluster has M pairs the table is exact
for that design; with unequal sizes the statistic still uses each ``n_k`` and the table is that
of the ``K x M`` design -- a well-defined rule that no certificate covers (a certificate and the
evidence path cover one fixed cluster size).  ``studies.exact.convolution.calibrate_em`` (M-step)
chooses ``L`` at a design so that the exact worst false-pass over its nuisance grid is at most
alpha; the guarantee is that design's certificate's, for its K, M, margin, rho_max and alpha
(``methods.qualification`` ties a certificate to its design).  The same method at another design
or margin is simply a different, uncertified design.  Tables are cached (``em_table``): a
process builds each design's table once.

Interval: ``{d : -c* <= Z(d) <= c*}`` with ``c* = c(q~(-m))`` (one-sided level alpha at each end),
the lower bound the crossing ``Z = c*`` on ``(-1, S/N)`` and the upper ``Z = -c*`` on ``(S/N, 1)``
by bisection (``clustered_score.crossing``); the reported lower bound is clamped to agree with
the test.  Estimand: trial-weighted (``S / N``).

Boundaries: no trials -> inconclusive.  No discordant pairs (all pass, all fail, or any mix of
concordant pairs) -> ``V(-m) = m (1 - m) sum_k n_k (1 + (n_k - 1) rho_max) > 0``: never a
zero-variance pass; it passes iff ``N m / sqrt(V(-m)) >= c``.  Every pair a loss -> lower bound -1,
fail.  One cluster -> the model term keeps V positive (a wide interval).  One trial per cluster
or ``rho_max = 0`` -> the weight is ``N`` and, uncalibrated, the interval is Tango's.
"""
import math

import numba as nb
import numpy as np

from methods.analysis_cost import AnalysisCost
from methods.fixed._common import decide, write_inconclusive
from methods.fixed.clustered_score import crossing, score
from methods.fixed.em_table import (DESIGN_AT, DESIGNS_AT, MAX_PAIRS, NODES, NODES_AT, ROBUST_AT, RHO_AT, critical,
                                     design_weight, em_table, node_step, restricted_discordance)
from methods.protocol import Estimand, FixedMethod, OptionRange, z_value

# Building one design's E+M table (once per process and design: ``em_table`` is cached): measured
# 5.1e-5 to 5.5e-5 s and a peak of 546 to 572 bytes (tracemalloc) per lattice state at 100, 300 and
# 600 clusters of 3 pairs on 2 busy cores.
SECONDS_PER_STATE = 6e-5
BYTES_PER_STATE = 600.0


@nb.njit(inline="always", cache=True)
def cluster_sums(tables, r):
    """Replication r's ``(N, S, w, l, sum D_k^2, sum n_k D_k, sum n_k^2)`` over non-empty clusters."""
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
    return N, S, w, l, s2, snd, sn2


@nb.njit(inline="always", cache=True)
def score_bounds(S, N, w, l, s2, snd, sn2, weight, c):
    """``{d : -c <= Z(d) <= c}`` by bisection (the crossing on each side of ``S / N``)."""
    dhat = S / N
    if l == N or score(-1.0, S, N, w, l, s2, snd, sn2, weight) < c:
        lo = -1.0
    else:
        lo = crossing(-1.0, dhat, c, S, N, w, l, s2, snd, sn2, weight)
    if w == N or score(1.0, S, N, w, l, s2, snd, sn2, weight) > -c:
        hi = 1.0
    else:
        hi = crossing(dhat, 1.0, -c, S, N, w, l, s2, snd, sn2, weight)
    return lo, hi


@nb.njit(cache=True)
def table_at(tables, r, consts, designs, nodes):
    """Where replication r's table starts in ``consts``: the table of its design ``(K, M)`` (its
    non-empty clusters, the largest of their sizes)."""
    k = 0
    m = 0
    for c in range(tables.shape[1]):
        n = tables[r, c, 0] + tables[r, c, 1] + tables[r, c, 2] + tables[r, c, 3]
        if n > 0:
            k += 1
            m = max(m, n)
    for i in range(designs):
        if consts[DESIGN_AT + 2 * i] == k and consts[DESIGN_AT + 2 * i + 1] == m:
            return DESIGN_AT + 2 * designs + i * nodes
    raise ValueError("dm_score: no E+M table for a replication's design; prepare the constants from the same tables")


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    rho = consts[RHO_AT]
    robust = consts[ROBUST_AT] > 0.0
    designs = int(consts[DESIGNS_AT])
    nodes = int(consts[NODES_AT])
    for r in range(tables.shape[0]):
        N, S, w, l, s2, snd, sn2 = cluster_sums(tables, r)
        if N == 0.0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        estimate[r] = S / N
        at = DESIGN_AT if designs == 0 else table_at(tables, r, consts, designs, nodes)
        weight = design_weight(N, sn2, rho)
        if not robust:       # no robust term: V is the model variance
            s2 = 0.0
            snd = 0.0
            sn2 = 0.0
        c = critical(restricted_discordance(-margin, w, l, N), margin, consts, at)
        lo, hi = score_bounds(S, N, w, l, s2, snd, sn2, weight, c)
        if score(-margin, S, N, w, l, s2, snd, sn2, weight) >= c:
            lo = max(lo, -margin)
        elif lo >= -margin:
            lo = np.nextafter(-margin, -math.inf)
        lower[r] = lo
        upper[r] = hi
        status[r] = decide(lo, margin)


def designs_of(tables) -> np.ndarray:
    """int64[D, 2]: the distinct designs ``(K, M)`` of the replications of ``tables[R, K, 4]``
    that have a trial -- K the non-empty clusters, M the largest cluster size (sorted)."""
    t = np.asarray(tables)
    if t.shape[0] == 0 or t.shape[1] == 0:
        return np.zeros((0, 2), np.int64)
    sizes = t.sum(axis=2)
    pairs = np.stack([np.count_nonzero(sizes, axis=1), sizes.max(axis=1)], axis=1).astype(np.int64)
    return np.unique(pairs[pairs[:, 1] > 0], axis=0)


def _option(method, name: str, ok, what: str) -> float:
    v = method.options[name]
    if not ok(v):
        raise ValueError(f"method {method.label!r}: option {name} must be {what}, got {v!r}")
    return float(v)


def prepare(method, alpha, margin, tables):
    """``[rho_max, robust, nodes, h, D, (K_i, M_i).., tables..]``: one node ``z_{1 - alpha}``
    uncalibrated; calibrated, the E+M table at E-step level ``alpha`` (the nominal level) of each
    design ``K_i x M_i`` in the batch, at this margin (module docstring)."""
    rho = _option(method, "rho_max", lambda v: 0.0 <= v < 1.0, "in [0, 1)")
    robust = _option(method, "robust", lambda v: v in (0.0, 1.0), "0 or 1")
    q_hi = _option(method, "em_q_hi", lambda v: 0.0 < v <= 1.0, "in (0, 1]")
    if method.nominal_alpha is None:
        return np.array([rho, robust, 1.0, 1.0, 0.0, z_value(alpha)])
    if not margin < q_hi:
        raise ValueError(f"method {method.label!r}: its E+M table spans discordances [margin, em_q_hi]; option "
                         f"em_q_hi = {q_hi:g} must exceed the margin {margin:g}")
    designs = designs_of(tables)
    parts = []
    for K, M in designs.tolist():
        if K * M > MAX_PAIRS:
            raise ValueError(f"method {method.label!r}: the E+M table of {K} clusters x {M} pairs ({K * M} pairs) is "
                             f"beyond the exact E-step's {MAX_PAIRS} pairs")
        try:
            table = em_table(K, M, margin, rho, alpha, q_hi)
        except ValueError as exc:      # the exact cluster law fails numerically (very large clusters)
            raise ValueError(f"method {method.label!r}: the E+M table of {K} clusters x {M} pairs cannot be computed "
                             f"exactly ({exc})") from None
        if np.any(table <= 0.0):
            raise ValueError(f"method {method.label!r}: E-step level {alpha:g} gives a critical value <= 0 at "
                             f"{K} x {M}, margin {margin:g}")
        parts.append(table)
    head = [rho, robust, float(NODES), node_step(margin, q_hi), float(len(parts))]
    return np.concatenate([head, designs.ravel().astype(np.float64), *parts])


def analysis_cost(method, t, linear):
    """The kernel is linear in the cells; a calibrated method first builds the E+M table of each
    design in the batch (once per process: cached), whose cost grows with its lattice of (L, W)
    states."""
    if method.nominal_alpha is None:
        return linear
    designs = designs_of(t).tolist()
    pairs = [K * M for K, M in designs]
    states = sum((n + 1) * (n + 2) // 2 for n in pairs)
    if not designs:
        return linear
    if len(designs) == 1:
        what = f"the E+M table of the design ({states:,} lattice states of {pairs[0]} pairs)"
    else:
        shown = ", ".join(f"{K} x {M}" for K, M in designs[:4]) + (", ..." if len(designs) > 4 else "")
        what = f"the E+M tables of its {len(designs)} designs ({shown}: {states:,} lattice states)"
    return AnalysisCost(method.name, linear.bytes + BYTES_PER_STATE * states,
                        linear.seconds + SECONDS_PER_STATE * states, what)


METHOD = FixedMethod(
    name="dm_score",
    version="2",
    estimand=Estimand.TRIAL,
    citation="Tango (1998) Stat Med 17:891-908 (score statistic, constrained MLE); variance x Dirichlet-multinomial "
             "design effect 1 + (n_k - 1) rho_max (Mosimann 1962, Biometrika 49:65-82); E+M critical value "
             "(Lloyd 2008, Aust N Z J Stat 50:329-345) exact at the design of the data",
    summary="score interval with the DM model variance at rho_max; critical value z, or (dm_score@alpha=L) the exact "
            "E+M table at E-step level L for the data's K x M design (robust = 1: variance never below the "
            "cluster-robust one)",
    kernel=kernel,
    prepare=prepare,
    options={"rho_max": 0.1, "robust": 0.0, "em_q_hi": 0.5},
    ranges={"rho_max": OptionRange(0.0, 1.0), "robust": OptionRange(0.0, 1.0, integer=True),
            "em_q_hi": OptionRange(0.0, 1.0)},  # the catalogue's closed check; the code refuses the open ends
    cost=analysis_cost,
    calibration="exact-em",
)
