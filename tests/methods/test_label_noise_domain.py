"""Issue 30, item 3: the label-noise domain of a certificate -- the judge errors it searches
(the nodes it lists, and nothing between them), whether a registered calibration lies inside
it, and what that check guarantees when the judge's true rates lie outside the box
(``methods.qualification.label_noise``)."""
from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from methods.qualification import CertifiedDesign, DesignPoint
from methods.qualification.label_noise import LabelNoiseDomain, bound_level, calibration_outside, rate_intervals
from simlab.scenario import FixedSize, LabelNoise


def domain(**kw) -> LabelNoiseDomain:
    return LabelNoiseDomain(**{"sensitivity": (0.9, 1.0), "specificity": (0.9, 1.0), "calibration_items": 800, **kw})


ALPHA = 0.025


def judges(models):
    return [(m.baseline_sensitivity, m.baseline_specificity, m.candidate_sensitivity, m.candidate_specificity)
            for m in models]


def test_the_corner_search_is_every_corner_per_arm_and_the_centre():
    models = domain().models("corners")
    assert len(models) == 17 and len(set(models)) == 17
    corners = {(m.baseline_sensitivity, m.baseline_specificity, m.candidate_sensitivity, m.candidate_specificity)
               for m in models[:-1]}
    assert corners == {(a, b, c, d) for a in (0.9, 1.0) for b in (0.9, 1.0) for c in (0.9, 1.0) for d in (0.9, 1.0)}
    assert (0.9, 0.9, 1.0, 1.0) in corners and (1.0, 1.0, 0.9, 0.9) in corners  # differential judges are inside
    centre = models[-1]
    assert (centre.baseline_sensitivity, centre.candidate_specificity) == (0.95, 0.95)
    assert all(m.calibration.items == 800 and not m.calibration.shared for m in models)


def test_the_edge_search_adds_every_edge_midpoint():
    d = domain(specificity=(0.8, 1.0))
    corners, edges = judges(d.models("corners")), judges(d.models("edges"))
    assert edges[:16] == corners[:16] and edges[-1] == corners[-1] == (0.95, 0.9, 0.95, 0.9)  # corners ... centre
    middle = edges[16:-1]
    assert len(edges) == 49 == len(set(edges)) and len(middle) == 32         # 4 coordinates x 2^3 corners of a face
    for point in middle:                                                      # exactly one coordinate at its midpoint
        mids = [x == m for x, m in zip(point, (0.95, 0.9, 0.95, 0.9))]
        assert sum(mids) == 1
        assert all(x in ((0.9, 1.0) if i % 2 == 0 else (0.8, 1.0)) for i, x in enumerate(point) if not mids[i])
    shared = judges(domain(calibration_shared=True, specificity=(0.8, 1.0)).models("edges"))
    assert {(a, b) for a, b, _, _ in shared} == {(se, sp) for se in (0.9, 0.95, 1.0) for sp in (0.8, 0.9, 1.0)}
    assert len(shared) == 9 and all(a == c and b == e for a, b, c, e in shared)   # the full 3 x 3 grid, one judge
    with pytest.raises(ValueError, match="nodes must be one of edges, corners"):
        d.models("everywhere")


def test_a_shared_set_has_one_judge_and_a_point_domain_one_model():
    shared = domain(calibration_shared=True).models("corners")
    assert len(shared) == 5 and all(m.baseline_sensitivity == m.candidate_sensitivity for m in shared)
    assert all(m.calibration.shared for m in shared)
    for nodes in ("corners", "edges"):
        assert len(domain(sensitivity=(0.9, 0.9), specificity=(0.8, 0.8)).models(nodes)) == 1


@pytest.mark.parametrize("kw,match", [
    ({"sensitivity": (0.0, 0.9)}, "0 < lo <= hi <= 1"),
    ({"specificity": (0.9, 0.8)}, "0 < lo <= hi <= 1"),
    ({"sensitivity": (0.5, 1.0), "specificity": (0.5, 1.0)}, "must exceed 1"),
    ({"calibration_items": 0}, "calibration_items"),
])
def test_bad_domains_are_refused_naming_the_field(kw, match):
    with pytest.raises(ValidationError, match=match):
        domain(**kw)


def test_the_bounds_are_clopper_pearson_at_one_sided_level_one_minus_alpha_over_the_rates():
    c = np.array([[300, 20, 10, 70], [280, 40, 5, 75]])
    est = rate_intervals(c, ALPHA)
    assert est["level"] == pytest.approx(1.0 - ALPHA / 4) == bound_level(ALPHA, 4)  # 4 rates, two sets
    assert rate_intervals(c[:1], ALPHA)["level"] == pytest.approx(1.0 - ALPHA / 2)  # one shared set: 2 rates
    assert rate_intervals(c, 0.005)["level"] == pytest.approx(1.0 - 0.005 / 4)     # follows the certificate's alpha
    a = ALPHA / 4
    for row, (x, n) in enumerate([(300, 320), (280, 320)]):  # sensitivity, from the beta quantiles directly
        assert est["sensitivity_lo"][row] == pytest.approx(stats.beta.ppf(a, x, n - x + 1), rel=1e-12)
        assert est["sensitivity_hi"][row] == pytest.approx(stats.beta.ppf(1 - a, x + 1, n - x), rel=1e-12)
    assert est["specificity"][1] == pytest.approx(75 / 80)


