"""Issue 30, item 5: a sealed holdout registered with a maximum number of confirmatory
accesses; the ledger records every run against it as an access of its kind; the receipt
states both counts; only confirmatory accesses count towards the maximum, and a confirmatory
run beyond it is counted too and holds with that reason; exploratory runs are marked,
counted apart and authorise lab work at most; replay takes no access."""
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
        write_trials(trials, m, clusters=300, baseline=0.9, discordance=0.01)  # passes: lab_pass (synthetic)
    return run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=tmp_path / f"{name}.json", now=NOW,
                          ledger=book, **kw)


BEYOND = ("sealed holdout 'refund-holdout-v1': this run is confirmatory access 3 of at most 2 (counted in the "
          "ledger; 0 exploratory access(es) besides): beyond the registered maximum its outcomes have already been "
          "seen, so it no longer confirms anything -- register a fresh holdout")


def counts(receipt):
    h = receipt["holdout"]
    return h["access"], h["confirmatory_accesses"], h["exploratory_accesses"]


def test_uses_are_counted_and_a_use_beyond_the_maximum_holds_with_that_reason(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=2)
    first, second = run(tmp_path, m, "first", book), run(tmp_path, m, "second", book)
    assert counts(first["receipt"]) == (1, 1, 0) and counts(second["receipt"]) == (2, 2, 0)
    assert second["receipt"]["holdout"]["max_uses"] == 2 and second["receipt"]["holdout"]["sha256"] == SEALED
    assert not second["receipt"]["holdout"]["beyond_maximum"]
    assert second["receipt"]["components"]["holdout"] == {"refund-holdout-v1": SEALED}
    third = run(tmp_path, m, "third", book)["receipt"]     # not refused: the run happened and is counted ...
    assert counts(third) == (3, 3, 0) and third["holdout"]["beyond_maximum"]
    assert (third["state"], third["action"], third["authority"]) == ("evidence_ready", "hold", "none")
    assert BEYOND in third["reasons"]                       # ... and holds, saying why
    assert second["receipt"]["action"] == "lab_pass" and third["comparison"] == second["receipt"]["comparison"]
    assert [u["experiment_id"] for u in ledger.holdout_uses(book, "refund-holdout-v1")] == [m.experiment_id] * 3
    assert ledger.verify(book)["ok"] and ledger.verify(book)["entries"] == 3


def test_only_confirmatory_accesses_count_towards_the_maximum_and_the_receipt_states_both(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=1)
    runs = []
    for i, exploratory in enumerate((True, True, False, True, False)):
        runs.append(run(tmp_path, m, f"r{i}", book, exploratory=exploratory))
    receipts = [p["receipt"] for p in runs]
    assert [counts(r) for r in receipts] == [(1, 0, 1), (2, 0, 2), (3, 1, 2), (4, 1, 3), (5, 2, 3)]
    assert [r["holdout"]["purpose"] for r in receipts] == ["exploratory"] * 2 + ["confirmatory", "exploratory",
                                                                                 "confirmatory"]
    # two exploratory looks before it do not spend the one confirmatory access; an exploratory
    # look after the maximum is lab work as before (capped, not held)
    assert [r["holdout"]["beyond_maximum"] for r in receipts] == [False, False, False, False, True]
    assert [r["action"] for r in receipts] == ["lab_pass"] * 4 + ["hold"]
    assert not any("sealed holdout" in x for r in receipts[:4] for x in r["reasons"] + r["other_findings"])
    assert receipts[4]["reasons"] == [
        "sealed holdout 'refund-holdout-v1': this run is confirmatory access 2 of at most 1 (counted in the ledger; "
        "3 exploratory access(es) besides): beyond the registered maximum its outcomes have already been seen, so it "
        "no longer confirms anything -- register a fresh holdout"]
    assert [u["purpose"] for u in ledger.holdout_uses(book, "refund-holdout-v1")] == [
        "exploratory", "exploratory", "confirmatory", "exploratory", "confirmatory"]
    for p in runs:
        assert replay_packet(p, base=tmp_path, ledger=book)["ok"]


def test_replay_works_after_the_maximum_and_takes_no_use(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=1)
    packet = run(tmp_path, m, "only", book)
    again = run(tmp_path, m, "again", book)
    assert again["receipt"]["action"] == "hold" and counts(again["receipt"]) == (2, 2, 0)
    for p in (packet, again) * 2:
        out = replay_packet(p, base=tmp_path, ledger=book)
        assert out["ok"] and out["receipt"] == p["receipt"]
    assert len(ledger.holdout_uses(book, "refund-holdout-v1")) == 2
    later = NOW + dt.timedelta(hours=1)
    same = resolve_receipt(packet["receipt"], later, {"holdout.refund-holdout-v1": SEALED})
    assert same["state"] == packet["receipt"]["state"] and not any("drift" in r for r in same["reasons"])
    swapped = resolve_receipt(packet["receipt"], later, {"holdout.refund-holdout-v1": "sha256:" + "6" * 64})
    assert swapped["action"] == "block" and "drift: holdout.refund-holdout-v1" in swapped["reasons"][0]


