"""Issue 30, items 1 and 4 on the evidence path: a registered judge calibration, used exactly
by the judge-corrected comparison and refused when it does not match; the judge's parts
bound so that a changed model, prompt, rubric or parser expires the receipt by name; which
trials are judge-labelled, and what follows; and a failed deterministic check that no judge
pass can override.  (With a covering certificate: ``test_judge_coverage.py``.)"""
from __future__ import annotations

import datetime as dt
import hashlib
import json

import numpy as np
import pytest

from evidence.errors import EvidenceError
from evidence.manifest import Manifest
from evidence.packet import calibration_artifact, run_experiment, trial_artifacts
from evidence.replay import replay_packet
from evidence.resolve import resolve_receipt
from evidence.synthetic import demo_manifest, write_trials

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
IDENTITY = "sha256:" + "2" * 64
COUNTS = [[380, 20, 20, 380], [380, 20, 20, 380]]  # Se = Sp = 0.95 per arm, 800 items each
PARTS = {"model": "judge-model@2026-11", "prompt": "judge-prompt-v2", "rubric": "rubric-v3", "parser": "parser-v2"}


def judge_block(**kw) -> dict:
    return {"identity_sha256": IDENTITY, "components": PARTS, "calibration_counts": COUNTS,
            "calibration_shared": False, "min_calibration": 200, **kw}


def manifest(judge: dict | None = None, method: str = "judge_corrected", **kw) -> Manifest:
    return demo_manifest(method=method, judge=judge or judge_block(), rho_max=0.5, **kw)


def run(tmp_path, m: Manifest, *, name="exp", calibration=None, clusters=400, edit=None, **draw):
    trials = write_trials(tmp_path / f"{name}.jsonl", m, clusters=clusters,
                          **{"baseline": 0.8, "discordance": 0.02, "seed": 3, **draw})
    if edit is not None:
        rows = [json.loads(line) for line in trials.read_text().splitlines()]
        edit(rows)
        trials.write_text("".join(json.dumps(r) + "\n" for r in rows))
    artifacts = trial_artifacts(trials) + ([calibration_artifact(calibration)] if calibration else [])
    return run_experiment(manifest=m, artifacts=artifacts, out=tmp_path / f"{name}.packet.json", now=NOW)


def write_labels(path, counts, sets=("baseline", "candidate")):
    """A calibration file of paired labels with ``counts`` per set (columns as in methods.judged)."""
    lines, i = [], 0
    for name, row in zip(sets, counts):
        for cell, n in enumerate(row):
            for _ in range(n):
                lines.append(json.dumps({"item_id": f"item-{i}", "set": name, "human_passed": cell < 2,
                                         "judge_passed": cell % 2 == 0}))
                i += 1
    path.write_text("\n".join(lines) + "\n")
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_comparison_runs_judge_corrected_with_exactly_the_registered_counts(tmp_path):
    from methods import get
    from evidence.comparison import analysis_tables, one_sided_alpha
    from evidence.experiment import pair_trials
    from evidence.trials import read_trial_file

    m = manifest(judge_block(min_calibration=300))
    packet = run(tmp_path, m)
    c = packet["receipt"]["comparison"]
    assert c["method"]["name"] == "judge_corrected" and c["judge"]["calibration_counts"] == COUNTS
    assert c["judge"]["min_calibration"] == 300 and c["judge"]["calibration_items"] == [800, 800]
    cols, _ = read_trial_file(tmp_path / "exp.jsonl")
    method = get("judge_corrected").with_options(min_calibration=300)
    tables = analysis_tables(method, pair_trials(cols, m))
    direct = method.analyze(tables, m.margin, alpha=one_sided_alpha(m.confidence), calibration=np.array(COUNTS))
    assert (c["estimate"], c["lower"], c["status"]) == (direct.estimate, direct.lower, direct.status)
    assert c["judge"]["raw_lower"] == direct.raw_lower and c["method"] == method.identity.as_dict()
    assert packet["receipt"]["components"]["judge"] == {"identity": IDENTITY, "calibration": m.judge.calibration_hash(),
                                                        **PARTS}
    assert packet["receipt"]["action"] == "lab_pass"  # no certificate covers it here
    assert any(r.startswith("unqualified: pinned qualification record") for r in packet["receipt"]["reasons"])


