"""Probe 5's last evidence findings: a bad input of ``evidence run`` is named by the path the
user gave (not its path from the packet's folder, ``out/sub/../../data/t.jsonl``); a ledger
whose append-only triggers were dropped or replaced outside simlab is reported by
``verify-ledger`` and refused by ``append`` (which would otherwise re-create them and hide it)."""
from __future__ import annotations

import json
import sqlite3

import pytest

from evidence.ledger import append, verify
from evidence.manifest import template
from simlab.cli import main

from tests.evidence.test_trials_ingest import good_rows, jsonl


def test_a_bad_trial_file_is_named_as_given_not_from_the_packets_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "m.json").write_text(json.dumps(template()))
    rows = good_rows(2)
    rows[1]["arm"] = "Candidate"
    (tmp_path / "data" / "t.jsonl").write_bytes(jsonl(rows))
    rc = main(["evidence", "run", "--trials", "data/t.jsonl", "--manifest", "m.json", "--out", "out/sub/p.json",
               "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and error["field"] == "--trials"
    assert error["message"].startswith("data/t.jsonl: "), error["message"]
    assert ".." not in error["message"]


def _ledger(tmp_path):
    path = tmp_path / "ledger.sqlite"
    for i in range(3):
        append(path, {"kind": "simlab.evidence.receipt", "experiment_id": f"exp-{i}", "action": "hold"})
    return path


def _sql(path, statement):
    con = sqlite3.connect(path)
    try:
        con.executescript(statement)
    finally:
        con.close()


def test_an_intact_ledger_has_no_trigger_problem(tmp_path):
    assert verify(_ledger(tmp_path))["problems"] == []


@pytest.mark.parametrize("statement, problem", [
    ("DROP TRIGGER entries_no_delete;", "append-only trigger entries_no_delete was dropped"),
    ("DROP TRIGGER entries_no_update; CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT 1; END;",
     "append-only trigger entries_no_update was replaced"),
    ("CREATE TRIGGER rewrite AFTER INSERT ON entries BEGIN SELECT 1; END;", "trigger rewrite is not one simlab creates"),
])
def test_a_changed_trigger_is_reported_and_the_ledger_refuses_appends(tmp_path, capsys, statement, problem):
    path = _ledger(tmp_path)
    _sql(path, statement)
    result = verify(path)
    assert not result["ok"] and result["entries"] == 3
    assert [p for p in result["problems"] if p.startswith(problem)], result["problems"]
    assert main(["evidence", "verify-ledger", str(path), "--json"]) == 1
    assert any(p.startswith(problem) for p in json.loads(capsys.readouterr().out)["problems"])
    with pytest.raises(ValueError, match="refusing to append"):
        append(path, {"kind": "simlab.evidence.receipt", "experiment_id": "late", "action": "hold"})
    assert verify(path)["entries"] == 3   # nothing was written, and the triggers were not re-created
    assert any(p.startswith(problem) for p in verify(path)["problems"])


def test_a_deletion_made_once_the_trigger_was_dropped_is_still_a_broken_chain(tmp_path):
    path = _ledger(tmp_path)
    _sql(path, "DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE seq = 2;")
    problems = verify(path)["problems"]
    assert any("dropped" in p for p in problems) and any("entry 3" in p for p in problems)
