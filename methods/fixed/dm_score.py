"""``dm_score`` -- Tango's score statistic for the paired difference with the variance inflated
by the Dirichlet-multinomial design effect at a registered ICC, and an E+M critical value that
can be calibrated exactly at the design.

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

Decision: pass iff ``Z(-m) >= c``.  Uncalibrated (``em_level = 0``) ``c = z_{1 - alpha}``.
Calibrated, ``c = c(q~(-m))`` is the E+M critical-value table of Lloyd (2008, Aust N Z J Stat
50:329-345): at 61 nodes uniform in ``sqrt(q - m)`` on ``[m, em_q_hi]`` the exact upper-``em_level``
quantile of ``Z(-m)`` under the null law at discordance ``q`` and ``rho = rho_max`` for the design
``design_clusters`` x ``design_trials`` (E-step; ``methods.fixed.em_table``, rebuilt here from the
options so a calibrated method is named by its options alone), linear in ``sqrt(q~ - m)`` between
nodes; ``em_level`` is chosen by ``studies.exact.convolution.calibrate_em`` (M-step) so that the
exact worst false-pass over the nuisance grid is at most ``design_alpha``.  A calibrated method
analyses only its design margin (other margins are inconclusive) at its design alpha (another
alpha is an error); the guarantee is the certificate's, for its design.

Interval: ``{d : -c* <= Z(d) <= c*}`` with ``c* = c(q~(-m))`` (one-sided level alpha at each end),
the lower bound the crossing ``Z = c*`` on ``(-1, S/N)`` and the upper ``Z = -c*`` on ``(S/N, 1)``
by bisection (``clustered_score.crossing``); the reported lower bound is clamped to agree with
the test.  Estimand: trial-weighted (``S / N``).

Boundaries: no trials -> inconclusive.  No discordant pairs (all pass, all fail, or any mix of
concordant pairs) -> ``V(-m) = m (1 - m) sum_k n_k (1 + (n_k - 1) rho_max) > 0``: never a
zero-variance pass; it passes iff ``N m / sqrt(V(-m)) >= c``.  Every pair a loss -> lower bound -1,
fail.  One cluster -> the model term keeps V positive (a wide interval).  One trial per cluster
or ``rho_max = 0`` -> the weight is ``N`` and, uncalibrated, the interval is Tango's.  Unequal
cluster sizes enter through ``n_k``; a calibrated table belongs to its fixed-size design.
"""
import math

import numba as nb
import numpy as np

from methods.fixed._common import decide, no_bounds, write_inconclusive
from methods.fixed.em_table import (MARGIN_AT, NODES, ROBUST_AT, RHO_AT, TOP_LEVEL, critical, design_weight,
                                     em_table, node_step, restricted_discordance)
from methods.analysis_cost import AnalysisCost
from methods.fixed.clustered_score import crossing, score
from methods.protocol import Estimand, FixedMethod, z_value

# Rebuilding a calibrated method's E+M table (once per process): measured 5.1e-5 to 5.5e-5 s and a
# peak of 546 to 572 bytes (tracemalloc) per lattice state at 100, 300 and 600 clusters of 3 pairs
# on 2 busy cores.
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
def kernel(tables, margin, consts, lower, upper, estimate, status):
    rho = consts[RHO_AT]
    robust = consts[ROBUST_AT] > 0.0
    design_margin = consts[MARGIN_AT]
    for r in range(tables.shape[0]):
        N, S, w, l, s2, snd, sn2 = cluster_sums(tables, r)
        if N == 0.0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        estimate[r] = S / N
        if not math.isnan(design_margin) and margin != design_margin:
            no_bounds(r, lower, upper, status)   # the table belongs to the design margin
            continue
        weight = design_weight(N, sn2, rho)
        if not robust:       # no robust term: V is the model variance
            s2 = 0.0
            snd = 0.0
            sn2 = 0.0
        c = critical(restricted_discordance(-margin, w, l, N), margin, consts)
        lo, hi = score_bounds(S, N, w, l, s2, snd, sn2, weight, c)
        if score(-margin, S, N, w, l, s2, snd, sn2, weight) >= c:
            lo = max(lo, -margin)
        elif lo >= -margin:
            lo = np.nextafter(-margin, -math.inf)
        lower[r] = lo
        upper[r] = hi
        status[r] = decide(lo, margin)


