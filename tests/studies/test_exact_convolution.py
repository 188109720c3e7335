"""The ``exact-convolution`` engine: the law of the pooled discordant counts of K iid
Dirichlet-multinomial clusters by FFT, the exact false-pass rate of a method that sees only
those counts, the E+M calibration of ``dm_score`` and its certificates.

Checked against direct convolution (the slow reference), against the project's exact pooled
law (``simlab.exact.pooled`` from ``cluster_law``), against simulation (4 MC SE), and against
the ``exact-discordant`` engine where both apply (one trial per cluster)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from methods import registry
from methods.fixed import em_table
from methods.protocol import PASS
from methods.qualification import DesignPoint, TamperedRecordError, certificate_covers, load_certificate
from methods.qualification.record import body_of
from methods.reference import design_effect as ref
from simlab.estimands import null_scenario
from simlab.exact import ExactUnsupported, cluster_law
from simlab.exact.pooled import pooled_distribution
from simlab.generate import simulate_tables
from simlab.hashing import content_hash
from simlab.scenario import FixedSize
from studies.exact.convolution import ConvolutionStates, calibrate_em, calibrated_method, nuisance_grid
from studies.exact.discordant import DiscordantStates
from studies.qualify.certify import certification_engine, certify, write_certificate
from methods.qualification.certificate import CertifiedDesign

DM = registry.get("dm_score")


@pytest.mark.parametrize("K, M, cells", [(5, 3, (0.05, 0.02)), (12, 2, (0.2, 0.1)), (7, 4, (0.015, 0.0))])
@pytest.mark.parametrize("rho", [0.0, 0.1, 0.35])
def test_fft_law_is_the_direct_convolution(K, M, cells, rho):
    law = em_table.cluster_discordant_law(M, *cells, rho)
    assert np.allclose(law, ref.dm_cluster_law(M, *cells, rho), atol=1e-15, rtol=0)
    got = em_table.pooled_discordant_law(K, law)
    want = ref.pooled_law(K, law)
    assert got.shape == want.shape == (K * M + 1, K * M + 1)
    assert np.max(np.abs(got - want)) < 1e-14 and abs(got.sum() - 1.0) < 1e-12


def test_fft_law_is_the_projects_pooled_law():
    """``simlab.exact.pooled`` (dynamic programming over the full cluster tables of
    ``cluster_law``) marginalised to (L, W) at two baselines: the same law, whatever the baseline."""
    K, M, rho = 6, 3, 0.2
    for baseline in (0.6, 0.9):
        sc = null_scenario("trial_weighted", baseline, 0.08, 0.03, clusters=K, cluster_size=FixedSize(trials=M),
                           rho=rho)
        tables, probs = pooled_distribution([cluster_law(sc.cells, M, rho)] * K)
        want = np.zeros((K * M + 1, K * M + 1))
        np.add.at(want, (tables[:, 1], tables[:, 2]), probs)
        got = em_table.pooled_discordant_law(K, em_table.null_cluster_law(M, 0.03, 0.08, rho))
        assert np.max(np.abs(got - want)) < 1e-14


def test_cluster_law_does_not_depend_on_the_baseline():
    for baseline in (0.55, 0.75, 0.95):
        sc = null_scenario("trial_weighted", baseline, 0.1, 0.03, clusters=2, cluster_size=FixedSize(trials=3),
                           rho=0.1)
        tables, probs = cluster_law(sc.cells, 3, 0.1)
        law = np.zeros((4, 4))
        np.add.at(law, (tables[:, 1], tables[:, 2]), probs)
        assert np.max(np.abs(law - em_table.null_cluster_law(3, 0.03, 0.1, 0.1))) < 1e-15


@pytest.fixture(scope="module")
def calibrated30():
    return calibrate_em(DM, 30, 3, 0.03, 0.1, 0.025)


@pytest.mark.parametrize("which", ["z", "em"])
def test_exact_rates_agree_with_simulation_at_two_baselines(which, calibrated30):
    """Simulated pass rates at baselines 0.6 and 0.95 (the sampler draws the full 2x2 tables)
    are within 4 MC SE of the exact rate, which ignores the baseline."""
    method = DM if which == "z" else calibrated30.method
    states = ConvolutionStates(method, 30, 3, 0.03, 0.025)
    n = 20_000
    for q, rho in ((0.03, 0.1), (0.1, 0.05), (0.3, 0.1)):
        exact = float(states.rates(q, rho))
        for k, baseline in enumerate((0.6, 0.95)):
            if 2 * (1 - baseline) + 0.03 < q:
                continue
            sc = null_scenario("trial_weighted", baseline, q, 0.03, clusters=30, cluster_size=FixedSize(trials=3),
                               rho=rho)
            sim = method.batch(simulate_tables(sc, seed=100 + k, n_reps=n), 0.03).pass_count() / n
            assert abs(sim - exact) <= 4 * math.sqrt(max(exact * (1 - exact), 1e-6) / n), (q, rho, baseline)


def test_power_agrees_with_simulation(calibrated30):
    states = ConvolutionStates(calibrated30.method, 30, 3, 0.03, 0.025)
    from simlab.scenario import PairedScenario
    n = 20_000
    for q in (0.03, 0.1):
        exact = float(states.pass_probability(q / 2, q / 2, 0.1))
        sc = PairedScenario.from_rates(0.9, 0.0, q, clusters=30, cluster_size=FixedSize(trials=3), rho=0.1)
        sim = calibrated30.method.batch(simulate_tables(sc, seed=31, n_reps=n), 0.03).pass_count() / n
        assert abs(sim - exact) <= 4 * math.sqrt(exact * (1 - exact) / n)


@pytest.mark.parametrize("name", ["tango_score", "dm_score"])
def test_one_trial_per_cluster_agrees_with_the_exact_discordant_engine(name):
    m = registry.get(name)
    conv = ConvolutionStates(m, 60, 1, 0.03, 0.025)
    disc = DiscordantStates(m, 60, 1, 0.03, 0.025)
    q = np.linspace(0.03, 0.5, 17)
    want = disc.rates(q)
    for rho in (0.0, 0.3):     # one pair per cluster: rho has no effect
        assert np.max(np.abs(conv.rates(q, rho) - want)) < 1e-12
    assert np.array_equal(conv.passed, disc_mask(disc, conv))


def disc_mask(disc: DiscordantStates, conv: ConvolutionStates) -> np.ndarray:
    """The exact-discordant engine's passing states as a mask over the convolution lattice."""
    passing = set(zip(disc.a.tolist(), disc.b.tolist()))
    return np.array([(a, b) in passing for a, b in zip(conv.L.tolist(), conv.W.tolist())])


