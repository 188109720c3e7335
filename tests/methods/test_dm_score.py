"""``dm_score``: Tango's score statistic with the Dirichlet-multinomial design effect at rho_max,
critical value z or an exact E+M table.

Validated three ways (project rules): Tango's (1998) published worked examples (one pair per
cluster, where the design effect is 1, must give ``tango_score``'s interval); the slow
reference ``methods.reference.design_effect`` (numerical MLE, direct convolution, sorting) on
random clustered tables and on the E+M table of a small design; and edge cases.  The robust
variant is ``clustered_score`` with ``icc_floor = rho_max`` when uncalibrated, and its pass set
lies inside the model variant's."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from methods import check_method, registry
from methods.fixed import em_table
from methods.protocol import INCONCLUSIVE, PASS, STATUS_NAMES, Estimand
from methods.fixed import dm_score
from methods.reference import design_effect as ref
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario

HYP = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
tables_st = st.lists(st.tuples(*[st.integers(0, 4)] * 4), min_size=1, max_size=25)
DM = registry.get("dm_score")
SMALL = dict(clusters=8, trials=3, margin=0.03, rho_max=0.1, alpha=0.025)   # a design the reference can tabulate


def one_pair_per_cluster(a, b, c, d) -> np.ndarray:
    """A paper's (a, b, c, d) with difference (b - c)/n as one pair per cluster: b wins, c losses."""
    rows = [[1, 0, 0, 0]] * a + [[0, 0, 1, 0]] * b + [[0, 1, 0, 0]] * c + [[0, 0, 0, 1]] * d
    return np.array(rows, dtype=np.int32)


def small_calibrated(level: float = 0.03, **options):
    """``dm_score@alpha=level``: the E+M table of whatever design it is given (SMALL in these tests)."""
    return DM.with_options(**options).calibrated(level)


def test_registered_and_conforms():
    assert "dm_score" in registry.names("fixed") and DM.estimand is Estimand.TRIAL and DM.citation
    assert "estimand" in check_method(DM).passed
    assert "estimand" in check_method(DM.with_options(robust=1.0)).passed
    cal = small_calibrated()
    assert cal.identity.source_sha256 != DM.identity.source_sha256 and cal.label == "dm_score@alpha=0.03"
    assert registry.get("dm_score@alpha=0.03").identity == cal.identity
    # check_method's own designs (6 x 3, one cluster, 24 and 100 clusters of 1 and 3 pairs, margin 0.1)
    assert "estimand" in check_method(cal).passed
    assert DM.calibration == "exact-em" and registry.get("clustered_score").calibration is None


# ---------------------------------------------------------------- published worked examples

# Tango (1998) Stat Med 17:891-908 worked examples as tabulated for tango_score
# (tests/methods/test_methods_trial.py): (4, 9, 3, 16), 95%: -0.027 to 0.390; (43, 0, 1, 0), 90%:
# -0.096 to 0.037; Fagerland et al. (2014) (1, 1, 7, 12): -0.517232 to -0.026003.
TANGO = [((4, 9, 3, 16), 0.025, (-0.027, 0.390), 3), ((43, 0, 1, 0), 0.05, (-0.096, 0.037), 3),
         ((1, 1, 7, 12), 0.025, (-0.517232, -0.026003), 6)]


@pytest.mark.parametrize("table, alpha, expected, digits", TANGO)
@pytest.mark.parametrize("rho_max", [0.0, 0.1, 0.5])
def test_one_pair_per_cluster_is_tangos_interval(table, alpha, expected, digits, rho_max):
    t = one_pair_per_cluster(*table)
    r = DM.with_options(rho_max=rho_max).analyze(t, 0.1, alpha)
    assert (round(r.lower, digits), round(r.upper, digits)) == pytest.approx(expected, abs=1e-12)
    tango = registry.get("tango_score").analyze(t.sum(axis=0), 0.1, alpha)
    assert r.lower == pytest.approx(tango.lower, abs=1e-9) and r.upper == pytest.approx(tango.upper, abs=1e-9)


def test_rho_max_zero_is_tango_on_the_pooled_table_at_any_cluster_size():
    rng = np.random.default_rng(3)
    t = rng.multinomial(3, [0.8, 0.1, 0.06, 0.04], size=40)
    r = DM.with_options(rho_max=0.0).analyze(t, 0.05)
    tango = registry.get("tango_score").analyze(t.sum(axis=0), 0.05)
    assert r.lower == pytest.approx(tango.lower, abs=1e-9) and r.upper == pytest.approx(tango.upper, abs=1e-9)
    # with clusters of three the design effect 1 + 2 rho widens it
    assert DM.analyze(t, 0.05).lower < r.lower


