"""Judge calibration sets (simlab.scenario.JudgeCalibration, simlab.sampling.calibration):
the model's validation and serialisation, counter-based draws that do not depend on the
chunking, and the law of the counts (binomial human split, binomial judge labels)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from simlab.sampling import scenario_calibration, scenario_tables, table_source
from simlab.sampling.calibration import CalibrationSource
from simlab.scenario import FixedSize, JudgeCalibration, LabelNoise, PairedScenario

NOISE = dict(baseline_sensitivity=0.9, baseline_specificity=0.8, candidate_sensitivity=0.95,
             candidate_specificity=0.7)


def _scenario(items: int = 200, shared: bool = False, **noise) -> PairedScenario:
    return PairedScenario.from_rates(0.8, -0.05, 0.2, clusters=12, cluster_size=FixedSize(trials=3), rho=0.1,
                                     label_noise=LabelNoise(**(noise or NOISE),
                                                            calibration=JudgeCalibration(items=items, shared=shared)))


def test_no_calibration_serialises_as_before_so_keys_do_not_move():
    plain = LabelNoise(candidate_specificity=0.9)
    assert "calibration" not in plain.model_dump(mode="json")
    with_cal = LabelNoise(candidate_specificity=0.9, calibration=JudgeCalibration(items=50))
    assert with_cal.model_dump(mode="json")["calibration"] == {"items": 50, "shared": False}
    assert LabelNoise.model_validate(with_cal.model_dump(mode="json")) == with_cal
    assert with_cal != plain   # the calibration set is part of the design
    sc = PairedScenario(cells=(0.8, 0.1, 0.05, 0.05), clusters=3, label_noise=plain)
    assert b"calibration" not in sc.canonical_json()
    judged = PairedScenario(cells=(0.8, 0.1, 0.05, 0.05), clusters=3, label_noise=with_cal)
    assert sc.key != judged.key


@pytest.mark.parametrize("field,kw", [
    ("items", dict(calibration={"items": 0})),
    ("items", dict(calibration={"items": 10 ** 6})),
    ("calibration.shared", dict(candidate_specificity=0.7, calibration={"items": 50, "shared": True})),
    ("nope", dict(calibration={"items": 50, "nope": 1})),
])
def test_bad_calibration_names_the_field(field, kw):
    with pytest.raises(ValidationError, match=field):
        LabelNoise(**kw)


def test_draws_do_not_depend_on_the_chunking_and_follow_the_scenario():
    sc = _scenario()
    whole = scenario_calibration(sc, 3, 0, 50)
    assert whole.shape == (50, 2, 4) and whole.dtype == np.int32
    assert np.all(whole.sum(axis=2) == 200)
    src = CalibrationSource(sc, 3)
    parts = np.concatenate([src.counts(0, 7), src.counts(7, 8), src.counts(8, 50)])
    assert np.array_equal(whole, parts)
    assert np.array_equal(src.counts(20, 21)[0], whole[20])   # any replication alone
    assert not np.array_equal(scenario_calibration(sc, 4, 0, 50), whole)
    # a table source carries the same draws, and its tables are those of the scenario
    ts = table_source(sc, 3)
    out = np.empty((50, 2, 4), np.int32)
    assert np.array_equal(ts.fill_calibration(out, 0), whole)
    assert np.array_equal(ts.tables(0, 5), scenario_tables(sc, 3, 0, 5))


def test_a_scenario_without_a_calibration_set_has_none_to_draw():
    sc = PairedScenario(cells=(0.8, 0.1, 0.05, 0.05), clusters=3)
    src = table_source(sc, 1)
    assert src.calibration is None
    with pytest.raises(ValueError, match="declares no judge calibration set"):
        src.fill_calibration(np.empty((2, 2, 4), np.int32), 0)
    with pytest.raises(ValueError, match="declares no judge calibration set"):
        CalibrationSource(sc, 1)


def test_counts_have_the_law_of_a_representative_calibration_set():
    """Per arm: human passes ~ Bin(n, true pass rate); judge passes among them ~ Bin(., Se);
    judge fails among human fails ~ Bin(., Sp): the means of the three proportions within
    4 MC SE of the scenario's values (the SE from the binomial variance of the counts)."""
    R, n = 4000, 200
    sc = _scenario(items=n)
    c = scenario_calibration(sc, 11, 0, R).astype(np.float64)
    truth = sc.true_pass_rates()
    for a, (p, se, sp) in enumerate(((truth[0], NOISE["baseline_sensitivity"], NOISE["baseline_specificity"]),
                                     (truth[1], NOISE["candidate_sensitivity"], NOISE["candidate_specificity"]))):
        pos = c[:, a, 0] + c[:, a, 1]
        assert abs(pos.mean() / n - p) <= 4 * math.sqrt(p * (1 - p) / (n * R))
        assert abs(c[:, a, 0].sum() / pos.sum() - se) <= 4 * math.sqrt(se * (1 - se) / pos.sum())
        neg = n - pos
        assert abs(c[:, a, 3].sum() / neg.sum() - sp) <= 4 * math.sqrt(sp * (1 - sp) / neg.sum())
        # the human split is binomial: its variance within 4 SE of n p (1 - p)
        var = pos.var(ddof=1)
        assert abs(var - n * p * (1 - p)) <= 4 * n * p * (1 - p) * math.sqrt(2 / (R - 1))


def test_a_shared_set_mixes_both_arms_outputs():
    noise = dict(baseline_sensitivity=0.9, baseline_specificity=0.8, candidate_sensitivity=0.9,
                 candidate_specificity=0.8)
    sc = _scenario(items=300, shared=True, **noise)
    c = scenario_calibration(sc, 2, 0, 3000).astype(np.float64)
    assert c.shape == (3000, 1, 4)
    p = sum(sc.true_pass_rates()) / 2
    pos = c[:, 0, 0] + c[:, 0, 1]
    assert abs(pos.mean() / 300 - p) <= 4 * math.sqrt(p * (1 - p) / (300 * 3000))
