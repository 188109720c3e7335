"""Study results as an ``xarray.Dataset``, saved as netCDF (h5netcdf engine).

Dimensions: the varied scenario fields (in grid order), then ``method``, ``margin``,
``alpha`` (the one-sided level).  Variables: every count and measure of ``studies.engine.measures`` (``*_mcse``
their Monte Carlo SEs, ``*_cp_lower/upper`` exact Clopper-Pearson bounds of rates), the
scenario's true values, and -- when requested -- ``exact_*`` values from the exact
engines (NaN where none applies; ``exact_engine`` names the engine).  Attributes: the
spec JSON and hash, method identities (name, version, source sha256, estimand, options),
package versions, code revision, seed, replications and timestamps.  A grid value that
is not a scalar (``cells``, ``sizes`` ...) is a JSON string coordinate.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr

from studies.datasets import describe, make_attrs, method_identity
from studies.engine.measures import COUNTS, MEASURES, RATE_MEASURES
from studies.exact.fixed import EXACT_MEASURES

MORRIS = "Morris, White & Crowther (2019) Stat Med 38:2074-2102"

def run_attrs(info, mc_confidence: float) -> dict[str, Any]:
    """The attributes a finished run adds to its dataset: when and how long, how many tasks
    (and how many were resumed from chunks), and the reference its Monte Carlo measures follow."""
    return {"mc_confidence": float(mc_confidence), "started": info.started, "finished": info.finished,
            "run_seconds": float(info.seconds), "run_tasks": int(info.tasks), "run_tasks_resumed": int(info.resumed),
            "measures_reference": MORRIS}


def _coord_values(values) -> np.ndarray:
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values):
        return np.asarray(values)
    return np.asarray([json.dumps(v, sort_keys=True) if not isinstance(v, str) else v for v in values], dtype=object)


def _strings(a) -> np.ndarray:
    return np.asarray(a, dtype=object)


def build_study_dataset(spec, points, counts, resolved, refs, exact_rows, info, kind: str = "study") -> xr.Dataset:
    """Assemble the dataset of a run (see the module docstring); ``kind`` is ``study`` or
    ``demo`` (``studies/SCHEMA.md``)."""
    dims = spec.dims
    shape = spec.shape
    mdims = dims + ("method", "margin", "alpha")
    coords: dict[str, Any] = {d: _coord_values(spec.grid[d]) for d in dims}
    coords["method"] = _strings([r.key for r in refs])
    coords["margin"] = np.asarray(spec.margins, dtype=np.float64)
    coords["alpha"] = np.asarray(spec.alphas, dtype=np.float64)
    coords["method_name"] = ("method", _strings([m.name for m in resolved]))
    coords["method_estimand"] = ("method", _strings([str(getattr(m.estimand, "value", m.estimand))
                                                     for m in resolved]))
    per = [c.measures(spec.mc_confidence) for c in counts]
    data: dict[str, Any] = {}
    for name in per[0]:
        arr = np.stack([p[name] for p in per]).reshape(shape + per[0][name].shape)
        data[name] = (mdims, arr)
    scen = {k: np.array([s.true_values()[k] for _, s in points]).reshape(shape)
            for k in ("true_difference_trial", "true_difference_cluster", "observed_difference_trial",
                      "observed_difference_cluster")}
    for k, v in scen.items():
        data[k] = (dims, v)
    data["scenario_key"] = (dims, _strings([s.key for _, s in points]).reshape(shape))
    data["scenario_json"] = (dims, _strings([s.canonical_json().decode() for _, s in points]).reshape(shape))
    data["sampler"] = (dims, _strings([c.sampler for c in counts]).reshape(shape))
    if exact_rows is not None:
        for name in EXACT_MEASURES:
            data[f"exact_{name}"] = (mdims, exact_rows[name].reshape(shape + exact_rows[name].shape[1:]))
        data["exact_engine"] = (dims + ("method",), exact_rows["engine"].reshape(shape + (len(refs),)))
    identities = [method_identity(m, r.key) for m, r in zip(resolved, refs)]
    attrs = make_attrs(
        kind, title=f"simlab {kind} {spec.name}", spec_json=spec.to_json(), spec_hash=spec.hash,
        methods=identities, seed=spec.seed,
        spec_name=spec.name,
        replications=int(spec.n_replications),
        **run_attrs(info, spec.mc_confidence),
        null_rule="false_pass_rate where true_value <= -margin (boundary included); power otherwise",
    )
    return describe(xr.Dataset(data, coords=coords, attrs=attrs))


def grid_dims(ds: xr.Dataset) -> list[str]:
    """The varied scenario fields of a study dataset (its dimensions before ``method``)."""
    return [d for d in ds.pass_rate.dims if d not in ("method", "margin", "alpha")]


def select_level(ds: xr.Dataset, margin: float | None = None,
                 alpha: float | None = None) -> tuple[xr.Dataset, float, float]:
    """``ds`` at one margin and level alpha (default: the first of each); a level the
    dataset lacks is an error listing the ones it has."""
    margin = float(ds.margin.values[0]) if margin is None else float(margin)
    alpha = float(ds.alpha.values[0]) if alpha is None else float(alpha)
    if margin not in ds.margin.values:
        raise ValueError(f"margin {margin} not in the dataset (has {ds.margin.values.tolist()})")
    if alpha not in ds.alpha.values:
        raise ValueError(f"alpha {alpha} not in the dataset (has {ds.alpha.values.tolist()})")
    return ds.sel(margin=margin, alpha=alpha), margin, alpha


def study_summary_rows(ds: xr.Dataset, margin: float | None = None, alpha: float | None = None) -> list[dict]:
    """One row per scenario x method (at one margin and level alpha) for tables."""
    sel, margin, alpha = select_level(ds, margin, alpha)
    dims = grid_dims(ds)
    rows = []
    stacked = sel.stack(point=dims) if dims else sel.expand_dims(point=[0])
    for p in range(stacked.sizes["point"]):
        pt = stacked.isel(point=p)
        coords = {d: to_python(pt[d].values) for d in dims}
        for i, method in enumerate(pt.method.values):
            row = {**coords, "method": str(method), "estimand": str(pt.method_estimand.values[i]),
                   "margin": margin, "alpha": alpha}
            for name in ("true_value", "n_reps") + MEASURES:
                row[name] = to_python(pt[name].values[i])
                if f"{name}_mcse" in pt:
                    row[f"{name}_mcse"] = to_python(pt[f"{name}_mcse"].values[i])
            for name in RATE_MEASURES:
                row[f"{name}_cp_lower"] = to_python(pt[f"{name}_cp_lower"].values[i])
                row[f"{name}_cp_upper"] = to_python(pt[f"{name}_cp_upper"].values[i])
            if "exact_pass_rate" in pt:
                row["exact_engine"] = str(pt.exact_engine.values[i])
                for name in ("pass_rate", "coverage", "bias", "mean_width", "inconclusive_rate"):
                    row[f"exact_{name}"] = to_python(pt[f"exact_{name}"].values[i])
            rows.append(row)
    return rows


def to_python(v):
    """A dataset value as a plain Python scalar (or list) for rows and JSON."""
    v = np.asarray(v)
    if v.dtype.kind in "iu":
        return int(v)
    if v.dtype.kind == "f":
        return float(v)
    if v.dtype.kind == "b":
        return bool(v)
    return v.item() if v.shape == () else v.tolist()


__all__ = ["build_study_dataset", "study_summary_rows", "grid_dims", "to_python",
           "select_level", "COUNTS", "MEASURES"]
