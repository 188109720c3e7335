"""Cluster-level methods: clustered_normal, cluster_t, cluster_robust, obuchowski.

Each is validated three ways (project rules): published worked examples, agreement with
the slow references of ``methods.reference.cluster`` on hundreds of random clustered
tables (hypothesis; 1e-9, closed forms), and edge cases.  ``cluster_robust`` is also
cross-checked against statsmodels; batch kernels and ``analyze`` agree exactly.
"""
from __future__ import annotations

from simlab.hashing import is_hash
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from methods import registry
from methods.identity import reached_modules
from methods.protocol import FAIL, INCONCLUSIVE, PASS, Estimand
from methods.reference import cluster as ref
from simlab.generate import simulate_tables
from simlab.scenario import ExplicitSizes, FixedSize, PairedScenario
from tests.reference_values import SEED_FALSE_PASS, SEED_FALSE_PASS_5DP

CLUSTER_METHODS = ["clustered_normal", "cluster_t", "cluster_robust", "obuchowski"]
REFERENCE = {name: getattr(ref, name) for name in CLUSTER_METHODS}
TOL = 1e-9
HYP = settings(max_examples=300, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow])


def method(name, **options):
    m = registry.get(name)
    return m.with_options(**options) if options else m


def seed_tables(losers: int, clusters: int = 30) -> np.ndarray:
    """The seed's design: one trial per customer, the baseline always passes; ``losers``
    customers see the candidate fail (n10 = 1), the others tie (n11 = 1)."""
    t = np.zeros((clusters, 4), np.int32)
    t[:, 0] = 1
    t[:losers] = (0, 1, 0, 0)
    return t


# ---------------------------------------------------------------- registry and metadata


@pytest.mark.parametrize("name, estimand, min_clusters", [
    ("clustered_normal", Estimand.CLUSTER, 30.0), ("cluster_t", Estimand.CLUSTER, 2.0),
    ("cluster_robust", Estimand.TRIAL, 2.0), ("obuchowski", Estimand.TRIAL, 2.0)])
def test_registered_with_estimand_citation_and_identity(name, estimand, min_clusters):
    m = registry.get(name)
    assert m.kind == "fixed" and m.estimand is estimand and m.options == {"min_clusters": min_clusters}
    assert m.citation and m.summary
    ident = m.identity
    assert is_hash(ident.source_sha256)
    assert m.with_options(min_clusters=5).identity.source_sha256 != ident.source_sha256
    if name != "clustered_normal":
        assert "methods.fixed._cluster" in reached_modules(m.decision_roots())


@pytest.mark.parametrize("name", ["cluster_t", "cluster_robust", "obuchowski"])
def test_bad_min_clusters_is_a_clear_error(name):
    with pytest.raises(ValueError, match="min_clusters"):
        method(name, min_clusters=float("nan")).analyze(seed_tables(0), 0.03)
    with pytest.raises(ValueError, match="no option"):
        registry.get(name).with_options(clusters=3)


# ---------------------------------------------------------------- published / exact examples


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_seed_false_pass_is_exactly_096_pow_30(name):
    """Reference number (tests/reference_values.py; seed chapter, "Three different decisions"): 30 independent
    customers, baseline always passes, candidate loses w.p. 0.04, margin 0.03, 95%:
    P(pass) = 0.96**30 = 0.29386, because the zero-discordance sample has zero variance.
    The decision depends only on the number j of losing customers, so P(pass) is an exact
    binomial sum over j.  Every moment method here inherits the flaw."""
    m = registry.get(name)
    tables = np.stack([seed_tables(j) for j in range(31)])
    res = m.batch(tables, 0.03, 0.025)
    assert res.status[0] == PASS and res.lower[0] == 0.0 and res.upper[0] == 0.0
    assert np.all(res.status[1:] == FAIL)
    p = float(np.sum(stats.binom.pmf(np.arange(31), 30, 0.04) * (res.status == PASS)))
    assert p == pytest.approx(SEED_FALSE_PASS, abs=1e-15)
    assert round(p, 5) == SEED_FALSE_PASS_5DP


def test_seed_false_pass_monte_carlo_through_the_simulator():
    """The same number through simlab's generator: pass rate within 4 MC SE of 0.96**30."""
    scen = PairedScenario(cells=(0.96, 0.04, 0.0, 0.0), clusters=30, cluster_size=FixedSize(trials=1))
    tables = simulate_tables(scen, seed=20261129, n_reps=100_000)
    p0 = SEED_FALSE_PASS
    mcse = math.sqrt(p0 * (1 - p0) / tables.shape[0])
    for name in CLUSTER_METHODS:
        rate = registry.get(name).batch(tables, 0.03, 0.025).pass_count() / tables.shape[0]
        assert abs(rate - p0) <= 4 * mcse, (name, rate, p0, mcse)


