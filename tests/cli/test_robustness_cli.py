"""``simlab robustness``: one JSON object with the report's rows, the files it was asked to
write, and a refusal before any work when the estimate exceeds ``--max-seconds``."""
from __future__ import annotations

import json

from simlab.cli import main

ARGS = ["robustness", "--method", "cluster_t", "--clusters", "12", "--trials", "2", "--margin", "0.03", "--laws",
        "model", "--reps", "300", "--seed", "9"]


def test_json_report_and_files(tmp_path, capsys):
    report, dataset = tmp_path / "r.json", tmp_path / "r.nc"
    assert main([*ARGS, "--report", str(report), "--dataset", str(dataset), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["design"]["clusters"] == 12 and payload["replications"] == 300 and payload["seed"] == 9
    assert {r["family"] for r in payload["rows"]} == {"model"} and len(payload["rows"]) == 2
    assert all(r["verdict"] in ("holds", "fails", "undetermined") for r in payload["rows"])
    assert json.loads(report.read_text())["rows"] == payload["rows"] and dataset.stat().st_size > 0
    assert main([*ARGS[:-4], "--reps", "50", *ARGS[-2:]]) == 0
    assert "by family" in capsys.readouterr().out


def test_refused_over_the_time_limit(capsys):
    assert main([*ARGS[:-4], "--reps", "100000000", *ARGS[-2:], "--max-seconds", "1", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["field"] == "--max-seconds"


def test_a_users_file_is_not_overwritten(tmp_path, capsys):
    """Issue 29.4 (variant of ``study run --out``): --report / --dataset naming a file simlab did
    not write is refused before any work; simlab's own report and dataset are replaced by a
    rerun; --force replaces anything."""
    mine, report, dataset = tmp_path / "notes.json", tmp_path / "r.json", tmp_path / "r.nc"
    mine.write_text('{"kind": "my notes"}')
    for flag in ("--report", "--dataset"):
        assert main([*ARGS, flag, str(mine), "--json"]) == 2
        err = json.loads(capsys.readouterr().out)["error"]
        assert err["field"] == flag and "refusing to overwrite" in err["message"], err
        assert mine.read_text() == '{"kind": "my notes"}'
    for _ in range(2):   # written, then replaced by the rerun
        assert main([*ARGS, "--report", str(report), "--dataset", str(dataset), "--json"]) == 0
        capsys.readouterr()
    assert main([*ARGS, "--report", str(mine), "--force", "--json"]) == 0
    assert json.loads(mine.read_text())["kind"] == "robustness"
