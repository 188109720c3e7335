"""Exact sequential path enumeration: the seed's reference numbers, an independent reference
(scipy binomial CDF + numpy convolution), brute force over all paths of a small trinomial
design, and Monte Carlo through simlab's generator within 4 MC standard errors."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from methods import registry
from methods.protocol import Estimand, FixedMethod
from methods.sequential.base import LookSchedule
from simlab.exact import ExactUnsupported
from simlab.exact.sequential import binomial_paths, trinomial_paths
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, LabelNoise, Missingness, PairedScenario
from studies.exact import sequential as se
from tests.reference_values import SEQUENTIAL_SEED_PROMOTION_5DP

LOOKS = tuple(range(50, 501, 50))
SCHEDULE = LookSchedule(looks=LOOKS)


def reference(q, rule):
    """Independent of the kernels and of the engine: the seed's rules written with scipy's
    binomial CDF, unstopped mass propagated by numpy convolution."""
    u = np.array([1.0])
    n = 0
    first = []
    for j, nj in enumerate(LOOKS):
        d = nj - n
        u = np.convolve(u, stats.binom.pmf(np.arange(d + 1), d, q))
        n = nj
        stop = rule(np.arange(nj + 1), nj, j)
        first.append(u[stop].sum())
        u = np.where(stop, 0.0, u)
    first = np.array(first)
    en = float(np.sum(np.array(LOOKS) * first) + LOOKS[-1] * u.sum())
    return first, en


RULES = {
    "repeated_fixed": lambda x, n, j: stats.binom.cdf(x, n, 0.03) <= 0.05,
    "bonferroni": lambda x, n, j: stats.binom.cdf(x, n, 0.03) <= 0.005,
    "fixed_final": lambda x, n, j: (stats.binom.cdf(x, n, 0.03) <= 0.05) & (j == len(LOOKS) - 1),
    "likelihood_ratio": lambda x, n, j: x * np.log(0.01 / 0.03) + (n - x) * np.log(0.99 / 0.97) >= np.log(20),
}


def test_seed_reference_numbers_to_five_decimals():
    # the seed chapter (tests/reference_values.py): looks 50..500, margin 0.03, alpha 0.05, alternative 0.01, true loss 0.03
    tab = se.seed_table(cases=se.SEED_CASES[:1])
    got = {r["method"]: round(r["promote"], 5) for r in tab["rows"]}
    assert got == SEQUENTIAL_SEED_PROMOTION_5DP


def test_seed_table_matches_independent_reference():
    tab = se.seed_table()
    assert len(tab["rows"]) == 16
    for r in tab["rows"]:
        first, en = reference(r["recorded_loss"], RULES[r["method"]])
        np.testing.assert_allclose(r["promote_by_look"], first, atol=1e-12, rtol=0)
        assert r["expected_observations"] == pytest.approx(en, abs=1e-9)
        assert r["harm"] == 0.0
    biased = [r for r in tab["rows"] if r["true_loss"] == 0.10]
    # every loss hidden: every rule promotes with certainty at its first feasible look
    assert {r["method"]: (r["promote"], r["expected_observations"]) for r in biased} == {
        "repeated_fixed": (1.0, 100.0), "likelihood_ratio": (1.0, 150.0), "bonferroni": (1.0, 200.0),
        "fixed_final": (1.0, 500.0)}


def _brute_force(method, looks, probs, margin=0.05, alpha=0.05):
    """Sum over every sequence of one-trial clusters (cells with probability > 0)."""
    sch = LookSchedule(looks=looks)
    cells = [c for c in range(4) if probs[c] > 0]
    seqs = np.array(list(itertools.product(cells, repeat=looks[-1])))
    tables = np.zeros((len(seqs), looks[-1], 4), np.int32)
    for k in range(looks[-1]):
        tables[np.arange(len(seqs)), k, seqs[:, k]] = 1
    w = np.prod(np.asarray(probs)[seqs], axis=1)
    r = method.batch(tables, sch, margin, alpha)
    L = len(looks)
    promote = np.array([w[(r.decision == 1) & (r.stop_look == j)].sum() for j in range(L)])
    harm = np.array([w[(r.decision == 3) & (r.stop_look == j)].sum() for j in range(L)])
    en = float(np.sum(w * np.asarray(looks)[r.stop_look]))
    return promote, harm, en


@pytest.mark.parametrize("name", ["msprt", "alpha_spending", "likelihood_ratio", "repeated_fixed", "bonferroni"])
def test_trinomial_engine_equals_brute_force(name):
    m = registry.get(name)
    if name == "repeated_fixed":
        m = m.with_inner(registry.get("clustered_normal").with_options(min_clusters=2))
    if name == "alpha_spending":
        m = m.with_options(harm_alpha=0.2, spending="pocock")
    if name == "likelihood_ratio":
        m = m.with_options(alternative=0.01)
    looks = (3, 5, 7)
    probs = (0.45, 0.25, 0.1, 0.2)  # n11, loss, win, n00: both tie kinds present
    exact = se.exact_trinomial(m, LookSchedule(looks=looks), probs[1], probs[2], 0.05, 0.05, ("n11", "n00"))
    promote, harm, en = _brute_force(m, looks, probs)
    np.testing.assert_allclose(exact.promote_by_look, promote, atol=1e-13)
    np.testing.assert_allclose(exact.harm_by_look, harm, atol=1e-13)
    assert exact.expected_observations == pytest.approx(en, abs=1e-11)


def test_binomial_engine_equals_brute_force():
    m = registry.get("repeated_fixed")
    looks = (4, 8, 12)
    exact = se.exact_binomial(m, LookSchedule(looks=looks), 0.2, 0.3, 0.1)
    promote, _, en = _brute_force(m, looks, (0.8, 0.2, 0.0, 0.0), margin=0.3, alpha=0.1)
    np.testing.assert_allclose(exact.promote_by_look, promote, atol=1e-13)
    assert exact.expected_observations == pytest.approx(en, abs=1e-11)


def _tie_sensitive():
    import numba as nb

    @nb.njit(cache=False)
    def kernel(tables, margin, consts, lower, upper, estimate, status):
        for r in range(tables.shape[0]):
            a = 0
            d = 0
            for k in range(tables.shape[1]):
                a += tables[r, k, 0]
                d += tables[r, k, 3]
            estimate[r] = 0.0
            lower[r] = 0.0 if a > d else -1.0
            upper[r] = 1.0
            status[r] = 1 if a > d else 0

    return FixedMethod(name="tie_sensitive_test_only", version="0", estimand=Estimand.TRIAL,
                       citation="test double", summary="passes iff n11 > n00", kernel=kernel)


def test_engine_refuses_what_it_cannot_enumerate():
    with pytest.raises(ExactUnsupported, match="order of the clusters"):
        se.exact_binomial(registry.get("betting_cs"), SCHEDULE, 0.03, 0.03, 0.05)
    m = registry.get("repeated_fixed").with_inner(_tie_sensitive())
    with pytest.raises(ExactUnsupported, match="n11 and n00"):
        se.exact_trinomial(m, LookSchedule(looks=(2, 4)), 0.1, 0.1, 0.03, 0.05, ("n11", "n00"))
    with pytest.raises(ExactUnsupported, match="one trial pair"):
        se.observed_step_law(PairedScenario(cells=(0.9, 0.1, 0, 0), clusters=10, cluster_size=FixedSize(trials=2)))
    with pytest.raises(ExactUnsupported, match="lost pairs"):
        se.observed_step_law(PairedScenario(cells=(0.9, 0.1, 0, 0), clusters=10,
                                            missingness=Missingness(loss_rate=0.1)))
    with pytest.raises(ValueError, match="strictly increasing"):
        binomial_paths(0.1, [5, 5], [np.zeros(6, np.int8)] * 2)
    with pytest.raises(ValueError, match="shape"):
        binomial_paths(0.1, [5], [np.zeros(5, np.int8)])
    with pytest.raises(ValueError, match="codes"):
        binomial_paths(0.1, [2], [np.array([0, 2, 0], np.int8)])
    with pytest.raises(ValueError, match="exceed 1"):
        trinomial_paths(0.7, 0.6, [1], [np.zeros((2, 2), np.int8)])


def _mc_check(exact, res, looks):
    n = res.n_reps
    checks = [(exact.promote, res.promote_count() / n)]
    checks += list(zip(exact.promote_by_look, res.first_crossing_counts() / n))
    checks += list(zip(exact.harm_by_look, res.first_crossing_counts(3) / n))
    for p, phat in checks:
        se_ = math.sqrt(p * (1 - p) / n)
        if se_ == 0.0:
            assert phat == p
        else:
            assert abs(phat - p) <= 4 * se_, (p, phat, se_)
    ends = np.asarray(looks)[res.stop_look].astype(float)
    assert res.trials.astype(float).mean() == pytest.approx(ends.mean())
    sd = ends.std(ddof=1)
    if sd == 0:
        assert ends.mean() == pytest.approx(exact.expected_observations, abs=1e-9)
    else:
        assert abs(ends.mean() - exact.expected_observations) <= 4 * sd / math.sqrt(n)


@pytest.mark.parametrize("case", se.SEED_CASES, ids=lambda c: c.label.split(" (")[0])
def test_monte_carlo_agrees_with_exact_seed(case):
    scenario = se.seed_scenario(case)
    tables = simulate_tables(scenario, seed=11, n_reps=20_000)
    for name in se.SEED_METHODS:
        m = se.seed_method(name)
        exact = se.exact_for_scenario(m, scenario, SCHEDULE, 0.03, 0.05)
        _mc_check(exact, m.batch(tables, SCHEDULE, 0.03, 0.05), LOOKS)


def test_monte_carlo_agrees_with_exact_trinomial():
    scenario = PairedScenario(cells=(0.55, 0.06, 0.04, 0.35), clusters=200)
    looks = (20, 50, 100, 200)
    sch = LookSchedule(looks=looks)
    tables = simulate_tables(scenario, seed=5, n_reps=10_000)
    for m in (registry.get("msprt"), registry.get("alpha_spending").with_options(harm_alpha=0.05),
              registry.get("repeated_fixed").with_inner(registry.get("clustered_normal").with_options(min_clusters=2))):
        exact = se.exact_for_scenario(m, scenario, sch, 0.03, 0.05)
        _mc_check(exact, m.batch(tables, sch, 0.03, 0.05), looks)


def test_label_noise_enters_through_recorded_cells():
    # half the losses recorded as passes: the exact engine sees a loss rate of 0.015
    sc = PairedScenario(cells=(0.97, 0.03, 0.0, 0.0), clusters=500, label_noise=LabelNoise(candidate_specificity=0.5))
    assert se.observed_step_law(sc)["p_loss"] == pytest.approx(0.015)
    a = se.exact_for_scenario(registry.get("repeated_fixed"), sc, SCHEDULE, 0.03, 0.05)
    b = se.exact_binomial(registry.get("repeated_fixed"), SCHEDULE, 0.015, 0.03, 0.05)
    assert a.promote == pytest.approx(b.promote, abs=1e-15)
