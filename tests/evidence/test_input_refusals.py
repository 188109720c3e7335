"""Malformed input on the evidence path is refused with its reason, by file, line and field
(probe findings): JSON nested past the parser's depth, whitespace-only JSONL lines, unknown
invalidation rules, text that is not UTF-8, replay's options, output paths; never a
traceback, never a silent skip or a pass."""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil

import pytest

from evidence.errors import EvidenceError
from evidence.jsonfiles import TOO_DEEP as DEEP_MESSAGE, NestedTooDeeply, loads, read_json
from evidence.manifest import INVALIDATION_RULES, Manifest, load_manifest, template
from evidence.population import PopulationError, read_population
from evidence.trials import TrialsError, parse_trials, read_trials
from simlab.cli import main

from tests.evidence.test_trials_ingest import HEADER, H, errors_of, good_rows, jsonl

DEEP = b"[" * 100_000 + b"]" * 100_000
TOO_DEEP = "nested too deeply to read"
EMPTY = "empty line (one trial per line; nothing is skipped silently)"


def _cli(capsys, *argv):
    """``(exit code, the --json payload)`` of one command."""
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------- nesting past the parser's depth


def test_deep_json_is_refused_by_name_not_a_recursion_error(tmp_path):
    with pytest.raises(NestedTooDeeply, match=TOO_DEEP):
        loads(DEEP)
    path = tmp_path / "deep.json"
    path.write_bytes(DEEP)
    with pytest.raises(ValueError, match=f"^{path}: {TOO_DEEP}"):
        read_json(path)
    with pytest.raises(ValueError, match=f"^{path}: invalid manifest: {TOO_DEEP}"):
        load_manifest(path)


def test_a_deep_trial_line_is_named_by_its_line(tmp_path):
    data = jsonl(good_rows(2)).replace(b"\n", b"\n" + DEEP + b"\n", 1)
    assert errors_of(data) == [f"line 2: {DEEP_MESSAGE}"]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    with pytest.raises(TrialsError, match=f"{TOO_DEEP} .* \\(line 2\\)"):
        read_trials(path)


def test_a_deep_population_line_is_named_by_its_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"case_id": "a", "cluster_id": "k1"}\n' + DEEP + b"\n")
    with pytest.raises(PopulationError, match=f"{TOO_DEEP} .*\\(line 2\\)"):
        read_population(path)


# ---------------------------------------------------------------- whitespace-only JSONL lines


@pytest.mark.parametrize("blank", [b"   ", b"\t", b" \r", b"\r"])
def test_a_whitespace_only_line_is_an_error_like_an_empty_one(blank, tmp_path):
    """pyarrow skips a line of blanks: rows and lines would disagree and the line would pass unseen."""
    data = jsonl(good_rows(2)).replace(b"\n", b"\n" + blank + b"\n", 1)
    assert errors_of(data) == [f"line 2: {EMPTY}"]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    with pytest.raises(TrialsError) as exc:
        read_trials(path)
    assert exc.value.errors == [f"line 2: {EMPTY}"]


def test_whitespace_after_the_final_newline_is_a_line_too():
    data = jsonl(good_rows(2))
    last = data.count(b"\n") + 1
    assert errors_of(data + b"  ") == [f"line {last}: {EMPTY}"]
    assert errors_of(b"  \n" + data) == [f"line 1: {EMPTY}"]


def test_indented_and_crlf_lines_still_read_as_rows():
    """The whitespace test sends an indented line down the line-by-line path; it is a row there."""
    plain = parse_trials(jsonl(good_rows(3)), "jsonl", "t")
    for data in (jsonl(good_rows(3)).replace(b"\n{", b"\n  {"), jsonl(good_rows(3)).replace(b"\n", b"\r\n")):
        cols = parse_trials(data, "jsonl", "t")
        assert list(cols.lines) == list(plain.lines) and list(cols.passed) == list(plain.passed)


def test_a_whitespace_only_population_line_is_refused(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"case_id": "a", "cluster_id": "k1"}\n \t\n{"case_id": "b", "cluster_id": "k2"}\n  ')
    with pytest.raises(PopulationError) as exc:
        read_population(path)
    assert exc.value.errors == ["line 2: empty line (one case per line; nothing is skipped silently)",
                                "line 4: empty line (one case per line; nothing is skipped silently)"]


# ---------------------------------------------------------------- invalidation rules


def test_an_unknown_invalidation_rule_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError) as exc:
        Manifest.parse({**template(), "invalidation_rules": ["model_or_prompt_change", "bogus"]})
    message = str(exc.value)
    assert "invalid manifest: invalidation_rules.1: Input should be" in message
    assert all(repr(rule) in message for rule in INVALIDATION_RULES)


def test_a_valid_manifest_keeps_its_identity():
    """The rules are checked, not re-spelled: the canonical JSON (and so the hash every trial
    row carries) is what it was."""
    m = Manifest.parse(template(now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)))
    assert m.invalidation_rules == INVALIDATION_RULES
    assert m.sha256 == "sha256:5b01654186b8a627c54679d9f5093d0a04d1c1d1f502659de8c867867a6680fe"


