"""Calibration at the design (issue 26.1, ``studies.qualify.calibrate``): the exact route,
the search-then-certify simulation route and a sequential method, each checked against what
it claims -- a certified worst case <= alpha at the calibrated level, the largest such level
among the candidates, a search stream the certificate never saw, and a registry name that
resolves to exactly the certified method."""
from __future__ import annotations

import math

import numpy as np
import pytest

from methods import registry
from methods.protocol import PASS
from simlab.estimands import null_scenario
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize
from studies.qualify.calibrate import calibrate, manifest_name
from studies.qualify.certify import certify

ALPHA = 0.025


def test_exact_route_is_the_largest_candidate_level_within_alpha():
    cal = calibrate("clustered_score", 30, 1, 0.03, 0.0)
    cert, search = cal.certificate, cal.search
    assert search["route"] == "exact-discordant" and cert.engine == "exact-discordant"
    assert cert.verdict == "qualified" and cert.worst_point.rate <= ALPHA and cert.proven_upper <= ALPHA
    assert "target_not_used" not in search
    # a target given for the exact route was taken silently (probe round 3): it is said to be unused
    given = calibrate("clustered_score", 30, 1, 0.03, 0.0, target=0.01)
    assert given.nominal_alpha == cal.nominal_alpha and "target 0.01 is not used" in given.search["target_not_used"]
    candidates = sorted(set(search["levels"]) | set(search["fine_levels"] or ()))
    assert cal.nominal_alpha in candidates
    # the coarse candidates above the chosen level exceed alpha exactly, and so does the next
    # candidate above it (certified afresh): the chosen level is the largest within alpha
    assert all(w > ALPHA for lv, w in zip(search["levels"], search["worst"]) if lv > cal.nominal_alpha)
    above = min(lv for lv in candidates if lv > cal.nominal_alpha)
    assert certify(registry.get(f"clustered_score@alpha={above!r}"), 30, 1, 0.03, 0.0).worst_point.rate > ALPHA
    # the name a manifest registers finds exactly the certified method, and certifying it
    # again (an independent run of the exact engine) gives the same worst case
    name = manifest_name(cal.method)
    assert name == f"clustered_score@alpha={cal.nominal_alpha!r}"
    again = certify(registry.get(name), 30, 1, 0.03, 0.0)
    assert registry.get(name).identity == cal.method.identity
    assert again.worst_point.rate == pytest.approx(cert.worst_point.rate, abs=1e-12)


@pytest.fixture(scope="module")
def simulated():
    return calibrate("clustered_score", 40, 3, 0.05, 0.1, search_replications=4000)


def test_simulation_route_certifies_on_a_stream_the_search_never_saw(simulated):
    cal = simulated
    cert, search = cal.certificate, cal.search
    assert search["route"] == "simulation" and cert.engine == "simulation"
    assert search["search_seed"] != 20261129          # the certificate's stream is the policy seed
    assert cert.verdict == "qualified" and cert.threshold == ALPHA
    assert all(p.upper <= ALPHA for p in cert.points)  # every scenario's staged bound, not only the worst
    assert cal.nominal_alpha < ALPHA                    # the nominal level exceeds alpha at this design
    lv, worst = np.asarray(search["levels"]), np.asarray(search["worst"])
    assert np.all(np.diff(worst) >= 0)                  # common random numbers: monotone in the level
    assert worst[lv <= cal.nominal_alpha].max() <= cal.target
    assert registry.get(manifest_name(cal.method)).identity == cal.method.identity


def test_simulation_route_holds_on_a_third_stream(simulated):
    """The estimand check: the calibrated method's false-pass at the certificate's worst
    scenario, simulated on a stream neither search nor certificate used, is within 4 MC SE of
    at most alpha."""
    cal = simulated
    w = cal.certificate.worst_point
    sc = null_scenario("trial_weighted", w.baseline, w.discordance, 0.05, clusters=40,
                       cluster_size=FixedSize(trials=3), rho=w.rho)
    reps = 40_000
    tables = simulate_tables(sc, 99_173, reps)
    rate = float(np.mean(cal.method.batch(tables, 0.05, ALPHA).status == PASS))
    assert rate <= ALPHA + 4 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def test_a_sequential_method_is_calibrated_through_its_boundary():
    cal = calibrate("alpha_spending", 30, 1, 0.05, 0.0, looks=3, search_replications=4000)
    cert = cal.certificate
    assert cal.method.sequential and cert.design.looks == 3
    assert cert.verdict == "qualified" and all(p.upper <= ALPHA for p in cert.points)
    assert cal.nominal_alpha < ALPHA and manifest_name(cal.method).startswith("alpha_spending@alpha=")
    assert registry.get(manifest_name(cal.method)).identity == cal.method.identity


def test_bad_requests_are_refused():
    with pytest.raises(ValueError, match="sequential: give looks"):
        calibrate("alpha_spending", 30, 1, 0.05, 0.0)
    with pytest.raises(ValueError, match="takes no looks"):
        calibrate("clustered_score", 30, 1, 0.05, 0.0, looks=3)
    with pytest.raises(ValueError, match="target must lie"):
        calibrate("clustered_score", 30, 1, 0.05, 0.0, target=0.5)
