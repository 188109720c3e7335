"""CLI commands of the studies layer: study run / show / plot, false-pass, demo,
bench study.  Each prints exactly one JSON object with --json."""
from __future__ import annotations

import json
import math

import pytest

from methods import registry
from simlab.cli import main
from tests.reference_values import SEED_FALSE_PASS, SEED_FALSE_PASS_5DP

SPEC = """
name = "cli"
methods = ["paired_wald", {name = "clustered_normal", options = {min_clusters = 2}}]
margins = [0.03]
alpha = 0.025
replications = 3000
seed = 2

[scenario]
clusters = 10
trials = 2
baseline = 0.9
discordance = 0.1
difference = -0.03

[grid]
difference = [-0.05, 0.0]
"""


def run_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    return rc, json.loads(out[0])


def test_study_run_show_plot(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    nc = tmp_path / "out.nc"
    rc, p = run_json(capsys, ["study", "run", str(spec), "--out", str(nc), "--work-dir", str(tmp_path / "w"),
                              "--exact", "--json"])
    assert rc == 0 and nc.exists() and p["dataset"] == str(nc)
    assert len(p["rows"]) == 4 and p["dims"] == ["difference"]
    assert all(r["n_reps"] == 3000 for r in p["rows"])
    assert all(r["exact_engine"] in ("pooled", "moments") for r in p["rows"])
    rc, s = run_json(capsys, ["study", "show", str(nc), "--json"])
    assert rc == 0 and s["rows"] == p["rows"] and s["spec_hash"] == p["spec_hash"]
    png = tmp_path / "c.png"
    rc, q = run_json(capsys, ["study", "plot", str(nc), "--out", str(png), "--json"])
    assert rc == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["study", "show", str(nc)]) == 0  # the rich table renders
    assert "paired_wald" in capsys.readouterr().out


def test_false_pass_exact_and_simulated(capsys):
    rc, p = run_json(capsys, ["false-pass", "--method", "clustered_normal", "--clusters", "30", "--json"])
    assert rc == 0 and p["exact"] is True and p["mc_se"] == 0.0
    assert p["value"] == pytest.approx(SEED_FALSE_PASS, rel=1e-12) and p["is_null"] is True
    rc, s = run_json(capsys, ["false-pass", "--method", "clustered_normal", "--clusters", "30", "--simulate",
                              "--reps", "40000", "--json"])
    assert rc == 0 and s["exact"] is False and s["mc_se"] > 0
    assert abs(s["value"] - p["value"]) < 4 * math.sqrt(p["value"] * (1 - p["value"]) / 40000)
    assert s["cp_lower"] < s["value"] < s["cp_upper"]


def test_false_pass_falls_back_to_simulation_and_reports_errors(capsys):
    rc, p = run_json(capsys, ["false-pass", "--method", "cluster_bootstrap", "--clusters", "30", "--reps", "1500",
                              "--json"])
    assert rc == 0 and p["exact"] is False and "order" in p["why_not_exact"]
    rc, e = run_json(capsys, ["false-pass", "--method", "nope", "--json"])
    assert rc == 2 and "unknown method" in e["error"]["message"]
    rc, e = run_json(capsys, ["false-pass", "--method", "paired_wald", "--cells", "0.9,0.1", "--json"])
    assert rc != 0


def _least_k(margin: float, alpha: float) -> int:
    """The distribution-free limit by counting, independent of the closed form."""
    k = 1
    while (1.0 - margin) ** k > alpha:
        k += 1
    return k


