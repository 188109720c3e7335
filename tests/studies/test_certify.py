"""Certification at the design point (issue 11.2)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from methods import registry
from methods.qualification import (DesignPoint, TamperedRecordError, certificate_covers, find_coverage,
                                   load_certificate)
from methods.qualification.certificate import interval_bounds
from simlab.scenario import FixedSize, PairedScenario
from studies.qualify.certify import certify, write_certificate
from studies.exact.discordant import DiscordantStates, discordant_probe
from studies.exact.fixed import exact_measures

ISSUE_POINT = dict(clusters=110, margin=0.01)   # tango_score, one trial per cluster, rho 0


def test_issue_example_exceeds_and_is_not_covered(tmp_path):
    """tango_score, K = 110, M = 1, margin 0.01: the rate at discordance 0.078 is 0.02838 >
    0.0275 (the issue's number, from simlab's own exact engine); certification finds a rate
    above the threshold, and the certificate does not cover the design."""
    m = registry.get("tango_score")
    sc = PairedScenario.from_rates(0.9, -0.01, 0.078, clusters=110, cluster_size=FixedSize(trials=1))
    at_issue = exact_measures(sc, m, 0.01, 0.025).pass_rate
    assert at_issue == pytest.approx(0.02838, abs=5e-6)
    states = DiscordantStates(m, 110, 1, 0.01, 0.025)
    assert states.rates(np.array([0.078]))[0] == pytest.approx(at_issue, rel=1e-9)  # two exact engines agree

    cert = certify("tango_score", 110, 1, 0.01)
    assert cert.engine == "exact-discordant" and cert.verdict == "exceeds"
    assert cert.worst_point.rate >= at_issue > cert.threshold == pytest.approx(0.0275)
    path = write_certificate(cert, tmp_path)
    assert load_certificate(path) == cert
    point = DesignPoint(clusters=110, margin=0.01, rho=0.0)
    c = certificate_covers(cert, point)
    assert not c.covered and "exceeds" in c.reason
    got = find_coverage("tango_score", point, tmp_path / "no-records", certificates=[path])
    assert not got.covered and "exceeds" in got.reason


def test_a_qualified_certificate_covers_exactly_its_design(tmp_path):
    cert = certify("tango_score", 110, 1, 0.03)
    assert cert.verdict == "qualified"
    # proven: the bound holds between nodes, and it is what makes the verdict
    assert cert.worst_point.rate <= cert.proven_upper <= cert.threshold
    point = DesignPoint(clusters=110, margin=0.03)
    assert certificate_covers(cert, point).covered
    assert certificate_covers(cert, point.model_copy(update={"rho": 0.4})).covered   # M = 1: rho has no effect
    for other, why in [(point.model_copy(update={"clusters": 111}), "design differs"),
                       (point.model_copy(update={"margin": 0.031}), "design differs"),
                       (point.model_copy(update={"cluster_size": FixedSize(trials=2), "rho": 0.0}), "design differs"),
                       (point.model_copy(update={"discordance": 0.9}), "outside the certified range")]:
        c = certificate_covers(cert, other)
        assert not c.covered and why in c.reason
    path = write_certificate(cert, tmp_path)
    got = find_coverage("tango_score", point, tmp_path)
    assert got.covered and got.record == str(path)   # found in the records directory too   # found in the records directory too


def test_proven_interval_bound_holds_between_nodes():
    """The interval bound (Bhattacharyya angle) is never below the exact rate anywhere in
    the interval: checked on a fine grid for a coarse node set."""
    m = registry.get("tango_score")
    states = DiscordantStates(m, 60, 1, 0.03, 0.025)
    nodes = np.linspace(0.03, 0.5, 12)
    bound = interval_bounds(nodes, states.rates(nodes), 0.03, 60)
    for i in range(nodes.size - 1):
        inside = np.linspace(nodes[i], nodes[i + 1], 41)
        assert np.all(states.rates(inside) <= bound[i] + 1e-12)


def test_probe_refuses_methods_that_see_more_than_the_discordant_counts():
    assert discordant_probe(registry.get("tango_score"), 30, 1, 0.03, 0.025)
    assert not discordant_probe(registry.get("newcombe_hybrid"), 30, 1, 0.03, 0.025)
    assert not discordant_probe(registry.get("cluster_t"), 10, 3, 0.03, 0.025)


def test_simulation_engine_and_tampering(tmp_path):
    """cluster_t at M = 3 with rho up to 0.2 needs simulation; its certificate's point
    verdicts follow from counts under the staged rule, and a forged verdict is caught."""
    cert = certify("cluster_t", 20, 3, 0.1, rho_max=0.2, baseline=(0.8, 1.0), discordance=(0.1, 0.3),
                   min_replications=200, max_replications=800)
    assert cert.engine == "simulation" and cert.replications == (200, 800)
    assert {p.rho for p in cert.points} >= {0.0, 0.2}
    path = write_certificate(cert, tmp_path)
    load_certificate(path)
    data = json.loads(path.read_text())
    data["points"][cert.worst]["n_pass"] = 0
    from methods.qualification.record import body_of
    from methods.qualification import content_hash
    data["certificate_sha256"] = content_hash(body_of(data))
    path.write_text(json.dumps(data))
    with pytest.raises(TamperedRecordError, match="do not follow from 0/"):
        load_certificate(path)


def test_certify_refuses_bad_requests():
    with pytest.raises(ValueError, match="takes no looks"):
        certify("tango_score", 30, 1, 0.03, looks=3)
    with pytest.raises(ValueError, match="exact engine does not apply"):
        certify("newcombe_hybrid", 30, 1, 0.03, engine="exact")


def test_arrange_deals_the_pooled_pairs_in_order():
    """``arrange`` against dealing every pair by hand: discordant pairs first (n10 then n01),
    then the concordant kind, M consecutive pairs per cluster."""
    import numpy as np

    from studies.exact.discordant import arrange

    for K, M in ((1, 1), (7, 3), (5, 10), (12, 1)):
        N = K * M
        a, b = np.triu_indices(N + 1)
        n10, n01 = a.astype(np.int64), (b - a).astype(np.int64)
        for concordant in (0, 3):
            got = arrange(n10, n01, K, M, concordant)
            for r in range(0, n10.size, max(1, n10.size // 40)):
                row = [1] * n10[r] + [2] * n01[r] + [concordant] * (N - n10[r] - n01[r])
                want = [[row[c * M:(c + 1) * M].count(j) for j in range(4)] for c in range(K)]
                assert got[r].tolist() == want, (K, M, concordant, r)