def test_a_calibration_file_is_read_hashed_bound_and_replayed(tmp_path):
    labels = tmp_path / "labels.jsonl"
    digest = write_labels(labels, COUNTS)
    m = manifest(judge_block(calibration_counts=None, calibration_sha256=digest))
    packet = run(tmp_path, m, calibration=labels)
    r = packet["receipt"]
    assert r["comparison"]["judge"]["calibration_counts"] == COUNTS
    assert r["components"]["raw_artifacts"]["judge_calibration"] == digest
    assert r["components"]["judge"]["calibration"] == digest
    assert replay_packet(packet, base=tmp_path)["ok"]
    labels.write_text(labels.read_text().replace('"judge_passed": true', '"judge_passed": false', 1))
    replayed = replay_packet(packet, base=tmp_path)
    assert not replayed["ok"] and "judge.calibration_sha256" in " ".join(replayed["reasons"])


def test_a_calibration_file_that_is_not_the_registered_one_is_refused(tmp_path):
    labels = tmp_path / "labels.jsonl"
    write_labels(labels, COUNTS)
    m = manifest(judge_block(calibration_counts=None, calibration_sha256="sha256:" + "3" * 64))
    with pytest.raises(EvidenceError, match=r"judge\.calibration_sha256: labels.jsonl hashes to sha256:"):
        run(tmp_path, m, calibration=labels)


def test_a_missing_calibration_file_is_refused(tmp_path):
    m = manifest(judge_block(calibration_counts=None, calibration_sha256="sha256:" + "3" * 64))
    with pytest.raises(EvidenceError, match=r"judge\.calibration_sha256: the manifest registers a calibration file, "
                                            "but none was given"):
        run(tmp_path, m)
    with pytest.raises(EvidenceError, match=r"artifact judge_calibration: no file at"):
        run(tmp_path, m, name="two", calibration=tmp_path / "absent.jsonl")


SMALL = [[45, 5, 5, 45], [20, 0, 0, 20]]             # 100 baseline items, 40 candidate items
SHORT = ("statistical comparison inconclusive: a calibration set is smaller than the registered minimum "
         "(min_calibration): candidate set 40 items < judge.min_calibration 50")


def _held_for_a_short_set(packet, tmp_path):
    """A set too small for the registered bound: analysed, inconclusive with that reason, a hold."""
    r = packet["receipt"]
    c = r["comparison"]
    assert c["status"] == "inconclusive" and c["lower"] is None and c["estimate"] is None
    assert c["judge"]["calibration_items"] == [100, 40] and c["judge"]["min_calibration"] == 50
    assert c["judge"]["raw_estimate"] is not None  # the judge-scale difference is still reported
    assert (r["state"], r["action"], r["authority"]) == ("evidence_ready", "hold", "none")
    assert r["reasons"] == [SHORT]
    assert replay_packet(packet, base=tmp_path)["ok"]


def test_a_too_small_inline_set_is_analysed_and_holds_naming_the_size_and_the_minimum(tmp_path):
    m = manifest(judge_block(calibration_counts=SMALL, min_calibration=50))
    _held_for_a_short_set(run(tmp_path, m), tmp_path)
    # both sets short, shared and per arm: each named
    both = run(tmp_path, manifest(judge_block(calibration_counts=SMALL, min_calibration=101)), name="both")
    assert both["receipt"]["comparison"]["judge"]["reason"].endswith(
        "baseline set 100 items < judge.min_calibration 101; candidate set 40 items < judge.min_calibration 101")
    shared = manifest(judge_block(calibration_counts=[[20, 0, 0, 20]], calibration_shared=True, min_calibration=50))
    assert run(tmp_path, shared, name="shared")["receipt"]["reasons"] == [
        SHORT.replace("candidate set", "shared set")]


def test_a_too_small_set_in_a_file_is_analysed_and_holds_naming_the_size_and_the_minimum(tmp_path):
    labels = tmp_path / "labels.jsonl"
    digest = write_labels(labels, SMALL)
    m = manifest(judge_block(calibration_counts=None, calibration_sha256=digest, min_calibration=50))
    packet = run(tmp_path, m, calibration=labels)
    assert packet["receipt"]["components"]["raw_artifacts"]["judge_calibration"] == digest
    _held_for_a_short_set(packet, tmp_path)