def test_demo_reproduces_the_seed_and_writes_outputs(tmp_path, capsys):
    from studies.bench.power import distribution_free_floor
    from studies.demo import DEMO_METHODS
    from studies.demo_designs import certified_calibration

    rc, p = run_json(capsys, ["demo", "--out", str(tmp_path / "demo"), "--reps", "2000", "--json"])
    assert rc == 0
    h = p["headline"]
    assert h["exact"] == pytest.approx(SEED_FALSE_PASS, rel=1e-12) and h["formula"] == pytest.approx(SEED_FALSE_PASS_5DP, abs=5e-6)
    assert round(h["exact"], 5) == 0.29386
    assert abs(h["simulated"] - h["exact"]) < 4 * h["mc_se"]
    u = p["unequal"]
    assert u["true_difference_trial"] == pytest.approx(-0.8) and u["true_difference_cluster"] == pytest.approx(0.0)
    targets = {r["method"]: r["target"] for r in u["rows"]}
    assert targets["clustered_normal"] == pytest.approx(0.0) and targets["paired_wald"] == pytest.approx(-0.8)
    assert p["full"] is False and p["methods"] == list(DEMO_METHODS)
    rows = {r["method"]: r for r in p["comparison"]["rows"]}
    assert list(rows) == list(DEMO_METHODS)
    assert rows["clustered_normal"]["seed_false_pass"] == {"value": pytest.approx(SEED_FALSE_PASS), "mc_se": 0.0,
                                                           "exact": True}
    rec = p["recommend"]
    assert rec["design"] == {"clusters": 30, "trials_per_cluster": 3, "margin": 0.03, "rho_max": 0.1, "alpha": 0.025}
    assert len(rec["ranked"]) + len(rec["not_covered"]) >= len(DEMO_METHODS)

    # what a gate can do at 30 x 1 and 100 x 3: limit, theorem, calibrated / model-based, uncertified
    d = p["designs"]
    assert d["distribution_free_limit"]["clusters"] == distribution_free_floor(0.03, 0.025) == _least_k(0.03, 0.025)
    assert [(g["clusters"], g["trials"]) for g in d["designs"]] == [(30, 1), (100, 3)]
    for g in d["designs"]:
        kinds = [r["kind"] for r in g["rows"]]
        assert kinds[:2] == ["theorem", "theorem"] and kinds[-1] == "uncertified"
        assert [r["method"] for r in g["rows"]][-1] == "cluster_t"
        assert sum(bool(r.get("best_by_theorem")) for r in g["rows"]) == 1
        best = next(r for r in g["rows"] if r.get("best_by_theorem"))
        assert best["power"]["value"] == max(r["power"]["value"] for r in g["rows"] if r["kind"] == "theorem")
        for base, r in zip(("clustered_score", "dm_score", "dm_likelihood_ratio"), g["rows"][2:5]):
            cal = certified_calibration(base, g["clusters"], g["trials"])
            if cal["certified"]:  # the level is the certificate's, never a constant of the demo
                assert r["kind"] == "calibrated" and r["method"] == cal["method"]
                assert r["false_pass_certified"]["worst_upper"] == cal["worst_upper"]
            else:
                assert r["kind"] == "uncalibrated" and r["method"] == base and r["false_pass_certified"] is None
                assert "not certified here" in r["guarantee"]
        # EMW's test is shown where it is certified (100 x 3: its mixture ships) and where it is cheap to build
        lr = g["rows"][4]
        assert lr["not_run"] is None and lr["power"] is not None
        assert lr["kind"] == ("calibrated" if g["clusters"] == 100 else "uncalibrated")
        for r in g["rows"]:
            for rate in (r["power"], r["false_pass_worst_corner"]):
                v, n = rate["value"], rate["replications"]
                assert n == 2000 and 0.0 <= v <= 1.0
                assert rate["mc_se"] == pytest.approx(math.sqrt(v * (1 - v) / n), rel=1e-12)
                if rate["exact"] is not None:  # the simulator against the exact answer
                    assert abs(v - rate["exact"]) <= 4 * math.sqrt(rate["exact"] * (1 - rate["exact"]) / n) + 1e-12
    t30 = d["designs"][0]["rows"][-1]["false_pass_worst_corner"]
    # 30 one-trial customers, losses w.p. 0.03, no wins: cluster_t passes exactly the all-ties sample
    assert t30["exact"] == pytest.approx(0.97 ** 30, rel=1e-9)
    curve = p["power_curve"]
    assert curve["clusters"] == [30, 60, 100, 150, 200, 300] and curve["trials"] == 3
    labels = {s["label"]: s for s in curve["series"]}
    assert {"betting_ci (theorem)", "cluster_t (uncertified)", "clustered_score nominal (uncalibrated)",
            "dm_score nominal (uncalibrated)"} <= set(labels)
    assert "dm_likelihood_ratio@alpha=L (calibrated, certificate)" in labels   # at 100, from the shipped mixture
    # EMW's test at the nominal level: run at a K only where its mixture is stored (the session's
    # store may hold the bench's 30 x 3 one), else named as not run with its estimate; never both
    lr_nominal = labels.get("dm_likelihood_ratio nominal (uncalibrated)", {"clusters": []})["clusters"]
    skipped = [n["clusters"] for n in curve["not_run"] if n["series"] == "dm_likelihood_ratio nominal (uncalibrated)"]
    assert sorted(lr_nominal + skipped) == curve["clusters"] and 100 in skipped
    assert all("takes an estimated" in n["why"] for n in curve["not_run"])
    assert {n["series"] for n in curve["not_run"]} == {"dm_likelihood_ratio nominal (uncalibrated)"}
    for s in curve["series"]:
        assert len(s["power"]) == len(s["clusters"]) == len(s["mc_se"])
        assert s["kind"] != "calibrated" or all(
            certified_calibration(s["methods"][0].split("@")[0], k, 3)["certified"] for k in s["clusters"])
    for f in ("demo.nc", "demo.png", "power_k.png"):
        assert (tmp_path / "demo" / f).exists()


