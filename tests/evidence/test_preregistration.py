"""Plan before data, on trial files (issue 27, items 1, 2, 4): trial timestamps against the
manifest, trials measured before the manifest, per-arm files given wrongly, and where a
packet may be written.  (Inspect logs: ``test_inspect_adapter.py``.)"""
from __future__ import annotations

import datetime as dt
import json

import pytest

from evidence.errors import EvidenceError
from evidence.packet import paired_artifacts, run_experiment, trial_artifacts
from evidence.synthetic import demo_manifest
from evidence.trials import TrialsError

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
NOW = T0 + dt.timedelta(days=2)


def _rows(manifest, clusters=6, reps=2, start=T0 + dt.timedelta(hours=1), bound=True, arms=("baseline", "candidate")):
    rows = []
    for k in range(clusters):
        for t in range(reps):
            for a in arms:
                stamp = start + dt.timedelta(minutes=k * reps + t, seconds=a == "candidate")
                rows.append({"case_id": f"case{k}", "trial_index": t, "cluster_id": f"cust{k % 3}", "arm": a,
                             "passed": (k + t + (a == "candidate")) % 4 != 0, "failed_checks": [],
                             "latency_ms": 100.0 + k + 3 * t + (a == "candidate"), "cost": None,
                             "cost_provenance": "absent", "manifest_sha256": manifest.sha256 if bound else None,
                             "timestamp": stamp.isoformat().replace("+00:00", "Z")})
    return rows


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(manifest, tmp_path, rows=None, name="t.jsonl", **kw):
    trials = _write(tmp_path / name, rows if rows is not None else _rows(manifest))
    return run_experiment(manifest=manifest, artifacts=trial_artifacts(trials), out=tmp_path / "out" / "p.json",
                          now=NOW, **kw)


def test_trials_after_the_manifest_are_checked_and_recorded(tmp_path):
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0)
    r = _run(m, tmp_path)["receipt"]
    assert r["measurement"]["times_checked"] == {"logs": 0, "trial_timestamps": 24}
    assert r["measurement"]["earliest_measurement"] == "2026-11-30T13:00:00Z"
    assert not any("registered after" in x for x in r["reasons"] + r["other_findings"])


def test_a_trial_before_the_manifest_refuses_the_run(tmp_path):
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0 + dt.timedelta(hours=1, minutes=5))
    with pytest.raises(EvidenceError) as exc:
        _run(m, tmp_path)
    assert str(exc.value).startswith("the manifest (created_at 2026-11-30T13:05:00Z) is later than the measurement "
                                     "it governs: trial at line 1 is 2026-11-30T13:00:00Z (0 log time(s), 10 trial "
                                     "timestamp(s) before the manifest)")
    assert exc.value.option == "registered_after_measurement"
    r = _run(m, tmp_path, registered_after=True, name="u.jsonl")["receipt"]
    assert r["measurement"]["measured_before_manifest"]["trials"] == 10
    assert r["action"] in ("lab_pass", "hold", "block") and r["authority"] != "canary"
    assert "registered after measurement: the plan was pinned after the logs were written; authority capped at " \
           "lab_only" in r["reasons"] + r["other_findings"]


def test_a_trial_dated_after_the_decision_refuses_the_run(tmp_path):
    """The decision comes after its evidence: one trial stamped after ``now`` (here a day later)
    is refused, naming its line and the count; the same file decided after it is accepted."""
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0)
    rows = _rows(m)
    rows[7]["timestamp"] = (NOW + dt.timedelta(days=1)).isoformat().replace("+00:00", "Z")
    with pytest.raises(EvidenceError) as exc:
        _run(m, tmp_path, rows)
    where, _, message = str(exc.value).partition(": ")
    assert where.endswith("t.jsonl")  # the file, as the packet will name it
    assert message == ("the trial at line 8 is dated 2026-12-03T12:00:00Z, after the "
                              "decision time 2026-12-02T12:00:00Z (0 log time(s), 1 trial timestamp(s) after it): a "
                              "decision cannot rest on evidence from its future (a wrong --now, a skewed clock or "
                              "edited times)")
    assert exc.value.option == "timestamp"
    trials = _write(tmp_path / "u.jsonl", rows)
    r = run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=tmp_path / "out" / "q.json",
                       now=NOW + dt.timedelta(days=1))["receipt"]
    assert r["measurement"]["latest_measurement"] == "2026-12-03T12:00:00Z"


