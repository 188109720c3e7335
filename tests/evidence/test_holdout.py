"""Issue 30, item 5: a sealed holdout registered with a maximum number of uses; the ledger
counts each run against it and refuses one beyond the maximum; replay takes no use."""
from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest

from evidence import ledger
from evidence.errors import EvidenceError
from evidence.packet import run_experiment, trial_artifacts
from evidence.replay import replay_packet
from evidence.resolve import resolve_receipt
from evidence.synthetic import demo_manifest, write_trials

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
SEALED = "sha256:" + "5" * 64


def manifest(max_uses=2, holdout_id="refund-holdout-v1"):
    return demo_manifest(holdout={"id": holdout_id, "sha256": SEALED, "max_uses": max_uses})


def run(tmp_path, m, name, book, **kw):
    trials = tmp_path / f"trials-{m.sha256[7:19]}.jsonl"  # trials are bound to their manifest
    if not trials.exists():
        write_trials(trials, m, clusters=40)
    return run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=tmp_path / f"{name}.json", now=NOW,
                          ledger=book, **kw)


def test_uses_are_counted_and_a_use_beyond_the_maximum_is_refused(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=2)
    first, second = run(tmp_path, m, "first", book), run(tmp_path, m, "second", book)
    assert first["receipt"]["holdout"]["use"] == 1 and second["receipt"]["holdout"]["use"] == 2
    assert second["receipt"]["holdout"]["max_uses"] == 2 and second["receipt"]["holdout"]["sha256"] == SEALED
    assert second["receipt"]["components"]["holdout"] == {"refund-holdout-v1": SEALED}
    with pytest.raises(EvidenceError, match=r"holdout\.max_uses: sealed holdout 'refund-holdout-v1' has been used "
                                            r"2 time\(s\), the registered maximum is 2") as exc:
        run(tmp_path, m, "third", book)
    assert exc.value.option == "holdout"
    assert not (tmp_path / "third.json").exists()  # refused before any trial was read or written
    assert [u["experiment_id"] for u in ledger.holdout_uses(book, "refund-holdout-v1")] == [m.experiment_id] * 2
    assert ledger.verify(book)["ok"] and ledger.verify(book)["entries"] == 2


def test_replay_works_after_the_maximum_and_takes_no_use(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=1)
    packet = run(tmp_path, m, "only", book)
    with pytest.raises(EvidenceError, match="holdout.max_uses"):
        run(tmp_path, m, "again", book)
    for _ in range(3):
        out = replay_packet(packet, base=tmp_path, ledger=book)
        assert out["ok"] and out["receipt"] == packet["receipt"]
    assert len(ledger.holdout_uses(book, "refund-holdout-v1")) == 1
    later = NOW + dt.timedelta(hours=1)
    same = resolve_receipt(packet["receipt"], later, {"holdout.refund-holdout-v1": SEALED})
    assert same["state"] == packet["receipt"]["state"] and not any("drift" in r for r in same["reasons"])
    swapped = resolve_receipt(packet["receipt"], later, {"holdout.refund-holdout-v1": "sha256:" + "6" * 64})
    assert swapped["action"] == "block" and "drift: holdout.refund-holdout-v1" in swapped["reasons"][0]


def test_other_holdouts_are_counted_apart(tmp_path):
    book = tmp_path / "ledger.sqlite"
    run(tmp_path, manifest(max_uses=1, holdout_id="a"), "a", book)
    packet = run(tmp_path, manifest(max_uses=1, holdout_id="b"), "b", book)
    assert packet["receipt"]["holdout"]["use"] == 1


def test_a_forged_use_number_or_a_use_missing_from_the_ledger_does_not_replay(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=3)
    packet = run(tmp_path, m, "p", book)
    forged = json.loads(json.dumps(packet))
    forged["holdout_use"]["use"] = 3  # claims another use number: the recomputed receipt differs
    out = replay_packet(forged, base=tmp_path, ledger=book)
    assert not out["ok"] and any("use 1 at entry 1, the packet states use 3" in r for r in out["reasons"])
    other = tmp_path / "other.sqlite"
    ledger.append(other, {"kind": "note"})
    out = replay_packet(packet, base=tmp_path, ledger=other)
    assert not out["ok"] and any("is not in the ledger" in r for r in out["reasons"])
    beyond = json.loads(json.dumps(packet))
    beyond["holdout_use"]["use"] = 4
    out = replay_packet(beyond, base=tmp_path)
    assert not out["ok"] and any("holdout.max_uses: recorded use 4" in r for r in out["reasons"])


def test_a_holdout_run_needs_the_ledger_and_a_broken_chain_refuses(tmp_path):
    m = manifest()
    with pytest.raises(EvidenceError, match=r"holdout: the manifest registers sealed holdout 'refund-holdout-v1' "
                                            r"\(at most 2 uses\); give the ledger"):
        run(tmp_path, m, "none", None)
    book = tmp_path / "ledger.sqlite"
    run(tmp_path, m, "one", book)
    con = sqlite3.connect(book)
    con.execute("DROP TRIGGER entries_no_delete")
    con.execute("DELETE FROM entries")  # hides the use: a rewritten file
    con.execute("INSERT INTO entries VALUES (2, 'x', '{}', 'sha256:0', 'sha256:0', 'sha256:1')")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="chain does not verify, so holdout uses cannot be counted"):
        run(tmp_path, m, "two", book)


def test_cli_refuses_a_run_beyond_the_maximum_with_exit_2(tmp_path, capsys):
    from simlab.cli import main

    m = manifest(max_uses=1)
    (tmp_path / "m.json").write_text(json.dumps(m.canonical()))
    trials = write_trials(tmp_path / "t.jsonl", m, clusters=40)
    argv = ["evidence", "run", "--manifest", str(tmp_path / "m.json"), "--trials", str(trials),
            "--ledger", str(tmp_path / "ledger.sqlite"), "--now", "2026-12-01T12:00:00Z", "--json"]
    assert main(argv + ["--out", str(tmp_path / "p1.json")]) == 1  # a decision (this small run blocks) ...
    first = json.loads(capsys.readouterr().out)
    assert first["receipt"]["action"] == "block"
    assert first["receipt"]["holdout"]["use"] == 1 and first["ledger"]["seq"] == 2  # the use, then the receipt
    assert main(argv + ["--out", str(tmp_path / "p2.json")]) == 2  # ... then a refusal, not a decision
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["field"] == "--manifest" and "has been used 1 time(s), the registered maximum is 1" in err["message"]


def test_a_refused_calibration_takes_no_holdout_use(tmp_path):
    from evidence.packet import calibration_artifact

    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"item_id": "a", "set": "shared", "human_passed": true, "judge_passed": true}\n')
    m = demo_manifest(method="judge_corrected", rho_max=0.5,
                      holdout={"id": "h", "sha256": SEALED, "max_uses": 1},
                      judge={"identity_sha256": SEALED, "calibration_sha256": "sha256:" + "7" * 64,
                             "calibration_shared": True, "min_calibration": 1})
    book = tmp_path / "ledger.sqlite"
    artifacts = trial_artifacts(write_trials(tmp_path / "t.jsonl", m, clusters=40)) + [calibration_artifact(labels)]
    with pytest.raises(EvidenceError, match=r"judge\.calibration_sha256: labels.jsonl hashes to"):
        run_experiment(manifest=m, artifacts=artifacts, out=tmp_path / "p.json", now=NOW, ledger=book)
    assert not book.exists()  # the refusal came before the ledger was opened: no use taken