def test_other_holdouts_are_counted_apart(tmp_path):
    book = tmp_path / "ledger.sqlite"
    run(tmp_path, manifest(max_uses=1, holdout_id="a"), "a", book)
    packet = run(tmp_path, manifest(max_uses=1, holdout_id="b"), "b", book)
    assert counts(packet["receipt"]) == (1, 1, 0)


def test_a_forged_use_number_or_a_use_missing_from_the_ledger_does_not_replay(tmp_path):
    book, m = tmp_path / "ledger.sqlite", manifest(max_uses=3)
    packet = run(tmp_path, m, "p", book)
    forged = json.loads(json.dumps(packet))
    forged["holdout_use"].update(access=3, confirmatory=3)  # claims other numbers: the recomputed receipt differs
    out = replay_packet(forged, base=tmp_path, ledger=book)
    assert not out["ok"] and any("is access 1 (confirmatory 1, exploratory 0) at entry 1, the packet states access 3 "
                                 "(confirmatory 3, exploratory 0) at entry 1" in r for r in out["reasons"])
    hidden = json.loads(json.dumps(packet))
    hidden["holdout_use"].update(confirmatory=0, exploratory=1)  # a confirmatory access passed off as exploratory
    out = replay_packet(hidden, base=tmp_path)
    assert not out["ok"] and any("holdout.max_uses: recorded access 1 (confirmatory 0, exploratory 1)" in r
                                 for r in out["reasons"])
    other = tmp_path / "other.sqlite"
    ledger.append(other, {"kind": "note"})
    out = replay_packet(packet, base=tmp_path, ledger=other)
    assert not out["ok"] and any("is not in the ledger" in r for r in out["reasons"])
    other_max = json.loads(json.dumps(packet))
    other_max["holdout_use"]["max_uses"] = 4
    out = replay_packet(other_max, base=tmp_path)
    assert not out["ok"] and any("holdout.max_uses: recorded access 1 (confirmatory 1, exploratory 0) of at most 4 "
                                 "confirmatory does not belong" in r for r in out["reasons"])


def test_a_holdout_run_needs_the_ledger_and_a_broken_chain_refuses(tmp_path):
    m = manifest()
    with pytest.raises(EvidenceError, match=r"holdout: the manifest registers sealed holdout 'refund-holdout-v1' "
                                            r"\(at most 2 confirmatory accesses\); give the ledger"):
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


def test_cli_holds_a_run_beyond_the_maximum_and_the_ledger_counts_it(tmp_path, capsys):
    from simlab.cli import main

    m = manifest(max_uses=1)
    (tmp_path / "m.json").write_text(json.dumps(m.canonical()))
    trials = write_trials(tmp_path / "t.jsonl", m, clusters=300, baseline=0.9, discordance=0.01)
    argv = ["evidence", "run", "--manifest", str(tmp_path / "m.json"), "--trials", str(trials),
            "--ledger", str(tmp_path / "ledger.sqlite"), "--now", "2026-12-01T12:00:00Z", "--json"]
    assert main(argv + ["--out", str(tmp_path / "p1.json")]) == 0  # use 1: lab_pass (synthetic) ...
    first = json.loads(capsys.readouterr().out)
    assert first["receipt"]["action"] == "lab_pass"
    assert counts(first["receipt"]) == (1, 1, 0) and first["ledger"]["seq"] == 2  # the access, then the receipt
    assert main(argv + ["--out", str(tmp_path / "p2.json")]) == 1  # ... use 2: the same evidence holds
    second = json.loads(capsys.readouterr().out)["receipt"]
    assert second["action"] == "hold" and counts(second) == (2, 2, 0) and second["holdout"]["beyond_maximum"]
    assert second["reasons"][0].startswith("sealed holdout 'refund-holdout-v1': this run is confirmatory access 2 of "
                                           "at most 1")
    assert len(ledger.holdout_uses(tmp_path / "ledger.sqlite", "refund-holdout-v1")) == 2
    text = argv[:-1] + ["--exploratory", "--out", str(tmp_path / "p3.json")]
    assert main(text) == 0  # an exploratory look past the maximum: lab work, counted apart
    assert ("sealed holdout refund-holdout-v1: 2 confirmatory access(es) of at most 1, 1 exploratory (this run: "
            "exploratory access 3; ledger entry 5)") in capsys.readouterr().out


