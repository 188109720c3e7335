"""Sequential studies: spec validation, the xarray dataset (look dimension, exact twins),
bitwise reproducibility across chunkings, clustered scenarios and the seed's dependence
counterexample as a scenario, netCDF round trip and the plot."""
from __future__ import annotations

import math

import numpy as np
import pytest

from studies.datasets import open_dataset, save_dataset
from studies.engine.sequential import parse_sequential_spec, run_sequential_study, sequential_summary_rows
from studies.plots.sequential import plot_sequential
from tests.reference_values import SEQUENTIAL_SEED_PROMOTION_5DP

LOOKS = [50, 100, 150, 200]


def spec(**kw):
    base = {"name": "t", "methods": ["repeated_fixed", "likelihood_ratio", "msprt"], "looks": LOOKS,
            "replications": 3000, "seed": 7, "scenario": {"cells": [0.97, 0.03, 0.0, 0.0]}}
    base.update(kw)
    return parse_sequential_spec(base)


def test_spec_errors_name_the_field():
    with pytest.raises(ValueError, match="strictly increasing"):
        spec(looks=[50, 40])
    with pytest.raises(ValueError, match="unknown method"):
        run_sequential_study(spec(methods=["no_such_method"]))
    with pytest.raises(ValueError, match="not a sequential method"):
        run_sequential_study(spec(methods=["clustered_normal"]))
    with pytest.raises(ValueError, match="grid.colour is not a scenario field"):
        spec(grid={"colour": [1, 2]})
    with pytest.raises(ValueError, match="needs 200"):
        spec(scenario={"cells": [0.97, 0.03, 0, 0], "clusters": 100}).points()
    with pytest.raises(ValueError, match="duplicate method labels"):
        spec(methods=["msprt", "msprt"])
    with pytest.raises(ValueError, match="margins"):
        spec(margins=[1.5])


def test_dataset_shape_measures_and_exact_twins():
    s = spec(grid={"cells": [[0.97, 0.03, 0.0, 0.0], [0.99, 0.01, 0.0, 0.0]]}, margins=[0.03, 0.05])
    ds = run_sequential_study(s)
    assert ds.attrs["dataset_kind"] == "sequential"
    assert dict(ds.sizes) == {"cells": 2, "method": 3, "margin": 2, "look": 4}
    assert ds.cumulative_promotion_rate.dims == ("cells", "method", "margin", "look")
    assert ds.look_count.values.tolist() == LOOKS
    n = ds.n_reps.values
    assert np.all(n == 3000)
    assert np.all(ds.n_promote + ds.n_harm + ds.n_no_promotion == n)
    assert np.all(ds.n_stop_by_look.sum("look") == ds.n_reps)
    np.testing.assert_array_equal(ds.n_promote_by_look.sum("look"), ds.n_promote)
    # false promotion at the null (true loss 0.03 = margin 0.03), power otherwise
    fp = ds.false_promotion_rate.sel(margin=0.03).isel(cells=0)
    assert np.all(np.isfinite(fp)) and np.all(np.isnan(ds.power.sel(margin=0.03).isel(cells=0)))
    # every method here is Markov and the scenario has one-trial clusters: exact twins exist,
    # and the simulation agrees within 4 MC SE
    exact = ds.exact_promote_rate.values
    assert np.all(np.isfinite(exact))
    se = np.sqrt(exact * (1 - exact) / n)
    assert np.all(np.abs(ds.promote_rate.values - exact) <= 4 * se + 1e-15)
    et = ds.exact_expected_trials.values
    assert np.all(np.abs(ds.expected_trials.values - et) <= 4 * ds.expected_trials_mcse.values + 1e-9)
    rows = sequential_summary_rows(ds, margin=0.05)
    assert len(rows) == 6 and {"cells", "method", "promote_rate", "exact_promote_rate"} <= set(rows[0])


