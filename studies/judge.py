"""Judge-labelled outcomes: how often the judge-corrected method and the naive paired methods
pass under the simulator's label-noise model, for calibration sets of several sizes.

ADEMP (Morris, White & Crowther 2019, Stat Med 38:2074-2102):

* **Aims** -- the false-pass rate (at the null boundary, true difference ``-margin``) and the
  power (at true differences above it) of ``judge_corrected`` against naive methods that
  treat judge labels as the truth, when the judge errs, and when it errs differently for the
  two arms (a *lenient* candidate judge: a lower specificity passes more candidate failures);
* **Data-generating mechanisms** -- ``PairedScenario.from_rates(baseline, difference,
  discordance)``, K clusters of M trial pairs, intra-cluster correlation rho, per-arm judge
  sensitivity / specificity (``LabelNoise``), and a representative calibration set of ``n``
  items per arm (``JudgeCalibration``; one shared set with ``shared_calibration``) drawn per
  replication (``simlab.sampling.calibration``), so its sampling error is part of what is
  measured;
* **Estimand** -- the trial-weighted difference of the *true* outcomes;
* **Methods** -- every method of the spec decides the same tables (common random numbers
  within a scenario); a method reading calibration sets gets those of the same replications;
* **Performance measures** -- pass rate with MC SE and Clopper-Pearson bounds, inconclusive
  rate (and, for judge-corrected methods, why: ``methods.judged.REASONS``), coverage, bias,
  mean width.

Every scenario runs through the engine's one loop (``studies.engine.evaluate``) and integer
tallies (``studies.engine.tally``), so the dataset is bitwise the same for any batching.
Dataset kind ``judge`` (``studies/SCHEMA.md``).
"""
from __future__ import annotations

import itertools
import json
from typing import Callable

import numpy as np
from pydantic import Field, field_validator, model_validator

from methods.judged import REASON_NAMES, needs_calibration
from methods.method_ref import MethodRef
from simlab.models import FrozenModel
from simlab.sampling import CALIBRATION_VERSION, table_source
from simlab.scenario import FixedSize, JudgeCalibration, LabelNoise, PairedScenario

from studies.engine.evaluate import ScenarioRows, evaluate
from studies.engine.measures import measures
from studies.engine.tally import NF, tally_batch

KEPT = ("n_reps", "n_pass", "n_inconclusive", "pass_rate", "pass_rate_mcse", "pass_rate_cp_lower", "pass_rate_cp_upper",
        "false_pass_rate", "power", "inconclusive_rate", "coverage", "coverage_mcse", "bias", "mean_width",
        "true_value")


class JudgeModel(FrozenModel):
    """One judge: its name and its sensitivity / specificity on each arm's outputs."""
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    baseline_sensitivity: float = Field(ge=0.0, le=1.0)
    baseline_specificity: float = Field(ge=0.0, le=1.0)
    candidate_sensitivity: float = Field(ge=0.0, le=1.0)
    candidate_specificity: float = Field(ge=0.0, le=1.0)

    @property
    def same_error_on_both_arms(self) -> bool:
        return (self.baseline_sensitivity == self.candidate_sensitivity
                and self.baseline_specificity == self.candidate_specificity)

    def noise(self, items: int, shared: bool) -> LabelNoise:
        return LabelNoise(baseline_sensitivity=self.baseline_sensitivity,
                          baseline_specificity=self.baseline_specificity,
                          candidate_sensitivity=self.candidate_sensitivity,
                          candidate_specificity=self.candidate_specificity,
                          calibration=JudgeCalibration(items=items, shared=shared))


EQUAL = JudgeModel(name="equal", baseline_sensitivity=0.9, baseline_specificity=0.85, candidate_sensitivity=0.9,
                   candidate_specificity=0.85)
LENIENT = JudgeModel(name="lenient_candidate", baseline_sensitivity=0.9, baseline_specificity=0.85,
                     candidate_sensitivity=0.95, candidate_specificity=0.7)