def test_an_exploratory_run_is_marked_counted_and_capped_at_lab_only(world, tmp_path):
    book = tmp_path / "ledger.sqlite"
    m = world.manifest(holdout={"id": "h1", "sha256": SEALED, "max_uses": 3})
    confirm = world.run(tmp_path, m, name="confirm", ledger=book)["receipt"]
    assert confirm["purpose"] == "confirmatory" and confirm["action"] == "canary_eligible", confirm["reasons"]
    packet = world.run(tmp_path, m, name="explore", ledger=book, exploratory=True)
    r = packet["receipt"]
    assert packet["exploratory"] is True and r["purpose"] == "exploratory"
    assert r["comparison"] == confirm["comparison"] and r["qualification"]["covered"]
    assert (r["state"], r["action"], r["authority"]) == ("evidence_ready", "lab_pass", "lab_only")
    assert r["reasons"] == ["exploratory run (declared so): it may suggest, not confirm; authority capped at lab_only"]
    assert counts(r) == (2, 1, 1) and r["holdout"]["purpose"] == "exploratory"  # every look is counted ...
    assert not r["holdout"]["beyond_maximum"]                                   # ... apart from the confirmatory
    assert [u["purpose"] for u in ledger.holdout_uses(book, "h1")] == ["confirmatory", "exploratory"]
    assert replay_packet(packet, base=tmp_path, qualification_dir=world.qdir, trusted=world.trusted, ledger=book)["ok"]
    relabelled = json.loads(json.dumps(packet))
    relabelled["exploratory"] = False                       # claim it was confirmatory after the fact
    out = replay_packet(relabelled, base=tmp_path, qualification_dir=world.qdir, trusted=world.trusted)
    assert not out["ok"] and any("the ledger recorded this use as exploratory, the run is confirmatory" in x
                                 for x in out["reasons"])
    relabelled["holdout_use"]["purpose"] = "confirmatory"  # and the packet's copy of the use too
    out = replay_packet(relabelled, base=tmp_path, qualification_dir=world.qdir, trusted=world.trusted, ledger=book)
    assert not out["ok"] and any("records the use as exploratory, the packet states confirmatory" in x
                                 for x in out["reasons"])
    assert "stored reasons" in " ".join(out["reasons"])  # and the recomputed receipt is no longer the stored one


def test_a_refused_calibration_takes_no_holdout_use(tmp_path):
    from evidence.packet import calibration_artifact

    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"item_id": "a", "set": "shared", "human_passed": true, "judge_passed": true}\n')
    m = demo_manifest(method="judge_corrected", rho_max=0.5,
                      holdout={"id": "h", "sha256": SEALED, "max_uses": 1},
                      judge={"identity_sha256": SEALED, "calibration_sha256": "sha256:" + "7" * 64,
                             "components": {"model": "m", "prompt": "p", "rubric": "r", "parser": "x"},
                             "calibration_shared": True, "min_calibration": 1})
    book = tmp_path / "ledger.sqlite"
    artifacts = trial_artifacts(write_trials(tmp_path / "t.jsonl", m, clusters=40)) + [calibration_artifact(labels)]
    with pytest.raises(EvidenceError, match=r"judge\.calibration_sha256: labels.jsonl hashes to"):
        run_experiment(manifest=m, artifacts=artifacts, out=tmp_path / "p.json", now=NOW, ledger=book)
    assert not book.exists()  # the refusal came before the ledger was opened: no use taken


def test_a_holdout_packet_does_not_replay_to_a_pass_without_its_ledger(tmp_path):
    """Its count of uses is the packet's own claim: without the ledger it replayed as a canary pass."""
    book, m = tmp_path / "ledger.sqlite", manifest()
    packet = run(tmp_path, m, "p", book)
    assert replay_packet(packet, base=tmp_path, ledger=book)["ok"]
    out = replay_packet(packet, base=tmp_path)
    assert not out["ok"] and any(r.startswith("holdout use not confirmed: the manifest registers sealed holdout")
                                 for r in out["reasons"])


def test_resolve_replays_a_holdout_packet_against_its_ledger(tmp_path):
    from evidence.resolve import resolve_packet

    book, m = tmp_path / "ledger.sqlite", manifest()
    packet = run(tmp_path, m, "p", book)
    with_ledger = resolve_packet(packet, NOW, base=tmp_path, ledger=book)
    without = resolve_packet(packet, NOW, base=tmp_path)
    assert not any("holdout use not confirmed" in r for r in with_ledger["reasons"])
    assert without["action"] == "block" and any("holdout use not confirmed" in r for r in without["reasons"])