def test_methods_that_see_more_than_the_pooled_counts_are_refused():
    for m in (registry.get("clustered_score"), DM.with_options(robust=1.0), registry.get("cluster_t")):
        with pytest.raises(ExactUnsupported, match="pooled discordant counts"):
            ConvolutionStates(m, 10, 3, 0.03, 0.025)


def test_engine_choice():
    def design(M, rho_max):
        return CertifiedDesign(clusters=30, trials=M, margin=0.03, rho_max=rho_max)
    assert certification_engine(DM, design(3, 0.1), 0.025)[0] == "exact-convolution"
    assert certification_engine(DM, design(3, 0.0), 0.025)[0] == "exact-discordant"
    assert certification_engine(DM, design(1, 0.1), 0.025)[0] == "exact-discordant"
    assert certification_engine(registry.get("clustered_score"), design(3, 0.1), 0.025)[0] is None
    assert certification_engine(registry.get("tango_score"), design(3, 0.1), 0.025)[0] == "exact-convolution"


# ---------------------------------------------------------------- calibration


def test_calibration_is_valid_tight_and_rebuilt_from_its_options(calibrated30):
    cal = calibrated30
    lo, hi = cal.level_range
    assert lo <= cal.level < hi and cal.worst <= 0.025
    o = cal.method.options
    assert (o["em_level"], o["design_clusters"], o["design_trials"], o["design_margin"], o["design_alpha"],
            o["rho_max"]) == (cal.level, 30, 3, 0.03, 0.025, 0.1)
    assert np.array_equal(cal.table, em_table.em_table(30, 3, 0.03, 0.1, cal.level, 0.5))
    consts = cal.method.consts(0.025, np.zeros((1, 30, 4), np.int32))
    assert np.array_equal(consts[em_table.TABLE_AT:], cal.table)
    q, rho = nuisance_grid(0.03, 0.03, 0.5, 0.1)
    rates = ConvolutionStates(cal.method, 30, 3, 0.03, 0.025).rates(q, rho)
    assert rates.max() == pytest.approx(cal.worst, abs=1e-15) and rates.max() <= 0.025
    # tight: the next level that changes the pass set exceeds alpha somewhere on the grid
    above = calibrated_method(DM, 30, 3, 0.03, 0.1, 0.025, hi)
    assert ConvolutionStates(above, 30, 3, 0.03, 0.025).rates(q, rho).max() > 0.025
    # the uncalibrated rule's worst case exceeds alpha at this design (the reason to calibrate)
    assert ConvolutionStates(DM, 30, 3, 0.03, 0.025).rates(q, rho).max() > 0.025


