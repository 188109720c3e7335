"""``betting_ci_horizon``: betting_ci's capital and Ville's inequality with horizon-aware bets and
truncation 0.99.

Validated three ways (project rules): with the old bets and truncation it is ``betting_ci`` to
the last bit (there is no published worked example of the new bet); the slow reference
``methods.reference.betting_horizon`` (plain loops, cumulative sums, brentq) on random tables;
edge cases, including the all-ties sample against the level-alpha floor.  Its level is checked
by Monte Carlo at null laws where Ville's bound is nearly attained, with 4 MC SE; its power
against betting_ci's on the same tables."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from methods import check_method, registry
from methods.protocol import PASS, Estimand
from methods.reference import betting_horizon as ref
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario

HYP = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
tables_st = st.lists(st.tuples(*[st.integers(0, 4)] * 4), min_size=1, max_size=40)
BH = registry.get("betting_ci_horizon")


def test_registered_and_conforms():
    assert "betting_ci_horizon" in registry.names("fixed") and BH.estimand is Estimand.CLUSTER
    assert "Ville" in BH.citation and "2505.22422" in BH.citation
    assert "estimand" in check_method(BH).passed
    with pytest.raises(ValueError, match="horizon"):
        BH.with_options(horizon=0.5).analyze([[1, 0, 0, 0]], 0.03)
    with pytest.raises(ValueError, match="truncation"):
        BH.with_options(truncation=1.0).analyze([[1, 0, 0, 0]], 0.03)


@pytest.mark.parametrize("rho, K", [(0.1, 150), (0.4, 37)])
def test_old_bets_and_truncation_are_betting_ci_exactly(rho, K):
    sc = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=K, cluster_size=FixedSize(trials=3), rho=rho)
    tables = simulate_tables(sc, seed=5, n_reps=2000)
    old = registry.get("betting_ci").batch(tables, 0.03)
    new = BH.with_options(truncation=0.5, horizon=0.0).batch(tables, 0.03)
    for a, b in ((old.lower, new.lower), (old.upper, new.upper), (old.estimate, new.estimate),
                 (old.status, new.status)):
        assert np.array_equal(a, b)


@HYP
@given(rows=tables_st, margin=st.sampled_from([0.03, 0.1, 0.3]), horizon=st.sampled_from([0.0, 1.0]),
       truncation=st.sampled_from([0.5, 0.99]))
def test_kernel_matches_reference(rows, margin, horizon, truncation):
    t = np.array(rows, dtype=np.int64)
    m = BH.with_options(horizon=horizon, truncation=truncation)
    got = m.analyze(t, margin)
    lo, hi, est, status = ref.betting_ci_horizon(t, margin, truncation=truncation, horizon=horizon)
    if math.isnan(est):
        assert got.status == "inconclusive" and math.isnan(got.estimate)
        return
    assert got.estimate == pytest.approx(est, abs=1e-12)
    assert got.lower == pytest.approx(lo, abs=1e-9) and got.upper == pytest.approx(hi, abs=1e-9)
    assert got.status == status


def test_edge_cases():
    for K, passes in ((127, False), (128, True), (300, True)):   # all ties: the floor is 122 (0.97^122 <= 0.025)
        for row in ([3, 0, 0, 0], [0, 0, 0, 3], [1, 0, 0, 2]):
            r = BH.analyze(np.tile(row, (K, 1)), 0.03)
            assert r.estimate == 0.0 and r.lower == pytest.approx(-r.upper, abs=1e-9) and r.passed == passes
    assert 0.97 ** 122 <= 0.025 < 0.97 ** 121
    one = BH.analyze([[1, 0, 2, 0]], 0.03)
    assert (one.lower, one.upper, one.status) == (-1.0, 1.0, "fail")
    assert BH.analyze([[0, 0, 0, 0]] * 3, 0.03).status == "inconclusive"
    t = np.array([[2, 1, 0, 0], [0, 0, 3, 1], [1, 1, 1, 1]] * 20)
    a, b = BH.analyze(t, 0.1), BH.analyze(np.insert(t, [1, 5, 9], [0, 0, 0, 0], axis=0), 0.1)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)
    wins = BH.analyze(np.tile([0, 0, 3, 0], (10, 1)), 0.03)
    losses = BH.analyze(np.tile([0, 3, 0, 0], (10, 1)), 0.03)
    assert wins.passed and not losses.passed
    assert wins.lower == pytest.approx(-losses.upper, abs=1e-9)
    one_loss = np.tile([3, 0, 0, 0], (300, 1))
    one_loss[0] = (0, 3, 0, 0)            # a cluster of three losses costs a factor 0.01, then 299 ties
    assert BH.analyze(one_loss, 0.03).passed


def two_point_tables(K: int, p_loss: float, n_reps: int, seed: int) -> np.ndarray:
    """Clusters of 3 pairs: all three lost w.p. p_loss (d = -1), else all tied (d = 0)."""
    rng = np.random.default_rng(seed)
    lost = rng.random((n_reps, K)) < p_loss
    out = np.zeros((n_reps, K, 4), np.int32)
    out[:, :, 1] = 3 * lost
    out[:, :, 0] = 3 * ~lost
    return out


@pytest.mark.parametrize("K", [150, 300])
def test_level_where_villes_bound_is_nearly_attained(K):
    """The two-point null {-1: m, 0: 1 - m} (mean exactly -m) is the sharp case: the capital is a
    martingale with small up-steps, so the rate approaches alpha as K grows; it must stay within
    4 MC SE of alpha."""
    n = 20_000
    p = BH.batch(two_point_tables(K, 0.03, n, 2026 + K), 0.03).pass_count() / n
    assert p <= 0.025 + 4 * math.sqrt(0.025 * 0.975 / n)
    assert p > 0.01                        # the rule spends its level here (betting_ci passes ~never)


def test_level_on_a_clustered_null_with_wins():
    sc = PairedScenario.from_rates(0.75, -0.03, 0.1, clusters=300, cluster_size=FixedSize(trials=3), rho=0.1)
    tables = simulate_tables(sc, seed=77, n_reps=20_000)
    p = BH.batch(tables, 0.03).pass_count() / tables.shape[0]
    assert p <= 0.025 + 4 * math.sqrt(0.025 * 0.975 / tables.shape[0])


def test_more_power_than_betting_ci_on_the_same_tables():
    sc = PairedScenario.from_rates(0.9, 0.0, 0.03, clusters=150, cluster_size=FixedSize(trials=3), rho=0.1)
    tables = simulate_tables(sc, seed=150, n_reps=4000)
    new = BH.batch(tables, 0.03).status == PASS
    old = registry.get("betting_ci").batch(tables, 0.03).status == PASS
    diff = new.astype(float) - old
    assert diff.mean() > 4 * diff.std(ddof=1) / math.sqrt(diff.size)
