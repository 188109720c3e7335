"""Issue 30, item 3: the label-noise domain of a certificate -- the judge errors it searches
and whether a registered calibration lies inside it (``methods.qualification.label_noise``)."""
from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from methods.qualification import CertifiedDesign, DesignPoint
from methods.qualification.label_noise import (COVERAGE_CONFIDENCE, LabelNoiseDomain, calibration_outside,
                                               rate_intervals)
from simlab.scenario import FixedSize, LabelNoise


def domain(**kw) -> LabelNoiseDomain:
    return LabelNoiseDomain(**{"sensitivity": (0.9, 1.0), "specificity": (0.9, 1.0), "calibration_items": 800, **kw})


def test_the_search_is_every_corner_per_arm_and_the_centre():
    models = domain().models()
    assert len(models) == 17 and len(set(models)) == 17
    corners = {(m.baseline_sensitivity, m.baseline_specificity, m.candidate_sensitivity, m.candidate_specificity)
               for m in models[:-1]}
    assert corners == {(a, b, c, d) for a in (0.9, 1.0) for b in (0.9, 1.0) for c in (0.9, 1.0) for d in (0.9, 1.0)}
    assert (0.9, 0.9, 1.0, 1.0) in corners and (1.0, 1.0, 0.9, 0.9) in corners  # differential judges are inside
    centre = models[-1]
    assert (centre.baseline_sensitivity, centre.candidate_specificity) == (0.95, 0.95)
    assert all(m.calibration.items == 800 and not m.calibration.shared for m in models)


def test_a_shared_set_has_one_judge_and_a_point_domain_one_model():
    shared = domain(calibration_shared=True).models()
    assert len(shared) == 5 and all(m.baseline_sensitivity == m.candidate_sensitivity for m in shared)
    assert all(m.calibration.shared for m in shared)
    assert len(domain(sensitivity=(0.9, 0.9), specificity=(0.8, 0.8)).models()) == 1


@pytest.mark.parametrize("kw,match", [
    ({"sensitivity": (0.0, 0.9)}, "0 < lo <= hi <= 1"),
    ({"specificity": (0.9, 0.8)}, "0 < lo <= hi <= 1"),
    ({"sensitivity": (0.5, 1.0), "specificity": (0.5, 1.0)}, "must exceed 1"),
    ({"calibration_items": 0}, "calibration_items"),
])
def test_bad_domains_are_refused_naming_the_field(kw, match):
    with pytest.raises(ValidationError, match=match):
        domain(**kw)


def test_the_intervals_are_bonferroni_clopper_pearson():
    c = np.array([[300, 20, 10, 70], [280, 40, 5, 75]])
    est = rate_intervals(c)
    level = 1.0 - (1.0 - COVERAGE_CONFIDENCE) / 4          # 4 rates, two sets
    assert est["level"] == pytest.approx(level)
    a = (1.0 - level) / 2.0
    for row, (x, n) in enumerate([(300, 320), (280, 320)]):  # sensitivity, from the beta quantiles directly
        assert est["sensitivity_lo"][row] == pytest.approx(stats.beta.ppf(a, x, n - x + 1), rel=1e-12)
        assert est["sensitivity_hi"][row] == pytest.approx(stats.beta.ppf(1 - a, x + 1, n - x), rel=1e-12)
    assert est["specificity"][1] == pytest.approx(75 / 80)


def test_a_calibration_inside_the_domain_is_covered_and_outside_is_named():
    d = domain()
    assert calibration_outside(d, [[380, 20, 20, 380], [380, 20, 20, 380]]) is None
    why = calibration_outside(d, [[380, 20, 20, 380], [380, 20, 40, 360]])
    assert why.startswith("the candidate set's specificity 0.9 has the 0.9875 Clopper-Pearson interval")
    assert "not inside the certified [0.9, 1]" in why
    # the point estimate 0.925 is inside [0.9, 1], but a set this small cannot say so
    assert "interval" in calibration_outside(domain(calibration_items=80), [[37, 3, 3, 37], [37, 3, 3, 37]])


@pytest.mark.parametrize("counts,match", [
    ([[380, 20, 20, 380], [380, 20, 20, 370]], "candidate calibration set has 790 items, the certificate covers "
                                                "exactly 800"),
    ([[760, 40, 40, 760]], "one shared set, the certificate covers one set per arm"),
    ([[780, 20, 0, 0], [380, 20, 20, 380]], "baseline calibration set cannot estimate the judge's specificity"),
    ([[1, 2, 3]], "neither one shared set nor one set per arm"),
])
def test_size_layout_and_estimability_must_match(counts, match):
    assert match in calibration_outside(domain(), counts)


def test_a_judge_outside_the_box_is_rarely_found_inside():
    """Exact: with true sensitivity just below the box (0.899 < 0.9), the chance that a set of
    n human passes puts the whole interval inside is at most (1 - level) / 2."""
    n, se = 400, 0.899
    d = domain(calibration_items=n + 400)
    inside = np.array([calibration_outside(d, [[x, n - x, 4, 396]] * 2) is None for x in range(n + 1)])
    level = rate_intervals(np.array([[1, 1, 1, 1]] * 2))["level"]
    p = stats.binom.pmf(np.arange(n + 1), n, se)[inside].sum()
    assert inside.any() and 0.0 < p <= (1.0 - level) / 2.0


def test_the_design_binds_its_models_to_its_domain():
    d = domain()
    CertifiedDesign(clusters=400, trials=1, margin=0.03, rho_max=0.0, label_noise=d.models(), label_noise_domain=d)
    with pytest.raises(ValidationError, match="label_noise must be the models of label_noise_domain"):
        CertifiedDesign(clusters=400, trials=1, margin=0.03, rho_max=0.0, label_noise=d.models()[:-1],
                        label_noise_domain=d)
    plain = CertifiedDesign(clusters=400, trials=1, margin=0.03, rho_max=0.0)
    assert "label_noise_domain" not in plain.model_dump(mode="json")  # old certificates keep their hash


def test_grid_records_and_theorems_never_cover_a_registered_calibration():
    from methods.qualification import load_theorem_record, theorem_covers, theorem_paths
    point = DesignPoint(clusters=400, cluster_size=FixedSize(trials=1), margin=0.03,
                        calibration=((380, 20, 20, 380), (380, 20, 20, 380)))
    record = load_theorem_record(theorem_paths("betting_ci")[0])
    assert not theorem_covers(record, point).covered
    assert theorem_covers(record, point.model_copy(update={"calibration": None})).covered
    assert point.label_noise == LabelNoise()
