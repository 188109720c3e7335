"""Sequential methods: each validated against a published example (or a statement that none
exists), an independent slow implementation written from the paper, and edge cases; the
batch kernel and ``analyze`` agree exactly.  Also the fixed ``binomial_loss`` test the
seed's wrappers run."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from methods import registry
from methods.protocol import INCONCLUSIVE, PASS
from methods.sequential import _spending
from methods.sequential.base import (LOOK_CONTINUE, LOOK_HARM, LOOK_PROMOTE, NO_PROMOTION, PROMOTE, STOP_HARM,
                                     LookSchedule)

SEQ = ["fixed_final", "repeated_fixed", "bonferroni", "likelihood_ratio", "alpha_spending", "msprt", "betting_cs"]
HYP = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables_and_looks(draw, max_k=40, max_n=4):
    K = draw(st.integers(1, max_k))
    cells = draw(st.lists(st.lists(st.integers(0, max_n), min_size=4, max_size=4), min_size=K, max_size=K))
    t = np.asarray(cells, dtype=np.int32)
    # thin out: make many clusters single-trial and some empty, as in the designs studied
    mask = draw(st.lists(st.integers(0, 3), min_size=K, max_size=K))
    for k, m in enumerate(mask):
        if m == 0:
            t[k] = 0
        elif m == 1:
            t[k] = 0
            t[k, draw(st.integers(0, 3))] = 1
    looks = sorted(set(draw(st.lists(st.integers(1, K), min_size=1, max_size=6))))
    return t, looks


def cluster_diffs(t):
    n = t.sum(axis=1)
    keep = n > 0
    return (t[keep, 2] - t[keep, 1]) / n[keep]


# ---------------------------------------------------------------- binomial_loss (fixed)
def test_binomial_loss_seed_worked_example():
    # Seed chapter, Sequential Decisions Lab: the exact binomial test of the loss rate against
    # margin 0.03 at alpha 0.05.  No losses in 100 trials: P(X <= 0 | 100, 0.03) = 0.97**100 =
    # 0.0476 <= 0.05 -> pass; no losses in 50 trials: 0.97**50 = 0.218 -> fail.
    m = registry.get("binomial_loss")
    pass100 = m.analyze([[100, 0, 0, 0]], 0.03, 0.05)
    fail50 = m.analyze([[50, 0, 0, 0]], 0.03, 0.05)
    assert pass100.status == "pass" and fail50.status == "fail"
    # Clopper-Pearson at x = 0: U = 1 - alpha^(1/n) (closed form)
    assert pass100.lower == pytest.approx(-(1 - 0.05 ** (1 / 100)), abs=1e-12)
    assert 0.97 ** 100 <= 0.05 < 0.97 ** 50


@HYP
@given(tables_and_looks(max_k=30, max_n=30), st.sampled_from([0.8, 0.9, 0.95, 0.99]),
       st.sampled_from([0.01, 0.03, 0.1, 0.2]))
def test_binomial_loss_matches_scipy(data, confidence, margin):
    t, _ = data
    m = registry.get("binomial_loss")
    r = m.batch(t[None], margin, (1 - confidence) / 2)
    n = int(t.sum())
    x = int(t[:, 1].sum())
    a = (1 - confidence) / 2
    if n == 0:
        assert r.status[0] == INCONCLUSIVE and math.isnan(r.lower[0])
        return
    u = stats.beta.ppf(1 - a, x + 1, n - x) if x < n else 1.0
    lo = stats.beta.ppf(a, x, n - x + 1) if x > 0 else 0.0
    assert r.lower[0] == pytest.approx(-u, abs=1e-9)
    assert r.upper[0] == pytest.approx(-lo, abs=1e-9)
    assert r.estimate[0] == pytest.approx(-x / n, abs=1e-15)
    p = stats.binomtest(x, n, margin, alternative="less").pvalue
    if abs(p - a) > 1e-9:
        assert (r.status[0] == PASS) == (p <= a)


def test_binomial_loss_edges():
    m = registry.get("binomial_loss")
    for table in ([[0, 0, 0, 0]], [[1, 0, 0, 0]], [[0, 1, 0, 0]], [[0, 0, 0, 5]] * 3, [[0, 7, 0, 0]],
                  [[3, 0, 0, 0], [0, 0, 0, 0]], [[0, 0, 4, 0]]):
        r = m.analyze(table, 0.03, 0.05)
        if r.status == "pass":
            assert math.isfinite(r.lower) and r.lower >= -0.03
    assert m.analyze([[0, 0, 0, 0]], 0.03, 0.05).status == "inconclusive"
    assert m.analyze([[0, 7, 0, 0]], 0.03, 0.05).lower == -1.0


# ---------------------------------------------------------------- look schedules
def test_schedule_validation_errors():
    with pytest.raises(ValueError, match="strictly increasing"):
        LookSchedule(looks=(50, 50))
    with pytest.raises(ValueError, match=r"looks\[2\] = 100 does not exceed looks\[1\] = 150"):
        LookSchedule(looks=(50, 150, 100))
    with pytest.raises(ValueError, match="at least one look"):
        LookSchedule(looks=())
    with pytest.raises(ValueError, match=r"looks\[0\] = 0 must be >= 1"):
        LookSchedule(looks=(0, 5))
    with pytest.raises(ValueError):
        LookSchedule(looks=(1.5, 3))
    with pytest.raises(ValueError):
        LookSchedule(looks=(5,), unit="days")
    with pytest.raises(ValueError, match="comma-separated"):
        LookSchedule.parse("a,b")
    assert LookSchedule.parse("50:500:50").looks == tuple(range(50, 501, 50))
    m = registry.get("repeated_fixed")
    with pytest.raises(ValueError, match="needs 60 clusters but the tables hold K = 50"):
        m.batch(np.zeros((2, 50, 4), np.int32), LookSchedule(looks=(10, 60)), 0.03)
    with pytest.raises(ValueError, match="alpha_spending.*clusters"):
        registry.get("alpha_spending").batch(np.ones((1, 5, 4), np.int32), LookSchedule(looks=(4,), unit="trials"),
                                             0.03)


def test_trial_schedule_ends():
    t = np.zeros((1, 6, 4), np.int32)
    t[0, :, 0] = [3, 0, 2, 4, 1, 1]  # cumulative trials 3,3,5,9,10,11
    ends = LookSchedule(looks=(3, 4, 9, 20), unit="trials").look_ends(t)
    assert ends.tolist() == [[1, 3, 4, 6]]


# ---------------------------------------------------------------- wrappers
@HYP
@given(tables_and_looks(), st.sampled_from([0.05, 0.1]))
def test_wrappers_are_the_fixed_test_per_look(data, alpha):
    t, looks = data
    sch = LookSchedule(looks=tuple(looks))
    L = len(looks)
    for name, level, which in (("repeated_fixed", alpha, range(L)), ("bonferroni", alpha / L, range(L)),
                               ("fixed_final", alpha, [L - 1])):
        for inner in ("binomial_loss", "clustered_normal"):
            m = registry.get(name).with_inner(inner)
            fixed = registry.get(inner)
            r = m.batch(t[None], sch, 0.05, alpha)
            expect_stop, expect_dec = L - 1, NO_PROMOTION
            for j in which:
                f = fixed.batch(t[None, :looks[j]], 0.05, level)
                assert (r.look_status[0, j] == LOOK_PROMOTE) == (f.status[0] == PASS)
                if f.status[0] == PASS and expect_dec == NO_PROMOTION:
                    expect_stop, expect_dec = j, PROMOTE
            assert r.decision[0] == expect_dec and r.stop_look[0] == expect_stop


def test_wrapper_rejects_non_fixed_inner():
    with pytest.raises(ValueError, match="wraps fixed-sample methods"):
        registry.get("repeated_fixed").with_inner(registry.get("msprt"))
    with pytest.raises(ValueError, match="does not wrap"):
        registry.get("msprt").with_inner("binomial_loss")


# ---------------------------------------------------------------- likelihood_ratio
def lr_reference(t, looks, alpha, margin, p1):
    """Seed rule from the chapter: log LR = x log(p1/p0) + (n - x) log((1-p1)/(1-p0))."""
    c = math.log(1 / alpha)
    out = []
    for e in looks:
        n = int(t[:e].sum())
        x = int(t[:e, 1].sum())
        if n == 0:
            out.append((LOOK_CONTINUE, math.nan))
            continue

        def f(p0):
            return x * math.log(p1 / p0) + (n - x) * math.log((1 - p1) / (1 - p0)) - c
        lo = max(p1, x / n)
        if x == n or f(1 - 1e-15) < 0:
            u = 1.0
        else:
            u = optimize.brentq(f, lo, 1 - 1e-15, xtol=1e-15, rtol=1e-15)
        out.append((LOOK_PROMOTE if f(margin) >= 0 else LOOK_CONTINUE, -u))
    return out


@HYP
@given(tables_and_looks(max_k=60, max_n=20), st.sampled_from([0.05, 0.01]), st.sampled_from([0.03, 0.1]))
def test_likelihood_ratio_matches_reference(data, alpha, margin):
    t, looks = data
    m = registry.get("likelihood_ratio").with_options(alternative=margin / 3)
    r = m.evaluate_looks(t[None], LookSchedule(looks=tuple(looks)).look_ends(t[None]),
                         LookSchedule(looks=tuple(looks)), margin, alpha)
    for j, (s, b) in enumerate(lr_reference(t, looks, alpha, margin, margin / 3)):
        assert r[0][0, j] == s
        if math.isnan(b):
            assert math.isnan(r[1][0, j])
        else:
            assert r[1][0, j] == pytest.approx(b, abs=1e-6)
            assert (r[0][0, j] == LOOK_PROMOTE) == (r[1][0, j] >= -margin)


def test_likelihood_ratio_rejects_bad_alternative():
    with pytest.raises(ValueError, match="alternative"):
        registry.get("likelihood_ratio").with_options(alternative=0.05).batch(
            np.ones((1, 5, 4), np.int32), LookSchedule(looks=(5,)), 0.03)


# ---------------------------------------------------------------- alpha_spending
# Published boundaries.  rpact unit tests (rpact-com/rpact, tests/testthat/
# test-f_design_group_sequential.R, getDesignGroupSequential / getDesignInverseNormal, sided = 1,
# non-binding futility, which does not move the efficacy bounds), compared with rpact's own
# tolerance (1e-7 relative); and the rpact summary printed in the rpact MCP 2025 slides
# (asOF, kMax = 3, alpha = 0.025, equal spacing: 3.710, 2.511, 1.993, three decimals).
RPACT = [
    ("pocock", 0.13, (0.35, 0.7, 1.0), 0.0, (1.5446617, 1.4828682, 1.4620058)),
    ("pocock", 0.025, (0.4, 0.7), 0.0, (2.223875, 2.3050796)),
    ("obf", 0.13, (0.4, 0.75, 1.0), 0.0, (2.1280732, 1.4368565, 1.2468994)),
    ("obf", 0.13, (0.4, 0.75, 0.85, 1.0), 0.0, (2.1280732, 1.4368565, 1.422873, 1.2970881)),
    ("hsd", 0.03, (0.2, 0.4, 1.0), 0.0, (2.5121443, 2.4228747, 2.0280392)),
    ("hsd", 0.07, (0.2, 0.4, 1.0), -1.0, (2.364813, 2.1928805, 1.5660474)),
]


@pytest.mark.parametrize("kind,alpha,t,gamma,ref", RPACT)
def test_spending_boundaries_reproduce_rpact(kind, alpha, t, gamma, ref):
    b = _spending.upper_bounds(kind, alpha, t, gamma)
    np.testing.assert_allclose(b, ref, rtol=1e-7, atol=0)


def test_spending_boundaries_reproduce_printed_obf():
    b = _spending.upper_bounds("obf", 0.025, (1 / 3, 2 / 3, 1.0))
    np.testing.assert_array_equal(np.round(b, 3), [3.710, 2.511, 1.993])


def test_spending_boundaries_spend_alpha_by_multivariate_normal():
    # independent check: P(first crossing at k) from scipy's multivariate normal CDF (Genz)
    t = np.array([0.25, 0.6, 1.0])
    for kind, gamma in (("obf", 0.0), ("pocock", 0.0), ("hsd", -2.0)):
        b = _spending.upper_bounds(kind, 0.05, t, gamma)
        cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
        cum = []
        for k in range(1, 4):
            mvn = stats.multivariate_normal(mean=np.zeros(k), cov=cov[:k, :k], abseps=1e-9, releps=1e-9,
                                            maxpts=2_000_000)
            cum.append(1 - mvn.cdf(b[:k]))
        np.testing.assert_allclose(cum, _spending.spending(kind, 0.05, t, gamma), atol=2e-6)


def test_spending_errors():
    with pytest.raises(ValueError, match="unknown spending"):
        _spending.upper_bounds("linear", 0.05, (0.5, 1.0))
    with pytest.raises(ValueError, match="strictly increasing"):
        _spending.upper_bounds("obf", 0.05, (0.5, 0.5))
    with pytest.raises(ValueError, match="spending must be"):
        registry.get("alpha_spending").with_options(spending=7).batch(
            np.ones((1, 5, 4), np.int32), LookSchedule(looks=(5,)), 0.03)
    with pytest.raises(ValueError, match="must be one of"):
        registry.get("alpha_spending").with_options(spending="linear")


def gsd_reference(t, looks, alpha, margin, eff, harm):
    out = []
    for j, e in enumerate(looks):
        d = cluster_diffs(t[:e])
        k = d.size
        if k < 2 or np.var(d) == 0:
            out.append((LOOK_CONTINUE, math.nan))
            continue
        se = np.std(d, ddof=1) / math.sqrt(k)
        low = d.mean() - eff[j] * se
        if low >= -margin:
            out.append((LOOK_PROMOTE, low))
        elif d.mean() + harm[j] * se < -margin:
            out.append((LOOK_HARM, low))
        else:
            out.append((LOOK_CONTINUE, low))
    return out


@HYP
@given(tables_and_looks(), st.sampled_from(["obf", "pocock", "hsd"]), st.sampled_from([0.0, 0.1]))
def test_alpha_spending_matches_reference(data, spending, harm_alpha):
    t, looks = data
    sch = LookSchedule(looks=tuple(looks))
    m = registry.get("alpha_spending").with_options(spending=spending, gamma=-2.0, harm_alpha=harm_alpha)
    tf = sch.information_fractions()
    eff = _spending.upper_bounds(spending, 0.05, tf, -2.0)
    harm = _spending.upper_bounds(spending, harm_alpha, tf, -2.0) if harm_alpha else np.full(len(looks), np.inf)
    status, bound, _ = m.evaluate_looks(t[None], sch.look_ends(t[None]), sch, 0.1, 0.05)
    for j, (s, b) in enumerate(gsd_reference(t, looks, 0.05, 0.1, eff, harm)):
        if math.isnan(b):
            assert status[0, j] == LOOK_CONTINUE and math.isnan(bound[0, j])
            continue
        assert bound[0, j] == pytest.approx(b, abs=1e-12)
        if abs(b + 0.1) > 1e-12:
            assert status[0, j] == s


def test_alpha_spending_stops_for_harm():
    t = np.zeros((1, 40, 4), np.int32)
    t[0, :, 1] = 1           # every cluster a loss ...
    t[0, ::4, 1] = 0         # ... except every fourth, a tie: mean difference -0.75
    t[0, ::4, 0] = 1
    m = registry.get("alpha_spending").with_options(harm_alpha=0.05)
    r = m.batch(t, LookSchedule(looks=(10, 20, 40)), 0.03)
    assert r.decision[0] == STOP_HARM and r.stop_look[0] == 0


# ---------------------------------------------------------------- msprt
def msprt_reference(t, looks, alpha, margin, tau):
    """Johari et al. normal-mixture mSPRT: reject theta0 when Lambda_n(theta0) >= 1/alpha;
    the lower end of {theta0: Lambda < 1/alpha} root-found with brentq."""
    out = []
    for e in looks:
        d = cluster_diffs(t[:e])
        n = d.size
        if n < 2 or np.all(d == d[0]):  # zero variance, decided exactly (np.var can leave round-off)
            out.append((LOOK_CONTINUE, math.nan))
            continue
        s2 = np.var(d, ddof=1)
        ybar = d.mean()

        def log_lam(theta):
            return 0.5 * math.log(s2 / (s2 + n * tau ** 2)) + \
                n ** 2 * tau ** 2 * (ybar - theta) ** 2 / (2 * s2 * (s2 + n * tau ** 2))
        g = lambda th: log_lam(th) - math.log(1 / alpha)  # noqa: E731
        low = optimize.brentq(g, ybar - 100.0, ybar, xtol=1e-14, rtol=1e-15)
        out.append((LOOK_PROMOTE if low >= -margin else LOOK_CONTINUE, low))
    return out


@HYP
@given(tables_and_looks(), st.sampled_from([0.05, 0.1]), st.sampled_from([0.0, 0.2]))
def test_msprt_matches_reference(data, alpha, tau):
    t, looks = data
    sch = LookSchedule(looks=tuple(looks))
    m = registry.get("msprt").with_options(tau=tau)
    status, bound, _ = m.evaluate_looks(t[None], sch.look_ends(t[None]), sch, 0.05, alpha)
    for j, (s, b) in enumerate(msprt_reference(t, looks, alpha, 0.05, tau or 0.05)):
        if math.isnan(b):
            assert math.isnan(bound[0, j]) and status[0, j] == LOOK_CONTINUE
            continue
        assert bound[0, j] == pytest.approx(b, abs=1e-9)
        if abs(b + 0.05) > 1e-9:
            assert status[0, j] == s


# ---------------------------------------------------------------- betting_cs
def betting_reference(t, looks, alpha, margin, c=0.5):
    """Waudby-Smith & Ramdas (2024): predictable plug-in bets, truncated at c / m, and the '+'
    half of the hedged capital process."""
    d = []
    ends = []
    for e in looks:
        d = cluster_diffs(t[:e])
        ends.append(d.size)
    x = (d + 1) / 2
    lam = []
    sig2, s, ss = 0.25, 0.0, 0.0
    for i, xi in enumerate(x, start=1):
        lam.append(math.sqrt(2 * math.log(1 / alpha) / (sig2 * i * math.log(1 + i))))
        s += xi
        mu = (0.5 + s) / (i + 1)
        ss += (xi - mu) ** 2
        sig2 = (0.25 + ss) / (i + 1)
    thr = math.log(1 / alpha)
    out = []
    for n in ends:
        if n == 0:
            out.append((LOOK_CONTINUE, math.nan))
            continue

        def logk(m):
            return sum(math.log1p(min(lam[i], c / m if m > 0 else math.inf) * (x[i] - m)) for i in range(n))
        m0 = (1 - margin) / 2
        status = LOOK_PROMOTE if logk(m0) >= thr else LOOK_CONTINUE
        if logk(0.0) < thr:
            low = 0.0
        else:
            low = optimize.brentq(lambda m: logk(m) - thr, 0.0, 1.0, xtol=1e-14, rtol=1e-15)
        out.append((status, 2 * low - 1))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_looks(max_k=80), st.sampled_from([0.05, 0.2]))
def test_betting_cs_matches_reference(data, alpha):
    t, looks = data
    sch = LookSchedule(looks=tuple(looks))
    m = registry.get("betting_cs").with_options(all_bounds=1)
    status, bound, _ = m.evaluate_looks(t[None], sch.look_ends(t[None]), sch, 0.2, alpha)
    for j, (s, b) in enumerate(betting_reference(t, looks, alpha, 0.2)):
        if math.isnan(b):
            assert math.isnan(bound[0, j])
            continue
        assert bound[0, j] == pytest.approx(b, abs=1e-9)
        if abs(b + 0.2) > 1e-9:
            assert status[0, j] == s


def test_betting_cs_promotes_on_strong_evidence():
    # no published worked example with numbers exists for this one-sided use; a candidate that
    # wins every cluster is promoted early, one that loses every cluster never is
    t = np.zeros((1, 200, 4), np.int32)
    t[0, :, 2] = 1
    r = registry.get("betting_cs").batch(t, LookSchedule(looks=(10, 20, 50, 200)), 0.03)
    assert r.decision[0] == PROMOTE and r.stop_look[0] <= 1
    t[0, :, 2] = 0
    t[0, :, 1] = 1
    r = registry.get("betting_cs").batch(t, LookSchedule(looks=(10, 20, 50, 200)), 0.03)
    assert r.decision[0] == NO_PROMOTION and r.bound[0] == -1.0


# ---------------------------------------------------------------- every method: analyze == batch, edges
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tables_and_looks(max_k=30), min_size=3, max_size=3))
def test_analyze_equals_batch(cases):
    K = max(t.shape[0] for t, _ in cases)
    looks = tuple(sorted(set(cases[0][1])))
    tabs = np.zeros((3, K, 4), np.int32)
    for i, (t, _) in enumerate(cases):
        tabs[i, :t.shape[0]] = t
    sch = LookSchedule(looks=looks)
    for name in SEQ:
        m = registry.get(name)
        r = m.batch(tabs, sch, 0.05, 0.05)
        for i in range(3):
            a = m.analyze(tabs[i], sch, 0.05, 0.05)
            assert a.decision == {0: "no_promotion", 1: "promote", 3: "stop_for_harm"}[int(r.decision[i])]
            assert a.stop_look == r.stop_look[i]
            assert a.clusters == r.clusters[i] and a.trials == r.trials[i]
            assert (math.isnan(a.bound) and math.isnan(r.bound[i])) or a.bound == r.bound[i]


EDGE_TABLES = {
    "all tie pass": [[1, 0, 0, 0]] * 30,
    "all fail": [[0, 0, 0, 1]] * 30,
    "all losses": [[0, 1, 0, 0]] * 30,
    "all wins": [[0, 0, 1, 0]] * 30,
    "zero discordant, several trials": [[3, 0, 0, 2]] * 30,
    "one cluster one trial": [[1, 0, 0, 0]],
    "empty clusters": [[0, 0, 0, 0], [2, 0, 1, 0], [0, 0, 0, 0], [1, 1, 0, 0]] * 8,
    "every cluster empty": [[0, 0, 0, 0]] * 5,
}


@pytest.mark.parametrize("name", SEQ)
@pytest.mark.parametrize("case", list(EDGE_TABLES))
def test_edge_cases_never_promote_with_nan(name, case):
    t = np.asarray(EDGE_TABLES[case], np.int32)
    K = t.shape[0]
    looks = tuple(sorted({max(1, K // 3), K}))
    m = registry.get(name)
    res = m.analyze(t, LookSchedule(looks=looks), 0.03, 0.05)
    assert res.decision in ("promote", "no_promotion", "stop_for_harm")
    if res.promoted:
        assert math.isfinite(res.bound) and res.bound >= -0.03
    for s, b in zip(res.look_status, res.look_bound):
        if s == "promote":
            assert b is not None and math.isfinite(b) and b >= -0.03
    if case == "all losses":
        assert not res.promoted
    if case == "every cluster empty":
        assert res.decision == "no_promotion" and res.trials == 0


def test_analyze_in_progress_continues():
    t = [[1, 0, 0, 0]] * 120
    res = registry.get("repeated_fixed").analyze(t, LookSchedule(looks=(50, 100, 150)), 0.03, 0.05)
    # 0 losses in 100 -> promoted at look 2 although the last look (150) is not reached
    assert res.decision == "promote" and res.stop_look == 1 and res.looks_reached == 2
    res = registry.get("repeated_fixed").analyze(t[:60], LookSchedule(looks=(50, 100, 150)), 0.03, 0.05)
    assert res.decision == "continue" and res.stop_look is None and res.looks_reached == 1
    assert res.as_dict()["stop_at"] is None


def test_identity_includes_wrapped_method():
    a = registry.get("repeated_fixed")
    b = a.with_inner("clustered_normal")
    assert a.identity.source_sha256 != b.identity.source_sha256
    assert b.identity.name == "repeated_fixed[clustered_normal]"
    assert a.identity == registry.get("repeated_fixed").identity
    assert registry.names("sequential") == sorted(SEQ)
