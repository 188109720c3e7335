"""``judge_corrected`` -- the paired, clustered difference of judge-labelled pass rates,
corrected for the judge's misclassification, with an interval that carries both the
clustered sampling uncertainty and that of the judge's estimated sensitivity and
specificity.

Data.  The tables hold judge labels.  Per arm ``a`` (baseline b, candidate c) the
judge-scale pass rate is the trial-weighted ratio ``p_a = sum_k y_ak / N`` (``y_bk = n11 +
n10``, ``y_ck = n11 + n01`` of cluster k, ``N = sum_k n_k``).  A calibration set per arm (or
one shared set; ``methods.judged``) gives the judge's sensitivity ``Se_a`` = judge pass
among human passes and specificity ``Sp_a`` = judge fail among human fails.

Correction (Rogan & Gladen 1978, Am J Epidemiol 107:71-76, the corrected prevalence): with
``J_a = Se_a + Sp_a - 1`` (Youden's index) the true pass rate of arm a is

    pi_a = (p_a + Sp_a - 1) / J_a,

and the estimate is ``theta = pi_c - pi_b`` (the trial-weighted true difference, candidate
minus baseline), unclipped.  It is identified only when ``J_a > 0``.  Assumptions: the
judge's error depends on the arm only (not on the cluster or the case), the calibration
set of an arm is representative of that arm's outputs, and the errors of the two arms'
labels are independent given the truth -- the simulator's label-noise model
(``simlab.scenario.LabelNoise``).

Interval (delta method).  ``theta`` is a smooth function of ``(p_b, p_c)`` and of the
calibration estimates, which are independent of the tables and of each other (human
passes and fails are disjoint items; the sets of the two arms are separate).  Its
first-order (Taylor-series) variance is, with ``dpi/dp = 1/J``, ``dpi/dSe = -pi/J``,
``dpi/dSp = (1 - pi)/J`` -- the Rogan-Gladen variance with sensitivity and specificity
estimated from validation data (Greenland 1988, Stat Med 7:745-757; the form
``[Var p + pi^2 Var Se + (1 - pi)^2 Var Sp] / J^2`` per arm is the one Lang & Reiczigel
2014, Prev Vet Med 113:13-22, start from) --

    V = V_samp + sum_a [ (pi_a / J_a)^2 Var(Se_a) + ((1 - pi_a) / J_a)^2 Var(Sp_a) ]

(shared set: ``Se_b = Se_c``, so the calibration term is ``(theta / J)^2 (Var Se + Var Sp)``).

* ``V_samp`` is the clustered variance of ``p_c / J_c - p_b / J_b``: the cluster-level
  ratio-estimator sandwich of the two arm rates with their covariance, with the CR2
  correction of Bell & McCaffrey (2002, Survey Methodology 28:169-181) as in
  ``cluster_robust``: with ``I_ak = N y_ak - n_k sum_j y_aj`` (integers),

      V_samp = sum_k (I_ck / J_c - I_bk / J_b)^2 / (N - n_k) / N^3.

  With a perfect judge (``J = 1``) it is exactly ``cluster_robust``'s variance of the
  judge-scale difference, and with one-trial clusters it is ``((p10 + p01) - (p01 -
  p10)^2) / (N - 1)``, the paired multinomial variance (Newcombe 1998, Stat Med
  17:2635-2650, method 1) with ``N - 1`` for ``N``.
* ``Var(Se)`` is binomial, evaluated at the Agresti-Coull pseudo-count estimate
  ``Se~ = (x + c) / (n + 2 c)``: ``Se~ (1 - Se~) / (n + 2 c)`` with ``c = pseudo``
  (default 2: "add two successes and two failures", Agresti & Coull 1998, Am Stat
  52:119-126), so a calibration set the judge got all right still carries uncertainty;
  Lang & Reiczigel (2014) found that such an adjustment makes the Rogan-Gladen interval
  hold its level with estimated sensitivity and specificity (their exact pseudo-counts are
  not reproduced here; ``pseudo = 0`` is the plain delta method).  The point estimates use
  the observed proportions.

Interval ``theta +- t_{1 - alpha, K - 1} sqrt(V)`` (K non-empty clusters; the t reference of
``cluster_robust``, conservative for the calibration part), unclipped; pass iff ``lower >=
-margin`` (``methods.protocol``).  The raw judge-scale difference ``p_c - p_b`` and its interval
(``cluster_robust``'s) are reported beside it.

What the tables must hold.  Every count is a judge label of the registered judge: the
correction is exact for that measurement model only.  A trial whose outcome a deterministic
check decided (a failed transaction, schema, permission check) is not judge-labelled;
recording a candidate trial as a fail because its check failed, whatever the judge said,
moves the corrected candidate rate by ``-f (1 - Sp_c) / J_c`` (``f`` the share of candidate
trials so recorded: the correction "restores" passes the judge never missed), i.e. against
the candidate, so it can never make a pass; the same forcing on baseline trials would move
the difference the other way and must not be done (keep the judge's label there).  The
evidence path blocks on a candidate's failed deterministic check anyway (the spine's rule).

Inconclusive, never a pass (``methods.judged.REASONS``): no trials; a calibration set with
fewer than ``min_calibration`` items, or without a human-labelled pass or fail
(sensitivity or specificity not estimable); an estimated ``Se + Sp <= 1`` for an arm (not
identified); fewer than ``max(2, min_clusters)`` non-empty clusters (the estimate is kept,
the bounds are not).  Empty clusters are missing.
"""
import math

