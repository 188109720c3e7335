"""Sequential studies: sequential methods x scenario grid x margins on the same simulated
tables, tallied in integers, reported as an ``xarray.Dataset`` with a ``look`` dimension.

A :class:`SequentialStudySpec` (frozen pydantic, TOML / JSON, content-hashed) names the
sequential methods (optionally wrapping a fixed-sample method), the look schedule, a
scenario template and grid (``studies.engine.spec.ScenarioTemplate``: every ``PairedScenario``
field), margins, the one-sided ``alpha``, replications and seed::

    name = "peeking"
    methods = ["repeated_fixed", "likelihood_ratio", "bonferroni", "fixed_final",
               {name = "repeated_fixed", inner = "clustered_normal", label = "naive_clustered"},
               {name = "alpha_spending", options = {spending = "pocock"}}, "msprt", "betting_cs"]
    looks = [50, 100, 150, 200, 250, 300, 350, 400, 450, 500]   # or schedule = {looks = [...], unit = "trials"}
    margins = [0.03]
    alpha = 0.05
    replications = 20000
    seed = 1

    [scenario]
    cells = [0.97, 0.03, 0.0, 0.0]

    [grid]
    rho = [0.0, 0.3]

Per scenario x method x margin the dataset holds (Morris, White & Crowther 2019, Stat Med
38:2074-2102, for the MC SEs; Clopper--Pearson bounds for rates): ``promote_rate``,
``false_promotion_rate`` (true value of the method's estimand <= -margin, boundary included)
or ``power`` (otherwise), ``harm_rate``, ``expected_clusters`` / ``expected_trials`` at the end
of the analysis, ``bound_miss_rate`` (bound at stopping above the true value); per look
``first_promotion_rate``, ``cumulative_promotion_rate``, ``harm_by_look_rate`` and
``stop_look_rate`` (the stopping-look distribution).  With ``exact = true`` the exact
engines add ``exact_*`` twins wherever they apply (one-trial clusters, no loss, Markov
methods; NaN elsewhere).  ``attrs["dataset_kind"] = "sequential"`` (``studies/SCHEMA.md``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

import numba as nb
import numpy as np
import xarray as xr
from pydantic import Field, model_validator

from methods.method_ref import MethodRef, as_method_refs
from methods.sequential.base import NO_PROMOTION, PROMOTE, STOP_HARM, LookSchedule, SequentialMethod
from simlab.exact import ExactUnsupported
from simlab.rng import MAX_REPLICATIONS
from simlab.sampling import table_source
from simlab.scenario import PairedScenario

from studies.datasets import dataset_kind, describe, make_attrs, method_identity
from studies.engine.chunks import ChunkedRun, replication_check
from studies.engine.evaluate import ScenarioRows, evaluate
from studies.engine.measures import NULL_TOL, put_rate, rate
from studies.engine.study_dataset import run_attrs, to_python
from studies.engine.spec import GridSpec, ScenarioTemplate, plural_alias, read_spec_file, validate_spec

STUDY_KIND = "sequential"


# ---------------------------------------------------------------- the spec
class SequentialStudySpec(GridSpec):
    """What to run (see the module docstring)."""
    name: str = "sequential"
    methods: tuple[MethodRef, ...]
    schedule: LookSchedule
    scenario: ScenarioTemplate = ScenarioTemplate(cells=(0.97, 0.03, 0.0, 0.0))
    alpha: float = Field(default=0.05, gt=0.0, le=0.25)
    replications: int = Field(default=10_000, ge=1, le=MAX_REPLICATIONS)
    exact: bool = True

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data):
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "looks" in data:
            if "schedule" in data:
                raise ValueError("give looks or schedule, not both")
            data["schedule"] = {"looks": data.pop("looks"), "unit": data.pop("unit", "clusters")}
        plural_alias(data, "margin", "margins")
        if "methods" in data:
            data["methods"] = as_method_refs(data["methods"])
        return data

    def _base_scenario(self) -> dict[str, Any]:
        """The default number of clusters is the schedule's last look (cluster schedules)."""
        base = super()._base_scenario()
        if base.get("clusters") is None and base.get("sizes") is None and base.get("cluster_cells") is None \
                and "clusters" not in self.grid and self.schedule.unit == "clusters":
            base["clusters"] = self.schedule.last
        return base

    def _check_point(self, coords: dict[str, Any], scenario: PairedScenario) -> None:
        if self.schedule.unit == "clusters" and scenario.clusters < self.schedule.last:
            raise ValueError(f"grid point {coords}: the scenario has {scenario.clusters} clusters but the "
                             f"schedule's last look needs {self.schedule.last}")