def test_clustered_normal_seed_minimum_evidence_rule():
    """Seed chapter table: "Twelve independent customers when thirty were required:
    inconclusive, even if every observed pair ties"; 30 tying customers pass (the flaw)."""
    m = registry.get("clustered_normal")
    r12 = m.analyze(seed_tables(0, clusters=12), 0.03)
    assert r12.status == "inconclusive" and math.isnan(r12.lower) and r12.estimate == 0.0
    assert m.analyze(seed_tables(0, clusters=29), 0.03).status == "inconclusive"
    r30 = m.analyze(seed_tables(0, clusters=30), 0.03)
    assert (r30.status, r30.lower, r30.upper, r30.clusters, r30.trials) == ("pass", 0.0, 0.0, 30, 30)
    # the registered minimum is an option; with it lowered, 12 ties pass as well
    assert m.with_options(min_clusters=12).analyze(seed_tables(0, clusters=12), 0.03).status == "pass"


def test_estimands_on_the_seed_unequal_cluster_example():
    """The unequal-clusters example: 15 customers winning 1/1 and 15 losing 9/9 -- cluster-weighted difference
    0, trial-weighted (15 - 135) / 150 = -0.8."""
    t = np.array([[0, 0, 1, 0]] * 15 + [[0, 9, 0, 0]] * 15)
    for name in CLUSTER_METHODS:
        est = registry.get(name).analyze(t, 0.03).estimate
        expected = 0.0 if registry.get(name).estimand is Estimand.CLUSTER else -0.8
        assert est == pytest.approx(expected, abs=1e-15), name


# Student (1908, Biometrika 6:1-25) sleep data, Cushny & Peebles: extra hours of sleep,
# drug 2 minus drug 1, ten patients.  Its paired t interval is the worked example of R's
# t.test(extra ~ group, data = sleep, paired = TRUE): mean -1.58, 95% CI (-2.4598858,
# -0.7001142) for drug 1 minus drug 2.  Scaled by 1/10 the differences are cluster
# differences d_k = D_k / 100 (n01 = D_k = 10 x, n11 = 100 - D_k): the interval divided by 10.
SLEEP_DIFF = [1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4]
SLEEP_TABLE = np.array([[100 - round(10 * x), 0, round(10 * x), 0] for x in SLEEP_DIFF])


@pytest.mark.parametrize("name", ["cluster_t", "cluster_robust"])
def test_student_sleep_worked_example(name):
    """cluster_t is the one-sample t interval on cluster means; cluster_robust (CR2, t(K-1))
    reduces to it exactly when clusters have equal sizes (here 100 pairs each)."""
    r = registry.get(name).analyze(SLEEP_TABLE, 0.03, 0.025)
    assert r.estimate == pytest.approx(0.158, abs=1e-12)
    assert r.lower == pytest.approx(0.07001142, abs=1e-8 / 10 * 5)
    assert r.upper == pytest.approx(0.24598858, abs=1e-8 / 10 * 5)
    assert r.status == "pass"


