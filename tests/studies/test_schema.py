"""studies/SCHEMA.md holds the code to what it writes: a dataset of every kind is made here
(small), and every dimension, coordinate, variable and attribute it carries must be named in
its kind's section (or among the attributes every kind carries), and every name listed there
must be present."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

SCHEMA = Path(__file__).resolve().parents[2] / "studies" / "SCHEMA.md"
PARTS = ("dimensions", "coordinates", "variables", "attributes")


def _names(text: str) -> set[str]:
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", text))


def schema() -> dict[str, dict[str, set[str]]]:
    """kind -> part -> the names listed (a part's list runs from its bold label to the next one)."""
    out: dict[str, dict[str, set[str]]] = {}
    for block in re.split(r"^## ", SCHEMA.read_text(), flags=re.M)[1:]:
        title, body = block.split("\n", 1)
        kind = "common" if title.startswith("Attributes every kind") else title.strip()
        parts: dict[str, set[str]] = {p: set() for p in PARTS}
        pieces = re.split(r"\*\*(dimensions|coordinates|variables|attributes)\*\*", body)
        for label, text in zip(pieces[1::2], pieces[2::2]):
            parts[label] |= _names(text)
        out[kind] = parts
    return out


def check(kind: str, ds, grid: tuple[str, ...] = ()) -> None:
    doc, common = schema()[kind], schema()["common"]["attributes"]
    actual = {"dimensions": set(ds.dims) - set(grid), "coordinates": set(ds.coords) - set(grid),
              "variables": set(ds.data_vars), "attributes": set(ds.attrs) - common}
    for part in PARTS:
        listed = doc[part]
        if part == "attributes":
            missing = common - set(ds.attrs)
            assert not missing, f"{kind}: attrs every kind carries are missing: {sorted(missing)}"
        undocumented = actual[part] - listed - (common if part == "attributes" else set())
        assert not undocumented, f"{kind} {part} not in SCHEMA.md: {sorted(undocumented)}"
        absent = listed - actual[part] - {"dataset_kind"}
        # a section may name values (flags, kinds) beside its names: only names that look
        # like this part's entries and are absent count
        absent = {n for n in absent if n in _expected_everywhere(kind, part)}
        assert not absent, f"{kind} {part} listed in SCHEMA.md but not written: {sorted(absent)}"
    assert ds.attrs["dataset_kind"] == kind and ds.attrs["schema_version"] == "2"


def _expected_everywhere(kind: str, part: str) -> set[str]:
    """The listed names that are entries of ``part`` (not values such as flag meanings):
    those written in the part's list as entries, i.e. everything listed minus the values."""
    values = {"sequential", "qualification", "sizing", "demo", "bench", "study", "composition", "trial", "unit",
              "pooled", "moments", "trial_weighted", "cluster_weighted", "loss_rate", "cells", "chunk_size",
              "name", "version", "source_sha256", "label", "estimand", "options", "citation", "inner", "markov",
              "workload", "simlab", "reference", "reference_name", "ratio", "seconds", "note", "exact", "is_null",
              "spec_json", "spec_hash"}
    return schema()[kind][part] - values


@pytest.fixture(scope="module")
def study():
    from studies.engine import parse_spec, run_study
    spec = parse_spec({"name": "schema", "methods": ["clustered_normal", "paired_wald"], "replications": 200,
                       "exact": True, "scenario": {"clusters": 10, "trials": 1, "baseline": 0.9, "discordance": 0.1},
                       "grid": {"difference": [-0.03, 0.0]}})
    return run_study(spec), spec.dims


def test_study(study):
    ds, dims = study
    check("study", ds, dims)


def test_sequential():
    from studies.engine import parse_sequential_spec, run_sequential_study
    s = parse_sequential_spec({"name": "schema", "methods": ["repeated_fixed", "likelihood_ratio"], "looks": [10, 20],
                               "replications": 200, "scenario": {"cells": [0.97, 0.03, 0.0, 0.0]},
                               "grid": {"rho": [0.0]}})
    check("sequential", run_sequential_study(s), s.dims)


def test_qualification(tmp_path):
    import xarray as xr

    from methods import get
    from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy
    from simlab.scenario import FixedSize
    from studies.qualify import qualify
    dom = QualificationDomain(clusters=IntAxis(lo=10, hi=10, grid=(10,)), cluster_sizes=(FixedSize(trials=1),),
                              rho=Axis(lo=0.0, hi=0.0, grid=(0.0,)), margin=Axis(lo=0.1, hi=0.1, grid=(0.1,)),
                              baseline=Axis(lo=0.9, hi=0.9, grid=(0.9,)), discordance=Axis(lo=0.1, hi=0.1, grid=(0.1,)))
    run = qualify([get("paired_wald")], QualificationPolicy(domain=dom, min_replications=200, max_replications=400),
                  out_dir=tmp_path)
    with xr.open_dataset(run.outcomes[0].dataset_path, engine="h5netcdf") as ds:
        check("qualification", ds.load())


def test_sizing(tmp_path):
    import xarray as xr

    from methods import get
    from studies.sizing import save_sizing, size
    r = size(get("clustered_score"), margin=0.1, difference=0.0, trials=1, check_false_pass=False, max_reps=2000)
    with xr.open_dataset(save_sizing(r, tmp_path)["curve"], engine="h5netcdf") as ds:
        check("sizing", ds.load())


def test_robustness(tmp_path):
    from studies.datasets import open_dataset, save_dataset
    from studies.qualify import default_laws, robustness
    laws = default_laws(20, 2, 0.05, families=("direction",))[:2]
    rep = robustness(["cluster_t"], 20, 2, 0.05, laws=laws, replications=200, seed=1)
    check("robustness", open_dataset(save_dataset(rep.dataset(), tmp_path / "r.nc")))


def test_judge():
    from studies import JudgeStudySpec, run_judge_study
    check("judge", run_judge_study(JudgeStudySpec(clusters=6, trials=2, calibration_items=(50,), replications=40)))


def test_shipped_bench_json():
    class Obj:   # the bench JSON holds its attrs at the top level
        def __init__(self, d):
            self.attrs, self.dims, self.coords, self.data_vars = d, {}, {}, {}
    path = Path(__file__).resolve().parents[2] / "results" / "bench" / "vm-x86_64-2cores.json"
    data = json.loads(path.read_text())
    assert {"workload", "unit", "simlab", "reference", "reference_name", "ratio", "seconds"} <= set(data["rows"][0])
    data = {**data, "schema_version": "2"}   # the shipped file predates schema 2; its layout is the same
    check("bench", Obj(data))


def test_the_check_catches_an_undocumented_variable(study):
    ds, dims = study
    with pytest.raises(AssertionError, match="not in SCHEMA.md"):
        check("study", ds.assign(surprise=ds.n_reps), dims)
    with pytest.raises(AssertionError, match="listed in SCHEMA.md but not written"):
        check("study", ds.drop_vars("bias"), dims)
