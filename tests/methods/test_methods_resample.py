"""Cluster bootstrap methods: cluster_bootstrap (percentile) and cluster_bootstrap_bca.

Validation (project rules):
- Published worked example: none exists -- a bootstrap interval depends on the resampling
  stream, and no publication uses simlab's counter-based generator, so no published
  numbers can be reproduced.  We rely on the next two items instead.
- Independent slow implementation: ``methods.reference.resample`` re-implements the
  counter-based generator and the table key from their written specification with
  Python integers, draws the same resampling indices in plain Python loops, and computes
  the statistics, the bias correction and the jackknife acceleration in exact rational
  arithmetic.  Kernel and reference agree to 1e-9 on hundreds of random clustered tables
  (hypothesis); the bootstrap statistics themselves agree exactly.
- Edge cases, batch == analyze, and the keying contract: one table always gets the same
  interval whatever its replication index, chunk or position, and empty clusters change
  nothing.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import special

from methods import registry
from methods.identity import reached_modules
from methods.protocol import FAIL, INCONCLUSIVE, PASS, Estimand
from methods.fixed import _bootstrap, _special
from methods.reference import resample as ref
from simlab.generate import simulate_tables
from simlab.rng import uniform
from simlab.scenario import FixedSize, PairedScenario

BOOT = ["cluster_bootstrap", "cluster_bootstrap_bca"]
TOL = 1e-9
HYP = settings(max_examples=300, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

rows = st.tuples(*[st.integers(0, 4)] * 4)
empty_or_row = st.one_of(rows, rows, rows, rows, st.just((0, 0, 0, 0)))
tables = st.lists(empty_or_row, min_size=1, max_size=8).map(lambda r: np.array(r, dtype=np.int64))


def method(name, **options):
    m = registry.get(name)
    return m.with_options(**options) if options else m


def small_scenario(K=12, trials=3, rho=0.2):
    return PairedScenario(clusters=K, cluster_size=FixedSize(trials=trials), rho=rho,
                          cells=(0.80, 0.08, 0.06, 0.06))


# ---------------------------------------------------------------- registry and options


@pytest.mark.parametrize("name", BOOT)
def test_registered_with_estimand_citation_identity_and_options(name):
    m = registry.get(name)
    assert m.kind == "fixed" and m.estimand is Estimand.TRIAL
    assert "Efron" in m.citation and m.summary
    assert m.options == {"resamples": 999.0}
    assert "methods.fixed._bootstrap" in reached_modules(m.decision_roots())
    assert m.with_options(resamples=199).identity.source_sha256 != m.identity.source_sha256


@pytest.mark.parametrize("name", BOOT)
@pytest.mark.parametrize("bad", [0, -5, 2.5, float("nan"), float("inf"), 1e8])
def test_bad_resamples_is_a_clear_error(name, bad):
    with pytest.raises(ValueError, match="resamples"):
        method(name, resamples=bad).analyze([[3, 1, 0, 0], [2, 0, 1, 0]], 0.03)


# ---------------------------------------------------------------- the generator contract


def test_reference_generator_matches_simlab_rng():
    """The reference's pure-Python generator is the one in simlab.rng, bit for bit."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        k1, k2 = (int(v) for v in rng.integers(0, 2**64 - 1, size=2, dtype=np.uint64, endpoint=True))
        rep, draw = (int(v) for v in rng.integers(0, 2**32, size=2))
        assert ref.counter_uniform(k1, k2, rep, draw) == uniform(np.uint64(k1), np.uint64(k2), rep, draw)


@given(tables)
@settings(max_examples=200, deadline=None, derandomize=True)
def test_table_key_matches_reference(t):
    kernel_key = int(_bootstrap.table_key(t.astype(np.int32)[None], 0))
    assert kernel_key == ref.resampling_key(ref.cluster_rows(t))


def test_key_changes_with_any_count_and_with_cluster_order():
    t = np.array([[3, 0, 0, 0], [2, 1, 0, 0], [1, 0, 1, 1]], np.int32)
    base = int(_bootstrap.table_key(t[None], 0))
    keys = {base}
    for k in range(3):
        for j in range(4):
            u = t.copy()
            u[k, j] += 1
            keys.add(int(_bootstrap.table_key(u[None], 0)))
    keys.add(int(_bootstrap.table_key(t[::-1].copy()[None], 0)))
    assert len(keys) == 14


@given(tables)
@HYP
def test_bootstrap_statistics_equal_reference_exactly(t):
    """Same indices, same integer sums: the sorted statistics agree bit for bit."""
    B = 199
    K = t.shape[0]
    d = np.empty(K, np.int64)
    n = np.empty(K, np.int64)
    out = np.empty(B)
    m = _bootstrap.sorted_bootstrap(t.astype(np.int32)[None], 0, d, n, out)
    assert m == len(ref.cluster_rows(t))
    if m >= 2:
        expected = sorted(float(s) for s in ref.bootstrap_statistics(t, B))
        assert out.tolist() == expected