def test_a_calibration_inside_the_domain_is_covered_and_outside_is_named():
    d = domain()
    assert calibration_outside(d, [[380, 20, 20, 380], [380, 20, 20, 380]], ALPHA) is None
    why = calibration_outside(d, [[380, 20, 20, 380], [380, 20, 40, 360]], ALPHA)
    assert why.startswith("the candidate set's specificity 0.9 has one-sided 0.9938 Clopper-Pearson bounds")
    assert "not inside the certified [0.9, 1]" in why
    # the point estimate 0.925 is inside [0.9, 1], but a set this small cannot say so
    assert "bounds" in calibration_outside(domain(calibration_items=80), [[37, 3, 3, 37], [37, 3, 3, 37]], ALPHA)


@pytest.mark.parametrize("counts,match", [
    ([[380, 20, 20, 380], [380, 20, 20, 370]], "candidate calibration set has 790 items, the certificate covers "
                                                "exactly 800"),
    ([[760, 40, 40, 760]], "one shared set, the certificate covers one set per arm"),
    ([[780, 20, 0, 0], [380, 20, 20, 380]], "baseline calibration set cannot estimate the judge's specificity"),
    ([[1, 2, 3]], "neither one shared set nor one set per arm"),
])
def test_size_layout_and_estimability_must_match(counts, match):
    assert match in calibration_outside(domain(), counts, ALPHA)


def _accepted(d, counts_of, n, alpha=ALPHA):
    """For x = 0..n human-labelled items judged correctly, is the calibration ``counts_of(x)`` inside?"""
    return np.array([calibration_outside(d, counts_of(x), alpha) is None for x in range(n + 1)])


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("alpha", [ALPHA, 0.005])
def test_a_judge_outside_the_box_is_accepted_with_probability_at_most_alpha_over_the_rates(shared, alpha):
    """Exact (binomial sums, no simulation): a true rate just outside its certified range -- the
    sensitivity just below it, or the specificity just above it -- passes the coverage check
    with probability at most alpha / r (r = 2 rates with a shared set, 4 per arm), so a false
    pass outside the box is accepted as covered with probability at most alpha / r <= alpha,
    whatever the certificate found inside it."""
    r = 2 if shared else 4
    n = 400                                        # human-labelled passes (sensitivity) or fails (specificity)
    d = domain(specificity=(0.85, 0.97), calibration_items=2 * n, calibration_shared=shared)
    other = [] if shared else [[380, 20, 36, 364]]      # the candidate's set, fixed well inside (Se 0.95, Sp 0.91)
    se_counts = _accepted(d, lambda x: [[x, n - x, 36, 364]] + other, n, alpha)       # its Sp 0.91: inside
    sp_counts = _accepted(d, lambda x: [[380, 20, n - x, x]] + other, n, alpha)       # its Se 0.95: inside
    checks = [(se_counts, 0.8995), (sp_counts, 0.9705)]   # true Se just below 0.9, true Sp just above 0.97
    for inside, truth in checks:
        p = stats.binom.pmf(np.arange(n + 1), n, truth)[inside].sum()
        assert inside.any() and 0.0 < p <= alpha / r, (truth, p, alpha / r)
    # the rule is the one-sided bound: the acceptance region for the sensitivity starts where
    # the lower bound reaches 0.9, exactly
    first = int(np.argmax(se_counts))
    lo = stats.beta.ppf(alpha / r, first, n - first + 1)
    assert lo >= 0.9 > stats.beta.ppf(alpha / r, first - 1, n - first + 2)


def test_the_design_lists_one_named_node_set_of_its_domain():
    d = domain()
    for nodes in ("corners", "edges"):
        design = CertifiedDesign(clusters=400, trials=1, margin=0.03, rho_max=0.0, label_noise=d.models(nodes),
                                 label_noise_domain=d)
        assert d.node_set(design.label_noise) == nodes
    with pytest.raises(ValidationError, match="label_noise must be the nodes of label_noise_domain"):
        CertifiedDesign(clusters=400, trials=1, margin=0.03, rho_max=0.0, label_noise=d.models("edges")[:-1],
                        label_noise_domain=d)
    plain = CertifiedDesign(clusters=400, trials=1, margin=0.03, rho_max=0.0)
    assert "label_noise_domain" not in plain.model_dump(mode="json")  # old certificates keep their hash


def test_the_shipped_judge_certificate_states_its_five_nodes_and_the_outside_guarantee():
    """The shipped certificate searched corners and centre: it still loads, unchanged, and its
    statement says the worst case is over those 5 nodes, not proved between them."""
    from methods.qualification import certificate_paths, load_certificate

    (path,) = [p for p in certificate_paths() if p.name.startswith("judge_corrected-alpha-")]
    cert = load_certificate(path)
    d = cert.design
    assert d.label_noise_domain.node_set(d.label_noise) == "corners" and len(d.label_noise) == 5
    text = cert.assumptions
    assert ("worst case over the 5 label-noise nodes the certificate lists (its corners and centre), a search, not a "
            "proof between them") in text
    assert "one-sided 0.9875 each, 2 rates" in text and "at most alpha/2 = 0.0125" in text
    assert "one judge for both arms" in text


def test_grid_records_and_theorems_never_cover_a_registered_calibration():
    from methods.qualification import load_theorem_record, theorem_covers, theorem_paths
    point = DesignPoint(clusters=400, cluster_size=FixedSize(trials=1), margin=0.03,
                        calibration=((380, 20, 20, 380), (380, 20, 20, 380)))
    record = load_theorem_record(theorem_paths("betting_ci")[0])
    assert not theorem_covers(record, point).covered
    assert theorem_covers(record, point.model_copy(update={"calibration": None})).covered
    assert point.label_noise == LabelNoise()
