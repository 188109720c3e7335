"""``judge_corrected`` (methods/fixed/judge_corrected.py), validated three ways:

1. a published worked example (RSurveillance's ``tp()``: Rogan-Gladen estimate and normal
   interval at known Se and Sp); analytic checks: an example computed by hand (exact fractions), the Rogan-Gladen
   variance of one corrected rate, the paired multinomial variance (Newcombe 1998, method 1)
   and, with a perfect judge, ``cluster_robust``'s interval;
2. an independent slow implementation written from the formulas (matrix form of the
   delta method: the arm-rate covariance matrix and the gradient), compared with the
   kernel on random clustered tables and calibration sets;
3. edge cases (all pass, all fail, no discordant pairs, one cluster, an empty cluster),
   the not-identified and too-small calibration refusals, and bad input.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from methods import check_method, registry
from methods.checks import MethodCheckError
from methods.judged import (DEGENERATE_CALIBRATION, FEW_CLUSTERS, NO_TRIALS, NOT_IDENTIFIED, OK, REASONS,
                            SMALL_CALIBRATION, JudgeFixedMethod, needs_calibration)
from methods.protocol import FAIL, INCONCLUSIVE, PASS

M = registry.get("judge_corrected")
PLAIN = M.with_options(pseudo=0)   # the delta method without pseudo-counts
CAL = [[45, 5, 10, 40], [40, 10, 5, 45]]   # baseline Se 0.9 Sp 0.8; candidate Se 0.8 Sp 0.9


def _unit_clusters(n11, n10, n01, n00) -> np.ndarray:
    return np.array([[1, 0, 0, 0]] * n11 + [[0, 1, 0, 0]] * n10 + [[0, 0, 1, 0]] * n01 + [[0, 0, 0, 1]] * n00)


# ---------------------------------------------------------------- 1. analytic checks
def test_hand_worked_example():
    """100 one-trial clusters with judge-labelled pooled table (50, 12, 9, 29): judge rates
    p_b = 0.62, p_c = 0.59, p11 = 0.50.  Calibration: baseline Se 45/50 = 0.9, Sp 40/50 = 0.8;
    candidate Se 40/50 = 0.8, Sp 45/50 = 0.9; both J = 0.7.
    Rogan-Gladen: pi_b = (0.62 + 0.8 - 1)/0.7 = 0.6, pi_c = (0.59 + 0.9 - 1)/0.7 = 0.7, theta = 0.1.
    Sampling (CR2 with unit clusters = the sample covariance with N - 1):
      V_bb = 0.62*0.38/99, V_cc = 0.59*0.41/99, V_bc = (0.50 - 0.62*0.59)/99,
      V_samp = (V_cc + V_bb - 2 V_bc)/0.49 = 0.2091/(99*0.49).
    Calibration (pseudo = 0): [(0.6)^2 0.0018 + (0.4)^2 0.0032 + (0.7)^2 0.0032 + (0.3)^2 0.0018]/0.49
      = 0.00289/0.49.
    V = (0.2091/99 + 0.00289)/0.49; interval 0.1 +- t_{0.975, 99} sqrt(V)."""
    F = Fraction
    V = (F(2091, 10000) / 99 + F(289, 100000)) / F(49, 100)
    r = PLAIN.analyze(_unit_clusters(50, 12, 9, 29), 0.1, 0.025, calibration=CAL)
    t = stats.t.ppf(0.975, 99)
    assert r.estimate == pytest.approx(0.1, abs=1e-14)
    assert r.lower == pytest.approx(0.1 - t * math.sqrt(float(V)), rel=1e-13)
    assert r.upper == pytest.approx(0.1 + t * math.sqrt(float(V)), rel=1e-13)
    assert r.raw_estimate == pytest.approx(-0.03, abs=1e-15)
    # the judge-scale interval: the paired multinomial variance ((p10 + p01) - (p01 - p10)^2)/(N - 1)
    assert r.raw_lower == pytest.approx(-0.03 - t * math.sqrt((0.21 - 0.03 ** 2) / 99), rel=1e-13)
    assert r.sensitivity == (0.9, 0.8) and r.specificity == (0.8, 0.9) and r.calibration_items == (100, 100)
    assert r.status == "fail" and r.reason == ""   # lower -0.1005 < -0.1
    assert PLAIN.analyze(_unit_clusters(50, 12, 9, 29), 0.11, 0.025, calibration=CAL).status == "pass"


def test_published_example_rsurveillance_tp_normal():
    """A published worked example: the documentation of RSurveillance's ``tp()`` (true
    prevalence, Sergeant 2016, CRAN package RSurveillance 0.2.1, "Examples" and their output)
    gives for x = 20 positives of n = 120 with a test of known Se 0.9, Sp 0.99 the Rogan-Gladen
    estimate 0.17603 and the "normal" 95% interval [0.1011094, 0.2509506], i.e.
    ``est +- z_{0.975} sqrt(ap (1 - ap) / n) / J``.  Here: the candidate arm holds those 120
    one-trial results, the baseline passes every trial under a perfect judge, and the known
    Se and Sp are calibration sets of 10^8 items each (their variance is ~1e-8 of the
    sampling variance).  The method's estimate is that prevalence minus 1; its half-width,
    rescaled from t_{0.975, 119} and CR2's n - 1 to z and n, is the published one."""
    n, x = 120, 20
    tables = np.array([[1, 0, 0, 0]] * x + [[0, 1, 0, 0]] * (n - x))
    big = 10 ** 8
    cal = [[500, 0, 0, 500], [9 * big // 10, big // 10, big // 100, 99 * big // 100]]
    r = PLAIN.analyze(tables, 0.1, 0.025, calibration=cal)
    assert r.estimate + 1.0 == pytest.approx(0.17603, abs=5e-6)
    rescale = stats.norm.ppf(0.975) / stats.t.ppf(0.975, n - 1) * math.sqrt((n - 1) / n)
    half = (r.upper - r.lower) / 2 * rescale
    assert half == pytest.approx((0.2509506 - 0.1011094) / 2, abs=2e-7)
    assert r.estimate + 1.0 - half == pytest.approx(0.1011094, abs=5e-6)


def test_one_corrected_rate_has_the_rogan_gladen_variance():
    """Baseline always passes with a perfect judge (its arm contributes nothing): the
    interval's half-width is t sqrt([p(1-p)/(N-1) + pi^2 Var Se + (1-pi)^2 Var Sp] / J^2) --
    Rogan & Gladen's variance of a corrected proportion (CR2's N - 1 for N) plus the terms of
    estimated sensitivity and specificity."""
    N, passes = 80, 52
    tables = np.array([[1, 0, 0, 0]] * passes + [[0, 1, 0, 0]] * (N - passes))   # baseline passes every trial
    cal = [[500, 0, 0, 500], [70, 10, 8, 32]]
    se, sp = 70 / 80, 32 / 40
    p = passes / N
    J = se + sp - 1
    pi = (p + sp - 1) / J
    var = (p * (1 - p) / (N - 1) + pi ** 2 * se * (1 - se) / 80 + (1 - pi) ** 2 * sp * (1 - sp) / 40) / J ** 2
    r = PLAIN.analyze(tables, 0.2, 0.05, calibration=cal)
    t = stats.t.ppf(0.95, N - 1)
    assert r.estimate == pytest.approx(pi - 1.0, rel=1e-13)
    assert (r.upper - r.lower) / 2 == pytest.approx(t * math.sqrt(var), rel=1e-12)


def test_a_perfect_judge_gives_cluster_robusts_interval():
    rng = np.random.default_rng(5)
    cr = registry.get("cluster_robust")
    for _ in range(20):
        K = int(rng.integers(2, 30))
        t = rng.integers(0, 6, size=(3, K, 4)).astype(np.int32)
        cal = np.tile(np.array([[300, 0, 0, 200], [250, 0, 0, 100]], np.int32), (3, 1, 1))
        a = PLAIN.batch(t, 0.05, 0.025, calibration=cal)
        b = cr.batch(t, 0.05, 0.025)
        ok = np.isfinite(b.lower)
        assert np.array_equal(ok, np.isfinite(a.lower))
        np.testing.assert_allclose(a.lower[ok], b.lower[ok], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a.raw_lower[ok], b.lower[ok], rtol=0, atol=0)   # the raw interval is exactly it
        np.testing.assert_allclose(a.estimate, b.estimate, rtol=1e-13, atol=1e-15)
        assert np.array_equal(a.status, b.status)


# ---------------------------------------------------------------- 2. an independent slow implementation
def slow(tables, cal, margin, alpha, min_clusters=2, min_calibration=50, pseudo=2.0):
    """One replication, written from the formulas in matrix form: returns
    (estimate, lower, upper, status, raw_estimate, reason)."""
    t = np.asarray(tables, dtype=float)
    t = t[t.sum(axis=1) > 0]
    if t.shape[0] == 0:
        return math.nan, math.nan, math.nan, INCONCLUSIVE, math.nan, NO_TRIALS
    n = t.sum(axis=1)
    y = np.stack([t[:, 0] + t[:, 1], t[:, 0] + t[:, 2]], axis=1)   # judge passes: baseline, candidate
    N = n.sum()
    p = y.sum(axis=0) / N
    raw = p[1] - p[0]
    K = t.shape[0]
    sets = []
    for row in np.asarray(cal, dtype=float):
        pos, neg = row[0] + row[1], row[2] + row[3]
        if pos + neg < min_calibration:
            return math.nan, math.nan, math.nan, INCONCLUSIVE, raw, SMALL_CALIBRATION
        if pos == 0 or neg == 0:
            return math.nan, math.nan, math.nan, INCONCLUSIVE, raw, DEGENERATE_CALIBRATION
        se, sp = row[0] / pos, row[3] / neg
        if se + sp <= 1:
            return math.nan, math.nan, math.nan, INCONCLUSIVE, raw, NOT_IDENTIFIED
        ts, tp = (row[0] + pseudo) / (pos + 2 * pseudo), (row[3] + pseudo) / (neg + 2 * pseudo)
        sets.append((se, sp, ts * (1 - ts) / (pos + 2 * pseudo), tp * (1 - tp) / (neg + 2 * pseudo)))
    if len(sets) == 1:
        sets = sets * 2
    (se_b, sp_b, _, _), (se_c, sp_c, _, _) = sets
    Jb, Jc = se_b + sp_b - 1, se_c + sp_c - 1
    pib, pic = (p[0] + sp_b - 1) / Jb, (p[1] + sp_c - 1) / Jc
    est = pic - pib
    if K < max(2, min_clusters):
        return est, math.nan, math.nan, INCONCLUSIVE, raw, FEW_CLUSTERS
    e = y - n[:, None] * p[None, :]                       # ratio-estimator residuals per cluster
    w = 1.0 / (1.0 - n / N)                               # CR2 leverage correction
    Sigma = (e * w[:, None]).T @ e / N ** 2               # covariance of (p_b, p_c)
    g = np.array([-1 / Jb, 1 / Jc])
    var = g @ Sigma @ g
    if np.asarray(cal).shape[0] == 1:                      # d theta / d(Se, Sp) of the shared set
        h = np.array([-pic / Jc + pib / Jb, (1 - pic) / Jc - (1 - pib) / Jb])
        var += h @ np.diag(sets[0][2:]) @ h
    else:                                                  # (Se_b, Sp_b, Se_c, Sp_c)
        h = np.array([pib / Jb, -(1 - pib) / Jb, -pic / Jc, (1 - pic) / Jc])
        var += h @ np.diag(list(sets[0][2:]) + list(sets[1][2:])) @ h
    # a quadratic form of a covariance: >= 0, but where it is exactly 0 (both arms' judge passes
    # equal in every cluster, one shared set) the matrix products can round to -1e-35
    half = stats.t.ppf(1 - alpha, K - 1) * math.sqrt(max(var, 0.0))
    lo, up = est - half, est + half
    return est, lo, up, PASS if lo >= -margin else FAIL, raw, OK


def _random_batch(rng, R, K, arms):
    t = rng.integers(0, 5, size=(R, K, 4)).astype(np.int32)
    t[rng.random((R, K)) < 0.1] = 0                       # some empty clusters
    items = rng.integers(40, 400, size=(R, arms))
    pos = rng.binomial(items, 0.7)
    se = rng.uniform(0.55, 1.0, size=(R, arms))
    sp = rng.uniform(0.4, 1.0, size=(R, arms))
    h11 = rng.binomial(pos, se)
    h00 = rng.binomial(items - pos, sp)
    cal = np.stack([h11, pos - h11, items - pos - h00, h00], axis=2).astype(np.int32)
    return t, cal


@pytest.mark.parametrize("arms", [1, 2])
@pytest.mark.parametrize("pseudo", [0.0, 2.0])
def test_kernel_agrees_with_the_slow_implementation(arms, pseudo):
    rng = np.random.default_rng(100 + arms + int(pseudo))
    m = M.with_options(pseudo=pseudo)
    codes = set()
    for K in (1, 2, 3, 8, 25):
        t, cal = _random_batch(rng, 60, K, arms)
        r = m.batch(t, 0.05, 0.025, calibration=cal)
        for i in range(t.shape[0]):
            est, lo, up, st, raw, why = slow(t[i], cal[i], 0.05, 0.025, pseudo=pseudo)
            codes.add(why)
            assert int(r.reason[i]) == why and int(r.status[i]) == st, (K, i)
            for got, want in ((r.estimate[i], est), (r.lower[i], lo), (r.upper[i], up), (r.raw_estimate[i], raw)):
                if math.isnan(want):
                    assert math.isnan(got)
                else:
                    assert got == pytest.approx(want, rel=1e-10, abs=1e-12)
    assert {OK, FEW_CLUSTERS, SMALL_CALIBRATION} <= codes


# ---------------------------------------------------------------- 3. edge cases and refusals
EDGE = {"all pass": [[3, 0, 0, 0]] * 6, "all fail": [[0, 0, 0, 3]] * 6, "no discordant pairs": [[2, 0, 0, 1]] * 6,
        "every pair a loss": [[0, 3, 0, 0]] * 6, "an empty cluster": [[2, 1, 0, 0]] * 2 + [[0, 0, 0, 0]] + [[2, 1, 0, 0]] * 3}


@pytest.mark.parametrize("name", list(EDGE))
def test_edge_cases_agree_with_the_slow_implementation(name):
    for cal in (CAL, [CAL[0]], [[50, 0, 0, 50], [50, 0, 0, 50]]):
        r = M.analyze(EDGE[name], 0.1, 0.025, calibration=cal)
        est, lo, up, st, raw, why = slow(np.array(EDGE[name]), np.array(cal), 0.1, 0.025)
        assert r.status == {PASS: "pass", FAIL: "fail", INCONCLUSIVE: "inconclusive"}[st]
        assert r.lower == pytest.approx(lo, rel=1e-10) and r.estimate == pytest.approx(est, rel=1e-10, abs=1e-14)
        assert r.lower <= r.estimate <= r.upper


def test_a_perfect_calibration_still_carries_uncertainty_with_pseudo_counts():
    """All pass, judge right on every calibration item: the plain delta method collapses to a
    point (a Wald degeneracy), the pseudo-counts keep an interval."""
    cal = [[50, 0, 0, 50], [50, 0, 0, 50]]
    assert PLAIN.analyze(EDGE["all pass"], 0.1, calibration=cal).upper == PLAIN.analyze(
        EDGE["all pass"], 0.1, calibration=cal).lower
    r = M.analyze(EDGE["all pass"], 0.1, calibration=cal)
    assert r.upper - r.lower > 0.02


def test_one_cluster_and_no_trials_are_inconclusive():
    r = M.analyze([[5, 1, 2, 2]], 0.1, calibration=CAL)
    assert r.status == "inconclusive" and r.reason == REASONS[FEW_CLUSTERS] and math.isfinite(r.estimate)
    r = M.analyze([[0, 0, 0, 0]] * 4, 0.1, calibration=CAL)
    assert r.status == "inconclusive" and r.reason == REASONS[NO_TRIALS] and math.isnan(r.raw_estimate)


@pytest.mark.parametrize("cal,code", [
    ([[25, 25, 30, 20], CAL[1]], NOT_IDENTIFIED),         # baseline Se + Sp = 0.5 + 0.4 <= 1
    ([CAL[0], [20, 20, 30, 30]], NOT_IDENTIFIED),         # candidate Se + Sp = 0.5 + 0.5 = 1
    ([[20, 2, 3, 15], CAL[1]], SMALL_CALIBRATION),        # 40 < min_calibration = 50
    ([[60, 5, 0, 0], CAL[1]], DEGENERATE_CALIBRATION),    # no human-labelled fail: no specificity
    ([[0, 0, 10, 50]], DEGENERATE_CALIBRATION),           # shared set without a human pass
])
def test_an_unidentified_or_unregistered_correction_is_never_a_pass(cal, code):
    # a table that would pass by a wide margin on the judge scale
    table = [[8, 0, 2, 0]] * 40
    r = M.analyze(table, 0.5, calibration=cal)
    assert r.status == "inconclusive" and r.reason == REASONS[code] and not r.passed
    assert math.isnan(r.lower) and math.isnan(r.estimate) and r.raw_estimate == pytest.approx(0.2)
    assert math.isfinite(r.raw_lower)   # the judge-scale figures are still reported


def test_the_registered_minimum_is_an_option():
    table = [[8, 0, 2, 0]] * 40
    small = [[20, 2, 3, 15], CAL[1]]
    assert M.with_options(min_calibration=40).analyze(table, 0.5, calibration=small).reason == ""
    assert M.with_options(min_calibration=41).analyze(table, 0.5, calibration=small).reason == \
        REASONS[SMALL_CALIBRATION]


@pytest.mark.parametrize("cal,match", [
    (None, "needs the judge's calibration counts"),
    ([[1, 2, 3]], "shape"),
    ([[1, 2, 3, 4]] * 3, "shape"),
    ([[45, 5, 10, 40], [40, -1, 5, 45]], r"calibration set 1 \(candidate\): counts must be >= 0"),
    ([[45.5, 5, 10, 40], [40, 10, 5, 45]], r"calibration set 0 \(baseline\): counts must be whole"),
    ([["a", 1, 2, 3]], "numbers"),
])
def test_bad_calibration_input_is_a_clear_error(cal, match):
    with pytest.raises(ValueError, match=match):
        M.analyze([[5, 1, 2, 2]] * 3, 0.1, calibration=cal)


def test_bad_batch_input_and_options_are_clear_errors():
    t = np.zeros((3, 4, 4), np.int32) + 1
    with pytest.raises(ValueError, match="3 replications"):
        M.batch(t, 0.1, calibration=np.zeros((2, 2, 4), np.int32))
    with pytest.raises(ValueError, match=r"row 1, set 0 \(baseline\)"):
        bad = np.ones((3, 2, 4), np.int32)
        bad[1, 0, 2] = -3
        M.batch(t, 0.1, calibration=bad)
    with pytest.raises(ValueError, match="integers"):
        M.batch(t, 0.1, calibration=np.ones((3, 2, 4)))
    with pytest.raises(ValueError, match="min_calibration"):
        M.with_options(min_calibration=0).batch(t, 0.1, calibration=np.ones((3, 2, 4), np.int32))
    with pytest.raises(ValueError, match="pseudo"):
        M.with_options(pseudo=-1).batch(t, 0.1, calibration=np.ones((3, 2, 4), np.int32))
    with pytest.raises(ValueError, match="look schedule"):
        M.decide(t, 0.1, 0.025, schedule=object(), calibration=np.ones((3, 2, 4), np.int32))


# ---------------------------------------------------------------- protocol
def test_it_conforms_and_is_listed_only_where_calibration_can_be_given():
    assert isinstance(M, JudgeFixedMethod) and needs_calibration(M) and M.kind == "fixed"
    report = check_method(M)
    assert "estimand" in report.passed and "analyze" in report.passed
    assert "judge_corrected" not in registry.names() and "judge_corrected" not in registry.names("fixed")
    assert "judge_corrected" in registry.names("fixed", inputs=("tables", "judge_calibration"))
    assert "judge_corrected" in registry.names(inputs=None)


def test_the_conformance_check_catches_an_uncorrected_judge_method():
    """Reporting the judge-scale difference as the estimate misses the true difference under
    label noise: the estimand check (which simulates noisy judges) fails it."""
    import dataclasses

    def raw_kernel(tables, cal, margin, consts, lower, upper, estimate, status, raw_estimate, raw_lower, raw_upper,
                   reason):
        M.kernel(tables, cal, margin, consts, lower, upper, estimate, status, raw_estimate, raw_lower, raw_upper,
                 reason)
        estimate[:] = raw_estimate
        lower[:] = np.where(np.isnan(lower), np.nan, np.minimum(lower, raw_estimate))
        upper[:] = np.where(np.isnan(upper), np.nan, np.maximum(upper, raw_estimate))
    with pytest.raises(MethodCheckError, match="estimand"):
        check_method(dataclasses.replace(M, name="judge_raw", kernel=raw_kernel))


def test_forcing_candidate_fails_on_failed_deterministic_checks_biases_against_the_candidate():
    """The documented effect of recording a candidate trial as a fail because a deterministic
    check failed (whatever the judge said): the corrected candidate rate moves by exactly
    -f (1 - Sp_c) / J_c (expected counts, exact calibration), so the forcing cannot make a
    pass; without it the correction recovers the truth.  Baseline passes every trial with a
    perfect judge; candidate: 10% of trials fail a deterministic check (true fails), the
    other 90% pass with probability 0.8; the judge has Se 0.95, Sp 0.7 on the candidate."""
    f, se, sp = 0.1, 0.95, 0.7
    J = se + sp - 1
    truth = (1 - f) * 0.8 - 1.0            # candidate 0.72 minus baseline 1
    cal = [[500, 0, 0, 500], [950, 50, 300, 700]]
    judged = 0.9 * (0.8 * se + 0.2 * (1 - sp)) * 1000   # judge passes per 1000 among the judged trials
    forced = np.array([[round(judged), 1000 - round(judged), 0, 0]] * 10)                # forced fails recorded
    plain = np.array([[round(judged + 100 * (1 - sp)), 1000 - round(judged + 100 * (1 - sp)), 0, 0]] * 10)
    assert PLAIN.analyze(plain, 0.1, calibration=cal).estimate == pytest.approx(truth, abs=1e-12)
    assert PLAIN.analyze(forced, 0.1, calibration=cal).estimate == pytest.approx(truth - f * (1 - sp) / J, abs=1e-12)
