"""`simlab qualify`, `simlab qualify show` and `simlab size` through the one front door."""
from __future__ import annotations

import json

from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy
from simlab.cli import main
from simlab.scenario import FixedSize


def _policy_file(tmp_path):
    dom = QualificationDomain(clusters=IntAxis(lo=10, hi=30, grid=(10, 30)), cluster_sizes=(FixedSize(trials=2),),
                              rho=Axis(lo=0.0, hi=0.1, grid=(0.0, 0.1)), margin=Axis(lo=0.05, hi=0.05, grid=(0.05,)),
                              baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)),
                              discordance=Axis(lo=0.05, hi=0.15, grid=(0.05, 0.15)))
    pol = QualificationPolicy(domain=dom, min_replications=500, max_replications=2000)
    f = tmp_path / "policy.json"
    f.write_text(json.dumps(pol.canonical()))
    return f, pol


def test_qualify_then_show(tmp_path, capsys):
    f, pol = _policy_file(tmp_path)
    out = tmp_path / "out"
    assert main(["qualify", "--method", "tango_score,clustered_normal", "--policy", str(f), "--out", str(out),
                 "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["policy_sha256"] == pol.sha256 and p["grid_scenarios"] == 4 * 3
    assert p["scenarios_per_s"] > 0 and p["replications_per_s"] > 0
    rec = {r["method"]["name"]: r for r in p["records"]}
    assert set(rec) == {"tango_score", "clustered_normal"}
    path = rec["tango_score"]["record"]
    png = tmp_path / "heat.png"
    assert main(["qualify", "show", path, "--png", str(png), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["record_sha256"] == rec["tango_score"]["record_sha256"] and s["stale"] is None
    assert len(s["cells"]) == 2  # rows (size, margin, rho), a column per K
    assert all({"K=10", "K=30"} <= set(row) for row in s["cells"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["qualify", "show", path]) == 0  # the human table renders
    text = capsys.readouterr().out
    assert "worst case" in text and "tango_score" in text


def test_qualify_errors_are_clean(tmp_path, capsys):
    assert main(["qualify", "--json"]) == 2
    assert "give --method" in json.loads(capsys.readouterr().out)["error"]["message"]
    assert main(["qualify", "--method", "no_such_method", "--json"]) == 2
    assert "unknown method" in json.loads(capsys.readouterr().out)["error"]["message"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"alpha": 0.7}))
    assert main(["qualify", "--method", "paired_wald", "--policy", str(bad), "--json"]) == 2
    assert "alpha" in json.loads(capsys.readouterr().out)["error"]["message"]
    rec = tmp_path / "r.json"
    rec.write_text("{}")
    assert main(["qualify", "show", str(rec), "--json"]) == 2
    assert "record schema" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_size_command(tmp_path, capsys):
    out = tmp_path / "sz"
    assert main(["size", "--method", "tango_score", "--margin", "0.1", "--true-difference", "0", "--discordance", "0.2",
                 "--power", "0.8", "--max-reps", "4000", "--out", str(out), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["analytic"]["variance"] == "score" and p["analytic"]["clusters"] == 171
    assert p["clusters"] >= 2 and p["power_at_k"]["ci_lower"] >= 0.8  # the power's lower bound meets the target
    assert p["stretch"]["from"] == p["clusters"] and p["stretch"]["min_power_bound"] >= 0.8
    assert p["false_pass"]["verdict"] == "qualified" and p["false_pass"]["n_scenarios"] >= 1
    assert {"curve", "png"} <= set(p["files"])
    assert (out / p["files"]["png"].split("/")[-1]).exists()
    assert len(p["curve"]["clusters"]) == len(p["curve"]["power"])
    assert main(["size", "--method", "tango_score", "--margin", "0.1", "--true-difference", "-0.2",
                 "--json", "--out", ""]) == 2
    assert "must exceed -margin" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_bench_qualify_runs_both_engines_on_a_policy_file(tmp_path, capsys):
    f, pol = _policy_file(tmp_path)
    assert main(["bench", "qualify", "--policy", str(f), "--method", "tango_score,clustered_normal", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["policy_sha256"] != pol.sha256  # cut to its first round, no refinement
    assert [r["path"] for r in p["rows"]] == ["per-scenario", "batched"] and p["identical"]
    assert p["rows"][0]["scenarios"] == 4 * 3 and p["rows"][0]["replications"] == 12 * 500
    assert p["ratio"] > 0 and p["methods"] == ["tango_score", "clustered_normal"]
    assert main(["bench", "qualify", "--policy", str(f), "--method", "clustered_normal", "--rounds", "0"]) == 0
    out = capsys.readouterr().out
    assert "per-scenario" in out and "batched" in out and "counts identical: yes" in out