def test_trials_without_a_manifest_hash_need_the_declared_route(tmp_path):
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0 - dt.timedelta(days=1))
    rows = _rows(m, bound=False)
    with pytest.raises(EvidenceError) as exc:
        _run(m, tmp_path, rows)
    assert "no manifest hash: the trials were not run under this manifest (measured before it existed?); they can " \
           "only be analysed as registered after measurement (24 trial(s), first at line 1)" in str(exc.value)
    assert exc.value.option == "registered_after_measurement"
    r = _run(m, tmp_path, rows, registered_after=True, name="u.jsonl")["receipt"]
    assert r["measurement"]["registered_after_measurement"] and r["authority"] in ("lab_only", "none")


def test_a_timestamp_without_a_zone_is_refused_naming_the_line(tmp_path):
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0)
    rows = _rows(m)
    rows[3]["timestamp"] = "2026-11-30T13:00:00"
    with pytest.raises(TrialsError, match=r"field timestamp: Input should have timezone info \(line 4\)"):
        _run(m, tmp_path, rows)


def test_per_arm_files_given_wrongly_are_refused_naming_both(tmp_path):
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0)
    base = _write(tmp_path / "base.jsonl", _rows(m, arms=("baseline",)))
    cand = _write(tmp_path / "cand.jsonl", _rows(m, arms=("candidate",)))

    def go(b, c, name):
        return run_experiment(manifest=m, artifacts=paired_artifacts("trials", b, c), out=tmp_path / name, now=NOW)

    assert go(base, cand, "ok.json")["receipt"]["evidence"]["pairs"] == 12
    with pytest.raises(EvidenceError, match="was given as both the baseline and the candidate"):
        go(base, base, "same.json")
    with pytest.raises(EvidenceError) as exc:
        go(cand, base, "swapped.json")
    assert str(exc.value) == ("cand.jsonl was given as the baseline but 12 of its 12 trials say arm 'candidate' "
                              "(swapped arms?); baseline file cand.jsonl, candidate file base.jsonl")
    copy = [{**r, "arm": "candidate"} for r in _rows(m, arms=("baseline",))]
    twin = tmp_path / "twin.jsonl"
    twin.write_text("".join(json.dumps(r, indent=None, separators=(",", ":")) + "\n" for r in copy))
    with pytest.raises(EvidenceError, match="every candidate trial repeats its baseline trial .*: one run given as "
                                            "both arms"):
        go(base, twin, "twin.json")
    exact = tmp_path / "exact.jsonl"
    exact.write_bytes(base.read_bytes())
    with pytest.raises(EvidenceError, match=r"base.jsonl \(baseline\) and exact.jsonl \(candidate\) are the same file"):
        go(base, exact, "exact.json")


def test_a_missing_output_folder_is_created_and_a_file_in_the_way_is_named(tmp_path):
    m = demo_manifest(repetitions=2, minimum_clusters=2, created=T0)
    (tmp_path / "trials").mkdir()
    trials = _write(tmp_path / "trials" / "refund.jsonl", _rows(m))
    out = tmp_path / "runs" / "deep" / "p.json"
    packet = run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=out, now=NOW)
    assert out.is_file() and packet["artifacts"][0]["path"] == "../../trials/refund.jsonl"
    (tmp_path / "blocker").write_text("not a folder")
    with pytest.raises(EvidenceError, match="cannot write the packet .*blocker/p.json: .*blocker is not a folder"):
        run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=tmp_path / "blocker" / "p.json", now=NOW)
    with pytest.raises(EvidenceError, match="artifact trials: no file at"):
        run_experiment(manifest=m, artifacts=trial_artifacts(tmp_path / "missing.jsonl"), out=tmp_path / "q.json")


def test_manifest_identity_is_stable_without_the_new_blocks():
    from evidence.manifest import Manifest, template

    t = template()
    bare = {k: v for k, v in t.items() if k not in ("arms", "dataset")}
    assert "arms" not in Manifest.parse(bare).canonical() and Manifest.parse(bare).sha256 != Manifest.parse(t).sha256
    with pytest.raises(ValueError, match="model_id 'x' must be the candidate arm's model"):
        Manifest.parse({**t, "model_id": "x"})
    with pytest.raises(ValueError, match="protected_slices.values lists a value twice"):
        Manifest.parse({**t, "protected_slices": {"field": "segment", "values": ["a", "a"], "rule": "holm"}})
