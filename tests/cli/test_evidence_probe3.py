"""Probe round 3, the evidence path's command line: ``--ledger`` is checked before any work and
another program's file is never altered (nor a packet left behind when the append fails);
``compare --markdown`` / ``--junit`` never overwrite a file simlab did not write, an input or
the packet; ``evidence resolve --current`` refuses malformed hashes and unknown components
(exit 2, not a blocking exit 1); out-of-range times name their flag, file, line and field;
a damaged pinned record and a damaged trusted key are named."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from simlab.cli import main

from evidence import ledger
from evidence.population import identity
from evidence.synthetic import demo_manifest

NOW = "2026-12-01T12:00:00Z"
CLUSTERS = 300


def _write_inputs(folder: Path, **manifest) -> None:
    """Manifest, population, one trial file per arm and one of both arms (a lab_pass)."""
    import datetime as dt

    cases = {f"c{k}": f"u{k}" for k in range(CLUSTERS)}
    m = demo_manifest(repetitions=1, minimum_clusters=30, created=dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc),
                      population_hash=identity(cases), **manifest)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "m.json").write_text(json.dumps(m.canonical()))
    (folder / "cases.jsonl").write_text("".join(json.dumps({"case_id": c, "cluster_id": u}) + "\n"
                                                for c, u in cases.items()))
    both = ""
    for arm in ("baseline", "candidate"):
        rows = [{"case_id": c, "trial_index": 0, "cluster_id": u, "arm": arm, "passed": True, "failed_checks": [],
                 "latency_ms": 90.0 + k + (arm == "candidate"), "cost": None, "cost_provenance": "absent",
                 "manifest_sha256": m.sha256} for k, (c, u) in enumerate(cases.items())]
        (folder / f"{arm}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        both += (folder / f"{arm}.jsonl").read_text()
    (folder / "both.jsonl").write_text(both)


def _compare(folder: Path, *extra) -> list[str]:
    return ["compare", str(folder / "baseline.jsonl"), str(folder / "candidate.jsonl"), "--manifest",
            str(folder / "m.json"), "--population", str(folder / "cases.jsonl"), "--now", NOW, *extra]


def _run(folder: Path, *extra) -> list[str]:
    now = [] if "--now" in extra else ["--now", NOW]
    return ["evidence", "run", "--trials", str(folder / "both.jsonl"), "--manifest", str(folder / "m.json"), *now,
            *extra]


@pytest.fixture
def inputs(tmp_path):
    _write_inputs(tmp_path)
    return tmp_path


def _error(capsys) -> dict:
    """The one JSON object a refused ``--json`` command prints."""
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return json.loads(out)["error"]


def _other_programs_db(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users (name) VALUES ('ada')")
    con.commit()
    con.close()
    return path.read_bytes()


# ---------------------------------------------------------------- F-ledger


@pytest.mark.parametrize("kind", ["text", "other_db", "directory", "truncated"])
def test_run_refuses_a_ledger_that_is_not_one_before_any_work(inputs, capsys, kind):
    target = inputs / "ledger.sqlite"
    if kind == "text":
        target.write_text("my notes\n")
    elif kind == "other_db":
        _other_programs_db(target)
    elif kind == "directory":
        target.mkdir()
    else:  # a real ledger cut in half
        for i in range(40):
            ledger.append(target, {"n": i, "pad": "x" * 2000})
        data = target.read_bytes()
        target.write_bytes(data[: len(data) // 2])
    before = target.read_bytes() if target.is_file() else None
    packet = inputs / "p.json"
    rc = main(_run(inputs, "--out", str(packet), "--ledger", str(target), "--json"))
    err = _error(capsys)
    assert rc == 2 and err["field"] == "--ledger" and "not a ledger" in err["message"], err
    assert str(target) in err["message"]
    assert not packet.exists()  # checked before the run: no packet
    if before is not None:
        assert target.read_bytes() == before  # never altered
    assert not Path(f"{target}-wal").exists() and not Path(f"{target}-shm").exists()


def test_compare_refuses_another_programs_database_and_writes_nothing(inputs, capsys):
    db = inputs / "app.sqlite"
    before = _other_programs_db(db)
    md = inputs / "s.md"
    rc = main(_compare(inputs, "--out", str(inputs / "p.json"), "--ledger", str(db), "--markdown", str(md)))
    err = capsys.readouterr().err
    assert rc == 2 and "error: --ledger" in err and "entries table" in err and "never altered" in err
    assert db.read_bytes() == before and not (inputs / "p.json").exists() and not md.exists()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["users"]
    con.close()


def test_a_ledger_append_that_fails_keeps_no_packet_nor_summaries(inputs, capsys, monkeypatch):
    def fail(path, receipt, **kw):
        raise ValueError(f"{path}: cannot append to the ledger (database is locked)")

    monkeypatch.setattr(ledger, "append", fail)
    packet, md, xml = inputs / "p.json", inputs / "s.md", inputs / "j.xml"
    rc = main(_compare(inputs, "--out", str(packet), "--ledger", str(inputs / "l.sqlite"), "--markdown", str(md),
                       "--junit", str(xml), "--json"))
    err = _error(capsys)
    assert rc == 2 and err["field"] == "--ledger" and "database is locked" in err["message"]
    assert "was not kept" in err["message"]
    assert not packet.exists() and not md.exists() and not xml.exists()

    rc = main(_run(inputs, "--out", str(packet), "--ledger", str(inputs / "l.sqlite")))
    assert rc == 2 and not packet.exists() and "--ledger" in capsys.readouterr().err


def test_a_ledger_in_a_missing_folder_is_created_and_verified_without_leftovers(inputs, capsys):
    target = inputs / "new" / "ledger.sqlite"
    assert main(_run(inputs, "--out", str(inputs / "p.json"), "--ledger", str(target))) == 0
    capsys.readouterr()
    # a WAL-mode ledger reads, and the check leaves no -wal / -shm files beside it
    con = sqlite3.connect(target)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    assert main(["evidence", "verify-ledger", str(target), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 1
    assert sorted(os.listdir(target.parent)) == ["ledger.sqlite"]


def test_verify_ledger_refuses_another_programs_database_unchanged(tmp_path, capsys):
    db = tmp_path / "app.sqlite"
    before = _other_programs_db(db)
    assert main(["evidence", "verify-ledger", str(db), "--json"]) == 2
    assert "not a ledger" in _error(capsys)["message"]
    assert db.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["app.sqlite"]


# ---------------------------------------------------------------- F-compare-out


@pytest.mark.parametrize("flag", ["--markdown", "--junit"])
def test_compare_never_overwrites_a_users_file(inputs, capsys, flag):
    mine = inputs / "notes.txt"
    mine.write_text("precious\n")
    rc = main(_compare(inputs, "--out", str(inputs / "p.json"), flag, str(mine), "--json"))
    err = _error(capsys)
    assert rc == 2 and err["field"] == flag and "exists and is not a" in err["message"]
    assert "never overwritten" in err["message"]
    assert mine.read_bytes() == b"precious\n" and not (inputs / "p.json").exists()


@pytest.mark.parametrize("flag,target", [("--markdown", "m.json"), ("--junit", "candidate.jsonl"),
                                         ("--markdown", "cases.jsonl"), ("--markdown", "p.json")])
def test_compare_never_writes_a_summary_over_an_input_or_the_packet(inputs, capsys, flag, target):
    path = inputs / target
    before = path.read_bytes() if path.exists() else None
    rc = main(_compare(inputs, "--out", str(inputs / "p.json"), flag, str(path), "--json"))
    err = _error(capsys)
    assert rc == 2 and err["field"] == flag and "is also given as" in err["message"], err
    assert (path.read_bytes() if path.exists() else None) == before
    assert not (inputs / "p.json").exists()


def test_compare_refuses_a_directory_and_one_path_for_both_summaries_before_work(inputs, capsys):
    (inputs / "dir.md").mkdir()
    assert main(_compare(inputs, "--out", str(inputs / "p.json"), "--markdown", str(inputs / "dir.md"))) == 2
    assert "--markdown" in capsys.readouterr().err and not (inputs / "p.json").exists()
    same = str(inputs / "s.out")
    assert main(_compare(inputs, "--out", str(inputs / "p.json"), "--markdown", same, "--junit", same)) == 2
    assert "--junit" in capsys.readouterr().err and not (inputs / "p.json").exists()


def test_compare_replaces_its_own_earlier_summaries(inputs, capsys):
    md, xml = inputs / "s.md", inputs / "j.xml"
    for name in ("p1.json", "p2.json"):  # a CI job rerun in the same workspace
        assert main(_compare(inputs, "--out", str(inputs / name), "--markdown", str(md), "--junit", str(xml))) == 0
        assert f"packet `{inputs / name}`" in md.read_text() and "simlab compare" in xml.read_text()
    capsys.readouterr()


# ---------------------------------------------------------------- F-resolve


@pytest.fixture(scope="module")
def packet(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("resolve")
    _write_inputs(folder)
    assert main(_compare(folder, "--out", str(folder / "p.json"))) == 0
    return folder / "p.json"


def _resolve(packet, *extra):
    return ["evidence", "resolve", str(packet), "--as-of", "2026-12-01T13:00:00Z", "--json", *extra]


@pytest.mark.parametrize("value,why", [("manifest=notahash", "not a sha256:<64 hex digits> hash"),
                                       ("manifest=sha256:abc", "not a sha256:<64 hex digits> hash"),
                                       ("model_id=sha256:" + "0" * 64, "the receipt binds no component 'model_id'")])
def test_resolve_refuses_a_malformed_current_hash_or_unknown_component(packet, capsys, value, why):
    assert main(_resolve(packet, "--current", value)) == 2
    err = _error(capsys)
    assert err["field"] == "--current" and why in err["message"]
    if "model_id" in value:  # says which components the receipt binds
        assert "manifest, population, comparison" in err["message"]


def test_resolve_reads_an_upper_case_hash_as_the_same_hash(packet, capsys):
    bound = json.loads(packet.read_text())["receipt"]["components"]["manifest"]
    assert main(_resolve(packet, "--current", "manifest=" + bound.upper())) == 0
    assert not any("drift" in r for r in json.loads(capsys.readouterr().out)["reasons"])


def test_resolve_current_file_is_checked_as_an_argument(packet, capsys):
    assert main(_resolve(packet, "--current-file", "manifest=/nonexistent/m.json")) == 2
    err = _error(capsys)
    assert err["field"] == "--current-file" and "no file there" in err["message"]
    assert main(_resolve(packet, "--current-file", "model_id=/nonexistent")) == 2
    assert "binds no component 'model_id'" in _error(capsys)["message"]


# ---------------------------------------------------------------- F-date


@pytest.mark.parametrize("flag,value", [("--now", "9999-12-31T23:59:59Z"), ("--now", "0001-01-01T00:00:00+01:00")])
def test_an_out_of_range_decision_time_names_the_flag_before_work(inputs, capsys, flag, value):
    out = inputs / "p.json"
    assert main(_run(inputs, "--out", str(out), flag, value, "--json")) == 2
    err = _error(capsys)
    assert err["field"] == flag and "out of range" in err["message"] and not out.exists()


def test_an_out_of_range_as_of_names_the_flag(packet, capsys):
    assert main(["evidence", "resolve", str(packet), "--as-of", "9999-12-31T23:59:59Z", "--json"]) == 2
    assert _error(capsys)["field"] == "--as-of"


@pytest.mark.parametrize("stamp", ["0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00"])
def test_an_out_of_range_trial_timestamp_names_file_line_and_field(inputs, capsys, stamp):
    rows = (inputs / "both.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["timestamp"] = stamp
    (inputs / "both.jsonl").write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n")
    assert main(_run(inputs, "--out", str(inputs / "p.json"), "--json")) == 2
    msg = _error(capsys)["message"]
    assert "both.jsonl" in msg and "field timestamp" in msg and "(line 1)" in msg and "range" in msg, msg
    assert "Value error" not in msg


# ---------------------------------------------------------------- F-table-drop (evidence items)


def test_a_damaged_pinned_record_is_named_not_reported_missing(tmp_path, capsys):
    from evidence.qualification_check import default_directory

    record = sorted(default_directory().glob("binomial_loss.*.json"))[0]
    inputs = tmp_path / "in"
    _write_inputs(inputs, qualification_sha256=json.loads(record.read_text())["record_sha256"])
    qdir = tmp_path / "q"
    qdir.mkdir()
    data = record.read_bytes()
    (qdir / record.name).write_bytes(data[: len(data) // 2])
    assert main(_run(inputs, "--out", str(inputs / "p.json"), "--qualification-dir", str(qdir), "--json")) == 0
    reasons = json.loads(capsys.readouterr().out)["receipt"]["reasons"]
    hit = next(r for r in reasons if "pinned qualification record" in r)
    assert f"cannot read {record.name}" in hit and "damaged" in hit


def test_a_garbage_key_in_a_trusted_directory_is_named(tmp_path, capsys):
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "a.pub").write_text("not a key\n")
    doc = tmp_path / "doc.json"
    doc.write_text("{}")
    assert main(["evidence", "verify", str(doc), "--trusted", str(keys), "--json"]) == 2
    err = _error(capsys)
    assert err["field"] == "--trusted" and str(keys / "a.pub") in err["message"]