class JudgeStudySpec(FrozenModel):
    """What a judge-label study runs (defaults: laptop-sized, under a minute on two cores)."""
    name: str = "judge-labels"
    methods: tuple[str, ...] = ("judge_corrected", "cluster_robust", "paired_wald")
    judges: tuple[JudgeModel, ...] = (EQUAL, LENIENT)
    calibration_items: tuple[int, ...] = (50, 200, 1000)
    shared_calibration: bool = False
    differences: tuple[float, ...] | None = None   # default: (-margin, 0)
    clusters: int = Field(default=200, ge=2, le=100_000)
    trials: int = Field(default=5, ge=1, le=10_000)
    rho: float = Field(default=0.1, ge=0.0, lt=1.0)
    baseline: float = Field(default=0.8, ge=0.0, le=1.0)
    discordance: float = Field(default=0.2, ge=0.0, le=1.0)
    margin: float = Field(default=0.05, gt=0.0, lt=1.0)
    alpha: float = Field(default=0.025, gt=0.0, le=0.25)
    replications: int = Field(default=2000, ge=1, le=10_000_000)
    seed: int = Field(default=20261130, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _shared_default_judges(cls, data):
        """With one shared calibration set, the default judges are those whose error is the same
        on both arms (the lenient candidate judge cannot share a set)."""
        if isinstance(data, dict) and data.get("shared_calibration") and data.get("judges") is None:
            data = {**data, "judges": tuple(j for j in (EQUAL, LENIENT) if j.same_error_on_both_arms)}
        return data

    @field_validator("methods", "judges", "calibration_items")
    @classmethod
    def _distinct(cls, v, info):
        if not v:
            raise ValueError(f"{info.field_name}: give at least one")
        keys = [getattr(x, "name", x) for x in v]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{info.field_name}: values must be distinct, got {list(keys)}")
        return v

    @field_validator("calibration_items")
    @classmethod
    def _items(cls, v):
        for i, n in enumerate(v):
            if not 1 <= n <= 100_000:
                raise ValueError(f"calibration_items[{i}] must lie in [1, 100000], got {n}")
        return tuple(sorted(v))

    @model_validator(mode="after")
    def _check(self):
        for judge in self.judges if self.shared_calibration else ():
            if not judge.same_error_on_both_arms:
                raise ValueError(f"calibration.shared: judge {judge.name}'s error differs between the arms "
                                 f"(sensitivity {judge.baseline_sensitivity:g} vs {judge.candidate_sensitivity:g}, "
                                 f"specificity {judge.baseline_specificity:g} vs {judge.candidate_specificity:g}); "
                                 "one calibration set serves both arms only when it is the same")
        for judge, d in itertools.product(self.judges, self.difference_grid):
            self.scenario(judge, self.calibration_items[0], d)   # raises naming the judge and difference
        for name in self.methods:
            MethodRef(name=name).resolve("fixed")
        return self

    @property
    def difference_grid(self) -> tuple[float, ...]:
        return (-self.margin, 0.0) if self.differences is None else tuple(self.differences)

    def scenario(self, judge: JudgeModel, items: int, difference: float) -> PairedScenario:
        try:
            return PairedScenario.from_rates(self.baseline, difference, self.discordance, clusters=self.clusters,
                                             cluster_size=FixedSize(trials=self.trials), rho=self.rho,
                                             label_noise=judge.noise(items, self.shared_calibration))
        except ValueError as exc:
            raise ValueError(f"difference {difference:g}, judge {judge.name}: {exc}") from None


def run_judge_study(spec: JudgeStudySpec, progress: Callable[[int], None] | None = None):
    """Run ``spec`` (one scenario per judge x calibration size x difference) and return its
    ``xarray.Dataset``; ``progress(n)`` is called with each scenario's replications."""
    import xarray as xr

    from studies.datasets import describe, make_attrs, method_identity

    methods = [MethodRef(name=n).resolve("fixed") for n in spec.methods]
    diffs = spec.difference_grid
    shape = (len(spec.judges), len(spec.calibration_items), len(diffs), len(methods))
    tallies = np.zeros(shape + (NF,), np.int64)
    reasons = np.zeros(shape + (len(REASON_NAMES),), np.int64)
    theta = np.zeros(shape)
    observed = np.zeros(shape[:1] + shape[2:3])
    for (j, judge), (c, items), (d, diff) in itertools.product(enumerate(spec.judges),
                                                                enumerate(spec.calibration_items), enumerate(diffs)):
        sc = spec.scenario(judge, items, diff)
        observed[j, d] = sc.observed_difference_trial()
        for i, m in enumerate(methods):
            theta[j, c, d, i] = m.true_value(sc)

        def tally(i, _margin, _alpha, res, block, at=(j, c, d)):
            tally_batch(res.status, res.estimate, res.lower, res.upper, float(theta[at + (i,)]), tallies[at + (i,)])
            if needs_calibration(methods[i]):
                reasons[at + (i,)] += np.bincount(res.reason, minlength=len(REASON_NAMES))

        evaluate(ScenarioRows(table_source(sc, spec.seed)), 0, spec.replications, methods, (spec.margin,),
                 (spec.alpha,), tally)
        if progress is not None:
            progress(spec.replications)
    meas = measures(tallies, theta, spec.margin)
    dims = ("judge", "calibration_items", "difference", "method")
    data = {k: (dims, meas[k]) for k in KEPT}
    data["n_reason"] = (dims + ("reason",), reasons)
    data["observed_difference_trial"] = (("judge", "difference"), observed)
    coords = {"judge": [j.name for j in spec.judges], "calibration_items": list(spec.calibration_items),
              "difference": list(diffs), "method": [m.label for m in methods],
              "reason": [REASON_NAMES[k] for k in sorted(REASON_NAMES)]}
    for arm in ("baseline", "candidate"):
        for what in ("sensitivity", "specificity"):
            coords[f"{arm}_{what}"] = ("judge", [getattr(j, f"{arm}_{what}") for j in spec.judges])
    ds = xr.Dataset(data, coords=coords)
    ds.attrs = make_attrs("judge", title=f"judge-label study {spec.name}", spec_json=spec.model_dump_json(),
                          methods=[method_identity(m) for m in methods], seed=spec.seed, margin=spec.margin,
                          alpha=spec.alpha, replications=spec.replications, calibration_version=CALIBRATION_VERSION,
                          shared_calibration=int(spec.shared_calibration))
    ds["n_reason"].attrs.update(long_name="replications of a judge-corrected method by reason code "
                                          "(methods.judged.REASONS; zero for the other methods)", units="1")
    return describe(ds)


def judge_study_rows(ds) -> list[dict]:
    """One row per judge x calibration size x difference x method: the figures a report shows."""
    rows = []
    for j, c, d, m in itertools.product(*(range(ds.sizes[k]) for k in ("judge", "calibration_items", "difference",
                                                                         "method"))):
        at = dict(judge=j, calibration_items=c, difference=d, method=m)
        v = {k: ds[k].isel(at).item() for k in ("pass_rate", "pass_rate_mcse", "pass_rate_cp_lower",
                                                  "pass_rate_cp_upper", "inconclusive_rate", "coverage", "bias",
                                                  "true_value", "n_reps")}
        reasons = ds["n_reason"].isel(at).values
        rows.append({"judge": str(ds.judge.values[j]), "calibration_items": int(ds.calibration_items.values[c]),
                     "difference": float(ds.difference.values[d]), "method": str(ds.method.values[m]),
                     "is_null": bool(v["true_value"] <= -ds.attrs["margin"] + 1e-12),
                     "observed_difference": float(ds.observed_difference_trial.isel(judge=j, difference=d)),
                     **{k: (int(x) if k == "n_reps" else float(x)) for k, x in v.items()},
                     "inconclusive_reasons": {str(ds.reason.values[k]): int(n) for k, n in enumerate(reasons)
                                              if n and str(ds.reason.values[k]) != "ok"}})
    return rows


def judge_study_estimate(spec: JudgeStudySpec):
    """Wall seconds of :func:`run_judge_study` (``studies.engine.cost.TimeEstimate``): the
    engine's pilot at the scenario with the largest calibration sets (the draws that grow with
    the items), times the number of scenarios; every scenario has the same K and M.  A
    scenario over ``studies.engine.cost.PILOT_DIRECT_PAIRS`` pairs is piloted on scaled-down
    copies (10^5 clusters of 10^4 trials: a 45 s pilot before its refusal)."""
    from studies.engine.cost import TimeEstimate, fit_scenarios, scenario_pairs

    methods = [MethodRef(name=n).resolve("fixed") for n in spec.methods]
    sc = spec.scenario(spec.judges[0], max(spec.calibration_items), spec.difference_grid[0])

    def runner(piloted, _full):
        def run(r: int) -> None:
            evaluate(ScenarioRows(table_source(piloted, spec.seed)), 0, r, methods, (spec.margin,), (spec.alpha,),
                     lambda *_: None)
        return run

    model = fit_scenarios(runner, [sc])
    n = len(spec.judges) * len(spec.calibration_items) * len(spec.difference_grid)
    wall = n * model.seconds(scenario_pairs(sc), spec.replications)
    return TimeEstimate(wall, wall, 1)


def judge_study_paths(spec: JudgeStudySpec, out_dir):
    """``(dataset, plot)`` paths :func:`judge_study` writes in ``out_dir``, known before it runs
    (a caller checks them first: a user's file of that name is not replaced unasked)."""
    import json
    from pathlib import Path

    from simlab.hashing import content_hash, short

    stem = f"{spec.name}-{short(content_hash(json.loads(spec.model_dump_json())))}"
    return Path(out_dir) / f"{stem}.nc", Path(out_dir) / f"{stem}.png"


def judge_study(spec: JudgeStudySpec, out_dir, progress: Callable[[int], None] | None = None) -> dict:
    """Run ``spec``, write its dataset (netCDF) and plot (PNG) into ``out_dir`` as
    ``<name>-<spec hash>.nc / .png``, and return what a report shows: the paths, the spec
    hash, the seconds taken and :func:`judge_study_rows`."""
    import time
    from pathlib import Path

    from simlab.hashing import short
    from studies.datasets import check_output_dir, save_dataset
    from studies.plots.judge import plot_judge_study

    out = check_output_dir(Path(out_dir))
    t0 = time.perf_counter()
    ds = run_judge_study(spec, progress)
    seconds = time.perf_counter() - t0
    stem = f"{spec.name}-{short(ds.attrs['spec_hash'])}"
    nc = save_dataset(ds, out / f"{stem}.nc")
    png = plot_judge_study(ds, out / f"{stem}.png")
    return {"dataset": str(nc), "plot": str(png), "spec_hash": ds.attrs["spec_hash"], "seconds": seconds,
            "replications": spec.replications, "margin": spec.margin, "alpha": spec.alpha,
            "rows": judge_study_rows(ds)}


def spec_from_json(text: str) -> JudgeStudySpec:
    """The spec stored in a judge dataset's ``spec_json`` attribute."""
    return JudgeStudySpec.model_validate(json.loads(text))


__all__ = ["EQUAL", "JudgeModel", "JudgeStudySpec", "LENIENT", "judge_study", "judge_study_estimate",
           "judge_study_rows", "run_judge_study", "spec_from_json"]
