"""Issue 30, item 1: trials say which outcomes are judge-labelled (JSONL / CSV column
``judge_labelled``, Inspect score metadata or ``--judge-scored``), and what follows
(``evidence.labels``): judge labels under a manifest without a judge never get more than
lab_only; trials that are not judge labels under a manifest with a judge are refused, named;
rows that do not say are taken as the manifest registers."""
from __future__ import annotations

import csv
import datetime as dt
import json

import numpy as np
import pytest

from evidence.errors import EvidenceError
from evidence.packet import population_artifact, run_experiment, trial_artifacts
from evidence.synthetic import demo_manifest, with_population, write_population, write_trials
from evidence.trials import read_trials

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
PARTS = {"model": "judge-model@2026-11", "prompt": "judge-prompt-v2", "rubric": "rubric-v3", "parser": "parser-v2"}
JUDGE = {"identity_sha256": "sha256:" + "2" * 64, "components": PARTS,
         "calibration_counts": [[380, 20, 20, 380], [380, 20, 20, 380]], "calibration_shared": False,
         "min_calibration": 200}


def label(path, which):
    """Set ``judge_labelled`` on the rows ``which(i, row)`` picks (True / False; None leaves it out)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for i, row in enumerate(rows):
        value = which(i, row)
        if value is not None:
            row["judge_labelled"] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_both_formats_and_both_read_paths_give_the_same_labels(tmp_path):
    m = demo_manifest()
    path = write_trials(tmp_path / "t.jsonl", m, clusters=6)
    rows = label(path, lambda i, r: [True, False, None][i % 3])
    fast = read_trials(path)
    assert fast.judge_labelled.tolist() == [[1, 0, -1][i % 3] for i in range(len(rows))]
    out = tmp_path / "t.csv"
    fields = list(rows[0])  # row 0 states its label
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({**r, "failed_checks": ";".join(r["failed_checks"]),
                        "judge_labelled": {True: "true", False: "false", None: ""}[r.get("judge_labelled")]})
    assert np.array_equal(read_trials(out).judge_labelled, fast.judge_labelled)
    from evidence.trials import columns_from_records, validate_rows
    slow = columns_from_records(validate_rows([(i + 1, r) for i, r in enumerate(rows)], "rows"), "rows")
    assert np.array_equal(slow.judge_labelled, fast.judge_labelled)
    assert read_trials(write_trials(tmp_path / "plain.jsonl", m, clusters=3)).judge_labelled is None


def test_a_bad_label_names_the_line_and_field(tmp_path):
    path = write_trials(tmp_path / "t.jsonl", demo_manifest(), clusters=3)
    label(path, lambda i, r: "yes" if i == 1 else None)
    with pytest.raises(EvidenceError, match=r"field judge_labelled: Input should be a valid boolean \(line 2\)"):
        read_trials(path)


def test_judge_labels_under_a_manifest_without_a_judge_authorise_lab_work_only(world, good, tmp_path):
    """The same experiment as ``good`` (canary_eligible), its outcomes now stated to be a judge's."""
    folder, packet = good
    m = with_population(world.manifest(), 300)
    trials = write_trials(tmp_path / "exp.jsonl", m, clusters=300, baseline=0.9, discordance=0.01, seed=7,
                          cost_provenance="measured")
    label(trials, lambda i, r: True if r["arm"] == "candidate" else None)
    artifacts = trial_artifacts(trials) + [population_artifact(write_population(tmp_path / "pop.jsonl", 300))]
    r = run_experiment(manifest=m, artifacts=artifacts, out=tmp_path / "p.json", qualification_dir=world.qdir,
                       trusted=world.trusted, now=world.now)["receipt"]
    assert r["comparison"] == packet["receipt"]["comparison"]  # the same analysis ...
    assert r["qualification"]["covered"] and packet["receipt"]["action"] == "canary_eligible"
    assert (r["state"], r["action"], r["authority"]) == ("evidence_ready", "lab_pass", "lab_only")  # ... capped
    assert r["reasons"] == [
        "judge-labelled outcomes taken as truth: 300 trial(s) say judge_labelled true (e.g. line 2) but the manifest "
        "registers no judge, and binomial_loss does not correct for judge error; authority capped at lab_only "
        "(register the judge, its calibration set and a judge-corrected method)"]
    assert r["evidence"]["judge_labelled"] == {"judge": 300, "not_judge": 0, "unstated": 300}
    assert packet["receipt"]["evidence"]["judge_labelled"] == {"judge": 0, "not_judge": 0, "unstated": 600}


