"""pass^k and pass@k per arm (evidence.reliability): the estimators against their definitions
and a second formula, unbiasedness exactly, the cluster interval against statsmodels'
cluster-robust OLS, and the edge cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evidence.reliability import cluster_ratio_interval, estimator_table, reliability


def test_worked_examples_by_hand():
    # n = 4 trials, c = 3 passes, k = 2: pass^2 = C(3,2)/C(4,2) = 3/6; pass@2 = 1 - C(1,2)/C(4,2) = 1
    assert estimator_table(4, 2, "pass^k")[3] == 0.5 and estimator_table(4, 2, "pass@k")[3] == 1.0
    # n = 5, c = 2, k = 2: pass^2 = 1/10, pass@2 = 1 - C(3,2)/C(5,2) = 0.7
    assert estimator_table(5, 2, "pass^k")[2] == pytest.approx(0.1) and estimator_table(5, 2, "pass@k")[2] == \
        pytest.approx(0.7)
    # k = n: pass^k is "all n passed", pass@k "any passed"
    assert estimator_table(3, 3, "pass^k").tolist() == [0, 0, 0, 1] and estimator_table(3, 3, "pass@k").tolist() == \
        [0, 1, 1, 1]


@pytest.mark.parametrize("n,k", [(5, 1), (5, 3), (8, 8), (10, 4)])
def test_pass_at_k_equals_chen_et_als_product_form(n, k):
    # Chen et al. (2021) compute 1 - C(n-c, k)/C(n, k) as 1 - prod_{i=n-c+1}^{n} (1 - k/i) for numerical stability
    product = [1.0 if n - c < k else 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1))) for c in range(n + 1)]
    assert np.allclose(estimator_table(n, k, "pass@k"), product, atol=1e-12)


@pytest.mark.parametrize("p", [0.2, 0.75, 0.97])
def test_estimators_are_unbiased_exactly(p):
    n, k = 6, 3
    weights = stats.binom.pmf(np.arange(n + 1), n, p)
    assert weights @ estimator_table(n, k, "pass^k") == pytest.approx(p ** k, abs=1e-12)
    assert weights @ estimator_table(n, k, "pass@k") == pytest.approx(1 - (1 - p) ** k, abs=1e-12)


def test_cluster_interval_equals_statsmodels_cluster_robust_ols():
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    cluster = np.repeat(np.arange(25), rng.integers(1, 6, 25))  # unequal cluster sizes
    values = (rng.random(len(cluster)) < 0.6 + 0.3 * (cluster % 3 == 0)).astype(float)
    alpha = 0.025
    got = cluster_ratio_interval(values, cluster, 25, alpha)
    fit = sm.OLS(values, np.ones((len(values), 1))).fit(cov_type="cluster", cov_kwds={"groups": cluster,
                                                                                   "use_correction": True})
    half = stats.t.ppf(1 - alpha, 24) * float(fit.bse[0])
    assert got["estimate"] == pytest.approx(float(fit.params[0]), abs=1e-12)
    assert got["lower"] == pytest.approx(float(fit.params[0]) - half, abs=1e-12)
    assert got["upper"] == pytest.approx(min(1.0, float(fit.params[0]) + half), abs=1e-12)


def test_edge_cases():
    one = cluster_ratio_interval(np.array([1.0, 0.0, 1.0]), np.zeros(3, int), 1, 0.025)
    assert one["lower"] is None and one["clusters"] == 1 and one["estimate"] == pytest.approx(2 / 3)
    all_pass = cluster_ratio_interval(np.ones(6), np.array([0, 0, 1, 1, 2, 2]), 3, 0.025)
    assert (all_pass["estimate"], all_pass["lower"], all_pass["upper"]) == (1.0, 1.0, 1.0)
    all_fail = cluster_ratio_interval(np.zeros(6), np.array([0, 0, 1, 1, 2, 2]), 3, 0.025)
    assert (all_fail["estimate"], all_fail["lower"], all_fail["upper"]) == (0.0, 0.0, 0.0)
    empty = cluster_ratio_interval(np.array([1.0, 0.0]), np.array([0, 2]), 4, 0.025)  # clusters 1 and 3 are empty
    assert empty["clusters"] == 2 and empty["cases"] == 2
    with pytest.raises(ValueError, match="k must lie in 1..3"):
        estimator_table(3, 4, "pass^k")


def test_reliability_per_arm_from_case_passes():
    passes = np.array([[3, 3], [2, 3], [0, 1], [3, 2]])
    out = reliability(passes, np.full(4, 3), np.array([0, 0, 1, 1]), 2, 0.025)
    assert out["trials_per_case"] == 3
    assert out["baseline"]["pass^k"]["3"]["estimate"] == 0.5 and out["candidate"]["pass^k"]["3"]["estimate"] == 0.5
    assert out["baseline"]["pass@k"]["3"]["estimate"] == 0.75 and out["candidate"]["pass@k"]["3"]["estimate"] == 1.0
    assert out["baseline"]["pass^k"]["1"]["estimate"] == pytest.approx(8 / 12)  # the trial pass rate
    with pytest.raises(ValueError, match="same number of trials for every case"):
        reliability(passes, np.array([3, 3, 3, 2]), np.array([0, 0, 1, 1]), 2, 0.025)
    assert math.isclose(out["candidate"]["pass^k"]["1"]["estimate"], 9 / 12)