def load_sequential_spec(path: str | Path) -> SequentialStudySpec:
    return parse_sequential_spec(read_spec_file(path), source=str(path))


def parse_sequential_spec(data: dict, source: str = "spec") -> SequentialStudySpec:
    return validate_spec(SequentialStudySpec, data, source)


# ---------------------------------------------------------------- integer tallies
# scalar fields, then three blocks of L per-look counts
SCALARS = ("n_reps", "n_promote", "n_harm", "n_no_promotion", "n_bound", "n_bound_above",
           "sum_clusters", "sum_clusters2", "sum_trials", "sum_trials2")
NS = len(SCALARS)
S = {k: i for i, k in enumerate(SCALARS)}


def n_fields(L: int) -> int:
    return NS + 3 * L


@nb.njit(cache=True)
def tally_sequential(decision, stop_look, clusters, trials, bound, theta, L, out):
    """Add one batch's sequential outcomes to ``out`` (int64[NS + 3L])."""
    for r in range(decision.shape[0]):
        out[0] += 1
        d = decision[r]
        j = stop_look[r]
        if d == 1:
            out[1] += 1
            out[NS + j] += 1
        elif d == 3:
            out[2] += 1
            out[NS + L + j] += 1
        else:
            out[3] += 1
        out[NS + 2 * L + j] += 1
        b = bound[r]
        if not math.isnan(b):
            out[4] += 1
            if b > theta:
                out[5] += 1
        c = clusters[r]
        t = trials[r]
        out[6] += c
        out[7] += c * c
        out[8] += t
        out[9] += t * t



def evaluate_sequential(scenario: PairedScenario, methods: Sequence[SequentialMethod], schedule: LookSchedule,
                        margins: Sequence[float], alpha: float, replications: int, seed: int, start: int = 0,
                        sampler: str = "auto", batch: int | None = None) -> np.ndarray:
    """int64[method, margin, NS + 3L]: tallies of replications ``start .. start + replications - 1``
    through the engine's one loop (``studies.engine.evaluate``); every method and margin sees
    the same tables (common random numbers)."""
    if replications < 0 or start < 0 or start + replications > MAX_REPLICATIONS:
        raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {start}..{start + replications}")
    L = schedule.n_looks
    out = np.zeros((len(methods), len(margins), n_fields(L)), np.int64)
    thetas = [m.true_value(scenario) for m in methods]

    def tally(i, j, c, res, block):
        tally_sequential(res.decision, res.stop_look, res.clusters, res.trials, res.bound, float(thetas[i]), L,
                         out[i, j])

    rows = ScenarioRows(table_source(scenario, seed, sampler), moments=False, batch=batch)
    evaluate(rows, start, start + replications, methods, margins, (alpha,), tally, schedule=schedule)
    return out


# ---------------------------------------------------------------- measures
def _mean_se(s1, s2, n):
    s1 = np.asarray(s1, dtype=np.float64)
    s2 = np.asarray(s2, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s1 / n, np.nan)
        var = np.where(n > 1, np.maximum(s2 - n * mean * mean, 0.0) / (n - 1.0), np.nan)
        return mean, np.sqrt(var / n)