# ---------------------------------------------------------------- slow reference


@HYP
@given(rows=tables_st, margin=st.sampled_from([0.03, 0.1]), rho=st.sampled_from([0.0, 0.1, 0.4]),
       robust=st.sampled_from([0.0, 1.0]))
def test_kernel_matches_reference(rows, margin, rho, robust):
    t = np.array(rows, dtype=np.int64)
    got = DM.with_options(rho_max=rho, robust=robust).analyze(t, margin)
    lo, hi, est, status = ref.dm_score(t, margin, rho_max=rho, robust=robust)
    if math.isnan(est):
        assert got.status == "inconclusive" and math.isnan(got.estimate)
        return
    assert got.estimate == pytest.approx(est, abs=1e-12)
    assert got.lower == pytest.approx(lo, abs=1e-7) and got.upper == pytest.approx(hi, abs=1e-7)
    if abs(ref.dm_z(t, -margin, rho, robust) - stats.norm.isf(0.025)) > 1e-7:
        assert got.status == status


def test_e_step_table_matches_reference():
    s = SMALL
    u, want = ref.em_table(s["clusters"], s["trials"], s["margin"], s["rho_max"], 0.03)
    got = em_table.em_table(s["clusters"], s["trials"], s["margin"], s["rho_max"], 0.03, 0.5)
    assert got.shape == want.shape == (em_table.NODES,)
    assert np.max(np.abs(got - want)) < 1e-6          # the reference's MLE is numerical
    assert np.allclose(u * u + s["margin"], em_table.node_discordances(s["margin"], 0.5), atol=1e-15)


def test_calibrated_kernel_matches_reference_on_simulated_tables():
    s = SMALL
    m = small_calibrated()
    sc = PairedScenario.from_rates(0.8, -0.01, 0.2, clusters=s["clusters"], cluster_size=FixedSize(trials=3), rho=0.1)
    tables = simulate_tables(sc, seed=7, n_reps=150)
    res = m.batch(tables, s["margin"], s["alpha"])
    u, tab = ref.em_table(s["clusters"], s["trials"], s["margin"], s["rho_max"], 0.03)
    compared = 0
    for r in range(tables.shape[0]):
        lo, hi, est, status = ref.dm_score(tables[r], s["margin"], rho_max=0.1, nominal_alpha=0.03)
        assert res.estimate[r] == pytest.approx(est, abs=1e-12)
        assert res.upper[r] == pytest.approx(hi, abs=1e-6)
        w, l, n = tables[r, :, 2].sum(), tables[r, :, 1].sum(), tables[r].sum()
        qt = ref.restricted_discordance(-0.03, float(w), float(l), float(n))
        c = float(np.interp(math.sqrt(max(qt - 0.03, 0.0)), u, tab))
        if abs(ref.dm_z(tables[r], -0.03, 0.1) - c) > 1e-6:    # not a near-tie of the two tables
            assert (res.status[r] == PASS) == (status == "pass")
            compared += 1
    assert compared > 140 and 0 < np.count_nonzero(res.status == PASS) < tables.shape[0]


# ---------------------------------------------------------------- robust variant


def test_robust_uncalibrated_is_clustered_score_with_the_icc_floor():
    sc = PairedScenario.from_rates(0.85, -0.02, 0.15, clusters=40, cluster_size=FixedSize(trials=3), rho=0.2)
    tables = simulate_tables(sc, seed=5, n_reps=400)
    a = DM.with_options(robust=1.0, rho_max=0.1).batch(tables, 0.03)
    b = registry.get("clustered_score").with_options(icc_floor=0.1).batch(tables, 0.03)
    assert np.array_equal(a.lower, b.lower) and np.array_equal(a.upper, b.upper)
    assert np.array_equal(a.status, b.status)


@pytest.mark.parametrize("calibrated", [False, True])
def test_robust_pass_set_lies_inside_the_model_pass_set(calibrated):
    s = SMALL
    model = small_calibrated() if calibrated else DM
    robust = model.with_options(robust=1.0)
    sc = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=s["clusters"], cluster_size=FixedSize(trials=3), rho=0.3)
    tables = simulate_tables(sc, seed=9, n_reps=4000)
    pm = model.batch(tables, 0.03).status == PASS
    pr = robust.batch(tables, 0.03).status == PASS
    assert np.all(pm[pr]) and pr.sum() > 0 and pm.sum() > pr.sum()