def test_cli_holds_a_too_small_set_with_exit_1(tmp_path, capsys):
    from simlab.cli import main

    m = manifest(judge_block(calibration_counts=SMALL, min_calibration=50))
    (tmp_path / "manifest.json").write_text(json.dumps(m.canonical()))
    trials = write_trials(tmp_path / "t.jsonl", m, clusters=40)
    code = main(["evidence", "run", "--manifest", str(tmp_path / "manifest.json"), "--trials", str(trials),
                 "--out", str(tmp_path / "p.json"), "--now", "2026-12-01T12:00:00Z", "--json"])
    r = json.loads(capsys.readouterr().out)["receipt"]
    assert code == 1 and r["action"] == "hold" and r["reasons"][0] == SHORT


@pytest.mark.parametrize("edit,match", [
    (lambda rows: rows.append({**rows[0]}), r"field item_id: 'item-0' already on line 1"),
    (lambda rows: rows[0].update(set="arm-b"), r"line 1, field set: 'arm-b' is not one of"),
    (lambda rows: rows[0].update(human_passed="yes"), r"line 1, field human_passed: expected true or false"),
    (lambda rows: rows[0].update(set="shared"), r"mixes a shared set with per-arm sets"),
])
def test_a_bad_calibration_file_is_refused_naming_the_row(tmp_path, edit, match):
    labels = tmp_path / "labels.jsonl"
    write_labels(labels, COUNTS)
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    edit(rows)
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    digest = "sha256:" + hashlib.sha256(labels.read_bytes()).hexdigest()
    m = manifest(judge_block(calibration_counts=None, calibration_sha256=digest))
    with pytest.raises(EvidenceError, match=match):
        run(tmp_path, m, calibration=labels)


def test_a_file_for_inline_counts_and_a_file_without_a_judge_are_refused(tmp_path):
    labels = tmp_path / "labels.jsonl"
    write_labels(labels, COUNTS)
    with pytest.raises(EvidenceError, match=r"judge\.calibration_counts: the manifest registers inline"):
        run(tmp_path, manifest(), calibration=labels)
    plain = demo_manifest(method="binomial_loss")
    with pytest.raises(EvidenceError, match=r"judge: a judge calibration file was given, but the manifest registers "
                                            "no judge"):
        run(tmp_path, plain, name="plain", calibration=labels)


@pytest.mark.parametrize("block,match", [
    ({"calibration_shared": True}, r"2 set\(s\) but judge\.calibration_shared is true"),
    ({"calibration_counts": [[380, 20, 20, 380]]}, r"1 set\(s\) but judge\.calibration_shared is false"),
    ({"calibration_sha256": "sha256:" + "3" * 64}, r"register exactly one of judge\.calibration_counts"),
    ({"calibration_counts": [[380, -1, 20, 380], [380, 20, 20, 380]]}, r"baseline set\): counts must be >= 0"),
    ({"min_calibration": 0}, r"judge\.min_calibration"),
    ({"components": {"model": "m", "prompt": "p"}}, r"judge\.components: name the judge's model, prompt, rubric, "
                                                   r"parser versions \(missing rubric, parser\)"),
    ({"components": {**PARTS, "calibration": "c"}}, r"judge\.components: calibration is bound already"),
])
def test_bad_judge_blocks_are_refused_naming_the_field(block, match):
    with pytest.raises(ValueError, match=match):
        manifest(judge_block(**block))


def test_judge_method_and_judge_block_go_together(tmp_path):
    with pytest.raises(EvidenceError, match=r"manifest judge: judge_corrected corrects for judge error"):
        run(tmp_path, demo_manifest(method="judge_corrected", rho_max=0.5))
    with pytest.raises(EvidenceError, match=r"manifest judge: a judge is registered but statistical_method "
                                            r"'binomial_loss'"):
        run(tmp_path, manifest(method="binomial_loss"), name="b")


