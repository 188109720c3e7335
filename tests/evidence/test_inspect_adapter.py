"""Inspect AI logs produced by Inspect itself (``inspect eval``, mockllm, --epochs), read
through ``inspect_ai.log.read_eval_log`` into the evidence path."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the optional extra simlab[inspect] is not installed")

from evidence.adapters.inspect import read_inspect_pair  # noqa: E402
from evidence.experiment import pair_trials  # noqa: E402
from evidence.packet import inspect_artifacts, run_experiment  # noqa: E402
from evidence.replay import replay  # noqa: E402
from evidence.synthetic import demo_manifest  # noqa: E402
from evidence.trials import TrialsError  # noqa: E402

TASK = Path(__file__).with_name("inspect_tiny_task.py")
EPOCHS = 3


def _eval(arm: str, log_dir: Path, manifest_hash: str) -> Path:
    inspect = Path(sys.executable).with_name("inspect")
    cmd = [str(inspect), "eval", f"{TASK}@tiny", "-T", f"arm={arm}", "--model", "mockllm/model",
           "--epochs", str(EPOCHS), "--log-dir", str(log_dir), "--display", "none",
           "--metadata", f"simlab_manifest_sha256={manifest_hash}"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (log,) = log_dir.glob("*.eval")
    return log


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    manifest = demo_manifest(repetitions=EPOCHS, minimum_clusters=2)
    root = tmp_path_factory.mktemp("inspect")
    return manifest, _eval("baseline", root / "base", manifest.sha256), _eval("candidate", root / "cand",
                                                                               manifest.sha256)


def expected_pass(arm, case, epoch):
    return hashlib.sha256(f"{arm}|{case}|{epoch}".encode()).digest()[0] % 10 != 0


def test_real_logs_map_to_trials(logs):
    manifest, base, cand = logs
    cols = read_inspect_pair(base, cand, cluster_field="customer", score="says_yes")
    assert len(cols) == 2 * 8 * EPOCHS
    assert sorted(set(cols.trial.tolist())) == [1, 2, 3]  # epochs
    for i in range(len(cols)):
        arm = "candidate" if cols.candidate[i] else "baseline"
        case = cols.case_names[cols.case[i]]
        assert cols.passed[i] == expected_pass(arm, case, int(cols.trial[i]))
        assert cols.cluster_names[cols.cluster[i]] == f"cust{int(case[4:]) % 4}"
    e = pair_trials(cols, manifest)
    assert (e.pairs, e.cases, e.clusters) == (24, 8, 4)


def test_unknown_score_is_a_missing_label_naming_the_sample(logs):
    _, base, cand = logs
    with pytest.raises(TrialsError) as exc:
        read_inspect_pair(base, cand, cluster_field="customer", score="no_such_scorer")
    assert exc.value.errors[0].endswith("field passed: missing label (a missing label is never a pass or a fail)")
    assert "sample 'case0' epoch 1" in exc.value.errors[0] and len(exc.value.errors) == 48


def test_missing_cluster_field_is_an_error(logs):
    _, base, cand = logs
    with pytest.raises(TrialsError, match="field cluster_id"):
        read_inspect_pair(base, cand, cluster_field="region", score="says_yes")


def test_logs_run_and_replay_through_the_evidence_path(logs, tmp_path):
    manifest, base, cand = logs
    adapter = {"name": "inspect", "cluster_field": "customer", "score": "says_yes"}
    packet = run_experiment(manifest=manifest, artifacts=inspect_artifacts(base, cand), adapter=adapter,
                            out=tmp_path / "packet.json")
    r = packet["receipt"]
    assert set(r["components"]["raw_artifacts"]) == {"inspect_baseline", "inspect_candidate"}
    assert r["evidence"]["clusters"] == 4 and r["evidence"]["pairs"] == 24
    assert replay(json.loads((tmp_path / "packet.json").read_text()), base=tmp_path)["ok"]


def test_log_without_manifest_hash_is_refused(logs, tmp_path):
    _, log, _ = logs
    from inspect_ai.log import read_eval_log, write_eval_log
    data = read_eval_log(str(log))
    data.eval.metadata = {}
    write_eval_log(data, str(tmp_path / "stripped.eval"))
    with pytest.raises(ValueError, match="eval metadata has no simlab_manifest_sha256"):
        read_inspect_pair(tmp_path / "stripped.eval", log, cluster_field="customer", score="says_yes")


def test_cli_runs_inspect_logs(logs, tmp_path, capsys):
    from simlab.cli import build_parser
    manifest, base, cand = logs
    (tmp_path / "m.json").write_text(json.dumps(manifest.canonical()))
    args = build_parser().parse_args(["evidence", "run", "--manifest", str(tmp_path / "m.json"), "--inspect",
                                      str(base), str(cand), "--cluster-field", "customer", "--score", "says_yes",
                                      "--out", str(tmp_path / "p.json"), "--json"])
    rc = args.func(args)
    receipt = json.loads(capsys.readouterr().out)["receipt"]
    assert receipt["evidence"]["pairs"] == 24
    assert rc == (1 if receipt["action"] in ("block", "hold") else 0)
    # 24 pairs cannot show a loss rate below 0.03: the exact binomial bound is far below -0.03
    assert receipt["action"] == "block" and receipt["reasons"][0].startswith("statistical fail: binomial_loss")