# ---------------------------------------------------------------- edge cases


@pytest.mark.parametrize("method", [DM, DM.with_options(robust=1.0)], ids=["model", "robust"])
def test_edge_cases(method):
    z = stats.norm.isf(0.025)
    for K in (30, 300):
        for row in ([3, 0, 0, 0], [0, 0, 0, 3], [1, 0, 0, 2]):   # zero discordant pairs
            r = method.analyze(np.tile(row, (K, 1)), 0.03)
            N, weight = 3 * K, 3 * K * (1 + 2 * 0.1)
            passes = N * 0.03 / math.sqrt(weight * 0.03 * 0.97) >= z
            assert r.estimate == 0.0 and r.lower < 0.0 < r.upper and r.passed == passes
        assert method.analyze(np.tile([3, 0, 0, 0], (K, 1)), 0.03).passed == (K == 300)
    losses = method.analyze(np.tile([0, 3, 0, 0], (30, 1)), 0.03)
    assert losses.lower == -1.0 and losses.status == "fail"
    wins = method.analyze(np.tile([0, 0, 3, 0], (30, 1)), 0.03)
    assert wins.upper == 1.0 and wins.status == "pass"
    one = method.analyze([[2, 0, 1, 0]], 0.03)
    assert one.lower < 0.0 < one.upper and one.status == "fail"
    assert method.analyze([[0, 0, 0, 0]], 0.03).status == "inconclusive"
    t = np.array([[2, 1, 0, 0], [0, 0, 3, 1], [1, 1, 1, 1]])
    with_empty = np.insert(t, 1, [0, 0, 0, 0], axis=0)
    a, b = method.analyze(t, 0.1), method.analyze(with_empty, 0.1)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)


def test_calibrated_edge_cases_and_refusals():
    m = small_calibrated()
    ties = np.tile([3, 0, 0, 0], (8, 1))
    r = m.analyze(ties, 0.03)
    consts = m.consts(0.025, 0.03, ties[None])
    assert consts[em_table.DESIGNS_AT] == 1 and tuple(consts[em_table.DESIGN_AT:em_table.DESIGN_AT + 2]) == (8, 3)
    table = consts[em_table.DESIGN_AT + 2:]
    assert np.array_equal(table, em_table.em_table(8, 3, 0.03, 0.1, 0.03, 0.5))
    c0 = table[0]                         # q~ = m exactly when nothing is discordant: the first node
    N, weight = 24, 24 * 1.2
    assert r.passed == (N * 0.03 / math.sqrt(weight * 0.03 * 0.97) >= c0)
    # another margin is another design: its own table, no refusal
    other = m.consts(0.025, 0.05, ties[None])[em_table.DESIGN_AT + 2:]
    assert np.array_equal(other, em_table.em_table(8, 3, 0.05, 0.1, 0.03, 0.5)) and not np.array_equal(other, table)
    assert m.analyze(ties, 0.05).status in ("pass", "fail")
    # the nominal level, whatever alpha it is asked for
    a, b = m.analyze(ties, 0.03, alpha=0.05), m.analyze(ties, 0.03)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)
    for option, value in (("robust", 0.5), ("rho_max", 1.0), ("em_q_hi", 0.0)):
        with pytest.raises(ValueError, match=option):
            DM.with_options(**{option: value}).analyze(ties, 0.03)
    with pytest.raises(ValueError, match="em_q_hi = 0.02 must exceed the margin 0.03"):
        small_calibrated(em_q_hi=0.02).analyze(ties, 0.03)
    assert DM.with_options(em_q_hi=0.02).analyze(ties, 0.03).status == DM.analyze(ties, 0.03).status  # unused
    with pytest.raises(ValueError, match="beyond the exact E-step's 2447 pairs"):
        m.analyze(np.tile([3, 0, 0, 0], (900, 1)), 0.03)
    with pytest.raises(ValueError, match="E\\+M table of 1 clusters x 300 pairs cannot be computed exactly"):
        m.analyze(np.array([[300, 0, 0, 0]]), 0.03)      # the exact cluster law of 300 pairs fails numerically
    for removed in ("em_level", "design_clusters", "design_alpha"):
        with pytest.raises(ValueError, match="no option"):
            DM.with_options(**{removed: 1.0})


