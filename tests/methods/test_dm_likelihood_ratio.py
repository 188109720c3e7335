"""``dm_likelihood_ratio``: the likelihood ratio of a Dirichlet-multinomial alternative against an
approximate least-favourable mixture of null laws (Elliott, Mueller & Watson 2015).

Validated (project rules) against independent implementations -- scipy's Dirichlet-multinomial
and multinomial laws for the cluster likelihoods and the statistic, EMW's iteration written in
numpy, a brute-force cutoff -- against exact rates (a small design's rejection probability by
enumerating every type-count vector, which the simulator and kernel must match within 4 Monte
Carlo standard errors), and on edge cases.  No published worked example exists for this
construction (it is built per design); where it reduces to a known test it is checked
against it: with one null point and one alternative it is the Neyman-Pearson test."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from methods import check_method, registry
from methods.fixed import _least_favourable as lf
from methods.fixed import dm_likelihood_ratio as lr
from methods.protocol import FAIL, INCONCLUSIVE, PASS, Estimand
from simlab.estimands import null_scenario
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario

LR = registry.get("dm_likelihood_ratio")
FAST = LR.with_options(draws=600.0, n_q=12.0)        # a small construction: the tests' designs build in < 1 s
MARGIN = 0.03


def scipy_cluster_logpmf(w: int, l: int, n: int, p01: float, p10: float, rho: float) -> float:
    """log P(w, l) of one cluster by scipy (a component with mean 0 is dropped; it must be 0)."""
    x = np.array([w, l, n - w - l])
    p = np.array([p01, p10, 1.0 - p01 - p10])
    if np.any((p <= 0) & (x > 0)):
        return -math.inf
    keep = p > 0
    if keep.sum() == 1:
        return 0.0
    if rho == 0.0:
        return float(stats.multinomial(n, p[keep]).logpmf(x[keep]))
    a = (1.0 - rho) / rho
    return float(stats.dirichlet_multinomial(a * p[keep], n).logpmf(x[keep]))


def slow_statistic(table: np.ndarray, null, log_lam, alt, log_w) -> float:
    """log sum_a w_a prod_k f_a - log sum_i lambda_i prod_k f_i, cluster by cluster with scipy."""
    def log_lik(point):
        s = 0.0
        for n11, n10, n01, n00 in table:
            n = int(n11 + n10 + n01 + n00)
            if n:
                s += scipy_cluster_logpmf(int(n01), int(n10), n, *point)
        return s

    a = logsumexp([lw + log_lik(p) for p, lw in zip(alt, log_w)])
    b = logsumexp([lw + log_lik(p) for p, lw in zip(null, log_lam)])
    return a - b


def design_args(method, K: int, M: int, level: float):
    o = method.options
    alt, wts = lr.alternative(method, MARGIN)
    points, log_lam, cutoff = lf.alfd_weights(K, M, MARGIN, o["rho_max"], level, alt, wts, o["q_hi"], int(o["n_q"]),
                                              int(o["n_rho"]), int(o["draws"]), lr.SEED)
    return points, log_lam, cutoff, alt, np.log(wts)


# ---------------------------------------------------------------- the registered method

def test_registered_and_conforms():
    assert "dm_likelihood_ratio" in registry.names("fixed") and LR.estimand is Estimand.TRIAL
    assert "Elliott, Mueller & Watson (2015)" in LR.citation and LR.calibration == "least-favourable"
    assert "estimand" in check_method(FAST).passed
    cal = LR.calibrated(0.0245)
    assert cal.label == "dm_likelihood_ratio@alpha=0.0245"
    assert registry.get("dm_likelihood_ratio@alpha=0.0245").identity == cal.identity != LR.identity


# ---------------------------------------------------------------- independent implementations

@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("p01, p10, rho", [(0.0, 0.03, 0.1), (0.01, 0.04, 0.0), (0.2, 0.25, 0.3), (0.05, 0.05, 0.1)])
def test_cluster_law_is_scipys_dirichlet_multinomial(n, p01, p10, rho):
    ours = lf.cluster_log_pmf(n, p01, p10, rho)
    for w in range(n + 1):
        for l in range(n + 1 - w):
            ref = scipy_cluster_logpmf(w, l, n, p01, p10, rho)
            if ref == -math.inf:
                assert ours[w, l] == lf.NEG
            else:
                assert ours[w, l] == pytest.approx(ref, abs=1e-10)
    assert np.exp(ours[ours > lf.NEG / 2]).sum() == pytest.approx(1.0, abs=1e-12)


def test_cluster_law_is_the_simulators():
    """The simulator's law of one cluster's (losses, wins) is em_table.cluster_discordant_law."""
    from methods.fixed.em_table import cluster_discordant_law

    p01, p10 = 0.013, 0.043
    ours = np.exp(lf.cluster_log_pmf(3, p01, p10, 0.1)) * (lf.cluster_log_pmf(3, p01, p10, 0.1) > lf.NEG / 2)
    assert np.allclose(ours.T, cluster_discordant_law(3, p10, p01, 0.1), atol=1e-13)


def reference_iterate(e, isw, alt, rows, lam, fixed, level, step, n_it):
    """:func:`iterate` in numpy, as EMW's appendix A.2.1 writes it (the test's slow reference)."""
    rp = fixed
    e, isw, alt = e[rows], isw[rows], alt[rows]
    for _ in range(n_it):
        with np.errstate(divide="ignore"):
            rp = fixed + (alt > np.log(e @ lam)) @ isw
        lam[:] = np.clip(lam * np.exp(np.minimum(step * (rp - level) / level, 50.0)), lf.LAMBDA_MIN, lf.LAMBDA_MAX)
    return rp


def test_weight_iteration_matches_numpy_reference():
    rng = np.random.default_rng(5)
    U, G = 400, 7
    e = rng.uniform(0.0, 1.0, (U, G))
    e[np.arange(U), rng.integers(0, G, U)] = 1.0
    isw = rng.uniform(0.0, 1.0, (U, G))
    isw /= isw.sum(axis=0) * 5.0
    alt = rng.normal(-1.0, 2.0, U)
    fixed = np.full(G, 0.001)
    a, b = np.full(G, 1.0 / G), np.full(G, 1.0 / G)
    rows = np.flatnonzero(rng.uniform(size=U) < 0.8)
    rp_a = lf.iterate(e, isw, alt, rows, a, fixed, 0.05, 2.0, 40)
    rp_b = reference_iterate(e, isw, alt, rows, b, fixed, 0.05, 2.0, 40)
    assert np.allclose(a, b, rtol=1e-9) and np.allclose(rp_a, rp_b, rtol=1e-12)


def test_unique_rows_is_numpys():
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 3, (5000, 6)).astype(np.int32)
    rows, mult = lf.unique_rows(counts)
    want_rows, want_mult = np.unique(counts, axis=0, return_counts=True)
    assert np.array_equal(rows, want_rows) and np.array_equal(mult, want_mult)


def test_final_cutoff_is_the_smallest_that_holds_every_point():
    rng = np.random.default_rng(8)
    stat = rng.normal(0.0, 1.0, 300)
    isw = rng.uniform(0.0, 1.0, (300, 4)) / 300 * 0.3
    fixed = np.array([0.0, 0.002, 0.0, 0.001])
    c = lf.final_cutoff(stat, isw, fixed, 0.05)
    held = (fixed + isw[stat > c].sum(axis=0)).max()
    assert held <= 0.05
    nxt = stat[stat <= c].max()             # letting the next row in breaks the level
    assert (fixed + isw[stat >= nxt].sum(axis=0)).max() > 0.05


@pytest.mark.parametrize("K, M", [(6, 3), (12, 2), (1, 3)])
def test_statistic_and_decision_match_the_slow_implementation(K, M):
    level = 0.025
    points, log_lam, cutoff, alt, log_w = design_args(FAST, K, M, level)
    rng = np.random.default_rng(K * 10 + M)
    tables = np.stack([rng.multinomial(M, [0.45, 0.08, 0.04, 0.43], size=K) for _ in range(30)]).astype(np.int32)
    tables[0] = 0
    tables[0, :, 0] = M                                  # only ties
    consts = FAST.consts(level, MARGIN, tables)
    res = FAST.batch(tables, MARGIN, level)
    # the second clause: dm_score's lower bound at the superiority level (validated in its own tests)
    strict = registry.get("dm_score").with_options(rho_max=0.1).batch(tables, MARGIN, 1e-4).lower >= -MARGIN
    for r in range(len(tables)):
        slow = slow_statistic(tables[r], points, log_lam, alt, log_w)
        fast = lr.statistic(tables, r, consts, lr.block_at(tables, r, consts))
        assert fast == pytest.approx(slow, rel=1e-9, abs=1e-9)
        if abs(slow - cutoff) > 1e-9:     # the cutoff can equal a statistic: there, float rounding decides
            assert res.status[r] == (PASS if slow > cutoff or strict[r] else FAIL)


def test_one_null_point_is_the_neyman_pearson_test():
    """With one null point the mixture is that point: pass iff f_A / f_0 exceeds e^cutoff."""
    m = FAST.with_options(n_q=2.0, q_hi=0.0301)          # two nearly equal points on [m, 0.0301]
    points, log_lam, cutoff, alt, log_w = design_args(m, 8, 2, 0.025)
    t = np.zeros((1, 8, 4), np.int32)
    t[0, :, 0] = 2
    t[0, 0] = (0, 0, 1, 1)
    slow = slow_statistic(t[0], points, log_lam, alt, log_w)
    assert (m.batch(t, MARGIN, 0.025).status[0] == PASS) == (slow > cutoff)


# ---------------------------------------------------------------- exact rate at a small design

def exact_pass_rate(method, K: int, M: int, q: float, rho: float, level: float) -> float:
    """P(pass) on the null boundary by enumerating every count vector of the K clusters' types
    (multinomial over the cluster law): the kernel decides one representative table each."""
    types = lf.cluster_types(M)
    p01, p10 = (q - MARGIN) / 2, (q + MARGIN) / 2
    law = np.exp(lf.cluster_log_pmf(M, p01, p10, rho))[types[:, 0], types[:, 1]]
    law = law / law.sum()
    vectors = [v for v in itertools.product(range(K + 1), repeat=len(types)) if sum(v) == K]
    tables = np.zeros((len(vectors), K, 4), np.int32)
    for i, v in enumerate(vectors):
        k = 0
        for (w, l), c in zip(types, v):
            for _ in range(c):
                tables[i, k] = (M - w - l, l, w, 0)
                k += 1
    passed = method.batch(tables, MARGIN, level).status == PASS
    probs = np.array([stats.multinomial.pmf(v, K, law) for v in vectors])
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    return float(probs[passed].sum())


@pytest.mark.parametrize("q", [0.05, 0.2])
def test_simulated_false_pass_matches_the_exact_rate(q):
    K, M, rho, reps = 6, 2, 0.1, 40_000
    exact = exact_pass_rate(FAST, K, M, q, rho, 0.05)
    sc = null_scenario("trial_weighted", 0.5 + MARGIN / 2, q, MARGIN, clusters=K, cluster_size=FixedSize(trials=M),
                       rho=rho)
    sim = float(np.mean(FAST.batch(simulate_tables(sc, 77, reps), MARGIN, 0.05).status == PASS))
    se = math.sqrt(max(exact * (1 - exact), 1e-6) / reps)
    assert abs(sim - exact) <= 4 * se, (sim, exact, se)


def test_exact_rate_on_its_grid_is_near_its_level():
    """The construction holds its importance-sampled rates at the level; the exact rates on its
    grid lie within the importance sampling's error (generous: 40% of the level) and the
    largest is not far below the level (the test uses its level)."""
    K, M, level = 6, 2, 0.05
    m = FAST.with_options(draws=4000.0)
    points, *_ = design_args(m, K, M, level)
    exact = [exact_pass_rate(m, K, M, p01 + p10, rho, level) for p01, p10, rho in points]
    assert max(exact) <= 1.4 * level and max(exact) >= 0.6 * level, exact


# ---------------------------------------------------------------- edge cases

def test_edge_cases():
    K = 30
    t = np.zeros((5, K, 4), np.int32)
    t[1, :, 0] = 3                    # all ties, both pass
    t[2, :, 3] = 3                    # all ties, both fail
    t[3, :, 1] = 3                    # every pair a loss
    t[4, :, 2] = 3                    # every pair a win
    res = FAST.batch(t, MARGIN, 0.025)
    assert res.status[0] == INCONCLUSIVE and math.isnan(res.estimate[0])
    assert res.status[1] == res.status[2]           # ties only: n11 and n00 are the same to the test
    assert res.status[3] == FAIL and res.status[4] == PASS
    one = np.zeros((1, 1, 4), np.int32)
    one[0, 0] = (1, 0, 1, 1)
    assert FAST.batch(one, MARGIN, 0.025).status[0] in (PASS, FAIL)
    # an empty cluster is a missing one
    with_empty = np.concatenate([t[4:5], np.zeros((1, 2, 4), np.int32)], axis=1)
    assert FAST.batch(with_empty, MARGIN, 0.025).status[0] == res.status[4]
    # a few clusters of ties cannot pass: (1 - m)^K is far above the level
    few = np.zeros((1, 3, 4), np.int32)
    few[0, :, 0] = 3
    assert FAST.batch(few, MARGIN, 0.025).status[0] == FAIL


@pytest.mark.parametrize("move", ["loss to tie", "tie to win", "loss to win"])
def test_better_data_never_turn_a_pass_into_a_fail(move):
    """Monotone where a release gate needs it (checked on simulated tables, not proven): one
    cluster's pair moved towards the candidate keeps every pass a pass; a sample of only wins
    passes (by the superiority clause where the ratio alone would fail it)."""
    sc = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=30, cluster_size=FixedSize(trials=3), rho=0.1)
    t = simulate_tables(sc, 5, 1500)
    before = FAST.batch(t, MARGIN, 0.025).status == PASS
    u = t.copy()
    src, dst = {"loss to tie": (1, 0), "tie to win": (0, 2), "loss to win": (1, 2)}[move]
    for r in range(len(u)):
        k = np.flatnonzero(u[r, :, src] > 0)
        if len(k):
            u[r, k[0], src] -= 1
            u[r, k[0], dst] += 1
    after = FAST.batch(u, MARGIN, 0.025).status == PASS
    assert 0.03 < before.mean() < 0.97 and not np.any(before & ~after)
    wins = np.zeros((1, 30, 4), np.int32)
    wins[0, :, 2] = 3
    assert FAST.batch(wins, MARGIN, 0.025).status[0] == PASS


def test_the_exact_engines_do_not_take_it_at_clusters_of_several_pairs():
    """Its decision depends on how the discordant pairs fall into clusters, so the exact
    engines (pooled discordant counts) must not certify it; with one pair per cluster the
    pooled counts are all it sees.  (The probe once dealt only random states, all decided alike
    at 100 x 3, and took it for a pooled method.)"""
    from studies.exact.discordant import discordant_probe

    assert not discordant_probe(FAST, 100, 3, MARGIN, 0.025)
    assert discordant_probe(FAST, 30, 1, MARGIN, 0.025)


def test_rows_are_independent_of_the_batch():
    sc = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=20, cluster_size=FixedSize(trials=3), rho=0.1)
    t = simulate_tables(sc, 3, 60)
    whole = FAST.batch(t, MARGIN, 0.025)
    parts = [FAST.batch(t[i:i + 7], MARGIN, 0.025) for i in range(0, 60, 7)]
    assert np.array_equal(whole.status, np.concatenate([p.status for p in parts]))
    assert np.array_equal(whole.lower, np.concatenate([p.lower for p in parts]))


def test_a_stored_construction_decides_exactly_as_a_fresh_build(tmp_path, monkeypatch):
    """The persistent store returns the build bit for bit: the same decisions and bounds from a
    fresh build, from the store, and with the store off; a calibrated method's cost estimate
    drops the build once its mixture is stored (and only for its own level and design)."""
    from methods.analysis_cost import analysis_cost
    from simlab import stored_constructions

    monkeypatch.setenv(stored_constructions.ENV_VAR, str(tmp_path))
    cal = FAST.calibrated(0.0233)
    sc = PairedScenario.from_rates(0.9, -MARGIN, 0.1, clusters=20, cluster_size=FixedSize(trials=2), rho=0.1)
    good = PairedScenario.from_rates(0.7, 0.15, 0.2, clusters=20, cluster_size=FixedSize(trials=2), rho=0.1)
    t = np.concatenate([simulate_tables(sc, 11, 150), simulate_tables(good, 12, 150)])
    one = t[:1]
    assert "least-favourable mixture of 1 design" in analysis_cost(cal, one).driver
    lf.stored_alfd_weights.cache_clear()
    built = cal.batch(t, MARGIN, 0.025)
    assert len(list((tmp_path / "constructions").glob("alfd-*.json"))) == 1
    assert "is stored" in analysis_cost(cal, one).driver
    assert "least-favourable mixture" in analysis_cost(FAST.calibrated(0.0234), one).driver
    assert "least-favourable mixture" in analysis_cost(cal, simulate_tables(PairedScenario.from_rates(
        0.9, -MARGIN, 0.1, clusters=21, cluster_size=FixedSize(trials=2), rho=0.1), 1, 1)).driver
    lf.stored_alfd_weights.cache_clear()
    stored = cal.batch(t, MARGIN, 0.025)
    monkeypatch.setenv(stored_constructions.ENV_VAR, "off")
    lf.stored_alfd_weights.cache_clear()
    fresh = cal.batch(t, MARGIN, 0.025)
    for a in (stored, fresh):
        assert np.array_equal(a.status, built.status) and np.array_equal(a.lower, built.lower)
    assert (built.status == PASS).any() and (built.status == FAIL).any()


def test_a_base_methods_cost_counts_its_mixture_stored_at_the_common_level_only(tmp_path, monkeypatch):
    """A base method's estimate cannot see its level: it counts a mixture stored at
    ``COMMON_LEVEL`` (the commands' default alpha) as built -- a rerun of a 4 s false-pass was
    refused as a 50 s one -- and one stored only at another level as not."""
    from methods.analysis_cost import analysis_cost
    from methods.fixed.dm_likelihood_ratio import COMMON_LEVEL
    from simlab import stored_constructions

    monkeypatch.setenv(stored_constructions.ENV_VAR, str(tmp_path))
    sc = PairedScenario.from_rates(0.9, -MARGIN, 0.1, clusters=19, cluster_size=FixedSize(trials=2), rho=0.1)
    t = simulate_tables(sc, 11, 20)
    lf.stored_alfd_weights.cache_clear()
    FAST.batch(t, MARGIN, 0.02)
    assert "least-favourable mixture of 1 design" in analysis_cost(FAST, t[:1]).driver
    FAST.batch(t, MARGIN, COMMON_LEVEL)
    assert "is stored" in analysis_cost(FAST, t[:1]).driver
    lf.stored_alfd_weights.cache_clear()


def test_shipped_constructions_are_current_and_one_equals_its_rebuild(monkeypatch):
    """Every shipped mixture (``methods/fixed/constructions``: the designs the shipped
    certificates cover) is keyed by the current code of the registered method, so it is the one
    a process would build; the certified 100 x 3 one is rebuilt here and compared, to the last
    bits a CPU's own floating-point math moves (about a minute: the one full-size construction
    the suite builds)."""
    from simlab import stored_constructions

    monkeypatch.setenv(stored_constructions.ENV_VAR, "off")          # read the shipped entries only
    shipped = sorted(lf.SHIPPED.glob("alfd-*.json"))
    assert shipped, "no shipped construction"
    base = LR.identity.source_sha256
    entries = {}
    for path in shipped:
        args = json.loads(path.read_text())["arguments"]
        assert args.pop("identity") == base, f"{path.name} was built by other code: rebuild the shipped constructions"
        key = stored_constructions.entry_key("dm_likelihood_ratio.alfd_weights", base, args)
        entries[path.name] = (args, stored_constructions.load(lf.STORE_PREFIX, key, (lf.SHIPPED,)))
        assert entries[path.name][1] is not None, path.name
    args, found = next(e for e in entries.values() if e[0]["level"] == 0.02425)
    o = LR.options
    alt, wts = lr.alternative(LR, args["margin"])
    assert [list(p) for p in alt] == args["alt_points"] and list(wts) == args["alt_weights"]
    assert (args["rho_max"], args["q_hi"], args["n_q"], args["n_rho"], args["draws"], args["seed"]) == (
        o["rho_max"], o["q_hi"], int(o["n_q"]), int(o["n_rho"]), int(o["draws"]), lr.SEED)
    points, log_lam, cutoff = lf.alfd_weights(args["K"], args["M"], args["margin"], o["rho_max"], args["level"], alt,
                                              wts, o["q_hi"], int(o["n_q"]), int(o["n_rho"]), int(o["draws"]), lr.SEED)
    # the same construction up to the last bits of this CPU's floating-point math (numpy's SIMD
    # exp / log differ across instruction sets: 5.7e-14 at most on an AMD EPYC against the Intel
    # machine that built the entry); every machine decides with the shipped entry itself
    assert np.array_equal(found["points"], points)
    assert np.allclose(found["log_lambda"], log_lam, rtol=1e-12, atol=1e-12)
    assert found["cutoff"][0] == pytest.approx(cutoff, rel=1e-9, abs=1e-12)
    # so a budget (recommend's) counts no construction for the certified method at its design
    from methods.analysis_cost import analysis_cost

    one = np.zeros((1, args["K"], 4), np.int32)
    one[0, :, 0] = args["M"]
    cost = analysis_cost(LR.calibrated(args["level"]), one)
    assert "is stored" in cost.driver and cost.seconds < 1.0


def test_bad_options_and_large_clusters_are_refused():
    t = np.zeros((1, 4, 4), np.int32)
    t[0, :, 0] = 3
    for bad in ({"alt_weight": 1.0}, {"q_hi": 0.02}, {"n_q": 1.5}, {"rho_max": 1.0}, {"draws": 1.0},
                {"superiority_level": 0.5}):
        with pytest.raises(ValueError, match="option|q_hi"):
            FAST.with_options(**bad).batch(t, MARGIN, 0.025)
    big = np.zeros((1, 2, 4), np.int32)
    big[0, :, 0] = lf.MAX_TRIALS + 1
    with pytest.raises(ValueError, match=f"at most {lf.MAX_TRIALS} pairs"):
        FAST.batch(big, MARGIN, 0.025)


# ---------------------------------------------------------------- calibration at a design

def test_calibrate_takes_the_least_favourable_route_and_certifies_on_a_fresh_stream():
    """``simlab calibrate``'s route for this method: the short list of levels around alpha,
    searched on the search stream, then one certificate at threshold alpha on the policy's
    stream with stages up to LFD_MAX_REPLICATIONS (studies.qualify.calibrate)."""
    from studies.qualify.calibrate import LFD_LEVEL_FRACTIONS, LFD_MAX_REPLICATIONS, SEARCH_OFFSET, calibrate

    method = LR.with_options(draws=3000.0, n_q=20.0)
    cal = calibrate(method, 12, 2, 0.1, 0.1, search_replications=3000, n_jobs=1)
    s = cal.search
    assert s["route"] == "least-favourable" and s["search_replications"] == 3000
    assert s["levels"] == [round(f * 0.025, 6) for f in LFD_LEVEL_FRACTIONS]
    assert s["search_seed"] == 20261129 + SEARCH_OFFSET and "seed 20261129" in cal.certificate.search
    j = s["levels"].index(cal.nominal_alpha)
    assert s["worst"][j] <= cal.target == pytest.approx(0.976 * 0.025)
    assert all(w > cal.target for w in s["worst"][j + 1:])       # the largest level that met the target
    c = cal.certificate
    assert c.verdict == "qualified" and c.threshold == 0.025 and c.allowed_excess == 1.0
    assert c.replications[-1] == LFD_MAX_REPLICATIONS
    assert cal.method.label == f"dm_likelihood_ratio@alpha={cal.nominal_alpha:g}"
    # where no listed level meets the target on the search stream it is refused, with the figures
    with pytest.raises(ValueError, match=r"refused: at every nominal level down to 0\.023 .* above the target 0\.0244"):
        calibrate(method, 20, 2, 0.1, 0.1, search_replications=3000, n_jobs=1)
