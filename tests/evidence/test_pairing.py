"""Pairing by (case id, trial index): errors name the key; tables match a slow reference."""
from __future__ import annotations

import json

import numpy as np
import pytest

from evidence.experiment import PairingError, pair_trials
from evidence.synthetic import demo_manifest
from evidence.trials import parse_trials

M = demo_manifest(repetitions=2)


def row(case, trial, cluster, arm, passed, **kw):
    return {"case_id": case, "trial_index": trial, "cluster_id": cluster, "arm": arm, "passed": passed,
            "failed_checks": [], "latency_ms": None, "cost": None, "cost_provenance": "absent",
            "manifest_sha256": M.sha256, **kw}


def experiment_rows(seed=3, cases=12):
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(cases):
        for t in range(2):
            for arm in ("baseline", "candidate"):
                rows.append(row(f"case{c}", t, f"cust{c % 5}", arm, bool(rng.random() < 0.7)))
    rng.shuffle(rows)
    return rows


def cols(rows):
    return parse_trials(("\n".join(json.dumps(r) for r in rows) + "\n").encode(), "jsonl", "t.jsonl")


def pair_errors(rows, manifest=M) -> list[str]:
    with pytest.raises(PairingError) as exc:
        pair_trials(cols(rows), manifest)
    return exc.value.errors


def reference_tables(rows):
    """Slow reference: dict join, then per-cluster counts."""
    arms = {"baseline": {}, "candidate": {}}
    for r in rows:
        arms[r["arm"]][(r["case_id"], r["trial_index"])] = r
    tables = {}
    for key, b in arms["baseline"].items():
        c = arms["candidate"][key]
        cell = {(True, True): 0, (True, False): 1, (False, True): 2, (False, False): 3}[(b["passed"], c["passed"])]
        tables.setdefault(b["cluster_id"], [0, 0, 0, 0])[cell] += 1
    return tables


def test_tables_match_the_reference():
    rows = experiment_rows()
    e = pair_trials(cols(rows), M)
    ref = reference_tables(rows)
    got = {name: e.tables[i].tolist() for i, name in enumerate(e.cluster_names)}
    assert got == ref and e.pairs == 24 and e.cases == 12 and e.clusters == 5
    # clusters in arrival order (first appearance in the file)
    first = list(dict.fromkeys(r["cluster_id"] for r in rows))
    assert list(e.cluster_names) == first


def test_missing_pair_names_the_key():
    rows = experiment_rows()
    i = next(i for i, r in enumerate(rows) if r["arm"] == "candidate" and r["case_id"] == "case4" and r["trial_index"] == 1)
    del rows[i]
    errs = pair_errors(rows)
    assert len(errs) == 1 and errs[0].startswith("(case 'case4', trial 1) at line ")
    assert errs[0].endswith(": missing pair: a baseline trial with no candidate trial")


def test_duplicated_pair_names_the_key_and_lines():
    rows = experiment_rows()
    rows.append(dict(rows[0]))
    errs = pair_errors(rows)
    r = rows[0]
    assert errs == [f"(case {r['case_id']!r}, trial {r['trial_index']}) at line 1 and line 49: duplicated {r['arm']} trial"]


def test_cluster_mismatched_pair_names_the_key():
    rows = experiment_rows()
    i = next(i for i, r in enumerate(rows) if r["arm"] == "candidate" and r["case_id"] == "case2" and r["trial_index"] == 0)
    rows[i]["cluster_id"] = "cust-elsewhere"
    errs = pair_errors(rows)
    assert errs[0].startswith("(case 'case2', trial 0): 'cust2' for the baseline (line ")
    assert "'cust-elsewhere' for the candidate" in errs[0] and errs[0].endswith(": cluster mismatch between the arms")


def test_case_split_over_clusters_is_an_error():
    rows = experiment_rows()
    for r in rows:
        if r["case_id"] == "case3" and r["trial_index"] == 1:
            r["cluster_id"] = "cust-other"
    assert any(e.startswith("case 'case3' ('cust3' and 'cust-other', at line ") and e.endswith(": a case in two clusters")
               for e in pair_errors(rows))


def test_wrong_number_of_repetitions_is_an_error():
    rows = [r for r in experiment_rows() if not (r["case_id"] == "case7" and r["trial_index"] == 1)]
    assert pair_errors(rows) == ["case 'case7' (1): paired trials per case differ from the manifest's 2 repetitions"]


def test_trial_run_under_another_manifest_is_an_error():
    rows = experiment_rows()
    other = demo_manifest(repetitions=2, prompt_version="prompt-v2").sha256
    rows[5]["manifest_sha256"] = other
    errs = pair_errors(rows)
    assert errs == [f"1 trial(s), first at line 6: ran under manifest {other}, not {M.sha256} "
                    "(manifest changed after execution?)"]


def test_candidate_failed_checks_are_counted_not_averaged():
    rows = experiment_rows()
    for r in rows:
        if r["arm"] == "candidate" and r["case_id"] == "case1":
            r["failed_checks"] = ["pii_leak"]
            r["passed"] = True
    e = pair_trials(cols(rows), M)
    assert e.candidate_failed_trials == 2
    assert {x["case_id"] for x in e.failed_examples} == {"case1"}
    assert e.failed_examples[0]["failed_checks"] == ["pii_leak"]
