"""``simlab compare BASE CAND`` (and ``simlab evidence hash``): the CI front over the evidence
path -- verdict and exit code (0 pass, 1 fail or inconclusive, 2 bad input), the Markdown
and JUnit files, per-arm trial files and lm-evaluation-harness samples, the same manifest
rules as ``evidence run``.  (Inspect logs: tests/evidence/test_inspect_adapter.py.)"""
from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET

import pytest

from simlab.cli import main

from evidence.population import identity
from evidence.synthetic import demo_manifest

CREATED = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
NOW = "2026-12-01T12:00:00Z"


def _arm_rows(manifest, arm, clusters, losses=(), cases=1, reps=1):
    rows = []
    for k in range(clusters):
        for j in range(cases):
            for t in range(reps):
                lose = arm == "candidate" and (k, j) in losses
                rows.append({"case_id": f"c{k}-{j}", "trial_index": t, "cluster_id": f"u{k}", "arm": arm,
                             "passed": not lose, "failed_checks": [], "latency_ms": 90.0 + k + (arm == "candidate"),
                             "cost": None, "cost_provenance": "absent", "manifest_sha256": manifest.sha256})
    return rows


@pytest.fixture
def files(tmp_path):
    def make(clusters=300, losses=(), minimum=30, **kw):
        cases = {f"c{k}-0": f"u{k}" for k in range(clusters)}
        m = demo_manifest(repetitions=1, minimum_clusters=minimum, created=CREATED, population_hash=identity(cases),
                          **kw)
        (tmp_path / "m.json").write_text(json.dumps(m.canonical()))
        (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"case_id": c, "cluster_id": u}) + "\n"
                                                      for c, u in cases.items()))
        for arm in ("baseline", "candidate"):
            (tmp_path / f"{arm}.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                           for r in _arm_rows(m, arm, clusters, losses)))
        return m
    return make


def _compare(tmp_path, *extra):
    return ["compare", str(tmp_path / "baseline.jsonl"), str(tmp_path / "candidate.jsonl"), "--manifest",
            str(tmp_path / "m.json"), "--population", str(tmp_path / "cases.jsonl"), "--now", NOW, *extra]


def test_pass_exits_0_and_writes_markdown_and_junit(tmp_path, files, capsys):
    files()
    md, xml = tmp_path / "out" / "summary.md", tmp_path / "out" / "junit.xml"
    rc = main(_compare(tmp_path, "--out", str(tmp_path / "p.json"), "--markdown", str(md), "--junit", str(xml)))
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("PASS: lab_pass (authority lab_only) -- estimate 0, lower bound -0.01222 vs -margin -0.03 (binomial_loss, 300 clusters")
    text = md.read_text()
    assert text.startswith("### ✅ simlab compare: **PASS** — lab_pass (authority lab_only)")
    assert "| pass rate | 1 [1, 1] | 1 [1, 1] |" in text and "non-inferiority margin 0.03" in text
    assert "- synthetic evidence authorises lab work only" in text
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert suite.find("testcase").get("name") == "non-inferiority of the candidate"


def test_fail_and_inconclusive_exit_1_and_say_which(tmp_path, files, capsys):
    files(losses={(k, 0) for k in range(0, 300, 20)})  # 15 losses in 300: a statistical fail
    rc = main(_compare(tmp_path, "--out", str(tmp_path / "f.json"), "--junit", str(tmp_path / "f.xml"), "--json"))
    payload = json.loads(capsys.readouterr().out)
    assert rc == 1 and payload["verdict"] == "fail" and payload["action"] == "block"
    failure = ET.parse(tmp_path / "f.xml").getroot().find("testsuite/testcase/failure")
    assert failure.get("type") == "fail" and "statistical fail: binomial_loss" in failure.text
    files(minimum=500)  # too few clusters for the registered minimum: inconclusive (hold)
    rc = main(_compare(tmp_path, "--out", str(tmp_path / "h.json"), "--junit", str(tmp_path / "h.xml"), "--json"))
    payload = json.loads(capsys.readouterr().out)
    assert rc == 1 and payload["verdict"] == "inconclusive" and payload["action"] == "hold"
    assert ET.parse(tmp_path / "h.xml").getroot().find("testsuite/testcase/failure").get("type") == "inconclusive"


def test_bad_input_exits_2_naming_the_problem(tmp_path, files, capsys):
    files()
    rc = main(["compare", str(tmp_path / "candidate.jsonl"), str(tmp_path / "baseline.jsonl"), "--manifest",
               str(tmp_path / "m.json"), "--out", str(tmp_path / "s.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and "candidate.jsonl was given as the baseline but 300 of its 300 trials say arm 'candidate' " \
                       "(swapped arms?)" in err["message"]
    rc = main(["compare", str(tmp_path / "baseline.jsonl"), str(tmp_path / "m.json"), "--manifest",
               str(tmp_path / "m.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and "different kinds of input" in err["message"] and err["field"] == "--format"
    (tmp_path / "other.jsonl").write_text((tmp_path / "candidate.jsonl").read_text())
    late = demo_manifest(repetitions=1, minimum_clusters=30, created=CREATED + dt.timedelta(days=5))
    (tmp_path / "late.json").write_text(json.dumps(late.canonical()))
    rc = main(["compare", str(tmp_path / "baseline.jsonl"), str(tmp_path / "candidate.jsonl"), "--manifest",
               str(tmp_path / "late.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and "ran under manifest" in err["message"]


def test_the_same_manifest_rules_apply(tmp_path, files, capsys):
    files()
    rc = main(["compare", str(tmp_path / "baseline.jsonl"), str(tmp_path / "candidate.jsonl"), "--manifest",
               str(tmp_path / "m.json"), "--now", NOW, "--out", str(tmp_path / "a.json"), "--json"])
    payload = json.loads(capsys.readouterr().out)  # no --population: membership not checked
    assert rc == 0 and payload["authority"] == "lab_only"
    assert any(x.startswith("population membership not checked") for x in payload["reasons"] +
               payload["other_findings"])


def _lmeval(folder, arm, model, manifest, clusters=40, losses=(), dataset="org/refunds"):
    folder.mkdir(parents=True, exist_ok=True)
    date_id = f"2026-11-30T13-00-0{int(arm == 'candidate')}.123456"
    with open(folder / f"samples_refunds_{date_id}.jsonl", "w") as f:
        for k in range(clusters):
            for j in range(2):
                ok = not (arm == "candidate" and (k, j) in losses)
                f.write(json.dumps({"doc_id": k * 2 + j, "doc": {"question": f"q{k}-{j}", "customer": f"cust{k}"},
                                    "target": "yes", "arguments": {"gen_args_0": {"arg_0": "q", "arg_1": {}}},
                                    "resps": [["yes" if ok else "no"]], "filtered_resps": ["yes" if ok else "no"],
                                    "filter": "none", "metrics": ["exact_match"], "doc_hash": "d", "prompt_hash": "p",
                                    "target_hash": "t", "exact_match": 1.0 if ok else 0.0}) + "\n")
    (folder / f"results_{date_id}.json").write_text(json.dumps({
        "results": {"refunds": {"exact_match,none": 0.9}}, "model_name": model, "date": 1796043600.0 + 60,
        "config": {"model": "hf", "model_args": f"pretrained={model}"},
        "configs": {"refunds": {"task": "refunds", "dataset_path": dataset, "dataset_name": None,
                                "metadata": {"simlab_manifest_sha256": manifest.sha256}}}}))
    return next(folder.glob("samples_*.jsonl"))


def test_lm_eval_samples_are_paired_by_document(tmp_path, capsys):
    arms = {"baseline": {"model": "org/model-a"}, "candidate": {"model": "org/model-b"}}
    m = demo_manifest(repetitions=1, minimum_clusters=30, created=CREATED, arms=arms, model_id="org/model-b",
                      dataset={"name": "org/refunds"})
    (tmp_path / "m.json").write_text(json.dumps(m.canonical()))
    base = _lmeval(tmp_path / "a", "baseline", "org/model-a", m)
    cand = _lmeval(tmp_path / "b", "candidate", "org/model-b", m, losses={(3, 1)})
    rc = main(["compare", str(base), str(cand), "--manifest", str(tmp_path / "m.json"), "--cluster-field", "customer",
               "--now", NOW, "--out", str(tmp_path / "p.json"), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 1 and payload["pairs"] == 80 and payload["clusters"] == 40
    logs = payload["receipt"]["measurement"]["logs"]
    assert [g["model"] for g in logs] == ["org/model-a", "org/model-b"] and logs[0]["created"] == "2026-11-30T13:01:00Z"
    rc = main(["compare", str(cand), str(base), "--manifest", str(tmp_path / "m.json"), "--cluster-field", "customer",
               "--now", NOW, "--out", str(tmp_path / "q.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and err["message"].startswith("swapped arms: ")
    rc = main(["compare", str(base), str(cand), "--manifest", str(tmp_path / "m.json"), "--cluster-field", "customer",
               "--score", "acc", "--now", NOW, "--out", str(tmp_path / "r.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and "no metric 'acc'; the samples have 'exact_match'" in err["message"] and err["field"] == "--score"
    other = _lmeval(tmp_path / "c", "candidate", "org/model-b", m, losses={(5, 0)}, dataset="org/refunds-v2")
    rc = main(["compare", str(base), str(other), "--manifest", str(tmp_path / "m.json"), "--cluster-field",
               "customer", "--now", NOW, "--out", str(tmp_path / "s.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and err["message"] == (f"{base.name} (baseline) and {other.name} (candidate) ran different "
                                          "datasets (name 'org/refunds' vs 'org/refunds-v2')")


def test_hash_prints_a_manifests_identity_and_the_inspect_flag(tmp_path, files, capsys):
    m = files()
    assert main(["evidence", "hash", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == m.sha256 and f"--metadata simlab_manifest_sha256={m.sha256}" in out
    assert main(["evidence", "hash", str(tmp_path / "cases.jsonl"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["kind"] == "population" and payload["sha256"] == m.population_hash and payload["cases"] == 300
    (tmp_path / "bad.jsonl").write_text('{"case_id": "a", "cluster_id": "u", "extra": 1}\n')
    assert main(["evidence", "hash", str(tmp_path / "bad.jsonl"), "--json"]) == 2
    assert "unknown ['extra']" in json.loads(capsys.readouterr().out)["error"]["message"]
