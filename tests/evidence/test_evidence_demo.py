"""``simlab demo``'s evidence section: every scenario lands where the rules say."""
from __future__ import annotations

import json

import pytest

from evidence.demo import run_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("evidence-demo")
    return folder, run_demo(folder)


def test_demo_rows(demo):
    tmp_path, out = demo
    rows = {r["scenario"]: r for r in out["rows"]}
    assert rows["seed_ten_customers"]["action"] == "hold" and rows["seed_ten_customers"]["clusters"] == 10
    assert rows["synthetic"]["action"] == "lab_pass"
    assert rows["hidden_hard_failure"]["action"] == "block"
    # the measured, signed scenario reaches the ceiling exactly when the shipped record covers
    # the design (current, schema 2); otherwise the receipt says why it stays at lab_pass
    receipt = json.loads((tmp_path / "measured_signed.packet.json").read_text())["receipt"]
    if receipt["qualification"]["covered"]:
        assert rows["measured_signed"]["action"] == "canary_eligible"
    else:
        assert rows["measured_signed"]["action"] == "lab_pass"
        assert rows["measured_signed"]["why"].startswith("unqualified: ")
    assert out["replay"]["ok"] and not out["forged_replay"]["ok"] and out["forged_replay"]["action"] == "block"
    assert out["ledger"]["ok"] and out["ledger"]["entries"] == 7
    assert out["resolved_after_expiry"]["state"] == "expired"


def test_demo_judge_rows(demo):
    """The judge-labelled examples (issue 30, item 6): corrected beside the judge scale, a failed
    check that blocks, a second holdout look that holds, a changed rubric that expires."""
    tmp_path, out = demo
    rows = {r["scenario"]: r for r in out["rows"]}
    receipt = json.loads((tmp_path / "judge_corrected.packet.json").read_text())["receipt"]
    j = receipt["comparison"]["judge"]
    assert receipt["comparison"]["method"]["name"].startswith("judge_corrected")
    assert j["calibration_sets"] == ["shared"] and j["calibration_items"] == [800]
    assert j["raw_estimate"] != receipt["comparison"]["estimate"]     # the judge scale is not the corrected one
    assert receipt["evidence"]["judge_labelled"] == {"judge": 2000, "not_judge": 0, "unstated": 0}
    if receipt["qualification"]["covered"]:   # the shipped label-noise certificate covers the demo's judge
        assert rows["judge_corrected"]["action"] == "canary_eligible"
    else:
        assert rows["judge_corrected"]["action"] == "lab_pass"
        assert rows["judge_corrected"]["why"].startswith("unqualified: ")
    assert rows["judge_failed_check"]["action"] == "block"
    assert "candidate trial(s) with failed checks" in rows["judge_failed_check"]["why"]
    assert rows["judge_holdout_again"]["action"] == "hold"
    assert rows["judge_holdout_again"]["why"].startswith("sealed holdout 'refund-holdout-v1': this run is "
                                                         "confirmatory access 2 of at most 1")
    r = out["judge"]["rubric_changed"]
    assert (r["state"], r["action"]) == ("expired", "block")
    assert r["reasons"] == ["drift: judge.rubric is now refund-rubric-v4, the receipt bound refund-rubric-v3"]
