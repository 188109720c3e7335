"""``simlab evidence``: readable summaries, one JSON object under --json, exit 1 on block or
hold (and on a broken ledger or a failed verification), exit 2 on bad input."""
from __future__ import annotations

import json
import sqlite3

import pytest

from simlab.cli import build_parser, main

from evidence.synthetic import demo_manifest, write_trials


def invoke(argv, capsys):
    """Parse and run one command; returns (exit code from the command, stdout)."""
    args = build_parser().parse_args(argv)
    rc = args.func(args)
    return (rc or 0), capsys.readouterr().out


@pytest.fixture
def experiment(tmp_path):
    def make(name, clusters, cases, reps):
        m = demo_manifest(experiment_id=name, repetitions=reps)
        (tmp_path / f"{name}.manifest.json").write_text(json.dumps(m.canonical()))
        write_trials(tmp_path / f"{name}.jsonl", m, clusters=clusters, cases_per_cluster=cases, seed=3,
                     baseline=0.9, discordance=0.01)
        return tmp_path / f"{name}.manifest.json", tmp_path / f"{name}.jsonl"
    return make


def test_init_writes_a_valid_template_and_never_overwrites(tmp_path, capsys):
    out = tmp_path / "m.json"
    rc, text = invoke(["evidence", "init", "--out", str(out), "--json"], capsys)
    payload = json.loads(text)
    assert rc == 0 and payload["manifest"] == str(out) and payload["sha256"].startswith("sha256:")
    assert main(["evidence", "init", "--out", str(out), "--json"]) == 2
    assert "error" in json.loads(capsys.readouterr().out)


def test_run_hold_exits_1_and_lab_pass_exits_0(tmp_path, capsys, experiment):
    m, t = experiment("few", clusters=10, cases=10, reps=3)
    rc, text = invoke(["evidence", "run", "--manifest", str(m), "--trials", str(t), "--out",
                       str(tmp_path / "few.packet.json"), "--json", "--now", "2026-11-30T13:00:00Z"], capsys)
    receipt = json.loads(text)["receipt"]
    assert rc == 1 and receipt["action"] == "hold"
    assert "10 independent clusters < the registered minimum 30" in receipt["reasons"][0]

    # the front door returns the command's code: 1 for a decision that holds
    assert main(["evidence", "run", "--manifest", str(m), "--trials", str(t), "--out",
                 str(tmp_path / "few2.packet.json"), "--json"]) == 1
    capsys.readouterr()

    m, t = experiment("many", clusters=300, cases=1, reps=1)
    ledger = tmp_path / "ledger.sqlite"
    rc, text = invoke(["evidence", "run", "--manifest", str(m), "--trials", str(t), "--out",
                       str(tmp_path / "many.packet.json"), "--ledger", str(ledger),
                       "--now", "2026-11-30T13:00:00Z"], capsys)
    assert rc == 0 and "-> lab_pass (authority lab_only" in text and "synthetic evidence" in text

    rc, text = invoke(["evidence", "replay", str(tmp_path / "many.packet.json")], capsys)
    assert rc == 0 and text.startswith("replayed: identical receipt -> evidence_ready, lab_pass")

    rc, text = invoke(["evidence", "resolve", str(tmp_path / "many.packet.json"), "--as-of", "2027-06-01T00:00:00Z",
                       "--json"], capsys)
    assert rc == 1 and json.loads(text)["state"] == "expired"

    rc, text = invoke(["evidence", "verify-ledger", str(ledger), "--json"], capsys)
    assert rc == 0 and json.loads(text)["entries"] == 1
    con = sqlite3.connect(ledger, isolation_level=None)
    con.execute("DROP TRIGGER entries_no_update")
    con.execute("UPDATE entries SET payload = replace(payload, 'lab_pass', 'canary_eligible')")
    con.close()
    rc, text = invoke(["evidence", "verify-ledger", str(ledger)], capsys)
    assert rc == 1 and text.startswith("ledger BROKEN") and "receipt edited" in text


