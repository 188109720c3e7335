"""Study runner: common random numbers, bitwise reproducibility for any n_jobs / chunk
size / batch size / replication split, resume after a killed run, measures against an
independent per-replication computation (numpy / statsmodels), netCDF round trip."""
from __future__ import annotations

from simlab.hashing import is_hash
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from methods import registry
from simlab.generate import simulate_tables
from simlab.proportions import clopper_pearson
from simlab.sampling import scenario_tables, table_source
from simlab.scenario import FixedSize, PairedScenario
from studies.engine import tally
from studies.datasets import same_data as data_equal
from studies.datasets import open_dataset, save_dataset
from studies.engine.study_dataset import study_summary_rows
from studies.engine.runner import ScenarioCounts, evaluate_scenario, run_study
from studies.engine.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"name": "t",
        "methods": ["clustered_normal", "paired_wald", {"name": "cluster_t", "options": {"min_clusters": 5}}],
        "scenario": {"clusters": 12, "trials": 3, "rho": 0.1, "baseline": 0.9, "discordance": 0.1, "difference": -0.03},
        "grid": {"difference": [-0.04, 0.0], "clusters": [12, 30]}, "margins": [0.03, 0.05],
        "alphas": [0.05, 0.025], "replications": 9000, "seed": 5}
SCEN = PairedScenario.from_rates(0.9, -0.03, 0.1, clusters=12, cluster_size=FixedSize(trials=3), rho=0.1)


def test_bitwise_identical_for_any_chunking_and_jobs():
    spec = parse_spec(SPEC)
    base = run_study(spec, chunk_size=9000)
    assert data_equal(base, run_study(spec, chunk_size=1234))
    assert data_equal(base, run_study(spec, chunk_size=2000, n_jobs=2))
    assert int(base.n_reps.min()) == int(base.n_reps.max()) == 9000


def test_split_ranges_and_batches_merge_to_the_same_tallies():
    methods = ["clustered_normal", "paired_wald", "agresti_min"]
    whole = evaluate_scenario(SCEN, methods, [0.03], [0.025], 10_000, seed=3)
    parts = evaluate_scenario(SCEN, methods, [0.03], [0.025], 3_333, seed=3).merge(
        evaluate_scenario(SCEN, methods, [0.03], [0.025], 6_667, seed=3, start=3_333, batch=777))
    np.testing.assert_array_equal(whole.tally, parts.tally)
    with pytest.raises(ValueError, match="overlap"):
        whole.merge(parts)
    seen = []
    chunked = evaluate_scenario(SCEN, methods, [0.03], [0.025], 10_000, seed=3, chunks=7, on_chunk=seen.append)
    np.testing.assert_array_equal(whole.tally, chunked.tally)
    assert seen == [1429] * 6 + [1426] and chunked.ranges == [(0, 10_000)]


def test_common_random_numbers_and_scenario_tables():
    """Every method sees the same tables; scenario_tables returns exactly those tables."""
    t = scenario_tables(SCEN, 7, 100, 400)
    c = evaluate_scenario(SCEN, ["clustered_normal", "paired_wald"], [0.03], [0.025], 300, seed=7, start=100)
    for i, name in enumerate(["clustered_normal", "paired_wald"]):
        r = registry.get(name).batch(t, 0.03, 0.025)
        assert c.tally[i, 0, 0, tally.F["n_pass"]] == np.count_nonzero(r.status == 1)
    # the trial sampler is the project's reference generator stream
    np.testing.assert_array_equal(scenario_tables(SCEN, 7, 0, 50, "trial"), simulate_tables(SCEN, 7, 50))
    # the composition sampler draws replication r independently of the range asked for
    np.testing.assert_array_equal(scenario_tables(SCEN, 7, 0, 400)[100:], t)