def test_demo_method_sets():
    """The default demo compiles only the methods the story needs; --full compares every one."""
    from studies.demo import DEMO_METHODS, demo_methods, unequal_scenario

    assert demo_methods() == list(DEMO_METHODS) and set(DEMO_METHODS) < set(registry.names("fixed"))
    assert demo_methods(full=True) == list(registry.names("fixed"))
    # the estimands --full shows on the unequal-clusters example
    su = unequal_scenario()
    assert registry.get("binomial_loss").true_value(su) == pytest.approx(-0.9)  # minus the loss rate 135/150
    assert registry.get("bayes_hierarchical").true_value(su) == pytest.approx(0.0)


LIMIT = '''
import numpy as np
def _run(seed, R, K, M, pb, pc, margin, z):
    rng = np.random.default_rng(seed)
    d = (rng.random((R, K, M)) < pc).astype(float) - (rng.random((R, K, M)) < pb)
    cm = d.mean(axis=2)
    lower = cm.mean(axis=1) - z * cm.std(axis=1, ddof=1) / np.sqrt(K)
    return int((lower >= -margin).sum())
cpu_ser = _run
cpu_par = _run
'''


def test_bench_study_smoke(tmp_path, capsys):
    k = tmp_path / "limit.py"
    k.write_text(LIMIT)
    rc, p = run_json(capsys, ["bench", "study", "--reps", "60000", "--numpy-reps", "20000", "--limit-kernel", str(k),
                              "--n-jobs", "1", "--repeat", "1", "--json"])
    assert rc == 0
    names = [r["name"] for r in p["rows"]]
    assert names == ["numpy_vectorised", "study_runner_1job", "study_runner_1job_tables", "fused_kernel_1thread"]
    assert p["path"] == "moments" and p["same_results_both_paths"] is True
    e = p["exact_pass_rate"]
    for r in p["rows"]:
        assert abs(r["pass_rate"] - e) < 4 * math.sqrt(e * (1 - e) / r["replications"])
    assert set(p["ratios"]) == {"runner_vs_numpy_per_core", "table_path_vs_numpy_per_core", "runner_vs_fused_per_core"}
    rc, err = run_json(capsys, ["bench", "study", "--limit-kernel", str(tmp_path / "missing.py"), "--json",
                                "--reps", "1000", "--numpy-reps", "1000", "--n-jobs", "1"])
    assert rc == 2 and "no such file" in err["error"]["message"]
    # --reps took any value and ran for hours: piloted and refused before any row is timed (issue 29.4)
    rc, err = run_json(capsys, ["bench", "study", "--reps", "10000000000", "--n-jobs", "1", "--max-seconds", "5",
                                "--json"])
    assert rc == 2 and err["error"]["field"] == "--max-seconds"
    assert err["error"]["message"].startswith("bench study (10,000,000,000 replications a row, best of 3) would take")


def test_study_run_keeps_another_studys_dataset_unless_forced(tmp_path, capsys):
    # --out onto another study's dataset replaced it without a word (a typo cost a finished run)
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text(SPEC.replace("replications = 3000", "replications = 200"))
    second.write_text(SPEC.replace("replications = 3000", "replications = 300"))
    nc = tmp_path / "out.nc"
    base = ["--out", str(nc), "--no-checkpoint", "--json"]
    rc, p = run_json(capsys, ["study", "run", str(first), *base])
    assert rc == 0
    before = nc.read_bytes()
    rc, p = run_json(capsys, ["study", "run", str(second), *base])
    assert rc == 2 and p["error"]["field"] == "--out" and "holds another study's results" in p["error"]["message"]
    assert nc.read_bytes() == before
    rc, p = run_json(capsys, ["study", "run", str(first), *base])  # the same spec again: its own dataset, replaced
    assert rc == 0 and p["replications"] == 200
    rc, p = run_json(capsys, ["study", "run", str(second), *base, "--force"])
    assert rc == 0 and p["replications"] == 300
