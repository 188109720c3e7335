"""Inspect AI logs written by Inspect itself (``inspect eval``, mockllm provider), read into the
evidence path -- and every way the issue's logs went wrong, each refused with its reason."""
from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

pytest.importorskip("inspect_ai", reason="the optional extra simlab[inspect] is not installed")

from evidence.adapters.inspect import read_inspect_pair, read_log  # noqa: E402
from evidence.adapters.inspect_example_task import passes  # noqa: E402
from evidence.errors import EvidenceError, SampleErrors  # noqa: E402
from evidence.experiment import PairingError, pair_trials  # noqa: E402
from evidence.packet import inspect_artifacts, run_experiment  # noqa: E402
from evidence.replay import replay_packet  # noqa: E402
from evidence.synthetic import demo_manifest  # noqa: E402

ADAPTER = {"name": "inspect", "cluster_field": "customer", "score": "says_yes"}


def inspect_manifest(**kw):
    """A manifest for the example task's logs (its dataset is in memory: Inspect records no name)."""
    return demo_manifest(repetitions=3, minimum_clusters=2, dataset=None, **kw)


def _pair(logs, task):
    return logs.bound[("baseline", task)], logs.bound[("candidate", task)]


def _run(logs, base, cand, tmp_path, manifest=None, **kw):
    return run_experiment(manifest=manifest or logs.manifest, artifacts=inspect_artifacts(base, cand),
                          adapter={**ADAPTER, **kw.pop("adapter", {})}, out=tmp_path / "packet.json", **kw)


def test_reader_agrees_with_inspect_ai_on_every_field_it_uses(inspect_logs):
    from inspect_ai.log import read_eval_log

    for path in (*_pair(inspect_logs, "tiny"), inspect_logs.unbound["baseline"]):
        theirs = read_eval_log(str(path))
        header, samples = read_log(path)
        e = theirs.eval
        assert (header.status, header.eval.created, header.eval.model, header.eval.task, header.eval.task_args,
                header.eval.dataset.samples, header.eval.metadata) == \
            (theirs.status, e.created, e.model, e.task, e.task_args, e.dataset.samples, e.metadata)
        ours = {(s.id, s.epoch): (s.scores["says_yes"].value, s.metadata, s.uuid, s.total_time) for s in samples}
        ref = {(s.id, s.epoch): (s.scores["says_yes"].value, s.metadata, s.uuid, s.total_time) for s in theirs.samples}
        assert ours == ref and len(ours) == 8 * 3


def test_real_logs_map_to_trials(inspect_logs):
    cols, infos = read_inspect_pair(*_pair(inspect_logs, "tiny"), cluster_field="customer", score="says_yes")
    assert len(cols) == 2 * 8 * 3 and sorted(set(cols.trial.tolist())) == [1, 2, 3]  # epoch = trial index
    for i in range(len(cols)):
        arm = "candidate" if cols.candidate[i] else "baseline"
        case = cols.case_names[cols.case[i]]
        assert cols.passed[i] == passes(arm, case, int(cols.trial[i]))
        assert cols.cluster_names[cols.cluster[i]] == f"cust{int(case[4:]) // 2}"
        assert cols.where(i).startswith(f"{infos[int(cols.candidate[i])]['file']} sample {case!r} epoch ")
    assert np.all(~np.isnan(cols.timestamps))  # each sample's started_at
    e = pair_trials(cols, inspect_logs.manifest)
    assert (e.pairs, e.cases, e.clusters) == (24, 8, 4)
    assert [i["model"] for i in infos] == ["mockllm/baseline", "mockllm/candidate"]


def test_packet_records_the_logs_identities_and_times_and_replays(inspect_logs, tmp_path):
    base, cand = _pair(inspect_logs, "tiny")
    packet = _run(inspect_logs, base, cand, tmp_path)
    m = packet["receipt"]["measurement"]
    header, _ = read_log(base)
    assert m["registered_after_measurement"] is False
    assert m["logs"][0]["file"] == base.name and m["logs"][0]["created"] == header.eval.created
    assert (m["logs"][0]["model"], m["logs"][1]["model"]) == ("mockllm/baseline", "mockllm/candidate")
    assert m["logs"][1]["task_args"] == {"arm": "candidate"} and m["times_checked"] == {"logs": 2,
                                                                                          "trial_timestamps": 48}
    assert m["manifest_created_at"] <= m["earliest_measurement"]
    assert replay_packet(json.loads((tmp_path / "packet.json").read_text()), base=tmp_path)["ok"]