def test_composition_sampler_distribution_matches_its_law():
    """Cell frequencies of composition-sampled tables vs the exact expectation (4 MC SE)."""
    sc = PairedScenario(cells=(0.5, 0.2, 0.2, 0.1), clusters=7, cluster_size=FixedSize(trials=4), rho=0.3)
    src = table_source(sc, 1)
    assert src.name == "composition"
    n = 20_000
    t = src.tables(0, n).astype(np.int64)
    per_rep = t[:, 0, :]  # first cluster: Dirichlet-multinomial(4, alpha p)
    alpha = (1 - sc.rho) / sc.rho
    p = np.asarray(sc.cells)
    mean = 4 * p
    var = 4 * p * (1 - p) * (4 + alpha) / (1 + alpha)  # Mosimann (1962) eq. 2.4
    se = np.sqrt(var / n)
    assert np.all(np.abs(per_rep.mean(axis=0) - mean) < 4 * se)
    # clusters are independent: correlation of cluster 0 and cluster 1 counts ~ 0
    r = np.corrcoef(t[:, 0, 0], t[:, 1, 0])[0, 1]
    assert abs(r) < 4 / math.sqrt(n)


def test_measures_against_independent_computation():
    tables = scenario_tables(SCEN, 9, 0, 5000)
    m = registry.get("paired_wald")
    r = m.batch(tables, 0.03, 0.025)
    theta = SCEN.true_difference_trial()
    c = evaluate_scenario(SCEN, ["paired_wald"], [0.03], [0.025], 5000, seed=9)
    got = {k: v[0, 0, 0] for k, v in c.measures().items()}
    n = 5000
    npass = np.count_nonzero(r.status == 1)
    assert got["pass_rate"] == npass / n
    assert got["pass_rate_mcse"] == pytest.approx(math.sqrt(npass / n * (1 - npass / n) / n), rel=1e-12)
    lo, hi = proportion_confint(npass, n, alpha=0.05, method="beta")
    assert got["pass_rate_cp_lower"] == pytest.approx(lo, rel=1e-9)
    assert got["pass_rate_cp_upper"] == pytest.approx(hi, rel=1e-9)
    cover = (r.lower <= theta) & (theta <= r.upper)
    assert got["coverage"] == cover.mean()
    assert got["bias"] == pytest.approx(r.estimate.mean() - theta, abs=1e-9)
    assert got["empirical_se"] == pytest.approx(r.estimate.std(ddof=1), rel=1e-8)
    assert got["bias_mcse"] == pytest.approx(r.estimate.std(ddof=1) / math.sqrt(n), rel=1e-8)
    assert got["empirical_se_mcse"] == pytest.approx(r.estimate.std(ddof=1) / math.sqrt(2 * (n - 1)), rel=1e-8)
    w = r.upper - r.lower
    assert got["mean_width"] == pytest.approx(w.mean(), abs=1e-9)
    assert got["mean_width_mcse"] == pytest.approx(w.std(ddof=1) / math.sqrt(n), rel=1e-7)
    assert got["lower_miss_rate"] == np.mean(r.lower > theta)
    assert got["is_null"] == 1 and got["false_pass_rate"] == got["pass_rate"] and math.isnan(got["power"])


def test_clopper_pearson_edges():
    lo, hi = clopper_pearson(np.array([0, 10, 0]), np.array([10, 10, 0]))
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert hi[0] == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-9)  # closed form at x = 0
    assert math.isnan(lo[2]) and math.isnan(hi[2])