# ---------------------------------------------------------------- kernel vs reference


def assert_same(res, r):
    lower, upper, est, status = r
    for a, b in ((res.lower, lower), (res.upper, upper), (res.estimate, est)):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL, (a, b)
    assert res.status == status


@pytest.mark.parametrize("name", BOOT)
@given(t=tables, confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]), margin=st.sampled_from([0.03, 0.1, 0.3]))
@HYP
def test_kernel_matches_reference_b199(name, t, confidence, margin):
    res = method(name, resamples=199).analyze(t, margin, (1 - confidence) / 2)
    assert_same(res, getattr(ref, name)(t, margin, confidence, resamples=199))


@pytest.mark.parametrize("name", BOOT)
@given(t=st.lists(rows, min_size=2, max_size=30).map(lambda r: np.array(r, dtype=np.int64)))
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_kernel_matches_reference_default_b999(name, t):
    assert_same(registry.get(name).analyze(t, 0.05), getattr(ref, name)(t, 0.05))


@pytest.mark.parametrize("name", BOOT)
def test_kernel_matches_reference_on_simulated_k30_tables(name):
    t = simulate_tables(small_scenario(K=30), seed=3, n_reps=20)
    res = registry.get(name).batch(t, 0.03)
    for r in range(len(t)):
        lower, upper, est, status = getattr(ref, name)(t[r], 0.03)
        assert abs(res.lower[r] - lower) <= TOL and abs(res.upper[r] - upper) <= TOL
        assert res.estimate[r] == pytest.approx(est, abs=TOL)
        assert {PASS: "pass", FAIL: "fail", INCONCLUSIVE: "inconclusive"}[int(res.status[r])] == status


# ---------------------------------------------------------------- helpers


def test_norm_ppf_matches_scipy():
    p = np.concatenate([np.logspace(-300, -1, 300), np.linspace(0.01, 0.99, 197), 1 - np.logspace(-16, -1, 100)])
    for x in p:
        assert _special.norm_ppf(x) == pytest.approx(special.ndtri(x), rel=1e-13, abs=1e-14)
    assert _special.norm_ppf(0.5) == 0.0


def test_order_quantile_rank_b_plus_1_p():
    x = np.arange(1.0, 1000.0)   # B = 999, values 1..999
    assert _bootstrap.order_quantile(x, 0.025) == pytest.approx(25.0)
    assert _bootstrap.order_quantile(x, 0.975) == pytest.approx(975.0)
    assert _bootstrap.order_quantile(x, 0.0255) == pytest.approx(25.5)
    assert _bootstrap.order_quantile(x, 1e-6) == 1.0 and _bootstrap.order_quantile(x, 1 - 1e-6) == 999.0


def test_bca_level_formula_and_domain_limits():
    z = special.ndtri(0.025)
    assert _bootstrap.bca_level(0.0, 0.0, z) == pytest.approx(0.025, abs=1e-15)
    z0, a = 0.3, 0.1
    w = z0 + z
    assert _bootstrap.bca_level(z0, a, z) == pytest.approx(special.ndtr(z0 + w / (1 - a * w)), rel=1e-14)
    # 1 - a (z0 + z) <= 0: the limit from inside the domain
    assert _bootstrap.bca_level(0.0, -0.6, z) == 0.0
    assert _bootstrap.bca_level(0.0, 0.6, -z) == 1.0
    assert _bootstrap.bca_level(0.0, (1.0 - 1e-9) / z, z) < 1e-12        # just inside: -> 0


def test_jackknife_acceleration_matches_exact_and_is_zero_when_symmetric():
    t = np.array([[3, 0, 0, 0], [2, 1, 0, 0], [1, 0, 2, 1], [0, 3, 0, 1], [2, 0, 1, 0]])
    rows = ref.cluster_rows(t)
    d = (rows[:, 2] - rows[:, 1]).astype(np.int64)
    n = rows.sum(axis=1).astype(np.int64)
    assert _bootstrap.jackknife_acceleration(d, n, len(d)) == pytest.approx(ref.jackknife_acceleration(rows), rel=1e-12)
    same = np.array([[2, 1, 0, 0]] * 5)       # every leave-one-out value equal
    assert _bootstrap.jackknife_acceleration(np.full(5, -1, np.int64), np.full(5, 3, np.int64), 5) == 0.0
    assert ref.jackknife_acceleration(ref.cluster_rows(same)) == 0.0
    two = np.array([[2, 1, 0, 0], [1, 0, 1, 0]])
    r2 = ref.cluster_rows(two)
    assert _bootstrap.jackknife_acceleration((r2[:, 2] - r2[:, 1]).astype(np.int64), r2.sum(axis=1), 2) == 0.0


