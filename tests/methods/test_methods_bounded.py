"""The new cluster-level methods that need no variance estimate to be positive:
``betting_ci``, ``empirical_bernstein`` (bounded-mean intervals, Waudby-Smith & Ramdas 2024)
and ``clustered_score`` (score interval with the variance under the null).

Validated three ways (project rules): analytic values (one-cluster betting bound in closed
form; Tango's no-discordance bound), agreement with the slow references of
``methods.reference.bounded`` on random clustered tables (hypothesis), and edge cases.  Their
level is checked by Monte Carlo at the non-inferiority boundary of skewed, strongly clustered
designs, with a tolerance of 4 Monte Carlo standard errors."""
from __future__ import annotations

from simlab.hashing import is_hash
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from methods import registry
from methods.protocol import INCONCLUSIVE, PASS, Estimand
from methods.reference import bounded as ref
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario

NEW = ["betting_ci", "empirical_bernstein", "clustered_score"]
HYP = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
tables_st = st.lists(st.tuples(*[st.integers(0, 4)] * 4), min_size=1, max_size=25)


@pytest.mark.parametrize("name, estimand", [("betting_ci", Estimand.CLUSTER), ("empirical_bernstein", Estimand.CLUSTER),
                                            ("clustered_score", Estimand.TRIAL)])
def test_registered_with_estimand_citation_identity(name, estimand):
    m = registry.get(name)
    assert name in registry.names("fixed")
    assert m.kind == "fixed" and m.estimand is estimand and m.citation and m.summary
    assert is_hash(m.identity.source_sha256)
    if "truncation" in m.options:
        assert m.with_options(truncation=0.75).identity.source_sha256 != m.identity.source_sha256
        with pytest.raises(ValueError, match="truncation"):
            m.with_options(truncation=1.0).analyze([[1, 0, 0, 0]], 0.03)


# ---------------------------------------------------------------- analytic values


@pytest.mark.parametrize("row, x", [([0, 0, 3, 0], 1.0), ([1, 0, 2, 0], 5.0 / 6.0), ([2, 0, 0, 1], 0.5)])
def test_betting_one_cluster_closed_form(row, x):
    """n = 1: the only bet is lambda_1 = sqrt(2 log(1/alpha) / (1/4)), truncated at c/m, so
    K_1(m) = 1 + min(lambda_1, c/m)(x - m) <= 1 + lambda_1 x - c.  At 95% (alpha = 0.025) that is
    below 1/alpha = 40 for every x: one cluster gives [-1, 1].  At alpha = 0.25 (the 50% interval,
    1/alpha = 4) the capital reaches 4 on the untruncated branch, at m = x - 3/lambda_1 when that is
    <= c/lambda_1 (true for these x): L = max(0, x - 3/lambda_1)."""
    m = registry.get("betting_ci")
    r = m.analyze([row], 0.03)
    assert (r.lower, r.upper) == (-1.0, 1.0)
    lam = math.sqrt(8.0 * math.log(4.0))
    L = max(0.0, x - 3.0 / lam)
    assert L <= 0.5 / lam
    r = m.analyze([row], 0.03, alpha=0.25)
    assert r.lower == pytest.approx(2.0 * L - 1.0, abs=1e-11)
    assert r.upper == pytest.approx(1.0 - 2.0 * max(0.0, (1.0 - x) - 3.0 / lam), abs=1e-11)


def test_clustered_score_no_discordance_is_tangos_bound():
    """One trial per cluster, no discordant pairs: the model variance N|delta|(1-|delta|) exceeds the
    robust N delta^2, so the bounds are Tango's +-z^2 / (N + z^2) (Tango 1998, no-discordance case)."""
    z = stats.norm.isf(0.025)
    for N in (30, 90):
        t = np.zeros((N, 4), int)
        t[:, 0] = 1
        r = registry.get("clustered_score").analyze(t, 0.03)
        assert r.lower == pytest.approx(-z * z / (N + z * z), abs=1e-10)
        assert r.upper == pytest.approx(z * z / (N + z * z), abs=1e-10)


# ---------------------------------------------------------------- slow references


@pytest.mark.parametrize("name", NEW)
@HYP
@given(rows=tables_st, margin=st.sampled_from([0.03, 0.1, 0.3]))
def test_kernel_matches_reference(name, rows, margin):
    t = np.array(rows, dtype=np.int64)
    got = registry.get(name).analyze(t, margin)
    lo, hi, est, status = getattr(ref, name)(t, margin)
    if math.isnan(est):
        assert got.status == "inconclusive" and math.isnan(got.estimate)
        return
    assert got.estimate == pytest.approx(est, abs=1e-12)
    assert got.lower == pytest.approx(lo, abs=1e-8)
    assert got.upper == pytest.approx(hi, abs=1e-8)
    if abs(lo + margin) > 1e-8:
        assert got.status == status