import numba as nb
import numpy as np

from methods.fixed import _cluster, _common
from methods.fixed._cluster import check_min_clusters
from methods.fixed._common import decide
from methods.judged import (DEGENERATE_CALIBRATION, FEW_CLUSTERS, NO_TRIALS, NOT_IDENTIFIED, OK, SMALL_CALIBRATION,
                            JudgeFixedMethod)
from methods.conventions import OptionRange
from methods.protocol import INCONCLUSIVE, Estimand


@nb.njit(inline="always", cache=True)
def _arm_totals(tables, r):
    """(k_used, N, sum y_b, sum y_c) of replication r (judge-scale pass counts per arm)."""
    k_used = 0
    N = 0
    SB = 0
    SC = 0
    for k in range(tables.shape[1]):
        n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
        if n == 0:
            continue
        k_used += 1
        N += n
        SB += tables[r, k, 0] + tables[r, k, 1]
        SC += tables[r, k, 0] + tables[r, k, 2]
    return k_used, N, SB, SC


@nb.njit(inline="always", cache=True)
def _calibration(cal, r, a, min_items, pseudo):
    """(code, Se, Sp, Var Se, Var Sp) of calibration set a of replication r."""
    h11 = cal[r, a, 0]
    h10 = cal[r, a, 1]
    h01 = cal[r, a, 2]
    h00 = cal[r, a, 3]
    npos = h11 + h10
    nneg = h01 + h00
    if npos + nneg < min_items:
        return SMALL_CALIBRATION, math.nan, math.nan, math.nan, math.nan
    if npos == 0 or nneg == 0:
        return DEGENERATE_CALIBRATION, math.nan, math.nan, math.nan, math.nan
    se = h11 / npos
    sp = h00 / nneg
    if se + sp - 1.0 <= 0.0:
        return NOT_IDENTIFIED, se, sp, math.nan, math.nan
    m_pos = npos + 2.0 * pseudo
    m_neg = nneg + 2.0 * pseudo
    ts = (h11 + pseudo) / m_pos
    tp = (h00 + pseudo) / m_neg
    return OK, se, sp, ts * (1.0 - ts) / m_pos, tp * (1.0 - tp) / m_neg