def test_calibration_refuses_other_methods_and_empty_ranges():
    with pytest.raises(ValueError, match="em_level"):
        calibrate_em(registry.get("clustered_score"), 30, 3, 0.03, 0.1, 0.025)
    with pytest.raises(ValueError, match="empty"):
        calibrate_em(DM, 30, 3, 0.03, 0.1, 0.025, discordance=(0.01, 0.02))


# ---------------------------------------------------------------- certificates


def test_certificate_of_the_calibrated_method(tmp_path, calibrated30):
    cert = certify(calibrated30.method, 30, 3, 0.03, rho_max=0.1)
    assert cert.engine == "exact-convolution" and cert.verdict == "qualified" and cert.proven_upper is None
    assert all(p.n_reps == 0 and p.lower == p.rate == p.upper for p in cert.points)
    assert {p.rho for p in cert.points} >= {0.0, 0.1} and len(cert.points) > 700
    assert cert.worst_point.rate >= calibrated30.worst and cert.worst_point.rate <= cert.threshold
    assert "dense exact grid" in cert.search and "no bound between nodes is proven" in cert.search
    assert "Node values are exact" in cert.search
    path = write_certificate(cert, tmp_path)
    assert load_certificate(path) == cert
    point = DesignPoint(clusters=30, margin=0.03, cluster_size=FixedSize(trials=3), rho_max=0.1)
    assert certificate_covers(cert, point).covered
    assert not certificate_covers(cert, point.model_copy(update={"rho_max": 0.2})).covered
    for change, match in ((lambda d: d.update(proven_upper=0.02), "proves no bound"),
                          (lambda d: d["points"][0].update(rate=d["points"][0]["rate"] + 1e-3), "inconsistent")):
        data = json.loads(path.read_text())
        change(data)
        data["certificate_sha256"] = content_hash(body_of(data))
        forged = tmp_path / "forged.cert.json"
        forged.write_text(json.dumps(data))
        with pytest.raises(TamperedRecordError, match=match):
            load_certificate(forged)


def test_a_method_whose_exact_worst_case_exceeds_is_not_qualified():
    cert = certify("tango_score", 30, 3, 0.03, rho_max=0.1)   # ignores the clustering
    assert cert.engine == "exact-convolution" and cert.verdict == "exceeds"
    assert cert.worst_point.rate > cert.threshold and cert.worst_point.rho == pytest.approx(0.1)
