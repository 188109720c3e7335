"""Judge-corrected methods in the engine: calibration sets drawn beside the tables and
handed to the methods that read them by the one evaluation loop (bitwise the same for any
batching, and in both qualification engines); the corrected method's false-pass rate
under label noise against the naive methods'; and qualification records whose domain
holds label-noise models with calibration sets, covering exactly those designs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from methods import registry
from methods.qualification import (Axis, DesignPoint, IntAxis, QualificationDomain, QualificationPolicy, covers)
from simlab.scenario import FixedSize, JudgeCalibration, LabelNoise, PairedScenario
from studies.engine import evaluate_scenario, false_pass
from studies.engine.evaluate import MethodError, ScenarioRows, evaluate
from studies.exact.fixed import exact_engine
from studies.qualify.run import qualify

LENIENT = dict(baseline_sensitivity=0.9, baseline_specificity=0.85, candidate_sensitivity=0.95,
               candidate_specificity=0.7)   # the candidate's judge passes more of its failures
METHODS = ["judge_corrected", "cluster_robust", "paired_wald"]
MARGIN, ALPHA = 0.05, 0.025


def noise(items: int | None, **kw) -> LabelNoise:
    return LabelNoise(**(kw or LENIENT), calibration=None if items is None else JudgeCalibration(items=items))


def null(items: int | None = 1000, clusters: int = 40, **kw) -> PairedScenario:
    return PairedScenario.from_rates(0.8, -MARGIN, 0.2, clusters=clusters, cluster_size=FixedSize(trials=5), rho=0.1,
                                     label_noise=noise(items, **kw))


def test_counts_do_not_depend_on_the_batching():
    sc = null(200)
    a = evaluate_scenario(sc, METHODS, [MARGIN], [ALPHA], 600, seed=3)
    b = evaluate_scenario(sc, METHODS, [MARGIN], [ALPHA], 600, seed=3, batch=37)
    parts = evaluate_scenario(sc, METHODS, [MARGIN], [ALPHA], 250, seed=3).merge(
        evaluate_scenario(sc, METHODS, [MARGIN], [ALPHA], 350, seed=3, start=250))
    assert np.array_equal(a.tally, b.tally) and np.array_equal(a.tally, parts.tally)


def test_a_method_that_needs_calibration_is_refused_where_none_is_drawn():
    sc = null(None)
    with pytest.raises(MethodError, match="judge_corrected.*calibration"):
        evaluate_scenario(sc, ["judge_corrected"], [MARGIN], [ALPHA], 10, seed=1)
    engine, why = exact_engine(null(200, clusters=3), registry.get("judge_corrected"))
    assert engine is None and "calibration" in why


def test_the_loop_hands_each_row_its_own_calibration_set():
    """The counts the engine tallies are those of the method run on scenario_tables and
    scenario_calibration of the same replications."""
    from simlab.sampling import scenario_calibration, scenario_tables, table_source
    sc = null(50, clusters=12)
    m = registry.get("judge_corrected")
    seen = []
    evaluate(ScenarioRows(table_source(sc, 9), batch=7), 0, 30, [m], (MARGIN,), (ALPHA,),
             lambda i, j, c, res, block: seen.append(res.lower.copy()))
    want = m.batch(scenario_tables(sc, 9, 0, 30), MARGIN, ALPHA, calibration=scenario_calibration(sc, 9, 0, 30))
    assert np.array_equal(np.concatenate(seen), want.lower, equal_nan=True)


@pytest.mark.parametrize("items", [50, 1000])
def test_false_pass_under_a_lenient_candidate_judge(items):
    """At the null boundary (true difference -margin) with a lenient candidate judge and a
    calibration set of ``items`` per arm: the corrected method's false-pass rate is at most
    alpha + 4 MC SE; its 95% interval covers the true difference at least 95% - 4 MC SE of the
    time (and, with 1000 items, when the calibration error is small beside the sampling error,
    within 4 MC SE of 95%; with 50 the t reference and the pseudo-counts make it conservative);
    the naive methods, which treat judge labels as the truth, falsely pass far more often than
    alpha (their Clopper-Pearson lower bound is above 10 alpha) and their intervals miss."""
    R = 4000
    c = evaluate_scenario(null(items), METHODS, [MARGIN], [ALPHA], R, seed=20261130)
    meas = c.measures()
    i = c.methods.index("judge_corrected")
    rate = float(meas["pass_rate"][i, 0, 0])
    assert rate <= ALPHA + 4 * math.sqrt(ALPHA * (1 - ALPHA) / R)
    cover = float(meas["coverage"][i, 0, 0])
    mcse = math.sqrt(0.95 * 0.05 / R)
    assert cover >= 0.95 - 4 * mcse
    if items == 1000:
        assert abs(cover - 0.95) <= 4 * mcse
    for name in ("cluster_robust", "paired_wald"):
        j = c.methods.index(name)
        assert float(meas["pass_rate_cp_lower"][j, 0, 0]) > 10 * ALPHA
        assert float(meas["coverage"][j, 0, 0]) < 0.95 - 4 * mcse


def test_false_pass_reports_a_judge_method_by_simulation():
    out = false_pass(null(200, clusters=20), "judge_corrected", MARGIN, ALPHA, replications=300, seed=2)
    assert out["exact"] is False and "calibration" in out["why_not_exact"] and out["is_null"]
    assert out["estimand"] == "trial_weighted" and out["true_value"] == pytest.approx(-MARGIN)


# ---------------------------------------------------------------- qualification and coverage
NOISES = (noise(200), noise(1000))


def judge_policy(noises=NOISES) -> QualificationPolicy:
    dom = QualificationDomain(clusters=IntAxis(lo=30, hi=30, grid=(30,)), cluster_sizes=(FixedSize(trials=3),),
                              rho=Axis(lo=0.1, hi=0.1, grid=(0.1,)), margin=Axis(lo=MARGIN, hi=MARGIN, grid=(MARGIN,)),
                              baseline=Axis(lo=0.8, hi=0.8, grid=(0.8,)),
                              discordance=Axis(lo=0.2, hi=0.2, grid=(0.2,)), label_noise=noises)
    # a loose level so that a few hundred replications decide the verdicts: the test is about
    # which designs a record holds, not about the rates
    return QualificationPolicy(domain=dom, alpha=0.1, allowed_excess=2.0, min_replications=300,
                               max_replications=1200, refine_evaluations=0, seed=4)


@pytest.fixture(scope="module")
def records():
    pol = judge_policy()
    methods = [registry.get("judge_corrected"), registry.get("cluster_robust")]
    batched = qualify(methods, pol, out_dir=None)
    per = qualify(methods, pol, out_dir=None, batched=False)
    perfect = qualify([registry.get("cluster_robust")], judge_policy((LabelNoise(),)), out_dir=None)
    return batched, per, perfect


def test_both_qualification_engines_give_the_same_records(records):
    batched, per, _ = records
    for x, y in zip(batched.outcomes, per.outcomes):
        assert x.record.scenarios == y.record.scenarios and x.record.cells == y.record.cells


def _point(label_noise: LabelNoise) -> DesignPoint:
    return DesignPoint(clusters=30, cluster_size=FixedSize(trials=3), margin=MARGIN, rho=0.1, label_noise=label_noise,
                       baseline=0.8, discordance=0.2)


def test_a_judge_record_covers_only_its_label_noise_and_calibration_grid(records):
    judge = records[0].outcomes[0].record
    assert judge.method.name == "judge_corrected"
    for n in NOISES:
        c = covers(judge, _point(n))
        assert c.covered, c.reason
    off = [noise(500),                                     # calibration size off the grid
           noise(None),                                    # the same judge without a calibration set
           noise(200, **{**LENIENT, "candidate_specificity": 0.75}),   # another judge
           LabelNoise()]                                   # perfect labels
    for n in off:
        c = covers(judge, _point(n))
        assert not c.covered and "label-noise model is not in the qualified domain" in c.reason and not c.cells


def test_naive_methods_are_not_covered_under_label_noise(records):
    naive = records[0].outcomes[1].record
    assert naive.method.name == "cluster_robust"
    c = covers(naive, _point(NOISES[0]))   # the record holds the point and finds it unqualified
    assert not c.covered and c.cells and "exceeds" in c.reason
    perfect = records[2].outcomes[0].record
    assert covers(perfect, _point(LabelNoise())).covered
    for n in NOISES + (noise(None),):
        c = covers(perfect, _point(n))
        assert not c.covered and "label-noise model is not in the qualified domain" in c.reason


# ---------------------------------------------------------------- the judge-label study
def test_judge_study_dataset_and_plot(tmp_path):
    from studies import JudgeStudySpec, judge_study
    from studies.datasets import open_dataset
    spec = JudgeStudySpec(clusters=12, trials=3, calibration_items=(50, 200), replications=150, seed=8)
    out = judge_study(spec, tmp_path)
    ds = open_dataset(out["dataset"])
    assert dict(ds.sizes) == {"judge": 2, "calibration_items": 2, "difference": 2, "method": 3, "reason": 6}
    assert (ds.n_reps == 150).all() and out["plot"].endswith(".png")
    # (``sel(method=...)`` would name sel's own interpolation argument: select with a dict)
    judged, naive = {"method": "judge_corrected"}, {"method": "cluster_robust"}
    assert ds.n_reason.sum("reason").sel(judged).equals(ds.n_reps.sel(judged))
    assert int(ds.n_reason.sel(naive).sum()) == 0
    # the same figures as the engine gives for one of its scenarios (the one loop, same seed)
    sc = spec.scenario(spec.judges[1], 200, -spec.margin)
    c = evaluate_scenario(sc, list(spec.methods), [spec.margin], [spec.alpha], 150, seed=8)
    got = ds.n_pass.sel(judge="lenient_candidate", calibration_items=200, difference=-spec.margin).values
    assert [c.count("n_pass", m) for m in spec.methods] == list(got)
    rows = out["rows"]
    assert len(rows) == 24 and {r["method"] for r in rows} == set(spec.methods)


def test_judge_study_spec_refuses_bad_input():
    from pydantic import ValidationError
    from studies import JudgeStudySpec
    with pytest.raises(ValidationError, match="calibration_items"):
        JudgeStudySpec(calibration_items=(0, 50))
    with pytest.raises(ValidationError, match="distinct"):
        JudgeStudySpec(calibration_items=(50, 50))
    with pytest.raises(ValidationError, match="difference 0.5"):
        JudgeStudySpec(differences=(0.5,))
    with pytest.raises(ValidationError, match="not a fixed-sample method"):
        JudgeStudySpec(methods=("judge_corrected", "likelihood_ratio"))
    from studies.judge import LENIENT
    with pytest.raises(ValidationError, match="calibration.shared: judge lenient_candidate's error differs"):
        JudgeStudySpec(shared_calibration=True, judges=(LENIENT,))   # the lenient judge differs between arms
