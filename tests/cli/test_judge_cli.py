"""``simlab judge-study`` and ``simlab interval --calibration`` through ``simlab.cli.main``."""
from __future__ import annotations

import json

import numpy as np

from methods import registry
from simlab.cli import main

CAL = ["--calibration", "45,5,10,40", "--calibration", "40,10,5,45"]
TABLES = [a for r in ["5,1,1,3", "4,2,0,4", "6,0,2,2", "3,1,1,5"] for a in ("--table", r)]


def run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_interval_of_a_judge_method_matches_analyze(capsys):
    rc, out, _ = run(capsys, ["interval", "--method", "judge_corrected", *TABLES, *CAL, "--margin", "0.2", "--json"])
    assert rc == 0
    p = json.loads(out)
    table = np.array([[5, 1, 1, 3], [4, 2, 0, 4], [6, 0, 2, 2], [3, 1, 1, 5]])
    want = registry.get("judge_corrected").analyze(table, 0.2, calibration=[[45, 5, 10, 40], [40, 10, 5, 45]])
    assert p["lower"] == want.lower and p["raw_estimate"] == want.raw_estimate and p["status"] == want.status
    assert p["sensitivity"] == [0.9, 0.8] and p["calibration_sets"] == ["baseline", "candidate"]
    rc, out, _ = run(capsys, ["interval", "--method", "judge_corrected", *TABLES, *CAL, "--margin", "0.2"])
    assert rc == 0 and "judge scale" in out and "baseline Se 0.9" in out


def test_interval_refuses_missing_or_misplaced_calibration(capsys):
    rc, out, _ = run(capsys, ["interval", "--method", "judge_corrected", *TABLES, "--json"])
    assert rc == 2 and json.loads(out)["error"]["field"] == "--calibration"
    rc, out, _ = run(capsys, ["interval", "--method", "cluster_robust", *TABLES, *CAL, "--json"])
    assert rc == 2 and "reads no judge calibration" in json.loads(out)["error"]["message"]
    rc, out, _ = run(capsys, ["interval", "--method", "judge_corrected", *TABLES, "--calibration", "1,2,3",
                              "--json"])
    assert rc == 2 and json.loads(out)["error"]["field"] == "--calibration"
    rc, out, _ = run(capsys, ["interval", "--method", "judge_corrected", *TABLES, "--calibration", "20,2,3,15",
                              "--calibration", "40,10,5,45", "--json"])
    p = json.loads(out)
    assert rc == 0 and p["status"] == "inconclusive" and "min_calibration" in p["reasons"][0]


def test_judge_study_json(capsys, tmp_path):
    rc, out, err = run(capsys, ["judge-study", "--reps", "60", "--clusters", "8", "--trials", "2", "--items",
                                "50,200", "--out-dir", str(tmp_path), "--json"])
    assert rc == 0 and "scenario 8/8 done" in err
    p = json.loads(out)
    assert p["replications"] == 60 and len(p["rows"]) == 2 * 2 * 2 * 3
    assert p["dataset"].startswith(str(tmp_path)) and p["plot"].endswith(".png")
    row = p["rows"][0]
    assert {"judge", "calibration_items", "difference", "method", "pass_rate", "pass_rate_mcse",
            "inconclusive_reasons"} <= set(row)


def test_judge_study_bad_input_exits_2(capsys, tmp_path):
    rc, out, _ = run(capsys, ["judge-study", "--items", "0", "--out-dir", str(tmp_path), "--json"])
    assert rc == 2 and "calibration_items" in json.loads(out)["error"]["message"]
    rc, out, _ = run(capsys, ["judge-study", "--judge", "bad", "--json"])
    assert rc == 2 and json.loads(out)["error"]["field"] == "--judge"