def test_bitwise_identical_for_any_chunking_and_jobs_and_after_a_resume(tmp_path):
    """Also resumes like a fixed study (``run_study``): a run whose work directory keeps some
    checked chunks computes only the rest, and the dataset is the uninterrupted run's."""
    s = spec(methods=["repeated_fixed", "betting_cs"], replications=2500)
    a = run_sequential_study(s, chunk_size=2500)
    work = tmp_path / "work"
    b = run_sequential_study(s, chunk_size=700, work_dir=work, keep_chunks=True)
    (run_dir,) = work.iterdir()
    chunks = sorted(run_dir.glob("t*.npz"))
    assert len(chunks) == 4 and b.attrs["run_tasks_resumed"] == 0
    for lost in chunks[1::2]:   # as if the run had stopped with two of its four chunks written
        lost.unlink()
    r = run_sequential_study(s, chunk_size=700, work_dir=work)
    assert r.attrs["run_tasks_resumed"] == 2 and r.attrs["run_tasks"] == 4
    c = run_sequential_study(s, chunk_size=1000, n_jobs=2)
    for v in ("n_promote", "n_promote_by_look", "n_stop_by_look", "expected_trials", "bound_miss_rate"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
        np.testing.assert_array_equal(a[v].values, c[v].values)
        np.testing.assert_array_equal(a[v].values, r[v].values)


def test_clustered_scenarios_and_dependence_counterexample(tmp_path):
    # clusters of 10 trials; rho -> 1 copies one outcome to every trial of a cluster (the seed's
    # dependence counterexample is this scenario, not a special function).  Looks in trials.
    s = parse_sequential_spec({
        "name": "dependence",
        "methods": ["repeated_fixed", "msprt", "betting_cs",
                    {"name": "repeated_fixed", "inner": "clustered_normal", "label": "naive_clustered_normal"}],
        "schedule": {"looks": [50, 100, 150, 200, 250, 300, 350, 400, 450, 500], "unit": "trials"},
        "scenario": {"cells": [0.97, 0.03, 0.0, 0.0], "clusters": 50, "trials": 10},
        "grid": {"rho": [0.0, 0.999999]}, "replications": 4000, "seed": 3})
    ds = run_sequential_study(s)
    assert ds.exact_engine.values[0, 0].startswith("none")  # 10-trial clusters: simulated only
    fp = ds.false_promotion_rate.sel(margin=0.03)
    iid_exact = SEQUENTIAL_SEED_PROMOTION_5DP["repeated_fixed"]  # the seed's exact value for independent trials (verified in test_sequential_exact)
    # independent trials: the naive binomial rule is near its iid exact value ...
    r0 = fp.sel({"rho": 0.0, "method": "repeated_fixed"})
    assert abs(float(r0) - iid_exact) <= 4 * math.sqrt(iid_exact * (1 - iid_exact) / 4000)
    # ... copied outcomes inflate it well beyond (its CP lower bound exceeds the iid value)
    assert float(ds.false_promotion_rate_cp_lower.sel({"rho": 0.999999, "method": "repeated_fixed",
                                                       "margin": 0.03})) > iid_exact
    # the anytime-valid betting CS on cluster means keeps its level under dependence
    for rho in (0.0, 0.999999):
        assert float(ds.false_promotion_rate_cp_lower.sel({"rho": rho, "method": "betting_cs", "margin": 0.03})) <= 0.05
    assert float(ds.expected_clusters.sel({"rho": 0.0, "method": "msprt", "margin": 0.03})) <= 50
    path = save_dataset(ds, tmp_path / "dep.nc")
    back = open_dataset(path)
    np.testing.assert_array_equal(back.n_promote_by_look.values, ds.n_promote_by_look.values)
    assert back.attrs["dataset_kind"] == "sequential"
    png = plot_sequential(back, tmp_path / "dep.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unequal_sizes_label_noise_and_loss_run():
    s = parse_sequential_spec({
        "methods": ["alpha_spending", "msprt", "bonferroni"], "looks": [20, 40, 60],
        "scenario": {"baseline": 0.9, "difference": -0.03, "discordance": 0.1, "clusters": 60,
                     "mean_trials": 4.0, "rho": 0.2, "candidate_specificity": 0.9, "loss_rate": 0.05},
        "replications": 2000, "seed": 9})
    ds = run_sequential_study(s)
    assert np.all(ds.n_reps.values == 2000)
    assert np.all(ds.expected_clusters.values <= 60) and np.all(ds.expected_trials.values > 0)
    assert np.all(np.isnan(ds.exact_promote_rate.values))