def test_forged_packet_replays_to_block(tmp_path, capsys, experiment):
    m, t = experiment("many", clusters=300, cases=1, reps=1)
    packet_path = tmp_path / "many.packet.json"
    invoke(["evidence", "run", "--manifest", str(m), "--trials", str(t), "--out", str(packet_path)], capsys)
    packet = json.loads(packet_path.read_text())
    packet["receipt"]["hard_failures"]["candidate_trials_with_failed_checks"] = 3
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(packet))
    rc, text = invoke(["evidence", "replay", str(forged), "--json"], capsys)
    out = json.loads(text)
    assert rc == 1 and out["action"] == "block" and not out["ok"]
    assert "receipt content hash does not match its contents (edited after issue)" in out["reasons"]


def test_bad_trials_exit_2_naming_line_and_field(tmp_path, capsys, experiment):
    m, t = experiment("bad", clusters=3, cases=1, reps=1)
    lines = t.read_text().splitlines()
    lines[2] = lines[2].replace('"passed":true', '"passed":null').replace('"passed":false', '"passed":null')
    t.write_text("\n".join(lines) + "\n")
    rc = main(["evidence", "run", "--manifest", str(m), "--trials", str(t), "--out", str(tmp_path / "p.json"),
               "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2
    message = err["message"] if isinstance(err, dict) else err
    assert "field passed: missing label (a missing label is never a pass or a fail) (line 3)" in message


def test_keygen_sign_verify(tmp_path, capsys):
    doc = tmp_path / "receipt.json"
    doc.write_text(json.dumps({"kind": "simlab.evidence.receipt", "action": "hold"}))
    rc, text = invoke(["evidence", "keygen", "--out", str(tmp_path / "keys"), "--json"], capsys)
    key = json.loads(text)
    assert rc == 0 and key["key_id"].startswith("ed25519:")
    rc, _ = invoke(["evidence", "sign", str(doc), "--key", key["private"]], capsys)
    assert rc == 0 and (tmp_path / "receipt.json.sig").is_file()
    rc, text = invoke(["evidence", "verify", str(doc), "--trusted", key["public"], "--json"], capsys)
    assert rc == 0 and json.loads(text) == {"ok": True, "signed_by": key["key_id"]}

    invoke(["evidence", "keygen", "--out", str(tmp_path / "other")], capsys)
    rc, text = invoke(["evidence", "verify", str(doc), "--trusted", str(tmp_path / "other")], capsys)
    assert rc == 1 and "not in the trusted key set" in text

    doc.write_text(json.dumps({"kind": "simlab.evidence.receipt", "action": "canary_eligible"}))
    rc, text = invoke(["evidence", "verify", str(doc), "--trusted", key["public"], "--json"], capsys)
    assert rc == 1 and "another document" in json.loads(text)["reason"]


def test_resolve_with_trusted_keys_requires_a_signed_receipt(tmp_path, capsys, experiment):
    m, t = experiment("many", clusters=300, cases=1, reps=1)
    packet = tmp_path / "many.packet.json"
    invoke(["evidence", "run", "--manifest", str(m), "--trials", str(t), "--out", str(packet),
            "--now", "2026-11-30T13:00:00Z"], capsys)
    _, text = invoke(["evidence", "keygen", "--out", str(tmp_path / "keys"), "--json"], capsys)
    key = json.loads(text)
    when = ["--as-of", "2026-11-30T14:00:00Z", "--trusted", key["public"], "--json"]
    rc, text = invoke(["evidence", "resolve", str(packet), *when], capsys)
    assert rc == 1 and json.loads(text)["reasons"] == ["receipt signature not verified: unsigned: no signature file"]
    invoke(["evidence", "sign", str(packet), "--key", key["private"]], capsys)
    rc, text = invoke(["evidence", "resolve", str(packet), *when], capsys)
    assert rc == 0 and json.loads(text)["action"] == "lab_pass"