def sequential_measures(t: np.ndarray, L: int, theta: np.ndarray, margin: np.ndarray,
                        mc_confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Measures of tally array ``t[..., NS + 3L]`` (per-look ones get a trailing look axis)."""
    t = np.asarray(t, dtype=np.int64)
    n = t[..., S["n_reps"]]
    out: dict[str, np.ndarray] = {k: t[..., S[k]].copy() for k in ("n_reps", "n_promote", "n_harm",
                                                                  "n_no_promotion", "n_bound")}
    theta = np.broadcast_to(np.asarray(theta, dtype=np.float64), n.shape)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), n.shape)
    null = theta <= -margin + NULL_TOL
    out["true_value"] = np.array(theta)
    out["is_null"] = null.astype(np.int8)

    def put(name, x, m):
        put_rate(out, name, x, m, mc_confidence)

    put("promote_rate", out["n_promote"], n)
    put("harm_rate", out["n_harm"], n)
    put("no_promotion_rate", out["n_no_promotion"], n)
    put("bound_miss_rate", t[..., S["n_bound_above"]], out["n_bound"])
    for name, keep in (("false_promotion_rate", null), ("power", ~null)):
        for suffix in ("", "_mcse", "_cp_lower", "_cp_upper"):
            out[f"{name}{suffix}"] = np.where(keep, out[f"promote_rate{suffix}"], np.nan)
    for what in ("clusters", "trials"):
        m_, se = _mean_se(t[..., S[f"sum_{what}"]], t[..., S[f"sum_{what}2"]], n)
        out[f"expected_{what}"], out[f"expected_{what}_mcse"] = m_, se
    pb = t[..., NS:NS + L]
    hb = t[..., NS + L:NS + 2 * L]
    sb = t[..., NS + 2 * L:NS + 3 * L]
    nn = n[..., None]
    out["n_promote_by_look"], out["n_harm_by_look"], out["n_stop_by_look"] = pb, hb, sb
    out["first_promotion_rate"], out["first_promotion_rate_mcse"] = rate(pb, nn)
    out["cumulative_promotion_rate"], out["cumulative_promotion_rate_mcse"] = rate(np.cumsum(pb, axis=-1), nn)
    out["harm_by_look_rate"], out["harm_by_look_rate_mcse"] = rate(hb, nn)
    out["stop_look_rate"], out["stop_look_rate_mcse"] = rate(sb, nn)
    return out


LOOK_MEASURES = ("n_promote_by_look", "n_harm_by_look", "n_stop_by_look", "first_promotion_rate",
                 "first_promotion_rate_mcse", "cumulative_promotion_rate", "cumulative_promotion_rate_mcse",
                 "harm_by_look_rate", "harm_by_look_rate_mcse", "stop_look_rate", "stop_look_rate_mcse")


# ---------------------------------------------------------------- exact twins
def exact_point(scenario: PairedScenario, methods: Sequence[SequentialMethod], schedule: LookSchedule,
                margins: Sequence[float], alpha: float) -> dict[str, np.ndarray]:
    """``exact_*`` arrays [method, margin(, look)] for one scenario; NaN where no engine applies."""
    from studies.exact.sequential import exact_for_scenario

    L = schedule.n_looks
    M, G = len(methods), len(margins)
    out = {k: np.full((M, G), np.nan) for k in ("exact_promote_rate", "exact_harm_rate", "exact_expected_trials")}
    for k in ("exact_first_promotion_rate", "exact_cumulative_promotion_rate", "exact_stop_look_rate"):
        out[k] = np.full((M, G, L), np.nan)
    engine = np.full(M, "", dtype=object)
    for i, m in enumerate(methods):
        for j, margin in enumerate(margins):
            try:
                r = exact_for_scenario(m, scenario, schedule, float(margin), float(alpha))
            except ExactUnsupported as exc:
                engine[i] = f"none: {exc}"
                continue
            engine[i] = "sequential paths"
            out["exact_promote_rate"][i, j] = r.promote
            out["exact_harm_rate"][i, j] = r.harm
            out["exact_expected_trials"][i, j] = r.expected_observations
            out["exact_first_promotion_rate"][i, j] = r.promote_by_look
            out["exact_cumulative_promotion_rate"][i, j] = r.cumulative_promote
            out["exact_stop_look_rate"][i, j] = r.stop_by_look
    out["exact_engine"] = engine
    return out


# ---------------------------------------------------------------- whole studies
def sequential_task(scenario, refs, schedule, margins, alpha, seed, sampler, start, stop):
    methods = [r.resolve("sequential") for r in refs]
    return evaluate_sequential(scenario, methods, schedule, margins, alpha, stop - start, seed, start, sampler)


def sequential_run_key(spec: SequentialStudySpec, chunk_size: int) -> str:
    """Identity of a sequential run's chunk files: spec hash, method identities, samplers, chunking."""
    from simlab.generate import GENERATOR_VERSION
    from simlab.sampling import COMPOSITION_VERSION

    ids = [r.resolve("sequential").identity.as_dict() for r in spec.methods]
    blob = json.dumps({"kind": STUDY_KIND, "spec": spec.hash, "methods": ids, "composition": COMPOSITION_VERSION,
                       "generator": GENERATOR_VERSION, "chunk": int(chunk_size)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _sequential_check(L: int):
    return lambda task: replication_check(task, {"n_reps": S["n_reps"], "n_promote": S["n_promote"],
                                                 "n_harm": S["n_harm"], "n_no_promotion": S["n_no_promotion"]})


def run_sequential_study(spec: SequentialStudySpec, n_jobs: int = 1, chunk_size: int | None = None,
                         progress: bool = False, executor=None, work_dir: str | Path | None = None,
                         resume: bool = True, keep_chunks: bool = False, out: str | Path | None = None,
                         on_rejected: Callable[[Path, str], Any] | None = None) -> xr.Dataset:
    """Run ``spec`` on ``n_jobs`` local processes or through ``executor``
    (``studies.engine.executor``); tallies are integers, so the dataset is identical for any
    backend, worker count and chunk size (replication r depends only on (seed, scenario, r)).
    ``work_dir``, ``resume``, ``keep_chunks``, ``on_rejected``, ``out``: as ``run_study`` --
    an interrupted run resumes from its checked chunks (``studies.engine.chunks``)."""
    from simlab.progress import progress_bar

    from studies.datasets import check_output_path, save_dataset
    from studies.engine.durable import exclusive
    from studies.engine.executor import as_executor

    refs = spec.methods
    methods = [r.resolve("sequential") for r in refs]
    for m in methods:
        if spec.schedule.unit not in m.units:
            raise ValueError(f"method {m.label!r} needs a look schedule in {' or '.join(m.units)}")
    if out is not None:
        out = check_output_path(out)
    points = spec.points()
    n = spec.replications
    chunk = int(chunk_size or spec.chunk_size)
    if chunk < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk}")
    tasks = [(si, s, min(s + chunk, n)) for si in range(len(points)) for s in range(0, n, chunk)]
    L = spec.schedule.n_looks
    shape = (len(refs), len(spec.margins), n_fields(L))
    key = sequential_run_key(spec, chunk) if work_dir is not None else ""
    with contextlib.ExitStack() as stack:
        if out is not None:
            stack.enter_context(exclusive(out.with_name(f".{out.name}.lock"), f"output {out}"))
        run = stack.enter_context(ChunkedRun(key, tasks, shape, _sequential_check(L), work_dir=work_dir,
                                             resume=resume, keep_chunks=keep_chunks, on_rejected=on_rejected,
                                             spec_json=spec.to_json(), add=np.add))
        payloads = [(points[si][1], refs, spec.schedule, spec.margins, spec.alpha, spec.seed, spec.sampler, s, e)
                    for si, s, e in run.todo]
        ex, owned = as_executor(executor, n_jobs)
        if owned:
            stack.enter_context(ex)
        with progress_bar(n * len(points), f"sequential study {spec.name}", enabled=progress) as advance:
            run.run(ex, sequential_task, payloads, advance)
        totals = run.totals(len(points))
        exact_rows = [exact_point(sc, methods, spec.schedule, spec.margins, spec.alpha) for _, sc in points] \
            if spec.exact else None
        ds = build_sequential_dataset(spec, points, methods, totals, exact_rows, run.info)
        if out is not None:
            save_dataset(ds, out)
        run.finish()
    return ds


def _coord_values(values) -> np.ndarray:
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values):
        return np.asarray(values)
    return np.asarray([v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values], dtype=object)


def build_sequential_dataset(spec, points, methods, totals, exact_rows, info) -> xr.Dataset:
    dims = spec.dims
    shape = spec.shape
    L = spec.schedule.n_looks
    mdims = dims + ("method", "margin")
    ldims = mdims + ("look",)
    coords: dict[str, Any] = {d: _coord_values(spec.grid[d]) for d in dims}
    coords["method"] = np.asarray([r.key for r in spec.methods], dtype=object)
    coords["margin"] = np.asarray(spec.margins, dtype=np.float64)
    coords["look"] = np.arange(1, L + 1)
    coords["look_count"] = ("look", np.asarray(spec.schedule.looks, dtype=np.int64))
    coords["information_fraction"] = ("look", spec.schedule.information_fractions())
    coords["method_name"] = ("method", np.asarray([m.name for m in methods], dtype=object))
    coords["method_estimand"] = ("method", np.asarray([m.estimand.value for m in methods], dtype=object))
    per = []
    for (_, scenario), tot in zip(points, totals):
        theta = np.array([m.true_value(scenario) for m in methods])[:, None]
        per.append(sequential_measures(tot, L, theta, np.asarray(spec.margins)[None, :], spec.mc_confidence))
    data: dict[str, Any] = {}
    for name in per[0]:
        arr = np.stack([p[name] for p in per])
        if name in LOOK_MEASURES:
            data[name] = (ldims, arr.reshape(shape + arr.shape[1:]))
        else:
            data[name] = (mdims, arr.reshape(shape + arr.shape[1:]))
    for k in ("true_difference_trial", "true_difference_cluster", "observed_difference_trial",
              "observed_difference_cluster"):
        data[k] = (dims, np.array([s.true_values()[k] for _, s in points]).reshape(shape))
    data["scenario_key"] = (dims, np.asarray([s.key for _, s in points], dtype=object).reshape(shape))
    data["scenario_json"] = (dims, np.asarray([s.canonical_json().decode() for _, s in points],
                                              dtype=object).reshape(shape))
    if exact_rows is not None:
        for name in exact_rows[0]:
            arr = np.stack([e[name] for e in exact_rows])
            if name == "exact_engine":
                data[name] = (dims + ("method",), arr.reshape(shape + arr.shape[1:]))
            elif arr.ndim == 4:
                data[name] = (ldims, arr.reshape(shape + arr.shape[1:]))
            else:
                data[name] = (mdims, arr.reshape(shape + arr.shape[1:]))
    identities = [method_identity(m, r.key, inner=None if m.inner is None else m.inner.identity.as_dict(),
                                  markov=m.markov)
                  for m, r in zip(methods, spec.methods)]
    attrs = make_attrs(
        STUDY_KIND, title=f"simlab sequential study {spec.name}", spec_json=spec.to_json(), spec_hash=spec.hash,
        methods=identities, seed=spec.seed,
        spec_name=spec.name,
        schedule_json=spec.schedule.canonical_json().decode(),
        schedule_unit=spec.schedule.unit,
        alpha=float(spec.alpha),
        replications=int(spec.replications),
        **run_attrs(info, spec.mc_confidence),
        null_rule="false_promotion_rate where true_value <= -margin (boundary included); power otherwise",
        decisions={"no_promotion": NO_PROMOTION, "promote": PROMOTE, "stop_for_harm": STOP_HARM},
    )
    return describe(xr.Dataset(data, coords=coords, attrs=attrs))


def sequential_summary_rows(ds: xr.Dataset, margin: float | None = None) -> list[dict]:
    """One row per scenario x method (one margin) with the headline measures and, where
    present, their exact twins."""
    if dataset_kind(ds) != STUDY_KIND:
        raise ValueError("not a sequential study dataset (attrs.dataset_kind != 'sequential')")
    margin = float(ds.margin.values[0]) if margin is None else float(margin)
    if margin not in ds.margin.values:
        raise ValueError(f"margin {margin} not in the dataset (has {ds.margin.values.tolist()})")
    sel = ds.sel(margin=margin)
    grid = [d for d in sel.promote_rate.dims if d != "method"]
    stacked = sel.stack(point=grid) if grid else sel.expand_dims(point=[0])
    rows = []
    for p in range(stacked.sizes["point"]):
        pt = stacked.isel(point=p)
        coords = {d: to_python(pt[d].values) for d in grid}
        for i, method in enumerate(pt.method.values):
            row = {**coords, "method": str(method), "margin": margin, "true_value": to_python(pt.true_value.values[i]),
                   "is_null": bool(pt.is_null.values[i]), "n_reps": to_python(pt.n_reps.values[i])}
            for k in ("promote_rate", "harm_rate", "expected_clusters", "expected_trials", "bound_miss_rate"):
                row[k] = to_python(pt[k].values[i])
                row[f"{k}_mcse"] = to_python(pt[f"{k}_mcse"].values[i])
            row["cumulative_promotion_rate"] = [float(x) for x in pt.cumulative_promotion_rate.values[i]]
            row["stop_look_rate"] = [float(x) for x in pt.stop_look_rate.values[i]]
            if "exact_promote_rate" in pt:
                row["exact_promote_rate"] = to_python(pt.exact_promote_rate.values[i])
                row["exact_expected_trials"] = to_python(pt.exact_expected_trials.values[i])
                row["exact_cumulative_promotion_rate"] = [float(x) for x in
                                                          pt.exact_cumulative_promotion_rate.values[i]]
            rows.append(row)
    return rows