# Obuchowski (1998, Stat Med 17:1495-1507) example: PET versus SPECT specificity on the
# parathyroid glands of 21 patients (51 glands), per patient (n11, n10, n01, n00) with PET
# as the first ("baseline") test.  Transcribed from the clust.bin.pair R package (data set
# ``thyroids``, documented as "reported in Obuchowski 1998").
THYROID_A = [0, 2, 3, 1, 2, 4, 3, 2, 1, 1, 2, 2, 3, 2, 0, 2, 2, 2, 2, 1, 2]
THYROID_B = [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
THYROID_C = [2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0]
THYROID_D = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
THYROID = np.array([THYROID_A, THYROID_B, THYROID_C, THYROID_D]).T


def test_obuchowski_thyroid_worked_example():
    """Obuchowski's chi-square for these data is reported as 2.86 by Durkalski et al. (2003,
    Stat Med 22:2417-2428; value quoted in the clust.bin.pair test fixtures; Obuchowski's
    own paper is quoted there as 2.88, which we could not check against the paper).  Her
    test evaluates eqs. 2-4 under H0 (pooled p); the same moment formulas at the
    unrestricted estimates give the Wald variance the kernel uses."""
    assert THYROID.shape == (21, 4) and THYROID.sum() == 51
    assert round(ref.obuchowski_chi2(THYROID, under_null=True), 2) == 2.86
    # under H0 the statistic is Yang et al.'s (2010) closed form (K-1)/K (sum D)^2 / sum D^2
    D = THYROID[:, 2] - THYROID[:, 1]
    assert ref.obuchowski_chi2(THYROID) == pytest.approx(20 / 21 * D.sum() ** 2 / (D ** 2).sum(), rel=1e-12)
    m = ref.obuchowski_moments(THYROID)
    assert (m["p_baseline"], m["p_candidate"]) == (40 / 51, 46 / 51)
    r = registry.get("obuchowski").analyze(THYROID, 0.03, 0.025)
    z = stats.norm.ppf(0.975)
    assert r.estimate == pytest.approx(6 / 51, abs=1e-15)
    var_kernel = ((r.upper - r.lower) / (2 * z)) ** 2
    assert var_kernel == pytest.approx(m["var_difference"], rel=1e-12)
    # Wald statistic at the unrestricted variance (not published; recorded for regression)
    assert r.estimate ** 2 / var_kernel == pytest.approx(ref.obuchowski_chi2(THYROID, under_null=False), rel=1e-12)


# ---------------------------------------------------------------- kernel vs reference (hypothesis)

cluster_row = st.one_of(
    st.tuples(*[st.integers(0, 4)] * 4),                         # small clusters, many empty/degenerate
    st.tuples(*[st.integers(0, 12)] * 4),                        # larger, unequal clusters
    st.sampled_from([(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]),
)
tables_st = st.lists(cluster_row, min_size=1, max_size=14).map(lambda rows: np.array(rows, dtype=np.int32))
margin_st = st.sampled_from([0.01, 0.03, 0.05, 0.1, 0.25])
confidence_st = st.sampled_from([0.8, 0.9, 0.95, 0.99])


def _check_against_reference(name, table, margin, confidence, **options):
    r = method(name, **options).analyze(table, margin, (1 - confidence) / 2)
    lo, hi, est, status = REFERENCE[name](table, margin, confidence, **options)
    if math.isnan(est):
        assert math.isnan(r.estimate)
    else:
        assert r.estimate == pytest.approx(est, abs=TOL)
    if status == "inconclusive":
        assert r.status == "inconclusive" and math.isnan(r.lower) and math.isnan(r.upper)
        return
    tol = TOL
    assert r.lower == pytest.approx(lo, abs=tol) and r.upper == pytest.approx(hi, abs=tol)
    if abs(lo + margin) > 10 * tol:   # the decision can only differ by round-off at L == -m
        assert r.status == status
    else:
        assert r.status in ("pass", "fail")


@pytest.mark.parametrize("name", CLUSTER_METHODS)
@HYP
@given(table=tables_st, margin=margin_st, confidence=confidence_st)
def test_kernel_matches_reference(name, table, margin, confidence):
    options = {"min_clusters": 2.0} if name == "clustered_normal" else {}
    _check_against_reference(name, table, margin, confidence, **options)


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_equal_cluster_differences_give_a_point_interval(name):
    """Every cluster with the same D/n: zero variance (the seed's flaw, shared by all four).
    The exact-integer kernels give exactly a point; cluster_t's two-pass mean is off by at
    most an ulp, as is clustered_normal's (two-pass variance)."""
    m = method(name, min_clusters=2.0)
    for K in (2, 3, 7, 30):
        for n in range(1, 7):
            for D in range(-n, n + 1):
                table = np.array([[n - abs(D), max(-D, 0), max(D, 0), 0]] * K)
                r = m.analyze(table, 0.05)
                assert r.estimate == pytest.approx(D / n, abs=1e-15)
                allowance = {"cluster_robust": 0.0, "obuchowski": 0.0, "cluster_t": 1e-14,
                             "clustered_normal": 1e-14}[name]
                assert abs(r.lower - r.estimate) <= allowance and abs(r.upper - r.estimate) <= allowance
                _check_against_reference(name, table, 0.05, 0.95, min_clusters=2.0)


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_kernel_matches_reference_on_simulated_tables(name):
    """Tables from simlab's generator (Dirichlet-multinomial, unequal Poisson sizes, empty
    clusters), default options, K = 30."""
    from simlab.scenario import PoissonSize
    scen = PairedScenario(cells=(0.8, 0.08, 0.06, 0.06), clusters=30, rho=0.2,
                          cluster_size=PoissonSize(mean_trials=2.0, minimum=0))
    for table in simulate_tables(scen, seed=7, n_reps=200):
        _check_against_reference(name, table, 0.05, 0.9)


# ---------------------------------------------------------------- statsmodels cross-check


def _statsmodels_fits(table):
    import statsmodels.api as sm
    y, g = ref.pair_level(table)
    X = np.ones((y.size, 1))
    cr1 = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": g})
    cr0 = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": g, "use_correction": False})
    if np.all(y == y[0]):   # no residual variation: GEE's deviance is undefined, every sandwich is 0
        return cr1, cr0, None
    md = sm.GEE(y, X, groups=g, cov_struct=sm.cov_struct.Independence()).fit(cov_type="bias_reduced")
    return cr1, cr0, md


def _kernel_variance(name, table, confidence=0.95):
    r = registry.get(name).analyze(table, 0.05, (1 - confidence) / 2)
    K = r.clusters
    crit = stats.t.ppf(1 - (1 - confidence) / 2, K - 1) if name == "cluster_robust" else stats.norm.ppf(
        1 - (1 - confidence) / 2)
    return r, ((r.upper - r.lower) / (2 * crit)) ** 2


def test_cluster_robust_against_statsmodels():
    """OLS of the per-pair difference on a constant (statsmodels):
    * estimate = OLS coefficient (= GEE independence coefficient);
    * equal cluster sizes: CR2 = K/(K-1) CR0 = statsmodels' default cluster covariance;
    * unequal sizes: CR0 (statsmodels, no correction) <= CR2 <= Mancl-DeRouen
      (statsmodels GEE ``bias_reduced``), since 1 <= 1/(1-h_k) <= 1/(1-h_k)^2 cluster by cluster;
    * obuchowski's variance = K/(K-1) CR0 = statsmodels' default cluster covariance always."""
    rng = np.random.default_rng(31)
    checked_equal = checked_unequal = 0
    for i in range(120):
        K = int(rng.integers(2, 12))
        if i % 2 == 0:   # equal sizes
            m = int(rng.integers(1, 8))
            table = np.array([rng.multinomial(m, rng.dirichlet([2, 1, 1, 2])) for _ in range(K)])
        else:
            table = np.array([rng.multinomial(int(rng.integers(1, 12)), rng.dirichlet([2, 1, 1, 2]))
                              for _ in range(K)])
        cr1, cr0, md = _statsmodels_fits(table)
        r, v = _kernel_variance("cluster_robust", table)
        assert r.estimate == pytest.approx(cr1.params[0], abs=1e-12)
        if md is None:
            assert v == 0.0 and cr1.cov_params()[0, 0] == 0.0
            continue
        assert md.params[0] == pytest.approx(cr1.params[0], abs=1e-12)
        sizes = table.sum(axis=1)
        if np.all(sizes == sizes[0]):
            assert v == pytest.approx(cr1.cov_params()[0, 0], rel=1e-9, abs=1e-15)
            checked_equal += 1
        else:
            assert cr0.cov_params()[0, 0] * (1 - 1e-12) - 1e-15 <= v <= md.cov_params()[0, 0] * (1 + 1e-12) + 1e-15
            checked_unequal += 1
        _, vo = _kernel_variance("obuchowski", table)
        assert vo == pytest.approx(cr1.cov_params()[0, 0], rel=1e-9, abs=1e-15)
    assert checked_equal >= 50 and checked_unequal >= 50


def test_cluster_robust_equals_cluster_t_for_equal_sizes():
    rng = np.random.default_rng(5)
    tables = np.stack([np.array([rng.multinomial(4, [0.6, 0.15, 0.1, 0.15]) for _ in range(9)])
                       for _ in range(300)]).astype(np.int32)
    a = registry.get("cluster_robust").batch(tables, 0.05)
    b = registry.get("cluster_t").batch(tables, 0.05)
    np.testing.assert_allclose(a.lower, b.lower, atol=1e-12, rtol=0)
    np.testing.assert_allclose(a.upper, b.upper, atol=1e-12, rtol=0)


# ---------------------------------------------------------------- edge cases


def _row(n11=0, n10=0, n01=0, n00=0):
    return [n11, n10, n01, n00]


EDGE = {
    "zero_discordant": [_row(3, 0, 0, 1), _row(2, 0, 0, 2), _row(0, 0, 0, 4)],
    "all_pass": [_row(3), _row(2), _row(5)],
    "all_fail": [_row(n00=3), _row(n00=2), _row(n00=1)],
    "candidate_always_loses": [_row(n10=2), _row(n10=1), _row(n10=3)],
}


@pytest.mark.parametrize("name", CLUSTER_METHODS)
@pytest.mark.parametrize("case", sorted(EDGE))
def test_degenerate_tables(name, case):
    m = method(name, min_clusters=2.0)
    r = m.analyze(np.array(EDGE[case]), 0.05)
    expected = -1.0 if case == "candidate_always_loses" else 0.0
    assert r.estimate == expected and r.lower == expected and r.upper == expected
    assert r.status == ("fail" if expected < 0 else "pass")


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_one_cluster_and_k1_one_trial_are_inconclusive(name):
    m = method(name, min_clusters=1.0)
    for table in ([[4, 1, 2, 3]], [[0, 0, 1, 0]], [[0, 1, 0, 0]], [[1, 0, 0, 0]]):
        r = m.analyze(np.array(table), 0.05)
        assert r.status == "inconclusive" and math.isnan(r.lower) and math.isnan(r.upper)
        assert math.isfinite(r.estimate) and r.clusters == 1


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_empty_clusters_are_missing(name):
    m = method(name, min_clusters=2.0)
    base = np.array([[3, 1, 0, 1], [2, 0, 2, 0], [1, 1, 1, 1]])
    with_empty = np.array([[0, 0, 0, 0], [3, 1, 0, 1], [0, 0, 0, 0], [2, 0, 2, 0], [1, 1, 1, 1]])
    a, b = m.analyze(base, 0.05), m.analyze(with_empty, 0.05)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)
    assert b.clusters == 3
    # one real cluster among empties: too few clusters; all empty: no estimate at all
    r = m.analyze(np.array([[0, 0, 0, 0], [2, 1, 0, 0]]), 0.05)
    assert r.status == "inconclusive" and math.isfinite(r.estimate)
    r = m.analyze(np.zeros((3, 4), int), 0.05)
    assert r.status == "inconclusive" and math.isnan(r.estimate) and math.isnan(r.lower)


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_min_clusters_option(name):
    table = np.array([[2, 1, 0, 1]] * 4 + [[1, 0, 1, 2]] * 3)
    assert method(name, min_clusters=8.0).analyze(table, 0.05).status == "inconclusive"
    assert method(name, min_clusters=7.0).analyze(table, 0.05).status in ("pass", "fail")


@pytest.mark.parametrize("name", CLUSTER_METHODS)
def test_never_nan_bounds_with_pass_and_batch_equals_analyze(name):
    rng = np.random.default_rng(11)
    R, K = 400, 6
    tables = rng.integers(0, 3, size=(R, K, 4)).astype(np.int32)
    tables[rng.random((R, K)) < 0.3] = 0                # empty clusters
    tables[:40, :, 1:3] = 0                             # no discordant pairs
    tables[40:60] = 0
    tables[40:60, :, 0] = rng.integers(0, 2, (20, K))  # all pass / empty
    tables[60:62] = 0                                   # nothing at all
    tables[62:70, 1:] = 0                               # one cluster
    m = method(name, min_clusters=2.0)
    res = m.batch(tables, 0.05, 0.05)
    assert not np.any((res.status == PASS) & (np.isnan(res.lower) | np.isnan(res.upper)))
    decided = res.status != INCONCLUSIVE
    assert np.all(np.isfinite(res.lower[decided])) and np.all(res.lower[decided] <= res.upper[decided])
    assert set(np.unique(res.status)) <= {PASS, FAIL, INCONCLUSIVE}
    assert np.all(res.status[60:70] == INCONCLUSIVE)
    for r in range(R):
        one = m.analyze(tables[r], 0.05, 0.05)
        for got, want in ((one.lower, res.lower[r]), (one.upper, res.upper[r]), (one.estimate, res.estimate[r])):
            assert (math.isnan(got) and math.isnan(want)) or got == want
        assert one.status == {PASS: "pass", FAIL: "fail", INCONCLUSIVE: "inconclusive"}[int(res.status[r])]


def test_explicit_sizes_scenario_runs_through_every_method():
    """Unequal, explicit cluster sizes with an empty cluster straight from the generator."""
    scen = PairedScenario(cells=(0.85, 0.06, 0.05, 0.04), clusters=6, rho=0.1,
                          cluster_size=ExplicitSizes(sizes=(1, 9, 0, 3, 3, 5)))
    tables = simulate_tables(scen, seed=3, n_reps=500)
    for name in CLUSTER_METHODS:
        res = method(name, min_clusters=2.0).batch(tables, 0.1)
        assert np.all(res.status != INCONCLUSIVE)
        assert np.all(np.isfinite(res.lower))