def test_inspect_ai_is_not_imported_on_the_inspect_route(inspect_logs, tmp_path):
    base, cand = _pair(inspect_logs, "tiny")
    (tmp_path / "m.json").write_text(json.dumps(inspect_logs.manifest.canonical()))
    probe = ("import sys; from simlab.cli import main; rc = main(sys.argv[1:]); "
             "print('INSPECT_AI' if any(m.split('.')[0] == 'inspect_ai' for m in sys.modules) else 'CLEAN', rc)")
    done = subprocess.run([sys.executable, "-c", probe, "evidence", "run", "--manifest", str(tmp_path / "m.json"),
                           "--inspect", str(base), str(cand), "--cluster-field", "customer", "--out",
                           str(tmp_path / "p.json")], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip().splitlines()[-1] in ("CLEAN 0", "CLEAN 1"), done.stdout + done.stderr


def test_wrong_score_is_one_root_cause_listing_the_scorers(inspect_logs):
    with pytest.raises(EvidenceError) as exc:
        read_inspect_pair(*_pair(inspect_logs, "tiny"), cluster_field="customer", score="passed")
    assert str(exc.value).endswith("the log has no scorer 'passed'; it has 'says_yes'") and exc.value.option == "score"
    assert len(str(exc.value)) < 200


def test_two_scorers_need_a_choice_and_either_reads(inspect_logs):
    base, cand = _pair(inspect_logs, "two_scorers")
    with pytest.raises(EvidenceError, match=r"the log has 2 scorers \('says_yes', 'strict'\); choose the one"):
        read_inspect_pair(base, cand, cluster_field="customer", score=None)
    cols, _ = read_inspect_pair(base, cand, cluster_field="customer", score="strict")
    assert not cols.passed[cols.trial == 1].any()  # `strict` fails every first epoch


def test_wrong_cluster_field_names_the_fields_the_samples_have(inspect_logs):
    with pytest.raises(EvidenceError) as exc:
        read_inspect_pair(*_pair(inspect_logs, "tiny"), cluster_field="region", score="says_yes")
    assert "no sample has the cluster field 'region' in its metadata; the samples' metadata fields are 'customer', " \
           "'segment'" in str(exc.value) and exc.value.option == "cluster_field"


def test_errored_epoch_is_refused_by_sample_and_epoch(inspect_logs):
    base, cand = _pair(inspect_logs, "errored")
    with pytest.raises(SampleErrors) as exc:
        read_inspect_pair(base, cand, cluster_field="customer", score="says_yes")
    assert exc.value.errors == [f"{base.name} sample 'case1' epoch 2: errored samples (an error is not a label)",
                                f"{cand.name} sample 'case1' epoch 2: errored samples (an error is not a label)"]
    assert "line" not in str(exc.value)


def test_partial_credit_is_refused_once_with_examples_and_a_count(inspect_logs):
    base, cand = _pair(inspect_logs, "partial")
    with pytest.raises(SampleErrors) as exc:
        read_inspect_pair(base, cand, cluster_field="customer", score=None)
    msg = str(exc.value)
    assert msg.count("is not a pass/fail label") == 1 and "(6 samples, e.g. " in msg and "(value 0.5)" in msg
    assert len(exc.value.errors) == 6  # case1 (half credit) x 3 epochs x 2 arms


def _pairing_message(logs, task) -> str:
    cols, _ = read_inspect_pair(*_pair(logs, task), cluster_field="customer", score="says_yes")
    with pytest.raises(PairingError) as exc:
        pair_trials(cols, logs.manifest)
    return str(exc.value)


def test_unequal_epochs_are_one_root_cause(inspect_logs):
    msg = _pairing_message(inspect_logs, "unequal")
    assert "missing pairs: trial index 3 only in the baseline (the arms ran different numbers of epochs / " \
           "repetitions) (8 keys, e.g." in msg and "sample 'case0' epoch 3" in msg


def test_customers_only_one_arm_ran_are_named(inspect_logs):
    assert "missing pairs: clusters with baseline trials only (the candidate did not run their cases) " \
           "(cluster 'cust3': (case 'case6', trial 1)" in _pairing_message(inspect_logs, "one_arm")


def test_cancelled_run_is_refused(inspect_logs):
    with pytest.raises(EvidenceError, match=r"the eval did not complete \(status 'cancelled'\)"):
        read_inspect_pair(inspect_logs.cancelled, inspect_logs.bound[("candidate", "tiny")], cluster_field="customer",
                          score="says_yes")


def test_same_log_as_both_arms_is_refused_naming_it(inspect_logs, tmp_path):
    base, _ = _pair(inspect_logs, "tiny")
    with pytest.raises(EvidenceError, match="was given as both the baseline and the candidate"):
        _run(inspect_logs, base, base, tmp_path)
    copy = tmp_path / "copy.eval"
    shutil.copy(base, copy)
    with pytest.raises(EvidenceError) as exc:
        _run(inspect_logs, base, copy, tmp_path)
    assert str(exc.value) == (f"{base.name} (baseline) and copy.eval (candidate) are the same file (identical bytes): "
                              "one run given as both arms")


def test_swapped_arms_are_refused_from_the_registered_identities(inspect_logs, tmp_path):
    base, cand = _pair(inspect_logs, "tiny")
    with pytest.raises(EvidenceError) as exc:
        _run(inspect_logs, cand, base, tmp_path)
    assert str(exc.value).startswith(f"swapped arms: {cand.name} records the registered candidate and {base.name} the "
                                     "registered baseline (model 'mockllm/candidate' (registered 'mockllm/baseline')")


def test_swapped_arms_are_refused_from_the_logs_labels(inspect_logs, tmp_path):
    late = inspect_manifest(created=inspect_logs.written_after)
    with pytest.raises(EvidenceError, match="swapped arms: .* says it is the candidate and .* the baseline"):
        _run(inspect_logs, inspect_logs.unbound["candidate"], inspect_logs.unbound["baseline"], tmp_path,
             manifest=late, registered_after=True)


def test_a_log_of_another_model_than_registered_is_refused(inspect_logs, tmp_path):
    arms = {"baseline": {"model": "openai/gpt-4o"}, "candidate": {"model": "mockllm/candidate"}}
    m = inspect_manifest(arms=arms, model_id="mockllm/candidate",
                      created=inspect_logs.manifest.created_at)
    with pytest.raises(EvidenceError) as exc:
        _run(inspect_logs, *_pair(inspect_logs, "tiny"), tmp_path, manifest=m)
    assert "(baseline) does not record the manifest's baseline arm: model 'mockllm/baseline' (registered " \
           "'openai/gpt-4o')" in str(exc.value)


def test_existing_logs_without_a_manifest_need_the_declared_route(inspect_logs, tmp_path):
    late = inspect_manifest(created=inspect_logs.written_after, arms=ARMS_OF_UNBOUND,
                         model_id="mockllm/candidate")
    base, cand = inspect_logs.unbound["baseline"], inspect_logs.unbound["candidate"]
    with pytest.raises(EvidenceError) as exc:
        _run(inspect_logs, base, cand, tmp_path, manifest=late)
    assert "is later than the measurement it governs" in str(exc.value)
    assert exc.value.option == "registered_after_measurement"
    packet = _run(inspect_logs, base, cand, tmp_path, manifest=late, registered_after=True,
                  now=inspect_logs.written_after + dt.timedelta(hours=1))
    r = packet["receipt"]
    assert r["authority"] in ("lab_only", "none") and r["measurement"]["registered_after_measurement"]
    assert any(x.startswith("registered after measurement: the plan was pinned after the logs were written; "
                            "authority capped at lab_only") for x in r["reasons"] + r["other_findings"])
    assert r["measurement"]["measured_before_manifest"]["log_times"] == 4  # created + run start of each log
    # the declaration is part of the packet: dropping it does not replay
    stored = json.loads((tmp_path / "packet.json").read_text())
    stored["registered_after_measurement"] = False
    out = replay_packet(stored, base=tmp_path)
    assert out["action"] == "block" and "is later than the measurement it governs" in out["reasons"][0]


ARMS_OF_UNBOUND = {a: {"model": f"mockllm/{a}", "task": "tiny", "task_args": {"arm": a}}
                   for a in ("baseline", "candidate")}


def _rewrite_metadata(src, dst, manifest_hash):
    """A hand edit of the log's eval metadata (the issue's "rewriting the logs' metadata")."""
    with zipfile.ZipFile(src) as z:
        import zipfile_zstd  # noqa: F401
        entries = {n: z.read(n) for n in z.namelist()}
    header = json.loads(entries["header.json"])
    header["eval"]["metadata"] = {"simlab_manifest_sha256": manifest_hash}
    entries["header.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in entries.items():
            z.writestr(n, data)
    return dst


def test_a_late_manifest_written_into_the_logs_by_hand_is_not_a_pre_registration(inspect_logs, tmp_path):
    late = inspect_manifest(arms=ARMS_OF_UNBOUND, model_id="mockllm/candidate",
                         created=inspect_logs.written_after + dt.timedelta(days=1), rho_max=0.3)
    base = _rewrite_metadata(inspect_logs.unbound["baseline"], tmp_path / "b.eval", late.sha256)
    cand = _rewrite_metadata(inspect_logs.unbound["candidate"], tmp_path / "c.eval", late.sha256)
    with pytest.raises(EvidenceError) as exc:
        _run(inspect_logs, base, cand, tmp_path, manifest=late)
    assert f"the manifest (created_at {late.created_at.isoformat().replace('+00:00', 'Z')}) is later than" in \
        str(exc.value)
    later = late.created_at + dt.timedelta(hours=1)
    packet = _run(inspect_logs, base, cand, tmp_path, manifest=late, registered_after=True, now=later)
    assert packet["receipt"]["action"] in ("block", "hold", "lab_pass")  # never more than lab_only


def test_cli_runs_inspect_logs_and_names_the_flag_for_existing_logs(inspect_logs, tmp_path, capsys):
    from simlab.cli import main

    base, cand = _pair(inspect_logs, "tiny")
    (tmp_path / "m.json").write_text(json.dumps(inspect_logs.manifest.canonical()))
    argv = ["evidence", "run", "--manifest", str(tmp_path / "m.json"), "--inspect", str(base), str(cand),
            "--cluster-field", "customer", "--out", str(tmp_path / "new" / "dir" / "p.json"), "--json"]
    rc = main(argv)
    receipt = json.loads(capsys.readouterr().out)["receipt"]
    assert receipt["evidence"]["pairs"] == 24 and rc == (1 if receipt["action"] in ("block", "hold") else 0)
    # 24 pairs cannot show a loss rate below 0.03: the exact binomial bound is far below -0.03
    assert receipt["action"] == "block" and receipt["reasons"][0].startswith("statistical fail: binomial_loss")
    late = inspect_manifest(created=inspect_logs.written_after)
    (tmp_path / "late.json").write_text(json.dumps(late.canonical()))
    rc = main(["evidence", "run", "--manifest", str(tmp_path / "late.json"), "--inspect",
               str(inspect_logs.unbound["baseline"]), str(inspect_logs.unbound["candidate"]), "--cluster-field",
               "customer", "--out", str(tmp_path / "q.json"), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and err["field"] == "--registered-after-measurement"
    assert "re-run with --registered-after-measurement" in err["message"]


def test_compare_on_two_inspect_logs_prints_reliability_and_writes_a_pr_comment(inspect_logs, tmp_path, capsys):
    from simlab.cli import main

    base, cand = _pair(inspect_logs, "tiny")
    (tmp_path / "m.json").write_text(json.dumps(inspect_logs.manifest.canonical()))
    md = tmp_path / "comment.md"
    rc = main(["compare", str(base), str(cand), "--manifest", str(tmp_path / "m.json"), "--cluster-field", "customer",
               "--out", str(tmp_path / "p.json"), "--markdown", str(md)])
    out = capsys.readouterr().out
    assert rc == 1 and out.startswith("FAIL: block (authority none)")
    assert "  baseline  pass rate " in out and "pass^3 " in out and "pass@3 " in out
    text = md.read_text()
    assert "| pass^3 (all 3 pass) |" in text and "| pass@3 (any of 3 passes) |" in text
    assert "24 paired trials" in text and "statistical fail: binomial_loss" in text


def test_arms_from_different_tasks_are_refused_naming_both_files(inspect_logs, tmp_path):
    base, cand = inspect_logs.bound[("baseline", "tiny")], inspect_logs.bound[("candidate", "errored")]
    with pytest.raises(EvidenceError) as exc:
        _run(inspect_logs, base, cand, tmp_path)
    assert str(exc.value) == (f"{base.name} (baseline) and {cand.name} (candidate) come from different tasks "
                              "('tiny', 'errored')")


def test_a_rewritten_copy_of_one_run_is_the_same_run(inspect_logs, tmp_path):
    base = inspect_logs.unbound["baseline"]
    edited = _rewrite_metadata(base, tmp_path / "edited.eval", "sha256:" + "0" * 64)
    late = inspect_manifest(created=inspect_logs.written_after)
    with pytest.raises(EvidenceError, match=r"\(baseline\) and edited.eval \(candidate\) are the same Inspect run "
                                            r"\(eval_id .*\): one run given as both arms"):
        _run(inspect_logs, base, edited, tmp_path, manifest=late, registered_after=True)
