"""studies.exact.fixed: exact operating characteristics of the registered methods.

1. Worked example: the seed chapter's headline (evidence spine, "Three different
   decisions"): clustered_normal, 30 one-trial customers, loss probability 0.04,
   margin 0.03, 95% -> P(pass) = 0.96^30 = 0.29386, exactly and by simulation.
2. Independent slow implementation: every combination of cluster tables of a small
   design enumerated by brute force, each full K-cluster table run through the method,
   weighted -- must equal the engine (which evaluates one representative per state).
3. The simulator agrees with every exact result over a grid of scenarios (rho, unequal
   sizes, label noise, loss) within 4 Monte Carlo standard errors computed from the
   exact values, for both table sources.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from methods import registry
from simlab.exact import ExactUnsupported, cluster_laws
from simlab.scenario import ExplicitSizes, FixedSize, LabelNoise, Missingness, PairedScenario
from studies.exact.fixed import exact_engine, exact_measures
from studies.engine.runner import evaluate_scenario
from tests.reference_values import SEED_FALSE_PASS, SEED_FALSE_PASS_5DP

MARGIN, ALPHA = 0.03, 0.025
SEED_SCENARIO = PairedScenario(cells=(0.96, 0.04, 0.0, 0.0), clusters=30)


def test_seed_false_pass_exact_and_simulated():
    cn = registry.get("clustered_normal")
    r = exact_measures(SEED_SCENARIO, cn, MARGIN, ALPHA)
    assert r.engine == "unit"
    assert r.pass_rate == pytest.approx(SEED_FALSE_PASS, rel=1e-12)
    assert round(r.pass_rate, 5) == SEED_FALSE_PASS_5DP
    # moments engine gives the same number (every cluster has one trial of fixed size)
    assert exact_measures(SEED_SCENARIO, cn, MARGIN, ALPHA, engine="moments").pass_rate == pytest.approx(SEED_FALSE_PASS,
                                                                                                       rel=1e-12)
    n = 200_000
    c = evaluate_scenario(SEED_SCENARIO, ["clustered_normal"], [MARGIN], [ALPHA], n, seed=11)
    p = c.count("n_pass", "clustered_normal") / n
    se = math.sqrt(r.pass_rate * (1 - r.pass_rate) / n)
    assert abs(p - r.pass_rate) < 4 * se


def test_seed_unequal_clusters_report_both_estimands():
    win, lose = (0.0, 0.0, 1.0, 0.0), (0.0, 1.0, 0.0, 0.0)
    sc = PairedScenario(cells=(0.0, 0.9, 0.1, 0.0), clusters=30,
                        cluster_size=ExplicitSizes(sizes=(1,) * 15 + (9,) * 15),
                        cluster_cells=(win,) * 15 + (lose,) * 15)
    assert sc.true_difference_trial() == pytest.approx(-0.8)
    assert sc.true_difference_cluster() == pytest.approx(0.0)
    c = evaluate_scenario(sc, ["clustered_normal", "paired_wald"], [MARGIN], [ALPHA], 50, seed=1)
    m = c.measures()
    # each method is scored against the estimand it targets, and (deterministic DGM) hits it
    np.testing.assert_allclose(m["true_value"][:, 0, 0], [0.0, -0.8])
    np.testing.assert_allclose(m["bias"][:, 0, 0], [0.0, 0.0], atol=1e-9)
    for name, theta in (("clustered_normal", 0.0), ("paired_wald", -0.8)):
        r = exact_measures(sc, registry.get(name), MARGIN, ALPHA)
        assert r.true_value == pytest.approx(theta) and r.bias == pytest.approx(0.0, abs=1e-12)
        assert r.pass_rate == 0.0


def _brute(scenario, method):
    """Every combination of cluster tables as a full K-cluster table, weighted."""
    laws = cluster_laws(scenario)
    combos = list(itertools.product(*(range(len(law[1])) for law in laws)))
    tables = np.array([[law[0][i] for law, i in zip(laws, c)] for c in combos], np.int32)
    w = np.array([math.prod(law[1][i] for law, i in zip(laws, c)) for c in combos])
    r = method.batch(tables, MARGIN, ALPHA)
    theta = method.true_value(scenario)
    has = ~(np.isnan(r.lower) | np.isnan(r.upper))
    cover = has & (r.lower <= theta) & (theta <= r.upper)
    ok = np.isfinite(r.estimate)
    return {"pass_rate": w[r.status == 1].sum(), "inconclusive_rate": w[r.status == 2].sum(),
            "coverage": w[cover].sum() / w[has].sum() if w[has].sum() > 0 else math.nan,
            "mean_estimate": (w[ok] * r.estimate[ok]).sum() / w[ok].sum() if w[ok].sum() > 0 else math.nan}


SMALL = [
    PairedScenario(cells=(0.55, 0.2, 0.15, 0.1), clusters=3, cluster_size=FixedSize(trials=2), rho=0.3),
    PairedScenario(cells=(0.6, 0.25, 0.1, 0.05), clusters=4, rho=0.5,
                   missingness=Missingness(loss_rate=0.2), label_noise=LabelNoise(candidate_sensitivity=0.9)),
    PairedScenario(cells=(0.5, 0.25, 0.15, 0.1), clusters=3, cluster_size=ExplicitSizes(sizes=(1, 2, 2))),
]


@pytest.mark.parametrize("k", range(len(SMALL)))
def test_engines_equal_brute_force_for_every_method_they_cover(k):
    sc = SMALL[k]
    covered = 0
    for name in registry.names("fixed"):
        m = registry.get(name)
        if "min_clusters" in m.options:
            m = m.with_options(min_clusters=2)
        engine, _ = exact_engine(sc, m, ALPHA)
        if engine is None:
            continue
        covered += 1
        r = exact_measures(sc, m, MARGIN, ALPHA, engine)
        b = _brute(sc, m)
        for key in ("pass_rate", "inconclusive_rate", "coverage", "mean_estimate"):
            got = getattr(r, key)
            if math.isnan(b[key]):
                assert math.isnan(got), (name, key)
            else:
                assert got == pytest.approx(b[key], abs=1e-12), (name, engine, key)
    assert covered >= 3


def test_engine_choice_follows_the_probes():
    fixed3 = PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=10, cluster_size=FixedSize(trials=3), rho=0.1)
    assert exact_engine(fixed3, registry.get("paired_wald"))[0] == "pooled"
    cn2 = registry.get("clustered_normal").with_options(min_clusters=2)
    assert exact_engine(fixed3, cn2)[0] == "moments"
    # with K = 10 < min_clusters = 30 the default method is always inconclusive and its
    # estimate (mean of equal-size cluster means) is the pooled difference: pooled-exact
    assert exact_engine(fixed3, registry.get("clustered_normal"))[0] == "pooled"
    assert exact_engine(SEED_SCENARIO, registry.get("clustered_normal"))[0] == "unit"
    lossy = PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=10, cluster_size=FixedSize(trials=3),
                           missingness=Missingness(loss_rate=0.1))
    engine, why = exact_engine(lossy, cn2)
    assert engine is None and "loss" in why
    with pytest.raises(ExactUnsupported):
        exact_measures(lossy, cn2, MARGIN, ALPHA)


GRID = [
    # one-trial clusters with rho, label noise and loss: every order-invariant method is exact
    ("unit", PairedScenario(cells=(0.84, 0.08, 0.05, 0.03), clusters=12, rho=0.3,
                            label_noise=LabelNoise(baseline_sensitivity=0.95, candidate_specificity=0.9),
                            missingness=Missingness(loss_rate=0.1)), "composition"),
    # Dirichlet-multinomial clusters of three trials
    ("dm", PairedScenario.from_rates(0.85, -0.03, 0.12, clusters=6, cluster_size=FixedSize(trials=3), rho=0.2),
     "composition"),
    # the same through the trial-level reference generator
    ("dm-trial", PairedScenario.from_rates(0.85, -0.03, 0.12, clusters=6, cluster_size=FixedSize(trials=3), rho=0.2),
     "trial"),
    # independent pairs with judge noise, two trials per cluster
    ("noise", PairedScenario(cells=(0.7, 0.12, 0.1, 0.08), clusters=8, cluster_size=FixedSize(trials=2),
                             label_noise=LabelNoise(baseline_sensitivity=0.9, candidate_sensitivity=0.9)),
     "composition"),
    # unequal explicit sizes, cluster-specific cells
    ("unequal", PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=6,
                               cluster_size=ExplicitSizes(sizes=(1, 2, 3) * 2),
                               cluster_cells=((0.6, 0.2, 0.15, 0.05), (0.5, 0.3, 0.1, 0.1), (0.7, 0.1, 0.1, 0.1)) * 2,
                               rho=0.1), "composition"),
]
REPS = 6000


@pytest.mark.parametrize("label,scenario,sampler", GRID, ids=[g[0] for g in GRID])
def test_simulator_agrees_with_every_exact_result(label, scenario, sampler):
    refs, exact = [], {}
    for name in registry.names("fixed"):
        m = registry.get(name)
        if "min_clusters" in m.options:
            m = m.with_options(min_clusters=2)
        engine, _ = exact_engine(scenario, m, ALPHA)
        if engine is None:
            continue
        try:
            exact[name] = exact_measures(scenario, m, MARGIN, ALPHA, engine, max_seconds=5.0)
        except ExactUnsupported:
            continue
        refs.append({"name": name, "options": dict(m.options)})
    assert len(refs) >= 3
    c = evaluate_scenario(scenario, refs, [MARGIN], [ALPHA], REPS, seed=20261129, sampler=sampler)
    assert c.sampler == sampler
    meas = c.measures()
    for i, key in enumerate(c.methods):
        e = exact[refs[i]["name"]]
        n = REPS
        for rate in ("pass_rate", "inconclusive_rate"):
            p = getattr(e, rate)
            se = math.sqrt(p * (1 - p) / n)
            assert abs(meas[rate][i, 0, 0] - p) <= 4 * se + 1e-12, (label, key, rate, meas[rate][i, 0, 0], p)
        n_int = meas["n_interval"][i, 0, 0]
        if n_int > 0 and not math.isnan(e.coverage):
            se = math.sqrt(e.coverage * (1 - e.coverage) / n_int)
            assert abs(meas["coverage"][i, 0, 0] - e.coverage) <= 4 * se + 1e-12, (label, key, "coverage")
        n_est = meas["n_estimate"][i, 0, 0]
        if n_est > 1 and not math.isnan(e.mean_estimate):
            se = e.empirical_se / math.sqrt(n_est)
            assert abs(meas["mean_estimate"][i, 0, 0] - e.mean_estimate) <= 4 * se + 1e-9, (label, key, "estimate")