def _judge_run(tmp_path, which, name="j"):
    m = demo_manifest(method="judge_corrected", judge=JUDGE, rho_max=0.5)
    trials = write_trials(tmp_path / f"{name}.jsonl", m, clusters=400, baseline=0.8, discordance=0.02, seed=3)
    label(trials, which)
    return run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=tmp_path / f"{name}.packet.json",
                          now=NOW)


def test_under_a_judge_rows_that_do_not_say_are_the_registered_judges_labels(tmp_path):
    stated = _judge_run(tmp_path, lambda i, r: True if i % 2 else None)["receipt"]
    unstated = _judge_run(tmp_path, lambda i, r: None, name="u")["receipt"]
    assert stated["evidence"]["judge_labelled"] == {"judge": 400, "not_judge": 0, "unstated": 400}
    assert unstated["evidence"]["judge_labelled"] == {"judge": 0, "not_judge": 0, "unstated": 800}
    assert stated["comparison"]["estimate"] == unstated["comparison"]["estimate"]
    assert not any("taken as truth" in x for x in stated["reasons"] + stated["other_findings"])


def test_under_a_judge_trials_that_are_not_judge_labels_are_refused_by_row(tmp_path):
    with pytest.raises(EvidenceError, match=r"field judge_labelled: 2 trial\(s\) say false \(e\.g\. line 3, line 8\), "
                                            r"but the manifest registers a judge and judge_corrected corrects every "
                                            r"outcome as that judge's label: mixed judge- and human-labelled trials "
                                            r"cannot be corrected together"):
        _judge_run(tmp_path, lambda i, r: False if i in (2, 7) else True)
    assert not (tmp_path / "j.packet.json").exists()


def test_cli_refuses_mixed_labels_with_exit_2(tmp_path, capsys):
    from simlab.cli import main

    m = demo_manifest(method="judge_corrected", judge=JUDGE, rho_max=0.5)
    (tmp_path / "m.json").write_text(json.dumps(m.canonical()))
    trials = write_trials(tmp_path / "t.jsonl", m, clusters=40)
    label(trials, lambda i, r: i != 0)
    code = main(["evidence", "run", "--manifest", str(tmp_path / "m.json"), "--trials", str(trials), "--out",
                 str(tmp_path / "p.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and "field judge_labelled: 1 trial(s) say false (e.g. line 1)" in err["message"]


# ---------------------------------------------------------------- Inspect: the score says, or the mapping does

def _samples(meta):
    from evidence.adapters.inspect import _Sample
    return [_Sample(id=f"case-{i}", epoch=1, metadata={"customer": f"c{i}"},
                    scores={"judge": {"value": "C", "metadata": m}}) for i, m in enumerate(meta)]


def test_inspect_rows_take_the_label_from_score_metadata_or_the_mapping(tmp_path):
    from evidence.adapters.inspect import log_rows
    from evidence.trials import columns_from_places

    path = tmp_path / "base.eval"
    samples = _samples([{"judge_labelled": True}, {"judge_labelled": False}, None])
    rows, problems = log_rows(path, samples, "baseline", cluster_field="customer", score="judge", slice_field=None,
                              manifest_hash=None)
    assert not problems and [r["judge_labelled"] for _, r in rows] == [True, False, None]
    assert columns_from_places(rows, "logs").judge_labelled.tolist() == [1, 0, -1]
    rows, problems = log_rows(path, _samples([None, None]), "baseline", cluster_field="customer", score="judge",
                              slice_field=None, manifest_hash=None, judge_labelled=True)
    assert not problems and [r["judge_labelled"] for _, r in rows] == [True, True]


def test_inspect_metadata_that_contradicts_the_mapping_is_a_named_problem(tmp_path):
    from evidence.adapters.inspect import log_rows

    rows, problems = log_rows(tmp_path / "cand.eval", _samples([None, {"judge_labelled": False},
                                                                {"judge_labelled": "maybe"}]),
                              "candidate", cluster_field="customer", score="judge", slice_field=None,
                              manifest_hash=None, judge_labelled=True)
    assert [str(p) for p in problems] == [
        "cand.eval sample 'case-1' epoch 1: score 'judge' metadata says judge_labelled false, the mapping says true "
        "for every sample of that score",
        "cand.eval sample 'case-2' epoch 1 (value 'maybe'): score 'judge' metadata judge_labelled is not true or false"]
