"""The table generator against its model.  Every tolerance is 4 Monte Carlo standard errors
computed from the simulated sample itself (fixed seeds); exact pmfs are used where they exist."""
import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from simlab.generate import simulate_tables
from simlab.scenario import (ExplicitSizes, FixedSize, GeometricSize, LabelNoise, Missingness,
                             PairedScenario, PoissonSize)
from simlab.summary import anova_icc

CELLS = (0.90, 0.04, 0.03, 0.03)


def _within(estimate, truth, se, k=4.0):
    assert abs(estimate - truth) <= k * se, f"{estimate} vs {truth} (4 SE = {k * se})"


def _mean_check(x, truth):
    x = np.asarray(x, dtype=np.float64)
    _within(x.mean(), truth, x.std(ddof=1) / math.sqrt(x.size))


def dm_pmf(counts, m, alpha_p):
    """Dirichlet-multinomial pmf (Mosimann 1962, eq. 2.1)."""
    a = np.asarray(alpha_p)
    c = np.asarray(counts)
    return math.exp(special.gammaln(m + 1) - special.gammaln(c + 1).sum() + special.gammaln(a.sum())
                    - special.gammaln(a.sum() + m) + (special.gammaln(c + a) - special.gammaln(a)).sum())


@pytest.mark.parametrize("rho", [0.0, 0.1, 0.5])
def test_cluster_count_distribution_matches_exact_dirichlet_multinomial(rho):
    m = 3
    s = PairedScenario(cells=CELLS, clusters=50, cluster_size=FixedSize(trials=m), rho=rho)
    t = simulate_tables(s, 2024, 4000).reshape(-1, 4)  # 200,000 clusters
    n = t.shape[0]
    for counts in itertools.product(range(m + 1), repeat=4):
        if sum(counts) != m:
            continue
        if rho == 0:
            p = stats.multinomial.pmf(counts, m, CELLS)
        else:
            p = dm_pmf(counts, m, s.concentration * np.asarray(CELLS))
        freq = np.mean(np.all(t == counts, axis=1))
        _within(freq, p, math.sqrt(p * (1 - p) / n) + 1e-12)


@pytest.mark.parametrize("rho,m", [(0.1, 3), (0.3, 8)])
def test_cell_means_and_dirichlet_multinomial_variance(rho, m):
    s = PairedScenario(cells=CELLS, clusters=40, cluster_size=FixedSize(trials=m), rho=rho)
    t = simulate_tables(s, 7, 5000).reshape(-1, 4).astype(np.float64)
    for j, p in enumerate(CELLS):
        x = t[:, j]
        _mean_check(x, m * p)
        var_true = m * p * (1 - p) * (1 + (m - 1) * rho)
        # variance estimate: mean of squared deviations; its SE from the 4th moment
        dev2 = (x - x.mean()) ** 2
        _within(dev2.mean(), var_true, dev2.std(ddof=1) / math.sqrt(x.size))


def test_anova_icc_recovers_rho():
    rho, m = 0.2, 5
    s = PairedScenario(cells=(0.6, 0.15, 0.1, 0.15), clusters=1000, cluster_size=FixedSize(trials=m), rho=rho)
    t = simulate_tables(s, 31, 60)  # 60 batches of 1000 clusters
    est = np.array([anova_icc(b[:, 0] + b[:, 1], b.sum(axis=1)) for b in t])
    _mean_check(est, rho)


def test_rho_near_one_copies_one_outcome_to_every_trial():
    s = PairedScenario(cells=(0.5, 0.2, 0.2, 0.1), clusters=200, cluster_size=FixedSize(trials=9), rho=0.999)
    t = simulate_tables(s, 5, 50).reshape(-1, 4)
    share_single_cell = np.mean(t.max(axis=1) == 9)
    # P(all 9 trials in one cell) under DM with alpha = 0.001/0.999 is close to 1
    exact = sum(dm_pmf(tuple(9 if i == j else 0 for i in range(4)), 9, s.concentration * np.array(s.cells))
                for j in range(4))
    _within(share_single_cell, exact, math.sqrt(exact * (1 - exact) / t.shape[0]) + 1e-12)


def test_label_noise_rates():
    noise = LabelNoise(baseline_sensitivity=0.95, baseline_specificity=0.9,
                       candidate_sensitivity=0.85, candidate_specificity=0.8)
    s = PairedScenario(cells=(0.7, 0.1, 0.1, 0.1), clusters=30, cluster_size=FixedSize(trials=4),
                       rho=0.1, label_noise=noise)
    t = simulate_tables(s, 17, 5000).reshape(-1, 4).astype(np.float64)
    expected = s.observed_cell_matrix()[0]
    for j in range(4):
        _mean_check(t[:, j] / 4.0, expected[j])
    assert t.sum(axis=1).min() == 4  # label noise never loses a pair


def test_mcar_and_informative_missingness_rates():
    miss = Missingness(loss_rate=0.1, loss_rate_candidate_fail=0.4)
    s = PairedScenario.independent_arms(0.9, 0.8, clusters=30, cluster_size=FixedSize(trials=5), missingness=miss)
    t = simulate_tables(s, 23, 5000).reshape(-1, 4).astype(np.float64)
    n = t.sum(axis=1)
    _mean_check(n / 5.0, s.retention_rate()[0])
    kept = t.sum(axis=0)
    cand_pass_share = (kept[0] + kept[2]) / kept.sum()
    truth = (0.8 * 0.9) / (0.8 * 0.9 + 0.2 * 0.6)
    # rho = 0: retained pairs are iid, so the share is binomial given the retained count
    _within(cand_pass_share, truth, math.sqrt(truth * (1 - truth) / kept.sum()))


@pytest.mark.parametrize("law,mean,var", [
    (PoissonSize(mean_trials=4.0, minimum=1), 4.0, 3.0),
    (PoissonSize(mean_trials=2.5, minimum=0), 2.5, 2.5),
    (GeometricSize(mean_trials=3.0, minimum=1), 3.0, 2.0 * 3.0),  # G mean mu=2: var mu(1+mu)
])
def test_cluster_size_laws(law, mean, var):
    s = PairedScenario(cells=CELLS, clusters=100, cluster_size=law)
    n = simulate_tables(s, 3, 2000).sum(axis=2).ravel().astype(np.float64)
    _mean_check(n, mean)
    d2 = (n - n.mean()) ** 2
    _within(d2.mean(), var, d2.std(ddof=1) / math.sqrt(n.size))
    assert n.min() >= law.minimum
    if law.minimum == 0:
        _within(np.mean(n == 0), math.exp(-2.5), math.sqrt(math.exp(-2.5) / n.size))


def test_explicit_sizes_and_per_cluster_cells_seed_example():
    s = PairedScenario(cells=(1, 0, 0, 0), clusters=30, cluster_size=ExplicitSizes(sizes=(1,) * 15 + (9,) * 15),
                       cluster_cells=((0, 0, 1, 0),) * 15 + ((0, 1, 0, 0),) * 15)
    t = simulate_tables(s, 1, 3)
    assert np.array_equal(t[0, :15], np.tile([0, 0, 1, 0], (15, 1)))
    assert np.array_equal(t[0, 15:], np.tile([0, 9, 0, 0], (15, 1)))


def test_empty_clusters_are_zero_rows():
    s = PairedScenario(cells=CELLS, clusters=4, cluster_size=ExplicitSizes(sizes=(3, 0, 2, 0)))
    t = simulate_tables(s, 1, 10)
    assert np.all(t[:, 1] == 0) and np.all(t[:, 3] == 0)
    assert np.all(t[:, 0].sum(axis=1) == 3)