def test_a_changed_judge_or_calibration_expires_the_receipt_on_resolve(tmp_path):
    r = run(tmp_path, manifest())["receipt"]
    later = NOW + dt.timedelta(hours=1)
    current = {"judge.identity": IDENTITY, "judge.calibration": r["components"]["judge"]["calibration"],
               **{f"judge.{k}": v for k, v in PARTS.items()}}
    same = resolve_receipt(r, later, current)
    assert same["action"] == "lab_pass" and not any("drift" in x for x in same["reasons"])
    for name in ("judge.identity", "judge.calibration"):
        out = resolve_receipt(r, later, {name: "sha256:" + "9" * 64})
        assert out["action"] == "block" and out["state"] == "expired"
        assert any(x.startswith(f"drift: {name} is now sha256:9999") for x in out["reasons"])


@pytest.mark.parametrize("part,new", [("model", "judge-model@2027-01"), ("prompt", "judge-prompt-v3"),
                                      ("rubric", "rubric-v4"), ("parser", "parser-v3")])
def test_each_changed_judge_part_expires_the_receipt_naming_it(tmp_path, part, new):
    r = run(tmp_path, manifest())["receipt"]
    out = resolve_receipt(r, NOW + dt.timedelta(hours=1), {f"judge.{part}": new})
    assert (out["state"], out["action"], out["authority"]) == ("expired", "block", "none")
    assert out["reasons"] == [f"drift: judge.{part} is now {new}, the receipt bound {PARTS[part]}"]


def test_cli_resolve_names_the_changed_rubric(tmp_path, capsys):
    from simlab.cli import main

    packet = run(tmp_path, manifest())
    path = tmp_path / "exp.packet.json"
    assert json.loads(path.read_text())["receipt"] == packet["receipt"]
    code = main(["evidence", "resolve", str(path), "--replay", "--as-of", "2026-12-01T13:00:00Z",
                 "--current", "judge.rubric=rubric-v4", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["state"] == "expired" and out["action"] == "block"
    assert out["reasons"] == ["drift: judge.rubric is now rubric-v4, the receipt bound rubric-v3"]


def _judge_pass_with_failed_check(rows):
    """The first candidate trial the judge passed gets a failed deterministic check."""
    row = next(r for r in rows if r["arm"] == "candidate" and r["passed"])
    row["failed_checks"] = ["refund_over_limit"]
    return row


def test_a_failed_deterministic_check_blocks_whatever_the_judge_said(tmp_path):
    m = manifest()
    clean = run(tmp_path, m, name="clean")["receipt"]
    assert clean["comparison"]["status"] == "pass" and clean["action"] == "lab_pass"
    edited = {}
    packet = run(tmp_path, m, name="checked", edit=lambda rows: edited.update(_judge_pass_with_failed_check(rows)))
    r = packet["receipt"]
    assert edited["passed"] is True  # the judge said pass ...
    assert r["action"] == "block" and r["state"] == "evidence_ready"  # ... and the deterministic check blocks
    assert r["comparison"]["status"] == "pass"  # a comparison that would pass otherwise
    assert r["hard_failures"]["candidate_trials_with_failed_checks"] == 1
    assert r["hard_failures"]["judge_passes_overridden"] == 1
    assert r["comparison"]["judge"]["candidate_passes_overridden"] == 1
    assert "candidate trial(s) with failed checks" in " ".join(r["reasons"])
    # the trial counts as a candidate fail in the analysed tables: one candidate pass fewer
    assert r["comparison"]["estimate"] < clean["comparison"]["estimate"]
    assert replay_packet(packet, base=tmp_path)["ok"]


def test_cli_refuses_a_mismatched_calibration_file_naming_the_flag_and_field(tmp_path, capsys):
    from simlab.cli import main

    labels = tmp_path / "labels.jsonl"
    write_labels(labels, COUNTS)
    m = manifest(judge_block(calibration_counts=None, calibration_sha256="sha256:" + "3" * 64))
    (tmp_path / "manifest.json").write_text(json.dumps(m.canonical()))
    trials = write_trials(tmp_path / "t.jsonl", m, clusters=40)
    code = main(["evidence", "run", "--manifest", str(tmp_path / "manifest.json"), "--trials", str(trials),
                 "--judge-calibration", str(labels), "--out", str(tmp_path / "p.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and err["field"] == "--judge-calibration"
    assert "judge.calibration_sha256: labels.jsonl hashes to" in err["message"]