# ---------------------------------------------------------------- keying: chunk / replication invariance


@pytest.mark.parametrize("name", BOOT)
def test_same_table_same_interval_whatever_its_replication_or_chunk(name):
    m = registry.get(name)
    t = simulate_tables(small_scenario(), seed=11, n_reps=60)
    full = m.batch(t, 0.05)
    # chunks of different sizes
    for size in (1, 7, 25):
        parts = [m.batch(t[s:s + size], 0.05) for s in range(0, len(t), size)]
        for field in ("lower", "upper", "estimate", "status"):
            assert np.array_equal(np.concatenate([getattr(p, field) for p in parts]), getattr(full, field),
                                  equal_nan=field != "status")
    # reversed order, and one table repeated at every position
    rev = m.batch(t[::-1].copy(), 0.05)
    assert np.array_equal(rev.lower[::-1], full.lower, equal_nan=True)
    rep = m.batch(np.repeat(t[5:6], 9, axis=0), 0.05)
    assert np.all(rep.lower == full.lower[5]) and np.all(rep.upper == full.upper[5])
    # the generator's replication index is irrelevant: same table from another stream position
    later = simulate_tables(small_scenario(), seed=11, n_reps=10, start=50)
    assert np.array_equal(m.batch(later, 0.05).lower, full.lower[50:], equal_nan=True)


@pytest.mark.parametrize("name", BOOT)
@given(t=tables, where=st.integers(0, 8))
@settings(max_examples=100, deadline=None, derandomize=True)
def test_empty_clusters_change_nothing(name, t, where):
    m = registry.get(name)
    with_empty = np.insert(t, min(where, len(t)), [0, 0, 0, 0], axis=0)
    a, b = m.analyze(t, 0.05), m.analyze(with_empty, 0.05)
    assert (a.lower == b.lower or (math.isnan(a.lower) and math.isnan(b.lower))) and a.status == b.status


# ---------------------------------------------------------------- edge cases


@pytest.mark.parametrize("name", BOOT)
def test_edge_cases(name):
    m = registry.get(name)
    # zero discordant pairs / all pass / all fail: every resample is 0 -> point interval at 0
    for row in ([3, 0, 0, 0], [0, 0, 0, 3], [2, 0, 0, 1]):
        r = m.analyze([row] * 30, 0.03)
        assert (r.lower, r.upper, r.estimate, r.status) == (0.0, 0.0, 0.0, "pass")
    # one cluster, K = 1 with one trial: a cluster bootstrap needs two clusters
    for t in ([[5, 1, 2, 0]], [[1, 0, 0, 0]], [[0, 1, 0, 0]]):
        r = m.analyze(t, 0.03)
        assert r.status == "inconclusive" and math.isnan(r.lower) and math.isnan(r.upper)
        assert math.isfinite(r.estimate)
    # only empty clusters
    r = m.analyze([[0, 0, 0, 0], [0, 0, 0, 0]], 0.03)
    assert r.status == "inconclusive" and math.isnan(r.estimate)
    # an empty cluster beside real ones is skipped
    a = m.analyze([[3, 0, 0, 0], [0, 0, 0, 0], [2, 1, 0, 0]], 0.03)
    b = m.analyze([[3, 0, 0, 0], [2, 1, 0, 0]], 0.03)
    assert (a.lower, a.upper, a.clusters) == (b.lower, b.upper, 2)
    # every cluster loses: interval at -1
    r = m.analyze([[0, 2, 0, 0]] * 5, 0.03)
    assert (r.lower, r.upper, r.status) == (-1.0, -1.0, "fail")


@pytest.mark.parametrize("name", BOOT)
@given(t=tables, margin=st.sampled_from([0.01, 0.05, 0.5]))
@settings(max_examples=150, deadline=None, derandomize=True)
def test_never_nan_with_pass_and_bounds_ordered(name, t, margin):
    r = method(name, resamples=99).analyze(t, margin)
    if r.status == "pass":
        assert math.isfinite(r.lower) and math.isfinite(r.upper)
    if r.status != "inconclusive":
        assert -1.0 <= r.lower <= r.upper <= 1.0


@pytest.mark.parametrize("name", BOOT)
def test_batch_equals_analyze_exactly(name):
    m = registry.get(name)
    t = simulate_tables(small_scenario(K=8), seed=5, n_reps=30)
    t[3, 2] = 0   # an empty cluster
    b = m.batch(t, 0.03)
    for r in range(len(t)):
        a = m.analyze(t[r], 0.03)
        assert np.array_equal([a.lower, a.upper, a.estimate], [b.lower[r], b.upper[r], b.estimate[r]], equal_nan=True)
        assert a.status == {PASS: "pass", FAIL: "fail", INCONCLUSIVE: "inconclusive"}[int(b.status[r])]