# ---------------------------------------------------------------- text that is not UTF-8


def test_non_utf8_trial_bytes_are_named_by_line_and_column_on_both_paths(tmp_path):
    """pyarrow's JSON reader keeps the bytes in a string column; the row is named, not decoded later."""
    data = jsonl(good_rows(2)).replace(b'"c1"', b'"c\xff1"', 1)
    line = data[:data.index(b"\xff")].count(b"\n") + 1
    column = data.index(b"\xff") - data.rfind(b"\n", 0, data.index(b"\xff"))
    want = [f"line {line}: not UTF-8 text: byte 0xff at column {column} (save the file as UTF-8)"]
    assert errors_of(data) == want
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    with pytest.raises(TrialsError) as exc:
        read_trials(path)
    assert exc.value.errors == want


def test_a_non_utf8_csv_names_its_line():
    data = (HEADER + "\n" + f"c1,0,k1,baseline,true,,1,,absent,{H}\n").encode().replace(b"k1", b"k\xe91")
    assert errors_of(data, "csv") == ["line 2: not UTF-8 text: byte 0xe9 at column 7 (save the file as UTF-8)"]


def test_a_latin1_manifest_is_named_by_file_line_and_column(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(json.dumps(template(), indent=1).replace("prompt-v1", "prompt-\u00e9").encode("latin-1"))
    with pytest.raises(ValueError, match=rf"^{path}: invalid manifest: not UTF-8 text: byte 0xe9 at line \d+, "
                                         r"column \d+"):
        load_manifest(path)


# ---------------------------------------------------------------- replay's input, tampered packets


@pytest.fixture
def replayable(world, good, tmp_path):
    """A private copy of the good packet's folder and the options that replay it."""
    folder, _ = good
    shutil.copytree(folder, tmp_path / "p")
    trust = ["--qualification-dir", str(world.qdir), "--trusted", str(world.key.with_suffix(".pub"))]
    return tmp_path / "p", trust


def test_replay_refuses_bad_options_with_exit_2_naming_them(replayable, capsys):
    folder, trust = replayable
    packet = str(folder / "exp.packet.json")
    cases = [(["--artifact", f"trials={folder}/missing.jsonl"], "--artifact", "no file there"),
             (["--artifact", f"bogus={folder}/exp.jsonl"], "--artifact", "the packet records no artifact 'bogus'"),
             (["--artifact", f"trials={folder}/exp.jsonl", "--artifact", f"trials={folder}/exp.jsonl"], "--artifact",
              "trials given twice"),
             (["--anchor", "xyz"], "--anchor", "expected sha256: and 64 lowercase hex digits, got 'xyz'")]
    for extra, field, words in cases:
        rc, out = _cli(capsys, "evidence", "replay", packet, *trust, *extra)
        assert rc == 2 and out["error"]["field"] == field and words in out["error"]["message"], out
    (folder / "m.json").write_text(json.dumps(template()))
    rc, out = _cli(capsys, "evidence", "replay", str(folder / "m.json"))
    assert rc == 2 and out["error"]["field"] == "packet" and "not an evidence packet" in out["error"]["message"]


def test_replay_keeps_exit_1_for_a_packet_that_does_not_reproduce(replayable, capsys):
    folder, trust = replayable
    changed = folder / "changed.jsonl"
    changed.write_text((folder / "exp.jsonl").read_text().replace('"passed":true', '"passed":false', 1))
    assert changed.read_text() != (folder / "exp.jsonl").read_text()
    rc, out = _cli(capsys, "evidence", "replay", str(folder / "exp.packet.json"), *trust, "--artifact",
                   f"trials={changed}")
    assert rc == 1 and not out["ok"] and any(r.startswith("changed artifact: trials") for r in out["reasons"])
    rc, out = _cli(capsys, "evidence", "replay", str(folder / "exp.packet.json"), *trust)
    assert rc == 0 and out["ok"]


@pytest.mark.parametrize("edit,reason", [
    (lambda p: p.update(artifacts=5), "packet artifacts invalid"),
    (lambda p: p.update(artifacts=[1]), "packet artifacts invalid"),
    (lambda p: p["receipt"].update(components="x"), "manifest changed after execution"),
])
def test_a_packet_with_malformed_parts_replays_to_block(world, good, edit, reason):
    from evidence.replay import replay_packet
    folder, packet = good
    packet = json.loads(json.dumps(packet))
    edit(packet)
    out = replay_packet(packet, base=folder, qualification_dir=world.qdir, trusted=world.trusted)
    assert out["action"] == "block" and any(r.startswith(reason) for r in out["reasons"]), out["reasons"]


def test_a_receipt_with_malformed_components_resolves_to_block(good):
    from evidence.resolve import resolve_receipt
    receipt = {**good[1]["receipt"], "components": "x"}
    out = resolve_receipt(receipt, dt.datetime.now(dt.timezone.utc))
    assert out["action"] == "block" and out["reasons"][0].startswith("receipt content hash does not match")


# ---------------------------------------------------------------- output paths and fields


def test_a_dangling_link_as_the_packet_path_is_refused_before_any_work(tmp_path):
    from evidence.packet import prepare_output
    link = tmp_path / "packet.json"
    link.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(EvidenceError, match="packet.json exists; a packet is never overwritten") as exc:
        prepare_output(link)
    assert exc.value.option == "out"


def test_bad_rows_name_the_flag_that_named_their_file(tmp_path, capsys):
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(template()))
    rows = good_rows(2)
    rows[1]["arm"] = "Candidate"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(rows))
    good_file = tmp_path / "good.jsonl"
    good_file.write_bytes(jsonl(good_rows(2)))
    rc, out = _cli(capsys, "evidence", "run", "--trials", str(bad), "--manifest", str(manifest), "--out",
                   str(tmp_path / "p1.json"))
    assert rc == 2 and out["error"]["field"] == "--trials"
    assert "field arm: Input should be 'baseline' or 'candidate' (line 2)" in out["error"]["message"]
    for args, field in (([str(good_file), str(bad)], "candidate"), ([str(bad), str(good_file)], "baseline")):
        rc, out = _cli(capsys, "compare", *args, "--format", "trials", "--manifest", str(manifest), "--out",
                       str(tmp_path / "p2.json"))
        assert rc == 2 and out["error"]["field"] == field and "field arm" in out["error"]["message"], out
    pop = tmp_path / "cases.jsonl"
    pop.write_text('{"case_id": "c0"}\n')
    rc, out = _cli(capsys, "evidence", "run", "--trials", str(good_file), "--population", str(pop), "--manifest",
                   str(manifest), "--out", str(tmp_path / "p3.json"))
    assert rc == 2 and out["error"]["field"] == "--population" and "missing ['cluster_id']" in out["error"]["message"]


