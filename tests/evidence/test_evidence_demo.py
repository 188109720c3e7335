"""``simlab demo``'s evidence section: every scenario lands where the rules say."""
from __future__ import annotations

import json

from evidence.demo import run_demo


def test_demo_rows(tmp_path):
    out = run_demo(tmp_path)
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
    assert out["ledger"]["ok"] and out["ledger"]["entries"] == 4
    assert out["resolved_after_expiry"]["state"] == "expired"
