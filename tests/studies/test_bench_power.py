"""``studies.bench.power``: the power benchmark of issue 26 on a small design (its figures come
from ``python -m studies.bench.power``; here only that it measures what it says)."""
from __future__ import annotations

import math

import pytest

from studies.bench.power import (COLUMNS, bench_power, certified_likelihood_ratio, distribution_free_floor,
                                 render_power)


@pytest.mark.parametrize("margin, alpha", [(0.03, 0.025), (0.05, 0.05), (0.01, 0.025)])
def test_distribution_free_floor(margin, alpha):
    k = distribution_free_floor(margin, alpha)
    assert (1 - margin) ** k <= alpha < (1 - margin) ** (k - 1)
    if (margin, alpha) == (0.03, 0.025):
        assert k == 122


def test_small_design_measures_every_method_on_the_same_tables():
    r = bench_power(clusters=(12,), discordances=(0.1,), reps=3000, search_reps=1000)
    (d,) = r["designs"]
    assert d["em_worst_on_grid"] <= 0.025
    for label in ("dm_score_z", "dm_score_em"):
        assert d["certificates"][label]["engine"] == "exact-convolution"
    em = d["certificates"]["dm_score_em"]
    assert em["worst_rate"] >= d["em_worst_on_grid"] and em["verdict"] == "qualified"   # the grid and more
    (row,) = d["rows"]
    assert set(row["power"]) == set(COLUMNS) - {"dm_lr_cal"}     # no certificate of it at 12 x 3
    for label in ("dm_score_z", "dm_score_em"):    # the simulated power agrees with the exact one
        exact = row["exact_power"][label]
        assert abs(row["power"][label] - exact) <= 4 * math.sqrt(exact * (1 - exact) / 3000)
    assert d["clustered_score_calibration"]["nominal_level"] > 0.0
    text = render_power(r)
    assert "Distribution-free floor: K >= 122" in text and "dm_score E+M level" in text
    assert "no calibrate certificate of dm_likelihood_ratio" in text


def test_the_likelihood_ratio_column_reads_the_shipped_calibration():
    """dm_likelihood_ratio's column uses the qualified calibrate certificate that covers the
    design (shipped at 100 x 3), and nothing where none does."""
    cert = certified_likelihood_ratio(100, 3, 0.03, 0.1, 0.025)
    assert cert is not None and cert.verdict == "qualified" and cert.threshold == 0.025
    assert cert.method.registered_name.startswith("dm_likelihood_ratio@alpha=")
    assert certified_likelihood_ratio(100, 3, 0.03, 0.2, 0.025) is None      # rho_max beyond the certified
    assert certified_likelihood_ratio(300, 3, 0.03, 0.1, 0.025) is None
