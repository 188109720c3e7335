"""Probe 5 on ``simlab evidence``: a malformed ``verify-ledger --head`` is bad input (exit 2,
naming ``--head``), not a false truncation alarm; ``evidence demo`` reports its steps."""
from __future__ import annotations

import json

import pytest

import evidence
from evidence.demo import run_demo
from evidence.ledger import append, verify
from simlab.cli import main


def _ledger(tmp_path):
    path = tmp_path / "ledger.sqlite"
    for i, action in enumerate(("lab_pass", "block", "hold")):
        append(path, {"kind": "simlab.evidence.receipt", "experiment_id": f"exp-{i}", "action": action})
    return path


@pytest.mark.parametrize("head", ["xyz", "", "sha256:sha256:" + "a" * 64, "sha256:" + "A" * 64])
def test_a_malformed_head_is_bad_input_not_a_broken_chain(tmp_path, capsys, head):
    path = _ledger(tmp_path)
    assert main(["evidence", "verify-ledger", str(path), "--head", head, "--json"]) == 2
    out = capsys.readouterr().out
    error = json.loads(out)["error"]
    assert error["field"] == "--head"
    assert error["message"] == f"--head: expected sha256: and 64 lowercase hex digits, got {head!r}"
    assert "not in the chain" not in out


def test_a_well_formed_head_still_verifies_or_raises_the_alarm(tmp_path, capsys):
    path = _ledger(tmp_path)
    assert main(["evidence", "verify-ledger", str(path), "--head", verify(path)["head"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["retained_head"]["seq"] == 3
    # a valid hash that is not in the chain is still the truncation alarm (exit 1)
    assert main(["evidence", "verify-ledger", str(path), "--head", "sha256:" + "e" * 64, "--json"]) == 1
    assert "is not in the chain" in json.loads(capsys.readouterr().out)["problems"][0]


def test_the_demo_reports_each_step(tmp_path):
    lines: list[str] = []
    out = run_demo(tmp_path / "demo", progress=lines.append)
    assert out["ledger"]["ok"]
    assert len(lines) == 8 and "qualification record" in lines[0]
    for i, name in enumerate(("seed_ten_customers", "synthetic", "measured_signed", "hidden_hard_failure"), 1):
        assert lines[i].startswith(f"scenario {i}/4 {name}: ")
    assert lines[5].startswith("judge scenarios") and lines[6].startswith("replay of measured_signed")
    assert lines[7].startswith("ledger: appending 7 receipts")


def test_cli_demo_progress_goes_to_stderr_under_json(tmp_path, capsys, monkeypatch):
    """The CLI hands ``run_demo`` its stderr progress callback (the demo itself is faked: its
    steps are checked above)."""
    def fake(out, progress=None):
        if progress:
            progress("scenario 1/4 seed_ten_customers: ...")
        return {"folder": str(out)}

    monkeypatch.setattr(evidence, "run_demo", fake)
    assert main(["evidence", "demo", "--out", str(tmp_path / "d"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"folder": str(tmp_path / "d")}
    assert captured.err.strip().endswith("s] scenario 1/4 seed_ten_customers: ...")
    assert captured.err.startswith("[")


def test_a_header_or_population_problem_names_only_the_kinds_that_occur():
    """Round 5: "missing [], unknown [...]" printed an empty kind."""
    from evidence.trial_schema import FIELDS, csv_header_problem

    why = csv_header_problem(list(FIELDS) + ["note"])
    assert why.startswith("header: unknown column(s) ['note'] (") and "missing" not in why.split("(")[0]
    why = csv_header_problem([f for f in FIELDS if f != FIELDS[0]])
    assert why.startswith(f"header: missing column(s) ['{FIELDS[0]}'] (")


def test_a_receipt_with_a_key_of_its_own_is_named_in_the_replays_reason():
    """Round 5: an extra key whose value was null left the reason empty ("...the recomputed one: ")."""
    from evidence import replay

    comp = {k: 1 for k in ("raw_artifacts", "tests", "prerequisites", "method", "population", "inputs",
                           "qualification", "judge", "holdout")}
    fresh = {"components": comp, **{k: 1 for k in replay._FIELD_REASONS},
             **{k: 1 for k in ("state", "action", "authority", "authority_ceiling", "valid_until", "reasons")}}
    (why,) = replay._diff_reasons({**fresh, "note": None}, fresh)
    assert why == "receipt differs from the recomputed one: keys it alone holds: note"
    assert replay._diff_reasons(dict(fresh), fresh) == []