def test_calibrated_design_is_each_replications_own():
    """K = the non-empty clusters, M = the largest cluster size, per replication: an empty cluster
    changes nothing, a batch of mixed designs decides each row as it would alone, and unequal
    sizes use the table of the K x M design (checked against the reference)."""
    m = small_calibrated()
    rng = np.random.default_rng(17)
    win, even = [0.55, 0.02, 0.3, 0.13], [0.8, 0.1, 0.06, 0.04]      # cells (n11, n10, n01, n00)
    rows = [rng.multinomial(3, win if r % 2 == 0 else even, size=8) for r in range(6)]
    rows[1][2] = 0                                   # one cluster missing: 7 x 3
    rows[2][5] = rng.multinomial(4, [0.8, 0.1, 0.06, 0.04])   # one larger cluster: 8 x 4
    rows[3][0] = rng.multinomial(2, [0.8, 0.1, 0.06, 0.04])   # one smaller cluster: 8 x 3
    tables = np.array(rows, np.int32)
    assert [tuple(d) for d in dm_score.designs_of(tables)] == [(7, 3), (8, 3), (8, 4)]
    res = m.batch(tables, 0.03)
    for r in range(tables.shape[0]):
        alone = m.analyze(tables[r], 0.03)
        assert (alone.lower, alone.upper, alone.status) == (res.lower[r], res.upper[r], STATUS_NAMES[res.status[r]])
        lo, hi, est, status = ref.dm_score(tables[r], 0.03, rho_max=0.1, nominal_alpha=0.03)
        assert res.upper[r] == pytest.approx(hi, abs=1e-6) and res.estimate[r] == pytest.approx(est, abs=1e-12)
        assert (res.status[r] == PASS) == (status == "pass")
    assert 0 < np.count_nonzero(res.status == PASS) < tables.shape[0]
    with_empty = np.insert(tables[0], 4, [0, 0, 0, 0], axis=0)
    a, b = m.analyze(tables[0], 0.03), m.analyze(with_empty, 0.03)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)
    assert m.analyze(np.zeros((8, 4), np.int32), 0.03).status == "inconclusive"


def test_kernel_refuses_constants_of_other_tables():
    m = small_calibrated()
    t = np.tile([3, 0, 0, 0], (1, 8, 1)).astype(np.int32)
    consts = m.consts(0.025, 0.03, t)
    out = [np.empty(1), np.empty(1), np.empty(1), np.empty(1, np.int8)]
    with pytest.raises(ValueError, match="no E\\+M table"):
        dm_score.kernel(np.tile([3, 0, 0, 0], (1, 9, 1)).astype(np.int32), 0.03, consts, *out)


def test_batch_equals_analyze_and_status_matches_bound():
    sc = PairedScenario(cells=(0.80, 0.08, 0.06, 0.06), clusters=40, rho=0.3, cluster_size=FixedSize(trials=3))
    tables = simulate_tables(sc, seed=11, n_reps=300)
    br = DM.batch(tables, 0.1)
    for i in (0, 7, 299):
        r = DM.analyze(tables[i], 0.1)
        assert (r.lower, r.upper, r.estimate) == (br.lower[i], br.upper[i], br.estimate[i])
    assert np.all((br.lower >= -0.1) == (br.status == PASS)) and not np.any(br.status == INCONCLUSIVE)
    assert np.all(br.lower <= br.estimate + 1e-12) and np.all(br.estimate <= br.upper + 1e-12)


def test_declared_cost_counts_the_table_rebuild():
    from methods import AnalysisTooCostly, analysis_cost, check_analysis_cost

    t = np.tile([3, 0, 0, 0], (300, 1))
    base = analysis_cost(DM, t)                      # uncalibrated: linear in the cells
    assert base.driver == "the number of clusters"
    cal = DM.calibrated(0.024)
    c = analysis_cost(cal, t)
    states = 901 * 902 // 2
    assert c.seconds == pytest.approx(base.seconds + dm_score.SECONDS_PER_STATE * states)
    assert c.bytes == pytest.approx(base.bytes + dm_score.BYTES_PER_STATE * states)
    assert "406,351 lattice states" in c.driver
    with pytest.raises(AnalysisTooCostly, match="E\\+M table"):
        check_analysis_cost(cal, t, max_seconds=1.0)
    # one table per design of the batch: 300 x 3 and 299 x 3 (a missing cluster)
    two = np.stack([t, np.vstack([t[:-1], [[0, 0, 0, 0]]])])
    c2 = analysis_cost(cal, two)
    states2 = states + 898 * 899 // 2
    assert c2.seconds == pytest.approx(analysis_cost(DM, two).seconds + dm_score.SECONDS_PER_STATE * states2)
    assert "2 designs (299 x 3, 300 x 3" in c2.driver
    assert analysis_cost(cal, np.zeros((300, 4))) == base    # no trials: no table