def _option(method, name: str, ok, what: str) -> float:
    v = method.options[name]
    if not ok(v):
        raise ValueError(f"method {method.name!r}: option {name} must be {what}, got {v!r}")
    return float(v)


def _whole(v) -> bool:
    return float(v) == int(v)


def prepare(method, alpha, tables):
    """``[rho_max, robust, design margin (NaN), nodes, h, c_0 ..]``: one node ``z_{1 - alpha}``
    uncalibrated, the E+M table of the design when ``em_level > 0`` (module docstring)."""
    rho = _option(method, "rho_max", lambda v: 0.0 <= v < 1.0, "in [0, 1)")
    robust = _option(method, "robust", lambda v: v in (0.0, 1.0), "0 or 1")
    level = _option(method, "em_level", lambda v: 0.0 <= v < TOP_LEVEL, f"0 (uncalibrated) or in (0, {TOP_LEVEL})")
    if level == 0.0:
        return np.array([rho, robust, math.nan, 1.0, 1.0, z_value(alpha)])
    K = int(_option(method, "design_clusters", lambda v: v >= 1 and _whole(v), "a whole number >= 1"))
    M = int(_option(method, "design_trials", lambda v: v >= 1 and _whole(v), "a whole number >= 1"))
    m = _option(method, "design_margin", lambda v: 0.0 < v < 1.0, "in (0, 1)")
    a = _option(method, "design_alpha", lambda v: 0.0 < v <= 0.25, "in (0, 0.25]")
    q_hi = _option(method, "em_q_hi", lambda v: m < v <= 1.0, "in (design_margin, 1]")
    if not math.isclose(alpha, a, rel_tol=1e-12, abs_tol=0.0):
        raise ValueError(f"method {method.name!r} is calibrated at alpha = {a:g} for {K} x {M} at margin {m:g}; "
                         f"it cannot run at alpha = {alpha:g}")
    table = em_table(K, M, m, rho, level, q_hi)
    if np.any(table <= 0.0):
        raise ValueError(f"method {method.name!r}: em_level {level:g} gives a critical value <= 0 at the design")
    return np.concatenate([[rho, robust, m, float(NODES), node_step(m, q_hi)], table])


def analysis_cost(method, t, linear):
    """The kernel is linear in the cells; a calibrated method first rebuilds its E+M table, whose
    cost grows with the design's lattice of (L, W) states."""
    if method.options["em_level"] == 0.0:
        return linear
    pairs = int(method.options["design_clusters"] * method.options["design_trials"])
    states = (pairs + 1) * (pairs + 2) // 2
    return AnalysisCost(method.name, linear.bytes + BYTES_PER_STATE * states,
                        linear.seconds + SECONDS_PER_STATE * states,
                        f"the E+M table of the design ({states:,} lattice states of {pairs} pairs)")


METHOD = FixedMethod(
    name="dm_score",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Tango (1998) Stat Med 17:891-908 (score statistic, constrained MLE); variance x Dirichlet-multinomial "
             "design effect 1 + (n_k - 1) rho_max (Mosimann 1962, Biometrika 49:65-82); E+M critical value "
             "(Lloyd 2008, Aust N Z J Stat 50:329-345) calibrated exactly at the design",
    summary="score interval with the DM model variance at rho_max; critical value z, or an exact E+M table "
            "calibrated at the design (robust = 1: variance never below the cluster-robust one)",
    kernel=kernel,
    prepare=prepare,
    options={"rho_max": 0.1, "robust": 0.0, "em_level": 0.0, "design_clusters": 0.0, "design_trials": 0.0,
             "design_margin": 0.0, "design_alpha": 0.0, "em_q_hi": 0.5},
    cost=analysis_cost,
)
