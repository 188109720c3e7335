"""``simlab sequential ...`` and ``simlab bench sequential``: one JSON object with --json,
clear errors."""
from __future__ import annotations

import json

from simlab.cli import main
from tests.reference_values import SEQUENTIAL_SEED_PROMOTION_5DP


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, out
    return rc, json.loads(lines[0])


def test_exact_seed_table(capsys):
    rc, p = run(capsys, "sequential", "exact", "--json")
    assert rc == 0
    boundary = {r["method"]: round(r["promote"], 5) for r in p["rows"] if r["true_loss"] == 0.03}
    assert boundary == SEQUENTIAL_SEED_PROMOTION_5DP
    assert {r["true_loss"] for r in p["rows"]} == {0.03, 0.01, 0.04, 0.10}


def test_exact_custom_and_errors(capsys):
    rc, p = run(capsys, "sequential", "exact", "--json", "--loss", "0.03", "--win", "0.01", "--methods",
                "msprt,repeated_fixed", "--inner", "clustered_normal", "--looks", "20:60:20")
    assert rc == 0 and [r["method"] for r in p["rows"]] == ["msprt", "repeated_fixed[clustered_normal]"]
    assert len(p["rows"][0]["promote_by_look"]) == 3
    rc, p = run(capsys, "sequential", "exact", "--json", "--loss", "0.03", "--looks", "50,40")
    assert rc == 2 and "strictly increasing" in p["error"]["message"]
    rc, p = run(capsys, "sequential", "exact", "--json", "--loss", "0.03", "--methods", "betting_cs")
    assert rc == 2 and "order of the clusters" in p["error"]["message"]


def test_simulate_reports_simulated_and_exact(capsys):
    rc, p = run(capsys, "sequential", "simulate", "--json", "--reps", "2000", "--looks", "50:200:50",
                "--clusters", "200", "--methods", "repeated_fixed,betting_cs")
    assert rc == 0
    rows = {r["method"]: r for r in p["rows"]}
    assert rows["repeated_fixed"]["exact_promote_rate"] is not None
    assert rows["betting_cs"]["exact_promote_rate"] is None
    assert len(rows["repeated_fixed"]["cumulative_promotion_rate"]) == 4


def test_analyze_one_experiment(capsys):
    args = ["sequential", "analyze", "--json", "--method", "repeated_fixed", "--looks", "50,100,150"]
    tables = ["1,0,0,0"] * 100
    rc, p = run(capsys, *args, *sum((["--table", t] for t in tables), []))
    assert rc == 0 and p["decision"] == "promote" and p["stop_at"] == 100 and p["looks_reached"] == 2
    rc, p = run(capsys, *args, "--table", "1,0,-1,0")
    assert rc == 2 and "table #1" in p["error"]["message"]


def test_run_show_plot(capsys, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "cli"\nmethods = ["likelihood_ratio", "msprt"]\nlooks = [25, 50]\n'
                    'replications = 500\nseed = 2\n[scenario]\ncells = [0.98, 0.02, 0.0, 0.0]\n')
    out = tmp_path / "s.nc"
    rc, p = run(capsys, "sequential", "run", str(spec), "--out", str(out), "--json")
    assert rc == 0 and out.exists() and len(p["rows"]) == 2
    rc, p = run(capsys, "sequential", "show", str(out), "--json")
    assert rc == 0 and p["looks"] == [25, 50]
    png = tmp_path / "s.png"
    rc, p = run(capsys, "sequential", "plot", str(out), "--out", str(png), "--json")
    assert rc == 0 and png.read_bytes()[:4] == b"\x89PNG"
    png2 = tmp_path / "via_study.png"  # `simlab study plot` dispatches on attrs.dataset_kind
    rc, p = run(capsys, "study", "plot", str(out), "--out", str(png2), "--json")
    assert rc == 0 and png2.read_bytes()[:4] == b"\x89PNG"
    rc, p = run(capsys, "study", "plot", str(out), "--out", str(png2), "--json")  # a plot simlab drew: replaced
    assert rc == 0
    precious = tmp_path / "precious.png"   # a user's file: refused unless --force, left as it was
    precious.write_text("not a plot")
    for command in ("study", "sequential"):
        rc, p = run(capsys, command, "plot", str(out), "--out", str(precious), "--json")
        assert rc == 2 and p["error"]["field"] == "--out" and "refusing to overwrite" in p["error"]["message"]
        assert precious.read_text() == "not a plot"
    rc, p = run(capsys, "sequential", "plot", str(out), "--out", str(precious), "--force", "--json")
    assert rc == 0 and precious.read_bytes()[:4] == b"\x89PNG"
    rc, p = run(capsys, "study", "plot", str(out), "--out", str(tmp_path / "plot.txt"), "--json")
    assert rc == 2 and p["error"]["field"] == "--out" and "ending in .png" in p["error"]["message"]
    other = tmp_path / "other.toml"  # another study's spec: its dataset is not replaced without --force
    other.write_text(spec.read_text().replace("replications = 500", "replications = 400"))
    rc, p = run(capsys, "sequential", "run", str(other), "--out", str(out), "--json")
    assert rc == 2 and p["error"]["field"] == "--out" and "holds another study's results" in p["error"]["message"]
    rc, p = run(capsys, "sequential", "run", str(spec), "--max-seconds", "1e-9", "--json")  # estimated, refused
    assert rc == 2 and p["error"]["field"] == "--max-seconds" and "would take an estimated" in p["error"]["message"]
    bad = tmp_path / "bad.toml"
    bad.write_text('methods = ["msprt"]\nlooks = [5, 3]\n')
    rc, p = run(capsys, "sequential", "run", str(bad), "--json")
    assert rc == 2 and "strictly increasing" in p["error"]["message"]


def test_bench_sequential_json(capsys):
    rc, p = run(capsys, "bench", "sequential", "--json", "--reps", "2000", "--repeats", "1")
    assert rc == 0
    assert set(p["exact"]["promote"]) == {"repeated_fixed", "likelihood_ratio", "bonferroni", "fixed_final"}
    assert p["exact"]["warm_seconds_best"] > 0
    methods = ["repeated_fixed[binomial_loss]", "repeated_fixed[clustered_normal]", "msprt"]
    assert [r["method"] for r in p["simulated"]["rows"]] == methods * 2
    assert {r["sampler"] for r in p["simulated"]["rows"]} == {"composition", "trial"}
    assert all(r["replication_looks_per_s"] > 0 for r in p["simulated"]["rows"])
    # --reps took any value (10^9: days): piloted and refused first (issue 29.4)
    rc, p = run(capsys, "bench", "sequential", "--json", "--reps", "1000000000", "--max-seconds", "5")
    assert rc == 2 and p["error"]["field"] == "--max-seconds"
    assert p["error"]["message"].startswith("bench sequential (1,000,000,000 replications, 5 repeats) would take")
