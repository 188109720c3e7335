"""PairedScenario: validation that names the field, construction from rates, true values."""
import math

import numpy as np
import pytest
from pydantic import ValidationError

from simlab.scenario import (ExplicitSizes, GeometricSize, LabelNoise, Missingness,
                             PairedScenario, PoissonSize)


def test_cells_must_sum_to_one_and_be_probabilities():
    with pytest.raises(ValidationError, match="cells must sum to 1"):
        PairedScenario(cells=(0.5, 0.2, 0.2, 0.2), clusters=3)
    with pytest.raises(ValidationError, match=r"cells\.p11"):
        PairedScenario(cells=(1.1, -0.1, 0.0, 0.0), clusters=3)
    with pytest.raises(ValidationError, match="cells"):
        PairedScenario(cells=(math.nan, 0.5, 0.25, 0.25), clusters=3)


@pytest.mark.parametrize("field,kw", [
    ("rho", dict(rho=1.0)),
    ("rho", dict(rho=-0.1)),
    ("rho", dict(rho=math.nan)),
    ("clusters", dict(clusters=0)),
    ("trials", dict(cluster_size={"kind": "fixed", "trials": 0})),
    ("sizes", dict(cluster_size={"kind": "explicit", "sizes": [1, -2, 3]})),
    ("loss_rate", dict(missingness={"loss_rate": 1.5})),
    ("candidate_specificity", dict(label_noise={"candidate_specificity": -0.2})),
])
def test_invalid_input_names_the_field(field, kw):
    base = dict(cells=(0.9, 0.04, 0.03, 0.03), clusters=3)
    with pytest.raises(ValidationError, match=field):
        PairedScenario(**{**base, **kw})


def test_explicit_sizes_must_match_clusters_and_cluster_cells_need_them():
    with pytest.raises(ValidationError, match="sizes lists 2 clusters"):
        PairedScenario(cells=(1, 0, 0, 0), clusters=3, cluster_size=ExplicitSizes(sizes=(1, 2)))
    with pytest.raises(ValidationError, match="cluster_cells requires"):
        PairedScenario(cells=(1, 0, 0, 0), clusters=2, cluster_cells=((1, 0, 0, 0), (0, 1, 0, 0)))
    with pytest.raises(ValidationError, match=r"cluster_cells\[1\]"):
        PairedScenario(cells=(1, 0, 0, 0), clusters=2, cluster_size=ExplicitSizes(sizes=(1, 1)),
                       cluster_cells=((1, 0, 0, 0), (0.5, 0, 0, 0)))


def test_from_rates_roundtrip_and_incompatible_inputs():
    s = PairedScenario.from_rates(baseline=0.9, difference=-0.02, discordance=0.08, clusters=5)
    p11, p10, p01, p00 = s.cells
    assert p11 + p10 == pytest.approx(0.9)
    assert p01 - p10 == pytest.approx(-0.02)
    assert p10 + p01 == pytest.approx(0.08)
    with pytest.raises(ValueError, match="cannot exceed the discordance"):
        PairedScenario.from_rates(baseline=0.9, difference=-0.1, discordance=0.05, clusters=5)
    with pytest.raises(ValueError, match="incompatible"):
        PairedScenario.from_rates(baseline=0.01, difference=0.0, discordance=0.2, clusters=5)
    with pytest.raises(ValueError, match="baseline"):
        PairedScenario.from_rates(baseline=1.2, difference=0.0, discordance=0.0, clusters=5)


def test_seed_unequal_clusters_have_two_estimands():
    """Seed chapter: 15 customers winning 1/1 and 15 losing 9/9."""
    s = PairedScenario(cells=(1, 0, 0, 0), clusters=30, cluster_size=ExplicitSizes(sizes=(1,) * 15 + (9,) * 15),
                       cluster_cells=((0, 0, 1, 0),) * 15 + ((0, 1, 0, 0),) * 15)
    assert s.true_difference_cluster() == pytest.approx(0.0)
    assert s.true_difference_trial() == pytest.approx((15 - 135) / 150)


def test_label_noise_changes_observed_but_not_true_difference():
    s = PairedScenario.independent_arms(0.9, 0.85, clusters=10,
                                        label_noise=LabelNoise(candidate_sensitivity=0.9, candidate_specificity=0.95))
    assert s.true_difference_trial() == pytest.approx(-0.05)
    # recorded candidate pass rate = 0.9 * 0.85 + 0.05 * 0.15
    assert s.observed_difference_trial() == pytest.approx(0.9 * 0.85 + 0.05 * 0.15 - 0.9)


def test_informative_missingness_biases_observed_difference():
    s = PairedScenario.independent_arms(0.9, 0.8, clusters=10,
                                        missingness=Missingness(loss_rate=0.0, loss_rate_candidate_fail=0.5))
    # retained: candidate fails kept with prob 0.5 -> P(c pass | kept) = 0.8 / (0.8 + 0.1)
    assert s.retention_rate()[0] == pytest.approx(0.9)
    assert s.observed_difference_trial() == pytest.approx(0.8 / 0.9 - 0.9)


def test_measurement_matrix_rows_are_distributions():
    s = PairedScenario(cells=(0.7, 0.1, 0.1, 0.1), clusters=2,
                       label_noise=LabelNoise(baseline_sensitivity=0.9, baseline_specificity=0.8, candidate_sensitivity=0.7, candidate_specificity=0.95), missingness=Missingness(loss_rate=0.1))
    m = s.measurement_matrix()
    assert m.shape == (4, 5) and np.all(m >= 0)
    assert np.allclose(m.sum(axis=1), 1.0)
    assert s.has_measurement_error
    assert not PairedScenario(cells=(0.7, 0.1, 0.1, 0.1), clusters=2).has_measurement_error


def test_size_laws_validate_their_means():
    with pytest.raises(ValidationError, match="minimum"):
        PoissonSize(mean_trials=1.0, minimum=3)
    with pytest.raises(ValidationError, match="minimum"):
        GeometricSize(mean_trials=0.5, minimum=1)
    assert PoissonSize(mean_trials=4.0).mean() == 4.0
