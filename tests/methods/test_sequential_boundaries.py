"""Group-sequential efficacy boundaries (``methods.sequential.boundaries``) against values
printed by rpact's own unit tests, plus analytic checks.

Source of the published values: rpact-com/rpact, ``tests/testthat/test-f_design_group_sequential.R``
(commit 1d81a55ea2b5a4a4f4b5ff70dc25077077d8bddb), where rpact asserts them to 1e-7:
  * ``x1`` (line 69): asHSD gammaA = 0, informationRates (0.2, 0.4, 1), alpha 0.03;
  * ``x2`` (line 146): asHSD gammaA = -1, (0.2, 0.4, 1), alpha 0.07 (non-binding futility);
  * ``x3`` (line 226): asKD (Kim-DeMets power) gammaA = 2.2, (0.3, 0.7, 1), alpha 0.03;
  * ``x6a`` (test "'getDesignGroupSequential' with type of design = 'asP' and 'bsUser' and
    non-binding futility bounds"): asP, (0.35, 0.7, 1), alpha 0.13;
  * ``x7a`` (test "... 'asOF' and 'bsKD' and non-binding futility bounds (kMax = 4)"): asOF,
    (0.4, 0.75, 0.85, 1), alpha 0.13.
Non-binding futility bounds do not change rpact's efficacy boundaries, so these are the
efficacy-only designs computed here.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from methods.sequential._spending import crossing_upper
from methods.sequential.boundaries import cumulative_alpha, efficacy_boundaries

RPACT = [
    ("hsd", 0.03, (0.2, 0.4, 1.0), 0.0, (2.5121443, 2.4228747, 2.0280392), (0.006, 0.012, 0.03),
     (0.006, 0.0076991188, 0.021278125)),
    ("hsd", 0.07, (0.2, 0.4, 1.0), -1.0, (2.364813, 2.1928805, 1.5660474), (0.0090195874, 0.020036136, 0.07),
     None),
    ("power", 0.03, (0.3, 0.7, 1.0), 2.2, (2.8594012, 2.2435708, 1.9735737), (0.0021222083, 0.013687904, 0.03),
     (0.0021222083, 0.012430014, 0.02421512)),
    ("pocock", 0.13, (0.35, 0.7, 1.0), None, (1.5446617, 1.4828682, 1.4620058), (0.061214062, 0.10266465, 0.13),
     None),
    ("obf", 0.13, (0.4, 0.75, 0.85, 1.0), None, (2.1280732, 1.4368565, 1.422873, 1.2970881),
     (0.016665509, 0.080406163, 0.10053322, 0.13), (0.016665509, 0.075379384, 0.077386492, 0.097300444)),
]


@pytest.mark.parametrize("family, alpha, t, par, z, spent, levels", RPACT)
def test_matches_rpact(family, alpha, t, par, z, spent, levels):
    d = efficacy_boundaries(family, alpha, t, par)
    np.testing.assert_allclose(d["z"], z, atol=2e-7)
    np.testing.assert_allclose(d["cumulative_alpha"], spent, rtol=1e-6)
    if levels is not None:
        np.testing.assert_allclose(d["nominal_p"], levels, rtol=1e-6)


@pytest.mark.parametrize("family, par", [("obf", None), ("pocock", None), ("hsd", -4.0), ("hsd", 1.0),
                                         ("power", 1.0), ("power", 3.0)])
def test_boundaries_spend_exactly_their_increments(family, par):
    t = np.array([0.25, 0.5, 0.75, 1.0])
    d = efficacy_boundaries(family, 0.025, t, par)
    cross = crossing_upper(np.array(d["z"]), t)
    np.testing.assert_allclose(np.cumsum(cross), d["cumulative_alpha"], rtol=1e-8, atol=1e-13)
    assert d["cumulative_alpha"][-1] == pytest.approx(0.025, rel=1e-12)


def test_single_look_is_the_fixed_sample_test_and_power_family_formula():
    for family, par in [("obf", None), ("pocock", None), ("hsd", 2.0), ("power", 2.0)]:
        assert efficacy_boundaries(family, 0.025, [1.0], par)["z"][0] == pytest.approx(stats.norm.isf(0.025), abs=1e-12)
    t = np.array([0.2, 0.5, 1.0])
    np.testing.assert_allclose(cumulative_alpha("power", 0.05, t, 3.0), 0.05 * t ** 3, rtol=1e-15)
    # rho = 1 power family and gamma = 0 HSD are the same linear spending function
    a = efficacy_boundaries("power", 0.025, t, 1.0)["z"]
    b = efficacy_boundaries("hsd", 0.025, t, 0.0)["z"]
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(family="wt", alpha=0.025, information=[1.0]), "unknown family"),
    (dict(family="obf", alpha=0.6, information=[1.0]), "alpha"),
    (dict(family="obf", alpha=0.025, information=[0.5, 0.9]), "end at 1"),
    (dict(family="obf", alpha=0.025, information=[0.5, 0.5, 1.0]), "increase strictly"),
    (dict(family="obf", alpha=0.025, information=[0.5, 1.0], parameter=2.0), "no parameter"),
    (dict(family="power", alpha=0.025, information=[0.5, 1.0], parameter=0.0), "> 0"),
    (dict(family="hsd", alpha=0.025, information=[0.5, 1.0], parameter=float("nan")), "finite"),
    # its exp overflowed (-1000: "math range error") or gave a NaN boundary (1000)
    (dict(family="hsd", alpha=0.025, information=[0.5, 1.0], parameter=-1000.0), r"\[-40, 40\]"),
    (dict(family="hsd", alpha=0.025, information=[0.5, 1.0], parameter=40.5), r"\[-40, 40\]"),
])
def test_bad_designs_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        efficacy_boundaries(**kwargs)


def test_hsd_gamma_at_the_ends_of_its_range_gives_finite_boundaries():
    for g in (-40.0, 40.0):
        z = efficacy_boundaries("hsd", 0.025, [0.5, 1.0], g)["z"]
        assert np.all(np.isfinite(z) | (z == np.inf))


def test_many_looks_still_spend_exactly_their_increments():
    """The boundaries carry the recursion's sub-density from look to look (it was recomputed from
    the first look for every root-finding step: 40 looks did not finish in 30 s); the independent
    whole-path crossing computation still reproduces the spending at 60 looks."""
    t = np.arange(1, 61) / 60.0
    for family, par in [("obf", None), ("hsd", -4.0), ("power", 2.0)]:
        d = efficacy_boundaries(family, 0.025, t, par)
        cross = crossing_upper(np.array(d["z"]), t)
        np.testing.assert_allclose(np.cumsum(cross), d["cumulative_alpha"], rtol=1e-8, atol=1e-13)


def test_looks_beyond_the_grid_are_refused_by_name():
    with pytest.raises(ValueError, match=r"information: the numerical integration breaks down after look \d+ of 1000"):
        efficacy_boundaries("obf", 0.025, np.arange(1, 1001) / 1000.0)
