"""ICC estimate and upper bound: a slow reference, edge cases, and Monte Carlo coverage
under simlab's Dirichlet-multinomial DGM (tolerances from the MC standard error)."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from evidence.icc import icc_upper_bound
from evidence.synthetic import draw_categories


def reference(tables, level):
    """Per-trial loops: one-way ANOVA for each cell indicator (Searle's bound), pooled estimate."""
    rows = [[c for c, n in enumerate(t) for _ in range(n)] for t in tables]
    K = len(rows)
    N = sum(len(r) for r in rows)
    n0 = (N - sum(len(r) ** 2 for r in rows) / N) / (K - 1)
    sb = sw = 0.0
    uppers = []
    for cat in range(4):
        ys = [[1.0 if x == cat else 0.0 for x in r] for r in rows]
        grand = sum(map(sum, ys)) / N
        msb = sum(len(y) * (sum(y) / len(y) - grand) ** 2 for y in ys) / (K - 1)
        msw = sum((v - sum(y) / len(y)) ** 2 for y in ys for v in y) / (N - K)
        if msb == 0 and msw == 0:
            continue
        sb, sw = sb + msb, sw + msw
        if msw == 0:
            uppers.append(1.0)
            continue
        r = msb / msw / stats.f.ppf(1 - level, K - 1, N - K)
        uppers.append((r - 1) / (r + n0 - 1))
    return (sb - sw) / (sb + (n0 - 1) * sw), min(1.0, max(0.0, max(uppers)))


def test_matches_reference_on_unequal_clusters():
    rng = np.random.default_rng(5)
    tables = rng.integers(0, 4, size=(17, 4))
    tables[tables.sum(axis=1) < 2, 0] += 2
    got = icc_upper_bound(tables, 0.975)
    est, up = reference(tables.tolist(), 0.975)
    assert math.isclose(got.estimate, est, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(got.upper, up, rel_tol=1e-12, abs_tol=1e-12)


def test_edge_cases():
    one_each = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]])
    assert not icc_upper_bound(one_each, 0.975).applicable
    constant = np.array([[3, 0, 0, 0]] * 10)
    b = icc_upper_bound(constant, 0.975)
    assert b.applicable and b.upper == 1.0 and "cannot bound" in b.note
    perfectly_clustered = np.array([[3, 0, 0, 0], [0, 3, 0, 0]] * 10)  # no within-cluster variation
    b = icc_upper_bound(perfectly_clustered, 0.975)
    assert b.upper == 1.0 and math.isclose(b.estimate, 1.0)
    single = icc_upper_bound(np.array([[2, 1, 0, 0]]), 0.975)
    assert single.upper == 1.0  # one cluster cannot bound anything


def _coverage(rho, reps=400, K=50, M=3, level=0.975):
    hits, estimates = 0, []
    for r in range(reps):
        cats = draw_categories(clusters=K, pairs_per_cluster=M, baseline=0.7, discordance=0.3, rho=rho, seed=1000 + r)
        tables = np.stack([np.bincount(c, minlength=4) for c in cats])
        b = icc_upper_bound(tables, level)
        hits += b.upper >= rho
        estimates.append(b.estimate)
    return hits / reps, np.array(estimates)


def test_upper_bound_covers_at_least_nominally():
    level, reps = 0.975, 400
    mcse = math.sqrt(level * (1 - level) / reps)
    for rho in (0.0, 0.2):
        cov, est = _coverage(rho, reps=reps, level=level)
        assert cov >= level - 4 * mcse, (rho, cov)
        # the pooled ANOVA estimator is nearly unbiased at K = 50 (its bias is O(1/K): 0.01 allows for it)
        assert abs(est.mean() - rho) <= 4 * est.std(ddof=1) / math.sqrt(reps) + 0.01, (rho, est.mean())


def test_bound_detects_strong_clustering():
    cats = draw_categories(clusters=300, pairs_per_cluster=3, baseline=0.7, discordance=0.3, rho=0.5, seed=9)
    tables = np.stack([np.bincount(c, minlength=4) for c in cats])
    b = icc_upper_bound(tables, 0.975)
    assert b.upper > 0.3 and b.estimate > 0.3