def test_fixed_point_sums_are_exact_and_carry():
    out = np.zeros(tally.NF, np.int64)
    vals = np.array([0.1, -0.7, 0.3333, 2.5, -1e-9] * 1000)
    n = vals.size
    tally.tally_batch(np.ones(n, np.int8), vals, vals - 1, vals + 1, 0.0, out)
    s = int(tally.fixed_sum(out, "est"))
    assert s == sum(math.floor(v * 2 ** 32 + 0.5) for v in vals)
    a = np.zeros(tally.NF, np.int64)
    b = np.zeros(tally.NF, np.int64)
    tally.tally_batch(np.ones(n // 2, np.int8), vals[: n // 2], vals[: n // 2] - 1, vals[: n // 2] + 1, 0.0, a)
    tally.tally_batch(np.ones(n - n // 2, np.int8), vals[n // 2:], vals[n // 2:] - 1, vals[n // 2:] + 1, 0.0, b)
    np.testing.assert_array_equal(tally.add(a, b), out)
    assert 0 <= out[tally.F["est_lo"]] < 2 ** 32


def test_netcdf_round_trip_and_metadata(tmp_path):
    spec = parse_spec({**SPEC, "replications": 2000, "exact": True})
    ds = run_study(spec)
    p = save_dataset(ds, tmp_path / "sub" / "x.nc")
    back = open_dataset(p)
    assert back.identical(ds)
    assert ds.attrs["spec_hash"] == spec.hash
    assert json.loads(ds.attrs["spec_json"])["seed"] == 5
    ids = json.loads(ds.attrs["method_identities"])
    assert [i["label"] for i in ids] == ["clustered_normal", "paired_wald", "cluster_t[min_clusters=5]"]
    assert all(is_hash(i["source_sha256"]) for i in ids)
    assert "numpy" in json.loads(ds.attrs["package_versions"])
    assert ds.attrs["code_revision"]
    assert ds.pass_rate.dims == ("difference", "clusters", "method", "margin", "alpha")
    assert set(np.unique(ds.exact_engine.values)) <= {"pooled", "moments", ""}
    rows = study_summary_rows(back, 0.05, 0.05)
    assert len(rows) == 2 * 2 * 3 and rows[0]["margin"] == 0.05


def test_target_mcse_sets_replications():
    spec = parse_spec({**{k: v for k, v in SPEC.items() if k != "replications"}, "target_mcse": 0.01})
    assert spec.n_replications == 2500  # 0.5 * 0.5 / 0.01^2
    spec = parse_spec({**{k: v for k, v in SPEC.items() if k != "replications"}, "target_mcse": 0.002,
                       "planning_rate": 0.05})
    assert spec.n_replications == math.ceil(0.05 * 0.95 / 0.002 ** 2)


def test_resume_after_killed_run(tmp_path):
    """A subprocess is SIGKILLed after its third finished chunk; the resumed run reuses
    those chunks, computes only the rest, and equals an uninterrupted run."""
    spec_d = {**SPEC, "replications": 8000}
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec_d))
    work = tmp_path / "work"
    code = textwrap.dedent(f"""
        import os, signal
        from studies.engine.spec import load_spec
        from studies.engine.runner import run_study
        def hook(done, total):
            if done == 3:
                os.kill(os.getpid(), signal.SIGKILL)
        run_study(load_spec({str(spec_file)!r}), chunk_size=2000, work_dir={str(work)!r}, on_task_done=hook)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    run_dirs = list(work.iterdir())
    assert len(run_dirs) == 1
    kept = sorted(p.name for p in run_dirs[0].glob("t*.npz"))
    assert len(kept) == 3 and not list(run_dirs[0].glob(".*tmp"))
    seen = []
    spec = parse_spec(spec_d)
    resumed = run_study(spec, chunk_size=2000, work_dir=work, on_task_done=lambda d, t: seen.append((d, t)))
    total = 4 * 4  # 4 scenarios x 4 chunks
    assert resumed.attrs["run_tasks_resumed"] == 3
    assert seen == [(d, total) for d in range(4, total + 1)]  # only the 13 missing chunks ran
    assert not run_dirs[0].exists()  # cleaned up after success
    assert data_equal(resumed, run_study(spec, chunk_size=2000))


def test_progress_enabled_runs(capsys):
    spec = parse_spec({**SPEC, "replications": 500})
    ds = run_study(spec, progress=True)
    assert int(ds.n_reps.min()) == 500


def test_bad_inputs_are_clear_errors():
    with pytest.raises(KeyError, match="unknown method"):
        evaluate_scenario(SCEN, ["no_such_method"], replications=10)
    with pytest.raises(ValueError, match="replications"):
        evaluate_scenario(SCEN, ["paired_wald"], replications=-1)
    with pytest.raises(ValueError, match="composition sampler cannot"):
        from simlab.scenario import PoissonSize
        table_source(PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=3,
                                    cluster_size=PoissonSize(mean_trials=2)), 1, "composition")
    c = evaluate_scenario(SCEN, ["paired_wald"], replications=10)
    with pytest.raises(ValueError):
        ScenarioCounts.concat([c, c])