@HYP
@given(rows=tables_st, floor=st.sampled_from([0.1, 0.5, 1.0]))
def test_clustered_score_icc_floor_matches_reference(rows, floor):
    t = np.array(rows, dtype=np.int64)
    got = registry.get("clustered_score").with_options(icc_floor=floor).analyze(t, 0.05)
    lo, hi, est, status = ref.clustered_score(t, 0.05, icc_floor=floor)
    if math.isnan(est):
        assert got.status == "inconclusive"
        return
    assert (got.lower, got.upper) == (pytest.approx(lo, abs=1e-8), pytest.approx(hi, abs=1e-8))
    assert got.lower <= registry.get("clustered_score").analyze(t, 0.05).lower + 1e-12  # a floor only widens
    if abs(lo + 0.05) > 1e-8:
        assert got.status == status


def test_clustered_score_bad_icc_floor():
    with pytest.raises(ValueError, match="icc_floor"):
        registry.get("clustered_score").with_options(icc_floor=1.5).analyze([[1, 0, 0, 0]], 0.03)


# ---------------------------------------------------------------- edge cases


@pytest.mark.parametrize("name", NEW)
def test_edge_cases(name):
    m = registry.get(name)
    all_pass = np.tile([3, 0, 0, 0], (30, 1))
    all_fail = np.tile([0, 0, 0, 3], (30, 1))
    ties = np.tile([1, 0, 0, 2], (30, 1))
    for t in (all_pass, all_fail, ties):  # zero discordant pairs: positive width, no zero-variance pass
        r = m.analyze(t, 0.03)
        assert r.estimate == 0.0 and r.lower < -0.03 < 0.03 < r.upper and r.status == "fail"
    losses = np.tile([0, 3, 0, 0], (30, 1))
    r = m.analyze(losses, 0.03)
    assert r.lower == pytest.approx(-1.0, abs=1e-9) and r.status == "fail"
    wins = np.tile([0, 0, 3, 0], (300, 1))
    r = m.analyze(wins, 0.03)
    assert r.status == "pass" and r.upper == pytest.approx(1.0, abs=1e-9)
    one = m.analyze([[2, 0, 1, 0]], 0.03)  # one cluster: a valid, wide interval
    assert one.lower < 0.0 < one.upper and one.status == "fail"
    assert m.analyze([[0, 0, 0, 0]], 0.03).status == "inconclusive"
    t = np.array([[2, 1, 0, 0], [0, 0, 3, 1], [1, 1, 1, 1]])
    with_empty = np.insert(t, 1, [0, 0, 0, 0], axis=0)  # an empty cluster is missing, not a zero
    a, b = m.analyze(t, 0.1), m.analyze(with_empty, 0.1)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)


@pytest.mark.parametrize("name", NEW)
def test_batch_equals_analyze_and_status_matches_bound(name):
    scen = PairedScenario(cells=(0.80, 0.08, 0.06, 0.06), clusters=40, rho=0.3, cluster_size=FixedSize(trials=3))
    tables = simulate_tables(scen, seed=11, n_reps=300)
    m = registry.get(name)
    br = m.batch(tables, 0.1)
    for i in (0, 7, 299):
        r = m.analyze(tables[i], 0.1)
        assert (r.lower, r.upper, r.estimate) == (br.lower[i], br.upper[i], br.estimate[i])
    assert np.all((br.lower >= -0.1) == (br.status == PASS))
    assert not np.any(br.status == INCONCLUSIVE)
    assert np.all(br.lower <= br.estimate + 1e-12) and np.all(br.estimate <= br.upper + 1e-12)


# ---------------------------------------------------------------- level at the boundary


@pytest.mark.parametrize("name", ["betting_ci", "empirical_bernstein"])
@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_level_at_the_boundary_on_skewed_clustered_data(name, rho):
    """Rare one-sided losses (baseline passes, candidate loses w.p. 0.2 + within-cluster
    correlation rho): true difference -0.2 = -margin.  Finite-sample valid methods keep
    P(pass) <= alpha (+ 4 MC SE)."""
    scen = PairedScenario(cells=(0.8, 0.2, 0.0, 0.0), clusters=60, rho=rho, cluster_size=FixedSize(trials=3))
    tables = simulate_tables(scen, seed=2026, n_reps=20_000)
    p = registry.get(name).batch(tables, 0.2).pass_count() / tables.shape[0]
    assert p <= 0.025 + 4 * math.sqrt(0.025 * 0.975 / tables.shape[0])


def test_seed_design_no_false_pass_where_the_clustered_normal_gives_0_29():
    """Reference number (tests/reference_values.py): 30 customers, baseline always passes, candidate loses w.p. 0.04, margin
    0.03.  The decision of each new method depends only on the losers (and, for the betting
    methods, their order): none passes even with 0 losers, so P(pass) = 0 exactly (the
    clustered normal interval passes with probability 0.96^30 = 0.29386)."""
    t = np.zeros((30, 4), int)
    t[:, 0] = 1
    for name in NEW:
        assert registry.get(name).analyze(t, 0.03).status == "fail"
        worse = t.copy()
        worse[:5] = (0, 1, 0, 0)
        assert registry.get(name).analyze(worse, 0.03).status == "fail"