@nb.njit(cache=True)
def kernel(tables, cal, margin, consts, lower, upper, estimate, status, raw_estimate, raw_lower, raw_upper, reason):
    min_clusters = consts[0]
    min_items = consts[1]
    pseudo = consts[2]
    R, K, _ = tables.shape
    shared = cal.shape[1] == 1
    for r in range(R):
        lower[r] = math.nan
        upper[r] = math.nan
        estimate[r] = math.nan
        raw_lower[r] = math.nan
        raw_upper[r] = math.nan
        status[r] = INCONCLUSIVE
        k_used, N, SB, SC = _arm_totals(tables, r)
        if k_used == 0:
            raw_estimate[r] = math.nan
            reason[r] = NO_TRIALS
            continue
        Nf = float(N)
        pb = SB / Nf
        pc = SC / Nf
        raw_estimate[r] = (SC - SB) / Nf
        enough = k_used >= 2 and k_used >= min_clusters
        t = consts[k_used + 1] if enough else math.nan  # t on k_used - 1 df
        if enough:  # the judge-scale interval: cluster_robust's, exact integer residuals
            acc = 0.0
            for k in range(K):
                num, n = _cluster.scaled_residual(tables, r, k, N, SC - SB)
                if n == 0.0:
                    continue
                acc += num * num / (Nf - n)
            half = t * math.sqrt(acc / (Nf * Nf * Nf))
            raw_lower[r] = raw_estimate[r] - half
            raw_upper[r] = raw_estimate[r] + half
        code_b, se_b, sp_b, vse_b, vsp_b = _calibration(cal, r, 0, min_items, pseudo)
        if shared:
            code_c, se_c, sp_c, vse_c, vsp_c = code_b, se_b, sp_b, vse_b, vsp_b
        else:
            code_c, se_c, sp_c, vse_c, vsp_c = _calibration(cal, r, 1, min_items, pseudo)
        code = code_b if code_b != OK else code_c
        if code != OK:
            reason[r] = code
            continue
        jb = se_b + sp_b - 1.0
        jc = se_c + sp_c - 1.0
        pib = (pb + sp_b - 1.0) / jb
        pic = (pc + sp_c - 1.0) / jc
        est = pic - pib
        estimate[r] = est
        if not enough:
            reason[r] = FEW_CLUSTERS
            continue
        acc = 0.0
        for k in range(K):
            n = np.int64(tables[r, k, 0]) + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n == 0:
                continue
            ib = float(np.int64(N) * (np.int64(tables[r, k, 0]) + tables[r, k, 1]) - n * np.int64(SB))
            ic = float(np.int64(N) * (np.int64(tables[r, k, 0]) + tables[r, k, 2]) - n * np.int64(SC))
            g = ic / jc - ib / jb
            acc += g * g / (Nf - float(n))
        var = acc / (Nf * Nf * Nf)
        if shared:
            var += (est / jb) ** 2 * (vse_b + vsp_b)
        else:
            var += (pib / jb) ** 2 * vse_b + ((1.0 - pib) / jb) ** 2 * vsp_b
            var += (pic / jc) ** 2 * vse_c + ((1.0 - pic) / jc) ** 2 * vsp_c
        half = t * math.sqrt(var)
        lower[r] = est - half
        upper[r] = est + half
        status[r] = decide(lower[r], margin)
        reason[r] = OK


def judge_consts(method, alpha: float, margin: float, tables: np.ndarray) -> np.ndarray:
    """``[min_clusters, min_calibration, pseudo, t_1, ..., t_K]``: the options, checked, then
    the one-sided critical values ``t_{1 - alpha}`` on 1..K degrees of freedom."""
    from scipy import special  # stdtrit is t.ppf's own kernel: the same bits, without importing scipy.stats

    min_items, pseudo = method.options["min_calibration"], method.options["pseudo"]
    if not (math.isfinite(min_items) and min_items >= 1):
        raise ValueError(f"method {method.name!r}: option min_calibration must be a finite number >= 1, got "
                         f"{min_items!r}")
    if not (math.isfinite(pseudo) and 0.0 <= pseudo <= 100.0):
        raise ValueError(f"method {method.name!r}: option pseudo must lie in [0, 100], got {pseudo!r}")
    K = max(int(tables.shape[1]), 1)
    out = np.empty(K + 3, np.float64)
    out[0] = check_min_clusters(method)
    out[1] = float(min_items)
    out[2] = float(pseudo)
    out[3:] = special.stdtrit(np.arange(1, K + 1), 1.0 - alpha)
    return out


METHOD = JudgeFixedMethod(
    name="judge_corrected",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Rogan & Gladen (1978) Am J Epidemiol 107:71-76 (corrected rate); delta-method variance with "
             "estimated sensitivity and specificity: Greenland (1988) Stat Med 7:745-757, Lang & Reiczigel (2014) "
             "Prev Vet Med 113:13-22; Agresti & Coull (1998) Am Stat 52:119-126 (pseudo-counts); CR2 cluster "
             "sandwich: Bell & McCaffrey (2002) Survey Methodology 28:169-181",
    summary="Rogan-Gladen-corrected trial-weighted difference of judge-labelled arm rates; delta-method variance "
            "of the CR2 clustered arm rates (with their covariance) and the calibration sets' sensitivity and "
            "specificity; t(K-1) reference",
    kernel=kernel,
    prepare=judge_consts,
    options={"min_clusters": 2.0, "min_calibration": 50.0, "pseudo": 2.0},
    ranges={"min_clusters": OptionRange(0.0, integer=True),  # counts: of clusters, of calibration items
            "min_calibration": OptionRange(0.0, integer=True), "pseudo": OptionRange(0.0, 100.0)},
)