def test_a_ledger_entry_nested_past_the_parser_is_an_edit_not_a_crash(tmp_path):
    from evidence.ledger import verify
    from tests.evidence.test_ledger import _filled, _tamper

    path = _filled(tmp_path)
    _tamper(path, f"UPDATE entries SET payload = '{DEEP.decode()}' WHERE seq = 3")
    out = verify(path)
    assert not out["ok"] and out["problems"][0].startswith("entry 3: receipt edited (payload hashes to unreadable")


@pytest.mark.parametrize("edit,match", [
    (lambda data: data.replace(b"item-0", b"item-\xff", 1), r"labels\.jsonl: not UTF-8 text: byte 0xff at line 1, "
                                                            r"column \d+ \(save the file as UTF-8\)"),
    (lambda data: DEEP + b"\n" + data, r"labels\.jsonl: line 1: not JSON \(" + re.escape(DEEP_MESSAGE)),
])
def test_a_calibration_file_that_is_not_utf8_or_too_deep_is_refused_naming_the_place(tmp_path, edit, match):
    import hashlib

    from tests.evidence.test_judge_evidence import COUNTS, judge_block, manifest, run, write_labels

    labels = tmp_path / "labels.jsonl"
    write_labels(labels, COUNTS)
    labels.write_bytes(edit(labels.read_bytes()))
    digest = "sha256:" + hashlib.sha256(labels.read_bytes()).hexdigest()
    with pytest.raises(EvidenceError, match=match):
        run(tmp_path, manifest(judge_block(calibration_counts=None, calibration_sha256=digest)), calibration=labels)


@pytest.mark.parametrize("name,text,match", [
    ("samples_a_2026.jsonl", DEEP + b"\n", r"^samples_a_2026\.jsonl line 1: " + re.escape(DEEP_MESSAGE)),
    ("samples_a_2026.jsonl", b'{"doc_id": "\xff"}\n', r"^samples_a_2026\.jsonl line 1: not UTF-8 text: byte 0xff at "
                                                      r"column 13 \(save the file as UTF-8\)"),
    ("a.json", b'{"eval": ' + DEEP + b"}", r"a\.json: not a readable Inspect log \(" + re.escape(DEEP_MESSAGE)),
])
def test_deep_or_non_utf8_adapter_input_is_refused_naming_the_file(tmp_path, capsys, name, text, match):
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(template()))
    (tmp_path / name).write_bytes(text)
    other = tmp_path / ("b.json" if name.endswith(".json") else "samples_b_2026.jsonl")  # the other arm, same kind
    other.write_bytes(b"{}\n")
    rc, out = _cli(capsys, "compare", str(tmp_path / name), str(other), "--manifest", str(manifest),
                   "--cluster-field", "customer", "--out", str(tmp_path / "p.json"))
    assert rc == 2 and out["error"]["field"] == "baseline" and re.search(match, out["error"]["message"]), out
